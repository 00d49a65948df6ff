//! Saved baselines: the committed on-disk format, the store under
//! `gpubench/baselines/<name>/`, comparing a run with a baseline, and whether the
//! outcome should fail CI.
//!
//! # Format
//!
//! One pretty-printed JSON file per benchmark,
//! `gpubench/baselines/<name>/<file_stem_for_id(id)>.json`, holding
//! `format_version`, `id`, the `fingerprint`, the measurement `config`, the
//! per-iteration times of each process (`processes`: wall, host and, when measured,
//! device; ns) and the primary timer's `estimates`. Files are made for clean git diffs:
//! keys come from structs, so their order is fixed; every time is rounded to
//! [`SIGNIFICANT_DIGITS`] significant digits (far below the ~1% noise of a GPU timing,
//! and short enough to read), and estimates are computed from the rounded samples, so
//! loading and re-saving a baseline reproduces it byte for byte. A version 1 file (from
//! before processes were kept apart) is read as one process; a comparison with it is
//! ambiguous until it is saved again.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::compare::{compare_processes, CompareConfig, CompareError, Comparison, Verdict};
use crate::failure::Failure;
use crate::kernels::{
    counter_changes, kernel_changes, CounterChange, Counters, KernelChange, KernelStat,
};
use crate::processes::{Bound, EstimateBasis, ProcessStats};
use crate::record::{file_stem_for_id, Fingerprint, MeasurementConfig, RawRecord, RunMode};
use crate::stats::{BootstrapConfig, Estimate};
use crate::summary::TimeKind;

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

    /// Whether every time is finite and non-negative.
    fn all_valid(&self) -> bool {
        let optional_valid = [&self.device_ns, &self.kernel_ns]
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
    /// Where and with what it ran.
    pub fingerprint: Fingerprint,
    /// The settings it was measured with; absent in files from before they were kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<MeasurementConfig>,
    /// What its time rested on (absent in files from before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound: Option<Bound>,
    /// The per-iteration times of each process, in the order the processes ran.
    pub processes: Vec<ProcessSamples>,
    /// The kernels, copies and memsets of one call, averaged over processes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kernels: Vec<KernelStat>,
    /// Exact counts per call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counters: Option<Counters>,
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
            .measurements()
            .filter(|m| !m.samples.is_empty())
            .collect();
        let kernel_timed = measured.iter().all(|m| m.kernel.is_some());
        let processes: Vec<ProcessSamples> = measured
            .iter()
            .map(|m| ProcessSamples {
                wall_ns: round(m.wall_per_iter()),
                host_ns: round(m.host_per_iter()),
                device_ns: device.then(|| round(m.device_per_iter().unwrap_or_default())),
                kernel_ns: kernel_timed.then(|| round(m.per_iter(TimeKind::Kernel))),
                sm_clock_mhz: m.sm_clocks_mhz(),
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
        let estimates = estimates_of(&processes, bound);
        Ok(BaselineEntry {
            format_version: BASELINE_FORMAT_VERSION,
            id: record.id.clone(),
            fingerprint: record.fingerprint.clone(),
            config: Some(record.config.clone()),
            bound: Some(bound),
            processes,
            kernels,
            counters,
            estimates,
        })
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
        crate::telemetry::mean_clock_mhz(&groups?)
    }

    /// The times of timer `kind`, one group per process (empty where absent).
    pub fn groups(&self, kind: TimeKind) -> Vec<Vec<f64>> {
        self.processes
            .iter()
            .map(|p| p.get(kind).map(<[f64]>::to_vec).unwrap_or_default())
            .collect()
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
        if v.format_version > BASELINE_FORMAT_VERSION {
            return Err(BaselineError::TooNew {
                path: origin.to_string(),
                found: v.format_version,
                supported: BASELINE_FORMAT_VERSION,
            });
        }
        let entry: BaselineEntry = if v.format_version < 2 {
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
            fingerprint: v1.fingerprint,
            config: None,
            bound: None,
            estimates: estimates_of(&processes, Bound::Device),
            processes,
            kernels: Vec::new(),
            counters: None,
        }
    }
}

fn estimates_of(processes: &[ProcessSamples], bound: Bound) -> BaselineEstimates {
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
        .estimate(&groups[0], BootstrapConfig::default(), bound.run_floor())
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

/// What [`BaselineStore::save`] did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SaveReport {
    /// The baseline's directory.
    pub dir: PathBuf,
    /// Files written, in record order.
    pub written: Vec<PathBuf>,
    /// Records not saved and why; their previous files, if any, are kept.
    pub skipped: Vec<(String, NotSaved)>,
    /// The ids of `skipped` whose previous file is kept (the others have none).
    pub kept: Vec<String>,
}

/// A loaded baseline and the files of its directory that were not baseline files.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedEntries {
    /// Every benchmark, sorted by id.
    pub entries: Vec<BaselineEntry>,
    /// JSON files without a baseline's `id` and `format_version`, ignored.
    pub ignored: Vec<PathBuf>,
}

/// The baselines of a workspace: one directory per name under `root`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BaselineStore {
    /// The directory holding one directory per baseline, usually
    /// `<workspace>/gpubench/baselines`.
    pub root: PathBuf,
}

