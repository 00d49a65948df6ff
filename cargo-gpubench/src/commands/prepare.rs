//! What a run needs before it lists its benchmarks: the bench executables built
//! from the workspace (with the libtorch handed to tch's build), given with
//! `--exe`, or unpacked from `--archive`; and where its runs and baselines go.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use anyhow::{Context, Result};

use crate::archive::{self, unpack::Extracted};
use crate::build::compile::BenchExecutable;
use crate::build::libtorch::{self, Libtorch};
use crate::cli::Sources;
use crate::exit_code::UsageError;
use crate::format::plural;
use crate::store::manifest::ManifestArchive;
use crate::store::runs::RunStore;

/// The default output directory with `--exe`, relative to the current directory.
const EXE_MODE_OUT_DIR: &str = "target/gpubench";

/// What running needs, from a workspace build or from `--exe`.
pub(super) struct Prepared {
    pub(super) executables: Vec<BenchExecutable>,
    pub(super) native_paths: Vec<PathBuf>,
    /// Where runs are stored.
    pub(super) out_dir: PathBuf,
    /// Cargo's target directory (build-script library paths under it are put on the
    /// loader path, as `cargo bench` does).
    pub(super) target_dir: PathBuf,
    /// The workspace root (the current directory with `--exe`), under which
    /// `gpubench/baselines/` lives and a `.venv` with torch may be.
    pub(super) workspace_root: PathBuf,
    /// Taken before building, so a second run fails before it spends a build.
    pub(super) store: Option<RunStore>,
    /// The libtorch found before building and handed to the build, if any.
    pub(super) libtorch: Option<Libtorch>,
    /// With `--archive`: the extracted archive, removed when the run ends.
    pub(super) archive: Option<FromArchive>,
}

/// An archive extracted for a run.
pub(super) struct FromArchive {
    /// The archive file, absolute.
    pub(super) file: PathBuf,
    pub(super) extracted: Extracted,
    /// Holds the directory it is extracted into; removing it on drop.
    _dir: tempfile::TempDir,
}

impl FromArchive {
    pub(super) fn describe(&self) -> ManifestArchive {
        let m = &self.extracted.manifest;
        ManifestArchive {
            path: self.file.display().to_string(),
            created_at: m.created_at.clone(),
            git_commit: m.git_commit.clone(),
            libtorch_version: m.libtorch_version.clone(),
        }
    }
}

/// The benchmarks `args` name (an archive, executables or the workspace's bench
/// targets, built) and the libtorch their processes load: found before the build when
/// it was handed to it, else searched now with the build scripts' library paths too.
/// `None` when interrupted.
pub(super) fn prepare_benchmarks(
    args: &Sources<'_>,
    stop: &AtomicBool,
) -> Result<Option<(Prepared, Libtorch)>> {
    let prepared = if let Some(file) = &args.prebuilt.archive {
        Some(prepare_archive(file, args)?)
    } else if args.prebuilt.exes.is_empty() {
        prepare_workspace(args, stop)?
    } else {
        Some(prepare_executables(args)?)
    };
    let Some(prepared) = prepared else {
        return Ok(None);
    };
    let libtorch = match prepared.libtorch.clone() {
        Some(found) => found,
        None => libtorch::locate(&libtorch::Search::from_env(
            vec![prepared.workspace_root.clone()],
            prepared.native_paths.clone(),
        ))
        .context("failed to set up benchmark processes")?,
    };
    Ok(Some((prepared, libtorch)))
}

/// Discovers and builds; `None` when interrupted.
pub(super) fn prepare_workspace(args: &Sources<'_>, stop: &AtomicBool) -> Result<Option<Prepared>> {
    let workspace = crate::build::discover::find_targets(
        args.targets.manifest_path.as_deref(),
        &args.targets.packages,
        &args.targets.benches,
    )?;
    let out_dir = match args.out_dir {
        Some(dir) => std::env::current_dir()
            .context("failed to read the current directory")?
            .join(dir),
        None => workspace.target_dir.join("gpubench"),
    };
    let store = if args.list {
        None
    } else {
        Some(RunStore::open(&out_dir)?)
    };
    let Some((built, libtorch)) = crate::build::compile::build_workspace(
        args.targets.manifest_path.as_deref(),
        &workspace,
        stop,
    )?
    else {
        return Ok(None);
    };
    Ok(Some(Prepared {
        executables: built.executables,
        native_paths: built.native_paths,
        out_dir,
        target_dir: workspace.target_dir,
        workspace_root: workspace.root,
        store,
        libtorch,
        archive: None,
    }))
}

