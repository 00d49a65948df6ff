//! The raw record of one benchmark: what was measured, on what, and how, in one
//! [`Round`] per process that measured it.
//!
//! A benchmark process writes a record of one round; `cargo gpubench` runs several
//! processes per benchmark and appends their rounds ([`RawRecord::append_rounds`]).
//! Records are versioned JSON. A reader refuses a record whose `format_version` is
//! newer than it knows, with a message that says so, rather than misreading it; a
//! version 1 record (one process, written before rounds existed) is read as a record of
//! one round.

use std::path::Path;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::comparison::EagerCompiled;
use crate::failure::Failure;
use crate::kernels::{merge_tables, Counters, KernelMeasurement, KernelStat};
pub use crate::processes::{Bound, ProcessPolicy};
use crate::telemetry::{GpuState, ProcessTelemetry};

/// The record format this build writes and the newest it reads.
pub const RECORD_FORMAT_VERSION: u32 = 2;

/// Errors reading a record.
#[derive(Debug, Error)]
pub enum RecordError {
    /// The file could not be read.
    #[error("failed to read record {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The JSON is malformed or truncated, or a field is missing.
    #[error("failed to parse record {path}: {source}")]
    Parse {
        /// The file.
        path: String,
        /// The cause.
        source: serde_json::Error,
    },
    /// The record was written by a newer gpubench.
    #[error(
        "record {path} has format_version {found}, newer than the {supported} this gpubench reads: upgrade cargo-gpubench"
    )]
    TooNew {
        /// The file.
        path: String,
        /// Its version.
        found: u32,
        /// The newest this build reads.
        supported: u32,
    },
    /// Rounds of two different benchmarks were to be joined.
    #[error("cannot add rounds of benchmark `{other}` to the record of `{id}`")]
    OtherBenchmark {
        /// The record's benchmark.
        id: String,
        /// The benchmark of the rounds offered.
        other: String,
    },
}

/// One process's measurement of a benchmark.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Round {
    /// 1 for the first process that measured the benchmark, 2 for the next, ...
    pub round: u32,
    /// When the process started on the benchmark (RFC 3339, UTC).
    pub started_at: String,
    /// The measurement; present when the process ran to completion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measurement: Option<Measurement>,
    /// Why the process failed; present when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<Failure>,
    /// The eager-versus-compiled result, when the benchmark is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eager_compiled: Option<EagerCompiled>,
    /// What the GPU said at the start and end of the process (clocks, temperature,
    /// power, other processes); absent without NVML and in older records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub telemetry: Option<ProcessTelemetry>,
    /// Why there is no telemetry, when there is none (`no NVIDIA driver/NVML`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub telemetry_unavailable: Option<String>,
}

impl Round {
    /// Round 1 of a process that started at `started_at`, with nothing in it yet.
    pub fn first(started_at: String) -> Self {
        Round {
            round: 1,
            started_at,
            measurement: None,
            failure: None,
            eager_compiled: None,
            telemetry: None,
            telemetry_unavailable: None,
        }
    }

    /// Whether another process used the GPU while this one measured.
    pub fn contended(&self) -> bool {
        self.telemetry
            .as_ref()
            .is_some_and(ProcessTelemetry::contended)
    }
}

/// One benchmark's result, as the harness writes it (one round) and as `cargo
/// gpubench` stores it (one round per process).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RawRecord {
    /// Format of this record; see [`RECORD_FORMAT_VERSION`].
    pub format_version: u32,
    /// The benchmark id, e.g. `matmul/4096`.
    pub id: String,
    /// The benchmark's name without its argument, e.g. `matmul`.
    pub name: String,
    /// The argument of a parameterised benchmark, as displayed in the id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arg: Option<String>,
    /// Where and with what it ran (the first round's process).
    pub fingerprint: Fingerprint,
    /// The options each process measured with.
    pub config: MeasurementConfig,
    /// One round per process, in the order the processes ran.
    pub rounds: Vec<Round>,
}

impl RawRecord {
    /// A record of one round of benchmark `id` (`name`, `arg`).
    pub fn new(
        id: &str,
        name: &str,
        arg: Option<String>,
        fingerprint: Fingerprint,
        config: MeasurementConfig,
        round: Round,
    ) -> Self {
        RawRecord {
            format_version: RECORD_FORMAT_VERSION,
            id: id.to_string(),
            name: name.to_string(),
            arg,
            fingerprint,
            config,
            rounds: vec![round],
        }
    }

