//! What the templates see: every figure of the report computed, formatted and
//! labelled once, plus the charts each page links to.

use std::collections::BTreeSet;

use gpubench_analysis::baseline::{ComparisonOutcome, Metric};
use gpubench_analysis::kernels::{count_text, Counter};
use gpubench_analysis::processes::{EstimateBasis, ProcessStats};
use gpubench_analysis::stats::{self, Estimate, OutlierCounts};
use gpubench_analysis::{
    file_stem_for_id, BenchmarkSummary, Fingerprint, Measurement, RawRecord, RunMode, StopReason,
    Throughput, TimeKind, Verdict,
};
use serde::Serialize;

use super::charts::{self, palette, Axis, AxisFormat, Note, Plot, Rule, Series, SeriesKind};
use super::comparison::{ComparisonView, FlagView, SpeedupView};
use super::format;
use super::kernels::KernelView;
use super::peaks::{device_peaks, dtype_from_id, normalise_dtype};
use super::{ReportBenchmark, ReportInput};

/// The summary and every benchmark page.
pub struct Views {
    /// The summary page.
    pub summary: SummaryView,
    /// One per benchmark, in input order.
    pub benchmarks: Vec<BenchmarkView>,
}

/// A benchmark's status: its verdict, or why it has none.
#[derive(Debug, Clone, Serialize)]
pub struct StatusView {
    /// CSS class, e.g. `regressed`.
    pub class: &'static str,
    /// The word, e.g. `regressed`.
    pub label: &'static str,
    /// Severity for sorting: 0 (failed) first.
    pub rank: u8,
}

const STATUS_FAILED: StatusView = StatusView {
    class: "failed",
    label: "failed",
    rank: 0,
};
const STATUS_NOT_COMPARED: StatusView = StatusView {
    class: "notcompared",
    label: "not compared",
    rank: 3,
};
const STATUS_NO_BASELINE: StatusView = StatusView {
    class: "nobaseline",
    label: "no baseline",
    rank: 6,
};

fn status_of(verdict: Verdict) -> StatusView {
    let (class, rank) = match verdict {
        Verdict::Regressed => ("regressed", 1),
        Verdict::Ambiguous => ("ambiguous", 2),
        Verdict::Improved => ("improved", 4),
        Verdict::NoChange => ("nochange", 5),
    };
    StatusView {
        class,
        label: verdict.label(),
        rank,
    }
}

/// A table cell: text, an optional smaller second line, and a sort key.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Cell {
    /// Main text.
    pub text: String,
    /// Second line (an interval, a percentage), or empty.
    pub detail: String,
    /// The key sortable tables order by; empty sorts last.
    pub sort: String,
}

impl Cell {
    fn duration(ns: Option<f64>) -> Self {
        match ns.filter(|v| v.is_finite()) {
            Some(v) => Cell {
                text: format::duration(v),
                detail: String::new(),
                sort: format!("{v}"),
            },
            None => Cell::default(),
        }
    }
}

/// One row of the summary table.
#[derive(Debug, Clone, Serialize)]
pub struct SummaryRow {
    /// Benchmark id.
    pub id: String,
    /// The id cut after each `/`, `_`, `-`, `.` or `:`, where a narrow column may
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
pub struct ScorecardRow {
    /// Benchmark id.
    pub id: String,
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
pub struct CountView {
    /// The status.
    pub status: StatusView,
    /// How many.
    pub n: usize,
}

/// The summary page.
#[derive(Debug, Clone, Serialize)]
pub struct SummaryView {
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
    /// Benchmarks the baseline has that this run did not run.
    pub missing_in_current: Vec<String>,
    /// Eager-versus-compiled scorecard; empty when no benchmark is one.
    pub scorecard: Vec<ScorecardRow>,
    /// Whether any benchmark has kernel time (the table's kernel column).
    pub has_kernels: bool,
}

/// A chart of a benchmark page.
#[derive(Debug, Clone, Serialize)]
pub struct ChartView {
    /// File name inside the benchmark's chart folder, e.g. `distribution.svg`.
    pub file: String,
    /// Path relative to the benchmark page.
    pub src: String,
    /// Text alternative.
    pub alt: String,
    /// A sentence under the chart.
    pub caption: String,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    #[serde(skip)]
    plot: Plot,
}

impl ChartView {
    /// Draws the chart's SVG.
    pub fn draw(&self) -> Result<String, String> {
        self.plot.to_svg()
    }
}

/// The charts of one page; absent when there is nothing to draw.
#[derive(Debug, Clone, Default, Serialize)]
pub struct PageCharts {
    /// Distribution of samples, this run against the baseline.
    pub distribution: Option<ChartView>,
    /// Samples in time order.
    pub timeline: Option<ChartView>,
    /// The SM clock read after each sample, in time order.
    pub gpu_clock: Option<ChartView>,
    /// The GPU's temperature read after each sample, in time order.
    pub gpu_temperature: Option<ChartView>,
    /// Host-dispatch, device and synced wall time per sample.
    pub host_device: Option<ChartView>,
    /// The warm-up trace.
    pub warmup: Option<ChartView>,
    /// Cold calls against the steady state.
    pub cold: Option<ChartView>,
    /// Eager and compiled latency over the shape stream.
    pub comparison: Option<ChartView>,
}

impl PageCharts {
    /// Every chart present.
    pub fn iter(&self) -> impl Iterator<Item = &ChartView> {
        [
            &self.distribution,
            &self.timeline,
            &self.gpu_clock,
            &self.gpu_temperature,
            &self.host_device,
            &self.warmup,
            &self.cold,
            &self.comparison,
        ]
        .into_iter()
        .flatten()
    }

