//! What `cargo gpubench compare` takes for each side, and loading it.
//!
//! A reference is resolved by these rules, first match wins:
//!
//! 1. `baseline:NAME` is the saved baseline NAME; `run:ID` is the stored run ID
//!    (`run:latest` and `run:PATH` work too). Either prefix also takes a path.
//! 2. Anything with a path separator (`./x`, `/abs/x`, `runs/x`) is a path: a run
//!    directory when it holds `manifest.json`, an output directory (its latest run)
//!    when it holds `latest`, else a directory of baseline files — which must hold
//!    one, or it is refused as holding nothing to compare.
//! 3. `latest` is the run `<out-dir>/latest` points at: the last one that finished.
//!    A newer run that did not (killed, stopped by an error, still running) is named
//!    in a warning.
//! 4. A bare NAME is the saved baseline NAME, or the stored run whose id is NAME or
//!    starts with NAME.
//!
//! A baseline is found where a run finds it: its directory, or the `.NAME.old-PID`
//! copy a save killed between its two renames leaves ([`readable`]).
//!
//! A bare name (or `latest`) that is both a baseline and a run, or the prefix of
//! several run ids, is ambiguous and refused, saying how to pick one; one that is
//! neither is refused naming where it looked and what exists.

use std::path::{Path, PathBuf};

use gpubench_analysis::atomic_dir::readable;
use gpubench_analysis::baseline::{validate_name, ComparisonOutcome, NotSaved, ProcessSamples};
use gpubench_analysis::processes::Bound;
use gpubench_analysis::{BaselineEntry, BaselineError, BaselineStore, BenchmarkSummary};
use gpubench_record::energy::{EnergyMeasurement, EnergyWindow};
use gpubench_record::id::split_id;
use gpubench_record::kernels::{KernelMeasurement, KernelMethod};
use gpubench_record::measurement::{Flag, Measurement, Sample};
use gpubench_record::record::{ProcessRecord, RawRecord, RECORD_FORMAT_VERSION};
use gpubench_record::telemetry::{ClockReading, ProcessTelemetry, TelemetryReading};
use serde::Serialize;
use thiserror::Error;

use crate::store::manifest::{BenchStatus, ManifestError, RunManifest, MANIFEST_FILE};
use crate::store::runs::{newer_than_latest, resolve_latest, LATEST, RUNS_DIR};
use crate::store::{Source, SourceKind};

/// Run ids shown when listing what exists.
const LISTED_RUNS: usize = 5;

