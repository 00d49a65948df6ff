//! What one process measured and how: the measurement settings, the samples and
//! cold calls, the naive loops, memory, flags and the stopping reason, as a record's
//! process holds them.

use serde::{Deserialize, Serialize};

use crate::cache::L2State;
use crate::kernels::KernelMeasurement;

pub mod settings;
pub use settings::{InvalidSetting, MeasurementOption, MeasurementSettings};

/// The options a measurement ran with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MeasurementConfig {
    /// `bench` (measured) or `smoke` (each benchmark run once).
    pub mode: RunMode,
    /// Warm-up time bound, seconds.
    pub warmup_time_s: f64,
    /// Measurement time bound, seconds.
    pub measurement_time_s: f64,
    /// Target duration of one sample, seconds.
    pub sample_target_s: f64,
    /// Fewest samples taken.
    pub min_samples: u32,
    /// Most samples taken.
    pub max_samples: u32,
    /// Adaptive stop: relative half-width of the median's confidence interval.
    pub target_rel_ci: f64,
    /// Whether L2 was flushed before every timed call.
    #[serde(default)]
    pub flush_l2: bool,
    /// How many processes measured the benchmark (one for records from before
    /// processes, and for a bench executable run on its own).
    #[serde(default = "ProcessPolicy::single")]
    pub processes: ProcessPolicy,
    /// A sample whose SM clock fell below this fraction of the GPU's default clock is
    /// throttled and left out (`--throttle-threshold`; nvbench's 0.75 by default; 0:
    /// only hardware, thermal and power-brake slowdowns count).
    #[serde(default = "default_throttle_threshold")]
    pub throttle_threshold: f64,
    /// libtorch's intra-op threads on the CPU device (the routine's work runs on them,
    /// so their number moves its figures); absent on a GPU and in older records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_threads: Option<u32>,
}

/// nvbench's throttle threshold, for records from before the setting.
fn default_throttle_threshold() -> f64 {
    crate::telemetry::THROTTLE_CLOCK_FRACTION
}

impl MeasurementConfig {
    /// Defaults suited to GPUs: warm up for at most 1 s, measure for at most 5 s,
    /// samples of about 10 ms (an empty CUDA sync costs ~10 µs, so under 0.2%), at
    /// least 10 and at most 200 samples, stop once the median's 95% interval is
    /// within ±1%; one process (`cargo gpubench` sets its own process policy).
    pub fn standard() -> Self {
        MeasurementConfig {
            mode: RunMode::Bench,
            warmup_time_s: 1.0,
            measurement_time_s: 5.0,
            sample_target_s: 0.01,
            min_samples: 10,
            max_samples: 200,
            target_rel_ci: 0.01,
            flush_l2: false,
            processes: ProcessPolicy::single(),
            throttle_threshold: crate::telemetry::THROTTLE_CLOCK_FRACTION,
            cpu_threads: None,
        }
    }

    /// `--quick`: shorter bounds (0.2 s warm-up, 1 s measurement, 5 samples minimum)
    /// and a looser ±2% target.
    pub fn quick() -> Self {
        MeasurementConfig {
            warmup_time_s: 0.2,
            measurement_time_s: 1.0,
            sample_target_s: 0.005,
            min_samples: 5,
            max_samples: 100,
            target_rel_ci: 0.02,
            ..Self::standard()
        }
    }
}

impl MeasurementConfig {
    /// The settings in which `self` (this run) and `baseline` differ that move the
    /// figures themselves, in words: the sample time (samples of a few calls pay a
    /// sync, a first call or cache misses that longer ones amortise), the warm-up
    /// (clocks, caches), `--flush-l2`, and on the CPU device the intra-op threads
    /// (the routine's work is split over them). The measurement time, sample counts,
    /// stopping target and processes change only how sure a figure is.
    pub fn differences_that_move_figures(&self, baseline: &Self) -> Vec<String> {
        let differs = |a: f64, b: f64| (a - b).abs() > 1e-9 * a.abs().max(b.abs()).max(1e-12);
        let seconds = |s: f64| crate::units::format_ns(s * 1e9);
        let mut out = Vec::new();
        if differs(self.sample_target_s, baseline.sample_target_s) {
            out.push(format!(
                "samples of {} here, {} in the baseline",
                seconds(self.sample_target_s),
                seconds(baseline.sample_target_s)
            ));
        }
        if differs(self.warmup_time_s, baseline.warmup_time_s) {
            out.push(format!(
                "a warm-up of {} here, {} in the baseline",
                seconds(self.warmup_time_s),
                seconds(baseline.warmup_time_s)
            ));
        }
        if differs(self.throttle_threshold, baseline.throttle_threshold) {
            out.push(format!(
                "--throttle-threshold {} here, {} in the baseline",
                self.throttle_threshold, baseline.throttle_threshold
            ));
        }
        if let (Some(now), Some(was)) = (self.cpu_threads, baseline.cpu_threads) {
            if now != was {
                let threads =
                    |n: u32| format!("{n} intra-op thread{}", if n == 1 { "" } else { "s" });
                out.push(format!(
                    "{} here, {} in the baseline, which GPUBENCH_CPU_THREADS={was} matches",
                    threads(now),
                    threads(was)
                ));
            }
        }
        if self.flush_l2 != baseline.flush_l2 {
            let on = |f: bool| if f { "on" } else { "off" };
            out.push(format!(
                "--flush-l2 {} here, {} in the baseline",
                on(self.flush_l2),
                on(baseline.flush_l2)
            ));
        }
        out
    }
}