impl BaselineStore {
    /// A store rooted at `root`.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        BaselineStore { root: root.into() }
    }

    /// The store of a workspace: `<workspace_root>/gpubench/baselines`.
    pub fn for_workspace(workspace_root: &Path) -> Self {
        Self::new(workspace_root.join("gpubench").join("baselines"))
    }

    /// The directory of baseline `name`, after checking the name.
    pub fn dir(&self, name: &str) -> Result<PathBuf, BaselineError> {
        validate_name(name)?;
        Ok(self.root.join(name))
    }

    /// Saves one file per measured record into baseline `name`, creating it when
    /// needed, as one change ([`crate::atomic_dir`]): a reader, or a save killed at
    /// any point, sees the baseline entirely as it was or entirely as saved. Files of
    /// other benchmarks are kept, and so are those of records that are skipped.
    pub fn save(&self, name: &str, records: &[RawRecord]) -> Result<SaveReport, BaselineError> {
        let dir = self.dir(name)?;
        let mut entries = Vec::new();
        let mut skipped = Vec::new();
        let mut by_stem: HashMap<String, &str> = HashMap::new();
        for record in records {
            let stem = file_stem_for_id(&record.id);
            if let Some(first) = by_stem.insert(stem.clone(), &record.id) {
                return Err(if first == record.id {
                    BaselineError::DuplicateRecord {
                        id: record.id.clone(),
                    }
                } else {
                    BaselineError::FileClash {
                        first: first.to_string(),
                        second: record.id.clone(),
                        file: format!("{stem}.json"),
                    }
                });
            }
            match BaselineEntry::from_record(record) {
                Ok(entry) => entries.push((stem, entry)),
                Err(why) => skipped.push((record.id.clone(), why)),
            }
        }
        let current = crate::atomic_dir::readable(&dir);
        let kept = skipped
            .iter()
            .filter(|(id, _)| {
                current
                    .as_ref()
                    .is_some_and(|d| d.join(format!("{}.json", file_stem_for_id(id))).is_file())
            })
            .map(|(id, _)| id.clone())
            .collect();
        let files: Vec<(String, Vec<u8>)> = entries
            .iter()
            .map(|(stem, entry)| (format!("{stem}.json"), entry.to_json_pretty().into_bytes()))
            .collect();
        if !files.is_empty() {
            std::fs::create_dir_all(&self.root).map_err(|source| BaselineError::Io {
                action: "create baseline directory",
                path: self.root.display().to_string(),
                source,
            })?;
            crate::atomic_dir::replace_files(&dir, &files).map_err(|source| BaselineError::Io {
                action: "save baseline",
                path: dir.display().to_string(),
                source,
            })?;
        }
        let written = files.iter().map(|(f, _)| dir.join(f)).collect();
        Ok(SaveReport {
            dir,
            written,
            skipped,
            kept,
        })
    }

    /// Loads every benchmark of baseline `name`, sorted by id. Any unreadable, corrupt,
    /// truncated or newer baseline file is an error naming it; JSON files that are not
    /// baseline files are left out ([`BaselineStore::load_noting`] names them).
    pub fn load(&self, name: &str) -> Result<Vec<BaselineEntry>, BaselineError> {
        self.load_noting(name).map(|l| l.entries)
    }

    /// [`BaselineStore::load`], with the files it ignored.
    pub fn load_noting(&self, name: &str) -> Result<LoadedEntries, BaselineError> {
        let named = self.dir(name)?;
        // A save killed between its two renames leaves the old files beside it.
        let Some(dir) = crate::atomic_dir::readable(&named) else {
            return Err(BaselineError::NotFound {
                name: name.to_string(),
                path: named.display().to_string(),
            });
        };
        let io_err = |action, path: &Path| {
            let path = path.display().to_string();
            move |source| BaselineError::Io {
                action,
                path,
                source,
            }
        };
        let mut files = Vec::new();
        for item in std::fs::read_dir(&dir).map_err(io_err("read baseline directory", &dir))? {
            let path = item
                .map_err(io_err("read baseline directory", &dir))?
                .path();
            let file_name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            // Leading dots are temporary files of an interrupted save.
            if file_name.ends_with(".json") && !file_name.starts_with('.') && path.is_file() {
                files.push(path);
            }
        }
        files.sort();
        let mut entries: Vec<BaselineEntry> = Vec::with_capacity(files.len());
        let mut ignored = Vec::new();
        let mut seen: HashMap<String, PathBuf> = HashMap::new();
        for path in files {
            let text =
                std::fs::read_to_string(&path).map_err(io_err("read baseline file", &path))?;
            if !looks_like_a_baseline(&text) {
                ignored.push(path);
                continue;
            }
            let entry = BaselineEntry::from_json(&text, &path.display().to_string())?;
            if let Some(first) = seen.insert(entry.id.clone(), path.clone()) {
                return Err(BaselineError::DuplicateId {
                    id: entry.id,
                    first: first.display().to_string(),
                    second: path.display().to_string(),
                });
            }
            entries.push(entry);
        }
        entries.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(LoadedEntries { entries, ignored })
    }

    /// Names of the saved baselines, sorted; none when the store does not exist yet.
    pub fn list(&self) -> Result<Vec<String>, BaselineError> {
        if !self.root.exists() {
            return Ok(Vec::new());
        }
        let io_err = |source| BaselineError::Io {
            action: "read baseline store",
            path: self.root.display().to_string(),
            source,
        };
        let mut names = Vec::new();
        for item in std::fs::read_dir(&self.root).map_err(io_err)? {
            let item = item.map_err(io_err)?;
            if let Some(name) = item.file_name().to_str() {
                if validate_name(name).is_ok() && item.path().is_dir() {
                    names.push(name.to_string());
                }
            }
        }
        names.sort();
        Ok(names)
    }
}

/// Whether `text` is meant as a baseline file: a JSON object with an `id` and a
/// `format_version`. Anything that is not valid JSON counts as one (a truncated
/// baseline file must be an error, not skipped).
fn looks_like_a_baseline(text: &str) -> bool {
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(serde_json::Value::Object(map)) => {
            map.contains_key("id") && map.contains_key("format_version")
        }
        Ok(_) => false,
        Err(_) => true,
    }
}

/// How [`compare_with_baseline`] compares.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct BaselineCompareOptions {
    /// The statistical settings.
    pub config: CompareConfig,
    /// Compare even when the device models differ (the set records each mismatch).
    pub allow_device_mismatch: bool,
    /// Compare even when the two sides were measured with settings that move the
    /// figures ([`MeasurementConfig::differences_that_move_figures`]; the set records
    /// each mismatch); otherwise such a benchmark is not compared.
    #[serde(default)]
    pub allow_settings_mismatch: bool,
}

/// A benchmark compared although its two sides were measured with settings that
/// move the figures, because [`BaselineCompareOptions::allow_settings_mismatch`] was
/// set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OtherSettings {
    /// The benchmark id.
    pub id: String,
    /// How the settings differ, in words.
    pub differences: Vec<String>,
}

/// A benchmark whose two sides ran at clearly different SM clocks (mean over their
/// samples; see [`crate::telemetry::CLOCK_DIFFERENCE_FRACTION`]): a change may be the
/// clock's, not the code's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OtherClocks {
    /// The benchmark id.
    pub id: String,
    /// The baseline's mean SM clock, MHz.
    pub baseline_mhz: f64,
    /// This run's mean SM clock, MHz.
    pub current_mhz: f64,
}

impl OtherClocks {
    /// In words: `1410 MHz here, 1980 MHz in the baseline`.
    pub fn describe(&self) -> String {
        format!(
            "the GPU ran at {:.0} MHz here, {:.0} MHz in the baseline (mean SM clock)",
            self.current_mhz, self.baseline_mhz
        )
    }
}

/// A benchmark measured on another device model than its baseline, compared because
/// [`BaselineCompareOptions::allow_device_mismatch`] was set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CrossDevice {
    /// The benchmark id.
    pub id: String,
    /// The baseline's device model.
    pub baseline_device: String,
    /// This run's device model.
    pub current_device: String,
}

