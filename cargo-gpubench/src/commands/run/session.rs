//! A run once its benchmarks are selected: each process of each benchmark in a
//! process of its own, the records and manifest stored as they come, the run judged
//! against its baseline, the report rendered, the baseline saved and the summary
//! printed.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use anyhow::{Context, Result};
use gpubench_analysis::processes::Bound;
use gpubench_analysis::summary::BenchmarkSummary;
use gpubench_analysis::{BaselineStore, RecordAnalysis};
use gpubench_record::record::RawRecord;

use crate::build::compile::BenchExecutable;
use crate::build::libtorch::Libtorch;
use crate::cli::Format;
use crate::commands::present;
use crate::compare::summary::RunSummary;
use crate::compare::{Absences, RunComparison, VerdictSettings};
use crate::execute::devices::Device;
use crate::execute::process::ChildEnv;
use crate::execute::process::Finished;
use crate::execute::progress::Progress;
use crate::execute::runner::{self, Outcome, RunOptions};
use crate::execute::schedule::{Job, Schedule};
use crate::execute::select::Benchmark;
use crate::exit_code::Exit;
use crate::store::baselines::{self, LoadedBaseline};
use crate::store::lifecycle::{rfc3339_millis, ActiveRun};
use crate::store::manifest::{
    BenchStatus, ManifestBenchmark, ManifestExecutable, RunManifest, RunStatus,
    MANIFEST_FORMAT_VERSION,
};
use crate::store::runs::{RunDir, RunStore};
use gpubench_analysis::processes::{DecideProcesses, ProcessDecision};

/// One benchmark's progress through the processes of a run.
pub(super) struct Tracked {
    /// The processes so far.
    pub(super) record: Option<RawRecord>,
    /// Its manifest entry.
    pub(super) entry: ManifestBenchmark,
    /// Whether it needs no more processes.
    pub(super) done: bool,
}

