//! The shared directory of a `slurm run`, described once: what was submitted
//! (`slurm.json`, [`Job`]) and where every task, the merge and their logs write.
//!
//! ```text
//! DIR/slurm.json                      the job: parts, archive, options, attempts
//! DIR/benches.tar.gz                  the archive every task measures (slurm run)
//! DIR/libraries/base, head/           the libraries every task measures (slurm ab)
//! DIR/baselines/                      the archive's baselines, for the merge
//! DIR/scripts/array-<n>.sh, merge.sh  the sbatch scripts of attempt n
//! DIR/parts/<K>/                      part K's --out-dir: one run per attempt
//! DIR/tasks/part-<K>.job-<J>.started  what task K of array job J saw (host, GPUs)
//! DIR/tasks/part-<K>.job-<J>.finished its exit code
//! DIR/logs/                           the tasks' and merges' stdout and stderr
//! DIR/merged/                         the merged run's --out-dir (runs, report)
//! DIR/results/<merge job>.code        the merge's exit code
//! ```
//!
//! A part re-submitted writes a new run beside its earlier ones in `parts/<K>/`, and
//! new task files named by the new array job: nothing a task wrote is overwritten.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::exit_code::UsageError;

/// The version of `slurm.json`; a newer one is refused.
pub const JOB_FORMAT_VERSION: u32 = 1;

/// The file naming what was submitted.
pub const JOB_FILE: &str = "slurm.json";

/// What `slurm run` submitted, and every submission since.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Job {
    /// See [`JOB_FORMAT_VERSION`].
    pub format_version: u32,
    /// The shared directory, absolute.
    pub dir: PathBuf,
    /// How many parts the suite is split into.
    pub parts: u32,
    /// The cargo-gpubench the tasks and the merge run.
    pub bin: PathBuf,
    /// Each task's `run` options.
    pub run_args: Vec<String>,
    /// The merge's options.
    pub merge_args: Vec<String>,
    /// For `slurm ab`: the libraries `ab --export-libraries` wrote (`base/` and
    /// `head/`), which each task measures with `ab`; absent for `slurm run`, whose
    /// tasks measure the archive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ab_libraries: Option<PathBuf>,
    /// How the jobs are submitted.
    pub sbatch: Sbatch,
    /// Every submission, the first first.
    #[serde(default)]
    pub attempts: Vec<Attempt>,
}

/// The sbatch options every submission shares.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sbatch {
    /// `--partition` (the queue).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<String>,
    /// `--account`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account: Option<String>,
    /// `--time`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<String>,
    /// The array's `%K`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_running: Option<u32>,
    /// `--gres` of a task.
    pub gres: String,
    /// More `#SBATCH` lines of the array job.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extra: Vec<String>,
}

/// One submission: an array job over some parts and the merge that depends on it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attempt {
    /// The array job's id.
    pub array_job: String,
    /// The merge job's id.
    pub merge_job: String,
    /// The parts its tasks measure (the array's indexes).
    pub parts: Vec<u32>,
    /// When it was submitted, RFC 3339.
    pub submitted_at: String,
}

/// What a task wrote about itself: `key=value` lines of its `.started` and
/// `.finished` files.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskFiles {
    /// The `.started` file's values (job, host, cuda_visible_devices, started_at).
    pub started: BTreeMap<String, String>,
    /// The `.finished` file's values (exit_code, finished_at); empty while it runs or
    /// when it was killed before it could write them.
    pub finished: BTreeMap<String, String>,
}

impl TaskFiles {
    /// Whether the task began.
    pub fn began(&self) -> bool {
        !self.started.is_empty()
    }
}

impl Job {
    /// The archive every task measures.
    pub fn archive(&self) -> PathBuf {
        self.dir.join("benches.tar.gz")
    }

    /// The archive's baselines, extracted for the merge.
    pub fn baselines(&self) -> PathBuf {
        self.dir.join("baselines")
    }

    /// Where the sbatch scripts go.
    pub fn scripts(&self) -> PathBuf {
        self.dir.join("scripts")
    }

