//! One baseline file: its format (versions 1 and 2), names, rounding, and a
//! benchmark's processes and estimates as saved.

use std::fmt;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::compare::CompareError;
use crate::memory::ProcessMemory;
use crate::peaks::PeakShare;
use crate::processes::{Bound, EstimateBasis, ProcessStats};
use crate::record_analysis::RecordAnalysis;
use crate::stats::BootstrapConfig;
use gpubench_record::estimate::Estimate;
use gpubench_record::kernels::{Counters, KernelStat};
use gpubench_record::measurement::{Measurement, TimeKind};
use gpubench_record::measurement::{MeasurementConfig, RunMode, Throughput};
use gpubench_record::record::{Fingerprint, RawRecord};

/// The baseline format this build writes and the newest it reads.
pub const BASELINE_FORMAT_VERSION: u32 = 2;
/// Significant digits kept of every time in a baseline file.
pub const SIGNIFICANT_DIGITS: usize = 6;
/// Longest baseline name, in bytes.
pub const MAX_NAME_LEN: usize = 64;

/// What a valid baseline name looks like, for error messages.
const VALID_NAME: &str = "a baseline name is 1 to 64 ASCII letters, digits, '.', '_' or '-', \
     not starting with '.' (e.g. `main`, `pr-123`, `v0.2`)";

/// Errors of baseline files, the store and comparisons with a baseline.
#[derive(Debug, Error)]
pub enum BaselineError {
    /// The name could be a path outside the store, or is otherwise unusable.
    #[error("invalid baseline name {name:?}: {reason}; {VALID_NAME}")]
    InvalidName {
        /// The name given.
        name: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// No baseline of that name was saved.
    #[error("baseline `{name}` not found: {path} does not exist")]
    NotFound {
        /// The name.
        name: String,
        /// Where it was looked for.
        path: String,
    },
    /// A file stands where saving the baseline writes: at its directory's name, or
    /// at a staging name beside it. Nothing was written, moved or removed.
    #[error(transparent)]
    Blocked(#[from] crate::atomic_dir::Blocker),
    /// A file or directory could not be read or written.
    #[error("failed to {action} {path}: {source}")]
    Io {
        /// What was being done, e.g. `write baseline file`.
        action: &'static str,
        /// The path.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// A baseline file is malformed or truncated, or a field is missing.
    #[error("failed to parse baseline file {path}: {source}")]
    Parse {
        /// The file.
        path: String,
        /// The cause.
        source: serde_json::Error,
    },
    /// A baseline file was written by a newer gpubench.
    #[error(
        "baseline file {path} has format_version {found}, newer than the {supported} this gpubench reads: upgrade cargo-gpubench"
    )]
    TooNew {
        /// The file.
        path: String,
        /// Its version.
        found: u32,
        /// The newest this build reads.
        supported: u32,
    },
    /// A baseline file parses but its content is unusable.
    #[error("baseline file {path} is invalid: {reason}")]
    Invalid {
        /// The file.
        path: String,
        /// What is wrong.
        reason: String,
    },
    /// Two baseline files hold the same benchmark id.
    #[error("benchmark id `{id}` appears in two baseline files: {first} and {second}")]
    DuplicateId {
        /// The id.
        id: String,
        /// The first file.
        first: String,
        /// The second file.
        second: String,
    },
    /// The records to save hold the same benchmark id twice.
    #[error("benchmark id `{id}` appears more than once in the records to save")]
    DuplicateRecord {
        /// The id.
        id: String,
    },
    /// Two benchmark ids map to the same file name.
    #[error("benchmarks `{first}` and `{second}` would both be saved as {file}: rename one")]
    FileClash {
        /// One id.
        first: String,
        /// The other id.
        second: String,
        /// The shared file name.
        file: String,
    },
    /// The baseline was recorded on another device model.
    #[error(
        "the baseline was recorded on `{baseline_device}` but this run is on `{current_device}` (benchmark `{id}`): timings from different device models are not comparable; record a baseline on this device, or explicitly allow comparing across devices"
    )]
    DeviceMismatch {
        /// The first benchmark found on different devices.
        id: String,
        /// The baseline's device model.
        baseline_device: String,
        /// This run's device model.
        current_device: String,
    },
    /// The comparison settings are invalid.
    #[error(transparent)]
    Compare(#[from] CompareError),
}

