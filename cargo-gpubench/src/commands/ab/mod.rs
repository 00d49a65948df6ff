//! `cargo gpubench ab`: the head revision judged against the base, each benchmark's
//! two revisions measured side by side in one process. From start to end: find the
//! two revisions, build each one's bench targets as loadable libraries (or, when
//! pairing cannot work, as executables) ([`revisions`], [`libraries`]), list and
//! pair their benchmarks ([`plan`]), run the processes ([`process`]) and store them as
//! a run ([`session`]), judge the head against the base from the ratios their
//! processes shared ([`judge`]), and show it as a run is shown.

mod judge;
mod libraries;
pub(crate) mod plan;
mod process;
mod revisions;
mod session;

use std::ffi::OsString;
use std::sync::atomic::Ordering;

use anyhow::{Context, Result};

use crate::build::revision::Revision;
use crate::cli::{AbArgs, ProcessDefaults};
use crate::console;
use crate::exit_code::Exit;
use crate::store::manifest::{LibraryDigest, ManifestAb, ManifestRevision};
use plan::Plan;
use revisions::{Prepared, Ready};
use session::{Mode, Session};

/// Runs `ab`; see [`crate::cli::ab::AB_HELP`] for the codes.
pub(crate) fn run(args: &AbArgs, command_line: &[OsString]) -> Result<Exit> {
    let stop = crate::execute::process::interrupt_flag()?;
    let opts = args
        .measure
        .run_options(&args.process, ProcessDefaults::ab())
        .context("failed to check the measurement options")?;

    let cwd = std::env::current_dir().context("failed to read the current directory")?;
    let prepared = match (&args.base_libraries, &args.head_libraries) {
        (Some(base), Some(head)) => revisions::imported(base, head, &cwd, args, &opts, &stop)?,
        _ => revisions::built(args, &opts, &stop)?,
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

fn manifest_revision(r: &Revision, libraries: &[LibraryDigest]) -> ManifestRevision {
    ManifestRevision {
        label: r.label.clone(),
        commit: r.commit.clone(),
        dirty: r.dirty,
        libraries: libraries.to_vec(),
    }
}
