//! A run (or a stored side of `compare`) judged against a baseline, as the subcommand
//! decides, stores and words it.
//!
//! A run's comparison is stored with it, for the HTML report and later readers:
//!
//! ```text
//! runs/<run-id>/comparison.json           this RunComparison
//! runs/<run-id>/baseline/<stem>.json      the baseline files it was judged against
//! ```
//!
//! The copy keeps what the run was compared with even after `--save-baseline` (in the
//! same run or a later one) overwrites the baseline: read it with
//! `BaselineStore::new(run_dir).load(BASELINE_COPY)`.
//!
//! Statistics and verdicts come from `gpubench_analysis`; this module decides what a
//! device mismatch means here (those benchmarks are *not compared*, never silently
//! compared, unless `--allow-device-mismatch` asks for it), and what a baseline
//! benchmark the judged side lacks is ([`Absences`]): not selected (a filter, another
//! `--partition` part: no finding), not run, or gone — the last two missing evidence,
//! which trips the gate unless `--allow-missing` lets it pass. [`summary`] is a run's
//! summary with its comparison, and the exit code it ends with.

pub(crate) mod summary;

use std::collections::BTreeMap;
use std::path::Path;

use gpubench_analysis::baseline::{
    AllowMissing, BenchmarkComparison, ComparisonOutcome, CrossDevice, Gate, Missing, MissingKind,
    VerdictCounts,
};
use gpubench_analysis::{
    compare_with_baseline, BaselineCompareOptions, BaselineEntry, BaselineError, CompareConfig,
    ComparisonSet, FailOn,
};
use gpubench_record::record::RawRecord;
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::format::plural;
use crate::store::baselines::LoadedBaseline;
use crate::store::manifest::{BenchStatus, RunManifest, RunStatus, Selection};
use crate::store::references::SummaryEntry;
use crate::store::runs::{self, StoreError};
use crate::store::{Source, SourceKind};

/// The file of a run's comparison.
pub(crate) const COMPARISON_FILE: &str = "comparison.json";
/// The directory, inside a run, holding a copy of the baseline files it was judged
/// against; a baseline name, so `BaselineStore::new(run_dir)` loads it.
pub const BASELINE_COPY: &str = "baseline";
/// The comparison format this build writes and the newest it reads.
pub(crate) const COMPARISON_FORMAT_VERSION: u32 = 1;

/// Errors reading a stored comparison.
#[derive(Debug, Error)]
pub enum ComparisonFileError {
    /// The file could not be read.
    #[error("failed to read comparison {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// Malformed JSON.
    #[error("failed to parse comparison {path}: {source}")]
    Parse {
        /// The file.
        path: String,
        /// The cause.
        source: serde_json::Error,
    },
    /// Written by a newer cargo-gpubench.
    #[error("comparison {path} has format_version {found}, newer than the {supported} this cargo-gpubench reads: upgrade cargo-gpubench")]
    TooNew {
        /// The file.
        path: String,
        /// Its version.
        found: u64,
        /// The newest this build reads.
        supported: u32,
    },
}

/// How a comparison decides and what fails the run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct VerdictSettings {
    /// The statistics' settings (`--significance`, `--noise-threshold`).
    pub config: CompareConfig,
    /// `--fail-on`.
    pub fail_on: FailOn,
    /// `--allow-device-mismatch`.
    pub allow_device_mismatch: bool,
    /// `--gate-on`: the metrics whose verdicts `fail_on` looks at.
    #[serde(default)]
    pub gate: Gate,
    /// `--allow-settings-mismatch`.
    #[serde(default)]
    pub allow_settings_mismatch: bool,
    /// `--allow-missing`: the kinds of missing evidence that do not trip the gate.
    #[serde(default)]
    pub allow_missing: AllowMissing,
}

impl VerdictSettings {
    /// How [`compare_with_baseline`] compares under these settings: device
    /// mismatches are compared there and handled per benchmark by
    /// [`RunComparison::of_set`], so the rest still compare.
    pub fn options(&self) -> BaselineCompareOptions {
        BaselineCompareOptions {
            config: self.config,
            allow_device_mismatch: true,
            allow_settings_mismatch: self.allow_settings_mismatch,
            gated: self.gate.metrics,
        }
    }
}

