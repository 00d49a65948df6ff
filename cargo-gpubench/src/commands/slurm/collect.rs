//! `slurm collect DIR`, what the merge job runs: each part's outcome (its run, what
//! its task wrote, the scheduler's state and reason), the completed parts merged
//! into one run of `DIR/merged` with every lost part named as a gap (which makes the
//! merged run incomplete and fails the gate unless `--allow-missing not-run`), a
//! table of every task beside the merged run (`slurm-tasks.json`), and the merge's
//! exit code for `follow`.
//!
//! A part is *completed* when one of its runs completed, *empty* when its task ended
//! with 0 and no run (its part held no benchmark), *active* while the scheduler
//! still runs its task, and *lost* otherwise: failed, cancelled, pre-empted, timed
//! out, on a node that failed, or never ran. A lost part's runs stay where they are
//! (its finished records are kept, not merged: merging half a part would hide which
//! half), and `slurm resubmit` measures it again into a new run beside them.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::layout::{Job, TaskFiles};
use super::scheduler::{self, TaskState};
use crate::cli::{Cli, Command};
use crate::console;
use crate::exit_code::{Exit, UsageError};
use crate::store::manifest::{RunManifest, RunStatus, MANIFEST_FILE};

/// The file beside the merged run's manifest naming every task.
pub const TASKS_FILE: &str = "slurm-tasks.json";

/// What became of one part.
#[derive(Debug, Clone)]
pub struct PartOutcome {
    /// Its number, 1-based.
    pub part: u32,
    /// The array job (or Kubernetes Job) of its latest task.
    pub array_job: Option<String>,
    /// Whether that job was Slurm's (else Kubernetes').
    pub slurm: bool,
    /// The scheduler's word on that task.
    pub scheduler: Option<TaskState>,
    /// What that task wrote.
    pub files: TaskFiles,
    /// Its run: the newest completed one, else the newest.
    pub run: Option<(PathBuf, RunManifest)>,
}

impl PartOutcome {
    /// Whether a run of it completed.
    pub fn completed(&self) -> bool {
        self.run
            .as_ref()
            .is_some_and(|(_, m)| m.state() == RunStatus::Completed)
    }

    /// Whether its task ended well without a run: its part held no benchmark.
    pub fn empty(&self) -> bool {
        self.run.is_none() && self.files.finished.get("exit_code").map(String::as_str) == Some("0")
    }

    /// Whether its task is still waiting or running.
    pub fn active(&self) -> bool {
        self.scheduler.as_ref().is_some_and(TaskState::active)
    }

    /// Whether it must be measured again.
    pub fn lost(&self) -> bool {
        !self.completed() && !self.empty() && !self.active()
    }

    /// The scheduler's state, or `unknown`.
    pub fn state_word(&self) -> String {
        self.scheduler
            .as_ref()
            .map_or_else(|| "unknown".to_string(), |s| s.state.clone())
    }

    /// `123_4`.
    pub fn task_id(&self) -> String {
        format!("{}_{}", self.array_job.as_deref().unwrap_or("?"), self.part)
    }

    fn task_words(&self) -> String {
        match (&self.array_job, self.slurm) {
            (Some(_), true) => format!("Slurm task {}", self.task_id()),
            (Some(name), false) => format!("the pod of index {} of Job {name}", self.part - 1),
            (None, _) => "no task (never submitted)".to_string(),
        }
    }

    /// Why the part is lost, in a sentence naming its task, state and reason.
    pub fn describe(&self, job: &Job) -> String {
        let mut s = format!(
            "part {} was lost: {}",
            job.partition(self.part),
            self.task_words()
        );
        match &self.scheduler {
            Some(t) if t.active() => s.push_str(&format!(" is still {}", t.state)),
            Some(t) => {
                s.push_str(&format!(" ended {}", t.state));
                let mut why = Vec::new();
                if t.reason != "None" && !t.reason.is_empty() {
                    why.push(t.reason.clone());
                }
                if !t.exit_code.is_empty() {
                    why.push(format!("exit code {}", t.exit_code));
                }
                if !why.is_empty() {
                    s.push_str(&format!(" ({})", why.join(", ")));
                }
            }
            None if self.slurm => s.push_str(
                " is unknown to sacct and scontrol (accounting off and the controller forgot it)",
            ),
            None => {}
        }
        if self.files.began() {
            let get = |k: &str| self.files.started.get(k).map_or("?", String::as_str);
            s.push_str(&format!(
                " on {} (CUDA_VISIBLE_DEVICES={})",
                get("host"),
                get("cuda_visible_devices")
            ));
            match self.files.finished.get("exit_code") {
                Some(code) => s.push_str(&format!(", its cargo-gpubench exited {code}")),
                None => s.push_str(", killed before it could say how its cargo-gpubench ended"),
            }
        } else {
            s.push_str(", before it started");
        }
        match &self.run {
            Some((dir, m)) => s.push_str(&format!(
                "; its run `{}` ({}) {}, {} of its {} benchmarks finished (kept there, not merged)",
                m.run_id,
                dir.display(),
                m.why_unfinished().unwrap_or_default(),
                m.finished(),
                m.benchmarks.len()
            )),
            None if self.files.began() => s.push_str(&format!(
                "; it left no run (its log: {})",
                job.logs()
                    .join(format!(
                        "part-{}.job-{}.out",
                        self.part,
                        self.array_job.as_deref().unwrap_or("?")
                    ))
                    .display()
            )),
            None => {}
        }
        s.push_str(&format!(
            "; `cargo gpubench slurm resubmit {}` measures the part again",
            job.dir.display()
        ));
        s
    }
}

