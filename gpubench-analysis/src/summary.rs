//! A benchmark's figures from its raw record: per-iteration estimates with intervals
//! over processes, the spread between and noise within processes, outliers, cold calls
//! per process, throughput, memory and status. What the terminal table, `--format
//! json` and the HTML report present.

use serde::{Deserialize, Serialize};

use crate::processes::{Bound, EstimateBasis, ProcessStats};
use crate::record_analysis::RecordAnalysis;
use crate::{
    stats::classify_outliers, stats::mad, stats::mean, stats::median, stats::std_dev,
    stats::BootstrapConfig, stats::OutlierCounts,
};
use gpubench_record::estimate::Estimate;
use gpubench_record::failure::Failure;
use gpubench_record::kernels::{Counters, KernelMethod, KernelStat};
use gpubench_record::measurement::TimeKind;
use gpubench_record::measurement::{
    Flag, Measurement, MemoryStats, NaiveLoop, RunMode, StopReason, Throughput,
};
use gpubench_record::record::RawRecord;

/// Statistics of one timer's per-iteration times, ns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimeSummary {
    /// Samples summarised, across every process (non-finite times, which a sound
    /// record never has, are left out).
    pub samples: usize,
    /// The typical time per iteration with its interval: over two or more processes,
    /// the interval the next run's figure falls in; over one, that process's own
    /// (see [`crate::processes`]).
    pub estimate: Estimate,
    /// What `estimate` rests on.
    pub basis: EstimateBasis,
    /// How the processes compare: each one's median, the spread between them, the
    /// noise within them, modes.
    pub processes: ProcessStats,
    /// Median of all samples pooled, ns.
    pub pooled_median: f64,
    /// Mean of all samples pooled, ns.
    pub mean: f64,
    /// Fastest sample, ns.
    pub min: f64,
    /// Slowest sample, ns.
    pub max: f64,
    /// Standard deviation of the pooled samples, ns.
    pub std_dev: f64,
    /// Median absolute deviation of the pooled samples, scaled to estimate the
    /// standard deviation, ns.
    pub mad: f64,
    /// Tukey outlier counts, each sample classified against its own process's fences
    /// (processes differ as a whole, which is not an outlier of any sample).
    pub outliers: OutlierCounts,
}

impl TimeSummary {
    /// Statistics of `groups`, one group of times per process, ns, whose interval is
    /// at least `floor` (relative) either side, what moves between runs beyond what
    /// one run's processes show ([`RawRecord::run_floor`]); `None` when no finite
    /// sample is left.
    pub fn from_groups(groups: &[Vec<f64>], floor: f64, cfg: BootstrapConfig) -> Option<Self> {
        let groups: Vec<Vec<f64>> = groups
            .iter()
            .map(|g| {
                g.iter()
                    .copied()
                    .filter(|x| x.is_finite())
                    .collect::<Vec<f64>>()
            })
            .filter(|g| !g.is_empty())
            .collect();
        let pooled: Vec<f64> = groups.concat();
        if pooled.is_empty() {
            return None;
        }
        let processes = ProcessStats::from_groups(&groups);
        let (estimate, basis) = match processes.estimate(&groups[0], cfg, floor) {
            Some(e) => e,
            // Every time is zero or negative: no process median to average.
            None => (
                crate::stats::median_estimate_with(&pooled, cfg),
                EstimateBasis::OneProcess,
            ),
        };
        let mut outliers = OutlierCounts::default();
        for g in &groups {
            let c = classify_outliers(g).counts;
            outliers.low_severe += c.low_severe;
            outliers.low_mild += c.low_mild;
            outliers.normal += c.normal;
            outliers.high_mild += c.high_mild;
            outliers.high_severe += c.high_severe;
        }
        Some(TimeSummary {
            samples: pooled.len(),
            estimate,
            basis,
            processes,
            pooled_median: median(&pooled),
            mean: mean(&pooled),
            min: pooled.iter().copied().fold(f64::INFINITY, f64::min),
            max: pooled.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            std_dev: std_dev(&pooled),
            mad: mad(&pooled),
            outliers,
        })
    }
}