/// What became of one benchmark present in both the run and the baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum ComparisonOutcome {
    /// Compared.
    Compared {
        /// The timer compared: device when both sides have it, else wall.
        kind: TimeKind,
        /// The result.
        comparison: Comparison,
        /// Kernel time against the baseline's, when both sides measured it (judged
        /// like device-bound work: it is the GPU's own).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        kernel: Option<Box<Comparison>>,
        /// The counters per call that differ (empty: all equal), when both sides
        /// counted.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        counters: Option<Vec<CounterChange>>,
        /// The kernels that are new, gone, or moved, when both sides have a table.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        kernel_changes: Vec<KernelChange>,
    },
    /// The benchmark failed in this run.
    Failed {
        /// Why.
        failure: Failure,
    },
    /// It could not be compared (a smoke run, no samples, unusable samples).
    NotCompared {
        /// Why, as a lower-case fragment.
        reason: String,
    },
}

/// One benchmark's comparison with its baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchmarkComparison {
    /// The benchmark id.
    pub id: String,
    /// What became of it.
    pub outcome: ComparisonOutcome,
}

impl BenchmarkComparison {
    /// The verdict on time, when compared.
    pub fn verdict(&self) -> Option<Verdict> {
        self.verdict_of(Metric::Time)
    }

    /// The verdict on `metric`, when it was compared.
    pub fn verdict_of(&self, metric: Metric) -> Option<Verdict> {
        self.outcome.verdict_of(metric)
    }
}

impl ComparisonOutcome {
    /// The verdict on `metric`, when it was compared: for the counters, regressed when
    /// any count per call went up, improved when some went down and none up.
    pub fn verdict_of(&self, metric: Metric) -> Option<Verdict> {
        let ComparisonOutcome::Compared {
            comparison,
            kernel,
            counters,
            ..
        } = self
        else {
            return None;
        };
        match metric {
            Metric::Time => Some(comparison.verdict),
            Metric::Kernel => kernel.as_ref().map(|k| k.verdict),
            Metric::Counters => counters.as_ref().map(|c| counters_verdict(c)),
        }
    }
}

/// Regressed when a count went up, improved when some went down and none up, else no
/// change.
pub fn counters_verdict(changes: &[CounterChange]) -> Verdict {
    if changes.iter().any(CounterChange::is_increase) {
        Verdict::Regressed
    } else if changes.is_empty() {
        Verdict::NoChange
    } else {
        Verdict::Improved
    }
}

/// What a verdict is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// The benchmark's time: device time when measured, else synced wall time.
    Time,
    /// Kernel time: the GPU's own work per call.
    Kernel,
    /// The exact counts per call (kernels, copies, syncs, allocations).
    Counters,
}

impl Metric {
    /// Every metric, in the order tables show them.
    pub const ALL: [Metric; 3] = [Metric::Time, Metric::Kernel, Metric::Counters];

    /// The word used on the command line and in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Metric::Time => "time",
            Metric::Kernel => "kernel",
            Metric::Counters => "counters",
        }
    }
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The metrics a gate looks at; every one by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Gate {
    /// The benchmark's time.
    pub time: bool,
    /// Kernel time.
    pub kernel: bool,
    /// The exact counters.
    pub counters: bool,
}

impl Default for Gate {
    fn default() -> Self {
        Gate {
            time: true,
            kernel: true,
            counters: true,
        }
    }
}

impl Gate {
    /// A gate on `metrics`.
    pub fn of(metrics: &[Metric]) -> Self {
        Gate {
            time: metrics.contains(&Metric::Time),
            kernel: metrics.contains(&Metric::Kernel),
            counters: metrics.contains(&Metric::Counters),
        }
    }

    /// Whether the gate looks at `metric`.
    pub fn contains(&self, metric: Metric) -> bool {
        match metric {
            Metric::Time => self.time,
            Metric::Kernel => self.kernel,
            Metric::Counters => self.counters,
        }
    }

    /// The metrics it looks at, in [`Metric::ALL`]'s order.
    pub fn metrics(&self) -> Vec<Metric> {
        Metric::ALL
            .into_iter()
            .filter(|&m| self.contains(m))
            .collect()
    }
}

impl fmt::Display for Gate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let words: Vec<&str> = self.metrics().iter().map(|m| m.as_str()).collect();
        f.write_str(&words.join(","))
    }
}

/// An unknown [`Metric`] word.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("unknown metric {0:?}: expected `time`, `kernel` or `counters`")]
pub struct UnknownMetric(pub String);

impl FromStr for Metric {
    type Err = UnknownMetric;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Metric::ALL
            .into_iter()
            .find(|m| m.as_str() == s)
            .ok_or_else(|| UnknownMetric(s.to_string()))
    }
}

/// How many benchmarks of a set ended each way.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerdictCounts {
    /// Compared and improved.
    pub improved: usize,
    /// Compared and regressed.
    pub regressed: usize,
    /// Compared, no change.
    pub no_change: usize,
    /// Compared, too noisy to tell.
    pub ambiguous: usize,
    /// Failed in this run.
    pub failed: usize,
    /// Present on both sides but not compared.
    pub not_compared: usize,
}

/// A run compared with a baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComparisonSet {
    /// Benchmarks present on both sides, in the run's order.
    pub comparisons: Vec<BenchmarkComparison>,
    /// Ids run now that the baseline lacks (new benchmarks), in the run's order.
    pub missing_in_baseline: Vec<String>,
    /// Ids in the baseline that were not run now, sorted.
    pub missing_in_current: Vec<String>,
    /// Benchmarks compared across device models by request.
    pub cross_device: Vec<CrossDevice>,
    /// Benchmarks compared across settings that move the figures, by request.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub other_settings: Vec<OtherSettings>,
    /// Benchmarks compared whose two sides ran at clearly different SM clocks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub other_clocks: Vec<OtherClocks>,
}

impl ComparisonSet {
    /// How many benchmarks ended each way.
    pub fn counts(&self) -> VerdictCounts {
        let mut c = VerdictCounts::default();
        for b in &self.comparisons {
            match &b.outcome {
                ComparisonOutcome::Compared { comparison, .. } => match comparison.verdict {
                    Verdict::Improved => c.improved += 1,
                    Verdict::Regressed => c.regressed += 1,
                    Verdict::NoChange => c.no_change += 1,
                    Verdict::Ambiguous => c.ambiguous += 1,
                },
                ComparisonOutcome::Failed { .. } => c.failed += 1,
                ComparisonOutcome::NotCompared { .. } => c.not_compared += 1,
            }
        }
        c
    }
}

