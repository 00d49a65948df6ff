//! One invocation of `cargo gpubench` from start to end: discover, build, list,
//! select, load the baseline, run, store, compare, render the HTML report, save the
//! baseline, summarise (or hand `compare` to [`crate::compare_command`] and `report`
//! to [`crate::report_command`]). This is the edge where the typed
//! errors of the other modules get their context.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use anyhow::{Context, Result};
use gpubench_analysis::summary::BenchmarkSummary;
use gpubench_analysis::{BaselineStore, RawRecord};

use crate::baselines::{self, LoadedBaseline};
use crate::cli::{Cli, Format, RunArgs};
use crate::comparison::{plural, RunComparison, VerdictSettings};
use crate::compile::{self, BenchExecutable};
use crate::discover;
use crate::exit::Exit;
use crate::libtorch::{self, Libtorch};
use crate::listing;
use crate::manifest::{
    BenchStatus, ManifestBenchmark, ManifestExecutable, RunManifest, RunStatus,
    MANIFEST_FORMAT_VERSION,
};
use crate::markdown::MarkdownSummary;
use crate::process::ChildEnv;
use crate::progress::Progress;
use crate::run_report::{self, StoredRun};
use crate::runner::{self, Outcome, RunOptions};
use crate::select::{self, Benchmark, Filter, Ignored};
use crate::store::{RunDir, RunStore};
use crate::summary::{RunSummary, SummaryEntry};
use crate::UsageError;
use gpubench_analysis::processes::RoundDecision;
use gpubench_analysis::protocol::{RECORD_DIR_VAR, ROUND_VAR};

/// The default output directory with `--exe`, relative to the current directory.
const EXE_MODE_OUT_DIR: &str = "target/gpubench";

/// Runs `cli`; `command_line` is recorded in the run's manifest.
pub fn run(cli: &Cli, command_line: &[OsString]) -> Result<Exit> {
    if let Some(args) = cli.compare_args() {
        return crate::compare_command::run(args);
    }
    if let Some(args) = cli.report_args() {
        return crate::report_command::run(args);
    }
    if let Some(args) = cli.setup_args() {
        return crate::setup::run(args);
    }
    if let Some(args) = cli.doctor_args() {
        return crate::doctor::run(args);
    }
    let args = cli.run_args();
    let stop = interrupt_flag()?;

    let prepared = if args.exes.is_empty() {
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
    let env = child_env(&libtorch, &prepared.native_paths, &prepared.target_dir);

    let mut all = Vec::new();
    for exe in &prepared.executables {
        let listed = listing::list(&exe.path, &env, args.timeout, &stop)?;
        all.extend(listed.into_iter().map(|b| Benchmark {
            package: exe.package.clone(),
            target: exe.target.clone(),
            exe: exe.path.clone(),
            id: b.id,
            ignored: b.ignored,
        }));
        if stop.load(Ordering::SeqCst) {
            return Ok(Exit::Interrupted);
        }
    }

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
    if let Some(device) = args.device.as_deref() {
        check_device(&selected[0].exe, device, &env, args.timeout, &stop)?;
    }

    // Loaded before anything runs: a missing or corrupt baseline stops the run before
    // it spends time, and a run that saves over it is compared with it as it was.
    let cwd = std::env::current_dir().context("failed to read the current directory")?;
    let baseline_store = baselines::store(
        args.verdicts.baselines_dir.as_deref(),
        &prepared.workspace_root,
        &cwd,
    );
    let baseline = baselines::load_for_run(args, &baseline_store)?;
    if let Some(b) = &baseline {
        let how = if b.source.default {
            "; it is the default when saved: --baseline NAME picks another, --no-baseline skips"
        } else {
            ""
        };
        eprintln!(
            "gpubench: comparing with baseline `{}` ({} benchmark{} in {}{how})",
            b.source.name,
            b.entries.len(),
            plural(b.entries.len()),
            b.source.path
        );
    }

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
        baselines: Baselines {
            store: &baseline_store,
            compare: baseline.as_ref(),
            save_as: args.save_baseline.as_deref(),
            settings: baselines::settings(&args.verdicts),
        },
        summary_file: args.verdicts.summary_file.as_ref().map(|p| cwd.join(p)),
        report_dir: (!args.no_report).then(|| run_report::report_dir(store.dir())),
    };
    eprintln!(
        "gpubench: running {} benchmark{} (libtorch: {}, from {})",
        selected.len(),
        plural(selected.len()),
        libtorch.lib_dir.display(),
        libtorch.source
    );
    session.run_all(&selected, &prepared.executables, &libtorch, command_line)
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
}

