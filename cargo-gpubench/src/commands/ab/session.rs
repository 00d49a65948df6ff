//! An `ab` run once its benchmarks are paired: every round of every benchmark in a
//! process (base and head together, or each alone when pairing cannot work), the
//! records stored as they come (the head's as the run's, the base's under
//! `base/`), the head judged against the base, the report, the summary.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use anyhow::{Context, Result};
use gpubench_analysis::baseline::{compare_paired_records, is_paired, Missing, MissingKind};
use gpubench_analysis::processes::{Bound, DecideRounds, ProcessStats, RoundDecision};
use gpubench_analysis::summary::BenchmarkSummary;
use gpubench_analysis::{BaselineEntry, RecordAnalysis};
use gpubench_record::record::RawRecord;

use super::plan::Plan;
use crate::build::revision::Revision;
use crate::cli::{Format, VerdictArgs};
use crate::commands::present;
use crate::compare::{Absences, RunComparison, VerdictSettings};
use crate::execute::paired::runner as paired_runner;
use crate::execute::process::{ChildEnv, Finished};
use crate::execute::progress::Progress;
use crate::execute::runner::{self, Outcome, RunOptions};
use crate::execute::select::Benchmark;
use crate::exit_code::Exit;
use crate::output::json::RunSummary;
use crate::store::manifest::{
    BenchStatus, ManifestAb, ManifestBenchmark, ManifestExecutable, RunManifest, RunStatus,
    Selection, MANIFEST_FORMAT_VERSION,
};
use crate::store::references::SummaryEntry;
use crate::store::runs::{write_atomic, RunDir, RunStore};
use crate::store::{Source, SourceKind};

/// The folder of an `ab` run holding the base's records, named like the head's.
pub const BASE_RECORDS: &str = "base";

/// How base and head share processes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    /// In one process, samples alternated.
    Paired,
    /// In processes of their own, interleaved; why pairing could not work.
    Separate {
        /// The reason, for the output.
        reason: String,
    },
}

/// What every benchmark of an `ab` run shares.
pub struct Session<'a> {
    pub store: &'a RunStore,
    pub opts: &'a RunOptions,
    pub env: &'a ChildEnv,
    pub stop: &'a AtomicBool,
    pub mode: Mode,
    /// The process time a benchmark may use before it gets no rounds beyond its
    /// floor.
    pub budget: std::time::Duration,
    pub base: &'a Revision,
    pub head: &'a Revision,
    pub ab: ManifestAb,
    /// Whether every bench target was listed (no `-p`/`--bench`).
    pub all_targets: bool,
    pub format: Format,
    pub verdicts: &'a VerdictArgs,
    /// How the head is judged: the verdict options with `ab`'s paired noise
    /// threshold.
    pub settings: VerdictSettings,
    pub report_dir: Option<PathBuf>,
    pub summary_file: Option<PathBuf>,
    pub libtorch_lib: PathBuf,
}

/// One benchmark's progress through the rounds.
struct Tracked {
    base: Option<Benchmark>,
    head: Benchmark,
    base_record: Option<RawRecord>,
    head_record: Option<RawRecord>,
    entry: ManifestBenchmark,
    done: bool,
}

