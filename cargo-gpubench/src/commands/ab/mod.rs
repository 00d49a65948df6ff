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

use crate::build::compile::BenchExecutable;
use crate::build::discover::DiscoverError;
use crate::build::library::run_copy::{self, BuildLock, LibraryDigest, RunLibraries};
use crate::build::library::{self, BenchLibrary};
use crate::build::libtorch;
use crate::build::revision::{self, Checkout, Checkouts, Resolution, Resolved, Revision};
use crate::cli::{AbArgs, ProcessDefaults};
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
    let opts = args
        .measure
        .run_options(&args.process, ProcessDefaults::ab())
        .context("failed to check the measurement options")?;

    let cwd = std::env::current_dir().context("failed to read the current directory")?;
    let prepared = match (&args.base_libraries, &args.head_libraries) {
        (Some(base), Some(head)) => imported(base, head, &cwd, args, &opts, &stop)?,
        _ => built(args, &opts, &stop)?,
    };
    let Prepared {
        base,
        head,
        store,
        env,
        libtorch_lib,
        mode,
        base_list,
        head_list,
        libraries,
        checkouts,
    } = match prepared {
        Ready::Measure(p) => *p,
        Ready::Exported | Ready::Identical => return Ok(Exit::Success),
        Ready::Interrupted => return Ok(Exit::Interrupted),
    };

    let filter = args.select.filter();
    let plan = Plan::new(&base_list, &head_list, &filter);
    if plan.is_empty() {
        return Err(crate::execute::select::explain_empty(&head_list, &filter).into());
    }
    let plan = match args.partition {
        None => plan,
        Some(p) => {
            let selected = plan.pairs.len() + plan.new.len();
            let part = plan.partitioned(p);
            console::status(format_args!(
                "partition {p}: {} of the {selected} selected benchmarks",
                part.pairs.len() + part.new.len()
            ));
            if part.is_empty() {
                console::status(format_args!(
                    "partition {p} holds no benchmark: nothing to run"
                ));
                return Ok(Exit::Success);
            }
            part
        }
    };
    crate::execute::select::check_unique_ids(&head_list)?;
    for gone in &plan.gone {
        console::note(format_args!(
            "{} is in {} but not in {}: it counts as missing evidence (gone)",
            gone.qualified(),
            base.describe(),
            head.describe()
        ));
    }

    for note in store.mark_incomplete_runs()? {
        console::note(format_args!("{note}"));
    }
    let ab = ManifestAb {
        base: manifest_revision(&base, &libraries.base),
        head: manifest_revision(&head, &libraries.head),
        paired: mode == Mode::Paired,
        unpaired_reason: match &mode {
            Mode::Paired => None,
            Mode::Separate { reason } => Some(reason.clone()),
        },
    };
    let session = Session {
        store: &store,
        opts: &opts,
        env: &env,
        stop: &stop,
        mode,
        // Each process warms and measures both sides: twice a run's share.
        budget: 4 * opts.time_per_benchmark,
        base: &base,
        head: &head,
        ab,
        partition: args.partition.map(|p| p.to_string()),
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
    // Removed here rather than when dropped, to say what could not be.
    drop(libraries);
    if let Some(checkouts) = checkouts {
        for problem in checkouts.release() {
            console::warning(format_args!("{problem}"));
        }
    }
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
    /// Base and head are the same code: nothing to compare (said so).
    Identical,
    /// Ctrl-C.
    Interrupted,
}

/// Both revisions, ready to measure.
struct Prepared {
    base: Revision,
    head: Revision,
    /// The output directory, locked before anything was built.
    store: RunStore,
    env: ChildEnv,
    libtorch_lib: PathBuf,
    mode: Mode,
    base_list: Vec<Benchmark>,
    head_list: Vec<Benchmark>,
    /// The files this run loads, its own copies.
    libraries: Kept,
    /// The worktrees, removed when `ab` ends; `None` for exported libraries.
    checkouts: Option<Checkouts>,
}

/// The copies of both revisions' libraries (or executables) this run loads, and
/// their digests; the folder goes when this is dropped.
#[derive(Default)]
struct Kept {
    run: Option<RunLibraries>,
    base: Vec<LibraryDigest>,
    head: Vec<LibraryDigest>,
}