/// Every part's outcome.
pub fn outcomes(job: &Job) -> Vec<PartOutcome> {
    let mut states: BTreeMap<String, BTreeMap<u32, TaskState>> = BTreeMap::new();
    (1..=job.parts)
        .map(|k| {
            let attempt = job.attempt_of(k);
            let slurm = attempt.is_some_and(|a| !a.merge_job.is_empty());
            let array_job = attempt.map(|a| a.array_job.clone());
            let scheduler = match (&array_job, slurm) {
                (Some(id), true) => states
                    .entry(id.clone())
                    .or_insert_with(|| scheduler::task_states(id))
                    .get(&k)
                    .cloned(),
                _ => None,
            };
            let files = array_job
                .as_deref()
                .map(|id| job.task_files(k, id))
                .unwrap_or_default();
            PartOutcome {
                part: k,
                array_job,
                slurm,
                scheduler,
                files,
                run: part_run(&job.part_dir(k)),
            }
        })
        .collect()
}

/// The run of a part's output directory that counts: the newest completed one,
/// else the newest.
fn part_run(out_dir: &Path) -> Option<(PathBuf, RunManifest)> {
    let entries = std::fs::read_dir(out_dir.join("runs")).ok()?;
    let mut runs: Vec<(PathBuf, RunManifest)> = entries
        .flatten()
        .filter_map(|e| {
            let dir = e.path();
            RunManifest::read(&dir.join(MANIFEST_FILE))
                .ok()
                .map(|m| (dir, m))
        })
        .collect();
    runs.sort_by(|a, b| a.1.started_at.cmp(&b.1.started_at));
    let newest_completed = runs
        .iter()
        .rposition(|(_, m)| m.state() == RunStatus::Completed);
    match newest_completed {
        Some(i) => Some(runs.swap_remove(i)),
        None => runs.pop(),
    }
}

/// `slurm collect DIR`: merges, names the lost parts, gates; writes the exit code
/// where `follow` reads it.
pub fn run(dir: &Path) -> Result<Exit> {
    let job = Job::read(dir)?;
    let merge_job = std::env::var("SLURM_JOB_ID").unwrap_or_else(|_| "by-hand".to_string());
    let result = merge(&job);
    let code = match &result {
        Ok(exit) => exit.code(),
        Err(e) => crate::error::exit_for(e).code(),
    };
    let file = job.result(&merge_job);
    if let Some(parent) = file.parent() {
        std::fs::create_dir_all(parent)?;
    }
    crate::store::runs::write_atomic(&file, format!("{code}\n").as_bytes())?;
    result
}

fn merge(job: &Job) -> Result<Exit> {
    let outcomes = outcomes(job);
    for o in &outcomes {
        let what = if o.completed() {
            let (_, m) = o.run.as_ref().expect("a completed part has a run");
            format!(
                "merged (run `{}`, {} benchmarks)",
                m.run_id,
                m.benchmarks.len()
            )
        } else if o.empty() {
            "held no benchmark".to_string()
        } else {
            "lost".to_string()
        };
        console::status(format_args!(
            "part {}/{}: {what}; {} {}",
            o.part,
            job.parts,
            o.task_words(),
            o.state_word()
        ));
    }
    let inputs: Vec<&PathBuf> = outcomes
        .iter()
        .filter(|o| o.completed())
        .filter_map(|o| o.run.as_ref().map(|(d, _)| d))
        .collect();
    let lost: Vec<String> = outcomes
        .iter()
        .filter(|o| !o.completed() && !o.empty())
        .map(|o| o.describe(job))
        .collect();
    if inputs.is_empty() {
        for gap in &lost {
            eprintln!("gpubench: error: {gap}");
        }
        return Err(UsageError(format!(
            "no part of {} left a completed run: nothing to merge",
            job.dir.display()
        ))
        .into());
    }

    let mut argv: Vec<OsString> = vec!["cargo-gpubench".into(), "merge".into()];
    argv.extend(inputs.iter().map(|d| d.as_os_str().to_owned()));
    argv.push("--out-dir".into());
    argv.push(job.merged().into());
    let chooses_baseline = job
        .merge_args
        .iter()
        .any(|a| a.starts_with("--baselines-dir") || a.starts_with("--no-baseline"));
    if !chooses_baseline && job.baselines().is_dir() {
        argv.push("--baselines-dir".into());
        argv.push(job.baselines().into());
    }
    argv.extend(job.merge_args.iter().map(OsString::from));
    argv.extend(
        lost.iter()
            .map(|why| OsString::from(format!("--lost-part={why}"))),
    );
    // Parsed here to refuse bad --merge-arg options before anything runs, and to find
    // the summary file; run as its own process, as every subcommand is here.
    let cli = Cli::parse_from_cargo(argv.clone()).map_err(|e| {
        UsageError(format!(
            "the merge's options (--merge-arg) do not parse: {e}"
        ))
    })?;
    let Some(Command::Merge(args)) = &cli.command else {
        unreachable!("`merge …` parses as merge");
    };
    let before = crate::store::runs::resolve_latest(&job.merged());
    let status = std::process::Command::new(
        std::env::current_exe().context("failed to find this cargo-gpubench")?,
    )
    .args(&argv[1..])
    .status()
    .context("failed to run cargo-gpubench merge")?;
    let exit = match status.code() {
        Some(code) => super::exit_of_code(u8::try_from(code).unwrap_or(Exit::Setup.code())),
        None => Exit::Interrupted,
    };
    if let Some(run) =
        crate::store::runs::resolve_latest(&job.merged()).filter(|r| Some(r) != before.as_ref())
    {
        write_tasks(job, &outcomes, &run)?;
    }
    if let Some(file) = &args.verdicts.summary_file {
        let cwd = std::env::current_dir().context("failed to read the current directory")?;
        append_parts(&cwd.join(file), job, &outcomes)?;
    }
    Ok(exit)
}