/// Errors resolving or loading a reference.
#[derive(Debug, Error)]
pub enum ReferenceError {
    /// Names both a baseline and a run, or several runs.
    #[error("`{reference}` is ambiguous: {candidates}; {how}")]
    Ambiguous {
        /// What was given.
        reference: String,
        /// What it could mean.
        candidates: String,
        /// How to say which.
        how: String,
    },
    /// Names nothing that exists.
    #[error("`{reference}` is neither a saved baseline nor a stored run: {looked}")]
    NotFound {
        /// What was given.
        reference: String,
        /// Where it was looked for, and what exists there.
        looked: String,
    },
    /// `latest` (or `run:latest`) without a run.
    #[error("there is no latest run: {path} does not exist (run `cargo gpubench` first, or pass --out-dir)")]
    NoLatest {
        /// The `latest` pointer looked for.
        path: String,
    },
    /// `run:` with something that is not a run.
    #[error("{what} is not a stored run: {why}")]
    NotARun {
        /// What was given.
        what: String,
        /// What is wrong.
        why: String,
    },
    /// A side holds nothing to compare: no manifest, no latest run, no baseline file.
    #[error("{path} holds nothing to compare: it is no run directory (no {MANIFEST_FILE}), no output directory (no {LATEST}) and no baseline (no benchmark's .json file); pass a run directory (<out-dir>/runs/<run-id>), an output directory (--out-dir of a run, for its latest run) or a baseline directory (gpubench/baselines/<name>)")]
    NothingToCompare {
        /// The directory.
        path: String,
    },
    /// A baseline name or file is unusable.
    #[error(transparent)]
    Baseline(#[from] BaselineError),
    /// A run's manifest is unusable.
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    /// A run's record is unusable.
    #[error(transparent)]
    Record(#[from] gpubench_record::record::RecordError),
}

/// Where references are looked up.
#[derive(Debug, Clone)]
pub struct Places {
    /// The saved baselines.
    pub baselines: BaselineStore,
    /// The output directory holding `runs/` and `latest`.
    pub out_dir: PathBuf,
    /// What relative paths are relative to.
    pub cwd: PathBuf,
}

/// A resolved reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolved {
    /// Baseline `name` of `store`.
    Baseline {
        /// The store holding it.
        store: BaselineStore,
        /// Its name.
        name: String,
    },
    /// The run stored in `dir`.
    Run {
        /// Its directory.
        dir: PathBuf,
    },
}

/// Resolves `reference` by the rules of the module docs.
pub fn resolve(reference: &str, places: &Places) -> Result<Resolved, ReferenceError> {
    if let Some(rest) = reference.strip_prefix("baseline:") {
        if is_path(rest) {
            return baseline_dir(rest, places);
        }
        validate_name(rest)?;
        return Ok(Resolved::Baseline {
            store: places.baselines.clone(),
            name: rest.to_string(),
        });
    }
    if let Some(rest) = reference.strip_prefix("run:") {
        if is_path(rest) {
            return run_dir(rest, places);
        }
        if rest == LATEST {
            return latest(places);
        }
        return match runs_matching(rest, places).as_slice() {
            [one] => Ok(Resolved::Run { dir: one.clone() }),
            [] => Err(ReferenceError::NotARun {
                what: format!("`{rest}`"),
                why: format!(
                    "no run id is or starts with it in {}{}",
                    places.out_dir.join(RUNS_DIR).display(),
                    existing_runs(places)
                ),
            }),
            several => Err(several_runs(reference, several)),
        };
    }
    if is_path(reference) {
        let path = places.cwd.join(reference);
        if path.join(MANIFEST_FILE).is_file() {
            return Ok(Resolved::Run { dir: path });
        }
        // An output directory (a run's --out-dir, a CI artifact of one): its latest
        // run, as `latest` resolves it.
        if std::fs::symlink_metadata(path.join(LATEST)).is_ok() {
            return latest(&Places {
                out_dir: path,
                ..places.clone()
            });
        }
        if readable(&path).is_some() {
            return baseline_dir(reference, places);
        }
        return Err(ReferenceError::NotFound {
            reference: reference.to_string(),
            looked: format!("{} does not exist", path.display()),
        });
    }

    let baseline = validate_name(reference).is_ok()
        && readable(&places.baselines.root.join(reference)).is_some();
    let runs = if reference == LATEST {
        latest(places)
            .map(|r| match r {
                Resolved::Run { dir } => vec![dir],
                Resolved::Baseline { .. } => vec![],
            })
            .unwrap_or_default()
    } else {
        runs_matching(reference, places)
    };
    match (baseline, runs.as_slice()) {
        (true, []) => Ok(Resolved::Baseline {
            store: places.baselines.clone(),
            name: reference.to_string(),
        }),
        (false, [one]) => Ok(Resolved::Run { dir: one.clone() }),
        (true, [run, ..]) => Err(ReferenceError::Ambiguous {
            reference: reference.to_string(),
            candidates: format!(
                "it is the baseline {} and the run {}",
                places.baselines.root.join(reference).display(),
                run.display()
            ),
            how: format!("write `baseline:{reference}` or `run:{reference}`"),
        }),
        (false, []) if reference == LATEST => Err(ReferenceError::NoLatest {
            path: places.out_dir.join(LATEST).display().to_string(),
        }),
        (false, []) => Err(ReferenceError::NotFound {
            reference: reference.to_string(),
            looked: format!(
                "there is no {} and no run id is or starts with it in {}{}{}",
                places.baselines.root.join(reference).display(),
                places.out_dir.join(RUNS_DIR).display(),
                existing_baselines(places),
                existing_runs(places)
            ),
        }),
        (false, several) => Err(several_runs(reference, several)),
    }
}

/// Whether `s` is taken for a path (rule 2 of the module docs).
pub fn is_path(s: &str) -> bool {
    s.contains(['/', '\\']) || s == "." || s == ".."
}

fn latest(places: &Places) -> Result<Resolved, ReferenceError> {
    if let Some(warning) = newer_than_latest(&places.out_dir) {
        eprintln!("gpubench: warning: {warning}");
    }
    match resolve_latest(&places.out_dir) {
        Some(dir) if dir.is_dir() => Ok(Resolved::Run { dir }),
        _ => Err(ReferenceError::NoLatest {
            path: places.out_dir.join(LATEST).display().to_string(),
        }),
    }
}

fn run_dir(path: &str, places: &Places) -> Result<Resolved, ReferenceError> {
    let dir = places.cwd.join(path);
    if dir.join(MANIFEST_FILE).is_file() {
        Ok(Resolved::Run { dir })
    } else {
        Err(ReferenceError::NotARun {
            what: dir.display().to_string(),
            why: format!("it has no {MANIFEST_FILE}"),
        })
    }
}

fn baseline_dir(path: &str, places: &Places) -> Result<Resolved, ReferenceError> {
    let dir = places.cwd.join(path);
    if readable(&dir).is_none() {
        return Err(ReferenceError::NotFound {
            reference: path.to_string(),
            looked: format!("{} does not exist", dir.display()),
        });
    }
    let dir = std::path::absolute(&dir).unwrap_or(dir);
    // `a/b/.` and `a/b/..` have no usable last component; normalise them away.
    let dir = dir.canonicalize().unwrap_or(dir);
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    validate_name(&name)?;
    let parent = dir.parent().unwrap_or(Path::new("/")).to_path_buf();
    Ok(Resolved::Baseline {
        store: BaselineStore::new(parent),
        name,
    })
}

/// Run directories whose id is `prefix`, or else starts with it.
fn runs_matching(prefix: &str, places: &Places) -> Vec<PathBuf> {
    let ids = run_ids(places);
    if ids.iter().any(|id| id == prefix) {
        return vec![places.out_dir.join(RUNS_DIR).join(prefix)];
    }
    ids.into_iter()
        .filter(|id| id.starts_with(prefix))
        .map(|id| places.out_dir.join(RUNS_DIR).join(id))
        .collect()
}

/// Stored run ids, oldest first.
fn run_ids(places: &Places) -> Vec<String> {
    let Ok(items) = std::fs::read_dir(places.out_dir.join(RUNS_DIR)) else {
        return Vec::new();
    };
    let mut ids: Vec<String> = items
        .filter_map(Result::ok)
        .filter(|e| e.path().join(MANIFEST_FILE).is_file())
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .collect();
    ids.sort();
    ids
}

fn several_runs(reference: &str, runs: &[PathBuf]) -> ReferenceError {
    let ids: Vec<String> = runs
        .iter()
        .take(LISTED_RUNS)
        .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect();
    let more = if runs.len() > LISTED_RUNS {
        ", …"
    } else {
        ""
    };
    ReferenceError::Ambiguous {
        reference: reference.to_string(),
        candidates: format!(
            "{} run ids start with it ({}{more})",
            runs.len(),
            ids.join(", ")
        ),
        how: "give more of the run id".to_string(),
    }
}

fn existing_baselines(places: &Places) -> String {
    match places.baselines.list() {
        Ok(names) if !names.is_empty() => format!(" (saved baselines: {})", names.join(", ")),
        _ => format!(
            " (no baselines are saved in {})",
            places.baselines.root.display()
        ),
    }
}

fn existing_runs(places: &Places) -> String {
    let ids = run_ids(places);
    if ids.is_empty() {
        return " (no runs are stored there)".to_string();
    }
    let newest: Vec<&str> = ids
        .iter()
        .rev()
        .take(LISTED_RUNS)
        .map(String::as_str)
        .collect();
    format!(" (newest runs: {})", newest.join(", "))
}

/// One benchmark of a run or baseline, as the summary shows it (and `--format json`
/// prints it).
#[derive(Debug, Clone, Serialize)]
pub struct SummaryEntry {
    /// `<target>/<id>`.
    pub name: String,
    /// The bench target.
    pub target: String,
    /// The benchmark id.
    pub id: String,
    /// Where it is.
    pub status: BenchStatus,
    /// Its record, relative to the run directory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub record: Option<String>,
    /// The figures, when it ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<BenchmarkSummary>,
    /// Its comparison with the baseline, when the baseline has it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comparison: Option<ComparisonOutcome>,
}

/// One loaded side of a comparison.
#[derive(Debug, Clone)]
pub struct Side {
    /// What it is.
    pub source: Source,
    /// Its benchmarks as the summary shows them, in order (a run's benchmarks that
    /// did not run included).
    pub entries: Vec<SummaryEntry>,
    /// Its benchmarks' records, in order; a baseline's are rebuilt from its samples.
    pub records: Vec<RawRecord>,
    /// A run's manifest, when it is one.
    pub manifest: Option<RunManifest>,
    /// A baseline's own files, when it is one.
    baseline_entries: Option<Vec<BaselineEntry>>,
    /// JSON files in a baseline's directory that are not baseline files, left alone.
    pub ignored: Vec<std::path::PathBuf>,
}

impl Side {
    /// Loads what `resolved` names; any unreadable, corrupt or newer file is an
    /// error naming it.
    pub fn load(resolved: &Resolved) -> Result<Side, ReferenceError> {
        match resolved {
            Resolved::Baseline { store, name } => {
                let loaded = store.load_noting(name)?;
                let ignored = loaded.ignored;
                let entries = loaded.entries;
                if entries.is_empty() {
                    return Err(ReferenceError::NothingToCompare {
                        path: store.root.join(name).display().to_string(),
                    });
                }
                let records: Vec<RawRecord> = entries.iter().map(record_of_entry).collect();
                let summaries = records.iter().map(|r| SummaryEntry {
                    name: r.id.clone(),
                    target: String::new(),
                    id: r.id.clone(),
                    status: BenchStatus::Passed,
                    record: None,
                    summary: Some(BenchmarkSummary::from_record(r)),
                    comparison: None,
                });
                Ok(Side {
                    source: Source {
                        kind: SourceKind::Baseline,
                        name: name.clone(),
                        path: store.root.join(name).display().to_string(),
                        default: false,
                        device: device_of(&records),
                    },
                    entries: summaries.collect(),
                    records,
                    manifest: None,
                    baseline_entries: Some(entries),
                    ignored,
                })
            }
            Resolved::Run { dir } => {
                let manifest = RunManifest::read(&dir.join(MANIFEST_FILE))?;
                if let Some(note) = manifest.incomplete_note() {
                    eprintln!("gpubench: warning: {note}");
                }
                let mut entries = Vec::new();
                let mut records = Vec::new();
                for b in &manifest.benchmarks {
                    let record = match &b.record {
                        Some(file) => Some(RawRecord::read(&dir.join(file))?),
                        None => None,
                    };
                    entries.push(SummaryEntry {
                        name: format!("{}/{}", b.target, b.id),
                        target: b.target.clone(),
                        id: b.id.clone(),
                        status: b.status,
                        record: b.record.clone(),
                        summary: record.as_ref().map(BenchmarkSummary::from_record),
                        comparison: None,
                    });
                    records.extend(record);
                }
                Ok(Side {
                    source: Source {
                        kind: SourceKind::Run,
                        name: manifest.run_id.clone(),
                        path: dir.display().to_string(),
                        default: false,
                        device: device_of(&records),
                    },
                    entries,
                    records,
                    manifest: Some(manifest),
                    baseline_entries: None,
                    ignored: Vec::new(),
                })
            }
        }
    }

