//! `cargo gpubench ab`: the head revision judged against the base, each benchmark's
//! two revisions measured side by side in one process. From start to end: find the
//! two revisions, build each one's bench targets as loadable libraries (or, when
//! pairing cannot work, as executables), list and pair their benchmarks
//! ([`plan`]), run the processes and store them as a run ([`session`]), judge the
//! head against the base from the ratios their processes shared, and show it as a
//! run is shown.

pub mod plan;
mod session;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, Result};
use gpubench_record::measurement::ProcessPolicy;

use crate::build::library::{self, BenchLibrary};
use crate::build::libtorch;
use crate::build::revision::{self, Checkout, Revision};
use crate::cli::AbArgs;
use crate::console;
use crate::execute::paired::runner::{self as paired_runner, PairedRunError};
use crate::execute::process::ChildEnv;
use crate::execute::runner::RunOptions;
use crate::execute::select::Benchmark;
use crate::exit_code::Exit;
use crate::exit_code::UsageError;
use crate::store::manifest::{ManifestAb, ManifestRevision};
use crate::store::runs::RunStore;
use gpubench_record::paired::Role;
use plan::Plan;
use session::{Mode, Session};

/// Runs `ab`; see [`crate::cli::ab::AB_HELP`] for the codes.
pub fn run(args: &AbArgs, command_line: &[OsString]) -> Result<Exit> {
    let stop = crate::execute::process::interrupt_flag()?;
    let defaults = args.process.defaults();
    args.process
        .measure
        .settings()
        .apply(defaults.clone())
        .context("failed to check the measurement options")?;

    let cwd = std::env::current_dir().context("failed to read the current directory")?;
    let prepared = match (&args.base_libraries, &args.head_libraries) {
        (Some(base), Some(head)) => imported(base, head, &cwd, args, &stop)?,
        _ => built(args, &stop)?,
    };
    let Prepared {
        base,
        head,
        out_dir,
        env,
        libtorch_lib,
        mode,
        base_list,
        head_list,
    } = match prepared {
        Ready::Measure(p) => *p,
        Ready::Exported => return Ok(Exit::Success),
        Ready::Interrupted => return Ok(Exit::Interrupted),
    };
    let opts = run_options(args);

    let filter = args.select.filter();
    let plan = Plan::new(&base_list, &head_list, &filter);
    if plan.is_empty() {
        return Err(crate::execute::select::explain_empty(&head_list, &filter).into());
    }
    crate::execute::select::check_unique_ids(&head_list)?;
    for gone in &plan.gone {
        console::note(format_args!(
            "{} is in {} but not in {}: it counts as missing evidence (gone)",
            gone.qualified(),
            base.describe(),
            head.describe()
        ));
    }

    let store = RunStore::open(&out_dir)?;
    for note in store.mark_incomplete_runs()? {
        console::note(format_args!("{note}"));
    }
    let ab = ManifestAb {
        base: manifest_revision(&base),
        head: manifest_revision(&head),
        paired: mode == Mode::Paired,
        unpaired_reason: match &mode {
            Mode::Paired => None,
            Mode::Separate { reason } => Some(reason.clone()),
        },
    };
    let measurement_time = args
        .process
        .measure
        .measurement_time
        .unwrap_or(defaults.measurement_time_s);
    let warmup_time = args
        .process
        .measure
        .warm_up_time
        .unwrap_or(defaults.warmup_time_s);
    let session = Session {
        store: &store,
        opts: &opts,
        env: &env,
        stop: &stop,
        mode,
        // Each process warms and measures both sides: twice a run's share.
        budget: std::time::Duration::from_secs_f64(4.0 * (warmup_time + measurement_time)),
        base: &base,
        head: &head,
        ab,
        all_targets: args.targets.packages.is_empty() && args.targets.benches.is_empty(),
        format: args.format,
        verdicts: &args.verdicts,
        settings: args.settings(),
        report_dir: (!args.no_report)
            .then(|| crate::output::html::run_report::report_dir(store.dir())),
        summary_file: args.verdicts.summary_file.as_ref().map(|p| cwd.join(p)),
        libtorch_lib,
    };
    console::status(format_args!(
        "measuring {} benchmark{} on both revisions{}",
        plan.pairs.len(),
        crate::format::plural(plan.pairs.len()),
        if plan.new.is_empty() {
            String::new()
        } else {
            format!(" and {} new in the head", plan.new.len())
        }
    ));
    let exit = session.run_all(&plan, command_line)?;
    if stop.load(Ordering::SeqCst) {
        return Ok(Exit::Interrupted);
    }
    Ok(exit)
}