    /// Whether every round ran to completion (and there is one).
    pub fn passed(&self) -> bool {
        !self.rounds.is_empty() && self.failure().is_none()
    }

    /// The first failure of a round, when a round failed.
    pub fn failure(&self) -> Option<&Failure> {
        self.rounds.iter().find_map(|r| r.failure.as_ref())
    }

    /// The round that failed first, when one did.
    pub fn failed_round(&self) -> Option<&Round> {
        self.rounds.iter().find(|r| r.failure.is_some())
    }

    /// The measurements of the rounds that have one, in round order.
    pub fn measurements(&self) -> impl Iterator<Item = &Measurement> {
        self.rounds.iter().filter_map(|r| r.measurement.as_ref())
    }

    /// The kernels, copies and memsets of one call, merged over the processes that
    /// profiled them (the first process of a benchmark does); empty when none did.
    pub fn kernel_table(&self) -> Vec<KernelStat> {
        let tables: Vec<&[KernelStat]> = self
            .measurements()
            .filter_map(|m| m.kernel.as_ref())
            .map(|k| k.kernels.as_slice())
            .filter(|t| !t.is_empty())
            .collect();
        merge_tables(&tables)
    }

    /// Exact counts per call, from the first process that counted.
    pub fn counters(&self) -> Option<Counters> {
        self.measurements()
            .find_map(|m| m.kernel.as_ref().and_then(|k| k.counters))
    }

    /// The first round's measurement (cold calls, warm-up, naive loops of a process).
    pub fn first_measurement(&self) -> Option<&Measurement> {
        self.measurements().next()
    }

    /// The eager-versus-compiled result of the last round that has one: every round's
    /// when all passed, the failing round's when one failed.
    pub fn eager_compiled(&self) -> Option<&EagerCompiled> {
        self.rounds
            .iter()
            .rev()
            .find_map(|r| r.eager_compiled.as_ref())
    }

    /// The timer comparisons use: device time when every sample of every measured
    /// round has one, else synced wall time.
    pub fn primary_kind(&self) -> TimeKind {
        if self.device_timed() {
            TimeKind::Device
        } else {
            TimeKind::Wall
        }
    }

    /// Whether the benchmark's time rests on the device or on the host's dispatch
    /// speed: device-bound when most measured rounds were flagged so.
    pub fn bound(&self) -> Bound {
        let n = self.measurements().count();
        let device = self
            .measurements()
            .filter(|m| m.flags.contains(&Flag::DeviceBound))
            .count();
        if n > 0 && 2 * device > n {
            Bound::Device
        } else {
            Bound::Host
        }
    }

    /// Each measured round's per-iteration primary times, one group per process.
    pub fn primary_groups(&self) -> Vec<Vec<f64>> {
        self.groups(self.primary_kind())
    }

    /// Each measured round's per-iteration times of timer `kind`, one group per
    /// process (empty where a round lacks that timer).
    pub fn groups(&self, kind: TimeKind) -> Vec<Vec<f64>> {
        self.measurements().map(|m| m.per_iter(kind)).collect()
    }

    /// Whether every sample of every measured round has a device time.
    pub fn device_timed(&self) -> bool {
        let mut any = false;
        for m in self.measurements() {
            match m.device_per_iter() {
                Some(d) if !d.is_empty() => any = true,
                Some(_) => {}
                None => return false,
            }
        }
        any
    }

    /// Samples left out of the figures because they ran throttled, over every
    /// measured round.
    pub fn throttled_samples(&self) -> usize {
        self.measurements()
            .map(Measurement::throttled_samples)
            .sum()
    }

    /// Whether another process used the GPU while any round measured.
    pub fn contended(&self) -> bool {
        self.rounds.iter().any(Round::contended)
    }

    /// The mean SM clock over the kept samples of every measured round, MHz, when
    /// every round read one.
    pub fn mean_sm_clock_mhz(&self) -> Option<f64> {
        let per_round: Option<Vec<Vec<u32>>> = self
            .measurements()
            .map(Measurement::sm_clocks_mhz)
            .collect();
        crate::telemetry::mean_clock_mhz(&per_round?)
    }

    /// Why the first round has no telemetry, when it has none.
    pub fn telemetry_unavailable(&self) -> Option<&str> {
        self.rounds
            .first()
            .and_then(|r| r.telemetry_unavailable.as_deref())
    }