/// Whether the benchmark ran to completion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BenchmarkStatus {
    /// It ran to completion.
    Passed,
    /// It failed; see [`BenchmarkOutcome::failure`].
    Failed,
}

/// A cold call next to the steady state, over the processes that made it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ColdCallSummary {
    /// What made it cold: `first call`, or the new shape.
    pub label: String,
    /// Synced wall time, ns: the median over processes.
    pub wall_ns: f64,
    /// When the call returned to the host, ns: the median over processes.
    pub host_ns: f64,
    /// Device time, ns, when measured: the median over processes.
    pub device_ns: Option<f64>,
    /// Each process's synced wall time of this call, in process order, ns.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub per_process_wall_ns: Vec<f64>,
    /// Wall time over the steady-state wall time per iteration (50: the cold call
    /// cost fifty warm ones); absent without a steady state.
    pub times_steady: Option<f64>,
}

/// The rate at the primary estimate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThroughputSummary {
    /// Work per iteration.
    pub per_iter: Throughput,
    /// Work per second at the primary estimate (FLOP/s, B/s or elem/s).
    pub rate_per_s: f64,
    /// The rate with its unit, e.g. `412.30 TFLOP/s`.
    pub rate: String,
}

/// Everything a report shows about one benchmark, in named parts. Its JSON is one flat
/// object (each part is flattened into it), the shape `--format json` and
/// `docs/schema/run-summary.schema.json` describe.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchmarkSummary {
    /// Which benchmark it is.
    #[serde(flatten)]
    pub identity: BenchmarkIdentity,
    /// Whether it ran to completion, over how many processes.
    #[serde(flatten)]
    pub outcome: BenchmarkOutcome,
    /// The device it ran on.
    #[serde(flatten)]
    pub device: BenchmarkDevice,
    /// Its time per iteration by each timer.
    #[serde(flatten)]
    pub timing: Timing,
    /// How its kernel time was taken, and the kernels of one call.
    #[serde(flatten)]
    pub kernels: KernelDetail,
    /// Exact counts per call.
    #[serde(flatten)]
    pub counters: CounterSummary,
    /// The eager-versus-compiled result, when the benchmark is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eager_compiled: Option<gpubench_record::eager_compiled::EagerCompiledSummary>,
    /// Cold calls, in the order a process makes them.
    pub cold: Vec<ColdCallSummary>,
    /// Rate at the primary estimate, when the benchmark declares its work.
    pub throughput: Option<ThroughputSummary>,
    /// Device memory at the peak and from call to call.
    #[serde(flatten)]
    pub memory: MemorySummary,
    /// How the samples were taken.
    #[serde(flatten)]
    pub sampling: Sampling,
    /// What the engine noticed (how a benchmark is bound: in most processes; the
    /// rest: in any), and whether it is unstable across processes.
    pub flags: Vec<Flag>,
    /// What the GPU and the host did while it ran.
    #[serde(flatten)]
    pub conditions: Conditions,
    /// Energy per call from the GPU's energy counter, when it was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy: Option<crate::energy::EnergySummary>,
    /// The rate as a share of the device's peak at the clock it ran, when the
    /// benchmark declares FLOPs or bytes and the device is in the peak table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak: Option<crate::peaks::PeakShare>,
}

/// Which benchmark a summary is of.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchmarkIdentity {
    /// The benchmark id, e.g. `matmul/4096`.
    pub id: String,
    /// Its name without the argument.
    pub name: String,
    /// The argument of a parameterised benchmark.
    pub arg: Option<String>,
}

/// Whether a benchmark ran to completion, and over how many processes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchmarkOutcome {
    /// Passed or failed.
    pub status: BenchmarkStatus,
    /// Why it failed.
    pub failure: Option<Failure>,
    /// The process that failed, when one did.
    #[serde(
        rename = "failed_round",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub failed_process: Option<u32>,
    /// Processes that ran the benchmark, failed ones included.
    #[serde(rename = "rounds")]
    pub processes: usize,
    /// Measured or smoke-tested.
    pub mode: RunMode,
}

