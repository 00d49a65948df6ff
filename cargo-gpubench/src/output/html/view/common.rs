//! What the summary page and a benchmark page share: statuses, cells, charts'
//! views, a benchmark's figures over its processes, and small wording helpers.

use gpubench_analysis::baseline::ComparisonOutcome;
use gpubench_analysis::processes::{EstimateBasis, ProcessStats};
use gpubench_analysis::stats::OutlierCounts;
use gpubench_analysis::{BenchmarkSummary, Verdict};
use gpubench_record::estimate::Estimate;
use gpubench_record::measurement::{Throughput, TimeKind};
use gpubench_record::record::{Fingerprint, RawRecord};
use serde::Serialize;

use crate::format;
use crate::output::html::charts::Plot;
use crate::output::html::eager_compiled::EagerCompiledView;
use crate::output::html::facts::Fact;
use crate::output::html::input::ReportBenchmark;
use crate::output::html::kernels::KernelView;
use crate::output::html::peaks::{device_peaks, dtype_from_id, normalise_dtype, PeakKind};
use crate::output::view::metrics;

/// A benchmark's status: its verdict, or why it has none.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct StatusView {
    /// CSS class, e.g. `regressed`.
    pub class: &'static str,
    /// The word, e.g. `regressed`.
    pub label: &'static str,
    /// Severity for sorting: 0 (failed) first.
    pub rank: u8,
}

pub(crate) const STATUS_FAILED: StatusView = StatusView {
    class: "failed",
    label: "failed",
    rank: 0,
};
pub(crate) const STATUS_NOT_COMPARED: StatusView = StatusView {
    class: "notcompared",
    label: "not compared",
    rank: 3,
};
pub(crate) const STATUS_NO_BASELINE: StatusView = StatusView {
    class: "nobaseline",
    label: "no baseline",
    rank: 6,
};

pub(crate) fn status_of(verdict: Verdict) -> StatusView {
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
pub(crate) struct Cell {
    /// Main text.
    pub text: String,
    /// Second line (an interval, a percentage), or empty.
    pub detail: String,
    /// The key sortable tables order by; empty sorts last.
    pub sort: String,
}

impl Cell {
    pub(crate) fn duration(ns: Option<f64>) -> Self {
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

/// A chart of a benchmark page.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ChartView {
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
    pub(crate) plot: Plot,
}

impl ChartView {
    /// Draws the chart's SVG.
    pub(crate) fn draw(&self) -> Result<String, String> {
        self.plot.to_svg()
    }
}

/// The charts of one page; absent when there is nothing to draw.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct PageCharts {
    /// Distribution of samples, this run against the baseline.
    pub distribution: Option<ChartView>,
    /// Samples in time order.
    pub timeline: Option<ChartView>,
    /// The SM clock read after each sample, in time order.
    pub gpu_clock: Option<ChartView>,
    /// The board's power draw read after each sample, in time order.
    pub gpu_power: Option<ChartView>,
    /// Why there is no power chart, in one line, when there is none.
    pub gpu_power_absent: Option<String>,
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
    /// `ab`: the change of head against base in each process they shared.
    pub paired: Option<ChartView>,
}

impl PageCharts {
    /// Every chart present.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &ChartView> {
        [
            &self.distribution,
            &self.timeline,
            &self.gpu_clock,
            &self.gpu_power,
            &self.gpu_temperature,
            &self.host_device,
            &self.warmup,
            &self.cold,
            &self.comparison,
            &self.paired,
        ]
        .into_iter()
        .flatten()
    }

    /// Whether there is no chart.
    pub(crate) fn is_empty(&self) -> bool {
        self.iter().next().is_none()
    }
}

/// Figures of one benchmark's processes, shared by the summary row and the page.
pub(crate) struct Figures {
    /// Per-iteration samples of the primary timer, one group per process, each in
    /// time order.
    pub(crate) primary: Vec<Vec<f64>>,
    /// Per-iteration samples of the timer compared with the baseline, per process.
    pub(crate) compared: Vec<Vec<f64>>,
    /// Which timer `compared` is.
    pub(crate) compared_kind: TimeKind,
    /// Which timer `primary` is.
    pub(crate) primary_kind: TimeKind,
    /// The typical time with its interval (over processes when there are several).
    pub(crate) estimate: Estimate,
    /// What `estimate` rests on.
    pub(crate) basis: EstimateBasis,
    /// How the processes compare.
    pub(crate) processes: ProcessStats,
    /// Mean of all samples, pooled.
    pub(crate) mean: f64,
    pub(crate) outliers: OutlierCounts,
    pub(crate) host: f64,
    pub(crate) device: Option<f64>,
    pub(crate) wall: f64,
    pub(crate) throughput: Option<(String, f64)>,
}

impl Figures {
    pub(crate) fn of(
        r: &RawRecord,
        s: &BenchmarkSummary,
        compared: Option<TimeKind>,
    ) -> Option<Self> {
        let primary_kind = s.timing.primary_kind?;
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
            host: s
                .timing
                .host
                .as_ref()
                .map_or(f64::NAN, |h| h.estimate.point),
            device: s.timing.device.as_ref().map(|d| d.estimate.point),
            wall: s
                .timing
                .wall
                .as_ref()
                .map_or(f64::NAN, |w| w.estimate.point),
            throughput: s
                .throughput
                .as_ref()
                .map(|t| (t.rate.clone(), t.rate_per_s)),
        })
    }

    /// Every primary sample, process after process.
    pub(crate) fn pooled(&self) -> Vec<f64> {
        self.primary.concat()
    }
}

