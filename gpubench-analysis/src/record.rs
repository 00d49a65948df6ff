//! The raw record a benchmark process writes: what was measured, on what, and how.
//!
//! Records are versioned JSON. A reader refuses a record whose `format_version` is
//! newer than it knows, with a message that says so, rather than misreading it.

use std::path::Path;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::failure::Failure;

/// The record format this build writes and the newest it reads.
pub const RECORD_FORMAT_VERSION: u32 = 1;

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
}

/// One benchmark's result, as written by the harness.
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
    /// Where and with what it ran.
    pub fingerprint: Fingerprint,
    /// The options the measurement ran with.
    pub config: MeasurementConfig,
    /// The measurement; present when the benchmark ran to completion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measurement: Option<Measurement>,
    /// Why it failed; present when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<Failure>,
    /// Eager-versus-compiled comparison, when the benchmark is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comparison: Option<crate::comparison::EagerCompiled>,
}

impl RawRecord {
    /// Whether the benchmark ran to completion.
    pub fn passed(&self) -> bool {
        self.failure.is_none()
    }

    /// Serialises to pretty JSON with a trailing newline.
    pub fn to_json_pretty(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("records always serialise");
        s.push('\n');
        s
    }

    /// Parses a record, refusing newer versions; `origin` names the source in errors.
    pub fn from_json(text: &str, origin: &str) -> Result<Self, RecordError> {
        check_version(text, origin)?;
        serde_json::from_str(text).map_err(|source| RecordError::Parse {
            path: origin.to_string(),
            source,
        })
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

/// Checks the `format_version` field before the full parse, so a newer record is
/// refused with a clear message instead of a confusing missing-field error.
pub fn check_version(text: &str, origin: &str) -> Result<(), RecordError> {
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
    Ok(())
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
}

impl MeasurementConfig {
    /// Defaults suited to GPUs: warm up for at most 1 s, measure for at most 5 s,
    /// samples of about 10 ms (an empty CUDA sync costs ~10 µs, so under 0.2%), at
    /// least 10 and at most 200 samples, stop once the median's 95% interval is
    /// within ±1%.
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
}

impl Sample {
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
}

impl Flag {
    /// Words for tables.
    pub fn label(self) -> &'static str {
        match self {
            Flag::DeviceBound => "device-bound",
            Flag::LaunchBound => "launch-bound",
            Flag::SyncsInsideRoutine => "syncs inside the routine",
            Flag::Unstable => "unstable",
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
}

impl Measurement {
    /// Per-iteration synced wall times of the samples, ns.
    pub fn wall_per_iter(&self) -> Vec<f64> {
        self.samples.iter().map(Sample::per_iter_wall).collect()
    }
    /// Per-iteration host-dispatch times, ns.
    pub fn host_per_iter(&self) -> Vec<f64> {
        self.samples.iter().map(Sample::per_iter_host).collect()
    }
    /// Per-iteration device times, ns, when every sample has one.
    pub fn device_per_iter(&self) -> Option<Vec<f64>> {
        self.samples.iter().map(Sample::per_iter_device).collect()
    }
    /// The steady-state figure a comparison uses: device time when measured, else
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

    pub(crate) fn sample_record() -> RawRecord {
        RawRecord {
            format_version: RECORD_FORMAT_VERSION,
            id: "matmul/4096".into(),
            name: "matmul".into(),
            arg: Some("4096".into()),
            fingerprint: Fingerprint {
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
            },
            config: MeasurementConfig {
                mode: RunMode::Bench,
                warmup_time_s: 1.0,
                measurement_time_s: 5.0,
                sample_target_s: 0.01,
                min_samples: 10,
                max_samples: 100,
                target_rel_ci: 0.01,
                flush_l2: false,
            },
            measurement: Some(Measurement {
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
                    device_ns: Some(3.9e6),
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
            }),
            failure: None,
            comparison: None,
        }
    }

    #[test]
    fn record_round_trips_through_json() {
        let r = sample_record();
        let back = RawRecord::from_json(&r.to_json_pretty(), "mem").unwrap();
        assert_eq!(r, back);
        let mut failed = sample_record();
        failed.measurement = None;
        failed.failure = Some(Failure::new(FailureKind::Panic, "boom"));
        let back = RawRecord::from_json(&failed.to_json_pretty(), "mem").unwrap();
        assert_eq!(failed, back);
        assert!(!back.passed());
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
    fn truncated_record_names_the_file() {
        let text = sample_record().to_json_pretty();
        let err = RawRecord::from_json(&text[..text.len() / 2], "a/b.json").unwrap_err();
        assert!(err.to_string().contains("a/b.json"));
    }

    #[test]
    fn primary_time_prefers_device_events() {
        let r = sample_record();
        let m = r.measurement.unwrap();
        assert_eq!(m.primary_per_iter(), vec![3.9e6 / 4.0]);
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