    /// Appends the rounds of `other` (a record of the same benchmark from a later
    /// process), numbering them after this record's. The fingerprint and settings of
    /// the first round stand; a record without rounds takes `other`'s.
    pub fn append_rounds(&mut self, other: RawRecord) -> Result<(), RecordError> {
        if other.id != self.id {
            return Err(RecordError::OtherBenchmark {
                id: self.id.clone(),
                other: other.id,
            });
        }
        if self.rounds.is_empty() {
            self.fingerprint = other.fingerprint;
            self.config = other.config;
        }
        for mut round in other.rounds {
            round.round = self.rounds.len() as u32 + 1;
            self.rounds.push(round);
        }
        Ok(())
    }

    /// Serialises to pretty JSON with a trailing newline.
    pub fn to_json_pretty(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("records always serialise");
        s.push('\n');
        s
    }

    /// Parses a record, refusing newer versions and reading version 1 as one round;
    /// `origin` names the source in errors.
    pub fn from_json(text: &str, origin: &str) -> Result<Self, RecordError> {
        let parse_err = |source| RecordError::Parse {
            path: origin.to_string(),
            source,
        };
        if check_version(text, origin)? < 2 {
            let old: RawRecordV1 = serde_json::from_str(text).map_err(parse_err)?;
            return Ok(old.into());
        }
        serde_json::from_str(text).map_err(parse_err)
    }

    /// Reads a record from a file.
    pub fn read(path: &Path) -> Result<Self, RecordError> {
        let text = std::fs::read_to_string(path).map_err(|source| RecordError::Io {
            path: path.display().to_string(),
            source,
        })?;
        Self::from_json(&text, &path.display().to_string())
    }
}

/// A record as format version 1 wrote it: one process, its measurement, failure and
/// eager-versus-compiled result at the top level.
#[derive(Deserialize)]
struct RawRecordV1 {
    id: String,
    name: String,
    #[serde(default)]
    arg: Option<String>,
    fingerprint: Fingerprint,
    config: MeasurementConfig,
    #[serde(default)]
    measurement: Option<Measurement>,
    #[serde(default)]
    failure: Option<Failure>,
    #[serde(default)]
    comparison: Option<EagerCompiled>,
}

impl From<RawRecordV1> for RawRecord {
    fn from(v1: RawRecordV1) -> Self {
        let round = Round {
            round: 1,
            started_at: v1.fingerprint.timestamp.clone(),
            measurement: v1.measurement,
            failure: v1.failure,
            eager_compiled: v1.comparison,
            telemetry: None,
            telemetry_unavailable: None,
        };
        RawRecord::new(&v1.id, &v1.name, v1.arg, v1.fingerprint, v1.config, round)
    }
}

/// Checks the `format_version` field before the full parse, so a newer record is
/// refused with a clear message instead of a confusing missing-field error; returns
/// the version.
pub fn check_version(text: &str, origin: &str) -> Result<u32, RecordError> {
    #[derive(Deserialize)]
    struct Versioned {
        format_version: u32,
    }
    let v: Versioned = serde_json::from_str(text).map_err(|source| RecordError::Parse {
        path: origin.to_string(),
        source,
    })?;
    if v.format_version > RECORD_FORMAT_VERSION {
        return Err(RecordError::TooNew {
            path: origin.to_string(),
            found: v.format_version,
            supported: RECORD_FORMAT_VERSION,
        });
    }
    Ok(v.format_version)
}

/// The identity of the device a benchmark ran on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceIdentity {
    /// `cpu` or `cuda`.
    pub kind: String,
    /// The device index, for CUDA.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<u32>,
    /// The model name, e.g. `NVIDIA H200` or the CPU model.
    pub name: String,
    /// Total device memory in bytes, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_memory_bytes: Option<u64>,
}

impl DeviceIdentity {
    /// `cuda:0`, `cpu`.
    pub fn label(&self) -> String {
        match self.index {
            Some(i) if self.kind != "cpu" => format!("{}:{}", self.kind, i),
            _ => self.kind.clone(),
        }
    }
}