/// What preparing both revisions ended with.
enum Ready {
    /// Ready to measure.
    Measure(Box<Prepared>),
    /// `--export-libraries` wrote them out: nothing to measure here.
    Exported,
    /// Ctrl-C.
    Interrupted,
}

/// Both revisions, ready to measure.
struct Prepared {
    base: Revision,
    head: Revision,
    out_dir: PathBuf,
    env: ChildEnv,
    libtorch_lib: PathBuf,
    mode: Mode,
    base_list: Vec<Benchmark>,
    head_list: Vec<Benchmark>,
}

/// Finds and builds both revisions of the workspace: as loadable libraries when
/// they pair, else as executables; with `--export-libraries`, exports the libraries
/// and stops.
fn built(args: &AbArgs, stop: &AtomicBool) -> Result<Ready> {
    let cwd = std::env::current_dir().context("failed to read the current directory")?;
    let workspace = crate::build::discover::find_targets(
        args.targets.manifest_path.as_deref(),
        &args.targets.packages,
        &args.targets.benches,
    )?;
    let (base, head) = revision::resolve(
        &workspace.root,
        args.base.as_deref(),
        args.head.as_deref(),
        &workspace.target_dir,
    )
    .context("failed to find the revisions to compare")?;
    console::status(format_args!(
        "comparing {} ({}) with {} ({})",
        head.describe(),
        head.chosen_by,
        base.describe(),
        base.chosen_by
    ));
    let libtorch = libtorch::locate(&libtorch::Search::from_env(
        vec![workspace.root.clone()],
        Vec::new(),
    ))
    .context("failed to find libtorch for the benchmark processes")?;
    let env = crate::execute::process::for_benchmarks(
        &libtorch,
        &[],
        &workspace.target_dir,
        &crate::cli::option_env_vars(),
    );
    let opts = run_options(args);
    let out_dir = match &args.out_dir {
        Some(dir) => cwd.join(dir),
        None => workspace.target_dir.join("gpubench"),
    };

    // Paired when both revisions build as libraries that load and speak the ABI;
    // otherwise separate processes, saying why.
    let mut reason = args
        .separate_processes
        .then(|| "--separate-processes was given".to_string());
    let mut listed: Option<(Vec<Benchmark>, Vec<Benchmark>)> = None;
    if reason.is_none() {
        let libraries = match build_libraries(args, &base, &head, &workspace.target_dir, stop)? {
            Libraries::Built(b, h) => Some((b, h)),
            Libraries::Not(why) => {
                reason = Some(why);
                None
            }
            Libraries::Interrupted => return Ok(Ready::Interrupted),
        };
        if let (Some(dir), Some((b, h))) = (&args.export_libraries, &libraries) {
            let dir = cwd.join(dir);
            // Both sides' directories first: never half an export over someone's files.
            for side in ["base", "head"] {
                library::export::check_target(&dir.join(side))
                    .context("failed to export the libraries")?;
            }
            for (side, revision, libs) in [("base", &base, b), ("head", &head, h)] {
                library::export::write(&dir.join(side), manifest_revision(revision), libs)
                    .with_context(|| {
                        format!("failed to export the libraries of {}", revision.describe())
                    })?;
            }
            console::status(format_args!(
                "exported the libraries of {} and {} to {}: run `cargo-gpubench ab \
                 --base-libraries {}/base --head-libraries {}/head` where the GPUs are",
                base.describe(),
                head.describe(),
                dir.display(),
                dir.display(),
                dir.display()
            ));
            return Ok(Ready::Exported);
        }
        if let Some((b, h)) = libraries {
            match list_libraries(&b, &h, &base, &head, &env, &opts, stop)? {
                Paired::Listed(bl, hl) => listed = Some((bl, hl)),
                Paired::Not(why) => reason = Some(why),
                Paired::Interrupted => return Ok(Ready::Interrupted),
            }
        }
    }
    if let (Some(_), Some(why)) = (&args.export_libraries, &reason) {
        return Err(UsageError(format!(
            "--export-libraries needs both revisions as loadable libraries, and {why}"
        ))
        .into());
    }
    let (mode, base_list, head_list) = match (listed, reason) {
        (Some((b, h)), None) => (Mode::Paired, b, h),
        (_, why) => {
            let why = why.unwrap_or_default();
            console::warning(format_args!(
                "base and head are measured in processes of their own, interleaved, not \
                 paired in one process: {why}; host-bound verdicts then need a change \
                 beyond --host-noise-threshold"
            ));
            let Some((b, h)) =
                separate_listings(args, &base, &head, &workspace.target_dir, &env, &opts, stop)?
            else {
                return Ok(Ready::Interrupted);
            };
            (Mode::Separate { reason: why }, b, h)
        }
    };
    Ok(Ready::Measure(Box::new(Prepared {
        base,
        head,
        out_dir,
        env,
        libtorch_lib: libtorch.lib_dir,
        mode,
        base_list,
        head_list,
    })))
}

