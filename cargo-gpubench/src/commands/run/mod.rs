//! `cargo gpubench [run]` from start to end: discover, build, list, select, load the
//! baseline, run, store, compare, render the HTML report, save the baseline,
//! summarise. This is the edge where the typed errors of the other modules get their
//! context.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use anyhow::{Context, Result};

use crate::archive::{self, unpack::Extracted};
use crate::build::compile::{self, BenchExecutable};
use crate::build::discover;
use crate::build::libtorch::{self, Libtorch};
use crate::cli::{Format, RunArgs, TargetArgs};
use crate::compare::VerdictSettings;
use crate::error::UsageError;
use crate::execute::process::ChildEnv;
use crate::execute::runner::RunOptions;
use crate::execute::select::{self, Benchmark, Filter, Ignored};
use crate::execute::{devices, listing};
use crate::exit_code::Exit;
use crate::format::plural;
use crate::output::html::run_report::{self};
use crate::store::baselines::{self};
use crate::store::manifest::ManifestArchive;
use crate::store::runs::RunStore;
use gpubench_analysis::protocol::{GIT_COMMIT_VAR, RECORD_DIR_VAR, ROUND_VAR};

mod session;

use session::{Baselines, Session};

/// The default output directory with `--exe`, relative to the current directory.
const EXE_MODE_OUT_DIR: &str = "target/gpubench";

