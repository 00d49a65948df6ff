//! When a revision cannot be paired in one process (its gpubench-core predates
//! `export_paired`, or its bench code does not build as a library): its bench
//! targets built as the bench executables a run uses, with `cargo bench --no-run`
//! in the revision's workspace and the shared target directory, so base and head
//! can be measured in interleaved processes instead.
//!
//! The base builds into a target directory of its own,
//! `<target-dir>/gpubench/base-target/`: cargo names a workspace member's
//! artefacts by a hash of its package id taken relative to the workspace root, the
//! same for the working tree and the base's worktree, so in one target directory the
//! two revisions' executables (and their freshness records) would be one file, and
//! each build would take the other's for up to date. The base's directory is a
//! build cache like the target directory itself, kept between runs (outside
//! `gpubench/ab/`, which holds only what one `ab` uses while it runs), so only its
//! first build compiles the dependencies again.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::build::compile::{self, BuildOutput, CompileError};
use crate::build::discover::{self, BenchTarget, DiscoverError};
use crate::build::revision::Revision;
use gpubench_record::paired::Role;

/// Where the base's executables are built, under the target directory.
pub const BASE_TARGET_DIR: &str = "gpubench/base-target";

/// A revision's bench targets, selected and ready to build as executables.
#[derive(Debug, Clone)]
pub struct ExecutablePlan {
    /// The revision's workspace root, where cargo runs.
    pub revision_root: PathBuf,
    /// The target directory this revision builds into (the base's own, module docs).
    pub target_dir: PathBuf,
    /// The bench targets, as a run selects them.
    pub targets: Vec<BenchTarget>,
}

/// Reads `revision`'s workspace and selects its bench targets as a run does.
pub fn prepare(
    cargo: &Path,
    revision: &Revision,
    packages: &[String],
    benches: &[String],
    target_dir: &Path,
) -> Result<ExecutablePlan, DiscoverError> {
    let metadata = discover::metadata_in(cargo, &revision.manifest_path(), &revision.root)?;
    Ok(ExecutablePlan {
        revision_root: revision.root.clone(),
        target_dir: match revision.role {
            Role::Head => target_dir.to_path_buf(),
            Role::Base => target_dir.join(BASE_TARGET_DIR),
        },
        targets: discover::select_targets(&metadata, packages, benches)?,
    })
}

impl ExecutablePlan {
    /// A run's `cargo bench --no-run` of the targets, in the revision's root, into
    /// its target directory. Set what tch's build needs on it.
    pub fn command(&self, cargo: &Path) -> Command {
        let mut cmd = compile::build_command(
            cargo,
            Some(&self.revision_root.join("Cargo.toml")),
            &self.targets,
        );
        cmd.current_dir(&self.revision_root)
            .env("CARGO_TARGET_DIR", &self.target_dir);
        cmd
    }

    /// Runs `cmd` as a run's build does: the executables a run uses.
    pub fn build(&self, cmd: Command) -> Result<BuildOutput, CompileError> {
        compile::build(cmd, &self.targets)
    }
}
