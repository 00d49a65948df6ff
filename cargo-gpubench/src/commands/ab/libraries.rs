//! Building both revisions of an `ab` run, under the target directory's build lock,
//! as loadable libraries ([`build_libraries`]) or, when they cannot pair, as bench
//! executables ([`separate_listings`]), and listing their benchmarks.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, Result};

use crate::build::compile::BenchExecutable;
use crate::build::discover::DiscoverError;
use crate::build::library::run_copy::{BuildLock, LibraryDigest, RunLibraries};
use crate::build::library::{self, BenchLibrary};
use crate::build::revision::Revision;
use crate::cli::AbArgs;
use crate::console;
use crate::execute::paired::runner::{self as paired_runner, PairedRunError};
use crate::execute::process::ChildEnv;
use crate::execute::runner::RunOptions;
use crate::execute::select::Benchmark;
use crate::exit_code::UsageError;
use gpubench_record::paired::Role;

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
pub(super) type Side<T> = (Vec<T>, Vec<LibraryDigest>);

/// What building both revisions as libraries gave.
pub(super) enum Libraries {
    /// Built: `(base, head)`.
    Built(Side<BenchLibrary>, Side<BenchLibrary>),
    /// A revision does not build as one: why, and what its build said that was not
    /// shown yet.
    Not(String, String),
    /// Ctrl-C.
    Interrupted,
}

/// What listing both revisions' libraries gave.
pub(super) enum Paired {
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
pub(super) fn build_libraries(
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
pub(super) fn list_libraries(
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
pub(super) fn separate_listings(
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
    use crate::build::revision::Checkout;
    use crate::cli::ProcessDefaults;

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