/// The device a benchmark ran on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchmarkDevice {
    /// Device label, e.g. `cuda:0`.
    #[serde(rename = "device_label")]
    pub label: String,
    /// Device model, e.g. `NVIDIA H200`.
    #[serde(rename = "device_name")]
    pub name: String,
}

/// A benchmark's time per iteration by each timer, and the one comparisons use.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Timing {
    /// The timer comparisons use: device when measured, else wall.
    pub primary_kind: Option<TimeKind>,
    /// What its time rests on, as its processes found it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound: Option<Bound>,
    /// Synced wall time per iteration.
    pub wall: Option<TimeSummary>,
    /// Host-dispatch time per iteration.
    pub host: Option<TimeSummary>,
    /// Device time per iteration, when every sample has one.
    pub device: Option<TimeSummary>,
    /// Kernel time per call (the GPU's own work without host gaps), when measured in
    /// every process; judged like device-bound work.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<TimeSummary>,
}

/// How a benchmark's kernel time was taken (or why it was not), and what one call
/// ran on the GPU.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct KernelDetail {
    /// How kernel time was taken in the first process.
    #[serde(
        rename = "kernel_method",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub method: Option<KernelMethod>,
    /// Why the routine could not be captured in a CUDA graph, when it could not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_capturable: Option<String>,
    /// Why there is no kernel time, when there is none (`no kernel timing on cpu`).
    #[serde(
        rename = "kernel_unavailable",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub unavailable: Option<String>,
    /// The kernels, copies and memsets of one call, averaged over processes, most time
    /// first.
    #[serde(rename = "kernels", default, skip_serializing_if = "Vec::is_empty")]
    pub table: Vec<KernelStat>,
    /// `1 − kernel / device`: the share of device time not spent in the routine's own
    /// kernels (launch gaps, the GPU waiting on the host).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launch_overhead: Option<f64>,
}

/// A benchmark's exact counts per call.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CounterSummary {
    /// Exact counts per call, from the first process that counted.
    #[serde(rename = "counters", default, skip_serializing_if = "Option::is_none")]
    pub counts: Option<Counters>,
    /// Whether the processes counted differently (the routine does not do the same
    /// work every call).
    #[serde(rename = "counters_vary", default)]
    pub vary: bool,
}

/// A benchmark's device memory (CUDA only).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MemorySummary {
    /// Peak device memory: the process that peaked highest.
    #[serde(rename = "memory")]
    pub peak: Option<MemoryStats>,
    /// Memory the routine holds from call to call: `holds` flags one that keeps
    /// memory per call ([`crate::memory`]).
    #[serde(
        rename = "memory_growth",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub growth: Option<crate::memory::GrowthSummary>,
    /// The allocator's state at the peak of a traced stretch of calls
    /// (`--memory-peak-snapshot`): the process whose peak held most.
    #[serde(
        rename = "memory_peak",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub at_peak: Option<gpubench_record::memory_snapshot::PeakMemory>,
    /// Why no process has a snapshot at the peak ([`MemorySummary::at_peak`]) though
    /// it was asked for.
    #[serde(
        rename = "memory_peak_unavailable",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub at_peak_unavailable: Option<String>,
}

/// How a benchmark's samples were taken.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Sampling {
    /// Iterations across all samples of all processes.
    pub total_iters: u64,
    /// Median cost of an empty sync, ns (median over processes).
    pub sync_cost_ns: Option<f64>,
    /// What unsynchronised loops would have reported (the first process's).
    pub naive: Vec<NaiveLoop>,
    /// Why sampling stopped in the first process.
    pub stop_reason: Option<StopReason>,
}