/// Compares current records with a baseline's entries, matched by id. Ids on one side
/// only are listed, not errors. A benchmark whose device model
/// (`fingerprint.device.name`) differs from its baseline's is an error unless
/// [`BaselineCompareOptions::allow_device_mismatch`] is set.
pub fn compare_with_baseline(
    current: &[RawRecord],
    baseline: &[BaselineEntry],
    options: &BaselineCompareOptions,
) -> Result<ComparisonSet, BaselineError> {
    options.config.validate()?;
    let by_id: HashMap<&str, &BaselineEntry> =
        baseline.iter().map(|e| (e.id.as_str(), e)).collect();
    let current_ids: HashSet<&str> = current.iter().map(|r| r.id.as_str()).collect();
    let mut set = ComparisonSet {
        comparisons: Vec::new(),
        missing_in_baseline: Vec::new(),
        missing_in_current: Vec::new(),
        cross_device: Vec::new(),
        other_settings: Vec::new(),
        other_clocks: Vec::new(),
    };
    for record in current {
        let Some(entry) = by_id.get(record.id.as_str()) else {
            set.missing_in_baseline.push(record.id.clone());
            continue;
        };
        let outcome = match (record.failure(), record.first_measurement()) {
            (Some(failure), _) => ComparisonOutcome::Failed {
                failure: failure.clone(),
            },
            (None, None) => not_compared("the run has no measurement"),
            (None, Some(_)) if record.config.mode == RunMode::Smoke => {
                not_compared("a smoke run measures nothing")
            }
            (None, Some(_)) => {
                let (was, now) = (
                    &entry.fingerprint.device.name,
                    &record.fingerprint.device.name,
                );
                if was != now {
                    if !options.allow_device_mismatch {
                        return Err(BaselineError::DeviceMismatch {
                            id: record.id.clone(),
                            baseline_device: was.clone(),
                            current_device: now.clone(),
                        });
                    }
                    set.cross_device.push(CrossDevice {
                        id: record.id.clone(),
                        baseline_device: was.clone(),
                        current_device: now.clone(),
                    });
                }
                let differences = entry
                    .config
                    .as_ref()
                    .map(|was| record.config.differences_that_move_figures(was))
                    .unwrap_or_default();
                if !differences.is_empty() {
                    if !options.allow_settings_mismatch {
                        set.comparisons.push(BenchmarkComparison {
                            id: record.id.clone(),
                            outcome: not_compared(&format!(
                                "measured with other settings ({}), which move the figures: \
                                 measure both sides alike, or --allow-settings-mismatch",
                                differences.join("; ")
                            )),
                        });
                        continue;
                    }
                    set.other_settings.push(OtherSettings {
                        id: record.id.clone(),
                        differences,
                    });
                }
                let kind = match (record.primary_kind(), entry.primary_kind()) {
                    (TimeKind::Device, TimeKind::Device) => TimeKind::Device,
                    _ => TimeKind::Wall,
                };
                let now_times = record.groups(kind);
                let was_times = entry.groups(kind);
                let bound = match (record.bound(), entry.bound) {
                    (Bound::Host, _) | (_, Some(Bound::Host)) => Bound::Host,
                    _ => Bound::Device,
                };
                if let (Some(was), Some(now)) =
                    (entry.mean_sm_clock_mhz(), record.mean_sm_clock_mhz())
                {
                    if crate::telemetry::clearly_different_clocks(was, now) {
                        set.other_clocks.push(OtherClocks {
                            id: record.id.clone(),
                            baseline_mhz: was,
                            current_mhz: now,
                        });
                    }
                }
                match compare_processes(&was_times, &now_times, bound, &options.config) {
                    Ok(comparison) => {
                        let (kernel, counters, kernel_changes) =
                            compare_kernels(record, entry, &options.config);
                        ComparisonOutcome::Compared {
                            kind,
                            comparison,
                            kernel,
                            counters,
                            kernel_changes,
                        }
                    }
                    Err(e) => not_compared(&e.to_string()),
                }
            }
        };
        set.comparisons.push(BenchmarkComparison {
            id: record.id.clone(),
            outcome,
        });
    }
    set.missing_in_current = baseline
        .iter()
        .filter(|e| !current_ids.contains(e.id.as_str()))
        .map(|e| e.id.clone())
        .collect();
    set.missing_in_current.sort();
    Ok(set)
}

/// Kernel time, counters and the kernel table of `record` against `entry`'s, each when
/// both sides have it.
fn compare_kernels(
    record: &RawRecord,
    entry: &BaselineEntry,
    config: &CompareConfig,
) -> (
    Option<Box<Comparison>>,
    Option<Vec<CounterChange>>,
    Vec<KernelChange>,
) {
    let measured: Vec<_> = record.measurements().collect();
    let now_kernel = record.groups(TimeKind::Kernel);
    let was_kernel = entry.groups(TimeKind::Kernel);
    let both_timed = !measured.is_empty()
        && measured.iter().all(|m| m.kernel.is_some())
        && was_kernel.iter().all(|g| !g.is_empty())
        && !was_kernel.is_empty();
    // Kernel time is the GPU's own work, so it is judged like device-bound time.
    let kernel = both_timed
        .then(|| compare_processes(&was_kernel, &now_kernel, Bound::Device, config).ok())
        .flatten()
        .map(Box::new);
    let counters = match (&entry.counters, record.counters()) {
        (Some(was), Some(now)) => Some(counter_changes(was, &now)),
        _ => None,
    };
    let now_table = record.kernel_table();
    let changes = if entry.kernels.is_empty() || now_table.is_empty() {
        Vec::new()
    } else {
        kernel_changes(&entry.kernels, &now_table)
    };
    (kernel, counters, changes)
}

fn not_compared(reason: &str) -> ComparisonOutcome {
    ComparisonOutcome::NotCompared {
        reason: reason.to_string(),
    }
}

/// Which comparison outcomes fail a CI run.
///
/// * [`FailOn::Regressed`] (the default): a regressed benchmark fails the run.
/// * [`FailOn::Ambiguous`]: strict; regressed, ambiguous and not-compared benchmarks
///   all fail it, since none of them shows the code is as fast as before.
/// * [`FailOn::Never`]: report only.
///
/// Benchmarks that failed to run are not counted here: a failed benchmark has its own
/// exit status, whatever this says.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailOn {
    /// Fail on regressions.
    #[default]
    Regressed,
    /// Fail on regressions and on anything that cannot be told apart from one.
    Ambiguous,
    /// Never fail on a comparison.
    Never,
}

impl FailOn {
    /// Every value, for help texts.
    pub const ALL: [FailOn; 3] = [FailOn::Regressed, FailOn::Ambiguous, FailOn::Never];