/// Where and with what a benchmark ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fingerprint {
    /// The device measured.
    pub device: DeviceIdentity,
    /// CUDA runtime version libtorch was built with, when CUDA is in use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cuda_version: Option<String>,
    /// cuDNN version, when available.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cudnn_version: Option<String>,
    /// libtorch version.
    pub libtorch_version: String,
    /// tch crate version.
    pub tch_version: String,
    /// gpubench version that measured.
    pub gpubench_version: String,
    /// Host CPU model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_model: Option<String>,
    /// Operating system and architecture, e.g. `linux x86_64`.
    pub os: String,
    /// Git commit of the measured workspace, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_commit: Option<String>,
    /// When the measurement started (RFC 3339, UTC).
    pub timestamp: String,
    /// The GPU's driver, clocks, power limit and modes, from NVML; absent without
    /// it (the CPU, no driver) and in older records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<GpuState>,
}

impl Fingerprint {
    /// A fingerprint for a benchmark whose process died before reporting one: only
    /// the requested device label and the time are known.
    pub fn unknown(device_label: &str, timestamp: String) -> Self {
        let (kind, index) = match device_label.split_once(':') {
            Some((k, i)) => (k.to_string(), i.parse().ok()),
            None => (device_label.to_string(), None),
        };
        Fingerprint {
            device: DeviceIdentity {
                kind,
                index,
                name: "unknown".into(),
                total_memory_bytes: None,
            },
            cuda_version: None,
            cudnn_version: None,
            libtorch_version: "unknown".into(),
            tch_version: "unknown".into(),
            gpubench_version: env!("CARGO_PKG_VERSION").into(),
            cpu_model: None,
            os: format!("{} {}", std::env::consts::OS, std::env::consts::ARCH),
            git_commit: None,
            timestamp,
            gpu: None,
        }
    }
}

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
    /// rounds, and for a bench executable run on its own).
    #[serde(default = "ProcessPolicy::single")]
    pub processes: ProcessPolicy,
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
    /// (clocks, caches) and `--flush-l2`. The measurement time, sample counts,
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

/// The SM clock and temperature read right after a sample, and whether the sample
/// was throttled by [`crate::telemetry::is_throttled`]'s rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SampleClock {
    /// SM clock, MHz.
    pub sm_mhz: u32,
    /// GPU temperature, °C.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature_c: Option<u32>,
    /// Throttled: left out of the statistics.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub throttled: bool,
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
    /// noise within each (see [`crate::processes`]).
    UnstableAcrossProcesses,
    /// The GPU throttled during some samples (clock below 75% of its default, or a
    /// hardware, thermal or power-brake slowdown): they are left out of the figures.
    Throttled,
    /// Another process used the GPU while this benchmark ran: its figures may be
    /// slow by whatever that process took.
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
}

impl Measurement {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::failure::FailureKind;

    fn fingerprint() -> Fingerprint {
        Fingerprint {
            device: DeviceIdentity {
                kind: "cuda".into(),
                index: Some(0),
                name: "NVIDIA H200".into(),
                total_memory_bytes: Some(150_000_000_000),
            },
            cuda_version: Some("13.0".into()),
            cudnn_version: None,
            libtorch_version: "2.11.0".into(),
            tch_version: "0.24.0".into(),
            gpubench_version: "0.1.0".into(),
            cpu_model: Some("x86".into()),
            os: "linux x86_64".into(),
            git_commit: None,
            timestamp: "2026-11-29T00:00:00Z".into(),
            gpu: None,
        }
    }

    fn measurement(device_ns: f64) -> Measurement {
        Measurement {
            sync_cost_ns: 5000.0,
            cold: vec![ColdCall {
                label: "first call".into(),
                wall_ns: 1e8,
                host_ns: 9e7,
                device_ns: None,
            }],
            warmup: vec![WarmupPoint {
                iters: 1,
                wall_ns: 2e6,
            }],
            samples: vec![Sample {
                iters: 4,
                wall_ns: 4e6,
                host_ns: 1e5,
                device_ns: Some(device_ns),
                clock: None,
            }],
            naive: vec![],
            throughput: Some(Throughput::Flops(1.37e11)),
            memory: Some(MemoryStats {
                peak_allocated_bytes: 1 << 30,
                peak_reserved_bytes: 1 << 31,
                allocated_bytes: 0,
                reserved_bytes: 1 << 31,
                alloc_retries: 0,
                num_ooms: 0,
            }),
            stop_reason: StopReason::Converged,
            flags: vec![Flag::DeviceBound],
            device_timer: true,
            kernel: None,
            kernel_unavailable: None,
        }
    }