/// Finds and builds both revisions of the workspace: as loadable libraries when
/// they pair, else as executables; with `--export-libraries`, exports the libraries
/// and stops.
fn built(args: &AbArgs, opts: &RunOptions, stop: &AtomicBool) -> Result<Ready> {
    let cwd = std::env::current_dir().context("failed to read the current directory")?;
    let workspace = crate::build::discover::find_targets(
        args.targets.manifest_path.as_deref(),
        &args.targets.packages,
        &args.targets.benches,
    )?;
    let resolution = revision::resolve(
        &workspace.root,
        &cwd,
        args.base.as_deref(),
        args.head.as_deref(),
        &workspace.target_dir,
    )
    .context("failed to find the revisions to compare")?;
    let Resolved {
        base,
        head,
        checkouts,
        notes,
    } = match resolution {
        Resolution::Compare(r) => *r,
        Resolution::Identical {
            commit,
            base_chosen_by,
            head_chosen_by,
        } => {
            console::status(format_args!(
                "nothing to compare: the head ({head_chosen_by}) and the base \
                 ({base_chosen_by}) are the same code, commit {}{}; nothing was measured, \
                 and that passes (exit 0). Make a change, or pass --base REV",
                &commit[..commit.len().min(12)],
                if args.head.is_none() {
                    " with no uncommitted change"
                } else {
                    ""
                }
            ));
            return Ok(Ready::Identical);
        }
    };
    for note in &notes {
        console::note(format_args!("{note}"));
    }
    console::status(format_args!(
        "comparing {} ({}) with {} ({})",
        head.describe(),
        head.chosen_by,
        base.describe(),
        base.chosen_by
    ));
    for path in checkouts.paths() {
        console::detail(format_args!(
            "worktree {} (removed when `ab` ends)",
            path.display()
        ));
    }
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
    let out_dir = match &args.out_dir {
        Some(dir) => cwd.join(dir),
        None => workspace.target_dir.join("gpubench"),
    };
    // The output directory first: a second `ab` on it stops here, before it builds
    // anything.
    let store = match &args.export_libraries {
        None => Some(RunStore::open(&out_dir)?),
        Some(_) => None,
    };
    let mut kept = Kept {
        run: Some(
            RunLibraries::create(&workspace.target_dir)
                .context("failed to make this run's folder of libraries")?,
        ),
        ..Kept::default()
    };
    let copies = kept.run.as_ref().expect("just made");

    // Paired when both revisions build as libraries that load and speak the ABI;
    // otherwise separate processes, saying why.
    let mut reason = args
        .separate_processes
        .then(|| "--separate-processes was given".to_string());
    let mut listed: Option<(Vec<Benchmark>, Vec<Benchmark>)> = None;
    // What a failed library build said: the executables' build shows the same
    // errors when it fails too, so it is shown only when that one succeeds.
    let mut unshown = String::new();
    if reason.is_none() {
        let libraries =
            match build_libraries(args, &base, &head, &workspace.target_dir, copies, stop)? {
                Libraries::Built(b, h) => Some((b, h)),
                Libraries::Not(why, said) => {
                    reason = Some(why);
                    unshown = said;
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
            for (side, revision, (libs, digests)) in [("base", &base, b), ("head", &head, h)] {
                library::export::write(&dir.join(side), manifest_revision(revision, digests), libs)
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
        if let Some(((b, base_digests), (h, head_digests))) = libraries {
            match list_libraries(&b, &h, &base, &head, &env, opts, stop)? {
                Paired::Listed(bl, hl) => {
                    listed = Some((bl, hl));
                    kept.base = base_digests;
                    kept.head = head_digests;
                }
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
            let Some(((b, base_digests), (h, head_digests))) = separate_listings(
                args,
                &base,
                &head,
                &workspace.target_dir,
                copies,
                &env,
                opts,
                stop,
            )?
            else {
                return Ok(Ready::Interrupted);
            };
            if !unshown.is_empty() {
                console::note(format_args!(
                    "what the library build said, which made `ab` measure in separate \
                     processes:"
                ));
                eprint!("{unshown}");
            }
            kept.base = base_digests;
            kept.head = head_digests;
            (Mode::Separate { reason: why }, b, h)
        }
    };
    Ok(Ready::Measure(Box::new(Prepared {
        base,
        head,
        store: store.expect("opened unless exporting"),
        env,
        libtorch_lib: libtorch.lib_dir,
        mode,
        base_list,
        head_list,
        libraries: kept,
        checkouts: Some(checkouts),
    })))
}

/// Both revisions from libraries `--export-libraries` wrote: no cargo, no git.
fn imported(
    base_dir: &Path,
    head_dir: &Path,
    cwd: &Path,
    args: &AbArgs,
    opts: &RunOptions,
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
                // No sources here: both run where `ab` runs.
                run_dir: cwd.to_path_buf(),
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
    let out_dir = match &args.out_dir {
        Some(dir) => cwd.join(dir),
        None => target_dir.join("gpubench"),
    };
    let store = RunStore::open(&out_dir)?;
    let digests = |libs: &[BenchLibrary]| -> Result<Vec<LibraryDigest>> {
        libs.iter()
            .map(|l| {
                Ok(LibraryDigest {
                    package: l.package.clone(),
                    target: l.target.clone(),
                    sha256: run_copy::sha256_of(&l.path)?,
                })
            })
            .collect()
    };
    let libraries = Kept {
        run: None,
        base: digests(&base_libs)?,
        head: digests(&head_libs)?,
    };
    let (base_list, head_list) =
        match list_libraries(&base_libs, &head_libs, &base, &head, &env, opts, stop)? {
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
        store,
        env,
        libtorch_lib: libtorch.lib_dir,
        mode: Mode::Paired,
        base_list,
        head_list,
        libraries,
        checkouts: None,
    })))
}

fn manifest_revision(r: &Revision, libraries: &[LibraryDigest]) -> ManifestRevision {
    ManifestRevision {
        label: r.label.clone(),
        commit: r.commit.clone(),
        dirty: r.dirty,
        libraries: libraries.to_vec(),
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

/// Whether a revision's workspace failing to select bench targets means only that
/// it has none of those selected (a base from before the benchmarks, their package
/// or their gpubench-core dependency): for the base, its benchmarks are then none,
/// and every one of the head's is new.
fn has_none_selected(e: &DiscoverError) -> bool {
    matches!(
        e,
        DiscoverError::NoBenchTargets { .. }
            | DiscoverError::UnknownPackage { .. }
            | DiscoverError::NotAGpubenchPackage { .. }
            | DiscoverError::UnknownBench { .. }
    )
}

/// Says that the base has no benchmark of the selection.
fn say_base_has_none(base: &Revision, why: &DiscoverError) {
    console::note(format_args!(
        "{} has no benchmark to compare with ({why}): every benchmark of the head is new",
        base.describe()
    ));
}

/// One revision's built files, as this run keeps them, and their digests.
type Side<T> = (Vec<T>, Vec<LibraryDigest>);

/// What building both revisions as libraries gave.
enum Libraries {
    /// Built: `(base, head)`.
    Built(Side<BenchLibrary>, Side<BenchLibrary>),
    /// A revision does not build as one: why, and what its build said that was not
    /// shown yet.
    Not(String, String),
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

/// Takes the target directory's build lock, saying so when another `ab` holds it.
fn build_lock(target_dir: &Path) -> Result<BuildLock> {
    BuildLock::take(target_dir, || {
        console::status(format_args!(
            "waiting for another `cargo gpubench ab` building in {}",
            target_dir.display()
        ))
    })
    .context("failed to lock the target directory's library builds")
}

/// Builds both revisions as loadable libraries and keeps this run's copies, under
/// the target directory's build lock.
fn build_libraries(
    args: &AbArgs,
    base: &Revision,
    head: &Revision,
    target_dir: &Path,
    copies: &RunLibraries,
    stop: &AtomicBool,
) -> Result<Libraries> {
    let cargo = crate::build::cargo();
    let _lock = build_lock(target_dir)?;
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
            Err(library::LibraryError::Discover { source, .. })
                if revision.role == Role::Base && has_none_selected(&source) =>
            {
                say_base_has_none(base, &source);
                sides.push((Vec::new(), Vec::new()));
                continue;
            }
            Ok(x) => x,
            Err(e) => return Ok(Libraries::Not(library_reason(revision, e), String::new())),
        };
        found?;
        let built = plan.build(cmd);
        // Written again by the next `ab`: nothing of this one's is left there.
        plan.remove_crates();
        if stop.load(Ordering::SeqCst) {
            return Ok(Libraries::Interrupted);
        }
        let built = match built {
            Ok(b) => b,
            Err(e) => {
                let unshown = e.unshown().unwrap_or_default().to_string();
                return Ok(Libraries::Not(library_reason(revision, e), unshown));
            }
        };
        sides.push(
            copies
                .keep(revision.role.as_str(), &built.libraries)
                .context("failed to keep this run's copy of the libraries")?,
        );
        built.remove_outputs();
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
            let answer = paired_runner::list(&lib.path, env, opts, stop);
            // A listing Ctrl-C cut short is no reason not to pair.
            if stop.load(Ordering::SeqCst) {
                return Ok(Paired::Interrupted);
            }
            match answer {
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
        }
        sides.push(listed);
    }
    let base_list = sides.pop().expect("two sides");
    let head_list = sides.pop().expect("two sides");
    Ok(Paired::Listed(base_list, head_list))
}

/// Builds both revisions as bench executables (under the build lock, this run
/// keeping its copies) and lists them as a run does; `None` when interrupted.
#[allow(clippy::too_many_arguments)]
fn separate_listings(
    args: &AbArgs,
    base: &Revision,
    head: &Revision,
    target_dir: &Path,
    copies: &RunLibraries,
    env: &ChildEnv,
    opts: &RunOptions,
    stop: &AtomicBool,
) -> Result<Option<(Side<Benchmark>, Side<Benchmark>)>> {
    let cargo = crate::build::cargo();
    let mut built_sides = Vec::new();
    {
        let _lock = build_lock(target_dir)?;
        for revision in [head, base] {
            console::status(format_args!(
                "building {} as bench executables",
                revision.describe()
            ));
            let plan = match library::fallback::prepare(
                &cargo,
                revision,
                &args.targets.packages,
                &args.targets.benches,
                target_dir,
            ) {
                Err(e) if revision.role == Role::Base && has_none_selected(&e) => {
                    say_base_has_none(base, &e);
                    built_sides.push((Vec::new(), Vec::new()));
                    continue;
                }
                plan => plan.with_context(|| {
                    format!(
                        "failed to find the bench targets of {}",
                        revision.describe()
                    )
                })?,
            };
            let mut cmd = plan.command(&cargo);
            crate::build::libtorch::hand_to_the_build(&mut cmd, &revision.root)?;
            let built = plan.build(cmd);
            if stop.load(Ordering::SeqCst) {
                return Ok(None);
            }
            let built =
                built.with_context(|| format!("failed to build {}", revision.describe()))?;
            let mut executables = Vec::new();
            let mut digests = Vec::new();
            for exe in built.executables {
                let (path, digest) = copies
                    .keep_file(
                        revision.role.as_str(),
                        exe.package.as_deref().unwrap_or_default(),
                        &exe.target,
                        &exe.path,
                    )
                    .context("failed to keep this run's copy of the executables")?;
                executables.push(BenchExecutable { path, ..exe });
                digests.push(digest);
            }
            built_sides.push((executables, digests));
        }
    }
    let mut sides = Vec::new();
    for (revision, (executables, digests)) in [head, base].into_iter().zip(built_sides) {
        let Some((listed, _)) = crate::execute::listing::list_all(
            &executables,
            opts.device.as_deref(),
            env,
            opts.timeout,
            stop,
        )?
        else {
            return Ok(None);
        };
        if listed.is_empty() && revision.role == Role::Head {
            return Err(UsageError(format!(
                "{} has no gpubench benchmark in its bench targets",
                revision.describe()
            ))
            .into());
        }
        sides.push((listed, digests));
    }
    let base_list = sides.pop().expect("two sides");
    let head_list = sides.pop().expect("two sides");
    Ok(Some((base_list, head_list)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn revision(role: Role) -> Revision {
        Revision {
            role,
            label: "1a2b3c4".into(),
            commit: None,
            dirty: false,
            chosen_by: "a test".into(),
            checkout: Checkout::Worktree,
            root: "/nonexistent".into(),
            run_dir: "/nonexistent".into(),
        }
    }

    #[test]
    fn a_listing_cut_short_by_ctrl_c_is_an_interruption_not_a_reason_not_to_pair() {
        let cli = crate::cli::Cli::parse_from_cargo(["cargo-gpubench", "ab"]).unwrap();
        let Some(crate::cli::Command::Ab(args)) = &cli.command else {
            panic!("ab parses as ab");
        };
        let opts = args
            .measure
            .run_options(&args.process, ProcessDefaults::ab())
            .unwrap();
        let lib = BenchLibrary {
            package: "p".into(),
            target: "t".into(),
            path: "/nonexistent/libgpubench_ab_x.so".into(),
        };
        let libs = [lib];
        let (base, head) = (revision(Role::Base), revision(Role::Head));
        let listed = |stop: bool| {
            list_libraries(
                &libs,
                &libs,
                &base,
                &head,
                &ChildEnv::default(),
                &opts,
                &AtomicBool::new(stop),
            )
            .unwrap()
        };
        // Ctrl-C: the listing process is stopped, and that is all it says.
        assert!(matches!(listed(true), Paired::Interrupted));
        // Without it, a library that cannot be listed is a reason not to pair.
        assert!(matches!(listed(false), Paired::Not(_)));
    }
}
