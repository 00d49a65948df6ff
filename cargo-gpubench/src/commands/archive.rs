//! `cargo gpubench archive`: discover and build the bench targets as a run does, list
//! their benchmarks, and bundle the gpubench harnesses with what running them
//! elsewhere needs into one file ([`crate::archive`]).

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};
use gpubench_analysis::BaselineStore;

use crate::archive::pack::{self, Bundle, BundledExecutable};
use crate::archive::ArchivedBenchmark;
use crate::build::libtorch;
use crate::cli::ArchiveArgs;
use crate::exit_code::Exit;
use crate::exit_code::UsageError;
use crate::format::{bytes, plural};

/// How long an executable may take to list its benchmarks (a run's default
/// `--timeout`).
const LIST_TIMEOUT: Duration = Duration::from_secs(300);

/// Builds, lists and writes the archive `args` asks for.
pub(crate) fn run(args: &ArchiveArgs) -> Result<Exit> {
    let stop = crate::execute::process::interrupt_flag()?;
    let cwd = std::env::current_dir().context("failed to read the current directory")?;
    let output = cwd.join(&args.output);
    if output.is_dir() {
        return Err(UsageError(format!(
            "-o {} is a directory: name the archive file to write, e.g. -o benches.tar.gz",
            args.output.display()
        ))
        .into());
    }

    let workspace = crate::build::discover::find_targets(
        args.targets.manifest_path.as_deref(),
        &args.targets.packages,
        &args.targets.benches,
    )?;
    let Some((built, handed)) = crate::build::compile::build_workspace(
        args.targets.manifest_path.as_deref(),
        &workspace,
        &stop,
    )?
    else {
        return Ok(Exit::Interrupted);
    };
    let libtorch = match handed {
        Some(found) => found,
        None => libtorch::locate(&libtorch::Search::from_env(
            vec![workspace.root.clone()],
            built.native_paths.clone(),
        ))
        .context("failed to find the libtorch to list the benchmarks with")?,
    };
    let env = crate::execute::process::for_benchmarks(
        &libtorch,
        &built.native_paths,
        &workspace.target_dir,
        &crate::cli::option_env_vars(),
    );
    let Some((benchmarks, harnesses)) =
        // The harness's default device: where the archive is made is seldom where it
        // runs, and a run lists its benchmarks again for its own device.
        crate::execute::listing::list_all(&built.executables, None, &env, LIST_TIMEOUT, &stop)?
    else {
        return Ok(Exit::Interrupted);
    };
    if harnesses.is_empty() {
        return Err(UsageError(
            "none of the bench targets is a gpubench harness: nothing to archive".into(),
        )
        .into());
    }

    let executables = harnesses
        .into_iter()
        .map(|exe| BundledExecutable {
            benchmarks: benchmarks
                .iter()
                .filter(|b| b.exe == exe.path)
                .map(|b| ArchivedBenchmark {
                    id: b.id.clone(),
                    ignored: b.ignored,
                })
                .collect(),
            exe,
        })
        .collect();
    let store = BaselineStore::for_workspace(&workspace.root);
    let mut baselines = Vec::new();
    for name in store.list().context("failed to find the saved baselines")? {
        let dir = store.dir(&name)?;
        if let Some(readable) = gpubench_analysis::atomic_dir::readable(&dir) {
            baselines.push((name, readable));
        }
    }
    let bundle = Bundle {
        executables,
        native_dirs: built
            .native_paths
            .iter()
            .filter(|p| p.starts_with(&workspace.target_dir))
            .cloned()
            .collect(),
        baselines,
        git_commit: git_commit(&workspace.root),
        libtorch_version: crate::build::libtorch::libtorch_version(&libtorch.lib_dir),
    };
    if bundle.libtorch_version.is_none() {
        crate::console::warning(format_args!(
            "cannot tell the version of the libtorch in {} (no version.py or build-version beside it): the archive will not say which libtorch it needs",
            libtorch.lib_dir.display()
        ));
    }
    let written = pack::write(&bundle, &output)
        .with_context(|| format!("failed to write archive {}", output.display()))?;
    for note in &written.notes {
        crate::console::note(format_args!("{note}"));
    }
    let m = &written.manifest;
    let count = |n: usize, word: &str| format!("{n} {word}{}", plural(n));
    crate::console::status(format_args!(
        "archived {} ({}), {}, {} (libtorch {}, {}) into {} ({})",
        count(m.executables.len(), "executable"),
        count(m.benchmark_count(), "benchmark"),
        count(m.native_libs.len(), "native library file"),
        count(m.baselines.len(), "baseline"),
        m.libtorch_version.as_deref().unwrap_or("version unknown"),
        m.git_commit
            .as_deref()
            .map_or("not a git repository".to_string(), |c| format!(
                "commit {c}"
            )),
        output.display(),
        bytes(written.bytes)
    ));
    Ok(Exit::Success)
}

/// `git rev-parse HEAD` in `root`, when it is in a git repository.
fn git_commit(root: &Path) -> Option<String> {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["rev-parse", "HEAD"])
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
        .filter(|s| !s.is_empty())
}