/// Both revisions from libraries `--export-libraries` wrote: no cargo, no git.
fn imported(
    base_dir: &Path,
    head_dir: &Path,
    cwd: &Path,
    args: &AbArgs,
    stop: &AtomicBool,
) -> Result<Ready> {
    let side = |dir: &Path, role: Role, flag: &str| -> Result<(Revision, Vec<BenchLibrary>)> {
        let dir = cwd.join(dir);
        let (r, libs) = library::export::read(&dir)
            .with_context(|| format!("failed to read {flag} {}", dir.display()))?;
        Ok((
            Revision {
                role,
                label: r.label,
                commit: r.commit,
                dirty: r.dirty,
                chosen_by: format!("{flag} {}", dir.display()),
                checkout: Checkout::Worktree,
                root: dir,
            },
            libs,
        ))
    };
    let (base, base_libs) = side(base_dir, Role::Base, "--base-libraries")?;
    let (head, head_libs) = side(head_dir, Role::Head, "--head-libraries")?;
    console::status(format_args!(
        "comparing {} with {}, from exported libraries",
        head.describe(),
        base.describe()
    ));
    let libtorch = libtorch::locate(&libtorch::Search::from_env(
        vec![cwd.to_path_buf()],
        Vec::new(),
    ))
    .context("failed to find libtorch for the benchmark processes")?;
    let target_dir = cwd.join("target");
    let env = crate::execute::process::for_benchmarks(
        &libtorch,
        &[],
        &target_dir,
        &crate::cli::option_env_vars(),
    );
    let opts = run_options(args);
    let (base_list, head_list) =
        match list_libraries(&base_libs, &head_libs, &base, &head, &env, &opts, stop)? {
            Paired::Listed(b, h) => (b, h),
            Paired::Interrupted => return Ok(Ready::Interrupted),
            // Without the sources there is nothing to fall back to.
            Paired::Not(why) => {
                return Err(UsageError(format!(
                    "the exported libraries cannot be paired: {why}; build them again with \
                     one gpubench-core, or run `cargo gpubench ab` where the sources are"
                ))
                .into())
            }
        };
    Ok(Ready::Measure(Box::new(Prepared {
        base,
        head,
        out_dir: match &args.out_dir {
            Some(dir) => cwd.join(dir),
            None => target_dir.join("gpubench"),
        },
        env,
        libtorch_lib: libtorch.lib_dir,
        mode: Mode::Paired,
        base_list,
        head_list,
    })))
}

/// The options every process of `ab` gets, as a run's, but for the number of
/// processes: each gives one paired ratio, and a verdict on them needs more than a
/// run's three ([`ProcessPolicy::paired`]; 5 with `--quick`).
fn run_options(args: &AbArgs) -> RunOptions {
    let processes = match args.process.processes {
        Some(p) => p,
        None if args.process.quick => ProcessPolicy::fixed(5),
        None => ProcessPolicy::paired(),
    };
    let defaults = args.process.defaults();
    let measurement_time = args
        .process
        .measure
        .measurement_time
        .unwrap_or(defaults.measurement_time_s);
    RunOptions {
        device: args.process.device.clone(),
        quick: args.process.quick,
        flush_l2: args.process.flush_l2,
        timeout: args.process.timeout,
        processes,
        measurement_time_s: RunOptions::split_measurement_time(measurement_time, &processes),
        measure: args.process.measure.settings(),
    }
}

fn manifest_revision(r: &Revision) -> ManifestRevision {
    ManifestRevision {
        label: r.label.clone(),
        commit: r.commit.clone(),
        dirty: r.dirty,
    }
}

/// Why a revision's libraries leave `ab` unpaired, in words.
fn library_reason(revision: &Revision, e: library::LibraryError) -> String {
    let why = crate::error::message(&anyhow::Error::new(e));
    format!(
        "{} does not build as a loadable library: {why}",
        revision.describe()
    )
}

/// What building both revisions as libraries gave.
enum Libraries {
    /// Built: `(base, head)`.
    Built(Vec<BenchLibrary>, Vec<BenchLibrary>),
    /// A revision does not build as one, and why.
    Not(String),
    /// Ctrl-C.
    Interrupted,
}

/// What listing both revisions' libraries gave.
enum Paired {
    /// Both load and list: `(base, head)`.
    Listed(Vec<Benchmark>, Vec<Benchmark>),
    /// Pairing cannot work, and why.
    Not(String),
    /// Ctrl-C.
    Interrupted,
}

