//! Both revisions of an `ab` run made ready to measure: found in git and built
//! ([`built`]: as loadable libraries when they pair, else as executables), or read
//! from the libraries `--export-libraries` wrote ([`imported`]); listed, with the
//! output directory locked and this run's copies of their files kept.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use anyhow::{Context, Result};

use super::libraries::{build_libraries, list_libraries, separate_listings, Libraries, Paired};
use super::manifest_revision;
use super::session::Mode;
use crate::build::library::run_copy::{self, LibraryDigest, RunLibraries};
use crate::build::library::{self, BenchLibrary};
use crate::build::libtorch;
use crate::build::revision::{self, Checkout, Checkouts, Resolution, Resolved, Revision};
use crate::cli::AbArgs;
use crate::console;
use crate::execute::process::ChildEnv;
use crate::execute::runner::RunOptions;
use crate::execute::select::Benchmark;
use crate::exit_code::UsageError;
use crate::store::runs::RunStore;
use gpubench_record::paired::Role;

/// What preparing both revisions ended with.
pub(super) enum Ready {
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
pub(super) struct Prepared {
    pub(super) base: Revision,
    pub(super) head: Revision,
    /// The output directory, locked before anything was built.
    pub(super) store: RunStore,
    pub(super) env: ChildEnv,
    pub(super) libtorch_lib: PathBuf,
    pub(super) mode: Mode,
    pub(super) base_list: Vec<Benchmark>,
    pub(super) head_list: Vec<Benchmark>,
    /// The files this run loads, its own copies.
    pub(super) libraries: Kept,
    /// The worktrees, removed when `ab` ends; `None` for exported libraries.
    pub(super) checkouts: Option<Checkouts>,
}

/// The copies of both revisions' libraries (or executables) this run loads, and
/// their digests; the folder goes when this is dropped.
#[derive(Default)]
pub(super) struct Kept {
    pub(super) run: Option<RunLibraries>,
    pub(super) base: Vec<LibraryDigest>,
    pub(super) head: Vec<LibraryDigest>,
}

/// Finds and builds both revisions of the workspace: as loadable libraries when
/// they pair, else as executables; with `--export-libraries`, exports the libraries
/// and stops.
pub(super) fn built(args: &AbArgs, opts: &RunOptions, stop: &AtomicBool) -> Result<Ready> {
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
pub(super) fn imported(
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
