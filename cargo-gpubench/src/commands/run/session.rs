//! A run once its benchmarks are selected: each round of each benchmark in a
//! process of its own, the records and manifest stored as they come, the run judged
//! against its baseline, the report rendered, the baseline saved and the summary
//! printed.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use anyhow::{Context, Result};
use gpubench_analysis::summary::BenchmarkSummary;
use gpubench_analysis::{BaselineStore, RawRecord};

use crate::build::compile::BenchExecutable;
use crate::build::libtorch::Libtorch;
use crate::cli::Format;
use crate::compare::{RunComparison, VerdictSettings};
use crate::execute::process::ChildEnv;
use crate::execute::progress::Progress;
use crate::execute::runner::{self, Outcome, RunOptions};
use crate::execute::select::Benchmark;
use crate::exit_code::Exit;
use crate::output::exports;
use crate::output::html::run_report::{self, StoredRun};
use crate::output::json::{RunSummary, SummaryEntry};
use crate::output::markdown::MarkdownSummary;
use crate::store::baselines::{self, LoadedBaseline};
use crate::store::manifest::{
    BenchStatus, ManifestBenchmark, ManifestExecutable, RunManifest, RunStatus,
    MANIFEST_FORMAT_VERSION,
};
use crate::store::runs::{RunDir, RunStore};
use gpubench_analysis::processes::RoundDecision;

/// One benchmark's progress through the rounds of a run.
pub(super) struct Tracked {
    /// The rounds so far.
    pub(super) record: Option<RawRecord>,
    /// Its manifest entry.
    pub(super) entry: ManifestBenchmark,
    /// Whether it needs no more rounds.
    pub(super) done: bool,
}

/// What every benchmark of a run shares.
pub(super) struct Session<'a> {
    pub(super) store: &'a RunStore,
    pub(super) opts: &'a RunOptions,
    /// The process time a benchmark may use before it gets no rounds beyond its floor.
    pub(super) budget: std::time::Duration,
    pub(super) env: &'a ChildEnv,
    pub(super) stop: &'a AtomicBool,
    pub(super) format: Format,
    pub(super) baselines: Baselines<'a>,
    /// `--partition`, when the run measures part of the selection.
    pub(super) partition: Option<crate::execute::partition::Partition>,
    /// `--summary-file`, absolute.
    pub(super) summary_file: Option<PathBuf>,
    /// Where the HTML report goes; `None` with `--no-report`.
    pub(super) report_dir: Option<PathBuf>,
    /// The archive the executables came from, for the manifest.
    pub(super) archive: Option<crate::store::manifest::ManifestArchive>,
}

/// What a run does with baselines.
pub(super) struct Baselines<'a> {
    pub(super) store: &'a BaselineStore,
    /// The baseline to compare with, loaded before the run.
    pub(super) compare: Option<&'a LoadedBaseline>,
    /// `--save-baseline`.
    pub(super) save_as: Option<&'a str>,
    pub(super) settings: VerdictSettings,
}

impl Session<'_> {
    pub(super) fn run_all(
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
            partition: self.partition.map(|p| p.to_string()),
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
            archive: self.archive.clone(),
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
    pub(super) fn render_report(
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
            .map_err(|e| crate::error::message(&e))
    }

    /// Judges the run's records against the baseline loaded before it, and stores the
    /// comparison with the run.
    pub(super) fn compare(
        &self,
        run: &RunDir,
        records: &[RawRecord],
    ) -> Result<Option<RunComparison>> {
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
    pub(super) fn save_baseline(
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
    pub(super) fn print(&self, summary: &RunSummary) -> Result<()> {
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
            Format::GithubActionBenchmark => print!(
                "{}",
                crate::output::json::pretty_json(&exports::github_action_benchmark(
                    &summary.benchmarks
                ))
            ),
            Format::Bmf => print!(
                "{}",
                crate::output::json::pretty_json(&exports::bmf(&summary.benchmarks))
            ),
        }
        if let Some(path) = &self.summary_file {
            crate::output::markdown::write_summary_file(path, &markdown())?;
        }
        Ok(())
    }

    /// Runs round `round` of one benchmark, adds it to the benchmark's record and
    /// stores that; returns the process's wall time in seconds.
    pub(super) fn run_round(
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

pub(super) fn rfc3339_millis(t: chrono::DateTime<chrono::Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}
