//! `cargo gpubench merge RUN…`: folds stored runs (e.g. the parts of a suite split
//! with `--partition` and measured on several machines) into one new run of the
//! output directory, renders its one report and prints its summary as a run does,
//! without running anything. Which runs may be merged, and what the merged manifest
//! says, is [`rules`]; the inputs are only read.
//!
//! The merged run is written like any run: a fresh directory under `runs/`, a
//! byte-for-byte copy of every input record (so each keeps the fingerprint of the
//! device and host that measured it), then the manifest, then `latest`. Everything
//! is checked before the directory is made, and a failure while writing removes it,
//! so no half-merged run is left behind.

mod ab;
pub(crate) mod rules;

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::PathBuf;

use anyhow::{Context, Result};
use gpubench_record::record::RawRecord;

use crate::build::discover::places;
use crate::cli::MergeArgs;
use crate::commands::present;
use crate::compare::summary::RunSummary;
use crate::compare::{Absences, RunComparison};
use crate::console;
use crate::exit_code::Exit;
use crate::exit_code::UsageError;
use crate::format::plural;
use crate::output::html::run_report;
use crate::store::baselines;
use crate::store::lifecycle::rfc3339_millis;
use crate::store::manifest::{
    BenchStatus, ManifestBenchmark, RunManifest, RunStatus, BASE_RECORDS, MANIFEST_FILE,
};
use crate::store::references::{self, Places, Resolved, Side};
use crate::store::runs::{resolve_latest, write_atomic, RunDir, RunStore};
use rules::Part;

/// Runs `merge`; see [`crate::cli::MERGE_HELP`] for the codes.
pub(crate) fn run(args: &MergeArgs, command_line: &[OsString]) -> Result<Exit> {
    let cwd = std::env::current_dir().context("failed to read the current directory")?;
    let places = places(
        args.store.manifest_path.as_deref(),
        args.store.out_dir.as_deref(),
        args.baselines.baselines_dir.as_deref(),
        &cwd,
    )?;
    let mut parts = Vec::new();
    for arg in &args.runs {
        let dir = resolve_input(arg, &places)
            .with_context(|| format!("failed to resolve RUN `{arg}`"))?;
        parts.push(load_part(dir).with_context(|| format!("failed to load RUN `{arg}`"))?);
    }
    // Every refusal is about the inputs given: bad input (2).
    let mut plan = rules::plan(&parts)
        .map_err(|e| UsageError(e.to_string()))
        .context("failed to merge the runs")?;
    // Parts a cluster's job lost (`slurm collect` names them): gaps like an input cut
    // short, which make the merged run incomplete.
    let lost = &args.lost_parts;
    if !lost.is_empty() {
        plan.gaps.splice(0..0, lost.iter().cloned());
        if plan.status == RunStatus::Completed {
            plan.status = RunStatus::Incomplete;
        }
    }
    let allow_gaps = args.verdicts.allow_missing().not_run;
    for gap in &plan.gaps {
        match allow_gaps {
            true => console::warning(format_args!("{gap}")),
            false => eprintln!("gpubench: error: {gap}"),
        }
    }
    for w in &plan.warnings {
        console::warning(format_args!("{w}"));
    }
    for n in &plan.notes {
        console::note(format_args!("{n}"));
    }

    // Loaded before anything is written, as a run loads it: a missing or corrupt
    // baseline, or one that cannot be saved, leaves nothing behind.
    // A merged `ab` is judged against its own base, as `ab` judges: no baseline.
    let is_ab = parts.iter().any(|p| p.manifest.ab.is_some());
    let baseline = match is_ab {
        true => None,
        false => baselines::load_for_run(&args.baselines.wanted(), &places.baselines)?,
    };
    if let Some(b) = &baseline {
        crate::commands::present::announce_baseline(b);
    }
    if let Some(name) = &args.baselines.save_baseline {
        baselines::check_save(&places.baselines, name)?;
    }

    // Taken once the inputs are known to merge, so a mistake leaves nothing behind.
    let store = RunStore::open(&places.out_dir)?;
    for note in store.mark_incomplete_runs()? {
        console::note(format_args!("{note}"));
    }
    let now = chrono::Utc::now();
    let command_line: Vec<String> = command_line
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let merged_at = rfc3339_millis(now);
    let manifest =
        |run: &RunDir| rules::manifest(&parts, &plan, &run.id, &merged_at, command_line.clone());
    // Marked running, with nothing copied yet, until every record is in place: a
    // merge killed halfway is then marked incomplete by the next run or merge here,
    // as a run is, and never reads as a whole one.
    let active = store.begin_run(now, |run| copying(manifest(run)))?;
    let run = active.dir().clone();
    if let Err(e) = copy_records(&run, &parts, &plan) {
        // Nothing half-merged stays behind: the inputs are untouched and the new run
        // directory goes.
        active.discard(&crate::error::message(&e));
        return Err(e);
    }
    let manifest = active.finish_as(manifest(&run))?;
    console::status(format_args!(
        "merged {} run{} ({} benchmark{}) into run `{}`",
        parts.len(),
        plural(parts.len()),
        manifest.benchmarks.len(),
        plural(manifest.benchmarks.len()),
        run.id
    ));

    // Shown as `report` and `compare` will read it back.
    let merged = Side::load(&Resolved::Run {
        dir: run.path.clone(),
    })
    .context("failed to read the merged run back")?;
    // Folded from 0.0: an empty float sum is -0.0, which prints as `-0.000`.
    let elapsed: f64 = manifest
        .benchmarks
        .iter()
        .filter_map(|b| b.duration_s)
        .fold(0.0, |a, b| a + b);
    let mut summary = RunSummary::new(
        run.id.clone(),
        run.path.display().to_string(),
        manifest.status,
        elapsed,
        merged.entries,
    )
    .with_gaps(plan.gaps.clone(), !allow_gaps)
    .with_report_url(args.verdicts.report_url.clone());
    if is_ab {
        let comparison = ab::judge(&run.path, &parts, &merged.records, &manifest, args)?;
        summary.ab = manifest.ab.clone();
        summary = summary.with_comparison(comparison);
    } else if let Some(baseline) = &baseline {
        let comparison = RunComparison::judge_stored_run(
            &run.path,
            &merged.records,
            baseline,
            args.verdicts.settings(),
            &Absences::of_run(&manifest),
        )?;
        summary = summary.with_comparison(comparison);
    }
    let save = || match &args.baselines.save_baseline {
        None => Ok(None),
        Some(name) => match rules::unsaveable(manifest.status) {
            Some(why) => {
                console::status(format_args!("baseline `{name}` not saved: {why}"));
                Ok(None)
            }
            None => baselines::save(&places.baselines, name, &merged.records, &manifest).map(|s| {
                console::status(format_args!("{}", s.describe()));
                Some(s)
            }),
        },
    };
    let summary_file = args.verdicts.summary_file.as_ref().map(|p| cwd.join(p));
    present::show_run(
        summary,
        &run.path,
        &merged.records,
        (!args.no_report)
            .then(|| run_report::report_dir(store.dir()))
            .as_deref(),
        save,
        args.store.format,
        summary_file.as_deref(),
    )
}

