//! A benchmark's figures from its raw record: per-iteration estimates with intervals
//! over processes, the spread between and noise within processes, outliers, cold calls
//! per process, throughput, memory and status. What the terminal table, `--format
//! json` and the HTML report present.

use serde::{Deserialize, Serialize};

use crate::failure::Failure;
use crate::kernels::{Counters, KernelMeasurement, KernelMethod, KernelStat};
pub use crate::measurement::TimeKind;
use crate::measurement::{Flag, MemoryStats, NaiveLoop, RunMode, StopReason, Throughput};
use crate::processes::{Bound, EstimateBasis, ProcessStats};
use crate::record::RawRecord;
use crate::stats::{
    classify_outliers, mad, mean, median, std_dev, BootstrapConfig, Estimate, OutlierCounts,
};

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
    /// It failed; see [`BenchmarkSummary::failure`].
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
    /// Each process's synced wall time of this call, in round order, ns.
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

/// Everything a report shows about one benchmark.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchmarkSummary {
    /// The benchmark id, e.g. `matmul/4096`.
    pub id: String,
    /// Its name without the argument.
    pub name: String,
    /// The argument of a parameterised benchmark.
    pub arg: Option<String>,
    /// Passed or failed.
    pub status: BenchmarkStatus,
    /// Why it failed.
    pub failure: Option<Failure>,
    /// The round (process) that failed, when one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_round: Option<u32>,
    /// Processes that ran the benchmark, failed ones included.
    pub rounds: usize,
    /// Measured or smoke-tested.
    pub mode: RunMode,
    /// Device label, e.g. `cuda:0`.
    pub device_label: String,
    /// Device model, e.g. `NVIDIA H200`.
    pub device_name: String,
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
    /// How kernel time was taken in the first process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_method: Option<KernelMethod>,
    /// Why the routine could not be captured in a CUDA graph, when it could not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_capturable: Option<String>,
    /// Why there is no kernel time, when there is none (`no kernel timing on cpu`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_unavailable: Option<String>,
    /// The kernels, copies and memsets of one call, averaged over processes, most time
    /// first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kernels: Vec<KernelStat>,
    /// Exact counts per call, from the first process that counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counters: Option<Counters>,
    /// Whether the processes counted differently (the routine does not do the same
    /// work every call).
    #[serde(default)]
    pub counters_vary: bool,
    /// The eager-versus-compiled result, when the benchmark is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eager_compiled: Option<crate::eager_compiled::EagerCompiledSummary>,
    /// `1 − kernel / device`: the share of device time not spent in the routine's own
    /// kernels (launch gaps, the GPU waiting on the host).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launch_overhead: Option<f64>,
    /// Iterations across all samples of all processes.
    pub total_iters: u64,
    /// Cold calls, in the order a process makes them.
    pub cold: Vec<ColdCallSummary>,
    /// Rate at the primary estimate, when the benchmark declares its work.
    pub throughput: Option<ThroughputSummary>,
    /// Peak device memory (CUDA only): the process that peaked highest.
    pub memory: Option<MemoryStats>,
    /// Median cost of an empty sync, ns (median over processes).
    pub sync_cost_ns: Option<f64>,
    /// What unsynchronised loops would have reported (the first process's).
    pub naive: Vec<NaiveLoop>,
    /// Why sampling stopped in the first process.
    pub stop_reason: Option<StopReason>,
    /// What the engine noticed (how a benchmark is bound: in most processes; the
    /// rest: in any), and whether it is unstable across processes.
    pub flags: Vec<Flag>,
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
    /// What the host's CPUs did (other work's runnable threads, whether the host
    /// could serve the benchmark's threads) and libtorch's intra-op threads, when the
    /// host was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_cpus: Option<crate::host::HostSummary>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl BenchmarkSummary {
    /// The summary with the default bootstrap (reproducible: fixed seed).
    pub fn from_record(record: &RawRecord) -> Self {
        Self::from_record_with(record, BootstrapConfig::default())
    }

    /// The summary with intervals from `cfg`.
    pub fn from_record_with(record: &RawRecord, cfg: BootstrapConfig) -> Self {
        let mut s = BenchmarkSummary {
            id: record.id.clone(),
            name: record.name.clone(),
            arg: record.arg.clone(),
            status: if record.passed() {
                BenchmarkStatus::Passed
            } else {
                BenchmarkStatus::Failed
            },
            failure: record.failure().cloned(),
            failed_round: record.failed_round().map(|r| r.round),
            rounds: record.rounds.len(),
            mode: record.config.mode,
            device_label: record.fingerprint.device.label(),
            device_name: record.fingerprint.device.name.clone(),
            primary_kind: None,
            bound: None,
            wall: None,
            host: None,
            device: None,
            kernel: None,
            kernel_method: None,
            not_capturable: None,
            kernel_unavailable: None,
            kernels: Vec::new(),
            counters: None,
            counters_vary: false,
            launch_overhead: None,
            eager_compiled: record.eager_compiled().map(|c| c.summary()),
            total_iters: 0,
            cold: Vec::new(),
            throughput: None,
            memory: None,
            sync_cost_ns: None,
            naive: Vec::new(),
            stop_reason: None,
            flags: Vec::new(),
            throttled_samples: 0,
            sm_clock_mhz: None,
            max_temperature_c: None,
            other_processes: Vec::new(),
            telemetry_unavailable: record.telemetry_unavailable().map(str::to_string),
            host_cpus: crate::host::HostSummary::of(
                record.rounds.iter().filter_map(|r| r.host.as_ref()),
            ),
        };
        for t in record.rounds.iter().filter_map(|r| r.telemetry.as_ref()) {
            s.max_temperature_c = s.max_temperature_c.max(t.max_temperature_c);
            for p in &t.other_processes {
                if !s.other_processes.contains(&p.pid) {
                    s.other_processes.push(p.pid);
                }
            }
        }
        let measurements: Vec<_> = record.measurements().collect();
        let Some(first) = measurements.first() else {
            return s;
        };
        let bound = record.bound();
        s.bound = Some(bound);
        let floor = record.run_floor();
        s.wall = TimeSummary::from_groups(&record.groups(TimeKind::Wall), floor, cfg);
        s.host = TimeSummary::from_groups(&record.groups(TimeKind::Host), floor, cfg);
        if record.device_timed() {
            s.device = TimeSummary::from_groups(&record.groups(TimeKind::Device), floor, cfg);
        }
        let kind = record.primary_kind();
        s.primary_kind = s.time(kind).map(|_| kind);
        let kernel_runs: Vec<&KernelMeasurement> = measurements
            .iter()
            .filter_map(|m| m.kernel.as_ref())
            .collect();
        if kernel_runs.len() == measurements.len() {
            s.kernel = TimeSummary::from_groups(
                &record.groups(TimeKind::Kernel),
                Bound::Device.run_floor(),
                cfg,
            );
        }
        if let Some(k) = kernel_runs.first() {
            s.kernel_method = Some(k.method);
            s.not_capturable = k.not_capturable.clone();
        }
        let counted: Vec<Counters> = kernel_runs.iter().filter_map(|k| k.counters).collect();
        if let Some(first_counts) = counted.first() {
            s.counters = Some(*first_counts);
            s.counters_vary = counted.iter().any(|o| {
                crate::kernels::Counter::ALL
                    .iter()
                    .any(|&c| o.per_call(c) != first_counts.per_call(c))
            });
        }
        s.kernels = record.kernel_table();
        s.kernel_unavailable = first.kernel_unavailable.clone();
        s.launch_overhead = match (&s.kernel, &s.device) {
            (Some(k), Some(d)) if d.estimate.point > 0.0 => {
                Some((1.0 - k.estimate.point / d.estimate.point).max(0.0))
            }
            _ => None,
        };
        s.total_iters = measurements
            .iter()
            .flat_map(|m| &m.samples)
            .map(|x| x.iters)
            .sum();
        let steady_wall = s.wall.as_ref().map(|w| w.estimate.point);
        s.cold = first
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
            .collect();
        let primary = s.primary().map(|p| p.estimate.point);
        s.throughput = match (first.throughput, primary) {
            (Some(t), Some(ns)) if ns > 0.0 && t.rate(ns).is_finite() => Some(ThroughputSummary {
                per_iter: t,
                rate_per_s: t.rate(ns),
                rate: t.format_rate(ns),
            }),
            _ => None,
        };
        s.memory = measurements
            .iter()
            .filter_map(|m| m.memory)
            .max_by_key(|m| m.peak_allocated_bytes);
        s.sync_cost_ns = Some(median(
            &measurements
                .iter()
                .map(|m| m.sync_cost_ns)
                .collect::<Vec<_>>(),
        ));
        s.naive = first.naive.clone();
        s.stop_reason = Some(first.stop_reason);
        s.flags = merged_flags(&measurements);
        if s.primary().is_some_and(|p| p.processes.unstable) {
            s.flags.push(Flag::UnstableAcrossProcesses);
        }
        s.throttled_samples = record.throttled_samples();
        s.sm_clock_mhz = record.mean_sm_clock_mhz();
        if s.throttled_samples > 0 && !s.flags.contains(&Flag::Throttled) {
            s.flags.push(Flag::Throttled);
        }
        if record.contended() && !s.flags.contains(&Flag::Contended) {
            s.flags.push(Flag::Contended);
        }
        s
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

    /// Processes with a measurement.
    pub fn processes(&self) -> usize {
        self.primary().map_or(0, |p| p.processes.count)
    }
}

/// The flags of several processes: how the benchmark is bound when most processes
/// agree, the others when any process raised them; in the engine's order.
fn merged_flags(measurements: &[&crate::measurement::Measurement]) -> Vec<Flag> {
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