pub(crate) fn benchmark_status(b: &ReportBenchmark) -> StatusView {
    if b.record.failure().is_some() {
        return STATUS_FAILED;
    }
    match b.baseline.as_ref().map(|c| &c.outcome) {
        None => STATUS_NO_BASELINE,
        // A regression on any metric (time, kernel time, counters) shows as one.
        Some(o @ ComparisonOutcome::Compared { comparison, .. }) => {
            if metrics::verdicts(o)
                .iter()
                .any(|m| m.verdict == Verdict::Regressed)
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
pub(crate) fn compared(b: &ReportBenchmark) -> Option<&gpubench_analysis::Comparison> {
    metrics::time(&b.baseline.as_ref()?.outcome)
}

/// What the reader should know about the baseline of `b`: the caller's note and why
/// it was not compared.
pub(crate) fn baseline_note(b: &ReportBenchmark) -> Option<String> {
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

/// `matmul_bf16/4096` → `["matmul_", "bf16/", "4096"]`.
pub(crate) fn wrap_points(id: &str) -> Vec<String> {
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
pub(crate) fn p_value(p: f64) -> String {
    if p < 0.001 {
        "p < 0.001".into()
    } else {
        format!("p = {p:.3}")
    }
}

pub(crate) fn first_line(s: &str, max_chars: usize) -> String {
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

/// What a timer measures, in the words of the page.
pub(crate) fn time_label(kind: TimeKind) -> &'static str {
    match kind {
        TimeKind::Device => "device time",
        TimeKind::Kernel => "kernel time",
        TimeKind::Host => "host dispatch",
        TimeKind::Wall => "synced wall time",
    }
}

/// A cold call next to the steady state.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ColdRow {
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
pub(crate) struct NaiveRow {
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
pub(crate) struct FailureView {
    /// The kind, e.g. `out of memory`.
    pub kind: String,
    /// The message.
    pub message: String,
    /// The allocator's view at the failure.
    pub memory: Vec<Fact>,
    /// What held memory at an out-of-memory failure (the snapshot's lines), or why
    /// there is no snapshot.
    pub held: Vec<String>,
}

/// What a measured benchmark's page says of its figures, part by part of its summary.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct MeasuredFacts {
    /// Which time the steady-state figures are: device or synced wall.
    pub primary_label: String,
    /// The headline figures: the estimate, the comparison, the samples.
    pub key_facts: Vec<Fact>,
    /// On the CPU, the sentence that says device time is host time there.
    pub cpu_note: Option<String>,
    /// A sentence on what the timings say, e.g. that it is device-bound.
    pub reading: Vec<String>,
    /// Host, device and wall medians.
    pub timing_facts: Vec<Fact>,
    /// Cold calls.
    pub cold_rows: Vec<ColdRow>,
    /// Whether the cold-call table has a device column (some cold call has a device
    /// time).
    pub cold_device: bool,
    /// Naive unsynchronised loops.
    pub naive_rows: Vec<NaiveRow>,
    /// Throughput and memory.
    pub resource_facts: Vec<Fact>,
}

/// One benchmark page.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct BenchmarkView {
    /// Benchmark id.
    pub id: String,
    /// The link to its trend on the history page, when there is one.
    pub history: Option<String>,
    /// Its name as the terminal shows it, `<target>/<id>` (the id when the target is
    /// not known).
    pub name: String,
    /// Whether it ran on the CPU, where device time is host time: the page says so
    /// once and shows no host-versus-device figures, charts or GPU words.
    pub on_cpu: bool,
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
    /// What its figures say; empty when it was not measured.
    #[serde(flatten)]
    pub facts: MeasuredFacts,
    /// What held memory at the peak (`--memory-peak-snapshot`), or why it could not
    /// be read.
    pub held_at_peak: Vec<String>,
    /// The baseline's note, e.g. why it was not compared.
    pub baseline_note: Option<String>,
    /// Charts.
    pub charts: PageCharts,
    /// Eager versus compiled, when the benchmark is one.
    pub comparison: Option<EagerCompiledView>,
    /// What the GPU did per call: kernel time, counts, the kernel table.
    pub kernels: Option<KernelView>,
    /// Where and with what it ran.
    pub environment: Vec<(String, String)>,
    /// The measurement options.
    pub config: Vec<(String, String)>,
}

/// The rate as a percentage of the device's peak, with what peak: `(75.0, "bf16
/// peak at 1672 MHz")` from the summary's share of the peak at the clock it ran;
/// without one, the data sheet's peak (`(62.0, "bf16 peak")`). `None` when the
/// device, or for FLOPs the dtype, is unknown.
pub(crate) fn percent_of_peak(
    b: &ReportBenchmark,
    s: &BenchmarkSummary,
    t: Throughput,
    ns_per_iter: f64,
) -> Option<(f64, String)> {
    if let Some(p) = &s.peak {
        let of = match (p.kind, &p.dtype) {
            (PeakKind::DenseFlops, Some(d)) => format!("{d} peak"),
            (PeakKind::DenseFlops, None) => "peak".to_string(),
            (PeakKind::SparseFlops, Some(d)) => format!("2:4 sparse {d} peak"),
            (PeakKind::SparseFlops, None) => "2:4 sparse peak".to_string(),
            (PeakKind::Bytes, _) => "memory bandwidth".to_string(),
        };
        let at = match (&p.unscaled, p.measured_clock_mhz) {
            (None, Some(mhz)) => format!(" at {mhz:.0} MHz"),
            _ => String::new(),
        };
        return Some((p.share * 100.0, format!("{of}{at}")));
    }
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

/// Whether `f` is of a CPU run: no queue, no device timer, no kernels.
pub(crate) fn on_cpu(f: &Fingerprint) -> bool {
    f.device.kind == "cpu"
}

pub(crate) fn environment_rows(f: &Fingerprint) -> Vec<(String, String)> {
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
