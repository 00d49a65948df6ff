//! Notes on a run's comparison from its baseline's committed history: the head
//! figures that continue a drift the history shows.

use crate::store::history::SeriesHistory;

use crate::output::view::metrics;

/// `+1.0%/commit over the last 10 commits on main`: what the summary of a run or `ab`
/// says of a head figure that moves the way `series` drifts (see
/// [`gpubench_analysis::history::continues_drift`]).
pub(crate) fn continued_drift_words(series: &SeriesHistory, baseline: &str) -> Option<String> {
    let d = &series.flagged_drift()?.drift;
    Some(format!(
        "continues a drift on {baseline}: {} over its last {} commits ({}/commit)",
        crate::format::percent_change(d.total),
        d.points,
        crate::format::percent_change(d.per_commit)
    ))
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

/// The sentences of a run's summary about its head figures that move the way
/// the committed history of a saved baseline drifts (a `"`id`: ..."` line each): the
/// baseline it was compared with, or for `ab` the `main` baseline as the base
/// revision's checkout holds it (its first-parent history is main's, up to the
/// merge-base). None when the comparison was with a stored run, or the baseline has no
/// git history (not a repository, nothing committed).
pub(crate) fn continued_drifts(
    comparison: &crate::compare::RunComparison,
) -> anyhow::Result<Vec<String>> {
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
        .filter_map(|c| {
            Some((
                c.id.as_str(),
                metrics::time(&c.outcome)?.change.point,
                metrics::kernel(&c.outcome).map(|k| k.change.point),
            ))
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
pub(crate) fn continued_drifts_noted(comparison: &crate::compare::RunComparison) -> Vec<String> {
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