    /// The word used on the command line and in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            FailOn::Regressed => "regressed",
            FailOn::Ambiguous => "ambiguous",
            FailOn::Never => "never",
        }
    }

    /// Whether a benchmark with `verdict` fails the run.
    pub fn fails(self, verdict: Verdict) -> bool {
        match self {
            FailOn::Regressed => verdict == Verdict::Regressed,
            FailOn::Ambiguous => matches!(verdict, Verdict::Regressed | Verdict::Ambiguous),
            FailOn::Never => false,
        }
    }

    /// Whether benchmark `b` fails the run on the metrics of `gate`; see the type's
    /// docs. A metric a benchmark has no verdict on (no kernel time on either side)
    /// does not count.
    pub fn trips(self, b: &BenchmarkComparison, gate: &Gate) -> bool {
        match &b.outcome {
            ComparisonOutcome::Compared { .. } => gate
                .metrics()
                .into_iter()
                .filter_map(|m| b.verdict_of(m))
                .any(|v| self.fails(v)),
            ComparisonOutcome::NotCompared { .. } => self == FailOn::Ambiguous,
            ComparisonOutcome::Failed { .. } => false,
        }
    }

    /// Whether `set` fails the run on the metrics of `gate`.
    pub fn should_fail(self, set: &ComparisonSet, gate: &Gate) -> bool {
        set.comparisons.iter().any(|b| self.trips(b, gate))
    }
}

impl fmt::Display for FailOn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An unknown [`FailOn`] word.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("unknown fail-on mode {0:?}: expected `regressed`, `ambiguous` or `never`")]
pub struct UnknownFailOn(pub String);