/// What the GPU and the host did while a benchmark ran.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Conditions {
    /// Samples left out of the figures because the GPU throttled, over every process.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub throttled_samples: usize,
    /// The mean SM clock over the samples kept, MHz, when the GPU was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sm_clock_mhz: Option<f64>,
    /// The hottest the GPU got in any process, °C, when it was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_temperature_c: Option<u32>,
    /// Ids of the other processes that used the GPU while this benchmark ran.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub other_processes: Vec<u32>,
    /// Why the GPU was not read, when it was not (`no NVIDIA driver/NVML`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub telemetry_unavailable: Option<String>,
    /// Whether the board's power limit held the clock down while it ran, when the
    /// GPU was read after the samples.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_capped: Option<PowerCapped>,
    /// The clock the kernel timer's replays ran at, where they were paced and read
    /// (`--flush-l2` with GPU telemetry).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_clock: Option<KernelClock>,
    /// Why there is no energy per call, when there is none (the first process's
    /// reason: `no GPU telemetry`, a counter NVML does not have, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy_unavailable: Option<String>,
    /// What the host's CPUs did (other work's runnable threads, whether the host
    /// could serve the benchmark's threads) and libtorch's intra-op threads, when the
    /// host was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_cpus: Option<crate::host::HostSummary>,
}

/// How much of a benchmark's sampling ran at the board's power limit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PowerCapped {
    /// The share of samples read with the power cap among the slowdown reasons
    /// (0.97: 97% of the samples ran power-capped), over every process.
    pub share: f64,
    /// The samples read, over every process.
    pub samples: usize,
    /// The power limit the driver enforced, W (read once per process), when read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_limit_w: Option<f64>,
}

impl PowerCapped {
    /// The share of `record`'s samples that ran power-capped; `None` when no sample
    /// has a clock reading (no telemetry).
    pub fn of(record: &RawRecord) -> Option<Self> {
        let clocks: Vec<_> = record
            .measurements()
            .flat_map(|m| &m.samples)
            .filter_map(|s| s.clock)
            .collect();
        if clocks.is_empty() {
            return None;
        }
        let capped = clocks.iter().filter(|c| c.power_capped).count();
        Some(PowerCapped {
            share: capped as f64 / clocks.len() as f64,
            samples: clocks.len(),
            power_limit_w: record
                .fingerprint
                .gpu
                .as_ref()
                .and_then(|g| g.power_limit_w),
        })
    }
}

/// The clock the kernel timer's paced replays ran at (`--flush-l2`), over every
/// process: beside the samples' `sm_clock_mhz` and `power_capped`, whether kernel
/// and device time ran in one clock regime.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelClock {
    /// Clock reads, one after each replay, over every process.
    pub reads: u32,
    /// The mean SM clock over the reads, MHz.
    pub sm_clock_mhz: f64,
    /// The share of the reads with the power cap among the slowdown reasons.
    pub power_capped_share: f64,
}

impl KernelClock {
    /// The replays' clock of `record`'s processes; `None` when no process read it.
    pub fn of(record: &RawRecord) -> Option<Self> {
        let clocks: Vec<_> = record
            .measurements()
            .filter_map(|m| m.kernel.as_ref()?.clock)
            .filter(|c| c.reads > 0)
            .collect();
        let reads: u32 = clocks.iter().map(|c| c.reads).sum();
        if reads == 0 {
            return None;
        }
        let weighted = |f: &dyn Fn(&gpubench_record::kernels::ReplayClock) -> f64| {
            clocks
                .iter()
                .map(|c| f(c) * f64::from(c.reads))
                .sum::<f64>()
                / f64::from(reads)
        };
        Some(KernelClock {
            reads,
            sm_clock_mhz: weighted(&|c| c.sm_mhz_mean),
            power_capped_share: weighted(&|c| c.power_capped_share()),
        })
    }

    /// Whether the replays ran at a clearly different clock than the samples, whose
    /// mean SM clock is `samples_mhz`
    /// ([`gpubench_record::telemetry::clearly_different_clocks`]).
    pub fn differs_from(&self, samples_mhz: f64) -> bool {
        gpubench_record::telemetry::clearly_different_clocks(self.sm_clock_mhz, samples_mhz)
    }
}