impl Default for MeasurementConfig {
    fn default() -> Self {
        Self::standard()
    }
}

/// How many processes measure each benchmark. `cargo gpubench` sets it and records it
/// in the [`MeasurementConfig`]; a bench executable run on its own is one
/// process.
///
/// After each process the statistics (`gpubench-analysis`'s `DecideProcesses`) say whether a benchmark needs another
/// process: always until `min`; then, for a device-bound benchmark, while the
/// interval is wider than `target_rel_ci`, up to `max` and the time budget (work on
/// the CPU device too). A
/// benchmark whose time rests on the host's dispatch speed on a GPU stops at `min`:
/// its spread comes from the host and drifts from run to run, which more processes of
/// one run cannot pin down, and stopping once its interval looks narrow would pick
/// exactly the runs whose processes landed in one mode by chance.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ProcessPolicy {
    /// Fewest processes per benchmark.
    pub min: u32,
    /// Most processes per benchmark; equal to `min` when the number is fixed.
    pub max: u32,
    /// Between `min` and `max`, another process runs while the interval's relative
    /// half-width is wider than this.
    pub target_rel_ci: f64,
}

impl ProcessPolicy {
    /// The default: 3 processes, and for device-bound benchmarks more (up to 6) while
    /// the interval is wider than ±3% and the time budget allows.
    /// `benches/calibration.rs` shows why: with the spread measured on an H200 this
    /// catches a 5% slowdown of device-bound work in over 95% of comparisons, in
    /// about 3.7 processes.
    pub fn standard() -> Self {
        ProcessPolicy {
            min: 3,
            max: 6,
            target_rel_ci: 0.03,
        }
    }

    /// The default of `cargo gpubench ab`: 5 processes, and more (up to 10) while the
    /// paired change's interval is wider than ±1%. Each process gives one paired
    /// ratio, and `benches/calibration.rs` shows why 3 are too few and 8 not enough:
    /// with the spread of those ratios that `ab` measured on an H200 (1.5% for an add
    /// of 1M floats), 3..6 at ±3% calls identical code "no change" in 41% of
    /// comparisons and catches a 5% host-side cost in 70%; 5..8 at ±1% catches it in
    /// 94.7%, 5..10 at ±1% in 97.8% (no change 95.4%), in 7.6 processes. Device-bound
    /// work (a spread of 0.3%) stops at 5.
    pub fn paired() -> Self {
        ProcessPolicy {
            min: 5,
            max: 10,
            target_rel_ci: 0.01,
        }
    }

    /// One process.
    pub fn single() -> Self {
        Self::fixed(1)
    }

    /// Exactly `n` processes.
    pub fn fixed(n: u32) -> Self {
        ProcessPolicy {
            min: n,
            max: n,
            target_rel_ci: 0.0,
        }
    }

    /// Whether the number of processes is fixed.
    pub fn is_fixed(&self) -> bool {
        self.min == self.max
    }
}

impl Default for ProcessPolicy {
    fn default() -> Self {
        Self::single()
    }
}

/// Whether a benchmark was measured or smoke-tested.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunMode {
    /// Full measurement (`--bench`).
    Bench,
    /// One call, to check it runs (`cargo test --benches`).
    Smoke,
}

/// One call timed on its own: the first ever, or the first at a new shape/argument.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ColdCall {
    /// What made it cold: `first call`, or the new shape.
    pub label: String,
    /// Synced wall time, ns.
    pub wall_ns: f64,
    /// When the call returned to the host, ns after the start.
    pub host_ns: f64,
    /// Device time from events, ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_ns: Option<f64>,
}

