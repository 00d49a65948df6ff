//! An `ab` run once its benchmarks are paired: every round of every benchmark
//! ([`super::round`]), the records stored as they come (the head's as the run's, the
//! base's under `base/`), the head judged against the base ([`super::judge`]), the
//! report, the summary.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use anyhow::{Context, Result};
use gpubench_analysis::baseline::is_paired;
use gpubench_analysis::processes::{Bound, DecideRounds, ProcessStats, RoundDecision};
use gpubench_analysis::summary::BenchmarkSummary;
use gpubench_analysis::RecordAnalysis;
use gpubench_record::paired::Unpaired;
use gpubench_record::record::RawRecord;

use super::plan::Plan;
use super::round::fold;
use crate::build::revision::Revision;
use crate::cli::{Format, VerdictArgs};
use crate::commands::present;
use crate::compare::summary::RunSummary;
use crate::compare::VerdictSettings;
use crate::console;
use crate::execute::process::ChildEnv;
use crate::execute::progress::Progress;
use crate::execute::runner::{Outcome, RunOptions};
use crate::execute::select::Benchmark;
use crate::exit_code::Exit;
use crate::store::lifecycle::{rfc3339_millis, ActiveRun};
use crate::store::manifest::{
    BenchStatus, ManifestAb, ManifestBenchmark, ManifestExecutable, RunManifest, RunStatus,
    Selection, BASE_RECORDS, MANIFEST_FORMAT_VERSION,
};
use crate::store::references::SummaryEntry;
use crate::store::runs::{write_atomic, RunDir, RunStore};

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
    /// `--partition`, when the run measures part of the selection.
    pub partition: Option<String>,
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
pub(super) struct Tracked {
    pub(super) base: Option<Benchmark>,
    pub(super) head: Benchmark,
    pub(super) base_record: Option<RawRecord>,
    pub(super) head_record: Option<RawRecord>,
    pub(super) entry: ManifestBenchmark,
    pub(super) done: bool,
    /// Why each side of this benchmark runs alone, once pairing it failed.
    pub(super) unpaired: Option<Unpaired>,
}

