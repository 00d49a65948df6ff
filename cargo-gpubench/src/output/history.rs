//! What `cargo gpubench history` prints: the terminal table and the Markdown table
//! (per benchmark its latest figure, or that it is gone, its latest change point with
//! the commits that hold it, and drift), the exact counts that changed, the series
//! kept apart for other settings, and the files that could not be read. The HTML page is
//! [`crate::output::html::history`], the JSON the [`HistoryReport`] itself.

use crate::console::{Console, Tone};
use crate::format::{interval, percent_change, percent_interval, plural, shorten};
use crate::output::terminal::{align_cells, Cell};
use crate::store::history::{BenchmarkHistory, ChangePointAt, HistoryReport, SeriesHistory};

/// Longest commit subject shown in tables.
const SUBJECT_CHARS: usize = 48;

/// `+5.0% [+4.4% to +5.6%]` or `1 → 2`: the size of a step.
pub fn change_size(c: &ChangePointAt, exact: bool) -> String {
    if exact {
        format!(
            "{} → {}",
            crate::format::number(c.change.before),
            crate::format::number(c.change.after)
        )
    } else {
        format!(
            "{} [{}]",
            percent_change(c.change.change),
            percent_interval(c.change.change_lower, c.change.change_upper)
        )
    }
}

/// `+5.0% [+4.4% to +5.6%] at 1a2b3c4d5e (subject), in 0f1e2d3c4b..1a2b3c4d5e`: a
/// step with the commit that measured it first and the range of commits that holds
/// it (the series' last version at the old level, then up to that commit).
pub fn change_words(c: &ChangePointAt, exact: bool) -> String {
    format!(
        "{} at {} ({}), in {}",
        change_size(c, exact),
        c.commit.short,
        shorten(&c.commit.subject, SUBJECT_CHARS),
        c.range()
    )
}

/// `+7.9% over the last 10 commits (+0.8%/commit [+0.5% to +1.1%])`, when `series`
/// drifts.
pub fn drift_words(series: &SeriesHistory) -> Option<String> {
    let d = &series.flagged_drift()?.drift;
    Some(format!(
        "{} over the last {} commits ({}/commit [{}])",
        percent_change(d.total),
        d.points,
        percent_change(d.per_commit),
        percent_interval(d.per_commit_lower, d.per_commit_upper)
    ))
}

/// The latest figure of a benchmark's series, with its interval; none for a
/// benchmark gone from the latest version.
fn latest_figure(b: &BenchmarkHistory, series: &SeriesHistory) -> String {
    if let Some(gone) = &b.gone_at {
        return format!(
            "gone (not in the baseline since {}, {})",
            gone.short,
            day(&gone.date)
        );
    }
    match series.points.last() {
        Some(p) if series.exact => crate::format::number(p.point.value),
        Some(p) => interval(p.point.value, p.point.lower, p.point.upper),
        None => "—".into(),
    }
}

/// One row of the table: its cells, and the direction of its step and drift
/// (positive: slower), for colour.
struct Row {
    cells: [String; 5],
    step: Option<f64>,
    drift: Option<f64>,
}

/// One row per benchmark: latest time, its latest step, its drift; the fastest
/// samples' (CPU work) or kernel time's step or drift when time shows none.
fn rows(report: &HistoryReport) -> Vec<Row> {
    report
        .benchmarks
        .iter()
        .map(|b| {
            let time = b.time();
            let kernel = b.kernel();
            let step = |s: Option<&SeriesHistory>| {
                s.and_then(|s| s.latest_change().map(|c| (s, c)))
                    .map(|(s, c)| {
                        // A ramp splits too: say so rather than call it a step of its own.
                        let within = s
                            .flagged_drift()
                            .is_some_and(|d| c.version >= d.from_commit_version(s));
                        let note = if within { ", within the drift" } else { "" };
                        (
                            format!("{}: {}{note}", s.label, change_words(c, false)),
                            c.change.change,
                        )
                    })
            };
            let drift = |s: Option<&SeriesHistory>| {
                s.and_then(|s| {
                    let d = s.flagged_drift()?.drift.per_commit;
                    drift_words(s).map(|w| (format!("{}: {w}", s.label), d))
                })
            };
            // On the CPU the fastest samples find what load on the host hides.
            let fastest = b.fastest();
            let step = step(time)
                .or_else(|| step(fastest))
                .or_else(|| step(kernel));
            let drift = drift(time)
                .or_else(|| drift(fastest))
                .or_else(|| drift(kernel));
            Row {
                cells: [
                    b.id.clone(),
                    time.map_or_else(
                        || "—".into(),
                        |s| match &b.gone_at {
                            Some(_) => latest_figure(b, s),
                            None => format!("{} ({})", latest_figure(b, s), s.label),
                        },
                    ),
                    time.map_or(0, |s| s.points.len()).to_string(),
                    step.as_ref().map_or_else(|| "—".into(), |s| s.0.clone()),
                    drift.as_ref().map_or_else(|| "—".into(), |d| d.0.clone()),
                ],
                step: step.map(|s| s.1),
                drift: drift.map(|d| d.1),
            }
        })
        .collect()
}

