//! The raw record of one benchmark: what was measured, on what, and how, in one
//! [`ProcessRecord`] per process that measured it.
//!
//! A benchmark process writes a record of itself; `cargo gpubench` runs several
//! processes per benchmark and appends their records ([`RawRecord::append_processes`]).
//! Records are versioned JSON. A reader refuses a record whose `format_version` is
//! newer than it knows, with a message that says so, rather than misreading it; a
//! version 1 record (written before a record held several processes) is read as a
//! record of one process.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::eager_compiled::EagerCompiled;
use crate::failure::Failure;
use crate::host::HostTelemetry;
use crate::kernels::Counters;
use crate::measurement::*;
use crate::telemetry::{GpuState, ProcessTelemetry};

/// The record format this build writes and the newest it reads.
pub const RECORD_FORMAT_VERSION: u32 = 2;

/// Errors reading a record.
#[derive(Debug)]
pub enum RecordError {
    /// The file could not be read.
    Io {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The JSON is malformed or truncated, or a field is missing.
    Parse {
        /// The file.
        path: String,
        /// The cause.
        source: serde_json::Error,
    },
    /// The record was written by a newer gpubench.
    TooNew {
        /// The file.
        path: String,
        /// Its version.
        found: u32,
        /// The newest this build reads.
        supported: u32,
    },
    /// Processes of two different benchmarks were to be joined.
    OtherBenchmark {
        /// The record's benchmark.
        id: String,
        /// The benchmark of the processes offered.
        other: String,
    },
}

impl std::fmt::Display for RecordError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RecordError::Io { path, source } => write!(f, "failed to read record {path}: {source}"),
            RecordError::Parse { path, source } => {
                write!(f, "failed to parse record {path}: {source}")
            }
            RecordError::TooNew {
                path,
                found,
                supported,
            } => write!(
                f,
                "record {path} has format_version {found}, newer than the {supported} this gpubench reads: upgrade cargo-gpubench"
            ),
            RecordError::OtherBenchmark { id, other } => write!(
                f,
                "cannot add processes of benchmark `{other}` to the record of `{id}`"
            ),
        }
    }
}

impl std::error::Error for RecordError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RecordError::Io { source, .. } => Some(source),
            RecordError::Parse { source, .. } => Some(source),
            RecordError::TooNew { .. } | RecordError::OtherBenchmark { .. } => None,
        }
    }
}

/// One process's measurement of a benchmark.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProcessRecord {
    /// 1 for the first process that measured the benchmark, 2 for the next, ...
    #[serde(rename = "round")]
    pub process: u32,
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
    /// What the host's CPUs did at the start and end of the process (other work's
    /// runnable threads, the load) and the intra-op threads it ran; absent where
    /// they cannot be read and in older records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<HostTelemetry>,
    /// Why there are no host readings, when there are none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_unavailable: Option<String>,
    /// How this process paired the benchmark with the other revision's, when it was
    /// one side of a paired process (`cargo gpubench ab`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pairing: Option<crate::paired::Pairing>,
    /// Why this process of a `cargo gpubench ab` benchmark measured one side alone:
    /// pairing the benchmark failed in an earlier (or this) process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unpaired: Option<crate::paired::Unpaired>,
}

impl ProcessRecord {
    /// Process 1 of a process that started at `started_at`, with nothing in it yet.
    pub fn first(started_at: String) -> Self {
        ProcessRecord {
            process: 1,
            started_at,
            measurement: None,
            failure: None,
            eager_compiled: None,
            telemetry: None,
            telemetry_unavailable: None,
            host: None,
            host_unavailable: None,
            pairing: None,
            unpaired: None,
        }
    }

    /// Whether another process used the GPU while this one measured, or the host's
    /// CPUs could not serve its threads ([`HostTelemetry::contended`]).
    pub fn contended(&self) -> bool {
        let gpu = self
            .telemetry
            .as_ref()
            .is_some_and(ProcessTelemetry::contended);
        gpu || self.host.as_ref().is_some_and(HostTelemetry::contended)
    }

    /// Flags the measurement [`Flag::Contended`] when the process was.
    pub fn flag_contended(&mut self) {
        if !self.contended() {
            return;
        }
        if let Some(m) = self.measurement.as_mut() {
            if !m.flags.contains(&Flag::Contended) {
                m.flags.push(Flag::Contended);
            }
        }
    }
}

/// One benchmark's result, as the harness writes it (one process) and as `cargo
/// gpubench` stores it (one entry per process).
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
    /// Where and with what it ran (the first process).
    pub fingerprint: Fingerprint,
    /// The options each process measured with.
    pub config: MeasurementConfig,
    /// One entry per process, in the order the processes ran.
    #[serde(rename = "rounds")]
    pub processes: Vec<ProcessRecord>,
}

impl RawRecord {
    /// A record of one process of benchmark `id` (`name`, `arg`).
    pub fn new(
        id: &str,
        name: &str,
        arg: Option<String>,
        fingerprint: Fingerprint,
        config: MeasurementConfig,
        process: ProcessRecord,
    ) -> Self {
        RawRecord {
            format_version: RECORD_FORMAT_VERSION,
            id: id.to_string(),
            name: name.to_string(),
            arg,
            fingerprint,
            config,
            processes: vec![process],
        }
    }