/// What the judged side says of the baseline benchmarks it lacks, and what the
/// baseline's side could not offer: enough to tell a benchmark nobody asked for from
/// one that went missing.
#[derive(Debug, Clone, Default)]
pub struct Absences {
    /// The judged side in words (`run `…``), for reasons.
    pub side: String,
    /// Selected benchmarks without a measurement, and why.
    pub not_run: Vec<(String, String)>,
    /// What the run left out, when it kept that (runs from before it did, and
    /// baselines, did not: every benchmark they lack is then gone).
    pub selection: Option<Selection>,
    /// Whether the judged side is a merged run: its `other_parts` are benchmarks of
    /// parts missing from the merge, not parts left to other jobs.
    pub merged: bool,
    /// Benchmarks the baseline's side holds but cannot serve as a baseline (a run
    /// compared against: failed or a smoke run there), and why.
    pub unusable_baseline: Vec<(String, String)>,
}

impl Absences {
    /// What the run of `manifest` says of what it lacks.
    pub fn of_run(manifest: &RunManifest) -> Self {
        let side = format!("run `{}`", manifest.run_id);
        let state = manifest.state();
        let not_run = manifest
            .benchmarks
            .iter()
            .filter(|b| b.record.is_none())
            .map(|b| {
                let why = match (b.status, state) {
                    (BenchStatus::Interrupted, _) => {
                        format!("{side} was interrupted before it finished")
                    }
                    (_, RunStatus::Incomplete) => {
                        format!("{side} stopped before it ran (its cargo gpubench died: killed?)")
                    }
                    (_, RunStatus::Interrupted) => format!("{side} was interrupted before it ran"),
                    _ => format!("{side} selected it but has no record of it"),
                };
                (b.id.clone(), why)
            })
            .collect();
        Absences {
            side,
            not_run,
            selection: manifest.selection.clone(),
            merged: !manifest.merged_from.is_empty(),
            unusable_baseline: Vec::new(),
        }
    }

    /// What a judged side that keeps no selection (a saved baseline) says: nothing,
    /// so every baseline benchmark it lacks is gone.
    pub fn of_side(source: &Source) -> Self {
        Absences {
            side: source.describe(),
            ..Absences::default()
        }
    }

    /// Why baseline benchmark `id`, which the judged side lacks, is missing (`None`:
    /// the user did not ask for it, so nothing is missing).
    fn classify(&self, id: &str, baseline: &Source) -> Option<Missing> {
        if let Some((_, why)) = self.not_run.iter().find(|(x, _)| x == id) {
            return Some(Missing::benchmark(id, MissingKind::NotRun, why.clone()));
        }
        let Some(selection) = &self.selection else {
            return Some(Missing::benchmark(
                id,
                MissingKind::Gone,
                format!(
                    "{} has no `{id}` and does not say why (not selected, or gone?){}",
                    self.side,
                    delete_hint(id, baseline)
                ),
            ));
        };
        let listed = |ids: &[String]| ids.binary_search_by(|x| x.as_str().cmp(id)).is_ok();
        if listed(&selection.filtered_out) {
            return None;
        }
        if listed(&selection.other_parts) {
            return self.merged.then(|| {
                Missing::benchmark(
                    id,
                    MissingKind::NotRun,
                    format!(
                        "its --partition part is missing from the merge into {}: merge that \
                         part's run too",
                        self.side
                    ),
                )
            });
        }
        // With -p, --bench or --exe choosing targets, a benchmark no target listed may
        // be in one not chosen: the user's filter, not a gap.
        selection.all_targets.then(|| {
            Missing::benchmark(
                id,
                MissingKind::Gone,
                format!(
                    "no bench target of {} lists it (removed or renamed?){}",
                    self.side,
                    delete_hint(id, baseline)
                ),
            )
        })
    }
}

/// `: if on purpose, delete <file> from the baseline`, when the baseline is a saved one.
fn delete_hint(id: &str, baseline: &Source) -> String {
    match baseline.kind {
        SourceKind::Baseline => format!(
            "; if on purpose, delete {}/{}.json from the baseline",
            baseline.path.trim_end_matches('/'),
            gpubench_record::id::file_stem_for_id(id)
        ),
        SourceKind::Run | SourceKind::Revision => String::new(),
    }
}