/// The mean memory clock read at the start and end of `record`'s processes, MHz.
fn mean_memory_clock_mhz(record: &RawRecord) -> Option<f64> {
    let clocks: Vec<f64> = record
        .processes
        .iter()
        .filter_map(|r| r.telemetry.as_ref())
        .flat_map(|t| [&t.start, &t.end])
        .filter_map(|r| r.memory_clock_mhz)
        .map(f64::from)
        .collect();
    (!clocks.is_empty()).then(|| clocks.iter().sum::<f64>() / clocks.len() as f64)
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// The measurements of a record's processes that made one, in process order.
type Measurements<'a> = [&'a Measurement];

impl BenchmarkSummary {
    /// The summary with the default bootstrap (reproducible: fixed seed).
    pub fn from_record(record: &RawRecord) -> Self {
        Self::from_record_with(record, BootstrapConfig::default())
    }

    /// The summary with intervals from `cfg`.
    pub fn from_record_with(record: &RawRecord, cfg: BootstrapConfig) -> Self {
        let measurements: Vec<&Measurement> = record.measurements().collect();
        let timing = Timing::of(record, &measurements, cfg);
        let kernels = KernelDetail::of(record, &measurements, &timing);
        let first = measurements.first();
        let primary = timing.primary().map(|p| p.estimate.point);
        let steady_wall = timing.wall.as_ref().map(|w| w.estimate.point);
        let conditions = Conditions::of(record);
        let flags = summary_flags(record, &measurements, &timing, &conditions);
        let peak = first.and_then(|f| {
            crate::peaks::PeakShare::of_id(
                &record.fingerprint.device.name,
                f.throughput?,
                primary?,
                &record.id,
                conditions.sm_clock_mhz,
                mean_memory_clock_mhz(record),
            )
        });
        BenchmarkSummary {
            identity: BenchmarkIdentity {
                id: record.id.clone(),
                name: record.name.clone(),
                arg: record.arg.clone(),
            },
            outcome: BenchmarkOutcome::of(record),
            device: BenchmarkDevice {
                label: record.fingerprint.device.label(),
                name: record.fingerprint.device.name.clone(),
            },
            kernels,
            counters: CounterSummary::of(&measurements),
            eager_compiled: record.eager_compiled().map(|c| c.summary()),
            cold: first.map_or_else(Vec::new, |f| cold_calls(f, &measurements, steady_wall)),
            throughput: first.and_then(|f| ThroughputSummary::of(f.throughput?, primary?)),
            memory: MemorySummary::of(&measurements),
            sampling: Sampling::of(&measurements),
            flags,
            conditions,
            timing,
            energy: crate::energy::EnergySummary::of(measurements.iter().copied()),
            peak,
        }
    }

    /// The statistics of timer `kind`.
    pub fn time(&self, kind: TimeKind) -> Option<&TimeSummary> {
        self.timing.time(kind)
    }

    /// The statistics of the primary timer (device when measured, else wall).
    pub fn primary(&self) -> Option<&TimeSummary> {
        self.timing.primary()
    }

    /// Processes with a measurement.
    pub fn processes(&self) -> usize {
        self.primary().map_or(0, |p| p.processes.count)
    }
}

impl BenchmarkOutcome {
    fn of(record: &RawRecord) -> Self {
        BenchmarkOutcome {
            status: if record.passed() {
                BenchmarkStatus::Passed
            } else {
                BenchmarkStatus::Failed
            },
            failure: record.failure().cloned(),
            failed_process: record.failed_process().map(|r| r.process),
            processes: record.processes.len(),
            mode: record.config.mode,
        }
    }
}

