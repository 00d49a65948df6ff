//! The summary of a run (or of `compare`) as data: one entry per benchmark with its
//! figures and verdict, and how the invocation ends: [`RunSummary::exit_code`] decides
//! the process's exit code. `--format json` prints it as it is; the terminal and
//! Markdown lay it out.

use serde::Serialize;

use crate::compare::RunComparison;
use crate::exit_code::Exit;
use crate::store::baselines::SavedBaseline;
use crate::store::manifest::{BenchStatus, RunStatus};
use crate::store::references::SummaryEntry;

/// The version of every `--format json` document on stdout (of a run, `merge`,
/// `compare`, and the error object), `format_version` in each. It goes up when a field
/// changes meaning or goes away; a field added keeps it (see `docs/schema/`).
pub(crate) const SUMMARY_FORMAT_VERSION: u32 = 1;

/// How an invocation ends, for JSON readers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) struct ExitVerdict {
    /// The process exit code.
    pub code: u8,
    /// What it means, e.g. `regression_found`.
    pub verdict: &'static str,
}

impl From<Exit> for ExitVerdict {
    fn from(exit: Exit) -> Self {
        ExitVerdict {
            code: exit.code(),
            verdict: exit.word(),
        }
    }
}

/// Fills each entry's comparison from `comparison`.
pub(crate) fn attach_comparison(entries: &mut [SummaryEntry], comparison: &RunComparison) {
    for e in entries {
        e.comparison = comparison.get(&e.id).map(|c| c.outcome.clone());
    }
}

/// The whole run, as `--format json` prints it.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct RunSummary {
    /// [`SUMMARY_FORMAT_VERSION`].
    pub format_version: u32,
    /// The run id.
    pub run_id: String,
    /// The run directory.
    pub run_dir: String,
    /// Completed or interrupted.
    pub status: RunStatus,
    /// Benchmarks that passed.
    pub passed: usize,
    /// Benchmarks that failed.
    pub failed: usize,
    /// Benchmarks stopped or never started because of Ctrl-C.
    pub not_run: usize,
    /// Wall time of the whole run, seconds.
    pub elapsed_s: f64,
    /// Every selected benchmark, in run order.
    pub benchmarks: Vec<SummaryEntry>,
    /// The comparison with the baseline (with its verdict counts), when there was one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comparison: Option<RunComparison>,
    /// The baseline this run saved, with `--save-baseline`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub saved_baseline: Option<SavedBaseline>,
    /// The HTML report's summary page (`<out-dir>/report/index.html`), when written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub report: Option<String>,
    /// Where the HTML report can be opened (`--report-url`), when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub report_url: Option<String>,
    /// Why the HTML report could not be written (the run then exits 5 unless a
    /// verdict already fails it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub report_error: Option<String>,
    /// Why a merged run lacks benchmarks of its suite (an input cut short, a
    /// `--partition` part missing); it then exits 1 unless `--allow-missing not-run`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub gaps: Vec<String>,
    /// Whether `gaps` fail the invocation (not allowed).
    #[serde(skip)]
    pub gaps_fail: bool,
    /// For `cargo gpubench ab`: the two revisions and whether they were paired.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ab: Option<crate::store::manifest::ManifestAb>,
    /// How the run ends: the exit code and its meaning.
    pub exit: ExitVerdict,
}

impl RunSummary {
    /// Builds the summary, counting statuses.
    pub(crate) fn new(
        run_id: String,
        run_dir: String,
        status: RunStatus,
        elapsed_s: f64,
        benchmarks: Vec<SummaryEntry>,
    ) -> Self {
        let count = |s: BenchStatus| benchmarks.iter().filter(|b| b.status == s).count();
        let passed = count(BenchStatus::Passed);
        let failed = count(BenchStatus::Failed);
        let mut summary = RunSummary {
            format_version: SUMMARY_FORMAT_VERSION,
            run_id,
            run_dir,
            status,
            passed,
            failed,
            not_run: benchmarks.len() - passed - failed,
            elapsed_s,
            benchmarks,
            comparison: None,
            saved_baseline: None,
            report: None,
            report_url: None,
            report_error: None,
            gaps: Vec::new(),
            gaps_fail: false,
            ab: None,
            exit: Exit::Success.into(),
        };
        summary.exit = summary.exit_code().into();
        summary
    }

    /// The summary with the run's comparison attached.
    pub(crate) fn with_comparison(mut self, comparison: RunComparison) -> Self {
        attach_comparison(&mut self.benchmarks, &comparison);
        self.comparison = Some(comparison);
        self.exit = self.exit_code().into();
        self
    }

    /// The summary with why a merged run lacks benchmarks, and whether that fails it.
    pub(crate) fn with_gaps(mut self, gaps: Vec<String>, fail: bool) -> Self {
        self.gaps_fail = fail && !gaps.is_empty();
        self.gaps = gaps;
        self.exit = self.exit_code().into();
        self
    }

    /// The summary with where the HTML report was written, or why it was not.
    pub(crate) fn with_report(mut self, report: Result<std::path::PathBuf, String>) -> Self {
        match report {
            Ok(index) => self.report = Some(index.display().to_string()),
            Err(error) => self.report_error = Some(error),
        }
        self.exit = self.exit_code().into();
        self
    }

    /// The summary with where its HTML report can be opened (`--report-url`).
    pub(crate) fn with_report_url(mut self, url: Option<String>) -> Self {
        self.report_url = url;
        self
    }

    /// How the run ends; see [`Exit::of_verdicts`] for the precedence (benchmarks a
    /// merged run lacks count as failed ones). A report that could not be written is
    /// a setup error (5) when no verdict fails the run.
    pub(crate) fn exit_code(&self) -> Exit {
        let verdict = Exit::of_verdicts(
            self.status == RunStatus::Interrupted,
            self.failed > 0 || self.gaps_fail,
            self.comparison.as_ref().is_some_and(|c| c.gate_tripped),
        );
        if verdict == Exit::Success && self.report_error.is_some() {
            Exit::Setup
        } else {
            verdict
        }
    }
}