    /// Part `k`'s `--out-dir`.
    pub fn part_dir(&self, k: u32) -> PathBuf {
        self.dir.join("parts").join(k.to_string())
    }

    /// The folder of the task files.
    pub fn tasks(&self) -> PathBuf {
        self.dir.join("tasks")
    }

    /// The folder of the logs.
    pub fn logs(&self) -> PathBuf {
        self.dir.join("logs")
    }

    /// The merged run's `--out-dir`.
    pub fn merged(&self) -> PathBuf {
        self.dir.join("merged")
    }

    /// The merge job `merge_job`'s exit code file.
    pub fn result(&self, merge_job: &str) -> PathBuf {
        self.dir.join("results").join(format!("{merge_job}.code"))
    }

    /// The `--partition` of part `k`.
    pub fn partition(&self, k: u32) -> String {
        format!("count:{k}/{}", self.parts)
    }

    /// The latest submission holding part `k`.
    pub fn attempt_of(&self, k: u32) -> Option<&Attempt> {
        self.attempts.iter().rev().find(|a| a.parts.contains(&k))
    }

    /// What task `k` of array job `array_job` wrote.
    pub fn task_files(&self, k: u32, array_job: &str) -> TaskFiles {
        let read = |ext: &str| {
            std::fs::read_to_string(self.tasks().join(format!("part-{k}.job-{array_job}.{ext}")))
                .map(|text| parse_key_values(&text))
                .unwrap_or_default()
        };
        TaskFiles {
            started: read("started"),
            finished: read("finished"),
        }
    }

    /// Reads `dir`'s `slurm.json`.
    pub fn read(dir: &Path) -> Result<Job> {
        let file = dir.join(JOB_FILE);
        let text = std::fs::read_to_string(&file).with_context(|| {
            format!(
                "failed to read {}: is {} the --dir of a `cargo gpubench slurm run`?",
                file.display(),
                dir.display()
            )
        })?;
        let job: Job = serde_json::from_str(&text)
            .map_err(|e| UsageError(format!("{} is not a slurm job file: {e}", file.display())))?;
        if job.format_version > JOB_FORMAT_VERSION {
            return Err(UsageError(format!(
                "{} is of format {}, newer than this cargo-gpubench reads ({JOB_FORMAT_VERSION}): \
                 use the cargo-gpubench that wrote it",
                file.display(),
                job.format_version
            ))
            .into());
        }
        Ok(job)
    }

    /// Writes `slurm.json` (whole, under a temporary name first).
    pub fn write(&self) -> Result<()> {
        let text = serde_json::to_string_pretty(self).expect("a job serialises") + "\n";
        crate::store::runs::write_atomic(&self.dir.join(JOB_FILE), text.as_bytes())?;
        Ok(())
    }
}

/// `key=value` lines as a map; other lines are left out.
pub fn parse_key_values(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_files_are_named_by_part_and_array_job_and_read_as_key_values() {
        let dir = tempfile::tempdir().unwrap();
        let job = Job {
            format_version: JOB_FORMAT_VERSION,
            dir: dir.path().to_path_buf(),
            parts: 4,
            bin: "/bin/cargo-gpubench".into(),
            run_args: vec![],
            merge_args: vec![],
            ab_libraries: None,
            sbatch: Sbatch::default(),
            attempts: vec![],
        };
        std::fs::create_dir_all(job.tasks()).unwrap();
        std::fs::write(
            job.tasks().join("part-2.job-77.started"),
            "job=77_2\nhost=node1\ncuda_visible_devices=1\n",
        )
        .unwrap();
        let files = job.task_files(2, "77");
        assert!(files.began());
        assert_eq!(files.started["cuda_visible_devices"], "1");
        assert!(files.finished.is_empty());
        assert!(!job.task_files(2, "78").began());
        assert_eq!(job.partition(3), "count:3/4");
        job.write().unwrap();
        assert_eq!(Job::read(dir.path()).unwrap(), job);
    }
}