/// Checks a baseline name: 1 to [`MAX_NAME_LEN`] ASCII letters, digits, `.`, `_` or
/// `-`, not starting with `.`; so it is always one plain directory inside the store.
pub fn validate_name(name: &str) -> Result<(), BaselineError> {
    let reason = if name.is_empty() {
        "it is empty"
    } else if name.len() > MAX_NAME_LEN {
        "it is too long"
    } else if name.contains(['/', '\\']) {
        "it contains a path separator"
    } else if name.starts_with('.') {
        "it starts with '.'"
    } else if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
    {
        "it contains a character other than ASCII letters, digits, '.', '_' or '-'"
    } else {
        return Ok(());
    };
    Err(BaselineError::InvalidName {
        name: name.to_string(),
        reason,
    })
}

/// Rounds `x` to [`SIGNIFICANT_DIGITS`] significant digits. Going through the decimal
/// text gives the float nearest that decimal, which JSON then prints exactly as such.
pub fn round_significant(x: f64) -> f64 {
    if !x.is_finite() || x == 0.0 {
        return x;
    }
    format!("{:.*e}", SIGNIFICANT_DIGITS - 1, x)
        .parse()
        .unwrap_or(x)
}

/// Per-iteration times of one process of a baseline, ns, in sample order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProcessSamples {
    /// Synced wall time per iteration.
    pub wall_ns: Vec<f64>,
    /// Host-dispatch time per iteration.
    pub host_ns: Vec<f64>,
    /// Device time per iteration, when every sample had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_ns: Option<Vec<f64>>,
    /// Kernel time per call of each kernel sample, when measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_ns: Option<Vec<f64>>,
    /// The SM clock read after each sample, MHz, when the GPU was read: a comparison
    /// says when the two sides ran at clearly different clocks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sm_clock_mhz: Option<Vec<u32>>,
    /// How many of those samples read the board's power limit holding the clock down
    /// (absent: none, or the GPU was not read): a comparison says when one side ran
    /// power-capped and the other did not.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub power_capped_samples: usize,
    /// Energy per call of each of the process's energy windows, J, when it measured
    /// energy (absent on the CPU, without the GPU's energy counter, and in files from
    /// before energy verdicts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy_j: Option<Vec<f64>>,
    /// The process's memory clock, MHz (the mean of its readings at start and end,
    /// rounded), when the GPU was read: a bytes share of peak is put at it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_clock_mhz: Option<u32>,
    /// Peak memory and growth per call, where the device has an allocator (absent on
    /// the CPU and in files from before memory verdicts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<ProcessMemory>,
}

impl ProcessSamples {
    /// The times of timer `kind`.
    pub fn get(&self, kind: TimeKind) -> Option<&[f64]> {
        match kind {
            TimeKind::Wall => Some(&self.wall_ns),
            TimeKind::Host => Some(&self.host_ns),
            TimeKind::Device => self.device_ns.as_deref(),
            TimeKind::Kernel => self.kernel_ns.as_deref(),
        }
    }

    /// Whether every time (and energy) is finite and non-negative.
    fn all_valid(&self) -> bool {
        let optional_valid = [&self.device_ns, &self.kernel_ns, &self.energy_j]
            .into_iter()
            .all(|x| x.as_deref().is_none_or(valid_times));
        optional_valid && valid_times(&self.wall_ns) && valid_times(&self.host_ns)
    }
}

/// The primary timer's estimates, for people reading the file and its diffs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BaselineEstimates {
    /// The timer they describe.
    pub primary: TimeKind,
    /// The typical time per iteration with its interval, ns (see
    /// [`crate::processes`]).
    pub estimate_ns: Estimate,
    /// What the estimate rests on.
    pub basis: EstimateBasis,
    /// Processes measured.
    pub processes: usize,
    /// Spread between processes (standard deviation of the log process medians).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub between: Option<f64>,
    /// Noise within a process, MAD / median (median over processes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub within: Option<f64>,
}

/// One benchmark of a baseline: the content of one file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BaselineEntry {
    /// Format of this file; see [`BASELINE_FORMAT_VERSION`].
    pub format_version: u32,
    /// The benchmark id.
    pub id: String,
    /// Its bench target, so that a benchmark later gone from the code is still named
    /// `<target>/<id>` (absent in files from before it was kept, and where the
    /// saving run did not know it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// Where and with what it ran.
    pub fingerprint: Fingerprint,
    /// The settings it was measured with; absent in files from before they were kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<MeasurementConfig>,
    /// What its time rested on (absent in files from before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound: Option<Bound>,
    /// Whether a process of it was contended (another process used the GPU, or the
    /// host's CPUs could not serve its threads): work on the CPU device compared with
    /// it is judged as contended work (`compare::compare_cpu_processes`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub contended: bool,
    /// The per-iteration times of each process, in the order the processes ran.
    pub processes: Vec<ProcessSamples>,
    /// The kernels, copies and memsets of one call, averaged over processes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kernels: Vec<KernelStat>,
    /// Exact counts per call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counters: Option<Counters>,
    /// The work per call the benchmark declared (FLOPs, bytes or elements), which
    /// its share of the device's peak rests on; absent where it declared none and
    /// in files from before shares of peak were judged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throughput: Option<Throughput>,
    /// The primary timer's estimates.
    pub estimates: BaselineEstimates,
}