impl Timing {
    /// The timers of `record`'s processes; all absent when none measured.
    fn of(record: &RawRecord, measurements: &Measurements, cfg: BootstrapConfig) -> Self {
        if measurements.is_empty() {
            return Timing::default();
        }
        let floor = record.run_floor();
        let time =
            |kind: TimeKind, floor: f64| TimeSummary::from_groups(&record.groups(kind), floor, cfg);
        let mut t = Timing {
            primary_kind: None,
            bound: Some(record.bound()),
            wall: time(TimeKind::Wall, floor),
            host: time(TimeKind::Host, floor),
            device: record
                .device_timed()
                .then(|| time(TimeKind::Device, floor))
                .flatten(),
            kernel: measurements
                .iter()
                .all(|m| m.kernel.is_some())
                .then(|| time(TimeKind::Kernel, Bound::Device.run_floor()))
                .flatten(),
        };
        let kind = record.primary_kind();
        t.primary_kind = t.time(kind).map(|_| kind);
        t
    }

    /// The statistics of timer `kind`.
    pub fn time(&self, kind: TimeKind) -> Option<&TimeSummary> {
        match kind {
            TimeKind::Wall => self.wall.as_ref(),
            TimeKind::Host => self.host.as_ref(),
            TimeKind::Device => self.device.as_ref(),
            TimeKind::Kernel => self.kernel.as_ref(),
        }
    }

    /// The statistics of the primary timer (device when measured, else wall).
    pub fn primary(&self) -> Option<&TimeSummary> {
        self.primary_kind.and_then(|k| self.time(k))
    }
}

impl KernelDetail {
    fn of(record: &RawRecord, measurements: &Measurements, timing: &Timing) -> Self {
        let Some(first) = measurements.first() else {
            return KernelDetail::default();
        };
        let first_kernel = measurements.iter().find_map(|m| m.kernel.as_ref());
        KernelDetail {
            method: first_kernel.map(|k| k.method),
            not_capturable: first_kernel.and_then(|k| k.not_capturable.clone()),
            unavailable: first.kernel_unavailable.clone(),
            table: record.kernel_table(),
            launch_overhead: match (&timing.kernel, &timing.device) {
                (Some(k), Some(d)) if d.estimate.point > 0.0 => {
                    Some((1.0 - k.estimate.point / d.estimate.point).max(0.0))
                }
                _ => None,
            },
        }
    }
}

impl CounterSummary {
    fn of(measurements: &Measurements) -> Self {
        let counted: Vec<Counters> = measurements
            .iter()
            .filter_map(|m| m.kernel.as_ref()?.counters)
            .collect();
        let Some(first) = counted.first() else {
            return CounterSummary::default();
        };
        CounterSummary {
            counts: Some(*first),
            vary: counted.iter().any(|o| {
                gpubench_record::kernels::Counter::ALL
                    .iter()
                    .any(|&c| o.per_call(c) != first.per_call(c))
            }),
        }
    }
}

/// The cold calls of `first`, each over the processes that made the same call.
fn cold_calls(
    first: &Measurement,
    measurements: &Measurements,
    steady_wall: Option<f64>,
) -> Vec<ColdCallSummary> {
    first
        .cold
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let same: Vec<_> = measurements
                .iter()
                .filter_map(|m| m.cold.get(i).filter(|x| x.label == c.label))
                .collect();
            let walls: Vec<f64> = same.iter().map(|x| x.wall_ns).collect();
            let wall = median(&walls);
            let devices: Vec<f64> = same.iter().filter_map(|x| x.device_ns).collect();
            ColdCallSummary {
                label: c.label.clone(),
                wall_ns: wall,
                host_ns: median(&same.iter().map(|x| x.host_ns).collect::<Vec<_>>()),
                device_ns: (devices.len() == same.len()).then(|| median(&devices)),
                per_process_wall_ns: if walls.len() > 1 { walls } else { Vec::new() },
                times_steady: steady_wall
                    .filter(|w| *w > 0.0)
                    .map(|w| wall / w)
                    .filter(|r| r.is_finite()),
            }
        })
        .collect()
}

impl ThroughputSummary {
    /// The rate of `per_iter` at `ns` per iteration, when it is a finite one.
    fn of(per_iter: Throughput, ns: f64) -> Option<Self> {
        (ns > 0.0 && per_iter.rate(ns).is_finite()).then(|| ThroughputSummary {
            per_iter,
            rate_per_s: per_iter.rate(ns),
            rate: per_iter.format_rate(ns),
        })
    }
}