/// A point of the warm-up trace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WarmupPoint {
    /// Iterations in this batch.
    pub iters: u64,
    /// Synced wall time of the batch, ns.
    pub wall_ns: f64,
}

/// One steady-state sample: `sync; t0; k calls; sync; t1`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// k, the iterations in this sample.
    pub iters: u64,
    /// Synced wall time `t1 - t0`, ns.
    pub wall_ns: f64,
    /// When the k-th call returned to the host, ns after `t0`.
    pub host_ns: f64,
    /// Device time between events recorded around the k calls, ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_ns: Option<f64>,
    /// The GPU's clock read right after the sample; absent without telemetry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock: Option<SampleClock>,
}

/// The SM clock, temperature and power draw read right after a sample, and whether
/// the sample was throttled by [`crate::telemetry::is_throttled`]'s rule.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SampleClock {
    /// SM clock, MHz.
    pub sm_mhz: u32,
    /// GPU temperature, °C.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature_c: Option<u32>,
    /// Throttled: left out of the statistics.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub throttled: bool,
    /// The board's power limit held the clock down (NVML's software power cap was
    /// among the slowdown reasons): the sample ran power-capped.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub power_capped: bool,
    /// The board's power draw, W, when it was read (absent on older records).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_w: Option<f64>,
}

impl Sample {
    /// Whether the sample ran throttled (and is left out of the statistics).
    pub fn throttled(&self) -> bool {
        self.clock.is_some_and(|c| c.throttled)
    }

    /// Synced wall time per iteration, ns.
    pub fn per_iter_wall(&self) -> f64 {
        self.wall_ns / self.iters as f64
    }
    /// Host-dispatch time per iteration, ns.
    pub fn per_iter_host(&self) -> f64 {
        self.host_ns / self.iters as f64
    }
    /// Device time per iteration, ns.
    pub fn per_iter_device(&self) -> Option<f64> {
        self.device_ns.map(|d| d / self.iters as f64)
    }
    /// Device time per iteration when measured, else synced wall time, ns.
    pub fn per_iter_primary(&self) -> f64 {
        self.per_iter_device()
            .unwrap_or_else(|| self.per_iter_wall())
    }
}

/// What an unsynchronised timing loop reports, next to the truth.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NaiveLoop {
    /// Iterations in the loop.
    pub iters: u64,
    /// Host time of the loop without a final sync, per iteration, ns.
    pub naive_ns_per_iter: f64,
    /// The same loop with the final sync, per iteration, ns.
    pub synced_ns_per_iter: f64,
}

/// Work done per iteration, for rates.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "unit", content = "per_iter")]
pub enum Throughput {
    /// Floating-point operations per iteration.
    Flops(f64),
    /// Bytes moved per iteration.
    Bytes(f64),
    /// Elements processed per iteration.
    Elements(f64),
}