/// A set of benchmarks judged against a baseline: what `comparison.json` holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunComparison {
    /// See [`COMPARISON_FORMAT_VERSION`].
    pub format_version: u32,
    /// What it was judged against.
    pub baseline: Source,
    /// The device model of the judged side, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_device: Option<String>,
    /// How it was decided.
    pub settings: VerdictSettings,
    /// Benchmarks whose baseline was recorded on another device model and that were
    /// therefore not compared (empty with `--allow-device-mismatch`, which compares
    /// them and lists them in `set.cross_device`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub device_mismatch: Vec<CrossDevice>,
    /// Every benchmark's outcome, and the ids on one side only.
    pub set: ComparisonSet,
    /// How many benchmarks ended each way.
    pub counts: VerdictCounts,
    /// The evidence the gate lacks: baseline benchmarks not run, gone or not
    /// compared, and gated metrics a side lacks, each with why; in the baseline's
    /// order, then the run's.
    #[serde(default)]
    pub missing: Vec<Missing>,
    /// Baseline benchmarks the judged side left out on purpose (filters, other
    /// `--partition` parts, bench targets not chosen), sorted: no finding.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_selected: Vec<String>,
    /// The bench targets of baseline benchmarks the judged side lacks, by id, where
    /// their baseline files name one: such a benchmark is named `<target>/<id>` as
    /// the judged side's are ([`RunComparison::name_of`]).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub baseline_targets: BTreeMap<String, String>,
    /// Whether the `--fail-on` gate tripped (exit code 4 unless a benchmark failed),
    /// on a verdict or on missing evidence it does not allow.
    pub gate_tripped: bool,
}

impl RunComparison {
    /// Judges `current` against `baseline`'s `entries`, with nothing known of why
    /// the judged side lacks a baseline benchmark (every one is gone): see
    /// [`RunComparison::judge_with`].
    pub fn judge(
        current: &[RawRecord],
        entries: &[BaselineEntry],
        baseline: Source,
        settings: VerdictSettings,
    ) -> Result<Self, BaselineError> {
        let absences = Absences {
            side: "the judged side".into(),
            ..Absences::default()
        };
        Self::judge_with(current, entries, baseline, settings, &absences)
    }

    /// Judges `current` against `baseline`'s `entries`. A benchmark whose baseline
    /// was recorded on another device model is not compared unless
    /// `settings.allow_device_mismatch`; ids on one side only are listed, and
    /// `absences` says which of the baseline's are missing evidence.
    pub fn judge_with(
        current: &[RawRecord],
        entries: &[BaselineEntry],
        baseline: Source,
        settings: VerdictSettings,
        absences: &Absences,
    ) -> Result<Self, BaselineError> {
        let set = compare_with_baseline(current, entries, &settings.options())?;
        Ok(Self::of_set(
            set, current, entries, baseline, settings, absences,
        ))
    }

    /// What `set` (the comparison of `current` with `entries`, made however it was:
    /// [`compare_with_baseline`], or a paired one) means here: device mismatches not
    /// compared unless allowed, missing evidence found, the gate decided.
    pub fn of_set(
        mut set: ComparisonSet,
        current: &[RawRecord],
        entries: &[BaselineEntry],
        mut baseline: Source,
        settings: VerdictSettings,
        absences: &Absences,
    ) -> Self {
        let mut device_mismatch = Vec::new();
        if !settings.allow_device_mismatch {
            for x in std::mem::take(&mut set.cross_device) {
                if let Some(b) = set.comparisons.iter_mut().find(|b| b.id == x.id) {
                    b.outcome = ComparisonOutcome::NotCompared {
                        reason: format!(
                            "the baseline was recorded on `{}`, this run on `{}`",
                            x.baseline_device, x.current_device
                        ),
                    };
                }
                device_mismatch.push(x);
            }
        }
        baseline.device = baseline.device.or_else(|| {
            entries
                .iter()
                .map(|e| e.fingerprint.device.name.clone())
                .find(|n| n != "unknown")
        });
        let current_device = current
            .iter()
            .filter(|r| r.passed())
            .map(|r| r.fingerprint.device.name.clone())
            .find(|n| n != "unknown");
        // A benchmark the baseline's side holds but cannot offer is not new: it is
        // not compared.
        let mut missing = Vec::new();
        for (id, why) in &absences.unusable_baseline {
            if let Some(i) = set.missing_in_baseline.iter().position(|x| x == id) {
                set.missing_in_baseline.remove(i);
                missing.push(Missing::benchmark(
                    id,
                    MissingKind::NotCompared,
                    format!(
                        "{} has no usable measurement of it: {why}",
                        baseline.describe()
                    ),
                ));
            }
        }
        let mut not_selected = Vec::new();
        for id in &set.missing_in_current {
            match absences.classify(id, &baseline) {
                Some(m) => missing.push(m),
                None => not_selected.push(id.clone()),
            }
        }
        missing.extend(set.missing(&settings.gate));
        let baseline_targets = entries
            .iter()
            .filter(|e| set.missing_in_current.contains(&e.id))
            .filter_map(|e| Some((e.id.clone(), e.target.clone()?)))
            .collect();
        let counts = set.counts();
        let gate_tripped = settings.fail_on.should_fail(&set, &settings.gate)
            || missing.iter().any(|m| {
                settings
                    .fail_on
                    .trips_on_missing(m, &settings.allow_missing)
            });
        RunComparison {
            format_version: COMPARISON_FORMAT_VERSION,
            baseline,
            current_device,
            settings,
            device_mismatch,
            set,
            counts,
            missing,
            not_selected,
            baseline_targets,
            gate_tripped,
        }
    }

