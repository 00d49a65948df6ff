//! Which baseline a run is compared with and saved as, and where baselines live.
//!
//! Baselines are kept at `<workspace>/gpubench/baselines/<name>/` (one file per
//! benchmark, written by `gpubench_analysis::BaselineStore`), or under
//! `--baselines-dir`. A run compares with `--baseline NAME`, or with
//! [`DEFAULT_BASELINE`] when that one is saved, unless `--no-baseline` or
//! `--save-baseline` (a save compares only with a baseline named). The baseline is
//! loaded before anything runs, so a missing, corrupt or newer file stops the run
//! before it spends time, and so a run that also saves over it is compared with the
//! files as they were.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use gpubench_analysis::baseline::SaveReport;
use gpubench_analysis::{BaselineEntry, BaselineStore};
use gpubench_record::record::RawRecord;
use serde::Serialize;

use crate::format::plural;
use crate::store::manifest::RunManifest;
use crate::store::{Source, SourceKind};

/// The baseline a run compares with when none is named and it is saved.
pub(crate) const DEFAULT_BASELINE: &str = "main";

/// The store: `--baselines-dir` (`baselines_dir`, relative to `cwd`), else
/// `<workspace_root>/gpubench/baselines`.
pub(crate) fn store(
    baselines_dir: Option<&Path>,
    workspace_root: &Path,
    cwd: &Path,
) -> BaselineStore {
    match baselines_dir {
        Some(dir) => BaselineStore::new(cwd.join(dir)),
        None => BaselineStore::for_workspace(workspace_root),
    }
}

/// A baseline loaded to compare a run with.
#[derive(Debug, Clone)]
pub struct LoadedBaseline {
    /// Which one, and where.
    pub source: Source,
    /// Its benchmarks, sorted by id.
    pub entries: Vec<BaselineEntry>,
    /// JSON files in its directory that are not baseline files, left alone.
    pub ignored: Vec<PathBuf>,
}

impl LoadedBaseline {
    /// What a command says on loading it: which baseline, how many benchmarks,
    /// whether it was the default; then one note per file left alone.
    pub fn announcement(&self) -> (String, Vec<String>) {
        let n = self.entries.len();
        let how = if self.source.default {
            "; it is the default when saved: --baseline NAME picks another, --no-baseline skips"
        } else {
            ""
        };
        (
            format!(
                "comparing with baseline `{}` ({n} benchmark{} in {}{how})",
                self.source.name,
                plural(n),
                self.source.path
            ),
            ignored_notes(&self.ignored),
        )
    }
}

/// Which baseline a run compares with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Wanted {
    /// `--no-baseline`: none.
    None,
    /// Nothing named: `main` when it is saved.
    Default,
    /// `--baseline NAME`: this one, which must exist.
    Named(String),
}

/// Loads the baseline a run (or a merged run) compares with: `--baseline NAME`
/// (which must exist), or `main` when it is saved; none with `--no-baseline` or
/// without `main`. [`LoadedBaseline::announcement`] is what to tell the user.
pub(crate) fn load_for_run(
    wanted: &Wanted,
    store: &BaselineStore,
) -> Result<Option<LoadedBaseline>> {
    let (name, default) = match wanted {
        Wanted::None => return Ok(None),
        Wanted::Named(name) => (name.as_str(), false),
        Wanted::Default => (DEFAULT_BASELINE, true),
    };
    let dir = store.dir(name)?;
    if default && gpubench_analysis::atomic_dir::readable(&dir).is_none() {
        return Ok(None);
    }
    let loaded = store.load_noting(name).with_context(|| {
        let saved = match store.list() {
            Ok(names) if !names.is_empty() => format!(" (saved baselines: {})", names.join(", ")),
            Ok(_) => format!(" (no baselines are saved in {})", store.root.display()),
            Err(_) => String::new(),
        };
        let hint = if default {
            "; --no-baseline skips the comparison"
        } else {
            ""
        };
        format!("failed to load baseline `{name}` to compare with{saved}{hint}")
    })?;
    Ok(Some(LoadedBaseline {
        source: Source {
            kind: SourceKind::Baseline,
            name: name.to_string(),
            path: dir.display().to_string(),
            default,
            device: None,
        },
        entries: loaded.entries,
        ignored: loaded.ignored,
    }))
}

/// The notes naming the JSON files of a baseline directory that are not baseline
/// files, so nothing beside the baselines is left out without a word.
pub(crate) fn ignored_notes(files: &[PathBuf]) -> Vec<String> {
    files
        .iter()
        .map(|file| {
            format!(
                "{} is not a baseline file (it has no `id` and `format_version`): ignored",
                file.display()
            )
        })
        .collect()
}

/// What `--save-baseline` wrote.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct SavedBaseline {
    /// The name.
    pub name: String,
    /// Its directory.
    pub dir: PathBuf,
    /// Files written.
    pub written: Vec<PathBuf>,
    /// Benchmarks not saved, and why.
    pub skipped: Vec<(String, String)>,
    /// The ids of `skipped` whose previous file is kept.
    pub kept: Vec<String>,
}

impl SavedBaseline {
    fn new(name: &str, report: SaveReport) -> Self {
        SavedBaseline {
            name: name.to_string(),
            dir: report.dir,
            written: report.written,
            skipped: report
                .skipped
                .into_iter()
                .map(|(id, why)| (id, why.to_string()))
                .collect(),
            kept: report.kept,
        }
    }

    /// One line for stderr: what was saved where, and what was not.
    pub(crate) fn describe(&self) -> String {
        let n = self.written.len();
        let mut line = format!(
            "saved baseline `{}`: {n} benchmark{} in {}",
            self.name,
            plural(n),
            self.dir.display()
        );
        if !self.skipped.is_empty() {
            let skipped: Vec<String> = self
                .skipped
                .iter()
                .map(|(id, why)| {
                    let kept = if self.kept.contains(id) {
                        "previous file kept"
                    } else {
                        "none saved before"
                    };
                    format!("{id} ({why}; {kept})")
                })
                .collect();
            line.push_str(&format!("; not saved: {}", skipped.join(", ")));
        }
        line
    }
}

/// Refuses `--save-baseline NAME` before anything is measured when saving it would
/// fail: a bad name, or a file where its directory (or a save's staging directory)
/// goes. [`save`] checks again.
pub(crate) fn check_save(store: &BaselineStore, name: &str) -> Result<()> {
    store.check_save(name).with_context(|| {
        format!("failed to save baseline `{name}` (checked before any benchmark runs)")
    })?;
    Ok(())
}

/// Saves `records` as baseline `name`: one file per benchmark that passed, each
/// written atomically and naming its bench target as `manifest` (the run's) lists
/// it; other files of the baseline are left alone.
pub(crate) fn save(
    store: &BaselineStore,
    name: &str,
    records: &[RawRecord],
    manifest: &RunManifest,
) -> Result<SavedBaseline> {
    let target_of = |id: &str| {
        manifest
            .benchmarks
            .iter()
            .find(|b| b.id == id)
            .map(|b| b.target.clone())
    };
    let report = store
        .save_with_targets(name, records, target_of)
        .with_context(|| format!("failed to save baseline `{name}`"))?;
    Ok(SavedBaseline::new(name, report))
}