    pub(crate) fn sample_record() -> RawRecord {
        let mut round = Round::first("2026-11-29T00:00:00Z".into());
        round.measurement = Some(measurement(3.9e6));
        RawRecord::new(
            "matmul/4096",
            "matmul",
            Some("4096".into()),
            fingerprint(),
            MeasurementConfig {
                max_samples: 100,
                ..MeasurementConfig::standard()
            },
            round,
        )
    }

    #[test]
    fn record_round_trips_through_json() {
        let r = sample_record();
        let text = r.to_json_pretty();
        assert!(text.contains("\"format_version\": 2"), "{text}");
        let back = RawRecord::from_json(&text, "mem").unwrap();
        assert_eq!(r, back);
        let mut failed = sample_record();
        failed.rounds[0].measurement = None;
        failed.rounds[0].failure = Some(Failure::new(FailureKind::Panic, "boom"));
        let back = RawRecord::from_json(&failed.to_json_pretty(), "mem").unwrap();
        assert_eq!(failed, back);
        assert!(!back.passed());
        assert_eq!(back.failure().unwrap().message, "boom");
    }

    #[test]
    fn newer_format_version_is_refused_with_a_clear_error() {
        let mut v: serde_json::Value = serde_json::to_value(sample_record()).unwrap();
        v["format_version"] = (RECORD_FORMAT_VERSION + 1).into();
        let err = RawRecord::from_json(&v.to_string(), "runs/x/matmul.json").unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, RecordError::TooNew { .. }));
        assert!(msg.contains("runs/x/matmul.json"), "{msg}");
        assert!(msg.contains("upgrade"), "{msg}");
    }

    #[test]
    fn a_version_1_record_reads_as_one_round() {
        let mut v1 = serde_json::to_value(sample_record()).unwrap();
        let obj = v1.as_object_mut().unwrap();
        let round = obj.remove("rounds").unwrap()[0].clone();
        obj.insert("format_version".into(), 1.into());
        obj.insert("measurement".into(), round["measurement"].clone());
        obj["config"].as_object_mut().unwrap().remove("processes");
        let r = RawRecord::from_json(&v1.to_string(), "old.json").unwrap();
        assert_eq!(r.rounds.len(), 1);
        assert_eq!(r.rounds[0].started_at, "2026-11-29T00:00:00Z");
        assert_eq!(r.config.processes, ProcessPolicy::single());
        assert_eq!(r.first_measurement(), sample_record().first_measurement());
        assert_eq!(r.format_version, RECORD_FORMAT_VERSION);
    }

    #[test]
    fn truncated_record_names_the_file() {
        let text = sample_record().to_json_pretty();
        let err = RawRecord::from_json(&text[..text.len() / 2], "a/b.json").unwrap_err();
        assert!(err.to_string().contains("a/b.json"));
    }

    #[test]
    fn primary_time_prefers_device_events() {
        let r = sample_record();
        let m = r.first_measurement().unwrap();
        assert_eq!(m.primary_per_iter(), vec![3.9e6 / 4.0]);
        assert_eq!(r.primary_groups(), vec![vec![3.9e6 / 4.0]]);
    }

    #[test]
    fn rounds_append_in_order_and_keep_the_first_fingerprint() {
        let mut r = sample_record();
        let mut later = sample_record();
        later.fingerprint.timestamp = "later".into();
        later.rounds[0].measurement = Some(measurement(4.1e6));
        r.append_rounds(later.clone()).unwrap();
        r.append_rounds(later).unwrap();
        assert_eq!(
            r.rounds.iter().map(|x| x.round).collect::<Vec<_>>(),
            [1, 2, 3]
        );
        assert_eq!(r.fingerprint.timestamp, "2026-11-29T00:00:00Z");
        assert_eq!(
            r.primary_groups(),
            vec![vec![3.9e6 / 4.0], vec![4.1e6 / 4.0], vec![4.1e6 / 4.0]]
        );
        assert!(r.passed());
        let mut other = sample_record();
        other.id = "conv".into();
        let err = r.append_rounds(other).unwrap_err().to_string();
        assert!(
            err.contains("`conv`") && err.contains("`matmul/4096`"),
            "{err}"
        );
        // One round without device times makes every round fall back to wall time.
        let mut wall_only = sample_record();
        wall_only.rounds[0].measurement.as_mut().unwrap().samples[0].device_ns = None;
        r.append_rounds(wall_only).unwrap();
        assert!(!r.device_timed());
        assert_eq!(r.primary_groups()[0], vec![1e6]);
    }

    fn clocked(sm_mhz: u32, throttled: bool) -> Option<SampleClock> {
        Some(SampleClock {
            sm_mhz,
            temperature_c: Some(60),
            throttled,
        })
    }

    #[test]
    fn throttled_samples_are_left_out_of_the_figures_and_counted() {
        let mut r = sample_record();
        let m = r.rounds[0].measurement.as_mut().unwrap();
        let fast = m.samples[0].clone();
        m.samples[0].clock = clocked(1980, false);
        m.samples.push(Sample {
            device_ns: Some(9e6),
            clock: clocked(1100, true),
            ..fast.clone()
        });
        m.samples.push(Sample {
            clock: clocked(1960, false),
            ..fast
        });
        assert_eq!(m.samples.len(), 3);
        assert_eq!(m.throttled_samples(), 1);
        assert_eq!(m.primary_per_iter(), vec![3.9e6 / 4.0, 3.9e6 / 4.0]);
        assert_eq!(r.throttled_samples(), 1);
        assert_eq!(r.mean_sm_clock_mhz(), Some(1970.0));
        let back = RawRecord::from_json(&r.to_json_pretty(), "mem").unwrap();
        assert_eq!(back, r);
        assert_eq!(back.throttled_samples(), 1);
    }

    #[test]
    fn when_every_sample_throttled_all_are_kept() {
        let mut r = sample_record();
        let m = r.rounds[0].measurement.as_mut().unwrap();
        m.samples[0].clock = clocked(900, true);
        assert_eq!(m.throttled_samples(), 0);
        assert_eq!(m.primary_per_iter().len(), 1);
    }

    #[test]
    fn a_record_from_before_telemetry_loads_without_it() {
        let text = sample_record().to_json_pretty();
        assert!(
            !text.contains("clock") && !text.contains("telemetry"),
            "{text}"
        );
        let r = RawRecord::from_json(&text, "old.json").unwrap();
        assert_eq!(r.fingerprint.gpu, None);
        assert!(!r.contended());
        assert_eq!(r.throttled_samples(), 0);
        assert_eq!(r.mean_sm_clock_mhz(), None);
        assert_eq!(r.telemetry_unavailable(), None);
    }

    #[test]
    fn a_failed_round_fails_the_record_and_keeps_the_others() {
        let mut r = sample_record();
        let mut failed = sample_record();
        failed.rounds[0].measurement = None;
        failed.rounds[0].failure = Some(Failure::new(FailureKind::Crash, "signal 11"));
        r.append_rounds(failed).unwrap();
        assert!(!r.passed());
        assert_eq!(r.failed_round().unwrap().round, 2);
        assert_eq!(r.measurements().count(), 1);
    }
}