impl FromStr for FailOn {
    type Err = UnknownFailOn;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        FailOn::ALL
            .into_iter()
            .find(|f| f.as_str() == s)
            .ok_or_else(|| UnknownFailOn(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::failure::FailureKind;
    use crate::kernels::Counter;
    use crate::synthetic::{GpuLikeSamples, ProcessShift, SyntheticKernels};
    use rand::SeedableRng;
    use rand_pcg::Pcg64Mcg;

    const H200: &str = "NVIDIA H200";

    fn records(ids: &[&str], slowdown: f64, seed: u64) -> Vec<RawRecord> {
        let mut rng = Pcg64Mcg::seed_from_u64(seed);
        let model = GpuLikeSamples::default()
            .with_shift(ProcessShift::LogNormal { sigma: 0.005 })
            .scaled(slowdown);
        ids.iter()
            .map(|id| model.record_processes(id, H200, 3, 30, &mut rng))
            .collect()
    }

    fn store() -> (tempfile::TempDir, BaselineStore) {
        let tmp = tempfile::tempdir().unwrap();
        let store = BaselineStore::for_workspace(tmp.path());
        (tmp, store)
    }

    #[test]
    fn save_then_load_round_trips_and_is_byte_stable() {
        let (_tmp, store) = store();
        let recs = records(&["matmul/4096", "conv", "attn/bf16"], 1.0, 1);
        let report = store.save("main", &recs).unwrap();
        assert_eq!(report.written.len(), 3);
        assert!(report.skipped.is_empty());
        let file = report
            .dir
            .join(format!("{}.json", file_stem_for_id("matmul/4096")));
        assert_eq!(report.written[0], file);
        assert!(file.starts_with(store.root.join("main")));
        assert!(store.root.ends_with("gpubench/baselines"));

        let loaded = store.load("main").unwrap();
        let ids: Vec<&str> = loaded.iter().map(|e| e.id.as_str()).collect();
        assert_eq!(ids, ["attn/bf16", "conv", "matmul/4096"]);
        let entry = loaded.iter().find(|e| e.id == "matmul/4096").unwrap();
        assert_eq!(entry, &BaselineEntry::from_record(&recs[0]).unwrap());
        assert_eq!(entry.fingerprint, recs[0].fingerprint);
        assert_eq!(entry.processes.len(), 3);
        assert_eq!(entry.processes[0].wall_ns.len(), 30);
        assert_eq!(entry.estimates.primary, TimeKind::Device);
        assert_eq!(entry.estimates.basis, EstimateBasis::Processes);
        assert_eq!(entry.config.as_ref(), Some(&recs[0].config));

        // Re-saving what was loaded reproduces the file byte for byte.
        let before = std::fs::read_to_string(&file).unwrap();
        assert_eq!(entry.to_json_pretty(), before);
        assert!(before.contains("\"format_version\": 2,"), "{before}");
        assert_eq!(store.list().unwrap(), ["main"]);
    }

    #[test]
    fn saved_times_have_six_significant_digits() {
        assert_eq!(round_significant(1_234_567.891), 1_234_570.0);
        assert_eq!(round_significant(0.000_123_456_78), 0.000_123_457);
        assert_eq!(round_significant(0.0), 0.0);
        let mut recs = records(&["a"], 1.0, 2);
        recs[0].rounds[0].measurement.as_mut().unwrap().samples[0].wall_ns = 10.0 * 1_234_567.891;
        let text = BaselineEntry::from_record(&recs[0])
            .unwrap()
            .to_json_pretty();
        assert!(text.contains("\n        1234570.0,\n"), "{text}");
    }

    #[test]
    fn save_keeps_other_files_and_skips_failed_records() {
        let (_tmp, store) = store();
        store.save("main", &records(&["a", "b"], 1.0, 3)).unwrap();
        let dir = store.dir("main").unwrap();
        let old_b = std::fs::read_to_string(dir.join("b.json")).unwrap();
        std::fs::write(dir.join("notes.txt"), "keep me").unwrap();

        let mut now = records(&["a", "b"], 1.1, 4);
        now[1].rounds[1].measurement = None;
        now[1].rounds[1].failure = Some(Failure::new(FailureKind::Crash, "signal 11"));
        let report = store.save("main", &now[..]).unwrap();
        assert_eq!(report.written, [dir.join("a.json")]);
        assert_eq!(report.skipped, [("b".to_string(), NotSaved::Failed)]);
        assert_eq!(report.kept, ["b"], "b's previous file is kept");
        assert_eq!(std::fs::read_to_string(dir.join("b.json")).unwrap(), old_b);
        assert!(dir.join("notes.txt").exists());
        // A failed benchmark that was never saved has no previous file to keep.
        let mut fresh = records(&["c"], 1.0, 5);
        fresh[0].rounds[0].measurement = None;
        fresh[0].rounds[0].failure = Some(Failure::new(FailureKind::Crash, "signal 11"));
        let report = store.save("main", &fresh).unwrap();
        assert!(report.kept.is_empty() && report.written.is_empty());
        let names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with('.'))
            .collect();
        assert!(names.is_empty(), "temporary files left: {names:?}");
    }

    #[test]
    fn bad_names_are_refused_with_what_a_valid_name_is() {
        let (tmp, store) = store();
        let long = "x".repeat(65);
        for name in [
            "", "..", ".hidden", "a/b", "a\\b", "../x", "a b", "ü", &long,
        ] {
            let err = store.save(name, &records(&["a"], 1.0, 5)).unwrap_err();
            assert!(
                matches!(err, BaselineError::InvalidName { .. }),
                "{name}: {err}"
            );
            let msg = err.to_string();
            assert!(
                msg.contains("a baseline name is 1 to 64 ASCII letters"),
                "{msg}"
            );
            assert!(store.load(name).is_err());
        }
        // Nothing escaped the store.
        assert!(!tmp.path().join("x").exists() && !tmp.path().join("gpubench").exists());
        for name in ["main", "pr-123", "v0.2", "a_b", "x..y"] {
            validate_name(name).unwrap();
        }
        let msg = validate_name("a/b").unwrap_err().to_string();
        assert!(msg.starts_with("invalid baseline name \"a/b\": it contains a path separator"));
    }

    #[test]
    fn corrupt_truncated_and_newer_files_are_errors_naming_the_file() {
        let (_tmp, store) = store();
        store.save("main", &records(&["a", "b"], 1.0, 6)).unwrap();
        let dir = store.dir("main").unwrap();
        let good = std::fs::read_to_string(dir.join("a.json")).unwrap();
        let file = dir.join("a.json");
        let name = file.display().to_string();

        let newer = good.replacen("\"format_version\": 2", "\"format_version\": 3", 1);
        let cases: Vec<(&str, String)> = vec![
            ("truncated", good[..good.len() / 2].to_string()),
            ("empty", String::new()),
            ("not json", "<html>".into()),
            ("newer", newer),
            ("wrong type", good.replacen("\"id\": \"a\"", "\"id\": 7", 1)),
            (
                "uneven samples",
                good.replacen("\"host_ns\": [\n", "\"host_ns\": [\n        1.0,\n", 1),
            ),
        ];
        for (what, text) in cases {
            std::fs::write(&file, &text).unwrap();
            let err = store.load("main").unwrap_err();
            let msg = err.to_string();
            assert!(msg.contains(&name), "{what}: {msg}");
            if what == "newer" {
                assert!(
                    matches!(err, BaselineError::TooNew { found: 3, .. }),
                    "{msg}"
                );
                assert!(msg.contains("upgrade"), "{msg}");
            }
        }
        std::fs::write(&file, good.replacen("\"id\": \"a\"", "\"id\": \"b\"", 1)).unwrap();
        let err = store.load("main").unwrap_err();
        assert!(matches!(err, BaselineError::DuplicateId { .. }), "{err}");
    }

    #[test]
    fn json_files_that_are_not_baseline_files_are_ignored_and_named() {
        let (_tmp, store) = store();
        store.save("main", &records(&["a"], 1.0, 7)).unwrap();
        let dir = store.dir("main").unwrap();
        std::fs::write(dir.join("settings.json"), r#"{"theme": "dark"}"#).unwrap();
        std::fs::write(dir.join("list.json"), "[1, 2]").unwrap();
        let loaded = store.load_noting("main").unwrap();
        assert_eq!(loaded.entries.len(), 1);
        assert_eq!(
            loaded.ignored,
            [dir.join("list.json"), dir.join("settings.json")]
        );
        assert_eq!(store.load("main").unwrap(), loaded.entries);
    }

    #[test]
    #[cfg(unix)]
    fn saved_files_are_readable_by_everyone() {
        use std::os::unix::fs::PermissionsExt;
        let (_tmp, store) = store();
        let report = store.save("main", &records(&["a"], 1.0, 8)).unwrap();
        let mode = std::fs::metadata(&report.written[0])
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o044, 0o044, "{mode:o}");
    }

    #[test]
    fn missing_baseline_and_empty_store() {
        let (_tmp, store) = store();
        assert!(store.list().unwrap().is_empty());
        let err = store.load("main").unwrap_err();
        assert!(matches!(err, BaselineError::NotFound { .. }));
        assert!(
            err.to_string().starts_with("baseline `main` not found"),
            "{err}"
        );
    }

    #[test]
    fn duplicate_ids_in_one_save_are_refused_before_writing() {
        let (_tmp, store) = store();
        let recs = records(&["a", "a"], 1.0, 7);
        let err = store.save("main", &recs).unwrap_err();
        assert!(
            matches!(err, BaselineError::DuplicateRecord { .. }),
            "{err}"
        );
        assert!(!store.root.join("main").exists());
    }

    #[test]
    fn comparing_a_run_with_a_baseline() {
        let base: Vec<BaselineEntry> = records(&["same", "slower", "gone"], 1.0, 8)
            .iter()
            .map(|r| BaselineEntry::from_record(r).unwrap())
            .collect();
        let mut now = records(&["same"], 1.0, 9);
        now.extend(records(&["slower"], 1.2, 10));
        now.extend(records(&["new", "broke"], 1.0, 11));
        let mut base = base;
        base.push(BaselineEntry::from_record(&now[3]).unwrap());
        now[3].rounds[0].measurement = None;
        now[3].rounds[0].failure =
            Some(Failure::new(FailureKind::OutOfMemory, "CUDA out of memory"));

        let set = compare_with_baseline(&now, &base, &BaselineCompareOptions::default()).unwrap();
        assert_eq!(set.missing_in_baseline, ["new"]);
        assert_eq!(set.missing_in_current, ["gone"]);
        let verdicts: Vec<(&str, Option<Verdict>)> = set
            .comparisons
            .iter()
            .map(|c| (c.id.as_str(), c.verdict()))
            .collect();
        assert_eq!(
            verdicts,
            [
                ("same", Some(Verdict::NoChange)),
                ("slower", Some(Verdict::Regressed)),
                ("broke", None)
            ]
        );
        assert!(matches!(
            &set.comparisons[1].outcome,
            ComparisonOutcome::Compared {
                kind: TimeKind::Device,
                ..
            }
        ));
        assert!(matches!(
            &set.comparisons[2].outcome,
            ComparisonOutcome::Failed { .. }
        ));
        let c = set.counts();
        assert_eq!((c.no_change, c.regressed, c.failed), (1, 1, 1));
        assert!(FailOn::Regressed.should_fail(&set, &Gate::default()));
        assert!(FailOn::Ambiguous.should_fail(&set, &Gate::default()));
        assert!(!FailOn::Never.should_fail(&set, &Gate::default()));
        // Gated on counters alone, which these records do not have, nothing trips.
        assert!(!FailOn::Regressed.should_fail(&set, &Gate::of(&[Metric::Counters])));

        let json = serde_json::to_value(&set).unwrap();
        assert_eq!(json["comparisons"][1]["outcome"]["status"], "compared");
        assert_eq!(
            json["comparisons"][1]["outcome"]["comparison"]["verdict"],
            "regressed"
        );
        let back: ComparisonSet = serde_json::from_value(json).unwrap();
        assert_eq!(back, set);
    }

    /// A launch-bound record: host dispatch in two modes 1.7× apart between processes
    /// (as on the H200), the GPU's own work from `kernels`.
    fn launch_bound(
        id: &str,
        kernels: &SyntheticKernels,
        processes: usize,
        seed: u64,
    ) -> RawRecord {
        let mut rng = Pcg64Mcg::seed_from_u64(seed);
        let host = GpuLikeSamples {
            base_ns: 8_000.0,
            ..GpuLikeSamples::default()
        }
        .with_shift(ProcessShift::Modes {
            slow_factor: 1.7,
            slow_share: 0.4,
            sigma: 0.03,
        });
        let mut r = host.record_processes(id, H200, processes, 30, &mut rng);
        for m in r.rounds.iter_mut().filter_map(|x| x.measurement.as_mut()) {
            m.flags.clear();
        }
        kernels.attach(&mut r, &mut rng);
        r
    }

    #[test]
    fn kernel_time_and_counters_judge_what_host_timing_cannot() {
        let add = SyntheticKernels::one("vectorized_elementwise_kernel<add>", 2_290.0);
        let base = BaselineEntry::from_record(&launch_bound("add", &add, 5, 1)).unwrap();
        assert_eq!(base.bound, Some(Bound::Host));
        assert_eq!(base.kernels.len(), 1);
        assert_eq!(base.counters.unwrap().per_call(Counter::Kernels), Some(1.0));
        assert!(base
            .processes
            .iter()
            .all(|p| p.kernel_ns.as_ref().unwrap().len() == 10));
        let judge = |now: &RawRecord| {
            compare_with_baseline(
                std::slice::from_ref(now),
                std::slice::from_ref(&base),
                &BaselineCompareOptions::default(),
            )
            .unwrap()
            .comparisons
            .remove(0)
        };

        // The same work in new processes: nothing changed on any metric.
        let same = judge(&launch_bound("add", &add, 5, 2));
        assert_eq!(same.verdict_of(Metric::Kernel), Some(Verdict::NoChange));
        assert_eq!(same.verdict_of(Metric::Counters), Some(Verdict::NoChange));
        assert!(!FailOn::Regressed.trips(&same, &Gate::default()));

        // 10% more elements: plain in kernel time, lost in host timing.
        let slower = judge(&launch_bound("add", &add.scaled(1.1), 5, 3));
        assert_eq!(slower.verdict_of(Metric::Kernel), Some(Verdict::Regressed));
        assert_ne!(slower.verdict_of(Metric::Time), Some(Verdict::Regressed));
        assert_eq!(slower.verdict_of(Metric::Counters), Some(Verdict::NoChange));
        assert!(FailOn::Regressed.trips(&slower, &Gate::default()));
        assert!(!FailOn::Regressed.trips(&slower, &Gate::of(&[Metric::Time, Metric::Counters])));
        let ComparisonOutcome::Compared { kernel_changes, .. } = &slower.outcome else {
            panic!("{slower:?}");
        };
        assert_eq!(kernel_changes.len(), 1);
        assert!(
            kernel_changes[0].describe().ends_with("+10%"),
            "{kernel_changes:?}"
        );

        // One more kernel per call: an exact counter change, and the kernel named.
        let extra = judge(&launch_bound(
            "add",
            &add.with_kernel("fill_kernel", 1_000.0),
            5,
            4,
        ));
        assert_eq!(extra.verdict_of(Metric::Counters), Some(Verdict::Regressed));
        let ComparisonOutcome::Compared {
            counters: Some(counters),
            kernel_changes,
            ..
        } = &extra.outcome
        else {
            panic!("{extra:?}");
        };
        assert_eq!(counters[0].describe(), "+1 kernel per call");
        assert_eq!(kernel_changes[0].describe(), "new kernel `fill_kernel`");
        assert!(FailOn::Regressed.trips(&extra, &Gate::of(&[Metric::Counters])));

        // A run without kernel time (another machine, the CPU) has no kernel verdict,
        // and a gate on kernel time alone does not trip on it.
        let mut plain = launch_bound("add", &add, 5, 5);
        for m in plain
            .rounds
            .iter_mut()
            .filter_map(|x| x.measurement.as_mut())
        {
            m.kernel = None;
        }
        let plain = judge(&plain);
        assert_eq!(plain.verdict_of(Metric::Kernel), None);
        assert_eq!(plain.verdict_of(Metric::Counters), None);
        assert!(!FailOn::Ambiguous.trips(&plain, &Gate::of(&[Metric::Kernel])));
    }

    #[test]
    fn kernel_data_round_trips_through_a_saved_baseline() {
        let (_tmp, store) = store();
        let add = SyntheticKernels::one("add_kernel", 2_000.0);
        let rec = launch_bound("add", &add, 3, 6);
        store.save("main", std::slice::from_ref(&rec)).unwrap();
        let loaded = store.load("main").unwrap();
        assert_eq!(loaded[0], BaselineEntry::from_record(&rec).unwrap());
        assert_eq!(loaded[0].kernels[0].name, "add_kernel");
        assert_eq!(
            loaded[0].groups(TimeKind::Kernel),
            rec.groups(TimeKind::Kernel)
                .into_iter()
                .map(|g| g.into_iter().map(round_significant).collect::<Vec<_>>())
                .collect::<Vec<_>>()
        );
    }

    #[test]
    fn settings_that_move_figures_are_not_compared_unless_allowed() {
        let base: Vec<BaselineEntry> = records(&["a", "b"], 1.0, 30)
            .iter()
            .map(|r| BaselineEntry::from_record(r).unwrap())
            .collect();
        let mut now = records(&["a", "b"], 1.0, 31);
        // `a` measured with --quick's shorter samples and warm-up; `b` with a longer
        // measurement time and more samples, which only narrow its interval.
        now[0].config = MeasurementConfig {
            processes: now[0].config.processes,
            ..MeasurementConfig::quick()
        };
        now[1].config.measurement_time_s = 20.0;
        now[1].config.max_samples = 500;
        let set = compare_with_baseline(&now, &base, &BaselineCompareOptions::default()).unwrap();
        let ComparisonOutcome::NotCompared { reason } = &set.comparisons[0].outcome else {
            panic!("{:?}", set.comparisons[0]);
        };
        assert!(
            reason.starts_with(
                "measured with other settings (samples of 5.000 ms here, 10.00 ms in the baseline; \
                 a warm-up of 200.0 ms here, 1.000 s in the baseline)"
            ),
            "{reason}"
        );
        assert!(reason.contains("--allow-settings-mismatch"), "{reason}");
        assert_eq!(set.comparisons[1].verdict(), Some(Verdict::NoChange));
        assert!(FailOn::Ambiguous.should_fail(&set, &Gate::default()));

        let allow = BaselineCompareOptions {
            allow_settings_mismatch: true,
            ..Default::default()
        };
        let set = compare_with_baseline(&now, &base, &allow).unwrap();
        assert!(set.comparisons[0].verdict().is_some());
        assert_eq!(set.other_settings.len(), 1);
        assert_eq!(set.other_settings[0].id, "a");
        assert_eq!(set.other_settings[0].differences.len(), 2);
    }

    /// Sets the SM clock read with every sample of every process of `r`.
    fn clock_at(r: &mut RawRecord, sm_mhz: u32) {
        for m in r.rounds.iter_mut().filter_map(|x| x.measurement.as_mut()) {
            for s in &mut m.samples {
                s.clock = Some(crate::record::SampleClock {
                    sm_mhz,
                    temperature_c: Some(60),
                    throttled: false,
                });
            }
        }
    }

    #[test]
    fn two_sides_at_clearly_different_clocks_are_noted() {
        let mut base_recs = records(&["a", "b", "c"], 1.0, 40);
        for r in &mut base_recs {
            clock_at(r, 1980);
        }
        let base: Vec<BaselineEntry> = base_recs
            .iter()
            .map(|r| BaselineEntry::from_record(r).unwrap())
            .collect();
        assert_eq!(base[0].mean_sm_clock_mhz(), Some(1980.0));
        let json = base[0].to_json_pretty();
        let back = BaselineEntry::from_json(&json, "a.json").unwrap();
        assert_eq!(back, base[0]);
        let mut now = records(&["a", "b", "c"], 1.0, 41);
        clock_at(&mut now[0], 1410);
        clock_at(&mut now[1], 1950);
        let set = compare_with_baseline(&now, &base, &BaselineCompareOptions::default()).unwrap();
        // `a` ran 29% slower clocks; `b` within 5%; `c` was not read: no note.
        assert_eq!(set.other_clocks.len(), 1, "{:?}", set.other_clocks);
        assert_eq!(set.other_clocks[0].id, "a");
        assert_eq!(
            set.other_clocks[0].describe(),
            "the GPU ran at 1410 MHz here, 1980 MHz in the baseline (mean SM clock)"
        );
        assert!(set.comparisons[0].verdict().is_some());
    }

    #[test]
    fn a_baseline_from_another_device_is_refused_unless_allowed() {
        let mut rng = Pcg64Mcg::seed_from_u64(12);
        let model = GpuLikeSamples::default();
        let base = [BaselineEntry::from_record(&model.record_processes(
            "mm",
            "NVIDIA A100",
            3,
            30,
            &mut rng,
        ))
        .unwrap()];
        let now = [model.record_processes("mm", H200, 3, 30, &mut rng)];
        let err =
            compare_with_baseline(&now, &base, &BaselineCompareOptions::default()).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("`NVIDIA A100`") && msg.contains("`NVIDIA H200`"),
            "{msg}"
        );
        let allow = BaselineCompareOptions {
            allow_device_mismatch: true,
            ..Default::default()
        };
        let set = compare_with_baseline(&now, &base, &allow).unwrap();
        assert_eq!(set.cross_device.len(), 1);
        assert!(set.comparisons[0].verdict().is_some());
    }