fn tone(direction: Option<f64>) -> Option<Tone> {
    direction.map(|d| {
        if d > 0.0 {
            Tone::Regressed
        } else {
            Tone::Improved
        }
    })
}

/// The lines naming every exact count that changed, per benchmark.
fn count_lines(b: &BenchmarkHistory) -> Vec<String> {
    b.changed_counts()
        .flat_map(|s| {
            s.change_points
                .iter()
                .map(move |c| format!("{}: {} {}", b.id, s.label, change_words(c, true)))
        })
        .collect()
}

/// The lines naming every series kept apart because its settings differ from the
/// benchmark's latest (`id: wall time (2 intra-op threads), 2 versions from ... to
/// ...`), with its latest step when it has one.
fn apart_lines(b: &BenchmarkHistory) -> Vec<String> {
    b.series
        .iter()
        .filter(|s| !s.settings_differ.is_empty() && !s.exact)
        .map(|s| {
            let n = s.points.len();
            let mut line = format!("{}: {}, {n} version{}", b.id, s.label, plural(n));
            if let Some(c) = s.latest_change() {
                line.push_str(&format!("; change point {}", change_words(c, false)));
            }
            line
        })
        .collect()
}

/// What the tables say of series kept apart, before the lines.
const APART: &str = "measured with other settings in some versions, each kept a series of \
                     its own (as `compare` does not compare them)";

fn header_line(report: &HistoryReport) -> String {
    let n = report.commits.len();
    let span = match (report.commits.first(), report.commits.last()) {
        (Some(a), Some(b)) => format!(
            ", {} ({}) to {} ({})",
            a.short,
            day(&a.date),
            b.short,
            day(&b.date)
        ),
        _ => String::new(),
    };
    format!(
        "history of baseline `{}` ({}) along the first-parent history of {}: {n} version{}{span}",
        report.baseline,
        report.path,
        report.rev,
        plural(n)
    )
}

/// The day of an ISO 8601 date (`2026-01-31`), or the date as it is when shorter.
pub(crate) fn day(date: &str) -> &str {
    date.get(..10).unwrap_or(date)
}

fn unreadable_lines(report: &HistoryReport) -> Vec<String> {
    report
        .unreadable
        .iter()
        .map(|u| {
            format!(
                "{} at {} ({}): {}",
                u.path,
                u.commit.short,
                day(&u.commit.date),
                u.reason
            )
        })
        .collect()
}

const HEADER: [&str; 5] = [
    "benchmark",
    "latest",
    "versions",
    "latest change point [95% CI]",
    "drift",
];

/// The terminal output.
pub fn render_human(report: &HistoryReport, console: Console) -> String {
    let mut out = format!("{}\n\n", header_line(report));
    let header: Vec<String> = HEADER.iter().map(|h| h.to_string()).collect();
    let table: Vec<Vec<Cell>> = rows(report)
        .into_iter()
        .map(|r| {
            let [id, latest, n, step, drift] = r.cells;
            vec![
                id.into(),
                latest.into(),
                n.into(),
                Cell::toned(step, tone(r.step)),
                Cell::toned(drift, tone(r.drift)),
            ]
        })
        .collect();
    out.push_str(&align_cells(&header, &table, console));
    let apart: Vec<String> = report.benchmarks.iter().flat_map(apart_lines).collect();
    if !apart.is_empty() {
        out.push_str(&format!("\n{APART}:\n"));
        for line in apart {
            out.push_str(&format!("  {line}\n"));
        }
    }
    let counts: Vec<String> = report.benchmarks.iter().flat_map(count_lines).collect();
    if !counts.is_empty() {
        out.push_str("\nexact counts that changed:\n");
        for line in counts {
            out.push_str(&format!("  {line}\n"));
        }
    }
    let unreadable = unreadable_lines(report);
    if !unreadable.is_empty() {
        out.push_str(&format!(
            "\nnot read ({} file{} or version{}):\n",
            unreadable.len(),
            plural(unreadable.len()),
            plural(unreadable.len())
        ));
        for line in unreadable {
            out.push_str(&format!("  {line}\n"));
        }
    }
    out
}

