//! `cargo gpubench report [RUN]`: renders the HTML report of a stored run again
//! (through [`crate::output::html::run_report`]), without running anything, and with `--open` opens
//! it. RUN is resolved as `compare` resolves its sides ([`crate::store::references`]), but
//! must be a run.

use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{Context, Result};

use crate::build::discover::places;
use crate::cli::ReportArgs;
use crate::exit_code::Exit;
use crate::exit_code::UsageError;
use crate::output::html::run_report::{self, StoredRun};
use crate::store::references::{self, Resolved, Side};

/// The program that opens a file in the user's browser.
const OPENER: &str = if cfg!(target_os = "macos") {
    "open"
} else {
    "xdg-open"
};

/// Runs `report`; see [`crate::cli::REPORT_HELP`] for the codes.
pub(crate) fn run(args: &ReportArgs) -> Result<Exit> {
    let cwd = std::env::current_dir().context("failed to read the current directory")?;
    let places = places(
        args.manifest_path.as_deref(),
        args.out_dir.as_deref(),
        args.baselines_dir.as_deref(),
        &cwd,
    )?;
    let resolved = references::resolve(&args.run, &places)
        .with_context(|| format!("failed to resolve RUN `{}`", args.run))?;
    let dir = match &resolved {
        Resolved::Run { dir } => dir.clone(),
        Resolved::Baseline { store, name } => {
            return Err(UsageError(format!(
                "`{}` is the saved baseline `{name}` ({}), not a stored run: pass latest, \
                 run:ID or a run directory (one holding manifest.json)",
                args.run,
                store.root.join(name).display()
            ))
            .into())
        }
    };
    let side =
        Side::load(&resolved).with_context(|| format!("failed to load RUN `{}`", args.run))?;
    let index = run_report::render_run(
        StoredRun {
            id: &side.source.name,
            dir: &dir,
            records: &side.records,
            entries: &side.entries,
        },
        &run_report::report_dir(&places.out_dir),
    )?;
    println!("report: {}", index.index.display());
    if args.open {
        open(&index.index);
    }
    Ok(Exit::Success)
}

/// Opens `page` with [`OPENER`]; a missing or failing opener is only a note, since
/// the report was written and its path printed.
fn open(page: &Path) {
    let status = Command::new(OPENER)
        .arg(page)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .status();
    match status {
        Ok(s) if s.success() => {}
        Ok(s) => crate::console::note(format_args!(
            "{OPENER} could not open the report ({s}); open {} yourself",
            page.display()
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => crate::console::note(format_args!(
            "no opener found ({OPENER} is not on PATH); open {} yourself",
            page.display()
        )),
        Err(e) => crate::console::note(format_args!(
            "failed to run {OPENER} ({e}); open {} yourself",
            page.display()
        )),
    }
}
