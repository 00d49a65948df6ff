//! A table's cells as every output shows them: each cell's text and its tone, and
//! the figure cells of a benchmark's row.

use gpubench_analysis::baseline::ComparisonOutcome;
use gpubench_analysis::kernels::count_text;
use gpubench_analysis::summary::BenchmarkSummary;
use gpubench_record::kernels::Counter;
use gpubench_record::units::format_ns;

use crate::console::Tone;
use crate::format::spread_percent;
use crate::output::view::metrics::verdict_tone;
use crate::store::manifest::BenchStatus;

/// The colour of a benchmark's comparison (its time verdict).
pub fn outcome_tone(outcome: &ComparisonOutcome) -> Option<Tone> {
    match outcome {
        ComparisonOutcome::Compared { comparison, .. } => verdict_tone(comparison.verdict),
        ComparisonOutcome::Failed { .. } => Some(Tone::Failed),
        ComparisonOutcome::NotCompared { .. } => Some(Tone::Ambiguous),
    }
}

/// A table cell: its text, and its tone (the colour a terminal paints it in).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cell {
    /// What it says.
    pub text: String,
    /// Its colour, when coloured.
    pub tone: Option<Tone>,
}

impl Cell {
    /// `text` in `tone`.
    pub fn toned(text: String, tone: Option<Tone>) -> Self {
        Cell { text, tone }
    }
}

impl From<String> for Cell {
    fn from(text: String) -> Self {
        Cell { text, tone: None }
    }
}

/// `4 ±1.2%`: how many processes measured the benchmark and the spread between them
/// (the standard deviation of their medians, relative); `1` for one process.
pub fn processes_cell(s: &BenchmarkSummary) -> String {
    match s.primary() {
        Some(p) => match p.processes.between {
            Some(b) => format!("{} ±{}", p.processes.count, spread_percent(b)),
            None => p.processes.count.to_string(),
        },
        None => "—".to_string(),
    }
}

/// The colour of a benchmark's status: bold red when it failed, yellow when it did
/// not run to the end, none when it passed.
pub fn status_tone(status: BenchStatus) -> Option<Tone> {
    match status {
        BenchStatus::Passed => None,
        BenchStatus::Failed => Some(Tone::Failed),
        BenchStatus::Interrupted | BenchStatus::Pending => Some(Tone::NotRun),
    }
}

/// `kernel/iter`, `kernels` and `launch`: kernel time per call, kernels launched per
/// call, and the share of device time outside the kernels (`1 − kernel/device`).
pub fn kernel_cells(s: Option<&BenchmarkSummary>) -> [String; 3] {
    let kernel = s
        .and_then(|s| s.timing.kernel.as_ref())
        .map(|k| format_ns(k.estimate.point))
        .unwrap_or_else(dash);
    let kernels = s
        .and_then(|s| s.counters.counts)
        .and_then(|c| c.per_call(Counter::Kernels))
        .map(count_text)
        .unwrap_or_else(dash);
    let launch = s
        .and_then(|s| s.kernels.launch_overhead)
        .map(|x| format!("{:.0}%", x * 100.0))
        .unwrap_or_else(dash);
    [kernel, kernels, launch]
}

/// `—`: a cell with nothing to say.
pub fn dash() -> String {
    "—".to_string()
}