impl Session<'_> {
    /// Runs every round of `plan`, stores, judges and shows the run; its exit code.
    pub fn run_all(&self, plan: &Plan, command_line: &[OsString]) -> Result<Exit> {
        let started = chrono::Utc::now();
        let clock = Instant::now();
        let mut tracked: Vec<Tracked> = plan
            .pairs
            .iter()
            .map(|(b, h)| (Some(b.clone()), h.clone()))
            .chain(plan.new.iter().map(|h| (None, h.clone())))
            .map(|(base, head)| Tracked {
                entry: ManifestBenchmark::pending(&head.id, &head.target, head.package.as_deref()),
                base,
                head,
                base_record: None,
                head_record: None,
                done: false,
                unpaired: None,
            })
            .collect();
        let active = self.store.begin_run(started, |run| {
            self.manifest(run, started, &tracked, plan, command_line)
        })?;
        if let Err(e) = self.rounds(&active, &mut tracked) {
            active.stopped_by(&crate::error::message(&e));
            return Err(e);
        }
        let status = match self.stop.load(Ordering::SeqCst) {
            true => RunStatus::Interrupted,
            false => RunStatus::Completed,
        };
        let run = active.dir().clone();
        let manifest = active.finish(status)?;

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
        present::show_run(
            summary,
            &run.path,
            &head_records,
            self.report_dir.as_deref(),
            || Ok(None),
            self.format,
            self.summary_file.as_deref(),
        )
    }

    /// Every round of every benchmark of `tracked`, until each is done or Ctrl-C
    /// stops the run, each recorded in `active` as it ends.
    fn rounds(&self, active: &ActiveRun, tracked: &mut [Tracked]) -> Result<()> {
        let run = active.dir();
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
                // Said once: in the round whose paired process failed.
                if let Some(u) = t.unpaired.as_ref().filter(|u| u.failed_round == round) {
                    console::note(format_args!(
                        "{name}: {}; it is judged on separate processes",
                        u.reason
                    ));
                }
                let seconds = finished.elapsed.as_secs_f64();
                t.entry.duration_s = Some(t.entry.duration_s.unwrap_or(0.0) + seconds);
                let interrupted = matches!(head, Outcome::Interrupted);
                fold(&mut t.head_record, head, self.head)?;
                if let Some(base) = base {
                    fold(&mut t.base_record, base, self.base)?;
                }
                self.store_records(run, t)?;
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
                    // Counted as done: the total shown never shrinks.
                    progress.skip(policy.min.saturating_sub(round) as usize);
                } else if round >= policy.min {
                    progress.add(1);
                }
                let reason = t
                    .head_record
                    .as_ref()
                    .and_then(|r| r.failure())
                    .map(|f| f.kind.label());
                progress.finish_one(&name, round, None, word, reason, seconds);
                active.round(i, t.entry.clone())?;
            }
            if tracked.iter().all(|t| t.done) {
                break;
            }
        }
        progress.finish();
        Ok(())
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

    pub(super) fn settings(&self) -> VerdictSettings {
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
            started_at: rfc3339_millis(started),
            finished_at: None,
            status: RunStatus::Running,
            pid: Some(std::process::id()),
            host: crate::store::manifest::this_host(),
            command_line: command_line
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect(),
            device: self.opts.device_label().to_string(),
            quick: self.opts.settings.quick,
            flush_l2: self.opts.settings.flush_l2,
            processes: self.opts.processes,
            partition: self.partition.clone(),
            ab: Some(self.ab.clone()),
            selection: Some(Selection {
                all_targets: self.all_targets,
                filtered_out: plan.filtered_out.clone(),
                other_parts: plan.other_parts.clone(),
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
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use gpubench_record::paired::Role;

    use super::*;
    use crate::build::revision::Checkout;

    fn revision(role: Role, commit: &str) -> Revision {
        Revision {
            role,
            label: commit[..7].into(),
            commit: Some(commit.into()),
            dirty: false,
            chosen_by: "a test".into(),
            checkout: Checkout::Worktree,
            root: "/wt".into(),
            run_dir: "/wt".into(),
        }
    }

    /// A benchmark of both revisions whose executable is gone, so its process cannot
    /// start: an error, not a failed benchmark.
    fn unstartable(dir: &Path) -> Plan {
        let gone = Benchmark {
            package: Some("p".into()),
            target: "t".into(),
            exe: dir.join("gone"),
            id: "mm".into(),
            ignored: false,
        };
        Plan {
            pairs: vec![(gone.clone(), gone)],
            new: Vec::new(),
            gone: Vec::new(),
            filtered_out: Vec::new(),
        }
    }

    #[test]
    fn an_error_that_stops_the_run_is_written_into_its_manifest() {
        let tmp = tempfile::tempdir().unwrap();
        let store = RunStore::open(tmp.path()).unwrap();
        let cli = crate::cli::Cli::parse_from_cargo(["cargo-gpubench", "ab", "--format", "json"])
            .unwrap();
        let args = cli.ab_args().unwrap();
        let opts = super::super::run_options(args);
        let base = revision(Role::Base, "base111111111");
        let head = revision(Role::Head, "head000000000");
        let side = |r: &Revision| crate::store::manifest::ManifestRevision {
            label: r.label.clone(),
            commit: r.commit.clone(),
            dirty: false,
            libraries: Vec::new(),
        };
        let session = Session {
            store: &store,
            opts: &opts,
            env: &ChildEnv::default(),
            stop: &AtomicBool::new(false),
            mode: Mode::Separate {
                reason: "a test".into(),
            },
            budget: std::time::Duration::from_secs(1),
            base: &base,
            head: &head,
            ab: ManifestAb {
                base: side(&base),
                head: side(&head),
                paired: false,
                unpaired_reason: Some("a test".into()),
            },
            all_targets: true,
            format: args.format,
            verdicts: &args.verdicts,
            settings: args.settings(),
            report_dir: None,
            summary_file: None,
            libtorch_lib: "/libtorch/lib".into(),
        };
        let err = session
            .run_all(&unstartable(tmp.path()), &[])
            .expect_err("a process that cannot start stops the run");
        let message = crate::error::message(&err);
        assert!(message.starts_with("failed to run benchmark"), "{message}");
        let runs: Vec<PathBuf> = std::fs::read_dir(tmp.path().join("runs"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(runs.len(), 1);
        let m = RunManifest::read(&runs[0].join(crate::store::manifest::MANIFEST_FILE)).unwrap();
        // Not left running: stopped by that error, which it names.
        assert_eq!((m.status, m.pid), (RunStatus::Incomplete, None));
        assert_eq!(m.error.as_deref(), Some(message.as_str()));
        assert!(m.finished_at.is_some());
        assert!(!runs[0].join(".incoming").exists());
        assert!(crate::store::runs::resolve_latest(tmp.path()).is_none());
    }
}