/// Runs benchmarks as `args` say; `command_line` is recorded in the run's manifest.
pub fn run(args: &RunArgs, command_line: &[OsString]) -> Result<Exit> {
    let stop = interrupt_flag()?;

    let prepared = if let Some(file) = &args.archive {
        Some(prepare_archive(file, args)?)
    } else if args.exes.is_empty() {
        prepare_workspace(args, &stop)?
    } else {
        Some(prepare_executables(args)?)
    };
    let Some(prepared) = prepared else {
        return Ok(Exit::Interrupted);
    };

    // Found before the build when it was handed to it; else searched now, with the
    // build scripts' library paths too.
    let libtorch = match prepared.libtorch.clone() {
        Some(found) => found,
        None => libtorch::locate(&libtorch::Search::from_env(
            vec![prepared.workspace_root.clone()],
            prepared.native_paths.clone(),
        ))
        .context("failed to set up benchmark processes")?,
    };
    let mut env = child_env(&libtorch, &prepared.native_paths, &prepared.target_dir);
    if let Some(from) = &prepared.archive {
        // The records are of the commit the archive was built from (none: empty), not
        // of whatever repository the run happens to be in.
        let commit = from
            .extracted
            .manifest
            .git_commit
            .clone()
            .unwrap_or_default();
        env.set.push((GIT_COMMIT_VAR.into(), commit.into()));
    }

    let Some((all, harnesses)) = list_benchmarks(&prepared.executables, &env, args.timeout, &stop)?
    else {
        return Ok(Exit::Interrupted);
    };

    let filter = Filter {
        patterns: args.filters.clone(),
        exact: args.exact,
        ignored: if args.ignored {
            Ignored::Only
        } else if args.include_ignored {
            Ignored::Include
        } else {
            Ignored::Skip
        },
    };
    if args.list {
        print_list(&all, &filter, args.format);
        // A run of these would be refused: say so now, not at run time.
        let shown: Vec<Benchmark> = all
            .iter()
            .filter(|b| filter.matches_name(b))
            .cloned()
            .collect();
        if let Err(e) = select::check_unique_ids(&shown) {
            eprintln!("gpubench: warning: {e}");
        }
        return Ok(Exit::Success);
    }

    let selected = select::select(&all, &filter);
    if selected.is_empty() {
        return Err(select::explain_empty(&all, &filter).into());
    }
    select::check_unique_ids(&selected)?;
    let selected = match args.partition {
        None => selected,
        Some(p) => {
            let part = p.split(&selected);
            eprintln!(
                "gpubench: partition {p}: {} of the {} selected benchmarks",
                part.len(),
                selected.len()
            );
            if part.is_empty() {
                eprintln!("gpubench: partition {p} holds no benchmark: nothing to run");
                return Ok(Exit::Success);
            }
            part
        }
    };
    if let Some(device) = args.device.as_deref() {
        let asked = format!("--device {device}");
        devices::check(&selected[0].exe, device, &asked, &env, args.timeout, &stop)?;
    }
    let devices = match &args.devices {
        Some(list) => {
            let found = devices::resolve(list, &selected[0].exe, &env, args.timeout, &stop)?;
            let named: Vec<String> = found
                .iter()
                .map(|d| format!("{} ({})", d.label, d.model))
                .collect();
            eprintln!(
                "gpubench: measuring on {} device{} at once: {}",
                found.len(),
                plural(found.len()),
                named.join(", ")
            );
            found
        }
        None => Vec::new(),
    };

    // Loaded before anything runs: a missing or corrupt baseline stops the run before
    // it spends time, and a run that saves over it is compared with it as it was.
    let cwd = std::env::current_dir().context("failed to read the current directory")?;
    let baseline_store = baselines::store(
        args.verdicts.baselines_dir.as_deref(),
        &prepared.workspace_root,
        &cwd,
    );
    // From an archive, the baselines it bundles are compared with (a saved one goes to
    // the usual place: it must outlive the extracted archive).
    let compare_store = match &prepared.archive {
        Some(from) if args.verdicts.baselines_dir.is_none() => {
            gpubench_analysis::BaselineStore::new(from.extracted.baselines_root())
        }
        _ => baseline_store.clone(),
    };
    let baseline = baselines::load_for_run(&args.baselines, &compare_store)?;

    let store = match prepared.store {
        Some(store) => store,
        None => RunStore::open(&prepared.out_dir)?,
    };
    for note in store.mark_incomplete_runs()? {
        eprintln!("gpubench: note: {note}");
    }
    let processes = args.process_policy();
    let defaults = if args.quick {
        gpubench_analysis::MeasurementConfig::quick()
    } else {
        gpubench_analysis::MeasurementConfig::standard()
    };
    let measurement_time = args
        .measure
        .measurement_time
        .unwrap_or(defaults.measurement_time_s);
    let warmup_time = args.measure.warm_up_time.unwrap_or(defaults.warmup_time_s);
    let opts = RunOptions {
        device: args.device.clone(),
        quick: args.quick,
        flush_l2: args.flush_l2,
        timeout: args.timeout,
        processes,
        measurement_time_s: RunOptions::split_measurement_time(measurement_time, &processes),
        measure: args.measure.clone(),
    };
    // A benchmark gets rounds beyond its floor only while its processes have taken
    // less than twice its warm-up and measurement time.
    let budget = std::time::Duration::from_secs_f64(2.0 * (warmup_time + measurement_time));
    let session = Session {
        store: &store,
        opts: &opts,
        budget,
        env: &env,
        stop: &stop,
        format: args.format,
        devices,
        partition: args.partition,
        baselines: Baselines {
            store: &baseline_store,
            compare: baseline.as_ref(),
            save_as: args.baselines.save_baseline.as_deref(),
            settings: VerdictSettings::from_args(&args.verdicts),
        },
        summary_file: args.verdicts.summary_file.as_ref().map(|p| cwd.join(p)),
        report_dir: (!args.no_report).then(|| run_report::report_dir(store.dir())),
        archive: prepared
            .archive
            .as_ref()
            .map(|a| (a.describe(), a.extracted.dir.clone())),
    };
    eprintln!(
        "gpubench: running {} benchmark{} (libtorch: {}, from {})",
        selected.len(),
        plural(selected.len()),
        libtorch.lib_dir.display(),
        libtorch.source
    );
    session.run_all(&selected, &harnesses, &libtorch, command_line)
}

/// What running needs, from a workspace build or from `--exe`.
struct Prepared {
    executables: Vec<BenchExecutable>,
    native_paths: Vec<PathBuf>,
    /// Where runs are stored.
    out_dir: PathBuf,
    /// Cargo's target directory (build-script library paths under it are put on the
    /// loader path, as `cargo bench` does).
    target_dir: PathBuf,
    /// The workspace root (the current directory with `--exe`), under which
    /// `gpubench/baselines/` lives and a `.venv` with torch may be.
    workspace_root: PathBuf,
    /// Taken before building, so a second run fails before it spends a build.
    store: Option<RunStore>,
    /// The libtorch found before building and handed to the build, if any.
    libtorch: Option<Libtorch>,
    /// With `--archive`: the extracted archive, removed when the run ends.
    archive: Option<FromArchive>,
}

/// An archive extracted for a run.
struct FromArchive {
    /// The archive file, absolute.
    file: PathBuf,
    extracted: Extracted,
    /// Holds the directory it is extracted into; removing it on drop.
    _dir: tempfile::TempDir,
}

impl FromArchive {
    fn describe(&self) -> ManifestArchive {
        let m = &self.extracted.manifest;
        ManifestArchive {
            path: self.file.display().to_string(),
            created_at: m.created_at.clone(),
            git_commit: m.git_commit.clone(),
            libtorch_version: m.libtorch_version.clone(),
        }
    }
}

