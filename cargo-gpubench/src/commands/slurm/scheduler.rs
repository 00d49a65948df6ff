//! The Slurm commands `slurm` calls, and what their output means: `sbatch
//! --parsable` to submit, `sacct` (accounting) and else `scontrol show job` (the
//! controller's memory of recent jobs) for each array task's state and reason.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use anyhow::{bail, Context, Result};

/// The scheduler's word on one array task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskState {
    /// `PENDING`, `RUNNING`, `COMPLETED`, `FAILED`, `CANCELLED`, `TIMEOUT`,
    /// `PREEMPTED`, `NODE_FAIL`, `OUT_OF_MEMORY`, …
    pub state: String,
    /// Slurm's reason (`None` when it gives none).
    pub reason: String,
    /// `code:signal`.
    pub exit_code: String,
}

impl TaskState {
    /// Whether the task is still to end.
    pub fn active(&self) -> bool {
        matches!(
            self.state.as_str(),
            "PENDING"
                | "RUNNING"
                | "REQUEUED"
                | "RESIZING"
                | "SUSPENDED"
                | "CONFIGURING"
                | "COMPLETING"
        )
    }
}

/// Submits `script`, its jobs to start only after `after` ended (however), with
/// `sbatch --parsable`; the job's id.
pub fn submit(script: &Path, after: Option<&str>) -> Result<String> {
    let mut cmd = Command::new("sbatch");
    cmd.arg("--parsable");
    if let Some(job) = after {
        cmd.arg(format!("--dependency=afterany:{job}"));
    }
    cmd.arg(script);
    let out = cmd
        .output()
        .context("failed to run sbatch: is this a Slurm login node (sbatch on the PATH)?")?;
    if !out.status.success() {
        bail!(
            "sbatch {} failed ({}): {}",
            script.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let text = String::from_utf8_lossy(&out.stdout);
    // `--parsable` prints `id` or `id;cluster`.
    let id = text
        .trim()
        .split(';')
        .next()
        .unwrap_or_default()
        .to_string();
    if id.is_empty() || !id.chars().all(|c| c.is_ascii_digit()) {
        bail!("sbatch printed `{}`, not a job id", text.trim());
    }
    Ok(id)
}

/// The state of each task of array job `array_job`, by part: from `sacct` when
/// accounting answers, else from `scontrol` (which forgets a job some minutes after
/// it ended: `MinJobAge`); empty when neither knows the job.
pub fn task_states(array_job: &str) -> BTreeMap<u32, TaskState> {
    let sacct = Command::new("sacct")
        .args(["-n", "-P", "-X", "-j", array_job])
        .args(["-o", "JobID,State,ExitCode,Reason"])
        .output();
    if let Some(out) = sacct.ok().filter(|o| o.status.success()) {
        let states = parse_sacct(&String::from_utf8_lossy(&out.stdout), array_job);
        if !states.is_empty() {
            return states;
        }
    }
    match Command::new("scontrol")
        .args(["show", "job", "-o", array_job])
        .output()
    {
        Ok(out) if out.status.success() => {
            parse_scontrol(&String::from_utf8_lossy(&out.stdout), array_job)
        }
        _ => BTreeMap::new(),
    }
}

/// Whether job `job` (the merge) is still known to the scheduler as waiting or
/// running; `None` when the scheduler cannot be asked.
pub fn job_active(job: &str) -> Option<bool> {
    let out = Command::new("squeue")
        .args(["-h", "-j", job, "-o", "%T"])
        .output()
        .ok()?;
    // squeue fails for a job id the controller has forgotten: it ended.
    Some(out.status.success() && !String::from_utf8_lossy(&out.stdout).trim().is_empty())
}

/// `sacct -n -P -X -o JobID,State,ExitCode,Reason` lines of array job `array_job`:
/// `123_2|CANCELLED by 0|0:15|None`; a pending remainder `123_[3-4%2]|PENDING|…`
/// stands for each of its tasks.
pub fn parse_sacct(text: &str, array_job: &str) -> BTreeMap<u32, TaskState> {
    let mut states = BTreeMap::new();
    for line in text.lines() {
        let fields: Vec<&str> = line.split('|').collect();
        let [id, state, exit_code, reason, ..] = fields[..] else {
            continue;
        };
        let Some(tasks) = id
            .strip_prefix(array_job)
            .and_then(|rest| rest.strip_prefix('_'))
        else {
            continue;
        };
        let state = TaskState {
            // `CANCELLED by 1000`: the word is the state, the rest who did it.
            state: state
                .split_whitespace()
                .next()
                .unwrap_or_default()
                .to_string(),
            reason: match state.split_once(' ') {
                Some((_, by)) if reason == "None" || reason.is_empty() => by.to_string(),
                _ => reason.to_string(),
            },
            exit_code: exit_code.to_string(),
        };
        for k in task_indexes(tasks) {
            states.insert(k, state.clone());
        }
    }
    states
}

/// `scontrol show job -o` lines: one per task (`ArrayJobId=123 ArrayTaskId=2
/// JobState=CANCELLED Reason=None ExitCode=0:15 …`), a pending remainder's
/// `ArrayTaskId=3-4%2` standing for each of its tasks.
pub fn parse_scontrol(text: &str, array_job: &str) -> BTreeMap<u32, TaskState> {
    let mut states = BTreeMap::new();
    for line in text.lines() {
        let fields: BTreeMap<&str, &str> = line
            .split_whitespace()
            .filter_map(|w| w.split_once('='))
            .collect();
        if fields.get("ArrayJobId") != Some(&array_job) {
            continue;
        }
        let Some(tasks) = fields.get("ArrayTaskId") else {
            continue;
        };
        let state = TaskState {
            state: fields.get("JobState").unwrap_or(&"UNKNOWN").to_string(),
            reason: fields.get("Reason").unwrap_or(&"None").to_string(),
            exit_code: fields.get("ExitCode").unwrap_or(&"").to_string(),
        };
        for k in task_indexes(tasks) {
            states.insert(k, state.clone());
        }
    }
    states
}

/// `2`, `[3-4%2]`, `3-4%2`, `1,3-5`: the task indexes written.
fn task_indexes(text: &str) -> Vec<u32> {
    let text = text.trim_start_matches('[').trim_end_matches(']');
    let text = text.split('%').next().unwrap_or_default();
    let mut out = Vec::new();
    for piece in text.split(',') {
        match piece.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.parse::<u32>(), b.parse::<u32>()) {
                    out.extend(a..=b);
                }
            }
            None => out.extend(piece.parse::<u32>()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sacct_lines_give_each_task_its_state_and_who_cancelled_it() {
        let text = "123_1|COMPLETED|0:0|None\n123_2|CANCELLED by 0|0:15|None\n\
                    123_4|TIMEOUT|0:0|TimeLimit\n123_[5-6%2]|PENDING|0:0|JobArrayTaskLimit\n\
                    124|PENDING|0:0|Dependency\n";
        let s = parse_sacct(text, "123");
        assert_eq!(s.keys().copied().collect::<Vec<_>>(), [1, 2, 4, 5, 6]);
        assert_eq!(s[&2].state, "CANCELLED");
        assert_eq!(s[&2].reason, "by 0");
        assert_eq!(s[&2].exit_code, "0:15");
        assert_eq!(s[&4].reason, "TimeLimit");
        assert!(s[&6].active());
        assert!(!s[&1].active());
    }

    #[test]
    fn scontrol_lines_give_each_task_its_state() {
        let text = "JobId=130 ArrayJobId=128 ArrayTaskId=2 JobName=gpubench-parts \
                    JobState=CANCELLED Reason=None Dependency=(null) ExitCode=0:15\n\
                    JobId=128 ArrayJobId=128 ArrayTaskId=3-4%2 JobState=PENDING \
                    Reason=JobArrayTaskLimit ExitCode=0:0\n\
                    JobId=140 JobState=PENDING Reason=Dependency ExitCode=0:0\n";
        let s = parse_scontrol(text, "128");
        assert_eq!(s.keys().copied().collect::<Vec<_>>(), [2, 3, 4]);
        assert_eq!(s[&2].state, "CANCELLED");
        assert_eq!(s[&3].reason, "JobArrayTaskLimit");
    }
}
