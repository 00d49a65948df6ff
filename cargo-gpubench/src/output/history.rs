//! What `cargo gpubench history` prints: the terminal table and the Markdown table
//! (per benchmark its latest figure, or that it is gone, its latest change point with
//! the commits that hold it, and drift), energy per call and the share of peak in a
//! table of their own where some version measured them, the exact counts that
//! changed, the series kept apart for other settings, and the files that could not be
//! read. The HTML page is [`crate::output::html::history`], the JSON the
//! [`HistoryReport`] itself.

use crate::console::{Console, Tone};
use crate::format::{interval, percent_change, percent_interval, plural, shorten};
use crate::output::terminal::align_cells;
use crate::output::view::table::Cell;
use crate::store::history::{BenchmarkHistory, ChangePointAt, HistoryReport, SeriesHistory};
use gpubench_analysis::history::{SeriesMetric, SeriesPoint};

/// Longest commit subject shown in tables.
const SUBJECT_CHARS: usize = 48;

/// `+5.0% [+4.4% to +5.6%]` or `1 → 2`: the size of a step.
pub(crate) fn change_size(c: &ChangePointAt, exact: bool) -> String {
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
pub(crate) fn change_words(c: &ChangePointAt, exact: bool) -> String {
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
pub(crate) fn drift_words(series: &SeriesHistory) -> Option<String> {
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

/// A figure of `metric` in its unit: `1.16 J`, `62.0%`, `16.12 ms`.
pub(crate) fn figure_text(metric: SeriesMetric, v: f64) -> String {
    match metric {
        SeriesMetric::Energy => crate::format::joules(v),
        // Three significant digits: a launch-bound call's share is a fraction of 1%.
        SeriesMetric::PeakShare => match v * 100.0 {
            p if p >= 10.0 => format!("{p:.1}%"),
            p if p >= 1.0 => format!("{p:.2}%"),
            p => format!("{p:.3}%"),
        },
        _ => crate::format::duration(v),
    }
}

/// A point of a measured series with its interval: `1.16 J [1.15 J, 1.17 J]`.
fn point_text(metric: SeriesMetric, p: &SeriesPoint) -> String {
    match metric {
        SeriesMetric::Energy | SeriesMetric::PeakShare => format!(
            "{} [{}, {}]",
            figure_text(metric, p.value),
            figure_text(metric, p.lower),
            figure_text(metric, p.upper)
        ),
        _ => interval(p.value, p.lower, p.upper),
    }
}

/// The latest version's figure of `series` with its interval, or `—` when the
/// latest version has none (saved without it, or the benchmark is gone): a gap is
/// never shown as an older figure or a zero.
fn latest_measured(
    report: &HistoryReport,
    b: &BenchmarkHistory,
    series: Option<&SeriesHistory>,
) -> String {
    let latest = report.commits.len().checked_sub(1);
    match series.and_then(|s| Some((s, s.points.last()?))) {
        Some((s, p)) if b.gone_at.is_none() && Some(p.version) == latest => {
            point_text(s.metric, &p.point)
        }
        _ => "—".into(),
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

/// The direction of a step or drift of `series` as the tables colour it: positive
/// is worse (a share of peak that rose is better).
fn worse_direction(series: &SeriesHistory, change: f64) -> f64 {
    if series.metric.higher_is_better() {
        -change
    } else {
        change
    }
}

/// Whether any benchmark of `report` has energy or a share of peak in some version.
fn has_power_figures(report: &HistoryReport) -> bool {
    report
        .benchmarks
        .iter()
        .any(|b| b.energy().is_some() || b.peak_share().is_some())
}

/// One row per benchmark of the table of energy and share of peak: the latest
/// version's figures (`—` where it has none), and the latest step or flagged drift of
/// energy, else of the share.
fn power_rows(report: &HistoryReport) -> Vec<Row> {
    report
        .benchmarks
        .iter()
        .map(|b| {
            let (energy, share) = (b.energy(), b.peak_share());
            let step = [energy, share].into_iter().flatten().find_map(|s| {
                let c = s.latest_change()?;
                Some((
                    format!("{}: {}", s.label, change_words(c, false)),
                    worse_direction(s, c.change.change),
                ))
            });
            let drift = [energy, share].into_iter().flatten().find_map(|s| {
                let d = s.flagged_drift()?.drift.per_commit;
                Some((
                    format!("{}: {}", s.label, drift_words(s)?),
                    worse_direction(s, d),
                ))
            });
            Row {
                cells: [
                    b.id.clone(),
                    latest_measured(report, b, energy),
                    latest_measured(report, b, share),
                    step.as_ref().map_or_else(|| "—".into(), |s| s.0.clone()),
                    drift.as_ref().map_or_else(|| "—".into(), |d| d.0.clone()),
                ],
                step: step.map(|s| s.1),
                drift: drift.map(|d| d.1),
            }
        })
        .collect()
}

const POWER_HEADER: [&str; 5] = [
    "benchmark",
    "energy per call",
    "share of peak",
    "latest change point [95% CI]",
    "drift",
];

/// What the table of energy and share of peak holds, above it.
const POWER_TITLE: &str = "energy per call and share of peak at the measured clock \
                           (— where the latest version has none)";

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
pub(crate) fn render_human(report: &HistoryReport, console: Console) -> String {
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
    if has_power_figures(report) {
        out.push_str(&format!("\n{POWER_TITLE}:\n"));
        let header: Vec<String> = POWER_HEADER.iter().map(|h| h.to_string()).collect();
        let table: Vec<Vec<Cell>> = power_rows(report)
            .into_iter()
            .map(|r| {
                let [id, energy, share, step, drift] = r.cells;
                vec![
                    id.into(),
                    energy.into(),
                    share.into(),
                    Cell::toned(step, tone(r.step)),
                    Cell::toned(drift, tone(r.drift)),
                ]
            })
            .collect();
        out.push_str(&align_cells(&header, &table, console));
    }
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
pub(crate) fn render_markdown(report: &HistoryReport) -> String {
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
    if has_power_figures(report) {
        let mut title = POWER_TITLE.to_string();
        title[..1].make_ascii_uppercase();
        out.push_str(&format!("\n{}:\n\n", cell(&title)));
        out.push_str(&format!("| {} |\n", POWER_HEADER.join(" | ")));
        out.push_str("|---|---:|---:|---|---|\n");
        for r in power_rows(report) {
            let cells: Vec<String> = r.cells.iter().map(|c| cell(c)).collect();
            out.push_str(&format!("| {} |\n", cells.join(" | ")));
        }
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
