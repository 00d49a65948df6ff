//! An `ab` run once its benchmarks are paired: every process of every benchmark
//! ([`super::process`]), the records stored as they come (the head's as the run's, the
//! base's under `base/`), the head judged against the base ([`super::judge`]), the
//! report, the summary.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use anyhow::Result;
use gpubench_analysis::summary::BenchmarkSummary;
use gpubench_record::paired::Unpaired;
use gpubench_record::record::RawRecord;

use super::plan::Plan;
use crate::build::revision::Revision;
use crate::cli::{Format, VerdictArgs};
use crate::commands::present;
use crate::compare::summary::RunSummary;
use crate::compare::VerdictSettings;
use crate::execute::process::ChildEnv;
use crate::execute::runner::RunOptions;
use crate::execute::select::Benchmark;
use crate::exit_code::Exit;
use crate::store::lifecycle::rfc3339_millis;
use crate::store::manifest::{
    ManifestAb, ManifestBenchmark, ManifestExecutable, RunManifest, RunStatus, Selection,
    MANIFEST_FORMAT_VERSION,
};
use crate::store::references::SummaryEntry;
use crate::store::runs::{RunDir, RunStore};

/// How base and head share processes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Mode {
    /// In one process, samples alternated.
    Paired,
    /// In processes of their own, interleaved; why pairing could not work.
    Separate {
        /// The reason, for the output.
        reason: String,
    },
}

/// What every benchmark of an `ab` run shares.
pub(super) struct Session<'a> {
    pub store: &'a RunStore,
    pub opts: &'a RunOptions,
    pub env: &'a ChildEnv,
    pub stop: &'a AtomicBool,
    pub mode: Mode,
    /// The process time a benchmark may use before it gets no processes beyond its
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

/// One benchmark's progress through the processes.
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
    /// Runs every process of `plan`, stores, judges and shows the run; its exit code.
    pub(super) fn run_all(&self, plan: &Plan, command_line: &[OsString]) -> Result<Exit> {
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
        if let Err(e) = self.processes(&active, &mut tracked) {
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
            .map(|t| {
                t.head.summary_entry(
                    &t.entry,
                    t.head_record.as_ref().map(BenchmarkSummary::from_record),
                )
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

    pub(super) fn settings(&self) -> VerdictSettings {
        self.settings
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
            gaps: Vec::new(),
            error: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use gpubench_record::paired::Role;

    use super::super::process::tests::revision;
    use super::*;

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
            other_parts: Vec::new(),
        }
    }

    #[test]
    fn an_error_that_stops_the_run_is_written_into_its_manifest() {
        let tmp = tempfile::tempdir().unwrap();
        let store = RunStore::open(tmp.path()).unwrap();
        let cli = crate::cli::Cli::parse_from_cargo(["cargo-gpubench", "ab", "--format", "json"])
            .unwrap();
        let Some(crate::cli::Command::Ab(args)) = &cli.command else {
            panic!("ab parses as ab");
        };
        let opts = args
            .measure
            .run_options(&args.process, crate::cli::ProcessDefaults::ab())
            .unwrap();
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
            partition: None,
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