/// The parts' table (and why each lost part was lost) after the merge's Markdown
/// summary, which knows runs, not tasks.
fn append_parts(file: &Path, job: &Job, outcomes: &[PartOutcome]) -> Result<()> {
    use std::fmt::Write as _;
    let mut text = std::fs::read_to_string(file)
        .with_context(|| format!("failed to read the summary {}", file.display()))?;
    let _ = writeln!(
        text,
        "\n#### Parts (`cargo gpubench slurm`, `{}`)\n",
        job.dir.display()
    );
    text.push_str(
        "| Part | Task | State | Host | GPUs | Outcome |\n| :-- | :-- | :-- | :-- | :-- | :-- |\n",
    );
    for o in outcomes {
        let started = |k: &str| {
            o.files
                .started
                .get(k)
                .cloned()
                .unwrap_or_else(|| "—".into())
        };
        let state = match &o.scheduler {
            Some(s) if s.reason != "None" && !s.reason.is_empty() => {
                format!("{} ({})", s.state, s.reason)
            }
            Some(s) => s.state.clone(),
            None => "unknown".into(),
        };
        let outcome = match (&o.run, o.completed(), o.empty()) {
            (Some((_, m)), true, _) => format!("merged: run `{}`", m.run_id),
            (_, _, true) => "held no benchmark".into(),
            _ => "**lost**".into(),
        };
        let _ = writeln!(
            text,
            "| `{}` | `{}` | {state} | {} | {} | {outcome} |",
            job.partition(o.part),
            o.task_id(),
            started("host"),
            started("cuda_visible_devices"),
        );
    }
    let lost: Vec<&PartOutcome> = outcomes
        .iter()
        .filter(|o| !o.completed() && !o.empty())
        .collect();
    if !lost.is_empty() {
        text.push_str("\n**Lost parts** (missing evidence, which fails the gate unless `--allow-missing not-run`):\n\n");
        for o in lost {
            let _ = writeln!(text, "- {}", o.describe(job));
        }
    }
    crate::output::markdown::write_summary_file(file, &text)
}

/// `slurm-tasks.json` beside the merged run's manifest: every part, its task, what
/// the scheduler and the task said, and what the merge made of it.
fn write_tasks(job: &Job, outcomes: &[PartOutcome], run: &Path) -> Result<()> {
    let rows: Vec<serde_json::Value> = outcomes
        .iter()
        .map(|o| {
            let started = |k: &str| o.files.started.get(k).cloned();
            serde_json::json!({
                "part": job.partition(o.part),
                "task": o.array_job.as_ref().map(|_| o.task_id()),
                "scheduler": if o.slurm { "slurm" } else { "kubernetes" },
                "state": o.scheduler.as_ref().map(|s| &s.state),
                "reason": o.scheduler.as_ref().map(|s| &s.reason),
                "exit_code": o.scheduler.as_ref().map(|s| &s.exit_code),
                "host": started("host"),
                "cuda_visible_devices": started("cuda_visible_devices"),
                "run": o.run.as_ref().map(|(d, _)| d.display().to_string()),
                "outcome": if o.completed() { "merged" } else if o.empty() { "empty" } else { "lost" },
            })
        })
        .collect();
    let doc = serde_json::json!({ "job": job.dir.display().to_string(), "parts": rows });
    let text = serde_json::to_string_pretty(&doc).expect("json") + "\n";
    crate::store::runs::write_atomic(&run.join(TASKS_FILE), text.as_bytes())
        .with_context(|| format!("failed to write {}", run.join(TASKS_FILE).display()))
}