    #[test]
    fn wall_time_is_compared_when_one_side_lacks_device_events() {
        let mut now = records(&["a"], 1.0, 13);
        let base = [BaselineEntry::from_record(&records(&["a"], 1.0, 14)[0]).unwrap()];
        for s in &mut now[0].rounds[0].measurement.as_mut().unwrap().samples {
            s.device_ns = None;
        }
        let set = compare_with_baseline(&now, &base, &BaselineCompareOptions::default()).unwrap();
        assert!(matches!(
            &set.comparisons[0].outcome,
            ComparisonOutcome::Compared {
                kind: TimeKind::Wall,
                ..
            }
        ));
    }

    #[test]
    fn fail_on_modes() {
        use Verdict::*;
        let table = [
            (FailOn::Regressed, [false, true, false, false]),
            (FailOn::Ambiguous, [false, true, false, true]),
            (FailOn::Never, [false, false, false, false]),
        ];
        for (mode, expected) in table {
            let got = [Improved, Regressed, NoChange, Ambiguous].map(|v| mode.fails(v));
            assert_eq!(got, expected, "{mode}");
            assert_eq!(mode.as_str().parse::<FailOn>().unwrap(), mode);
        }
        assert_eq!(FailOn::default(), FailOn::Regressed);
        let err = "sometimes".parse::<FailOn>().unwrap_err().to_string();
        assert!(err.contains("`regressed`, `ambiguous` or `never`"), "{err}");

        let not_compared = ComparisonSet {
            comparisons: vec![BenchmarkComparison {
                id: "x".into(),
                outcome: not_compared("a smoke run measures nothing"),
            }],
            missing_in_baseline: vec![],
            missing_in_current: vec![],
            cross_device: vec![],
            other_settings: vec![],
            other_clocks: vec![],
        };
        assert!(FailOn::Ambiguous.should_fail(&not_compared, &Gate::default()));
        assert!(!FailOn::Regressed.should_fail(&not_compared, &Gate::default()));
    }