impl MemorySummary {
    fn of(measurements: &Measurements) -> Self {
        let at_peak = measurements
            .iter()
            .filter_map(|m| m.memory_peak.as_ref())
            .max_by_key(|p| p.snapshot.allocated_bytes)
            .cloned();
        let at_peak_unavailable = if at_peak.is_none() {
            measurements
                .iter()
                .find_map(|m| m.memory_peak_unavailable.clone())
        } else {
            None
        };
        MemorySummary {
            peak: measurements
                .iter()
                .filter_map(|m| m.memory)
                .max_by_key(|m| m.peak_allocated_bytes),
            growth: crate::memory::GrowthSummary::of(measurements),
            at_peak,
            at_peak_unavailable,
        }
    }
}

impl Sampling {
    fn of(measurements: &Measurements) -> Self {
        let Some(first) = measurements.first() else {
            return Sampling::default();
        };
        Sampling {
            total_iters: measurements
                .iter()
                .flat_map(|m| &m.samples)
                .map(|x| x.iters)
                .sum(),
            sync_cost_ns: Some(median(
                &measurements
                    .iter()
                    .map(|m| m.sync_cost_ns)
                    .collect::<Vec<_>>(),
            )),
            naive: first.naive.clone(),
            stop_reason: Some(first.stop_reason),
        }
    }
}

impl Conditions {
    fn of(record: &RawRecord) -> Self {
        let mut c = Conditions {
            throttled_samples: record.throttled_samples(),
            sm_clock_mhz: record.mean_sm_clock_mhz(),
            max_temperature_c: None,
            other_processes: Vec::new(),
            telemetry_unavailable: record.telemetry_unavailable().map(str::to_string),
            power_capped: PowerCapped::of(record),
            kernel_clock: KernelClock::of(record),
            energy_unavailable: record
                .measurements()
                .next()
                .and_then(|m| m.energy_unavailable.clone()),
            host_cpus: crate::host::HostSummary::of(
                record.processes.iter().filter_map(|r| r.host.as_ref()),
            ),
        };
        for t in record.processes.iter().filter_map(|r| r.telemetry.as_ref()) {
            c.max_temperature_c = c.max_temperature_c.max(t.max_temperature_c);
            for p in &t.other_processes {
                if !c.other_processes.contains(&p.pid) {
                    c.other_processes.push(p.pid);
                }
            }
        }
        c
    }
}

/// The flags of the processes ([`merged_flags`]), with those of the whole: unstable
/// across processes, throttled, contended.
fn summary_flags(
    record: &RawRecord,
    measurements: &Measurements,
    timing: &Timing,
    conditions: &Conditions,
) -> Vec<Flag> {
    if measurements.is_empty() {
        return Vec::new();
    }
    let mut flags = merged_flags(measurements);
    if timing.primary().is_some_and(|p| p.processes.unstable) {
        flags.push(Flag::UnstableAcrossProcesses);
    }
    if conditions.throttled_samples > 0 && !flags.contains(&Flag::Throttled) {
        flags.push(Flag::Throttled);
    }
    if record.contended() && !flags.contains(&Flag::Contended) {
        flags.push(Flag::Contended);
    }
    flags
}

/// The flags of several processes: how the benchmark is bound when most processes
/// agree, the others when any process raised them; in the engine's order.
fn merged_flags(measurements: &Measurements) -> Vec<Flag> {
    let n = measurements.len();
    let count = |f: Flag| measurements.iter().filter(|m| m.flags.contains(&f)).count();
    let mut out = Vec::new();
    for f in [
        Flag::DeviceBound,
        Flag::LaunchBound,
        Flag::SyncsInsideRoutine,
        Flag::Unstable,
        Flag::Throttled,
        Flag::Contended,
    ] {
        let c = count(f);
        let keep = match f {
            Flag::DeviceBound | Flag::LaunchBound => 2 * c > n,
            _ => c > 0,
        };
        if keep {
            out.push(f);
        }
    }
    out
}

#[cfg(test)]
mod tests;
