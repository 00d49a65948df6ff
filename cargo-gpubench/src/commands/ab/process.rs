//! The processes of an `ab` run: each benchmark's processes until it needs no more
//! (one process is a paired process, or base and head in processes of their own when
//! pairing cannot work or failed for it), the records they add to stored as they
//! come.

use std::path::Path;

use anyhow::{Context, Result};
use gpubench_record::failure::Failure;
use gpubench_record::paired::{Role, Unpaired};
use gpubench_record::protocol::{EXIT_BENCHMARK_FAILED, GIT_COMMIT_VAR};
use gpubench_record::record::RawRecord;

use super::session::{Mode, Session, Tracked};
use crate::build::revision::Revision;
use crate::cli::Format;
use crate::console;
use crate::execute::paired::runner::{self as paired_runner, PairedRunError};
use crate::execute::process::Finished;
use crate::execute::progress::Progress;
use crate::execute::runner::{self, Outcome, RunOptions};
use crate::execute::select::Benchmark;
use crate::store::lifecycle::ActiveRun;
use crate::store::manifest::{BenchStatus, BASE_RECORDS};
use crate::store::runs::{write_atomic, RunDir};
use gpubench_analysis::baseline::is_paired;
use gpubench_analysis::processes::{Bound, DecideProcesses, ProcessDecision, ProcessStats};
use gpubench_analysis::RecordAnalysis;
use std::sync::atomic::Ordering;