/// The Markdown table, e.g. for a pull-request comment or a job summary.
pub fn render_markdown(report: &HistoryReport) -> String {
    // Commit subjects and ids are anyone's text: escaped as every Markdown summary
    // escapes it (no links, HTML, mentions or control bytes get through).
    let cell = |s: &str| crate::output::markdown::text(s);
    let mut out = format!("### gpubench history\n\n{}\n\n", cell(&header_line(report)));
    out.push_str(&format!("| {} |\n", HEADER.join(" | ")));
    out.push_str("|---|---|---:|---|---|\n");
    for r in rows(report) {
        let cells: Vec<String> = r.cells.iter().map(|c| cell(c)).collect();
        out.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    let apart: Vec<String> = report.benchmarks.iter().flat_map(apart_lines).collect();
    if !apart.is_empty() {
        let mut what = APART.to_string();
        what[..1].make_ascii_uppercase();
        out.push_str(&format!("\n{}:\n\n", cell(&what)));
        for line in apart {
            out.push_str(&format!("- {}\n", cell(&line)));
        }
    }
    let counts: Vec<String> = report.benchmarks.iter().flat_map(count_lines).collect();
    if !counts.is_empty() {
        out.push_str("\nExact counts that changed:\n\n");
        for line in counts {
            out.push_str(&format!("- {}\n", cell(&line)));
        }
    }
    let unreadable = unreadable_lines(report);
    if !unreadable.is_empty() {
        out.push_str("\nNot read:\n\n");
        for line in unreadable {
            out.push_str(&format!("- {}\n", cell(&line)));
        }
    }
    out
}

/// `+1.0%/commit over the last 10 commits on main`: what the summary of a run or `ab`
/// says of a head figure that moves the way `series` drifts (see
/// [`gpubench_analysis::history::continues_drift`]).
pub fn continued_drift_words(series: &SeriesHistory, baseline: &str) -> Option<String> {
    let d = &series.flagged_drift()?.drift;
    Some(format!(
        "continues a drift on {baseline}: {} over its last {} commits ({}/commit)",
        percent_change(d.total),
        d.points,
        percent_change(d.per_commit)
    ))
}

/// The Markdown section listing [`continued_drift_words`] notes; empty without any.
pub fn drift_section(notes: &[String]) -> String {
    if notes.is_empty() {
        return String::new();
    }
    let mut out = String::from("\n**Continuing drifts** (from the baseline's git history; `cargo gpubench history` shows it):\n\n");
    for n in notes {
        out.push_str(&format!("- {n}\n"));
    }
    out
}
/// Versions read to tell whether a run continues a drift: enough for the drift
/// window several times over, few enough to stay quick in every run.
const DRIFT_VERSIONS: usize = 5 * gpubench_analysis::history::DEFAULT_DRIFT_WINDOW;

/// The saved baseline whose committed history a comparison with `baseline` is read
/// against for drifts, and its name: the baseline itself, or for `ab`'s base revision
/// the `main` baseline in that revision's checkout; none for a stored run.
fn drift_source(baseline: &crate::store::Source) -> Option<(std::path::PathBuf, String)> {
    use crate::store::baselines::DEFAULT_BASELINE;
    use crate::store::SourceKind;
    match baseline.kind {
        SourceKind::Baseline => Some((baseline.path.clone().into(), baseline.name.clone())),
        SourceKind::Revision => Some((
            gpubench_analysis::BaselineStore::for_workspace(std::path::Path::new(&baseline.path))
                .root
                .join(DEFAULT_BASELINE),
            DEFAULT_BASELINE.to_string(),
        )),
        SourceKind::Run => None,
    }
}

/// The sentences of a run's Markdown summary about its head figures that move the way
/// the committed history of a saved baseline drifts (a `"`id`: ..."` line each): the
/// baseline it was compared with, or for `ab` the `main` baseline as the base
/// revision's checkout holds it (its first-parent history is main's, up to the
/// merge-base). None when the comparison was with a stored run, or the baseline has no
/// git history (not a repository, nothing committed).
pub fn continued_drifts(comparison: &crate::compare::RunComparison) -> anyhow::Result<Vec<String>> {
    use gpubench_analysis::baseline::ComparisonOutcome;
    use gpubench_analysis::history::continues_drift;
    let Some((dir, name)) = drift_source(&comparison.baseline) else {
        return Ok(Vec::new());
    };
    let query = crate::store::history::HistoryQuery {
        repo_dir: crate::store::history::existing_ancestor(&dir),
        baseline_dir: dir,
        rev: "HEAD".into(),
        since: None,
        max_commits: Some(DRIFT_VERSIONS),
    };
    let read = match crate::store::history::read(&query) {
        Ok(read) => read,
        Err(crate::store::history::HistoryError::NotARepository { .. }) => return Ok(Vec::new()),
        Err(e) => return Err(e.into()),
    };
    let changes: Vec<(&str, f64, Option<f64>)> = comparison
        .set
        .comparisons
        .iter()
        .filter_map(|c| match &c.outcome {
            ComparisonOutcome::Compared {
                comparison, kernel, ..
            } => Some((
                c.id.as_str(),
                comparison.change.point,
                kernel.as_ref().map(|k| k.change.point),
            )),
            _ => None,
        })
        .collect();
    let filter = crate::store::history::IdFilter {
        patterns: changes.iter().map(|c| c.0.to_string()).collect(),
        exact: true,
    };
    let report = crate::store::history::analyse(
        &name,
        read,
        &filter,
        &gpubench_analysis::history::HistoryOptions::default(),
    );
    let mut notes = Vec::new();
    for (id, time, kernel) in changes {
        let Some(b) = report.benchmarks.iter().find(|b| b.id == id) else {
            continue;
        };
        for (series, change) in [(b.time(), Some(time)), (b.kernel(), kernel)] {
            let (Some(series), Some(change)) = (series, change) else {
                continue;
            };
            let Some(d) = series.flagged_drift() else {
                continue;
            };
            if continues_drift(&d.drift, change, series.threshold) {
                if let Some(words) = continued_drift_words(series, &name) {
                    notes.push(format!(
                        "`{id}`: {} {} {words}",
                        series.label,
                        crate::format::percent_change(change)
                    ));
                }
            }
        }
    }
    Ok(notes)
}

/// [`continued_drifts`], a failure to read the history told as a note (the summary is
/// still written without it).
pub fn continued_drifts_noted(comparison: &crate::compare::RunComparison) -> Vec<String> {
    continued_drifts(comparison).unwrap_or_else(|e| {
        crate::console::note(format_args!(
            "the history of {} was not read, so the summary cannot say whether a figure \
             continues a drift: {}",
            comparison.baseline.describe(),
            crate::error::message(&e)
        ));
        Vec::new()
    })
}

#[cfg(test)]
mod tests {
    use super::drift_source;
    use crate::store::{Source, SourceKind};

    fn source(kind: SourceKind, name: &str, path: &str) -> Source {
        Source {
            kind,
            name: name.into(),
            path: path.into(),
            default: false,
            device: None,
        }
    }

    #[test]
    fn drifts_are_read_from_the_baseline_or_for_ab_from_main_in_the_base_checkout() {
        let saved = source(
            SourceKind::Baseline,
            "nightly",
            "/w/gpubench/baselines/nightly",
        );
        assert_eq!(
            drift_source(&saved),
            Some(("/w/gpubench/baselines/nightly".into(), "nightly".into()))
        );
        let base = source(
            SourceKind::Revision,
            "origin/main",
            "/w/target/gpubench/ab/worktrees/abc",
        );
        assert_eq!(
            drift_source(&base),
            Some((
                "/w/target/gpubench/ab/worktrees/abc/gpubench/baselines/main".into(),
                "main".into()
            ))
        );
        assert_eq!(
            drift_source(&source(SourceKind::Run, "r1", "/w/target/gpubench/runs/r1")),
            None
        );
    }
}