impl Throughput {
    /// The rate at `ns_per_iter`, formatted with a unit that fits its size
    /// (`760.1 TFLOP/s`, `51.2 GFLOP/s`, `1.21 TB/s`, `3.4 Melem/s`).
    pub fn format_rate(&self, ns_per_iter: f64) -> String {
        let rate = self.rate(ns_per_iter);
        let (unit, prefixes): (&str, &[(f64, &str)]) = match self {
            Throughput::Flops(_) => ("FLOP/s", &[(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")]),
            Throughput::Bytes(_) => ("B/s", &[(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")]),
            Throughput::Elements(_) => {
                ("elem/s", &[(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")])
            }
        };
        for &(scale, prefix) in prefixes {
            if rate >= scale {
                return format!("{:.1} {prefix}{unit}", rate / scale);
            }
        }
        format!("{rate:.1} {unit}")
    }

    /// The rate in the unit's base per second (FLOP/s, B/s, elem/s).
    pub fn rate(&self, ns_per_iter: f64) -> f64 {
        let per_iter = match *self {
            Throughput::Flops(x) | Throughput::Bytes(x) | Throughput::Elements(x) => x,
        };
        per_iter / (ns_per_iter * 1e-9)
    }
}

/// Peak device memory from libtorch's caching allocator (CUDA only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryStats {
    /// Peak bytes held by tensors.
    pub peak_allocated_bytes: u64,
    /// Peak bytes reserved from the driver; the gap to `peak_allocated_bytes` is
    /// fragmentation and cache.
    pub peak_reserved_bytes: u64,
    /// Bytes held by tensors when read.
    pub allocated_bytes: u64,
    /// Bytes reserved when read.
    pub reserved_bytes: u64,
    /// Allocations that had to free the cache and retry.
    pub alloc_retries: u64,
    /// Out-of-memory errors raised.
    pub num_ooms: u64,
    /// Whether the reserved figures, the retries and the OOMs are the whole
    /// process's, shared with the other revision of a paired process (`cargo
    /// gpubench ab`), while the allocated figures are this side's own: both sides
    /// share one caching allocator, and a segment one side's freed blocks left
    /// cached is reused by the other, so reserved bytes cannot be told apart.
    /// Absent (false) in a run, where the process held the benchmark alone.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reserved_shared: bool,
}

/// Device memory still allocated after the routine's outputs were dropped, read
/// (synced) at three points of the steady state: before, after `calls` more calls,
/// and after `calls` more again. What a routine keeps per call (a cache that never
/// evicts) shows in both stretches; a one-time cache that fills in one of them and
/// then stops does not, so [`MemoryGrowth::per_call`] takes the smaller of the two.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryGrowth {
    /// Calls in each of the two stretches.
    pub calls: u64,
    /// Bytes allocated before the first stretch (after the samples).
    pub start_bytes: u64,
    /// Bytes allocated after the first stretch.
    pub first_bytes: u64,
    /// Bytes allocated after the second stretch.
    pub second_bytes: u64,
}

impl MemoryGrowth {
    /// Bytes held per call: the smaller growth of the two stretches over their calls
    /// (negative: the routine gave memory back).
    pub fn per_call(&self) -> f64 {
        let grew = |from: u64, to: u64| to as f64 - from as f64;
        let least =
            grew(self.start_bytes, self.first_bytes).min(grew(self.first_bytes, self.second_bytes));
        least / self.calls.max(1) as f64
    }
}

/// Why sampling stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The confidence interval became narrow enough.
    Converged,
    /// The measurement time bound was hit first.
    TimeBound,
    /// The maximum number of samples was reached.
    SampleBound,
    /// Smoke mode: one call only.
    Smoke,
    /// The driver of a paired process took the samples, alternating this side with
    /// the other, and stopped when their ratio was sure enough (or at its bounds).
    Paired,
}

/// Which timer a figure comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimeKind {
    /// Synced wall time.
    Wall,
    /// Host-dispatch time: when the last call returned to the host.
    Host,
    /// Device time from events.
    Device,
    /// Kernel time: the GPU's own work per call without host gaps (CUDA-graph replay,
    /// or the profiler's kernel durations).
    Kernel,
}

impl TimeKind {
    /// Words for tables.
    pub fn label(self) -> &'static str {
        match self {
            TimeKind::Wall => "wall",
            TimeKind::Host => "host",
            TimeKind::Device => "device",
            TimeKind::Kernel => "kernel",
        }
    }
}

/// Something the engine noticed about a benchmark.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Flag {
    /// The host returns long before the device finishes: device time dominates.
    DeviceBound,
    /// The device waits on the host: dispatch time dominates.
    LaunchBound,
    /// Host-dispatch time tracks device time: something syncs inside the routine.
    SyncsInsideRoutine,
    /// The samples never settled: noise above the target at the time bound.
    Unstable,
    /// The processes disagree: their medians differ by more than 10%, well beyond the
    /// noise within each (see `gpubench-analysis`'s `processes`).
    UnstableAcrossProcesses,
    /// The GPU throttled during some samples (clock below 75% of its default, or a
    /// hardware, thermal or power-brake slowdown): they are left out of the figures.
    Throttled,
    /// Another process used the GPU while this benchmark ran, or the host's CPUs
    /// could not serve its threads beside other work (see [`crate::host`]): its
    /// figures may be slow by whatever the other work took.
    Contended,
}

impl Flag {
    /// Words for tables.
    pub fn label(self) -> &'static str {
        match self {
            Flag::DeviceBound => "device-bound",
            Flag::LaunchBound => "launch-bound",
            Flag::SyncsInsideRoutine => "syncs inside the routine",
            Flag::Unstable => "unstable",
            Flag::UnstableAcrossProcesses => "unstable across processes",
            Flag::Throttled => "throttled",
            Flag::Contended => "contended",
        }
    }
}

/// Everything measured for one benchmark.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    /// Median cost of an empty `sync; t0; sync; t1`, ns.
    pub sync_cost_ns: f64,
    /// Cold calls, in order: the first ever, then each new shape/argument.
    pub cold: Vec<ColdCall>,
    /// The warm-up trace.
    pub warmup: Vec<WarmupPoint>,
    /// Steady-state samples in time order.
    pub samples: Vec<Sample>,
    /// What naive unsynchronised loops would have reported.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub naive: Vec<NaiveLoop>,
    /// Work per iteration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throughput: Option<Throughput>,
    /// Peak memory; absent (not zero) on CPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemoryStats>,
    /// Memory the routine holds from call to call; absent (not zero) where the
    /// device has no allocator to read (the CPU) and in older records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_growth: Option<MemoryGrowth>,
    /// Why sampling stopped.
    pub stop_reason: StopReason,
    /// What the engine noticed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flags: Vec<Flag>,
    /// Whether device times come from device events (`true`) or are absent.
    pub device_timer: bool,
    /// What the GPU did per call (kernel time, kernels, counters); absent on a device
    /// without kernel timing (the CPU) and when it could not be taken.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<KernelMeasurement>,
    /// Why there is no kernel measurement, when there is none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_unavailable: Option<String>,
    /// The caching allocator's state at the peak of a traced stretch of calls after
    /// the samples (`--memory-peak-snapshot`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_peak: Option<crate::memory_snapshot::PeakMemory>,
    /// Why there is no [`Measurement::memory_peak`] though it was asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_peak_unavailable: Option<String>,
    /// The L2 cache the samples' timers (wall, host, device) ran with; absent in
    /// older records (flushed there when the config's `flush_l2` is set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub l2: Option<L2State>,
    /// Energy per call from the GPU's energy counter; absent without one (the
    /// CPU, no NVML) and in older records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy: Option<crate::energy::EnergyMeasurement>,
    /// Why there is no energy measurement, when there is none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy_unavailable: Option<String>,
}

impl Measurement {
    /// A measurement of `samples` and nothing else: no sync cost, cold calls,
    /// warm-up or naive loops, converged, no flags, no device timer, and none of the
    /// optional parts.
    pub fn of_samples(samples: Vec<Sample>) -> Self {
        Measurement {
            sync_cost_ns: 0.0,
            cold: Vec::new(),
            warmup: Vec::new(),
            samples,
            naive: Vec::new(),
            throughput: None,
            memory: None,
            memory_growth: None,
            stop_reason: StopReason::Converged,
            flags: Vec::new(),
            device_timer: false,
            kernel: None,
            kernel_unavailable: None,
            memory_peak: None,
            memory_peak_unavailable: None,
            l2: None,
            energy: None,
            energy_unavailable: None,
        }
    }