/// What every benchmark of a run shares.
pub(super) struct Session<'a> {
    pub(super) store: &'a RunStore,
    pub(super) opts: &'a RunOptions,
    /// The process time a benchmark may use before it gets no processes beyond its floor.
    pub(super) budget: std::time::Duration,
    pub(super) env: &'a ChildEnv,
    pub(super) stop: &'a AtomicBool,
    pub(super) format: Format,
    pub(super) baselines: Baselines<'a>,
    /// `--devices`, as the bench executables see them; empty without it (one
    /// process at a time on `opts.device`).
    pub(super) devices: Vec<Device>,
    /// `--partition`, when the run measures part of the selection.
    pub(super) partition: Option<crate::execute::partition::Partition>,
    /// What the listed benchmarks the run left out are, for its manifest.
    pub(super) selection: crate::store::manifest::Selection,
    /// `--summary-file`, absolute.
    pub(super) summary_file: Option<PathBuf>,
    /// `--report-url`.
    pub(super) report_url: Option<String>,
    /// Where the HTML report goes; `None` with `--no-report`.
    pub(super) report_dir: Option<PathBuf>,
    /// The archive the executables came from, for the manifest, and the directory
    /// it was extracted into (removed after the run).
    pub(super) archive: Option<(crate::store::manifest::ManifestArchive, PathBuf)>,
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
        let active = self.store.begin_run(started, |run| {
            self.manifest(run, started, selected, executables, libtorch, command_line)
        })?;
        let tracked = match self.processes(&active, selected) {
            Ok(tracked) => tracked,
            Err(e) => {
                active.stopped_by(&crate::error::message(&e));
                return Err(e);
            }
        };
        let summaries: Vec<Option<BenchmarkSummary>> = tracked
            .iter()
            .map(|t| t.record.as_ref().map(BenchmarkSummary::from_record))
            .collect();
        let records: Vec<RawRecord> = tracked.into_iter().filter_map(|t| t.record).collect();

        let interrupted = self.stop.load(Ordering::SeqCst);
        let run = active.dir().clone();
        let manifest = active.finish(match interrupted {
            true => RunStatus::Interrupted,
            false => RunStatus::Completed,
        })?;

        let entries = manifest
            .benchmarks
            .iter()
            .zip(selected)
            .zip(summaries)
            .map(|((m, b), summary)| b.summary_entry(m, summary))
            .collect();
        let mut summary = RunSummary::new(
            run.id.clone(),
            run.path.display().to_string(),
            manifest.status,
            clock.elapsed().as_secs_f64(),
            entries,
        )
        .with_report_url(self.report_url.clone());
        if let Some(comparison) = self.compare(&run, &records, &manifest)? {
            summary = summary.with_comparison(comparison);
        }
        present::show_run(
            summary,
            &run.path,
            &records,
            self.report_dir.as_deref(),
            || self.save_baseline(&records, &manifest, interrupted),
            self.format,
            self.summary_file.as_deref(),
        )
    }

    /// The manifest the run begins with: every selected benchmark pending.
    fn manifest(
        &self,
        run: &RunDir,
        started: chrono::DateTime<chrono::Utc>,
        selected: &[Benchmark],
        executables: &[BenchExecutable],
        libtorch: &Libtorch,
        command_line: &[OsString],
    ) -> RunManifest {
        RunManifest {
            format_version: MANIFEST_FORMAT_VERSION,
            run_id: run.id.clone(),
            started_at: rfc3339_millis(started),
            finished_at: None,
            status: RunStatus::Running,
            error: None,
            pid: Some(std::process::id()),
            host: crate::store::manifest::this_host(),
            command_line: command_line
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect(),
            device: if self.devices.is_empty() {
                self.opts.device_label().to_string()
            } else {
                let labels: Vec<&str> = self.devices.iter().map(|d| d.label.as_str()).collect();
                labels.join(",")
            },
            quick: self.opts.settings.quick,
            flush_l2: self.opts.settings.flush_l2,
            processes: self.opts.processes,
            partition: self.partition.map(|p| p.to_string()),
            ab: None,
            selection: Some(self.selection.clone()),
            timeout_s: self.opts.timeout.as_secs_f64(),
            libtorch_lib: libtorch.lib_dir.display().to_string(),
            executables: executables
                .iter()
                .map(|e| ManifestExecutable {
                    package: e.package.clone(),
                    target: e.target.clone(),
                    // From an archive: its path in the archive, which outlives the
                    // run (the extracted copy does not).
                    path: match &self.archive {
                        Some((_, dir)) => e.path.strip_prefix(dir).unwrap_or(&e.path),
                        None => &e.path,
                    }
                    .display()
                    .to_string(),
                })
                .collect(),
            archive: self.archive.as_ref().map(|(a, _)| a.clone()),
            benchmarks: selected
                .iter()
                .map(|b| ManifestBenchmark::pending(&b.id, &b.target, b.package.as_deref()))
                .collect(),
            merged_from: Vec::new(),
            gaps: Vec::new(),
        }
    }

    /// Every process of every selected benchmark, on each device at once, until each
    /// is done, Ctrl-C stops the run or a process cannot be run; each recorded in
    /// `active` as it ends. Each benchmark's processes, in `selected`'s order.
    fn processes(&self, active: &ActiveRun, selected: &[Benchmark]) -> Result<Vec<Tracked>> {
        let tracked: Vec<Tracked> = active
            .manifest()
            .benchmarks
            .into_iter()
            .map(|entry| Tracked {
                record: None,
                entry,
                done: false,
            })
            .collect();
        let policy = self.opts.processes;
        let progress = Progress::new(
            selected.len() * policy.min as usize,
            self.format == Format::Human,
        );
        // One slot per device, each running one process at a time.
        let slots: Vec<RunOptions> = if self.devices.is_empty() {
            vec![self.opts.clone()]
        } else {
            self.devices
                .iter()
                .map(|d| RunOptions {
                    device: Some(d.label.clone()),
                    ..self.opts.clone()
                })
                .collect()
        };
        let shared = Mutex::new(Shared {
            schedule: Schedule::new(selected.len()),
            planned: vec![policy.min; selected.len()],
            tracked,
            progress,
            failed: None,
        });
        let several = slots.len() > 1;
        std::thread::scope(|scope| {
            for (slot, opts) in slots.iter().enumerate() {
                let shared = &shared;
                scope.spawn(move || self.work(slot, opts, several, selected, active, shared));
            }
        });
        let Shared {
            tracked,
            progress,
            failed,
            ..
        } = shared.into_inner().expect("a device's thread panicked");
        if let Some(e) = failed {
            return Err(e);
        }
        progress.finish();
        Ok(tracked)
    }

    /// Judges the run's records against the baseline loaded before it, and stores the
    /// comparison with the run.
    pub(super) fn compare(
        &self,
        run: &RunDir,
        records: &[RawRecord],
        manifest: &RunManifest,
    ) -> Result<Option<RunComparison>> {
        let Some(baseline) = self.baselines.compare else {
            return Ok(None);
        };
        RunComparison::judge_stored_run(
            &run.path,
            records,
            baseline,
            self.baselines.settings,
            &Absences::of_run(manifest),
        )
        .map(Some)
    }

    /// `--save-baseline`: saves what passed, unless the run was interrupted.
    pub(super) fn save_baseline(
        &self,
        records: &[RawRecord],
        manifest: &RunManifest,
        interrupted: bool,
    ) -> Result<Option<baselines::SavedBaseline>> {
        let Some(name) = self.baselines.save_as else {
            return Ok(None);
        };
        if interrupted {
            crate::console::status(format_args!(
                "baseline `{name}` not saved: the run was interrupted"
            ));
            return Ok(None);
        }
        let saved = baselines::save(self.baselines.store, name, records, manifest)?;
        crate::console::status(format_args!("{}", saved.describe()));
        Ok(Some(saved))
    }

    /// Device slot `slot`'s thread: runs the processes the schedule gives it, one at
    /// a time, with `opts` (its device), until it has none left, Ctrl-C stops the
    /// run, or another slot failed. `several`: progress names the device.
    fn work(
        &self,
        slot: usize,
        opts: &RunOptions,
        several: bool,
        selected: &[Benchmark],
        active: &ActiveRun,
        shared: &Mutex<Shared>,
    ) {
        let run = active.dir();
        let on = several.then(|| opts.device_label());
        loop {
            let job = {
                let mut s = shared.lock().expect("a device's thread panicked");
                if self.stop.load(Ordering::SeqCst) || s.failed.is_some() {
                    return;
                }
                let Some(job) = s.schedule.next(slot) else {
                    return;
                };
                s.progress
                    .start(&selected[job.bench].qualified(), job.process, on);
                job
            };
            let bench = &selected[job.bench];
            let ran = run
                .fresh_incoming(slot)
                .map_err(anyhow::Error::from)
                .and_then(|incoming| {
                    runner::run_benchmark(bench, job.process, opts, self.env, &incoming, self.stop)
                        .with_context(|| {
                            format!(
                                "failed to run benchmark {} ({})",
                                bench.qualified(),
                                bench.exe.display()
                            )
                        })
                });
            let mut s = shared.lock().expect("a device's thread panicked");
            let folded = ran.and_then(|ran| self.fold(active, bench, job, on, ran, &mut s));
            if let Err(e) = folded {
                s.failed.get_or_insert(e);
                return;
            }
        }
    }

    /// Adds what process `job.process` of `bench` (on device `on`, with `--devices`) left
    /// to its record, stores that and the manifest, decides whether the benchmark
    /// needs another process, and shows the process as finished.
    fn fold(
        &self,
        active: &ActiveRun,
        bench: &Benchmark,
        job: Job,
        on: Option<&str>,
        (outcome, finished): (Outcome, Finished),
        s: &mut Shared,
    ) -> Result<()> {
        let i = job.bench;
        let seconds = finished.elapsed.as_secs_f64();
        let t = &mut s.tracked[i];
        t.entry.duration_s = Some(t.entry.duration_s.unwrap_or(0.0) + seconds);
        t.entry.device = on.map(str::to_string);
        match outcome {
            // Stopped by Ctrl-C: the processes that finished stand.
            Outcome::Interrupted => {
                if t.record.is_none() {
                    t.entry.status = BenchStatus::Interrupted;
                }
                t.done = true;
            }
            Outcome::Recorded(record) => {
                let record = match t.record.take() {
                    None => *record,
                    Some(mut so_far) => {
                        so_far
                            .append_processes(*record)
                            .context("failed to add a process to the record")?;
                        so_far
                    }
                };
                t.entry.record = Some(active.dir().write_record(&bench.id, &record)?);
                t.entry.processes = record.processes.len() as u32;
                t.entry.status = if record.passed() {
                    BenchStatus::Passed
                } else {
                    BenchStatus::Failed
                };
                t.entry.failure_kind = record.failure().map(|f| f.kind);
                t.record = Some(record);
            }
        }
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
        let policy = self.opts.processes;
        let planned = &mut s.planned[i];
        if t.entry.status != BenchStatus::Passed {
            t.done = true;
            s.progress
                .drop_planned(planned.saturating_sub(job.process) as usize);
        } else if let Some(record) = &t.record {
            let stats =
                gpubench_analysis::processes::ProcessStats::from_groups(&record.primary_groups());
            let spent = std::time::Duration::from_secs_f64(t.entry.duration_s.unwrap_or(0.0));
            let host_bound = record.bound() == Bound::Host;
            t.done = t.done
                || policy.decide(job.process, &stats, host_bound, spent >= self.budget)
                    == ProcessDecision::Done;
            if !t.done && job.process >= *planned {
                *planned = job.process + 1;
                s.progress.add(1);
            } else if t.done && job.process < *planned {
                s.progress.drop_planned((*planned - job.process) as usize);
            }
        }
        s.schedule.finished(job, t.done);
        s.progress
            .finish_one(&bench.qualified(), job.process, on, word, reason, seconds);
        active.process(i, t.entry.clone())?;
        Ok(())
    }
}

/// What the devices' threads of a run share.
pub(super) struct Shared {
    /// Which process each device runs next.
    schedule: Schedule,
    /// Per benchmark: the processes counted on so far (for progress).
    planned: Vec<u32>,
    /// Per benchmark: its processes so far.
    tracked: Vec<Tracked>,
    progress: Progress,
    /// The first error a thread met: the others start no more processes.
    failed: Option<anyhow::Error>,
}