    /// Whether every process ran to completion (and there is one).
    pub fn passed(&self) -> bool {
        !self.processes.is_empty() && self.failure().is_none()
    }

    /// The first failure of a process, when a process failed.
    pub fn failure(&self) -> Option<&Failure> {
        self.processes.iter().find_map(|r| r.failure.as_ref())
    }

    /// The process that failed first, when one did.
    pub fn failed_process(&self) -> Option<&ProcessRecord> {
        self.processes.iter().find(|r| r.failure.is_some())
    }

    /// The measurements of the processes that have one, in process order.
    pub fn measurements(&self) -> impl Iterator<Item = &Measurement> {
        self.processes.iter().filter_map(|r| r.measurement.as_ref())
    }

    /// Exact counts per call, from the first process that counted.
    pub fn counters(&self) -> Option<Counters> {
        self.measurements()
            .find_map(|m| m.kernel.as_ref().and_then(|k| k.counters))
    }

    /// The first process's measurement (cold calls, warm-up, naive loops of a process).
    pub fn first_measurement(&self) -> Option<&Measurement> {
        self.measurements().next()
    }

    /// The eager-versus-compiled result of the last process that has one: every process's
    /// when all passed, the failing process's when one failed.
    pub fn eager_compiled(&self) -> Option<&EagerCompiled> {
        self.processes
            .iter()
            .rev()
            .find_map(|r| r.eager_compiled.as_ref())
    }

    /// The timer comparisons use: device time when every sample of every measured
    /// process has one, else synced wall time.
    pub fn primary_kind(&self) -> TimeKind {
        if self.device_timed() {
            TimeKind::Device
        } else {
            TimeKind::Wall
        }
    }

    /// Each measured process's per-iteration primary times, one group per process.
    pub fn primary_groups(&self) -> Vec<Vec<f64>> {
        self.groups(self.primary_kind())
    }

    /// Each measured process's per-iteration times of timer `kind`, one group per
    /// process (empty where a process lacks that timer).
    pub fn groups(&self, kind: TimeKind) -> Vec<Vec<f64>> {
        self.measurements().map(|m| m.per_iter(kind)).collect()
    }

    /// Whether every sample of every measured process has a device time.
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
    /// measured process.
    pub fn throttled_samples(&self) -> usize {
        self.measurements()
            .map(Measurement::throttled_samples)
            .sum()
    }

    /// Whether another process used the GPU, or the host's CPUs could not serve the
    /// benchmark's threads, while any process measured.
    pub fn contended(&self) -> bool {
        self.processes.iter().any(ProcessRecord::contended)
    }

    /// The mean SM clock over the kept samples of every measured process, MHz, when
    /// every process read one.
    pub fn mean_sm_clock_mhz(&self) -> Option<f64> {
        let per_process: Option<Vec<Vec<u32>>> = self
            .measurements()
            .map(Measurement::sm_clocks_mhz)
            .collect();
        crate::telemetry::mean_clock_mhz(&per_process?)
    }

    /// Why the first process has no telemetry, when it has none.
    pub fn telemetry_unavailable(&self) -> Option<&str> {
        self.processes
            .first()
            .and_then(|r| r.telemetry_unavailable.as_deref())
    }

    /// Appends the processes of `other` (a record of the same benchmark from a later
    /// process), numbering them after this record's. The fingerprint and settings of
    /// the first process stand; a record without processes takes `other`'s.
    pub fn append_processes(&mut self, other: RawRecord) -> Result<(), RecordError> {
        if other.id != self.id {
            return Err(RecordError::OtherBenchmark {
                id: self.id.clone(),
                other: other.id,
            });
        }
        if self.processes.is_empty() {
            self.fingerprint = other.fingerprint;
            self.config = other.config;
        }
        for mut process in other.processes {
            process.process = self.processes.len() as u32 + 1;
            self.processes.push(process);
        }
        Ok(())
    }

    /// Serialises to pretty JSON with a trailing newline.
    pub fn to_json_pretty(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("records always serialise");
        s.push('\n');
        s
    }

    /// Parses a record, refusing newer versions and reading version 1 as one process;
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
        let process = ProcessRecord {
            process: 1,
            started_at: v1.fingerprint.timestamp.clone(),
            measurement: v1.measurement,
            failure: v1.failure,
            eager_compiled: v1.comparison,
            telemetry: None,
            telemetry_unavailable: None,
            host: None,
            host_unavailable: None,
            pairing: None,
            unpaired: None,
        };
        RawRecord::new(&v1.id, &v1.name, v1.arg, v1.fingerprint, v1.config, process)
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
    /// Whether this is libtorch's CPU device, where the routine's work runs on the
    /// host itself.
    pub fn on_cpu(&self) -> bool {
        self.kind == "cpu"
    }

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

#[cfg(test)]
pub(crate) mod tests;