/// Why a record was not saved into a baseline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NotSaved {
    /// The benchmark failed; the previous file, if any, is kept.
    Failed,
    /// A smoke run measures nothing.
    Smoke,
    /// The record has no samples.
    NoSamples,
    /// A time is NaN, infinite or negative.
    InvalidSamples,
}

impl fmt::Display for NotSaved {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            NotSaved::Failed => "the benchmark failed",
            NotSaved::Smoke => "a smoke run measures nothing",
            NotSaved::NoSamples => "the record has no samples",
            NotSaved::InvalidSamples => "a time is not a finite non-negative number",
        })
    }
}

fn valid_times(xs: &[f64]) -> bool {
    xs.iter().all(|x| x.is_finite() && *x >= 0.0)
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// The energy per call of each window of each of `record`'s measured processes, J,
/// one group per process; `None` unless every one measured energy.
pub fn energy_groups(record: &RawRecord) -> Option<Vec<Vec<f64>>> {
    let groups: Option<Vec<Vec<f64>>> = record
        .measurements()
        .filter(|m| !m.samples.is_empty())
        .map(process_energy)
        .collect();
    groups.filter(|g| !g.is_empty())
}

/// A process's energy per call of each window, J, when it has windows.
fn process_energy(m: &Measurement) -> Option<Vec<f64>> {
    m.energy
        .as_ref()
        .map(|e| e.joules_per_call())
        .filter(|j| !j.is_empty())
}

/// The kept samples of `m` read while the power limit held the clock down.
fn power_capped_samples(m: &Measurement) -> usize {
    m.kept_samples()
        .filter(|s| s.clock.is_some_and(|c| c.power_capped))
        .count()
}

/// The share of `record`'s kept samples that ran power-capped, over every measured
/// process, when the GPU was read after each of them.
pub fn power_capped_share(record: &RawRecord) -> Option<f64> {
    let measured: Vec<&Measurement> = record.measurements().collect();
    let read: usize = measured
        .iter()
        .map(|m| m.sm_clocks_mhz().map_or(0, |c| c.len()))
        .sum();
    let capped: usize = measured.iter().map(|m| power_capped_samples(m)).sum();
    (read > 0).then(|| capped as f64 / read as f64)
}

impl BaselineEntry {
    /// The entry for a measured record, samples rounded as the module docs say.
    pub fn from_record(record: &RawRecord) -> Result<Self, NotSaved> {
        if !record.passed() {
            return Err(NotSaved::Failed);
        }
        if record.config.mode == RunMode::Smoke {
            return Err(NotSaved::Smoke);
        }
        let round = |xs: Vec<f64>| -> Vec<f64> { xs.into_iter().map(round_significant).collect() };
        let device = record.device_timed();
        let measured: Vec<_> = record
            .processes
            .iter()
            .filter_map(|p| Some((p, p.measurement.as_ref()?)))
            .filter(|(_, m)| !m.samples.is_empty())
            .collect();
        let kernel_timed = measured.iter().all(|(_, m)| m.kernel.is_some());
        let processes: Vec<ProcessSamples> = measured
            .iter()
            .map(|&(p, m)| ProcessSamples {
                wall_ns: round(m.wall_per_iter()),
                host_ns: round(m.host_per_iter()),
                device_ns: device.then(|| round(m.device_per_iter().unwrap_or_default())),
                kernel_ns: kernel_timed.then(|| round(m.per_iter(TimeKind::Kernel))),
                sm_clock_mhz: m.sm_clocks_mhz(),
                power_capped_samples: power_capped_samples(m),
                energy_j: process_energy(m).map(round),
                memory_clock_mhz: crate::peaks::process_memory_clock_mhz(p)
                    .map(|mhz| mhz.round() as u32),
                memory: ProcessMemory::of(m),
            })
            .collect();
        let kernels: Vec<KernelStat> = record
            .kernel_table()
            .into_iter()
            .map(|k| KernelStat {
                count_per_call: round_significant(k.count_per_call),
                ns_per_call: round_significant(k.ns_per_call),
                ..k
            })
            .collect();
        let counters = record.counters();
        if processes.is_empty() {
            return Err(NotSaved::NoSamples);
        }
        if !processes.iter().all(ProcessSamples::all_valid) {
            return Err(NotSaved::InvalidSamples);
        }
        let bound = record.bound();
        let estimates = estimates_of(&processes, record.run_floor());
        Ok(BaselineEntry {
            format_version: BASELINE_FORMAT_VERSION,
            id: record.id.clone(),
            target: None,
            fingerprint: record.fingerprint.clone(),
            config: Some(record.config.clone()),
            bound: Some(bound),
            contended: record.contended(),
            processes,
            kernels,
            counters,
            throughput: record.first_measurement().and_then(|m| m.throughput),
            estimates,
        })
    }

    /// What its time rested on: [`Bound::Cpu`] for a file saved on the CPU device
    /// (files saved before the CPU device was its own case say `host`), else as
    /// saved.
    pub fn effective_bound(&self) -> Option<Bound> {
        if self.fingerprint.device.on_cpu() {
            Some(Bound::Cpu)
        } else {
            self.bound
        }
    }

    /// Device time when every process recorded it, else wall time: as
    /// [`RawRecord::primary_kind`].
    pub fn primary_kind(&self) -> TimeKind {
        let all_device = self
            .processes
            .iter()
            .all(|p| p.device_ns.as_ref().is_some_and(|d| !d.is_empty()));
        if all_device && !self.processes.is_empty() {
            TimeKind::Device
        } else {
            TimeKind::Wall
        }
    }

    /// The mean SM clock over every sample, MHz, when every process read it.
    pub fn mean_sm_clock_mhz(&self) -> Option<f64> {
        let groups: Option<Vec<Vec<u32>>> = self
            .processes
            .iter()
            .map(|p| p.sm_clock_mhz.clone())
            .collect();
        gpubench_record::telemetry::mean_clock_mhz(&groups?)
    }

    /// The share of its samples that ran power-capped, when every process read the
    /// GPU's clock: as [`power_capped_share`].
    pub fn power_capped_share(&self) -> Option<f64> {
        let read: Option<usize> = self
            .processes
            .iter()
            .map(|p| p.sm_clock_mhz.as_ref().map(Vec::len))
            .sum();
        let capped: usize = self.processes.iter().map(|p| p.power_capped_samples).sum();
        read.filter(|&n| n > 0).map(|n| capped as f64 / n as f64)
    }

    /// The energy per call of each window, J, one group per process, when every
    /// process measured energy: as [`energy_groups`].
    pub fn energy_groups(&self) -> Option<Vec<Vec<f64>>> {
        let groups: Option<Vec<Vec<f64>>> =
            self.processes.iter().map(|p| p.energy_j.clone()).collect();
        groups.filter(|g| !g.is_empty() && g.iter().all(|p| !p.is_empty()))
    }

    /// Its rate as a share of the device's peak at the clock it ran (as the run
    /// summary's `peak`): the declared work at the primary estimate, against the peak
    /// scaled to the mean SM clock (a memory-bandwidth share to the processes' mean
    /// memory clock, where kept); `None` without declared FLOPs or bytes, or on a
    /// device or element type the peak table lacks.
    pub fn peak_share(&self) -> Option<PeakShare> {
        let memory: Vec<f64> = self
            .processes
            .iter()
            .filter_map(|p| p.memory_clock_mhz.map(f64::from))
            .collect();
        PeakShare::of_id(
            &self.fingerprint.device.name,
            self.throughput?,
            self.estimates.estimate_ns.point,
            &self.id,
            self.mean_sm_clock_mhz(),
            (!memory.is_empty()).then(|| memory.iter().sum::<f64>() / memory.len() as f64),
        )
    }

    /// The times of timer `kind`, one group per process (empty where absent).
    pub fn groups(&self, kind: TimeKind) -> Vec<Vec<f64>> {
        self.processes
            .iter()
            .map(|p| p.get(kind).map(<[f64]>::to_vec).unwrap_or_default())
            .collect()
    }

    /// Each process's memory, when every process has it (the device had an
    /// allocator).
    pub fn memory(&self) -> Option<Vec<ProcessMemory>> {
        self.processes.iter().map(|p| p.memory).collect()
    }

    /// Serialises to pretty JSON with a trailing newline.
    pub fn to_json_pretty(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("baseline entries always serialise");
        s.push('\n');
        s
    }

    /// Parses and checks an entry, refusing newer versions and reading version 1 as
    /// one process; `origin` names the source in errors.
    pub fn from_json(text: &str, origin: &str) -> Result<Self, BaselineError> {
        #[derive(Deserialize)]
        struct Versioned {
            format_version: u32,
        }
        let parse_err = |source| BaselineError::Parse {
            path: origin.to_string(),
            source,
        };
        let v: Versioned = serde_json::from_str(text).map_err(parse_err)?;
        Self::from_json_version(text, origin, v.format_version)
    }

    /// [`BaselineEntry::from_json`] of a text whose `format_version` was read already.
    pub(crate) fn from_json_version(
        text: &str,
        origin: &str,
        format_version: u32,
    ) -> Result<Self, BaselineError> {
        let parse_err = |source| BaselineError::Parse {
            path: origin.to_string(),
            source,
        };
        if format_version > BASELINE_FORMAT_VERSION {
            return Err(BaselineError::TooNew {
                path: origin.to_string(),
                found: format_version,
                supported: BASELINE_FORMAT_VERSION,
            });
        }
        let entry: BaselineEntry = if format_version < 2 {
            serde_json::from_str::<BaselineEntryV1>(text)
                .map_err(parse_err)?
                .into()
        } else {
            serde_json::from_str(text).map_err(parse_err)?
        };
        entry.check().map_err(|reason| BaselineError::Invalid {
            path: origin.to_string(),
            reason,
        })?;
        Ok(entry)
    }

    /// Checks what JSON's types cannot: consistent, non-empty, valid times.
    fn check(&self) -> Result<(), String> {
        if self.id.is_empty() {
            return Err("the benchmark id is empty".into());
        }
        if self.processes.is_empty() {
            return Err("it has no processes".into());
        }
        for (i, p) in self.processes.iter().enumerate() {
            let n = p.wall_ns.len();
            if n == 0 {
                return Err(format!("process {} has no samples", i + 1));
            }
            if p.host_ns.len() != n || p.device_ns.as_ref().is_some_and(|d| d.len() != n) {
                return Err(format!(
                    "the sample lists of process {} differ in length ({n} wall, {} host, {} device)",
                    i + 1,
                    p.host_ns.len(),
                    p.device_ns.as_ref().map_or(0, Vec::len)
                ));
            }
            if !p.all_valid() {
                return Err(format!(
                    "a time of process {} is negative or not finite",
                    i + 1
                ));
            }
        }
        Ok(())
    }
}

/// A baseline file as format version 1 wrote it: the samples of one process.
#[derive(Deserialize)]
struct BaselineEntryV1 {
    id: String,
    fingerprint: Fingerprint,
    samples: ProcessSamples,
}

impl From<BaselineEntryV1> for BaselineEntry {
    fn from(v1: BaselineEntryV1) -> Self {
        let processes = vec![v1.samples];
        BaselineEntry {
            format_version: BASELINE_FORMAT_VERSION,
            id: v1.id,
            target: None,
            fingerprint: v1.fingerprint,
            config: None,
            bound: None,
            contended: false,
            estimates: estimates_of(&processes, Bound::Device.run_floor()),
            processes,
            kernels: Vec::new(),
            counters: None,
            throughput: None,
        }
    }
}

/// The estimates of `processes`, whose interval is at least `floor` (relative) either
/// side ([`RawRecord::run_floor`]).
fn estimates_of(processes: &[ProcessSamples], floor: f64) -> BaselineEstimates {
    let entry_kind = {
        let all_device = processes
            .iter()
            .all(|p| p.device_ns.as_ref().is_some_and(|d| !d.is_empty()));
        if all_device {
            TimeKind::Device
        } else {
            TimeKind::Wall
        }
    };
    let groups: Vec<Vec<f64>> = processes
        .iter()
        .map(|p| p.get(entry_kind).unwrap_or(&p.wall_ns).to_vec())
        .collect();
    let stats = ProcessStats::from_groups(&groups);
    let round = |e: Estimate| Estimate {
        point: round_significant(e.point),
        lower: round_significant(e.lower),
        upper: round_significant(e.upper),
        confidence: e.confidence,
    };
    let (estimate, basis) = stats
        .estimate(&groups[0], BootstrapConfig::default(), floor)
        .unwrap_or((
            Estimate {
                point: f64::NAN,
                lower: f64::NAN,
                upper: f64::NAN,
                confidence: 0.95,
            },
            EstimateBasis::OneProcess,
        ));
    let finite = |x: Option<f64>| x.map(round_significant).filter(|x| x.is_finite());
    BaselineEstimates {
        primary: entry_kind,
        estimate_ns: round(estimate),
        basis,
        processes: stats.count,
        between: finite(stats.between),
        within: finite(stats.within),
    }
}