/// Takes `--exe` executables as they are.
pub(super) fn prepare_executables(args: &Sources<'_>) -> Result<Prepared> {
    let mut executables = Vec::new();
    for path in &args.prebuilt.exes {
        if !path.is_file() {
            return Err(UsageError(format!(
                "bench executable {} does not exist",
                path.display()
            ))
            .into());
        }
        let exe = BenchExecutable::from_path(
            std::path::absolute(path)
                .with_context(|| format!("failed to resolve the path {}", path.display()))?,
        );
        if !args.targets.benches.is_empty() && !args.targets.benches.contains(&exe.target) {
            continue;
        }
        executables.push(exe);
    }
    if executables.is_empty() {
        return Err(UsageError(format!(
            "no --exe executable is one of the bench targets {}",
            args.targets.benches.join(", ")
        ))
        .into());
    }
    executables.sort();
    let cwd = std::env::current_dir().context("failed to read the current directory")?;
    Ok(Prepared {
        executables,
        native_paths: Vec::new(),
        out_dir: cwd.join(args.out_dir.unwrap_or(Path::new(EXE_MODE_OUT_DIR))),
        target_dir: cwd.join("target"),
        workspace_root: cwd,
        store: None,
        libtorch: None,
        archive: None,
    })
}

/// Extracts `--archive FILE` into a temporary directory and takes its executables,
/// once the libtorch here is the version they were built against.
pub(super) fn prepare_archive(file: &Path, args: &Sources<'_>) -> Result<Prepared> {
    if !file.is_file() {
        return Err(UsageError(format!(
            "archive {} does not exist: make one with `cargo gpubench archive -o FILE`",
            file.display()
        ))
        .into());
    }
    let dir = tempfile::Builder::new()
        .prefix("gpubench-archive-")
        .tempdir()
        .context(
            "failed to make a temporary directory to extract the archive into (TMPDIR picks where)",
        )?;
    let extracted = archive::unpack::extract(file, dir.path())?;
    let m = &extracted.manifest;
    let cwd = std::env::current_dir().context("failed to read the current directory")?;
    let libtorch = libtorch::locate(&libtorch::Search::from_env(vec![cwd.clone()], vec![]))
        .context("failed to find the libtorch to run the archive's benchmarks with")?;
    let here = crate::build::libtorch::libtorch_version(&libtorch.lib_dir);
    let note = archive::check_libtorch(
        file,
        m.libtorch_version.as_deref(),
        &libtorch,
        here.as_deref(),
    )?;
    if let Some(note) = note {
        crate::console::note(format_args!("{note}"));
    }
    let mut executables: Vec<BenchExecutable> = m
        .executables
        .iter()
        .filter(|e| args.targets.benches.is_empty() || args.targets.benches.contains(&e.target))
        .map(|e| BenchExecutable {
            package: Some(e.package.clone()),
            target: e.target.clone(),
            path: extracted.path_of(&e.file),
        })
        .collect();
    if executables.is_empty() {
        let targets: Vec<&str> = m.executables.iter().map(|e| e.target.as_str()).collect();
        return Err(UsageError(format!(
            "archive {} has no bench target {} (it has: {})",
            file.display(),
            args.targets.benches.join(", "),
            targets.join(", ")
        ))
        .into());
    }
    executables.sort();
    crate::console::status(format_args!(
        "from archive {} (made {}{}): {} executable{}",
        file.display(),
        m.created_at,
        m.git_commit
            .as_deref()
            .map(|c| format!(" of commit {}", &c[..c.len().min(12)]))
            .unwrap_or_default(),
        executables.len(),
        plural(executables.len())
    ));
    Ok(Prepared {
        executables,
        native_paths: vec![extracted.lib_dir()],
        out_dir: cwd.join(args.out_dir.unwrap_or(Path::new(EXE_MODE_OUT_DIR))),
        // The bundled libraries are under it, so they go on the loader path.
        target_dir: dir.path().to_path_buf(),
        workspace_root: cwd,
        store: None,
        libtorch: Some(libtorch),
        archive: Some(FromArchive {
            file: std::path::absolute(file)
                .with_context(|| format!("failed to resolve the path {}", file.display()))?,
            extracted,
            _dir: dir,
        }),
    })
}
