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
use std::sync::atomic::Ordering;

use anyhow::{Context, Result};
use gpubench_analysis::ProcessPolicy;

use crate::build::library;
use crate::build::libtorch;
use crate::build::revision::{self, Revision};
use crate::cli::AbArgs;
use crate::error::UsageError;
use crate::execute::paired::runner::{self as paired_runner, PairedRunError};
use crate::execute::runner::RunOptions;
use crate::execute::select::Benchmark;
use crate::exit_code::Exit;
use crate::output::console;
use crate::store::manifest::{ManifestAb, ManifestRevision};
use crate::store::runs::RunStore;
use plan::Plan;
use session::{Mode, Session};

/// Runs `ab`; see [`crate::cli::ab::AB_HELP`] for the codes.
pub fn run(args: &AbArgs, command_line: &[OsString]) -> Result<Exit> {
    let stop = super::run::interrupt_flag()?;
    let defaults = args.process.defaults();
    args.process
        .measure
        .settings()
        .apply(defaults.clone())
        .context("failed to check the measurement options")?;

    let workspace = super::run::discover_targets(&args.targets)?;
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
    let env = super::run::child_env(&libtorch, &[], &workspace.target_dir);
    let opts = run_options(args);

    // Paired when both revisions build as libraries that load and speak the ABI;
    // otherwise separate processes, saying why.
    let mut reason = args
        .separate_processes
        .then(|| "--separate-processes was given".to_string());
    let mut listed: Option<(Vec<Benchmark>, Vec<Benchmark>)> = None;
    if reason.is_none() {
        match paired_listings(
            args,
            &base,
            &head,
            &workspace.target_dir,
            &env,
            &opts,
            &stop,
        )? {
            Paired::Listed(b, h) => listed = Some((b, h)),
            Paired::Not(why) => reason = Some(why),
            Paired::Interrupted => return Ok(Exit::Interrupted),
        }
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
            let Some((b, h)) = separate_listings(
                args,
                &base,
                &head,
                &workspace.target_dir,
                &env,
                &opts,
                &stop,
            )?
            else {
                return Ok(Exit::Interrupted);
            };
            (Mode::Separate { reason: why }, b, h)
        }
    };

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

    let cwd = std::env::current_dir().context("failed to read the current directory")?;
    let out_dir = match &args.out_dir {
        Some(dir) => cwd.join(dir),
        None => workspace.target_dir.join("gpubench"),
    };
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
        report_dir: (!args.no_report)
            .then(|| crate::output::html::run_report::report_dir(store.dir())),
        summary_file: args.verdicts.summary_file.as_ref().map(|p| cwd.join(p)),
        libtorch_lib: libtorch.lib_dir.clone(),
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
        measure: args.process.measure.clone(),
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

/// What trying to pair gave.
enum Paired {
    /// Both revisions' libraries load and list: `(base, head)`.
    Listed(Vec<Benchmark>, Vec<Benchmark>),
    /// Pairing cannot work, and why.
    Not(String),
    /// Ctrl-C.
    Interrupted,
}

/// Builds both revisions as libraries and lists them through a paired process.
fn paired_listings(
    args: &AbArgs,
    base: &Revision,
    head: &Revision,
    target_dir: &std::path::Path,
    env: &crate::execute::process::ChildEnv,
    opts: &RunOptions,
    stop: &std::sync::atomic::AtomicBool,
) -> Result<Paired> {
    let cargo = super::run::cargo();
    let mut sides = Vec::new();
    for revision in [head, base] {
        console::status(format_args!(
            "building {} as loadable libraries",
            revision.describe()
        ));
        let built = library::prepare(
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
            let found = super::run::hand_libtorch_to_the_build(&mut cmd, &revision.root);
            (plan, cmd, found)
        });
        let (plan, cmd, found) = match built {
            Ok(x) => x,
            Err(e) => return Ok(Paired::Not(library_reason(revision, e))),
        };
        found?;
        let built = plan.build(cmd);
        if stop.load(Ordering::SeqCst) {
            return Ok(Paired::Interrupted);
        }
        let built = match built {
            Ok(b) => b,
            Err(e) => return Ok(Paired::Not(library_reason(revision, e))),
        };
        let mut listed = Vec::new();
        for lib in &built.libraries {
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
    target_dir: &std::path::Path,
    env: &crate::execute::process::ChildEnv,
    opts: &RunOptions,
    stop: &std::sync::atomic::AtomicBool,
) -> Result<Option<(Vec<Benchmark>, Vec<Benchmark>)>> {
    let cargo = super::run::cargo();
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
        super::run::hand_libtorch_to_the_build(&mut cmd, &revision.root)?;
        let built = plan.build(cmd);
        if stop.load(Ordering::SeqCst) {
            return Ok(None);
        }
        let built = built.with_context(|| format!("failed to build {}", revision.describe()))?;
        let Some((listed, _)) =
            super::run::list_benchmarks(&built.executables, env, opts.timeout, stop)?
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