    #[test]
    fn a_version_1_file_reads_as_one_process_and_compares_as_ambiguous() {
        let (_tmp, store) = store();
        let recs = records(&["mm"], 1.0, 15);
        let dir = store.root.join("old");
        std::fs::create_dir_all(&dir).unwrap();
        let m = recs[0].first_measurement().unwrap();
        let v1 = serde_json::json!({
            "format_version": 1,
            "id": "mm",
            "fingerprint": recs[0].fingerprint,
            "samples": {
                "wall_ns": m.wall_per_iter(),
                "host_ns": m.host_per_iter(),
                "device_ns": m.device_per_iter(),
            },
            "estimates": {"primary": "device", "median_ns": {"point": 1.0, "lower": 1.0, "upper": 1.0, "confidence": 0.95}, "mean_ns": {"point": 1.0, "lower": 1.0, "upper": 1.0, "confidence": 0.95}},
        });
        std::fs::write(dir.join("mm.json"), v1.to_string()).unwrap();
        let loaded = store.load("old").unwrap();
        assert_eq!(loaded[0].processes.len(), 1);
        assert_eq!(loaded[0].estimates.basis, EstimateBasis::OneProcess);
        assert!(loaded[0].config.is_none());
        let set =
            compare_with_baseline(&recs, &loaded, &BaselineCompareOptions::default()).unwrap();
        match &set.comparisons[0].outcome {
            ComparisonOutcome::Compared { comparison, .. } => {
                assert_eq!(comparison.verdict, Verdict::Ambiguous);
                assert!(comparison
                    .note
                    .as_ref()
                    .unwrap()
                    .contains("the baseline has 1 process"));
            }
            other => panic!("{other:?}"),
        }
    }
}