    /// This comparison with `extra` missing evidence found outside the set (an `ab`
    /// benchmark only the base has), the gate decided again.
    pub fn with_missing(mut self, extra: Vec<Missing>) -> Self {
        self.missing.extend(extra);
        self.gate_tripped = self.gate_tripped
            || self.missing.iter().any(|m| {
                self.settings
                    .fail_on
                    .trips_on_missing(m, &self.settings.allow_missing)
            });
        self
    }

    /// Judges the records of the run stored in `run_dir` against `baseline`, stores
    /// the comparison with the run (so `report` shows it again), and warns about
    /// benchmarks left out for their device: what a run and a merged run do.
    pub fn judge_stored_run(
        run_dir: &Path,
        records: &[RawRecord],
        baseline: &LoadedBaseline,
        settings: VerdictSettings,
        absences: &Absences,
    ) -> anyhow::Result<Self> {
        use anyhow::Context;
        let comparison = RunComparison::judge_with(
            records,
            &baseline.entries,
            baseline.source.clone(),
            settings,
            absences,
        )
        .with_context(|| {
            format!(
                "failed to compare the run with {}",
                baseline.source.describe()
            )
        })?;
        comparison
            .store(run_dir, &baseline.entries)
            .context("failed to store the comparison with the run")?;
        if let Some(msg) = comparison.device_mismatch_message() {
            eprintln!("gpubench: warning: {msg}");
        }
        Ok(comparison)
    }

    /// Whether this is `ab`'s judgement of a head against its base, whose summaries
    /// show the smallest change each benchmark could have detected.
    pub fn is_ab(&self) -> bool {
        self.baseline.kind == SourceKind::Revision
    }

    /// Benchmark `id`'s comparison, when the baseline has it.
    pub fn get(&self, id: &str) -> Option<&BenchmarkComparison> {
        self.set.comparisons.iter().find(|c| c.id == id)
    }

    /// Whether `id` was run but the baseline lacks it (a new benchmark).
    pub fn is_new(&self, id: &str) -> bool {
        self.set.missing_in_baseline.iter().any(|m| m == id)
    }

    /// How outputs name benchmark `id`: as the judged side's `entries` name it
    /// (`<target>/<id>`), else by the bench target its baseline file names (a gone
    /// benchmark), else by its id.
    pub fn name_of(&self, id: &str, entries: &[SummaryEntry]) -> String {
        match entries.iter().find(|e| e.id == id) {
            Some(e) => e.name.clone(),
            None => match self.baseline_targets.get(id) {
                Some(target) => format!("{target}/{id}"),
                None => id.to_string(),
            },
        }
    }

    /// Whether `id` was left out because its baseline ran on another device model
    /// (the [`RunComparison::device_mismatch_message`] covers those).
    pub fn is_device_mismatch(&self, id: &str) -> bool {
        self.device_mismatch.iter().any(|x| x.id == id)
    }

    /// The benchmarks not compared for a reason of their own, as `(id, reason)` in
    /// order; those left out for a device mismatch are covered by
    /// [`RunComparison::device_mismatch_message`] instead.
    pub fn not_compared(&self) -> Vec<(&str, &str)> {
        self.set
            .comparisons
            .iter()
            .filter_map(|b| match &b.outcome {
                ComparisonOutcome::NotCompared { reason } if !self.is_device_mismatch(&b.id) => {
                    Some((b.id.as_str(), reason.as_str()))
                }
                _ => None,
            })
            .collect()
    }

