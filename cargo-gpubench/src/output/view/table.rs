//! A table's cells as every output shows them: each cell's text and its tone, and
//! a benchmark's own figures as a row shows them ([`FigureRow`]).

use gpubench_analysis::baseline::ComparisonOutcome;
use gpubench_analysis::kernels::count_text;
use gpubench_analysis::summary::BenchmarkSummary;
use gpubench_record::kernels::Counter;
use gpubench_record::units::{format_bytes, format_ns};

use crate::console::Tone;
use crate::format::{figure, shorten, spread_percent};
use crate::output::view::metrics::verdict_tone;
use crate::store::manifest::BenchStatus;
use crate::store::references::SummaryEntry;

/// The colour of a benchmark's comparison (its time verdict).
pub(crate) fn outcome_tone(outcome: &ComparisonOutcome) -> Option<Tone> {
    match outcome {
        ComparisonOutcome::Compared { comparison, .. } => verdict_tone(comparison.verdict),
        ComparisonOutcome::Failed { .. } => Some(Tone::Failed),
        ComparisonOutcome::NotCompared { .. } => Some(Tone::Ambiguous),
    }
}

/// A table cell: its text, and its tone (the colour a terminal paints it in).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Cell {
    /// What it says.
    pub text: String,
    /// Its colour, when coloured.
    pub tone: Option<Tone>,
}

impl Cell {
    /// `text` in `tone`.
    pub(crate) fn toned(text: String, tone: Option<Tone>) -> Self {
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
pub(crate) fn processes_cell(s: &BenchmarkSummary) -> String {
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
pub(crate) fn status_tone(status: BenchStatus) -> Option<Tone> {
    match status {
        BenchStatus::Passed => None,
        BenchStatus::Failed => Some(Tone::Failed),
        BenchStatus::Interrupted | BenchStatus::Pending => Some(Tone::NotRun),
    }
}

/// `—`: a cell with nothing to say.
pub(crate) fn dash() -> String {
    "—".to_string()
}

/// Characters of a failure's first line shown in a table's status cell.
const REASON_CHARS: usize = 60;

/// One benchmark's own figures as a table row shows them, `—` where it has none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FigureRow {
    /// Time per iteration with its interval (or the spread of its processes).
    pub time: String,
    /// `4 ±1.2%`: the processes and the spread between them.
    pub processes: String,
    /// Host-dispatch time per iteration.
    pub host: String,
    /// Device time per iteration.
    pub device: String,
    /// Kernel time per call.
    pub kernel: String,
    /// Kernels launched per call, when counted.
    pub kernels: Option<String>,
    /// The share of device time outside the kernels (`1 − kernel/device`).
    pub launch: String,
    /// The first cold call.
    pub cold: String,
    /// Throughput at the estimate.
    pub throughput: String,
    /// Peak allocated device memory.
    pub memory: String,
    /// `passed (throttled)`, `crash: …`, `not run`, in the status's tone.
    pub status: Cell,
}

impl FigureRow {
    /// The figures of `e`.
    pub(crate) fn of(e: &SummaryEntry) -> Self {
        let s = e.summary.as_ref();
        let ns = |x: Option<f64>| x.map(format_ns).unwrap_or_else(dash);
        FigureRow {
            time: s
                .and_then(BenchmarkSummary::primary)
                .map(|p| figure(&p.estimate, &p.processes.medians))
                .unwrap_or_else(dash),
            processes: s.map(processes_cell).unwrap_or_else(dash),
            host: ns(s.and_then(|s| Some(s.timing.host.as_ref()?.estimate.point))),
            device: ns(s.and_then(|s| Some(s.timing.device.as_ref()?.estimate.point))),
            kernel: ns(s.and_then(|s| Some(s.timing.kernel.as_ref()?.estimate.point))),
            kernels: s
                .and_then(|s| s.counters.counts)
                .and_then(|c| c.per_call(Counter::Kernels))
                .map(count_text),
            launch: s
                .and_then(|s| s.kernels.launch_overhead)
                .map(|x| format!("{:.0}%", x * 100.0))
                .unwrap_or_else(dash),
            cold: ns(s.and_then(|s| Some(s.cold.first()?.wall_ns))),
            throughput: s
                .and_then(|s| s.throughput.as_ref())
                .map(|t| t.rate.clone())
                .unwrap_or_else(dash),
            memory: s
                .and_then(|s| s.memory.peak)
                .map(|m| format_bytes(m.peak_allocated_bytes))
                .unwrap_or_else(dash),
            status: Cell::toned(status_text(e), status_tone(e.status)),
        }
    }
}

fn status_text(e: &SummaryEntry) -> String {
    match e.status {
        BenchStatus::Passed => {
            let flags: Vec<&str> = e
                .summary
                .iter()
                .flat_map(|s| s.flags.iter().map(|f| f.label()))
                .collect();
            if flags.is_empty() {
                "passed".into()
            } else {
                format!("passed ({})", flags.join(", "))
            }
        }
        BenchStatus::Failed => match e.summary.as_ref().and_then(|s| s.outcome.failure.as_ref()) {
            Some(f) => {
                let first = f.message.lines().next().unwrap_or("").trim();
                format!("{}: {}", f.kind.label(), shorten(first, REASON_CHARS))
            }
            None => "failed".into(),
        },
        BenchStatus::Interrupted => "interrupted".into(),
        BenchStatus::Pending => "not run".into(),
    }
}
