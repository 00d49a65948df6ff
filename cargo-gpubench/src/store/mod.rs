//! Everything `cargo gpubench` keeps on disk, described once:
//!
//! ```text
//! <out-dir>/lock                          held by the run writing (one at a time)       runs
//! <out-dir>/latest                        the last finished run (symlink or its id)     runs
//! <out-dir>/runs/<run-id>/manifest.json   the run's index                               manifest
//! <out-dir>/runs/<run-id>/<stem>.json     one record per benchmark                      runs
//! <out-dir>/runs/<run-id>/comparison.json the run judged against its baseline           compare
//! <out-dir>/runs/<run-id>/baseline/       the baseline's files it was judged against    compare
//! <out-dir>/report/                       the HTML report of the latest run             output::html
//! <out-dir>/history/                      the history page of `cargo gpubench history`  output::html
//! <out-dir>/capacity/<name>.json          the latest capacity search                    commands::capacity
//! <workspace>/gpubench/baselines/<name>/  saved baselines, one file per benchmark       baselines
//! <workspace>/gpubench/capacity/<name>/   saved capacity searches, beside the baselines commands::capacity
//! ```
//!
//! `<out-dir>` is `<target-dir>/gpubench` by default (`--out-dir`), the baselines'
//! folder `--baselines-dir`. A run made by `cargo gpubench merge` has the same
//! layout: copies of its inputs' records, and a manifest whose `merged_from` lists
//! the runs it was merged from. Run ids sort by start time. Every file is written to a
//! temporary name and renamed into place, and a baseline is swapped in as a whole
//! directory, so a reader (or an interrupted run) never sees half of anything.
//!
//! [`runs`] owns the run directories and the lock, [`lifecycle`] a run's life from
//! its running manifest to its final one, [`manifest`] a run's index,
//! [`baselines`] which baseline a run is compared with and saved as, and
//! [`references`] what `compare` and `report` take for a run or a baseline, and
//! [`history`] every committed version of a baseline, read from git; [`git`] starts
//! the git processes it and `ab`'s revisions ([`crate::build::revision`]) need.

pub(crate) mod baselines;
pub(crate) mod git;
pub mod history;
pub(crate) mod lifecycle;
pub mod manifest;
pub mod references;
pub mod runs;

use std::path::{Component, Path};

use serde::{Deserialize, Serialize};

/// Whether `path`, named by a file this tool reads (an archive's entry, a run
/// manifest's record), is relative and never steps up or out of the folder it is
/// read in: `a/b.json`, not `../x`, `a/../../x` or `/x`.
pub(crate) fn stays_inside(path: &Path) -> bool {
    let mut parts = 0;
    for part in path.components() {
        match part {
            Component::Normal(_) => parts += 1,
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => return false,
        }
    }
    parts > 0
}

/// Whether a side of a comparison is a saved baseline or a stored run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SourceKind {
    /// A saved baseline, `gpubench/baselines/<name>/`.
    Baseline,
    /// A stored run, `target/gpubench/runs/<id>/`.
    Run,
    /// The base revision of `cargo gpubench ab`, measured with the run it is judged
    /// against (its records under `runs/<id>/base/`).
    Revision,
}

/// One side of a comparison: what it is and where it lives.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Source {
    /// A baseline or a run.
    pub kind: SourceKind,
    /// The baseline's name or the run's id.
    pub name: String,
    /// Its directory.
    pub path: String,
    /// Whether it was chosen by default (the baseline `main`) rather than asked for.
    #[serde(default)]
    pub default: bool,
    /// Its device model (of its first benchmark that has one), e.g. `NVIDIA H200`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
}

impl Source {
    /// `baseline `main`` or `run `2026…``, for sentences.
    pub fn describe(&self) -> String {
        match self.kind {
            SourceKind::Baseline => format!("baseline `{}`", self.name),
            SourceKind::Run => format!("run `{}`", self.name),
            SourceKind::Revision => format!("base `{}`", self.name),
        }
    }
}