/// A file name for a benchmark id that is safe on every file system: characters
/// outside `[A-Za-z0-9._-]` become `_`, and when anything was replaced a short hash
/// of the id is appended so `a/b` and `a_b` never share a file.
pub fn file_stem_for_id(id: &str) -> String {
    let mut changed = false;
    let mut stem: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                changed = true;
                '_'
            }
        })
        .collect();
    if stem.starts_with('.') || stem.is_empty() {
        stem.insert(0, '_');
        changed = true;
    }
    if stem.len() > 100 {
        stem.truncate(100);
        changed = true;
    }
    if changed {
        // FNV-1a: stable across builds and platforms, unlike std's hasher.
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in id.bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        stem.push_str(&format!("-{:08x}", h as u32));
    }
    stem
}

#[cfg(test)]
mod file_name_tests {
    use super::file_stem_for_id;

    #[test]
    fn ids_map_to_distinct_safe_names() {
        assert_eq!(file_stem_for_id("matmul_bf16"), "matmul_bf16");
        let a = file_stem_for_id("matmul/4096");
        let b = file_stem_for_id("matmul_4096");
        assert_ne!(a, b);
        assert!(a.starts_with("matmul_4096-"));
        for id in [
            "../../etc/passwd",
            "..",
            "",
            "<script>alert(1)</script>",
            "a\\b",
        ] {
            let s = file_stem_for_id(id);
            assert!(
                !s.contains('/') && !s.contains('\\') && !s.starts_with('.'),
                "{s}"
            );
            assert!(!s.is_empty());
        }
    }
}