    /// Whether there is no chart.
    pub fn is_empty(&self) -> bool {
        self.iter().next().is_none()
    }
}

/// A label and a value, with an optional explanation.
#[derive(Debug, Clone, Serialize)]
pub struct Fact {
    /// What.
    pub label: String,
    /// The figure.
    pub value: String,
    /// A smaller note (interval, meaning), or empty.
    pub detail: String,
}

pub(super) fn fact(label: &str, value: impl Into<String>, detail: impl Into<String>) -> Fact {
    Fact {
        label: label.into(),
        value: value.into(),
        detail: detail.into(),
    }
}

/// A cold call next to the steady state.
#[derive(Debug, Clone, Serialize)]
pub struct ColdRow {
    /// What made it cold.
    pub label: String,
    /// Synced wall time.
    pub wall: String,
    /// When it returned to the host.
    pub host: String,
    /// Device time, or empty.
    pub device: String,
    /// How many steady-state iterations it costs, e.g. `75×`.
    pub ratio: String,
    /// The range over processes, e.g. `80.1 ms to 112.0 ms over 4 processes`, or empty.
    pub per_process: String,
}

/// What an unsynchronised loop would have reported.
#[derive(Debug, Clone, Serialize)]
pub struct NaiveRow {
    /// Iterations of the loop.
    pub iters: u64,
    /// Per iteration without a final sync.
    pub naive: String,
    /// Per iteration with it.
    pub synced: String,
    /// How much the naive figure understates, e.g. `1.7× too fast`.
    pub error: String,
}

/// A failed benchmark's failure.
#[derive(Debug, Clone, Serialize)]
pub struct FailureView {
    /// The kind, e.g. `out of memory`.
    pub kind: String,
    /// The message.
    pub message: String,
    /// The allocator's view at the failure.
    pub memory: Vec<Fact>,
}

/// One benchmark page.
#[derive(Debug, Clone, Serialize)]
pub struct BenchmarkView {
    /// Benchmark id.
    pub id: String,
    /// File stem of its page and chart folder.
    pub stem: String,
    /// Verdict or failure.
    pub status: StatusView,
    /// The failure, when it failed.
    pub failure: Option<FailureView>,
    /// Whether it was measured (not failed, not empty).
    pub measured: bool,
    /// Whether it was only smoke-tested (one call).
    pub smoke: bool,
    /// Which time the steady-state figures are: device or synced wall.
    pub primary_label: String,
    /// The headline figures.
    pub key_facts: Vec<Fact>,
    /// A sentence on what the timings say, e.g. that it is device-bound.
    pub reading: Vec<String>,
    /// Host, device and wall medians.
    pub timing_facts: Vec<Fact>,
    /// Cold calls.
    pub cold_rows: Vec<ColdRow>,
    /// Naive unsynchronised loops.
    pub naive_rows: Vec<NaiveRow>,
    /// Throughput and memory.
    pub resource_facts: Vec<Fact>,
    /// The baseline's note, e.g. why it was not compared.
    pub baseline_note: Option<String>,
    /// Charts.
    pub charts: PageCharts,
    /// Eager versus compiled, when the benchmark is one.
    pub comparison: Option<ComparisonView>,
    /// What the GPU did per call: kernel time, counts, the kernel table.
    pub kernels: Option<KernelView>,
    /// Where and with what it ran.
    pub environment: Vec<(String, String)>,
    /// The measurement options.
    pub config: Vec<(String, String)>,
}

/// Builds every view of the report.
pub fn build_all(input: &ReportInput) -> Views {
    let (benchmarks, rows): (Vec<BenchmarkView>, Vec<SummaryRow>) =
        super::parallel::map(&input.benchmarks, build_one)
            .into_iter()
            .unzip();
    let scorecard = benchmarks
        .iter()
        .filter_map(|v| {
            let c = v.comparison.as_ref()?;
            Some(ScorecardRow {
                id: v.id.clone(),
                href: format!("bench/{}.html", v.stem),
                speedup: c.speedup.clone(),
                agreement: c.agreement_summary.clone(),
                disagrees: c.disagrees,
                flags: c.flags.clone(),
            })
        })
        .collect();
    let mut counts: Vec<CountView> = Vec::new();
    for v in &benchmarks {
        match counts.iter_mut().find(|c| c.status.class == v.status.class) {
            Some(c) => c.n += 1,
            None => counts.push(CountView {
                status: v.status.clone(),
                n: 1,
            }),
        }
    }
    counts.sort_by_key(|c| c.status.rank);

    let records: Vec<&RawRecord> = input.benchmarks.iter().map(|b| &b.record).collect();
    let known: Vec<&Fingerprint> = records
        .iter()
        .map(|r| &r.fingerprint)
        .filter(|f| f.device.name != "unknown")
        .collect();
    let devices: BTreeSet<&str> = known.iter().map(|f| f.device.name.as_str()).collect();
    let environment = known
        .first()
        .or(records.first().map(|r| &r.fingerprint).as_ref())
        .map(|f| {
            let mut rows = environment_rows(f);
            let stamps: BTreeSet<&str> = known.iter().map(|f| f.timestamp.as_str()).collect();
            if let (Some(first), Some(last)) = (stamps.first(), stamps.last()) {
                if first != last {
                    if let Some(row) = rows.iter_mut().find(|(k, _)| k == "measured at") {
                        row.1 = format!("{first} to {last}");
                    }
                }
            }
            rows
        })
        .unwrap_or_default();
    let environment_warning = (devices.len() > 1).then(|| {
        format!(
            "These records come from {} different devices ({}); compare figures only within one device.",
            devices.len(),
            devices.iter().copied().collect::<Vec<_>>().join(", ")
        )
    });
    let peaks = devices.first().and_then(|name| {
        let p = device_peaks(name)?;
        let flops: Vec<String> = p
            .tflops
            .iter()
            .map(|(d, tf)| format!("{d} {tf} TFLOP/s"))
            .collect();
        Some(format!(
            "{}: dense {}; memory {} GB/s",
            p.model,
            flops.join(", "),
            p.memory_gb_s
        ))
    });
    let baseline_origin = input.baseline_fingerprint.as_ref().map(|f| {
        let mut s = format!("{} ({})", f.device.name, f.device.label());
        if let Some(c) = &f.git_commit {
            s.push_str(&format!(", commit {}", short_commit(c)));
        }
        s.push_str(&format!(", measured {}", f.timestamp));
        s
    });
    let title = if input.title.trim().is_empty() {
        "cargo gpubench report".to_string()
    } else {
        input.title.clone()
    };
    Views {
        summary: SummaryView {
            title,
            baseline_name: input.baseline_name.clone(),
            baseline_origin,
            generated_at: input.generated_at.clone(),
            counts,
            total: benchmarks.len(),
            environment,
            environment_warning,
            peaks,
            has_kernels: rows.iter().any(|r| !r.kernel.text.is_empty()),
            rows,
            missing_in_current: input.missing_in_current.clone(),
            scorecard,
        },
        benchmarks,
    }
}

fn short_commit(c: &str) -> &str {
    c.get(..12).unwrap_or(c)
}

fn environment_rows(f: &Fingerprint) -> Vec<(String, String)> {
    let mut device = format!("{} ({})", f.device.name, f.device.label());
    if let Some(m) = f.device.total_memory_bytes {
        device.push_str(&format!(", {}", format::bytes(m)));
    }
    let mut rows = vec![("device".to_string(), device)];
    let mut push = |k: &str, v: Option<&String>| {
        if let Some(v) = v {
            rows.push((k.to_string(), v.clone()));
        }
    };
    push("CUDA", f.cuda_version.as_ref());
    push("cuDNN", f.cudnn_version.as_ref());
    push("libtorch", Some(&f.libtorch_version));
    push("tch", Some(&f.tch_version));
    push("gpubench", Some(&f.gpubench_version));
    push("host CPU", f.cpu_model.as_ref());
    push("OS", Some(&f.os));
    push("git commit", f.git_commit.as_ref());
    push("measured at", Some(&f.timestamp));
    rows
}

/// Figures of one benchmark's processes, shared by the summary row and the page.
struct Figures {
    /// Per-iteration samples of the primary timer, one group per process, each in
    /// time order.
    primary: Vec<Vec<f64>>,
    /// Per-iteration samples of the timer compared with the baseline, per process.
    compared: Vec<Vec<f64>>,
    /// Which timer `compared` is.
    compared_kind: TimeKind,
    /// Which timer `primary` is.
    primary_kind: TimeKind,
    /// The typical time with its interval (over processes when there are several).
    estimate: Estimate,
    /// What `estimate` rests on.
    basis: EstimateBasis,
    /// How the processes compare.
    processes: ProcessStats,
    /// Mean of all samples, pooled.
    mean: f64,
    outliers: OutlierCounts,
    host: f64,
    device: Option<f64>,
    wall: f64,
    throughput: Option<(String, f64)>,
}

impl Figures {
    fn of(r: &RawRecord, s: &BenchmarkSummary, compared: Option<TimeKind>) -> Option<Self> {
        let primary_kind = s.primary_kind?;
        let p = s.primary()?;
        let compared_kind = compared.unwrap_or(primary_kind);
        Some(Figures {
            primary: r.groups(primary_kind),
            compared: r.groups(compared_kind),
            compared_kind,
            primary_kind,
            estimate: p.estimate,
            basis: p.basis,
            processes: p.processes.clone(),
            mean: p.mean,
            outliers: p.outliers,
            host: s.host.as_ref().map_or(f64::NAN, |h| h.estimate.point),
            device: s.device.as_ref().map(|d| d.estimate.point),
            wall: s.wall.as_ref().map_or(f64::NAN, |w| w.estimate.point),
            throughput: s
                .throughput
                .as_ref()
                .map(|t| (t.rate.clone(), t.rate_per_s)),
        })
    }