/// The run directory `arg` names: a path to a run directory or to an output
/// directory (its latest run), else a stored run as `compare` resolves it.
fn resolve_input(arg: &str, places: &Places) -> Result<PathBuf> {
    let text = arg.strip_prefix("run:").unwrap_or(arg);
    if references::is_path(text) {
        let dir = places.cwd.join(text);
        // `./a/runs/x` shown as `<cwd>/a/runs/x` in messages and the manifest.
        let dir = std::path::absolute(&dir).unwrap_or(dir);
        if dir.join(MANIFEST_FILE).is_file() {
            return Ok(dir);
        }
        if let Some(latest) = resolve_latest(&dir).filter(|r| r.join(MANIFEST_FILE).is_file()) {
            if let Some(warning) = crate::store::runs::newer_than_latest(&dir) {
                console::warning(format_args!("{warning}"));
            }
            return Ok(latest);
        }
        return Err(UsageError(format!(
            "{} is neither a run directory (it has no {MANIFEST_FILE}) nor an output \
             directory holding a run (it has no latest): pass <out-dir>/runs/<run-id> or \
             the --out-dir of a run (a job whose --partition part held no benchmark \
             leaves no run: leave it out)",
            dir.display()
        ))
        .into());
    }
    match references::resolve(arg, places)? {
        Resolved::Run { dir } => Ok(dir),
        Resolved::Baseline { store, name } => Err(UsageError(format!(
            "`{arg}` is the saved baseline `{name}` ({}), not a stored run: merge takes \
             runs (latest, run:ID, a run directory or an output directory)",
            store.root.join(&name).display()
        ))
        .into()),
    }
}

/// Reads a run's manifest and the device model of each of its records.
fn load_part(dir: PathBuf) -> Result<Part> {
    let manifest = RunManifest::read(&dir.join(MANIFEST_FILE))?;
    let mut models = BTreeMap::new();
    for b in &manifest.benchmarks {
        let Some(file) = &b.record else { continue };
        let record = RawRecord::read(&dir.join(file))?;
        let model = record.fingerprint.device.name;
        if model != "unknown" {
            models.insert(b.id.clone(), model);
        }
    }
    Ok(Part {
        dir,
        manifest,
        models,
    })
}

/// `manifest` as its run stands before its records are copied: every benchmark
/// pending.
fn copying(manifest: RunManifest) -> RunManifest {
    RunManifest {
        benchmarks: manifest
            .benchmarks
            .iter()
            .map(|b| ManifestBenchmark {
                status: BenchStatus::Pending,
                failure_kind: None,
                record: None,
                ..b.clone()
            })
            .collect(),
        ..manifest
    }
}

/// Copies every input record into `run` as it is.
fn copy_records(run: &RunDir, parts: &[Part], plan: &rules::Plan) -> Result<()> {
    for (i, b) in &plan.benchmarks {
        let Some(to) = &b.record else { continue };
        let part = &parts[*i];
        let from = part
            .manifest
            .benchmarks
            .iter()
            .find(|s| s.id == b.id)
            .and_then(|s| s.record.as_ref())
            .expect("the plan keeps a record only where its input has one");
        let from = part.dir.join(from);
        let bytes = std::fs::read(&from)
            .with_context(|| format!("failed to read record {}", from.display()))?;
        write_atomic(&run.path.join(to), &bytes)?;
        // An `ab` part's base record beside it, named alike.
        let base = from
            .parent()
            .map(|d| d.join(BASE_RECORDS))
            .zip(from.file_name())
            .map(|(d, f)| d.join(f))
            .filter(|b| part.manifest.ab.is_some() && b.is_file());
        if let Some(base) = base {
            let bytes = std::fs::read(&base)
                .with_context(|| format!("failed to read record {}", base.display()))?;
            let to = run.path.join(BASE_RECORDS).join(to);
            std::fs::create_dir_all(to.parent().expect("a file in base/")).with_context(|| {
                format!("failed to create {}", run.path.join(BASE_RECORDS).display())
            })?;
            write_atomic(&to, &bytes)?;
        }
    }
    Ok(())
}
