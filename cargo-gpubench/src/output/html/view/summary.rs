//! The summary page: one row per benchmark, the scorecard and the counts.

use crate::format;
use crate::output::html::eager_compiled::{FlagView, SpeedupView};
use crate::output::html::input::ReportBenchmark;
use crate::output::html::view::common::{
    baseline_note, compared, first_line, percent_of_peak, wrap_points, BenchmarkView, Cell,
    Figures, StatusView,
};
use crate::output::view::metrics;
use gpubench_analysis::baseline::Metric;
use gpubench_analysis::kernels::count_text;
use gpubench_analysis::BenchmarkSummary;
use gpubench_record::kernels::Counter;
use gpubench_record::measurement::RunMode;
use serde::Serialize;

/// One row of the summary table.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct SummaryRow {
    /// Benchmark id.
    pub id: String,
    /// Its name as the terminal shows it, `<target>/<id>`.
    pub name: String,
    /// The name cut after each `/`, `_`, `-`, `.` or `:`, where a narrow column may
    /// wrap it.
    pub id_parts: Vec<String>,
    /// Link to its page, relative to `index.html`.
    pub href: String,
    /// Verdict or failure.
    pub status: StatusView,
    /// Steady-state time per iteration, with its interval.
    pub time: Cell,
    /// Processes that measured it, with the spread between them.
    pub processes: Cell,
    /// Change against the baseline, with its interval.
    pub change: Cell,
    /// Host-dispatch time per iteration.
    pub host: Cell,
    /// Device time per iteration.
    pub device: Cell,
    /// Kernel time per call, with its change against the baseline or the kernels
    /// per call.
    pub kernel: Cell,
    /// First cold call.
    pub cold: Cell,
    /// Throughput, with % of the device's peak.
    pub throughput: Cell,
    /// Peak device memory.
    pub memory: Cell,
    /// Failure reason, flags, or the baseline's note.
    pub note: String,
}

/// One row of the eager-versus-compiled scorecard.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ScorecardRow {
    /// Benchmark name, `<target>/<id>`.
    pub name: String,
    /// Link to its page.
    pub href: String,
    /// Speedup of compiled over eager.
    pub speedup: Option<SpeedupView>,
    /// One line about numerical agreement.
    pub agreement: String,
    /// Whether outputs disagreed.
    pub disagrees: bool,
    /// Flags raised.
    pub flags: Vec<FlagView>,
}

/// A count of benchmarks with one status, for the header.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct CountView {
    /// The status.
    pub status: StatusView,
    /// How many.
    pub n: usize,
}

/// The summary page.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct SummaryView {
    /// Page title.
    pub title: String,
    /// Baseline compared against.
    pub baseline_name: Option<String>,
    /// The baseline's device, commit and time, in words.
    pub baseline_origin: Option<String>,
    /// When generated.
    pub generated_at: Option<String>,
    /// Benchmarks per status, most severe first.
    pub counts: Vec<CountView>,
    /// Total benchmarks.
    pub total: usize,
    /// The environment the run measured on, as rows.
    pub environment: Vec<(String, String)>,
    /// A warning when records come from several devices.
    pub environment_warning: Option<String>,
    /// The peaks "% of peak" compares with, in words, or `None` for an unknown device.
    pub peaks: Option<String>,
    /// The main table.
    pub rows: Vec<SummaryRow>,
    /// Benchmarks the baseline has that this run did not run, when nothing says why.
    pub missing_in_current: Vec<String>,
    /// The evidence the comparison lacks.
    pub missing: Vec<crate::output::html::input::MissingLine>,
    /// Baseline benchmarks the run left out on purpose.
    pub not_selected: Vec<String>,
    /// Benchmarks of the run that never ran: the report is incomplete.
    pub not_run: Vec<String>,
    /// The runs a merged run folded into one, and what it lacks of them.
    pub parts: Vec<crate::output::html::input::PartLine>,
    /// What a merged run lacks (parts cut short, missing or lost), in words.
    pub gaps: Vec<String>,
    /// Eager-versus-compiled scorecard; empty when no benchmark is one.
    pub scorecard: Vec<ScorecardRow>,
    /// Whether any benchmark has kernel time (the table's kernel column).
    pub has_kernels: bool,
    /// Whether every benchmark ran on the CPU, where device time is host time: the
    /// table has no host-dispatch or device column and the guide no GPU sections.
    pub cpu_only: bool,
    /// How many columns of figures follow the verdict, which a failed benchmark's
    /// message spans.
    pub figure_columns: usize,
    /// The link to the baseline's history page (`cargo gpubench history`), when it
    /// shows this run's benchmarks.
    pub history: Option<String>,
}