    /// The benchmarks whose verdict is ambiguous whatever their data, as `(id, why)`
    /// in order (too few processes on a side).
    pub fn notes(&self) -> Vec<(&str, &str)> {
        self.set
            .comparisons
            .iter()
            .filter_map(|b| match &b.outcome {
                ComparisonOutcome::Compared { comparison, .. } => {
                    comparison.note.as_deref().map(|n| (b.id.as_str(), n))
                }
                _ => None,
            })
            .collect()
    }

    /// The sentence about a device mismatch, when benchmarks were left out for one:
    /// the warning this stage prints when it declines to compare them, which the
    /// outputs repeat.
    pub fn device_mismatch_message(&self) -> Option<String> {
        let first = self.device_mismatch.first()?;
        let n = self.device_mismatch.len();
        Some(format!(
            "{} was recorded on `{}` but this run is on `{}`: timings from different device \
             models are not comparable, so {n} benchmark{} {} not compared \
             (--allow-device-mismatch compares them anyway)",
            self.baseline.describe(),
            first.baseline_device,
            first.current_device,
            plural(n),
            if n == 1 { "was" } else { "were" },
        ))
    }

    /// The ids whose outcome trips the gate, in order.
    pub fn tripping(&self) -> Vec<&str> {
        self.set
            .comparisons
            .iter()
            .filter(|b| self.settings.fail_on.trips(b, &self.settings.gate))
            .map(|b| b.id.as_str())
            .collect()
    }

    /// The missing evidence that trips the gate (what `--allow-missing` does not
    /// let pass, unless `--fail-on never`), in order.
    pub fn missing_tripping(&self) -> Vec<&Missing> {
        self.missing
            .iter()
            .filter(|m| {
                self.settings
                    .fail_on
                    .trips_on_missing(m, &self.settings.allow_missing)
            })
            .collect()
    }

    /// The missing evidence, each with whether the gate lets it pass, in order.
    pub fn missing_with_allowance(&self) -> Vec<(&Missing, bool)> {
        self.missing
            .iter()
            .map(|m| {
                let passes = !self
                    .settings
                    .fail_on
                    .trips_on_missing(m, &self.settings.allow_missing);
                (m, passes)
            })
            .collect()
    }

    /// How many baseline benchmarks the judged side lacks without being asked to
    /// leave them out (not run, gone).
    pub fn missing_benchmarks(&self) -> usize {
        self.missing
            .iter()
            .filter(|m| matches!(m.kind, MissingKind::NotRun | MissingKind::Gone))
            .count()
    }

    /// Pretty JSON with a trailing newline.
    pub fn to_json_pretty(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("comparisons always serialise");
        s.push('\n');
        s
    }

    /// Stores this comparison in `run_dir` with a copy of the baseline's `entries`;
    /// every file is written atomically.
    pub fn store(&self, run_dir: &Path, entries: &[BaselineEntry]) -> Result<(), StoreError> {
        let copy = run_dir.join(BASELINE_COPY);
        std::fs::create_dir_all(&copy).map_err(|source| StoreError::Io {
            action: "create",
            path: copy.display().to_string(),
            source,
        })?;
        for entry in entries {
            let file = copy.join(format!(
                "{}.json",
                gpubench_record::id::file_stem_for_id(&entry.id)
            ));
            runs::write_atomic(&file, entry.to_json_pretty().as_bytes())?;
        }
        runs::write_atomic(
            &run_dir.join(COMPARISON_FILE),
            self.to_json_pretty().as_bytes(),
        )
    }

    /// Reads `comparison.json` of `run_dir`, when the run was compared.
    pub fn read(run_dir: &Path) -> Result<Option<Self>, ComparisonFileError> {
        let path = run_dir.join(COMPARISON_FILE);
        let p = || path.display().to_string();
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(ComparisonFileError::Io { path: p(), source }),
        };
        let value: serde_json::Value = serde_json::from_str(&text)
            .map_err(|source| ComparisonFileError::Parse { path: p(), source })?;
        let found = value
            .get("format_version")
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(0);
        if found > u64::from(COMPARISON_FORMAT_VERSION) {
            return Err(ComparisonFileError::TooNew {
                path: p(),
                found,
                supported: COMPARISON_FORMAT_VERSION,
            });
        }
        serde_json::from_value(value)
            .map(Some)
            .map_err(|source| ComparisonFileError::Parse { path: p(), source })
    }
}

#[cfg(test)]
pub(crate) mod paired_fixture;
#[cfg(test)]
pub(crate) mod tests;