    /// The samples the figures rest on, in time order: those that did not run
    /// throttled, or every sample when all did (the GPU then never ran at its clock
    /// and the figures say so through [`Flag::Throttled`]).
    pub fn kept_samples(&self) -> impl Iterator<Item = &Sample> {
        let all_throttled = self.samples.iter().all(Sample::throttled);
        self.samples
            .iter()
            .filter(move |s| all_throttled || !s.throttled())
    }

    /// Samples left out of the figures because they ran throttled.
    pub fn throttled_samples(&self) -> usize {
        self.samples.len() - self.kept_samples().count()
    }

    /// The SM clock of each kept sample, MHz, when every one has it.
    pub fn sm_clocks_mhz(&self) -> Option<Vec<u32>> {
        let clocks: Option<Vec<u32>> = self
            .kept_samples()
            .map(|s| s.clock.map(|c| c.sm_mhz))
            .collect();
        clocks.filter(|c| !c.is_empty())
    }

    /// Per-iteration synced wall times of the kept samples, ns.
    pub fn wall_per_iter(&self) -> Vec<f64> {
        self.kept_samples().map(Sample::per_iter_wall).collect()
    }
    /// Per-iteration host-dispatch times of the kept samples, ns.
    pub fn host_per_iter(&self) -> Vec<f64> {
        self.kept_samples().map(Sample::per_iter_host).collect()
    }
    /// Per-iteration device times of the kept samples, ns, when every one has one.
    pub fn device_per_iter(&self) -> Option<Vec<f64>> {
        self.kept_samples().map(Sample::per_iter_device).collect()
    }
    /// Per-iteration times of timer `kind`, ns (empty without device times).
    pub fn per_iter(&self, kind: TimeKind) -> Vec<f64> {
        match kind {
            TimeKind::Wall => self.wall_per_iter(),
            TimeKind::Host => self.host_per_iter(),
            TimeKind::Device => self.device_per_iter().unwrap_or_default(),
            TimeKind::Kernel => self
                .kernel
                .as_ref()
                .map(|k| k.samples_ns.clone())
                .unwrap_or_default(),
        }
    }

    /// The steady-state figure of this process: device time when measured, else
    /// synced wall time, per iteration.
    pub fn primary_per_iter(&self) -> Vec<f64> {
        self.device_per_iter()
            .filter(|d| !d.is_empty())
            .unwrap_or_else(|| self.wall_per_iter())
    }
}