pub(crate) fn summary_row(
    b: &ReportBenchmark,
    s: &BenchmarkSummary,
    v: &BenchmarkView,
    fig: Option<&Figures>,
) -> SummaryRow {
    let r = &b.record;
    SummaryRow {
        id: r.id.clone(),
        name: b.name().to_string(),
        id_parts: wrap_points(b.name()),
        href: format!("bench/{}.html", v.stem),
        status: v.status.clone(),
        time: fig.map(time_cell).unwrap_or_default(),
        processes: fig.map(processes_cell).unwrap_or_default(),
        change: change_cell(b),
        host: Cell::duration(fig.map(|f| f.host)),
        device: Cell::duration(fig.and_then(|f| f.device)),
        kernel: kernel_cell(b, s),
        cold: Cell::duration(s.cold.first().map(|c| c.wall_ns)),
        throughput: throughput_cell(b, s, fig),
        memory: memory_cell(s),
        note: row_note(b, s),
    }
}

/// The estimate with how far its processes spread.
fn time_cell(f: &Figures) -> Cell {
    Cell {
        text: format::duration(f.estimate.point),
        detail: format::figure_spread(&f.estimate, &f.processes.medians),
        sort: format!("{}", f.estimate.point),
    }
}

/// The processes, with the spread between them.
fn processes_cell(f: &Figures) -> Cell {
    Cell {
        text: f.processes.count.to_string(),
        detail: f
            .processes
            .between
            .map(|b| format!("±{} between", crate::format::spread_percent(b)))
            .unwrap_or_default(),
        sort: f.processes.count.to_string(),
    }
}

/// The change against the baseline with its interval, when compared; whether it is
/// certain but under the threshold, and the smallest change it could have detected.
fn change_cell(b: &ReportBenchmark) -> Cell {
    compared(b)
        .map(|c| {
            let e = c.change;
            let mut detail = vec![format::percent_interval(e.lower, e.upper)];
            if c.certain_under_threshold {
                detail.push(format!(
                    "certain, under ±{}",
                    format::plain_percent(c.threshold)
                ));
            }
            if let Some(d) = crate::output::view::words::detectable_text(c) {
                detail.push(format!("could detect {d}"));
            }
            Cell {
                text: format::percent_change(e.point),
                detail: detail.join("; "),
                sort: format!("{}", e.point),
            }
        })
        .unwrap_or_default()
}

/// The rate at the estimate, with its share of the device's peak.
fn throughput_cell(b: &ReportBenchmark, s: &BenchmarkSummary, fig: Option<&Figures>) -> Cell {
    let declared = b.record.first_measurement().and_then(|m| m.throughput);
    match (declared, fig) {
        (
            Some(t),
            Some(Figures {
                throughput: Some((rate, per_s)),
                estimate,
                ..
            }),
        ) => Cell {
            text: rate.clone(),
            detail: percent_of_peak(b, s, t, estimate.point)
                .map(|(p, of)| format!("{p:.0}% of {of}"))
                .unwrap_or_default(),
            sort: format!("{per_s}"),
        },
        _ => Cell::default(),
    }
}

/// Peak allocated memory, with what the allocator reserved.
fn memory_cell(s: &BenchmarkSummary) -> Cell {
    s.memory
        .peak
        .map(|mem| Cell {
            text: format::bytes(mem.peak_allocated_bytes),
            detail: format!("{} reserved", format::bytes(mem.peak_reserved_bytes)),
            sort: mem.peak_allocated_bytes.to_string(),
        })
        .unwrap_or_default()
}

/// The failure, or the flags and the baseline's note.
fn row_note(b: &ReportBenchmark, s: &BenchmarkSummary) -> String {
    let r = &b.record;
    if let Some(f) = r.failure() {
        return format!("{}: {}", f.kind.label(), first_line(&f.message, 160));
    }
    let mut parts: Vec<String> = s.flags.iter().map(|f| f.label().to_string()).collect();
    if let Some(p) = s.conditions.power_capped.as_ref().filter(|p| p.share > 0.0) {
        parts.push(format!(
            "power-capped in {:.0}% of samples",
            p.share * 100.0
        ));
    }
    match baseline_note(b) {
        Some(n) => parts.push(n),
        None if r.config.mode == RunMode::Smoke => parts.push("smoke run (one call)".into()),
        None => {}
    }
    parts.join("; ")
}

/// Kernel time per call; below it the change and verdict against the baseline, the
/// counters' changes, or else the kernels per call.
pub(crate) fn kernel_cell(b: &ReportBenchmark, s: &BenchmarkSummary) -> Cell {
    let Some(k) = &s.timing.kernel else {
        return Cell::default();
    };
    let outcome = b.baseline.as_ref().map(|c| &c.outcome);
    let mut detail: Vec<String> = Vec::new();
    if let Some(c) = outcome.and_then(metrics::kernel) {
        detail.push(format!(
            "{} {}",
            format::percent_change(c.change.point),
            c.verdict.label()
        ));
    }
    match outcome.and_then(|o| metrics::verdict(o, Metric::Counters)) {
        Some(counters) if !counters.changes.is_empty() => detail.extend(counters.changes),
        _ => {
            if let Some(n) = s.counters.counts.and_then(|c| c.per_call(Counter::Kernels)) {
                detail.push(format!(
                    "{} kernel{} per call",
                    count_text(n),
                    if n == 1.0 { "" } else { "s" }
                ));
            }
        }
    }
    Cell {
        text: format::duration(k.estimate.point),
        detail: detail.join("; "),
        sort: format!("{}", k.estimate.point),
    }
}