/// The bench targets of the workspace that `targets` selects, found with the cargo
/// that runs this (`CARGO`).
pub(super) fn discover_targets(targets: &TargetArgs) -> Result<discover::Workspace> {
    discover::discover(
        &cargo(),
        targets.manifest_path.as_deref(),
        &targets.packages,
        &targets.benches,
    )
    .context("failed to discover bench targets")
}

/// Builds `workspace`'s bench targets, handing tch's build the libtorch the
/// benchmarks will load; returns the build and the libtorch handed over, or `None`
/// when interrupted.
pub(super) fn build_targets(
    manifest_path: Option<&Path>,
    workspace: &discover::Workspace,
    stop: &AtomicBool,
) -> Result<Option<(compile::BuildOutput, Option<Libtorch>)>> {
    let mut cmd = compile::build_command(&cargo(), manifest_path, &workspace.targets);
    let libtorch = hand_libtorch_to_the_build(&mut cmd, &workspace.root)?;
    let built = compile::build(cmd, &workspace.targets);
    if stop.load(Ordering::SeqCst) {
        return Ok(None);
    }
    Ok(Some((
        built.context("failed to build bench targets")?,
        libtorch,
    )))
}

/// The cargo that runs this subcommand (`CARGO`), else `cargo`.
fn cargo() -> PathBuf {
    PathBuf::from(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}

/// Discovers and builds; `None` when interrupted.
fn prepare_workspace(args: &RunArgs, stop: &AtomicBool) -> Result<Option<Prepared>> {
    let workspace = discover_targets(&args.targets)?;
    let out_dir = match &args.out_dir {
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
    let Some((built, libtorch)) =
        build_targets(args.targets.manifest_path.as_deref(), &workspace, stop)?
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
fn prepare_executables(args: &RunArgs) -> Result<Prepared> {
    let mut executables = Vec::new();
    for path in &args.exes {
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
        out_dir: cwd.join(
            args.out_dir
                .as_deref()
                .unwrap_or(Path::new(EXE_MODE_OUT_DIR)),
        ),
        target_dir: cwd.join("target"),
        workspace_root: cwd,
        store: None,
        libtorch: None,
        archive: None,
    })
}

/// Extracts `--archive FILE` into a temporary directory and takes its executables,
/// once the libtorch here is the version they were built against.
fn prepare_archive(file: &Path, args: &RunArgs) -> Result<Prepared> {
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
    let here = super::doctor::libtorch_version(&libtorch.lib_dir);
    let note = archive::check_libtorch(
        file,
        m.libtorch_version.as_deref(),
        &libtorch,
        here.as_deref(),
    )?;
    if let Some(note) = note {
        eprintln!("gpubench: note: {note}");
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
    eprintln!(
        "gpubench: from archive {} (made {}{}): {} executable{}",
        file.display(),
        m.created_at,
        m.git_commit
            .as_deref()
            .map(|c| format!(" of commit {}", &c[..c.len().min(12)]))
            .unwrap_or_default(),
        executables.len(),
        plural(executables.len())
    );
    Ok(Prepared {
        executables,
        native_paths: vec![extracted.lib_dir()],
        out_dir: cwd.join(
            args.out_dir
                .as_deref()
                .unwrap_or(Path::new(EXE_MODE_OUT_DIR)),
        ),
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

/// Lists the benchmarks of `executables`, skipping (with a note) those that are not
/// gpubench harnesses. Returns the benchmarks and the harnesses; `None` when
/// interrupted.
pub(super) fn list_benchmarks(
    executables: &[BenchExecutable],
    env: &ChildEnv,
    timeout: std::time::Duration,
    stop: &AtomicBool,
) -> Result<Option<(Vec<Benchmark>, Vec<BenchExecutable>)>> {
    let mut all = Vec::new();
    let mut harnesses = Vec::new();
    for exe in executables {
        let listed = match listing::list(&exe.path, env, timeout, stop)? {
            listing::Listing::Gpubench(listed) => listed,
            listing::Listing::NotGpubench => {
                eprintln!(
                    "gpubench: note: skipped {}: not a gpubench harness (no handshake on --list; a criterion or libtest bench beside gpubench ones is left to `cargo bench`)",
                    exe.target
                );
                continue;
            }
        };
        harnesses.push(exe.clone());
        all.extend(listed.into_iter().map(|b| Benchmark {
            package: exe.package.clone(),
            target: exe.target.clone(),
            exe: exe.path.clone(),
            id: b.id,
            ignored: b.ignored,
        }));
        if stop.load(Ordering::SeqCst) {
            return Ok(None);
        }
    }
    Ok(Some((all, harnesses)))
}

/// The environment of benchmark processes: libtorch (and build-script libraries in
/// the target directory) on the loader path; the subcommand's own `GPUBENCH_*`
/// options removed, since they reach the harness as arguments.
pub(super) fn child_env(
    libtorch: &Libtorch,
    native_paths: &[PathBuf],
    target_dir: &Path,
) -> ChildEnv {
    let mut dirs = vec![libtorch.lib_dir.clone()];
    dirs.extend(
        native_paths
            .iter()
            .filter(|p| p.starts_with(target_dir))
            .cloned(),
    );
    let var = libtorch::loader_path_var();
    let existing = std::env::var_os(var);
    let mut remove: Vec<OsString> = crate::cli::option_env_vars()
        .into_iter()
        .map(OsString::from)
        .collect();
    remove.push(RECORD_DIR_VAR.into());
    remove.push(ROUND_VAR.into());
    ChildEnv {
        set: vec![(
            var.into(),
            libtorch::prepend_paths(&dirs, existing.as_deref()),
        )],
        remove,
    }
}

/// tch's build needs `LIBTORCH` (or the like) to find libtorch. When none of tch's
/// own variables is set, the libtorch that benchmarks would load is looked up before
/// building and handed to the build, so a workspace builds with no environment set;
/// when there is none, the run stops here with the one command that sets it up.
/// Returns what it handed over, which the benchmarks then load too.
pub(super) fn hand_libtorch_to_the_build(
    cmd: &mut std::process::Command,
    root: &std::path::Path,
) -> Result<Option<Libtorch>> {
    let own = [
        "LIBTORCH",
        "LIBTORCH_USE_PYTORCH",
        "LIBTORCH_LIB",
        "LIBTORCH_INCLUDE",
    ];
    if own
        .iter()
        .any(|v| std::env::var_os(v).is_some_and(|x| !x.is_empty()))
    {
        return Ok(None);
    }
    let found = libtorch::locate(&libtorch::Search::from_env(
        vec![root.to_path_buf()],
        vec![],
    ))
    .context("failed to find the libtorch to build tch against")?;
    match found.root() {
        Some(dir) => {
            cmd.env("LIBTORCH", dir);
        }
        None => eprintln!(
            "gpubench: note: {} (from {}) has no include/ beside it; tch's build must find libtorch by itself",
            found.lib_dir.display(),
            found.source
        ),
    }
    Ok(Some(found))
}

fn print_list(all: &[Benchmark], filter: &Filter, format: Format) {
    let mut shown: Vec<Benchmark> = all
        .iter()
        .filter(|b| filter.matches_name(b) && (filter.ignored != Ignored::Only || b.ignored))
        .cloned()
        .collect();
    select::sort(&mut shown);
    match format {
        Format::Human | Format::Markdown | Format::GithubActionBenchmark | Format::Bmf => {
            for b in shown {
                let mark = if b.ignored { " (ignored)" } else { "" };
                println!("{}{mark}", b.qualified());
            }
        }
        Format::Json => {
            let items: Vec<serde_json::Value> = shown
                .iter()
                .map(|b| {
                    serde_json::json!({
                        "name": b.qualified(),
                        "package": b.package,
                        "target": b.target,
                        "id": b.id,
                        "ignored": b.ignored,
                        "executable": b.exe.display().to_string(),
                    })
                })
                .collect();
            println!(
                "{}",
                serde_json::to_string_pretty(&items).expect("lists always serialise")
            );
        }
    }
}

/// The flag Ctrl-C (and SIGTERM) raises: the running benchmark is killed, finished
/// records are kept. A second Ctrl-C exits at once.
pub(super) fn interrupt_flag() -> Result<Arc<AtomicBool>> {
    static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();
    if let Some(flag) = FLAG.get() {
        return Ok(flag.clone());
    }
    let flag = Arc::new(AtomicBool::new(false));
    let handler_flag = flag.clone();
    ctrlc::set_handler(move || {
        if handler_flag.swap(true, Ordering::SeqCst) {
            std::process::exit(i32::from(Exit::Interrupted.code()));
        }
        eprintln!("gpubench: interrupted; stopping the running benchmark and saving what finished (Ctrl-C again to quit at once)");
    })
    .context("failed to install the Ctrl-C handler")?;
    Ok(FLAG.get_or_init(|| flag).clone())
}