    /// Every primary sample, process after process.
    fn pooled(&self) -> Vec<f64> {
        self.primary.concat()
    }
}

fn benchmark_status(b: &ReportBenchmark) -> StatusView {
    if b.record.failure().is_some() {
        return STATUS_FAILED;
    }
    match b.baseline.as_ref().map(|c| &c.outcome) {
        None => STATUS_NO_BASELINE,
        // A regression on any metric (time, kernel time, counters) shows as one.
        Some(o @ ComparisonOutcome::Compared { comparison, .. }) => {
            if Metric::ALL
                .into_iter()
                .any(|m| o.verdict_of(m) == Some(Verdict::Regressed))
            {
                status_of(Verdict::Regressed)
            } else {
                status_of(comparison.verdict)
            }
        }
        Some(ComparisonOutcome::Failed { .. }) => STATUS_FAILED,
        Some(ComparisonOutcome::NotCompared { .. }) => STATUS_NOT_COMPARED,
    }
}

/// The comparison's result, when the benchmark was compared.
fn compared(b: &ReportBenchmark) -> Option<&gpubench_analysis::Comparison> {
    match b.baseline.as_ref().map(|c| &c.outcome) {
        Some(ComparisonOutcome::Compared { comparison, .. }) => Some(comparison),
        _ => None,
    }
}

/// What the reader should know about the baseline of `b`: the caller's note and why
/// it was not compared.
fn baseline_note(b: &ReportBenchmark) -> Option<String> {
    let c = b.baseline.as_ref()?;
    let reason = match &c.outcome {
        ComparisonOutcome::NotCompared { reason } => Some(format!("Not compared: {reason}.")),
        _ => None,
    };
    match (c.note.clone(), reason) {
        (Some(n), Some(r)) => Some(format!("{n} {r}")),
        (n, r) => n.or(r),
    }
}

/// A benchmark's page and its summary row, sharing the (costly) estimates.
fn build_one(b: &ReportBenchmark) -> (BenchmarkView, SummaryRow) {
    let summary = match &b.summary {
        Some(s) => std::borrow::Cow::Borrowed(s),
        None => std::borrow::Cow::Owned(BenchmarkSummary::from_record(&b.record)),
    };
    let compared_kind = b.baseline.as_ref().and_then(|c| c.kind());
    let fig = b
        .record
        .first_measurement()
        .and_then(|_| Figures::of(&b.record, &summary, compared_kind));
    let view = benchmark_view(b, &summary, fig.as_ref());
    let row = summary_row(b, &summary, &view, fig.as_ref());
    (view, row)
}

fn summary_row(
    b: &ReportBenchmark,
    s: &BenchmarkSummary,
    v: &BenchmarkView,
    fig: Option<&Figures>,
) -> SummaryRow {
    let r = &b.record;
    let m = r.first_measurement();
    let time = match fig {
        Some(f) => Cell {
            text: format::duration(f.estimate.point),
            detail: format::duration_interval(f.estimate.point, f.estimate.lower, f.estimate.upper),
            sort: format!("{}", f.estimate.point),
        },
        None => Cell::default(),
    };
    let processes = match fig {
        Some(f) => Cell {
            text: f.processes.count.to_string(),
            detail: f
                .processes
                .between
                .map(|b| format!("±{} between", crate::summary::spread_percent(b)))
                .unwrap_or_default(),
            sort: f.processes.count.to_string(),
        },
        None => Cell::default(),
    };
    let change = compared(b)
        .map(|c| c.change)
        .map(|e| Cell {
            text: format::percent_change(e.point),
            detail: format::percent_interval(e.lower, e.upper),
            sort: format!("{}", e.point),
        })
        .unwrap_or_default();
    let host = Cell::duration(fig.map(|f| f.host));
    let device = Cell::duration(fig.and_then(|f| f.device));
    let kernel = kernel_cell(b, s);
    let cold = Cell::duration(s.cold.first().map(|c| c.wall_ns));
    let throughput = match (m.and_then(|m| m.throughput), fig) {
        (
            Some(t),
            Some(Figures {
                throughput: Some((rate, per_s)),
                estimate,
                ..
            }),
        ) => Cell {
            text: rate.clone(),
            detail: percent_of_peak(b, t, estimate.point)
                .map(|(p, of)| format!("{p:.0}% of {of}"))
                .unwrap_or_default(),
            sort: format!("{per_s}"),
        },
        _ => Cell::default(),
    };
    let memory = s
        .memory
        .map(|mem| Cell {
            text: format::bytes(mem.peak_allocated_bytes),
            detail: format!("{} reserved", format::bytes(mem.peak_reserved_bytes)),
            sort: mem.peak_allocated_bytes.to_string(),
        })
        .unwrap_or_default();
    let note = if let Some(f) = r.failure() {
        format!("{}: {}", f.kind.label(), first_line(&f.message, 160))
    } else {
        let mut parts: Vec<String> = s.flags.iter().map(|f| f.label().to_string()).collect();
        match baseline_note(b) {
            Some(n) => parts.push(n),
            None if r.config.mode == RunMode::Smoke => parts.push("smoke run (one call)".into()),
            None => {}
        }
        parts.join("; ")
    };
    SummaryRow {
        id: r.id.clone(),
        id_parts: wrap_points(&r.id),
        href: format!("bench/{}.html", v.stem),
        status: v.status.clone(),
        time,
        processes,
        change,
        host,
        device,
        kernel,
        cold,
        throughput,
        memory,
        note,
    }
}

/// Kernel time per call; below it the change and verdict against the baseline, the
/// counters' changes, or else the kernels per call.
fn kernel_cell(b: &ReportBenchmark, s: &BenchmarkSummary) -> Cell {
    let Some(k) = &s.kernel else {
        return Cell::default();
    };
    let outcome = b.baseline.as_ref().map(|c| &c.outcome);
    let mut detail: Vec<String> = Vec::new();
    if let Some(c) = outcome.and_then(crate::comparison::kernel_comparison) {
        detail.push(format!(
            "{} {}",
            format::percent_change(c.change.point),
            c.verdict.label()
        ));
    }
    match outcome.and_then(crate::comparison::counter_changes) {
        Some(changes) if !changes.is_empty() => {
            detail.extend(changes.iter().map(|c| c.describe()));
        }
        _ => {
            if let Some(n) = s.counters.and_then(|c| c.per_call(Counter::Kernels)) {
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

/// The rate as a percentage of the device's peak, with what peak: `(62.0, "bf16
/// peak")`. `None` when the device, or for FLOPs the dtype, is unknown.
fn percent_of_peak(b: &ReportBenchmark, t: Throughput, ns_per_iter: f64) -> Option<(f64, String)> {
    let peaks = device_peaks(&b.record.fingerprint.device.name)?;
    let rate = t.rate(ns_per_iter);
    match t {
        Throughput::Flops(_) => {
            let dtype = b
                .dtype
                .as_deref()
                .and_then(normalise_dtype)
                .or_else(|| dtype_from_id(&b.record.id))?;
            let peak = peaks.tflops_for(dtype)?;
            Some((rate / 1e12 / peak * 100.0, format!("{dtype} peak")))
        }
        Throughput::Bytes(_) => Some((
            rate / 1e9 / peaks.memory_gb_s * 100.0,
            "memory bandwidth".into(),
        )),
        Throughput::Elements(_) => None,
    }
}

/// `matmul_bf16/4096` → `["matmul_", "bf16/", "4096"]`.
fn wrap_points(id: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut current = String::new();
    for c in id.chars() {
        current.push(c);
        if matches!(c, '/' | '_' | '-' | '.' | ':') {
            parts.push(std::mem::take(&mut current));
        }
    }
    if !current.is_empty() || parts.is_empty() {
        parts.push(current);
    }
    parts
}

/// `p = 0.023`, or `p < 0.001` below that.
fn p_value(p: f64) -> String {
    if p < 0.001 {
        "p < 0.001".into()
    } else {
        format!("p = {p:.3}")
    }
}

fn first_line(s: &str, max_chars: usize) -> String {
    let line = s.lines().next().unwrap_or("");
    if line.chars().count() > max_chars {
        let cut: String = line.chars().take(max_chars).collect();
        format!("{cut}…")
    } else if s.lines().nth(1).is_some() {
        format!("{line} …")
    } else {
        line.to_string()
    }
}

fn benchmark_view(
    b: &ReportBenchmark,
    s: &BenchmarkSummary,
    fig: Option<&Figures>,
) -> BenchmarkView {
    let r = &b.record;
    let stem = file_stem_for_id(&r.id);
    let status = benchmark_status(b);
    let m = r.first_measurement();
    let failure = r.failure().map(|f| FailureView {
        kind: match r.failed_round() {
            Some(round) if r.rounds.len() > 1 => {
                format!(
                    "{} (in round {} of {})",
                    f.kind.label(),
                    round.round,
                    r.rounds.len()
                )
            }
            _ => f.kind.label().to_string(),
        },
        message: f.message.clone(),
        memory: f.memory_at_failure.map(memory_facts).unwrap_or_default(),
    });
    let comparison = r.eager_compiled().map(ComparisonView::new);
    let mut view = BenchmarkView {
        id: r.id.clone(),
        stem: stem.clone(),
        status,
        failure,
        measured: fig.is_some(),
        smoke: r.config.mode == RunMode::Smoke,
        primary_label: String::new(),
        key_facts: Vec::new(),
        reading: Vec::new(),
        timing_facts: Vec::new(),
        cold_rows: Vec::new(),
        naive_rows: Vec::new(),
        resource_facts: Vec::new(),
        baseline_note: baseline_note(b),
        charts: PageCharts::default(),
        comparison,
        kernels: None,
        environment: environment_rows(&r.fingerprint),
        config: config_rows(r),
    };
    if let Some(plot) = view
        .comparison
        .as_ref()
        .and_then(ComparisonView::latency_plot)
    {
        view.charts.comparison = Some(chart(
            &stem,
            "comparison.svg",
            plot,
            "Per-request latency of each variant over the shape stream",
            "Each dot is one request, in the order served; rings mark cold calls (the first request at a new shape). Rings after the first requests mean a variant pays again for every new shape.",
        ));
    }
    let (Some(m), Some(fig)) = (m, fig) else {
        return view;
    };
    view.primary_label = time_label(fig.primary_kind).into();
    view.kernels = KernelView::new(s, b.baseline.as_ref());
    fill_facts(&mut view, b, s, m, fig);
    fill_charts(&mut view, b, s, m, fig);
    view
}

fn fill_facts(
    view: &mut BenchmarkView,
    b: &ReportBenchmark,
    s: &BenchmarkSummary,
    m: &Measurement,
    fig: &Figures,
) {
    let est = fig.estimate;
    let n = fig.processes.count;
    view.key_facts.push(fact(
        "time",
        format::duration(est.point),
        match fig.basis {
            EstimateBasis::Processes => format!(
                "{:.0}% interval for the next run {}; over {n} processes",
                est.confidence * 100.0,
                format::duration_interval(est.point, est.lower, est.upper)
            ),
            EstimateBasis::OneProcess => format!(
                "{:.0}% interval {} of one process only: it says nothing of the next",
                est.confidence * 100.0,
                format::duration_interval(est.point, est.lower, est.upper)
            ),
        },
    ));
    let within = fig
        .processes
        .within
        .map(|w| format!("noise within each ±{:.2}%", w * 100.0));
    view.key_facts.push(fact(
        "processes",
        n.to_string(),
        match (fig.processes.between, fig.processes.range) {
            (Some(b), Some(r)) => {
                let mut d = format!(
                    "spread between them ±{:.2}% (medians {:.1}% apart at most)",
                    b * 100.0,
                    r * 100.0
                );
                if let Some(w) = &within {
                    d.push_str(&format!("; {w}"));
                }
                d
            }
            _ => within.unwrap_or_else(|| "one process".into()),
        },
    ));
    if let Some([low, high]) = fig.processes.modes {
        view.key_facts.push(fact(
            "modes",
            "2",
            format!(
                "{} in {} process{}, {} in {}",
                format::duration(low.centre),
                low.processes,
                if low.processes == 1 { "" } else { "es" },
                format::duration(high.centre),
                high.processes
            ),
        ));
    }
    if let Some(c) = compared(b) {
        let e = c.change;
        let threshold = if c.threshold > c.noise_threshold {
            format!(
                "threshold ±{} (the spread between processes; noise threshold ±{})",
                format::percent_change(c.threshold).trim_start_matches('+'),
                format::percent_change(c.noise_threshold).trim_start_matches('+')
            )
        } else {
            format!(
                "noise threshold ±{}",
                format::percent_change(c.threshold).trim_start_matches('+')
            )
        };
        view.key_facts.push(fact(
            "change vs baseline",
            format::percent_change(e.point),
            format!(
                "{:.0}% interval {}; {} (one-sided); {threshold}",
                e.confidence * 100.0,
                format::percent_interval(e.lower, e.upper),
                p_value(c.p_value),
            ),
        ));
        view.key_facts.push(fact(
            "baseline",
            format::duration(c.baseline_estimate),
            format!(
                "{} process{} of {} time",
                c.baseline_processes,
                if c.baseline_processes == 1 { "" } else { "es" },
                fig.compared_kind.label()
            ),
        ));
    }
    view.key_facts.push(fact(
        "mean",
        format::duration(fig.mean),
        "of every sample of every process",
    ));
    let o = fig.outliers;
    if o.total() > 0 {
        view.key_facts.push(fact(
            "outliers",
            format!("{} of {}", o.outliers(), o.total()),
            format!(
                "{} mild, {} severe (Tukey fences of each process)",
                o.low_mild + o.high_mild,
                o.low_severe + o.high_severe
            ),
        ));
    }
    let iters: Vec<u64> = b
        .record
        .measurements()
        .flat_map(|m| &m.samples)
        .map(|s| s.iters)
        .collect();
    let (lo, hi) = (
        iters.iter().min().copied().unwrap_or(0),
        iters.iter().max().copied().unwrap_or(0),
    );
    view.key_facts.push(fact(
        "samples",
        iters.len().to_string(),
        if lo == hi {
            format!("{lo} iterations each")
        } else {
            format!("{lo}–{hi} iterations each")
        },
    ));
    view.key_facts.push(fact(
        "first process stopped because",
        match m.stop_reason {
            StopReason::Converged => "interval narrow enough",
            StopReason::TimeBound => "time bound hit",
            StopReason::SampleBound => "sample bound hit",
            StopReason::Smoke => "smoke run (one call)",
        },
        format!(
            "target ±{:.1}% within a process",
            b.record.config.target_rel_ci * 100.0
        ),
    ));
    view.key_facts.push(fact(
        "sync cost",
        format::duration(s.sync_cost_ns.unwrap_or(m.sync_cost_ns)),
        "an empty sync; amortised over each sample",
    ));

    view.timing_facts.push(fact(
        "synced wall",
        format::duration(fig.wall),
        "sync; start; k calls; sync; stop — per call",
    ));
    if let Some(d) = fig.device {
        view.timing_facts
            .push(fact("device", format::duration(d), "from device events"));
    }
    view.timing_facts.push(fact(
        "host dispatch",
        format::duration(fig.host),
        "until the k-th call returned to the host",
    ));
    let busy = fig.device.unwrap_or(fig.wall);
    if fig.host < 0.6 * busy {
        view.reading.push(format!(
            "The host returns after {} per call while the device needs {}: the device is the bottleneck (device-bound). A timer stopped without a sync would report the host figure.",
            format::duration(fig.host),
            format::duration(busy)
        ));
    } else if fig.device.is_some_and(|d| d < 0.7 * fig.host) {
        view.reading.push(format!(
            "The device needs {} per call but the host takes {} to dispatch it: the device waits on the host (launch-bound). Fewer, larger kernels or a compiled graph help here.",
            format::duration(busy),
            format::duration(fig.host)
        ));
    }
    for flag in &s.flags {
        if *flag == gpubench_analysis::Flag::SyncsInsideRoutine {
            view.reading.push("Host-dispatch time tracks device time: something inside the routine synchronises (e.g. `.item()`, printing a tensor, a copy to the CPU).".into());
        }
        if *flag == gpubench_analysis::Flag::Unstable {
            view.reading.push("The samples of a process never settled within its time bound; treat the figures as rough and look at the time-order chart for drift or throttling.".into());
        }
        if *flag == gpubench_analysis::Flag::Throttled {
            view.reading.push(format!(
                "The GPU throttled during {} sample(s): their SM clock was below 75% of the GPU's default, or a hardware, thermal or power-brake slowdown was on. They are left out of the figures; the clock chart under the samples shows when.",
                s.throttled_samples
            ));
        }
        if *flag == gpubench_analysis::Flag::Contended {
            let pids: Vec<String> = s.other_processes.iter().map(u32::to_string).collect();
            view.reading.push(format!(
                "Contended: another process used the GPU while this benchmark ran (process {}). It shared the SMs, memory bandwidth and power, so the figures may be slow by whatever it took; measure again on a quiet GPU (`cargo gpubench doctor` lists what runs on it).",
                pids.join(", ")
            ));
        }
        if *flag == gpubench_analysis::Flag::UnstableAcrossProcesses {
            view.reading.push(format!(
                "The processes disagree ({}): the machine runs this benchmark at a different speed in each fresh process, usually the host's dispatch speed for launch-bound work. The interval covers that; kernel time would not move with it.",
                crate::summary::process_note(s).unwrap_or_default()
            ));
        }
    }

    // Cold calls are synced wall times, so they compare with the steady wall time.
    let steady_wall = fig.wall;
    let steady = fig.estimate.point;
    view.cold_rows = s
        .cold
        .iter()
        .map(|c| ColdRow {
            label: c.label.clone(),
            wall: format::duration(c.wall_ns),
            host: format::duration(c.host_ns),
            device: c.device_ns.map(format::duration).unwrap_or_default(),
            ratio: if steady_wall > 0.0 {
                format!("{:.0}×", c.wall_ns / steady_wall)
            } else {
                String::new()
            },
            per_process: match (
                c.per_process_wall_ns.iter().copied().reduce(f64::min),
                c.per_process_wall_ns.iter().copied().reduce(f64::max),
            ) {
                (Some(lo), Some(hi)) => format!(
                    "{} to {} over {} processes",
                    format::duration(lo),
                    format::duration(hi),
                    c.per_process_wall_ns.len()
                ),
                _ => String::new(),
            },
        })
        .collect();
    view.naive_rows = m
        .naive
        .iter()
        .map(|n| NaiveRow {
            iters: n.iters,
            naive: format::duration(n.naive_ns_per_iter),
            synced: format::duration(n.synced_ns_per_iter),
            error: if n.naive_ns_per_iter > 0.0 && n.synced_ns_per_iter > n.naive_ns_per_iter {
                format!(
                    "{:.1}× too fast",
                    n.synced_ns_per_iter / n.naive_ns_per_iter
                )
            } else {
                "about right".into()
            },
        })
        .collect();

    if let (Some(t), Some((rate, _))) = (m.throughput, &fig.throughput) {
        let detail = percent_of_peak(b, t, steady)
            .map(|(p, of)| format!("{p:.0}% of {of}"))
            .unwrap_or_else(|| "device peak unknown".into());
        view.resource_facts
            .push(fact("throughput", rate.clone(), detail));
    }
    if let Some(mem) = s.memory {
        view.resource_facts.extend(memory_facts(mem));
    }
}

fn memory_facts(mem: gpubench_analysis::MemoryStats) -> Vec<Fact> {
    let mut facts = vec![
        fact(
            "peak allocated",
            format::bytes(mem.peak_allocated_bytes),
            "held by tensors",
        ),
        fact(
            "peak reserved",
            format::bytes(mem.peak_reserved_bytes),
            "held by the caching allocator",
        ),
    ];
    if mem.alloc_retries > 0 || mem.num_ooms > 0 {
        facts.push(fact(
            "allocator retries / OOMs",
            format!("{} / {}", mem.alloc_retries, mem.num_ooms),
            "retries mean the cache was flushed to fit an allocation",
        ));
    }
    facts
}

fn config_rows(r: &RawRecord) -> Vec<(String, String)> {
    let c = &r.config;
    vec![
        (
            "mode".into(),
            match c.mode {
                RunMode::Bench => "bench".into(),
                RunMode::Smoke => "smoke (one call)".into(),
            },
        ),
        ("warm-up bound".into(), format!("{} s", c.warmup_time_s)),
        (
            "measurement bound".into(),
            format!("{} s", c.measurement_time_s),
        ),
        (
            "sample target".into(),
            format::duration(c.sample_target_s * 1e9),
        ),
        (
            "samples".into(),
            format!("{} to {}", c.min_samples, c.max_samples),
        ),
        (
            "interval target".into(),
            format!(
                "±{:.1}% (median, 95%, within a process)",
                c.target_rel_ci * 100.0
            ),
        ),
        ("processes".into(), processes_setting(&c.processes)),
        (
            "L2 flushed".into(),
            if c.flush_l2 {
                FLUSH_L2_REGIME
            } else {
                "no: calls run back to back, the GPU busy and at its loaded clock"
            }
            .into(),
        ),
    ]
}

/// Which regime a `--flush-l2` run measures, in words.
pub const FLUSH_L2_REGIME: &str = "yes: one call per sample after a flush, so the GPU idles between calls and clocks up; this is the cold-cache, rested-GPU figure, often faster than back to back (an 8192³ bf16 matmul on an H200: 1.39 ms here, 1.60–1.64 ms back to back)";

/// The process policy in words: `3 to 6 (more than 3 only for device-bound ...)`, `5`.
fn processes_setting(p: &gpubench_analysis::ProcessPolicy) -> String {
    if p.is_fixed() {
        p.min.to_string()
    } else {
        format!(
            "{} to {} (more than {} only for device-bound benchmarks whose interval is wider than ±{}%)",
            p.min,
            p.max,
            p.min,
            p.target_rel_ci * 100.0
        )
    }
}

/// What a timer measures, in the words of the page.
fn time_label(kind: TimeKind) -> &'static str {
    match kind {
        TimeKind::Device => "device time",
        TimeKind::Kernel => "kernel time",
        TimeKind::Host => "host dispatch",
        TimeKind::Wall => "synced wall time",
    }
}

fn chart(stem: &str, file: &str, plot: Plot, alt: &str, caption: &str) -> ChartView {
    ChartView {
        file: file.to_string(),
        src: format!("{stem}/{file}"),
        alt: alt.to_string(),
        caption: caption.to_string(),
        width: charts::WIDTH,
        height: plot.height,
        plot,
    }
}

fn fill_charts(
    view: &mut BenchmarkView,
    b: &ReportBenchmark,
    s: &BenchmarkSummary,
    m: &Measurement,
    fig: &Figures,
) {
    let stem = view.stem.clone();
    let base: &[Vec<f64>] = b
        .baseline
        .as_ref()
        .map(|c| c.baseline_processes_ns.as_slice())
        .unwrap_or(&[]);
    let unit = charts::axis_unit(fig.estimate.point);
    let what = &view.primary_label;
    let baseline_estimate = compared(b).map(|c| c.baseline_estimate);

    if !fig.compared.is_empty() {
        let (plot, hidden) = process_plot(
            &fig.compared,
            base,
            fig.estimate.point,
            baseline_estimate,
            unit,
            time_label(fig.compared_kind),
        );
        let mut caption = if base.is_empty() {
            "Every sample, one row per process (in the order they ran); the ring is the process's median and the dashed line the estimate over processes. Rows that sit apart are processes that ran at different speeds.".to_string()
        } else {
            "Every sample, one row per process: the baseline's (grey) above this run's (blue); rings are process medians, dashed lines each side's estimate. A change shows as all blue rows shifted; rows scattered on both sides are process-to-process noise.".to_string()
        };
        if hidden > 0 {
            caption.push_str(&format!(
                " {hidden} far outlier(s) lie beyond the axis; the time-order chart shows them."
            ));
        }
        view.charts.distribution = Some(chart(
            &stem,
            "distribution.svg",
            plot,
            "Per-call times of every process, this run against the baseline",
            &caption,
        ));
    }

    let pooled = fig.pooled();
    if pooled.len() >= 2 {
        let mut plot = Plot::new(
            Axis::index(
                "sample (in time order, process after process)",
                pooled.len(),
            ),
            Axis::time(
                &format!("{what} per call"),
                charts::padded_range(pooled.iter().copied(), 0.15, false),
                false,
                unit,
            ),
        );
        plot.rules.push(Rule {
            horizontal: true,
            at: fig.estimate.point,
            color: palette::BASELINE,
            dashed: true,
            label: Some("estimate".into()),
        });
        // A light line where each process after the first begins.
        let mut start = 0usize;
        for g in &fig.primary[..fig.primary.len().saturating_sub(1)] {
            start += g.len();
            plot.rules.push(Rule {
                horizontal: false,
                at: start as f64 - 0.5,
                color: palette::GRID,
                dashed: false,
                label: None,
            });
        }
        plot.series.push(Series {
            name: None,
            color: palette::NEW,
            points: charts::in_order(&pooled),
            kind: SeriesKind::LineMarkers,
        });
        view.charts.timeline = Some(chart(
            &stem,
            "timeline.svg",
            plot,
            "Per-call time of every sample in the order taken, process after process",
            "Vertical lines separate processes. A steady run is a flat band; a step at a process boundary is a process that ran at another speed; a slope within a process is drift (clocks, heat); a slow start means warm-up ended too early.",
        ));
    }

    if let Some((clock, temperature, caption)) = super::gpu::clock_plots(&b.record) {
        view.charts.gpu_clock = Some(chart(
            &stem,
            "gpu-clock.svg",
            clock,
            "The GPU's SM clock after every sample, in time order",
            &caption,
        ));
        view.charts.gpu_temperature = temperature.map(|plot| {
            chart(
                &stem,
                "gpu-temperature.svg",
                plot,
                "The GPU's temperature after every sample, in time order",
                "The GPU's temperature read with each sample: a climb towards the slowdown temperature comes before thermal throttling.",
            )
        });
    }

    let r = &b.record;
    let hosts = r.groups(TimeKind::Host).concat();
    let walls = r.groups(TimeKind::Wall).concat();
    let devices = r
        .device_timed()
        .then(|| r.groups(TimeKind::Device).concat())
        .filter(|d| !d.is_empty());
    if !walls.is_empty() {
        let all = walls
            .iter()
            .chain(hosts.iter())
            .chain(devices.iter().flatten())
            .copied();
        let top = charts::padded_range(all, 0.1, false).end;
        let n = walls.len();
        let kind = if n == 1 {
            SeriesKind::Markers {
                size: 5,
                hollow: false,
            }
        } else {
            SeriesKind::Line
        };
        let mut plot = Plot::new(
            Axis::index("sample (in time order)", n),
            Axis::time("per call", 0.0..top * 1.25, false, unit),
        );
        plot.series.push(Series {
            name: Some("synced wall".into()),
            color: palette::NEW,
            points: charts::in_order(&walls),
            kind,
        });
        if let Some(d) = &devices {
            plot.series.push(Series {
                name: Some("device".into()),
                color: palette::DEVICE,
                points: charts::in_order(d),
                kind,
            });
        }
        plot.series.push(Series {
            name: Some("host dispatch".into()),
            color: palette::HOST,
            points: charts::in_order(&hosts),
            kind,
        });
        view.charts.host_device = Some(chart(
            &stem,
            "host-device.svg",
            plot,
            "Host-dispatch, device and synced wall time per call for every sample of every process",
            "Host dispatch far below device time: device-bound (the host queues ahead). Host dispatch near wall time with device time below it: launch-bound.",
        ));
    }

    if !m.warmup.is_empty() {
        let per_iter: Vec<f64> = m
            .warmup
            .iter()
            .map(|w| w.wall_ns / w.iters.max(1) as f64)
            .collect();
        let values = per_iter.iter().copied().chain([fig.estimate.point]);
        let log = charts::wants_log(values.clone());
        let wunit = charts::axis_unit(fig.estimate.point);
        let mut plot = Plot::new(
            Axis::index("warm-up batch", per_iter.len()),
            Axis::time(
                "synced wall per call",
                charts::padded_range(values, 0.15, log),
                log,
                wunit,
            ),
        );
        plot.rules.push(Rule {
            horizontal: true,
            at: fig.estimate.point,
            color: palette::DEVICE,
            dashed: true,
            label: Some("steady-state estimate".into()),
        });
        plot.series.push(Series {
            name: None,
            color: palette::HOST,
            points: charts::in_order(&per_iter),
            kind: SeriesKind::LineMarkers,
        });
        view.charts.warmup = Some(chart(
            &stem,
            "warmup.svg",
            plot,
            "Per-call time of each warm-up batch of the first process against the steady-state estimate",
            "Warm-up runs until the per-call time stops changing; these batches are not part of the samples.",
        ));
    }

    if !s.cold.is_empty() && fig.wall > 0.0 {
        view.charts.cold = Some(chart(
            &stem,
            "cold.svg",
            cold_plot(s, fig.wall),
            "Cold calls against one steady-state call",
            "Cold calls include lazy initialisation, library heuristics, allocator growth and compilation; they are reported on their own, never mixed into the samples.",
        ));
    }
}

/// One row per process, the baseline's above this run's: every sample as a dot, the
/// process median as a ring, each side's estimate as a dashed line. Returns the plot
/// and how many samples fall outside the axis.
fn process_plot(
    new: &[Vec<f64>],
    base: &[Vec<f64>],
    new_estimate: f64,
    base_estimate: Option<f64>,
    unit: format::TimeUnit,
    what: &str,
) -> (Plot, usize) {
    let all: Vec<f64> = new.iter().chain(base).flatten().copied().collect();
    // Far outliers (a throttling spike) would squash the rows into one column: show
    // what lies within the outer fences of some process.
    let fences: Vec<(f64, f64)> = new
        .iter()
        .chain(base)
        .filter_map(|xs| stats::TukeyFences::from_samples(xs))
        .map(|f| {
            let width = (f.high_severe - f.low_severe).max(f.high_severe.abs() * 1e-3);
            (f.low_severe - 0.1 * width, f.high_severe + 0.1 * width)
        })
        .collect();
    let shown = |v: &f64| fences.iter().any(|(lo, hi)| *v >= *lo && *v <= *hi);
    let hidden = all.iter().filter(|v| !shown(v)).count();
    let visible = all.iter().copied().filter(shown).chain([new_estimate]);
    let x = charts::padded_range(visible.chain(base_estimate), 0.08, false);
    let rows = base.len() + new.len();
    let mut plot = Plot::new(
        Axis::time(&format!("{what} per call"), x, false, unit),
        Axis::linear("", -0.7..rows as f64 - 0.3, AxisFormat::Hidden),
    );
    plot.height = (90 + 26 * rows as u32).clamp(170, 560);
    // Row 0 at the bottom: this run's last process; the baseline's first at the top.
    let row = |i: usize| (rows - 1 - i) as f64;
    let sides = [
        ("baseline", base, 0usize, palette::BASELINE, base_estimate),
        (
            "this run",
            new,
            base.len(),
            palette::NEW,
            Some(new_estimate),
        ),
    ];
    for (name, groups, offset, color, estimate) in sides {
        if groups.is_empty() {
            continue;
        }
        let dots = groups
            .iter()
            .enumerate()
            .flat_map(|(i, g)| {
                g.iter()
                    .copied()
                    .filter(shown)
                    .map(move |v| (v, row(offset + i)))
            })
            .collect();
        plot.series.push(Series {
            name: Some(format!(
                "{name} ({} process{})",
                groups.len(),
                if groups.len() == 1 { "" } else { "es" }
            )),
            color,
            points: dots,
            kind: SeriesKind::Markers {
                size: 2,
                hollow: false,
            },
        });
        plot.series.push(Series {
            name: None,
            color,
            points: groups
                .iter()
                .enumerate()
                .map(|(i, g)| (stats::median(g), row(offset + i)))
                .collect(),
            kind: SeriesKind::Markers {
                size: 6,
                hollow: true,
            },
        });
        if let Some(at) = estimate {
            plot.rules.push(Rule {
                horizontal: false,
                at,
                color,
                dashed: true,
                label: None,
            });
        }
    }
    (plot, hidden)
}

/// Horizontal bars on a log axis: each cold call and one steady-state call, labelled
/// with its time and ratio.
fn cold_plot(s: &BenchmarkSummary, steady: f64) -> Plot {
    let mut bars: Vec<(String, f64, bool)> = s
        .cold
        .iter()
        .map(|c| (c.label.clone(), c.wall_ns, true))
        .collect();
    bars.push(("steady state (median wall)".into(), steady, false));
    let lo = bars.iter().map(|b| b.1).fold(f64::INFINITY, f64::min) / 3.0;
    let hi = bars.iter().map(|b| b.1).fold(0.0f64, f64::max);
    // Room on the right for the labels.
    let x = lo..hi * 400.0;
    let n = bars.len();
    let mut plot = Plot::new(
        Axis {
            desc: "synced wall time (log scale)".into(),
            range: x,
            log: true,
            format: AxisFormat::Duration,
        },
        Axis::linear("", -0.6..n as f64 - 0.4, AxisFormat::Hidden),
    );
    plot.height = (70 + 44 * n as u32).clamp(150, 480);
    let row = |i: usize| (n - 1 - i) as f64;
    for (cold, color) in [(true, palette::COLD), (false, palette::DEVICE)] {
        plot.series.push(Series {
            name: None,
            color,
            points: bars
                .iter()
                .enumerate()
                .filter(|(_, b)| b.2 == cold)
                .map(|(i, b)| (b.1, row(i)))
                .collect(),
            kind: SeriesKind::HorizontalBars { half_height: 0.3 },
        });
    }
    for (i, (label, v, cold)) in bars.iter().enumerate() {
        let text = if *cold {
            format!(
                "{label}: {} ({:.0}× steady)",
                format::duration(*v),
                v / steady
            )
        } else {
            format!("{label}: {}", format::duration(*v))
        };
        plot.notes.push(Note {
            at: (v * 1.15, row(i)),
            text,
        });
    }
    plot
}