/// Builds both revisions as loadable libraries.
fn build_libraries(
    args: &AbArgs,
    base: &Revision,
    head: &Revision,
    target_dir: &Path,
    stop: &AtomicBool,
) -> Result<Libraries> {
    let cargo = crate::build::cargo();
    let mut sides = Vec::new();
    for revision in [head, base] {
        console::status(format_args!(
            "building {} as loadable libraries",
            revision.describe()
        ));
        let prepared = library::prepare(
            &cargo,
            revision,
            &args.targets.packages,
            &args.targets.benches,
            target_dir,
        )
        .map(|plan| {
            let mut cmd = plan.command(&cargo);
            // A libtorch that cannot be found is the machine's problem, not a
            // reason to fall back: it stops the run as it stops a run's build.
            let found = crate::build::libtorch::hand_to_the_build(&mut cmd, &revision.root);
            (plan, cmd, found)
        });
        let (plan, cmd, found) = match prepared {
            Ok(x) => x,
            Err(e) => return Ok(Libraries::Not(library_reason(revision, e))),
        };
        found?;
        let built = plan.build(cmd);
        if stop.load(Ordering::SeqCst) {
            return Ok(Libraries::Interrupted);
        }
        match built {
            Ok(b) => sides.push(b.libraries),
            Err(e) => return Ok(Libraries::Not(library_reason(revision, e))),
        }
    }
    let base_libs = sides.pop().expect("two sides");
    let head_libs = sides.pop().expect("two sides");
    Ok(Libraries::Built(base_libs, head_libs))
}

/// Lists both revisions' libraries through paired processes.
fn list_libraries(
    base_libs: &[BenchLibrary],
    head_libs: &[BenchLibrary],
    base: &Revision,
    head: &Revision,
    env: &ChildEnv,
    opts: &RunOptions,
    stop: &AtomicBool,
) -> Result<Paired> {
    let mut sides = Vec::new();
    for (revision, libs) in [(head, head_libs), (base, base_libs)] {
        let mut listed = Vec::new();
        for lib in libs {
            match paired_runner::list(&lib.path, env, opts, stop) {
                Ok(benchmarks) => listed.extend(benchmarks.into_iter().map(|b| Benchmark {
                    package: Some(lib.package.clone()),
                    target: lib.target.clone(),
                    exe: lib.path.clone(),
                    id: b.id,
                    ignored: b.ignored,
                })),
                Err(e @ (PairedRunError::Unpairable { .. } | PairedRunError::List { .. })) => {
                    return Ok(Paired::Not(format!("{}: {e}", revision.describe())))
                }
                Err(e) => return Err(e).context("failed to list the benchmarks to pair"),
            }
            if stop.load(Ordering::SeqCst) {
                return Ok(Paired::Interrupted);
            }
        }
        sides.push(listed);
    }
    let base_list = sides.pop().expect("two sides");
    let head_list = sides.pop().expect("two sides");
    Ok(Paired::Listed(base_list, head_list))
}

/// Builds both revisions as bench executables and lists them as a run does; `None`
/// when interrupted.
fn separate_listings(
    args: &AbArgs,
    base: &Revision,
    head: &Revision,
    target_dir: &Path,
    env: &ChildEnv,
    opts: &RunOptions,
    stop: &AtomicBool,
) -> Result<Option<(Vec<Benchmark>, Vec<Benchmark>)>> {
    let cargo = crate::build::cargo();
    let mut sides = Vec::new();
    for revision in [head, base] {
        console::status(format_args!(
            "building {} as bench executables",
            revision.describe()
        ));
        let plan = library::fallback::prepare(
            &cargo,
            revision,
            &args.targets.packages,
            &args.targets.benches,
            target_dir,
        )
        .with_context(|| {
            format!(
                "failed to find the bench targets of {}",
                revision.describe()
            )
        })?;
        let mut cmd = plan.command(&cargo);
        crate::build::libtorch::hand_to_the_build(&mut cmd, &revision.root)?;
        let built = plan.build(cmd);
        if stop.load(Ordering::SeqCst) {
            return Ok(None);
        }
        let built = built.with_context(|| format!("failed to build {}", revision.describe()))?;
        let Some((listed, _)) = crate::execute::listing::list_all(
            &built.executables,
            opts.device.as_deref(),
            env,
            opts.timeout,
            stop,
        )?
        else {
            return Ok(None);
        };
        if listed.is_empty() {
            return Err(UsageError(format!(
                "{} has no gpubench benchmark in its bench targets",
                revision.describe()
            ))
            .into());
        }
        sides.push(listed);
    }
    let base_list = sides.pop().expect("two sides");
    let head_list = sides.pop().expect("two sides");
    Ok(Some((base_list, head_list)))
}