impl Session<'_> {
    /// Runs every round of `plan`, stores, judges and shows the run; its exit code.
    pub fn run_all(&self, plan: &Plan, command_line: &[OsString]) -> Result<Exit> {
        let started = chrono::Utc::now();
        let clock = Instant::now();
        let run = self.store.create_run(started)?;
        let mut tracked: Vec<Tracked> = plan
            .pairs
            .iter()
            .map(|(b, h)| (Some(b.clone()), h.clone()))
            .chain(plan.new.iter().map(|h| (None, h.clone())))
            .map(|(base, head)| Tracked {
                entry: ManifestBenchmark {
                    id: head.id.clone(),
                    target: head.target.clone(),
                    package: head.package.clone(),
                    status: BenchStatus::Pending,
                    failure_kind: None,
                    record: None,
                    duration_s: None,
                    rounds: 0,
                    device: None,
                },
                base,
                head,
                base_record: None,
                head_record: None,
                done: false,
            })
            .collect();
        let mut manifest = self.manifest(&run, started, &tracked, plan, command_line);
        run.write_manifest(&manifest)?;

        let policy = self.opts.processes;
        let mut progress = Progress::new(
            tracked.len() * policy.min as usize,
            self.format == Format::Human,
        );
        'rounds: for round in 1..=policy.max {
            for (i, t) in tracked.iter_mut().enumerate() {
                if t.done {
                    continue;
                }
                if self.stop.load(Ordering::SeqCst) {
                    break 'rounds;
                }
                let name = t.head.qualified();
                progress.start(&name, round, None);
                let incoming = run.fresh_incoming(0)?;
                let (base, head, finished) = self
                    .measure(t, round, &incoming)
                    .with_context(|| format!("failed to run benchmark {name}"))?;
                let seconds = finished.elapsed.as_secs_f64();
                t.entry.duration_s = Some(t.entry.duration_s.unwrap_or(0.0) + seconds);
                let interrupted = matches!(head, Outcome::Interrupted);
                fold(&mut t.head_record, head)?;
                if let Some(base) = base {
                    fold(&mut t.base_record, base)?;
                }
                self.store_records(&run, t)?;
                let head_passed = t.head_record.as_ref().is_some_and(RawRecord::passed);
                let base_passed = t.base_record.as_ref().is_none_or(RawRecord::passed);
                t.entry.status = match (&t.head_record, interrupted) {
                    (None, true) => BenchStatus::Interrupted,
                    (None, false) => BenchStatus::Pending,
                    (Some(_), _) if head_passed => BenchStatus::Passed,
                    (Some(_), _) => BenchStatus::Failed,
                };
                t.entry.failure_kind = t
                    .head_record
                    .as_ref()
                    .and_then(|r| r.failure())
                    .map(|f| f.kind);
                t.entry.rounds = t.head_record.as_ref().map_or(0, |r| r.rounds.len() as u32);
                let word = match t.entry.status {
                    BenchStatus::Passed if !base_passed => "passed (base failed)",
                    BenchStatus::Passed => "passed",
                    BenchStatus::Failed => "failed",
                    BenchStatus::Interrupted => "interrupted",
                    BenchStatus::Pending => "not run",
                };
                let spent = std::time::Duration::from_secs_f64(t.entry.duration_s.unwrap_or(0.0));
                let more = head_passed
                    && base_passed
                    && !interrupted
                    && self.another_round(t, round, spent >= self.budget);
                if !more {
                    t.done = true;
                    progress.drop_planned(policy.min.saturating_sub(round) as usize);
                } else if round >= policy.min {
                    progress.add(1);
                }
                let reason = t
                    .head_record
                    .as_ref()
                    .and_then(|r| r.failure())
                    .map(|f| f.kind.label());
                progress.finish_one(&name, round, None, word, reason, seconds);
                manifest.benchmarks[i] = t.entry.clone();
                run.write_manifest(&manifest)?;
            }
            if tracked.iter().all(|t| t.done) {
                break;
            }
        }
        progress.finish();
        run.remove_incoming()?;

        let interrupted = self.stop.load(Ordering::SeqCst);
        manifest.status = if interrupted {
            RunStatus::Interrupted
        } else {
            RunStatus::Completed
        };
        manifest.finished_at =
            Some(chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true));
        manifest.pid = None;
        run.write_manifest(&manifest)?;
        self.store.point_latest(&run)?;

        let entries: Vec<SummaryEntry> = tracked
            .iter()
            .map(|t| SummaryEntry {
                name: t.head.qualified(),
                target: t.head.target.clone(),
                id: t.head.id.clone(),
                status: t.entry.status,
                record: t.entry.record.clone(),
                summary: t.head_record.as_ref().map(BenchmarkSummary::from_record),
                comparison: None,
            })
            .collect();
        let mut summary = RunSummary::new(
            run.id.clone(),
            run.path.display().to_string(),
            manifest.status,
            clock.elapsed().as_secs_f64(),
            entries,
        )
        .with_report_url(self.verdicts.report_url.clone());
        summary.ab = Some(self.ab.clone());
        let comparison = self.judge(&run, &tracked, plan, &manifest)?;
        summary = summary.with_comparison(comparison);
        let head_records: Vec<RawRecord> = tracked
            .iter()
            .filter_map(|t| t.head_record.clone())
            .collect();
        if let Some(dir) = &self.report_dir {
            let report = present::render_report(&run.path, &head_records, &summary, dir);
            summary = summary.with_report(report);
        }
        present::print_summary(&summary, self.format, self.summary_file.as_deref())?;
        present::announce_report(&summary, self.format);
        Ok(summary.exit_code())
    }

    /// One round of `t`: a paired process, or base and head in processes of their
    /// own (base first in odd rounds); `(base, head, how the last process ended)`.
    fn measure(
        &self,
        t: &Tracked,
        round: u32,
        incoming: &Path,
    ) -> Result<(Option<Outcome>, Outcome, Finished)> {
        match &self.mode {
            Mode::Paired => {
                let ran = paired_runner::run(
                    t.base.as_ref().map(|b| b.exe.as_path()),
                    &t.head.exe,
                    &t.head.id,
                    round,
                    self.opts,
                    self.env,
                    incoming,
                    self.stop,
                )?;
                Ok((ran.base, ran.head, ran.finished))
            }
            Mode::Separate { .. } => {
                let run_one = |b: &Benchmark, dir: &str| -> Result<(Outcome, Finished)> {
                    let dir = incoming.join(dir);
                    std::fs::create_dir_all(&dir)
                        .with_context(|| format!("failed to create {}", dir.display()))?;
                    Ok(runner::run_benchmark(
                        b, round, self.opts, self.env, &dir, self.stop,
                    )?)
                };
                let base_first = round % 2 == 1;
                let (base, head) = match &t.base {
                    None => (None, run_one(&t.head, "head")?),
                    Some(b) if base_first => {
                        let base = run_one(b, "base")?;
                        (Some(base), run_one(&t.head, "head")?)
                    }
                    Some(b) => {
                        let head = run_one(&t.head, "head")?;
                        (Some(run_one(b, "base")?), head)
                    }
                };
                let finished = head.1;
                Ok((base.map(|b| b.0), head.0, finished))
            }
        }
    }

    /// Whether `t` needs another round after `round`: never before the policy's
    /// floor is reached or past its ceiling or the time budget; between them,
    /// while the interval of its change is wider than the policy's target (the
    /// paired ratios' when paired, a run's rule otherwise).
    fn another_round(&self, t: &Tracked, round: u32, over_budget: bool) -> bool {
        let policy = self.opts.processes;
        let Some(head) = &t.head_record else {
            return false;
        };
        if !is_paired(head) {
            let stats = ProcessStats::from_groups(&head.primary_groups());
            let host_bound = head.bound() == Bound::Host;
            return policy.decide(round, &stats, host_bound, over_budget) == RoundDecision::Another;
        }
        if round < policy.min {
            return true;
        }
        if round >= policy.max || over_budget {
            return false;
        }
        let ratios: Vec<f64> = head
            .rounds
            .iter()
            .filter_map(|r| r.pairing.as_ref())
            .map(|p| p.log_ratio)
            .collect();
        match gpubench_analysis::compare::compare_paired(&ratios, 1.0, 1.0, &self.settings().config)
        {
            Ok(c) => (c.change.upper - c.change.lower) / 2.0 > policy.target_rel_ci,
            Err(_) => false,
        }
    }

    fn settings(&self) -> VerdictSettings {
        self.settings
    }

    /// Writes `t`'s records: the head's as the run's, the base's under `base/`.
    fn store_records(&self, run: &RunDir, t: &mut Tracked) -> Result<()> {
        if let Some(r) = &t.head_record {
            t.entry.record = Some(run.write_record(&t.head.id, r)?);
        }
        if let Some(r) = &t.base_record {
            let path = run
                .path
                .join(BASE_RECORDS)
                .join(RunDir::record_file(&t.head.id));
            std::fs::create_dir_all(path.parent().expect("a file in base/")).with_context(
                || format!("failed to create {}", run.path.join(BASE_RECORDS).display()),
            )?;
            write_atomic(&path, r.to_json_pretty().as_bytes())?;
        }
        Ok(())
    }

    fn manifest(
        &self,
        run: &RunDir,
        started: chrono::DateTime<chrono::Utc>,
        tracked: &[Tracked],
        plan: &Plan,
        command_line: &[OsString],
    ) -> RunManifest {
        let mut executables: Vec<ManifestExecutable> = Vec::new();
        for b in tracked
            .iter()
            .flat_map(|t| [Some(&t.head), t.base.as_ref()])
            .flatten()
        {
            let e = ManifestExecutable {
                package: b.package.clone(),
                target: b.target.clone(),
                path: b.exe.display().to_string(),
            };
            if !executables.contains(&e) {
                executables.push(e);
            }
        }
        RunManifest {
            format_version: MANIFEST_FORMAT_VERSION,
            run_id: run.id.clone(),
            started_at: started.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            finished_at: None,
            status: RunStatus::Running,
            pid: Some(std::process::id()),
            host: crate::store::manifest::this_host(),
            command_line: command_line
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect(),
            device: self.opts.device_label().to_string(),
            quick: self.opts.quick,
            flush_l2: self.opts.flush_l2,
            processes: self.opts.processes,
            partition: None,
            ab: Some(self.ab.clone()),
            selection: Some(Selection {
                all_targets: self.all_targets,
                filtered_out: plan.filtered_out.clone(),
                other_parts: Vec::new(),
            }),
            timeout_s: self.opts.timeout.as_secs_f64(),
            libtorch_lib: self.libtorch_lib.display().to_string(),
            executables,
            archive: None,
            benchmarks: tracked.iter().map(|t| t.entry.clone()).collect(),
            merged_from: Vec::new(),
            error: None,
        }
    }

    /// The head judged against the base, stored with the run (the base's entries as
    /// its baseline copy, so `report` shows both).
    fn judge(
        &self,
        run: &RunDir,
        tracked: &[Tracked],
        plan: &Plan,
        manifest: &RunManifest,
    ) -> Result<RunComparison> {
        let settings = self.settings();
        let head: Vec<RawRecord> = tracked
            .iter()
            .filter_map(|t| t.head_record.clone())
            .collect();
        let base: Vec<RawRecord> = tracked
            .iter()
            .filter_map(|t| t.base_record.clone())
            .collect();
        let entries: Vec<BaselineEntry> = base
            .iter()
            .filter_map(|r| BaselineEntry::from_record(r).ok())
            .collect();
        let set = compare_paired_records(&base, &head, &settings.options())
            .context("failed to judge the head against the base")?;
        let mut absences = Absences::of_run(manifest);
        absences.side = self.head.describe();
        absences.unusable_baseline = base
            .iter()
            .filter(|r| !r.passed())
            .map(|r| {
                let why = r
                    .failure()
                    .map(|f| format!("it failed on the base ({}): {}", f.kind.label(), f.message))
                    .unwrap_or_else(|| "it has no measurement on the base".to_string());
                (r.id.clone(), why)
            })
            .collect();
        let source = Source {
            kind: SourceKind::Revision,
            name: self.base.label.clone(),
            path: self.base.root.display().to_string(),
            default: false,
            device: None,
        };
        let gone: Vec<Missing> = plan
            .gone
            .iter()
            .map(|b| {
                Missing::benchmark(
                    &b.id,
                    MissingKind::Gone,
                    format!(
                        "{} has it and {} does not (removed or renamed?); --allow-missing gone \
                         lets that pass",
                        self.base.describe(),
                        self.head.describe()
                    ),
                )
            })
            .collect();
        let comparison = RunComparison::of_set(set, &head, &entries, source, settings, &absences)
            .with_missing(gone);
        comparison
            .store(&run.path, &entries)
            .context("failed to store the comparison with the run")?;
        Ok(comparison)
    }
}

/// Adds a round's outcome to the record so far.
fn fold(record: &mut Option<RawRecord>, outcome: Outcome) -> Result<()> {
    let Outcome::Recorded(new) = outcome else {
        return Ok(());
    };
    match record {
        None => *record = Some(*new),
        Some(so_far) => so_far
            .append_rounds(*new)
            .context("failed to add a round to the record")?,
    }
    Ok(())
}