impl Session<'_> {
    /// Every process of every benchmark of `tracked`, until each is done or Ctrl-C
    /// stops the run, each recorded in `active` as it ends.
    pub(super) fn processes(&self, active: &ActiveRun, tracked: &mut [Tracked]) -> Result<()> {
        let run = active.dir();
        let policy = self.opts.processes;
        let mut progress = Progress::new(
            tracked.len() * policy.min as usize,
            self.format == Format::Human,
        );
        'processes: for process in 1..=policy.max {
            for (i, t) in tracked.iter_mut().enumerate() {
                if t.done {
                    continue;
                }
                if self.stop.load(Ordering::SeqCst) {
                    break 'processes;
                }
                let name = t.head.qualified();
                progress.start(&name, process, None);
                let incoming = run.fresh_incoming(0)?;
                let (base, head, finished) = self
                    .measure(t, process, &incoming)
                    .with_context(|| format!("failed to run benchmark {name}"))?;
                // Said once: in the process whose paired process failed.
                if let Some(u) = t.unpaired.as_ref().filter(|u| u.failed_process == process) {
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
                t.entry.processes = t
                    .head_record
                    .as_ref()
                    .map_or(0, |r| r.processes.len() as u32);
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
                    && self.another_process(t, process, spent >= self.budget);
                if !more {
                    t.done = true;
                    // Counted as done: the total shown never shrinks.
                    progress.skip(policy.min.saturating_sub(process) as usize);
                } else if process >= policy.min {
                    progress.add(1);
                }
                let reason = t
                    .head_record
                    .as_ref()
                    .and_then(|r| r.failure())
                    .map(|f| f.kind.label());
                progress.finish_one(&name, process, None, word, reason, seconds);
                active.process(i, t.entry.clone())?;
            }
            if tracked.iter().all(|t| t.done) {
                break;
            }
        }
        progress.finish();
        Ok(())
    }

    /// Whether `t` needs another process after `process`: never before the policy's
    /// floor is reached or past its ceiling or the time budget; between them,
    /// while the interval of its change is wider than the policy's target (the
    /// paired ratios' when paired, a run's rule otherwise).
    fn another_process(&self, t: &Tracked, process: u32, over_budget: bool) -> bool {
        let policy = self.opts.processes;
        let Some(head) = &t.head_record else {
            return false;
        };
        if !is_paired(head) {
            let stats = ProcessStats::from_groups(&head.primary_groups());
            let host_bound = head.bound() == Bound::Host;
            return policy.decide(process, &stats, host_bound, over_budget)
                == ProcessDecision::Another;
        }
        if process < policy.min {
            return true;
        }
        if process >= policy.max || over_budget {
            return false;
        }
        let ratios: Vec<f64> = head
            .processes
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

    /// One process of `t`: a paired process, or base and head in processes of their
    /// own (base first in odd processes); `(base, head, how the last process ended)`.
    /// A paired process in which a side failed (or that ended before either side
    /// said) is not the benchmark's result: the process is measured again with each
    /// side alone, and so is every later process of it (`t.unpaired` says why), so one
    /// revision's failure never costs the other its figures.
    pub(super) fn measure(
        &self,
        t: &mut Tracked,
        process: u32,
        incoming: &Path,
    ) -> Result<(Option<Outcome>, Outcome, Finished)> {
        match &self.mode {
            Mode::Paired => {
                let base = t.base.as_ref().map(|b| b.exe.as_path());
                if let (Some(base), Some(unpaired)) = (base, &t.unpaired) {
                    return self.alone(base, &t.head, process, incoming, unpaired);
                }
                let ran = self
                    .process(&t.head.id, process, incoming)
                    .run(base, &t.head.exe);
                let (ran, base) = match (ran, base) {
                    (Ok(ran), None) => return Ok((ran.base, ran.head, ran.finished)),
                    (Err(PairedRunError::Unpairable { why }), None) => {
                        let (head, finished) = unloadable(&t.head.id, why, self.opts);
                        return Ok((None, head, finished));
                    }
                    (ran, Some(base)) => (ran, base),
                    (Err(e), None) => return Err(e.into()),
                };
                // Why this process is no result for the benchmark, when it is none.
                let unpaired = match ran {
                    Ok(ran) => match unpaired_of(&ran, process, self.base, self.head) {
                        None => return Ok((ran.base, ran.head, ran.finished)),
                        Some(unpaired) => unpaired,
                    },
                    Err(PairedRunError::Unpairable { why }) => Unpaired {
                        failed_process: process,
                        failed_side: None,
                        reason: format!(
                            "the two revisions could not share a process ({})",
                            first_line(&why)
                        ),
                        error: why,
                    },
                    Err(e) => return Err(e.into()),
                };
                let measured = self.alone(base, &t.head, process, incoming, &unpaired);
                t.unpaired = Some(unpaired);
                measured
            }
            Mode::Separate { .. } => {
                let run_one = |b: &Benchmark, dir: &str| -> Result<(Outcome, Finished)> {
                    let revision = if dir == "base" { self.base } else { self.head };
                    // In its own checkout's directory, with its own commit.
                    let mut env = self.env.clone();
                    env.dir = Some(revision.run_dir.clone());
                    if let Some(commit) = &revision.commit {
                        env.set.push((GIT_COMMIT_VAR.into(), commit.into()));
                    }
                    let dir = incoming.join(dir);
                    std::fs::create_dir_all(&dir)
                        .with_context(|| format!("failed to create {}", dir.display()))?;
                    Ok(runner::run_benchmark(
                        b, process, self.opts, &env, &dir, self.stop,
                    )?)
                };
                let base_first = process % 2 == 1;
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

    /// Process `process` of benchmark `id` in a process of its own, its records under
    /// `record_dir`.
    fn process<'p>(
        &'p self,
        id: &'p str,
        process: u32,
        record_dir: &'p Path,
    ) -> paired_runner::Process<'p> {
        paired_runner::Process {
            id,
            process,
            opts: self.opts,
            env: self.env,
            record_dir,
            dirs: [&self.base.run_dir, &self.head.run_dir],
            stop: self.stop,
        }
    }

    /// Process `process` of a benchmark whose pairing failed: each side's library alone in
    /// a process of its own, the base first in odd processes (so the order balances over
    /// processes, as in a run's `ab` without pairing), each record saying why.
    fn alone(
        &self,
        base: &Path,
        head: &Benchmark,
        process: u32,
        incoming: &Path,
        unpaired: &Unpaired,
    ) -> Result<(Option<Outcome>, Outcome, Finished)> {
        let run_one = |role: Role, library: &Path| -> Result<(Outcome, Finished)> {
            let dir = incoming.join(format!("alone-{}", role.as_str()));
            std::fs::create_dir_all(&dir)
                .with_context(|| format!("failed to create {}", dir.display()))?;
            let (mut outcome, finished) = match self
                .process(&head.id, process, &dir)
                .run_alone(role, library)
            {
                Ok(ran) => ran,
                // That side's library cannot be used even alone: its failure, not the
                // run's.
                Err(PairedRunError::Unpairable { why }) => unloadable(&head.id, why, self.opts),
                Err(e) => return Err(e.into()),
            };
            if let Outcome::Recorded(record) = &mut outcome {
                for r in &mut record.processes {
                    r.process = process;
                    r.unpaired = Some(unpaired.clone());
                }
            }
            Ok((outcome, finished))
        };
        let (base, head) = if process % 2 == 1 {
            let base = run_one(Role::Base, base)?;
            (base, run_one(Role::Head, &head.exe)?)
        } else {
            let head = run_one(Role::Head, &head.exe)?;
            (run_one(Role::Base, base)?, head)
        };
        Ok((Some(base.0), head.0, head.1))
    }
}

/// Adds a process's outcome to the record so far, naming `revision`'s commit: both
/// sides of a paired process share its environment, so neither can say its own.
pub(super) fn fold(
    record: &mut Option<RawRecord>,
    outcome: Outcome,
    revision: &Revision,
) -> Result<()> {
    let Outcome::Recorded(mut new) = outcome else {
        return Ok(());
    };
    new.fingerprint.git_commit = revision.commit.clone();
    match record {
        None => *record = Some(*new),
        Some(so_far) => so_far
            .append_processes(*new)
            .context("failed to add a process to the record")?,
    }
    Ok(())
}

/// Why a paired process is no result for its benchmark, when a side failed in it or
/// it ended before either side said; `None` when both sides passed (or the run was
/// interrupted, which is no one's failure).
fn unpaired_of(
    ran: &paired_runner::PairedOutcome,
    process: u32,
    base: &Revision,
    head: &Revision,
) -> Option<Unpaired> {
    let failure = |o: Option<&Outcome>| match o {
        Some(Outcome::Recorded(r)) => r.failure().cloned(),
        _ => None,
    };
    if matches!(ran.head, Outcome::Interrupted) || matches!(ran.base, Some(Outcome::Interrupted)) {
        return None;
    }
    let base_failure = failure(ran.base.as_ref());
    let head_failure = failure(Some(&ran.head));
    // A side that stopped because the other failed first says so; the other is the
    // one that failed.
    let other_first = |f: &Failure| f.message.contains("the other side failed first");
    let (role, failure) = match (&base_failure, &head_failure) {
        (None, None) => return None,
        (Some(f), None) => (Some(Role::Base), f),
        (None, Some(f)) => (Some(Role::Head), f),
        (Some(b), Some(h)) if other_first(h) && !other_first(b) => (Some(Role::Base), b),
        (Some(b), Some(h)) if other_first(b) && !other_first(h) => (Some(Role::Head), h),
        // Both failed alike: the process ended (a crash, a time-out) before either
        // side could say which.
        (Some(b), Some(_)) => (None, b),
    };
    let what = format!("{}: {}", failure.kind.label(), first_line(&failure.message));
    let reason = match role {
        Some(Role::Base) => format!(
            "the base ({}) failed beside the head ({what})",
            base.describe()
        ),
        Some(Role::Head) => format!(
            "the head ({}) failed beside the base ({what})",
            head.describe()
        ),
        None => format!("the paired process ended before either side said ({what})"),
    };
    Some(Unpaired {
        failed_process: process,
        failed_side: role,
        reason,
        error: failure.message.chars().take(4000).collect(),
    })
}

/// The first line of `text`, at most 160 characters.
pub(super) fn first_line(text: &str) -> String {
    let line = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    if line.chars().count() > 160 {
        format!("{}…", line.chars().take(159).collect::<String>())
    } else {
        line.to_string()
    }
}

/// A side whose library could not be loaded for benchmark `id`, even alone: a failed
/// record saying why (set-up), as a process that ended at once.
fn unloadable(id: &str, why: String, opts: &RunOptions) -> (Outcome, Finished) {
    let failure = Failure::new(
        gpubench_record::failure::FailureKind::Setup,
        format!("its library cannot be loaded: {why}"),
    );
    let record = runner::synthesized(id, failure, opts, runner::now_rfc3339());
    let finished = Finished {
        ending: crate::execute::process::Ending::Exited(EXIT_BENCHMARK_FAILED),
        elapsed: std::time::Duration::ZERO,
        stdout_tail: String::new(),
        stderr_tail: String::new(),
    };
    (Outcome::Recorded(Box::new(record)), finished)
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::build::revision::Checkout;
    use gpubench_record::testing::RecordBuilder;

    /// A revision of `commit` in a worktree, for tests.
    pub(in crate::commands::ab) fn revision(role: Role, commit: &str) -> Revision {
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

    #[test]
    fn each_sides_record_names_its_own_commit() {
        // Both sides of a paired process share its environment: the harness names
        // one commit for both.
        let shared = |id: &str| {
            let mut r = RecordBuilder::passed(id).build();
            r.fingerprint.git_commit = Some("head000000000".into());
            Outcome::Recorded(Box::new(r))
        };
        let base = revision(Role::Base, "base111111111");
        let head = revision(Role::Head, "head000000000");
        let (mut b, mut h) = (None, None);
        fold(&mut b, shared("mm"), &base).unwrap();
        fold(&mut h, shared("mm"), &head).unwrap();
        assert_eq!(
            b.unwrap().fingerprint.git_commit.as_deref(),
            Some("base111111111")
        );
        assert_eq!(
            h.unwrap().fingerprint.git_commit.as_deref(),
            Some("head000000000")
        );
    }
}