/// Discovers and builds; `None` when interrupted.
fn prepare_workspace(args: &RunArgs, stop: &AtomicBool) -> Result<Option<Prepared>> {
    let cargo = PathBuf::from(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    let workspace = discover::discover(
        &cargo,
        args.manifest_path.as_deref(),
        &args.packages,
        &args.benches,
    )
    .context("failed to discover bench targets")?;
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
    let mut cmd = compile::build_command(&cargo, args.manifest_path.as_deref(), &workspace.targets);
    let libtorch = hand_libtorch_to_the_build(&mut cmd, &workspace.root)?;
    let built = compile::build(cmd, &workspace.targets);
    if stop.load(Ordering::SeqCst) {
        return Ok(None);
    }
    let built = built.context("failed to build bench targets")?;
    Ok(Some(Prepared {
        executables: built.executables,
        native_paths: built.native_paths,
        out_dir,
        target_dir: workspace.target_dir,
        workspace_root: workspace.root,
        store,
        libtorch,
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
        if !args.benches.is_empty() && !args.benches.contains(&exe.target) {
            continue;
        }
        executables.push(exe);
    }
    if executables.is_empty() {
        return Err(UsageError(format!(
            "no --exe executable is one of the bench targets {}",
            args.benches.join(", ")
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
    })
}

/// The environment of benchmark processes: libtorch (and build-script libraries in
/// the target directory) on the loader path; the subcommand's own `GPUBENCH_*`
/// options removed, since they reach the harness as arguments.
fn child_env(libtorch: &Libtorch, native_paths: &[PathBuf], target_dir: &Path) -> ChildEnv {
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
fn hand_libtorch_to_the_build(
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

/// Asks a bench executable once whether `device` is there, so an unavailable one
/// stops the run before it starts instead of failing every benchmark.
fn check_device(
    exe: &std::path::Path,
    device: &str,
    env: &crate::process::ChildEnv,
    timeout: std::time::Duration,
    stop: &AtomicBool,
) -> Result<()> {
    let mut cmd = std::process::Command::new(exe);
    cmd.args(["--check-device", "--device", device]);
    env.apply(&mut cmd);
    let finished = crate::process::run(cmd, timeout, stop, crate::process::TAIL_BYTES)
        .with_context(|| format!("failed to run {} to check --device", exe.display()))?;
    match finished.ending {
        crate::process::Ending::Exited(0) => Ok(()),
        crate::process::Ending::Exited(2) => {
            let why = finished
                .stderr_tail
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("")
                .trim()
                .trim_start_matches("error: ")
                .to_string();
            Err(crate::UsageError(format!("--device {device} is not available here: {why}")).into())
        }
        other => Err(anyhow::anyhow!(
            "failed to check --device {device} with {} ({other:?}): {}",
            exe.display(),
            finished.stderr_tail.trim()
        )),
    }
}

fn print_list(all: &[Benchmark], filter: &Filter, format: Format) {
    let mut shown: Vec<Benchmark> = all
        .iter()
        .filter(|b| filter.matches_name(b) && (filter.ignored != Ignored::Only || b.ignored))
        .cloned()
        .collect();
    select::sort(&mut shown);
    match format {
        Format::Human | Format::Markdown => {
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

/// One benchmark's progress through the rounds of a run.
struct Tracked {
    /// The rounds so far.
    record: Option<RawRecord>,
    /// Its manifest entry.
    entry: ManifestBenchmark,
    /// Whether it needs no more rounds.
    done: bool,
}

/// What every benchmark of a run shares.
struct Session<'a> {
    store: &'a RunStore,
    opts: &'a RunOptions,
    /// The process time a benchmark may use before it gets no rounds beyond its floor.
    budget: std::time::Duration,
    env: &'a ChildEnv,
    stop: &'a AtomicBool,
    format: Format,
    baselines: Baselines<'a>,
    /// `--summary-file`, absolute.
    summary_file: Option<PathBuf>,
    /// Where the HTML report goes; `None` with `--no-report`.
    report_dir: Option<PathBuf>,
}

/// What a run does with baselines.
struct Baselines<'a> {
    store: &'a BaselineStore,
    /// The baseline to compare with, loaded before the run.
    compare: Option<&'a LoadedBaseline>,
    /// `--save-baseline`.
    save_as: Option<&'a str>,
    settings: VerdictSettings,
}

impl Session<'_> {
    fn run_all(
        &self,
        selected: &[Benchmark],
        executables: &[BenchExecutable],
        libtorch: &Libtorch,
        command_line: &[OsString],
    ) -> Result<Exit> {
        let started = chrono::Utc::now();
        let clock = Instant::now();
        let run = self.store.create_run(started)?;
        let mut manifest = RunManifest {
            format_version: MANIFEST_FORMAT_VERSION,
            run_id: run.id.clone(),
            started_at: rfc3339_millis(started),
            finished_at: None,
            status: RunStatus::Running,
            pid: Some(std::process::id()),
            command_line: command_line
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect(),
            device: self.opts.device_label().to_string(),
            quick: self.opts.quick,
            flush_l2: self.opts.flush_l2,
            processes: self.opts.processes,
            timeout_s: self.opts.timeout.as_secs_f64(),
            libtorch_lib: libtorch.lib_dir.display().to_string(),
            executables: executables
                .iter()
                .map(|e| ManifestExecutable {
                    package: e.package.clone(),
                    target: e.target.clone(),
                    path: e.path.display().to_string(),
                })
                .collect(),
            benchmarks: selected
                .iter()
                .map(|b| ManifestBenchmark {
                    id: b.id.clone(),
                    target: b.target.clone(),
                    package: b.package.clone(),
                    status: BenchStatus::Pending,
                    failure_kind: None,
                    record: None,
                    duration_s: None,
                    rounds: 0,
                })
                .collect(),
        };
        run.write_manifest(&manifest)?;

        let mut tracked: Vec<Tracked> = manifest
            .benchmarks
            .iter()
            .map(|entry| Tracked {
                record: None,
                entry: entry.clone(),
                done: false,
            })
            .collect();
        let policy = self.opts.processes;
        let mut progress = Progress::new(
            selected.len() * policy.min as usize,
            self.format == Format::Human,
        );
        let mut planned = vec![policy.min; selected.len()];
        // Round 1 of every benchmark, then round 2 of those that need one, ...: drift
        // and machine state hit every benchmark alike.
        'rounds: for round in 1u32.. {
            let pending: Vec<usize> = (0..selected.len()).filter(|&i| !tracked[i].done).collect();
            if pending.is_empty() {
                break;
            }
            for i in pending {
                if self.stop.load(Ordering::SeqCst) {
                    break 'rounds;
                }
                let bench = &selected[i];
                let name = bench.qualified();
                progress.start(&name, round);
                let t = &mut tracked[i];
                let seconds = self.run_round(&run, bench, round, t)?;
                let reason = t
                    .record
                    .as_ref()
                    .and_then(|r| r.failure())
                    .map(|f| f.kind.label());
                let word = match t.entry.status {
                    BenchStatus::Passed => "passed",
                    BenchStatus::Failed => "failed",
                    BenchStatus::Interrupted => "interrupted",
                    BenchStatus::Pending => "not run",
                };
                if t.entry.status != BenchStatus::Passed {
                    t.done = true;
                    progress.drop_planned(planned[i].saturating_sub(round) as usize);
                } else if let Some(record) = &t.record {
                    let stats = gpubench_analysis::processes::ProcessStats::from_groups(
                        &record.primary_groups(),
                    );
                    let spent =
                        std::time::Duration::from_secs_f64(t.entry.duration_s.unwrap_or(0.0));
                    let host_bound = record.bound() == gpubench_analysis::Bound::Host;
                    t.done = policy.decide(round, &stats, host_bound, spent >= self.budget)
                        == RoundDecision::Done;
                    if !t.done && round >= planned[i] {
                        planned[i] = round + 1;
                        progress.add(1);
                    } else if t.done && round < planned[i] {
                        progress.drop_planned((planned[i] - round) as usize);
                    }
                }
                progress.finish_one(&name, round, word, reason, seconds);
                manifest.benchmarks[i] = t.entry.clone();
                run.write_manifest(&manifest)?;
            }
        }
        progress.finish();
        run.remove_incoming()?;
        let summaries: Vec<Option<BenchmarkSummary>> = tracked
            .iter()
            .map(|t| t.record.as_ref().map(BenchmarkSummary::from_record))
            .collect();
        let records: Vec<RawRecord> = tracked.into_iter().filter_map(|t| t.record).collect();

        let interrupted = self.stop.load(Ordering::SeqCst);
        manifest.status = if interrupted {
            RunStatus::Interrupted
        } else {
            RunStatus::Completed
        };
        manifest.finished_at = Some(rfc3339_millis(chrono::Utc::now()));
        manifest.pid = None;
        run.write_manifest(&manifest)?;
        self.store.point_latest(&run)?;

        let entries = manifest
            .benchmarks
            .iter()
            .zip(selected)
            .zip(summaries)
            .map(|((m, b), summary)| SummaryEntry {
                name: b.qualified(),
                target: b.target.clone(),
                id: b.id.clone(),
                status: m.status,
                record: m.record.clone(),
                summary,
                comparison: None,
            })
            .collect();
        let mut summary = RunSummary::new(
            run.id.clone(),
            run.path.display().to_string(),
            manifest.status,
            clock.elapsed().as_secs_f64(),
            entries,
        );
        if let Some(comparison) = self.compare(&run, &records)? {
            summary = summary.with_comparison(comparison);
        }
        if let Some(dir) = &self.report_dir {
            let report = self.render_report(&run, &records, &summary, dir);
            summary = summary.with_report(report);
        }
        // The summary is printed even when saving fails, so the run is not lost from
        // view; the error then decides the exit code.
        let saved = self.save_baseline(&records, interrupted);
        if let Ok(s) = &saved {
            summary.saved_baseline = s.clone();
        }
        self.print(&summary)?;
        match (&summary.report, &summary.report_error) {
            (Some(index), _) if self.format != Format::Json => eprintln!("report: {index}"),
            (_, Some(error)) => eprintln!(
                "error: {error} (the records are kept in {}; `cargo gpubench report {}` \
                 renders it again)",
                run.path.display(),
                run.id
            ),
            _ => {}
        }
        saved?;
        Ok(summary.exit_code())
    }

    /// Renders the run's HTML report; a failure is returned as its message, so the
    /// run still saves its baseline and prints its summary.
    fn render_report(
        &self,
        run: &RunDir,
        records: &[RawRecord],
        summary: &RunSummary,
        dir: &Path,
    ) -> Result<PathBuf, String> {
        let stored = StoredRun {
            id: &run.id,
            dir: &run.path,
            records,
            entries: &summary.benchmarks,
        };
        run_report::render_run(stored, dir)
            .map(|index| index.index)
            .map_err(|e| error_message(&e))
    }

    /// Judges the run's records against the baseline loaded before it, and stores the
    /// comparison with the run.
    fn compare(&self, run: &RunDir, records: &[RawRecord]) -> Result<Option<RunComparison>> {
        let Some(baseline) = self.baselines.compare else {
            return Ok(None);
        };
        let comparison = RunComparison::judge(
            records,
            &baseline.entries,
            baseline.source.clone(),
            self.baselines.settings,
        )
        .with_context(|| {
            format!(
                "failed to compare the run with {}",
                baseline.source.describe()
            )
        })?;
        comparison
            .store(&run.path, &baseline.entries)
            .context("failed to store the comparison with the run")?;
        if let Some(msg) = comparison.device_mismatch_message() {
            eprintln!("gpubench: warning: {msg}");
        }
        Ok(Some(comparison))
    }

    /// `--save-baseline`: saves what passed, unless the run was interrupted.
    fn save_baseline(
        &self,
        records: &[RawRecord],
        interrupted: bool,
    ) -> Result<Option<baselines::SavedBaseline>> {
        let Some(name) = self.baselines.save_as else {
            return Ok(None);
        };
        if interrupted {
            eprintln!("gpubench: baseline `{name}` not saved: the run was interrupted");
            return Ok(None);
        }
        let saved = baselines::save(self.baselines.store, name, records)?;
        eprintln!("gpubench: {}", saved.describe());
        Ok(Some(saved))
    }

    /// Prints the summary in the chosen format and writes `--summary-file`.
    fn print(&self, summary: &RunSummary) -> Result<()> {
        let subject = format!("run `{}`", summary.run_id);
        let markdown = || {
            MarkdownSummary {
                subject: &subject,
                entries: &summary.benchmarks,
                comparison: summary.comparison.as_ref(),
                exit: summary.exit_code(),
            }
            .render()
        };
        match self.format {
            Format::Human => print!("{}", summary.render_human()),
            Format::Json => print!("{}", summary.to_json_pretty()),
            Format::Markdown => print!("{}", markdown()),
        }
        if let Some(path) = &self.summary_file {
            write_summary_file(path, &markdown())?;
        }
        Ok(())
    }

    /// Runs round `round` of one benchmark, adds it to the benchmark's record and
    /// stores that; returns the process's wall time in seconds.
    fn run_round(
        &self,
        run: &RunDir,
        bench: &Benchmark,
        round: u32,
        t: &mut Tracked,
    ) -> Result<f64> {
        let incoming = run.fresh_incoming()?;
        let (outcome, finished) =
            runner::run_benchmark(bench, round, self.opts, self.env, &incoming, self.stop)
                .with_context(|| {
                    format!(
                        "failed to run benchmark {} ({})",
                        bench.qualified(),
                        bench.exe.display()
                    )
                })?;
        let seconds = finished.elapsed.as_secs_f64();
        t.entry.duration_s = Some(t.entry.duration_s.unwrap_or(0.0) + seconds);
        let Outcome::Recorded(record) = outcome else {
            // Stopped by Ctrl-C: the rounds that finished stand.
            if t.record.is_none() {
                t.entry.status = BenchStatus::Interrupted;
            }
            t.done = true;
            return Ok(seconds);
        };
        let record = match t.record.take() {
            None => *record,
            Some(mut so_far) => {
                so_far
                    .append_rounds(*record)
                    .context("failed to add a round to the record")?;
                so_far
            }
        };
        t.entry.record = Some(run.write_record(&bench.id, &record)?);
        t.entry.rounds = record.rounds.len() as u32;
        t.entry.status = if record.passed() {
            BenchStatus::Passed
        } else {
            BenchStatus::Failed
        };
        t.entry.failure_kind = record.failure().map(|f| f.kind);
        t.record = Some(record);
        Ok(seconds)
    }
}

/// Writes the Markdown summary to `path` (`--summary-file`), creating its directory,
/// atomically.
pub fn write_summary_file(path: &Path, markdown: &str) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("failed to create the directory of {}", path.display()))?;
    }
    crate::store::write_atomic(path, markdown.as_bytes())
        .context("failed to write the summary file")
}

fn rfc3339_millis(t: chrono::DateTime<chrono::Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// The flag Ctrl-C (and SIGTERM) raises: the running benchmark is killed, finished
/// records are kept. A second Ctrl-C exits at once.
fn interrupt_flag() -> Result<Arc<AtomicBool>> {
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

/// An error and its causes as one line, `failed to x: failed to y: cause`, leaving
/// out a cause its parent already quotes.
pub fn error_message(err: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in err.chain() {
        let text = cause.to_string();
        if out.ends_with(&text) || out.contains(&format!(": {text}")) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_messages_read_as_a_chain_without_repeats() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
        let store = crate::store::StoreError::Io {
            action: "write",
            path: "/t/x.json".into(),
            source: io,
        };
        let err = anyhow::Error::new(store).context("failed to store the run");
        assert_eq!(
            error_message(&err),
            "failed to store the run: failed to write /t/x.json: no such file"
        );
    }
}