    /// This side as a baseline: a baseline's files, or a run's records that passed;
    /// with the benchmarks of a run that cannot serve as one, and why.
    pub fn as_baseline(&self) -> (Vec<BaselineEntry>, Vec<(String, NotSaved)>) {
        if let Some(entries) = &self.baseline_entries {
            return (entries.clone(), Vec::new());
        }
        let mut entries = Vec::new();
        let mut unusable = Vec::new();
        for r in &self.records {
            match BaselineEntry::from_record(r) {
                Ok(e) => entries.push(e),
                Err(why) => unusable.push((r.id.clone(), why)),
            }
        }
        (entries, unusable)
    }
}

fn device_of(records: &[RawRecord]) -> Option<String> {
    records
        .iter()
        .filter(|r| r.passed())
        .map(|r| r.fingerprint.device.name.clone())
        .find(|n| n != "unknown")
}

/// A passed record holding a baseline file's samples (one iteration each, one process
/// per process, flagged device-bound when the baseline was) and energy per call, so a
/// baseline can be the judged side of a comparison.
pub fn record_of_entry(entry: &BaselineEntry) -> RawRecord {
    let flags = match entry.bound {
        Some(Bound::Device) => vec![Flag::DeviceBound],
        _ => Vec::new(),
    };
    let (name, arg) = split_id(&entry.id);
    let processes = entry
        .processes
        .iter()
        .enumerate()
        .map(|(p, s)| {
            // Kernel time, with the table and counters in the first process, as a run
            // records them.
            let kernel = s.kernel_ns.as_ref().map(|k| KernelMeasurement {
                method: KernelMethod::GraphReplay,
                not_capturable: None,
                samples_ns: k.clone(),
                kernels: if p == 0 {
                    entry.kernels.clone()
                } else {
                    Vec::new()
                },
                counters: if p == 0 { entry.counters } else { None },
                l2: None,
                clock: None,
            });
            let samples = (0..s.wall_ns.len())
                .map(|i| Sample {
                    iters: 1,
                    wall_ns: s.wall_ns[i],
                    host_ns: s.host_ns.get(i).copied().unwrap_or(0.0),
                    device_ns: s.device_ns.as_ref().and_then(|d| d.get(i).copied()),
                    // A baseline keeps only the samples the figures rest on.
                    clock: s
                        .sm_clock_mhz
                        .as_ref()
                        .and_then(|c| c.get(i))
                        .map(|&sm_mhz| gpubench_record::measurement::SampleClock {
                            sm_mhz,
                            temperature_c: None,
                            throttled: false,
                            // The count is kept, not which samples: the first ones.
                            power_capped: i < s.power_capped_samples,
                            power_w: None,
                        }),
                })
                .collect();
            ProcessRecord {
                process: p as u32 + 1,
                measurement: Some(Measurement {
                    memory: s.memory.map(|m| m.as_stats()),
                    flags: flags.clone(),
                    device_timer: s.device_ns.is_some(),
                    kernel,
                    memory_growth: s.memory.and_then(|m| m.growth),
                    energy: s.energy_j.as_ref().map(|j| energy_of(j, s)),
                    throughput: entry.throughput,
                    ..Measurement::of_samples(samples)
                }),
                telemetry: s.memory_clock_mhz.map(|mhz| memory_clock_telemetry(s, mhz)),
                ..ProcessRecord::first(entry.fingerprint.timestamp.clone())
            }
        })
        .collect();
    RawRecord {
        format_version: RECORD_FORMAT_VERSION,
        id: entry.id.clone(),
        name: name.to_string(),
        arg: arg.map(str::to_string),
        fingerprint: entry.fingerprint.clone(),
        config: entry.config.clone().unwrap_or_default(),
        processes,
    }
}

/// Energy windows that read a baseline process's joules per call back, each over
/// one call of the process's median time (device time where kept), so their power
/// is the average power of that call: the file keeps each window's energy per call,
/// not its calls, times or counter steps.
fn energy_of(joules_per_call: &[f64], s: &ProcessSamples) -> EnergyMeasurement {
    let times = s.device_ns.as_deref().unwrap_or(&s.wall_ns);
    let call_s = gpubench_analysis::stats::median(times) * 1e-9;
    EnergyMeasurement {
        windows: joules_per_call
            .iter()
            .map(|&j| EnergyWindow {
                calls: 1,
                synced_s: call_s,
                counted_s: call_s,
                steps: 0,
                energy_j: j,
            })
            .collect(),
        idle_w: None,
        idle_unavailable: None,
    }
}

/// The telemetry of a process rebuilt from a baseline, which keeps only its memory
/// clock (what a bytes share of peak is put at): the readings at start and end carry
/// it, with the SM clock of the first and last samples (0 where not read) and
/// nothing else.
fn memory_clock_telemetry(s: &ProcessSamples, memory_mhz: u32) -> ProcessTelemetry {
    let clocks = s.sm_clock_mhz.as_deref().unwrap_or_default();
    let reading = |sm: Option<&u32>| TelemetryReading {
        clock: ClockReading {
            sm_clock_mhz: sm.copied().unwrap_or(0),
            temperature_c: None,
            slowdown: Vec::new(),
            power_w: None,
        },
        memory_clock_mhz: Some(memory_mhz),
        power_limit_w: None,
        processes: Vec::new(),
    };
    ProcessTelemetry {
        start: reading(clocks.first()),
        end: reading(clocks.last()),
        max_temperature_c: None,
        other_processes: Vec::new(),
    }
}

#[cfg(test)]
mod tests;
