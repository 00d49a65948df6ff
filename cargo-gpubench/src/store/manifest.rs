//! `manifest.json`, the index of a stored run: when and how it ran, and every selected
//! benchmark with its status and record file.
//!
//! It is rewritten after every benchmark, so an interrupted or killed run still leaves
//! an accurate index of what finished.

use std::path::Path;

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// The manifest format this build writes and the newest it reads.
pub const MANIFEST_FORMAT_VERSION: u32 = 1;

/// The file name of a run's manifest.
pub const MANIFEST_FILE: &str = "manifest.json";

/// Errors reading a manifest.
#[derive(Debug, Error)]
pub enum ManifestError {
    /// The file could not be read.
    #[error("failed to read run manifest {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// Malformed JSON.
    #[error("failed to parse run manifest {path}: {source}")]
    Parse {
        /// The file.
        path: String,
        /// The cause.
        source: serde_json::Error,
    },
    /// A benchmark listed twice: no cargo-gpubench writes that (one record file per
    /// id), so the file was edited or damaged, and every figure of that benchmark
    /// would count twice.
    #[error("run manifest {path} lists benchmark `{id}` {times} times, but a run measures each benchmark once (one record file per id): the file was edited or damaged; remove the repeated entries, or run the benchmarks again")]
    RepeatedBenchmark {
        /// The file.
        path: String,
        /// The benchmark's id.
        id: String,
        /// How many times it is listed.
        times: usize,
    },
    /// A benchmark's record named outside the run's directory: no cargo-gpubench
    /// writes that, and reading it would take a file the run never held.
    #[error("run manifest {path} names `{record}` as the record of benchmark `{id}`, which is not a file inside the run's directory (a relative path that never steps out): the file was edited or damaged; run the benchmarks again")]
    RecordOutside {
        /// The file.
        path: String,
        /// The benchmark's id.
        id: String,
        /// What it names.
        record: String,
    },
    /// Written by a newer cargo-gpubench.
    #[error("run manifest {path} has format_version {found}, newer than the {supported} this cargo-gpubench reads: upgrade cargo-gpubench")]
    TooNew {
        /// The file.
        path: String,
        /// Its version.
        found: u32,
        /// The newest this build reads.
        supported: u32,
    },
}

/// The state of a whole run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Still running (or the subcommand was killed).
    Running,
    /// Every selected benchmark ran.
    Completed,
    /// Stopped by Ctrl-C or SIGTERM.
    Interrupted,
    /// Its cargo gpubench stopped before the end: the benchmarks not marked passed or
    /// failed have no results. Either an error stopped it ([`RunManifest::error`]
    /// says which, written on the way out), or it died without a word (killed, or
    /// the machine went down): written then by the next run in the same output
    /// directory, and read so by `compare` and `report` before that.
    Incomplete,
}

/// The state of one benchmark in a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BenchStatus {
    /// Not run yet.
    Pending,
    /// Ran and passed.
    Passed,
    /// Ran and failed; the record says how.
    Failed,
    /// Stopped by Ctrl-C; no record.
    Interrupted,
}

/// A bench executable of the run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestExecutable {
    /// Its package, when built from a workspace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub package: Option<String>,
    /// Its bench target.
    pub target: String,
    /// The executable; with [`RunManifest::archive`], its path in the archive.
    pub path: String,
}

/// The archive a run's executables came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestArchive {
    /// The archive file, absolute.
    pub path: String,
    /// When it was made, RFC 3339.
    pub created_at: String,
    /// The git commit it was built from, when the workspace was a git repository.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_commit: Option<String>,
    /// The libtorch version it was built against, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub libtorch_version: Option<String>,
}

/// One selected benchmark.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ManifestBenchmark {
    /// Its id.
    pub id: String,
    /// Its bench target.
    pub target: String,
    /// Its package, when built from a workspace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub package: Option<String>,
    /// Where it is.
    pub status: BenchStatus,
    /// The failure's kind (`FailureKind`'s snake_case name), when it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_kind: Option<gpubench_record::failure::FailureKind>,
    /// Its record, relative to the run directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record: Option<String>,
    /// Wall time of its processes together, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_s: Option<f64>,
    /// Processes that measured it so far.
    #[serde(rename = "rounds", default)]
    pub processes: u32,
    /// The device its processes ran on, with `--devices`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
}

impl ManifestBenchmark {
    /// A selected benchmark before its first process.
    pub fn pending(id: &str, target: &str, package: Option<&str>) -> Self {
        ManifestBenchmark {
            id: id.to_string(),
            target: target.to_string(),
            package: package.map(str::to_string),
            status: BenchStatus::Pending,
            failure_kind: None,
            record: None,
            duration_s: None,
            processes: 0,
            device: None,
        }
    }
}

/// The index of a stored run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunManifest {
    /// See [`MANIFEST_FORMAT_VERSION`].
    pub format_version: u32,
    /// The run's id (its directory name).
    pub run_id: String,
    /// RFC 3339, UTC.
    pub started_at: String,
    /// RFC 3339, UTC; absent while running.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<String>,
    /// The run's state.
    pub status: RunStatus,
    /// The error that stopped the run before its end (`failed to write …: …`), as
    /// it was printed; absent when none did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The cargo gpubench process writing the run, while it runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// The machine that wrote the run (its host name), so a copy of a run read on
    /// another machine (a CI artifact) is not judged by that machine's processes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// The command line, as given.
    pub command_line: Vec<String>,
    /// The requested device (`default` when the harness chose); with `--devices`,
    /// the devices the run measured on, joined by commas.
    pub device: String,
    /// Whether `--quick` was given.
    pub quick: bool,
    /// Whether `--flush-l2` was given.
    pub flush_l2: bool,
    /// How many processes measure each benchmark.
    #[serde(default)]
    pub processes: gpubench_record::measurement::ProcessPolicy,
    /// `--partition`: the part of the selected benchmarks this run measured, e.g.
    /// `hash:2/4`; absent when it ran them all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<String>,
    /// For `cargo gpubench ab`: the two revisions, and whether each benchmark's
    /// base and head shared their processes; absent for a run of one revision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ab: Option<ManifestAb>,
    /// Which listed benchmarks the run left out, so a comparison tells a benchmark
    /// nobody asked for from one that went missing; absent in runs from before it
    /// was kept (their comparisons count every baseline benchmark they lack).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selection: Option<Selection>,
    /// The time limit of one benchmark process, seconds.
    pub timeout_s: f64,
    /// The libtorch library directory benchmarks loaded.
    pub libtorch_lib: String,
    /// The bench executables.
    pub executables: Vec<ManifestExecutable>,
    /// The archive the executables came from (`run --archive`); absent when they were
    /// built here or given with `--exe`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archive: Option<ManifestArchive>,
    /// Every selected benchmark, in the order they run.
    pub benchmarks: Vec<ManifestBenchmark>,
    /// The runs `cargo gpubench merge` folded into this one, in the order given;
    /// empty for a run that measured its benchmarks itself.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub merged_from: Vec<MergedPart>,
    /// What a merged run lacks, each in words: parts cut short, missing, or lost by
    /// a cluster's job (`cargo gpubench slurm`); empty for a whole run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gaps: Vec<String>,
}

/// The folder of an `ab` run holding the base's records, named like the head's.
pub const BASE_RECORDS: &str = "base";

/// The revisions of an `ab` run. Its benchmarks' records are the head's; the base's
/// are under [`BASE_RECORDS`] with the same file names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestAb {
    /// The revision judged against.
    pub base: ManifestRevision,
    /// The revision judged.
    pub head: ManifestRevision,
    /// Whether base and head were measured in the same processes, their samples
    /// alternated; `false` when that could not work and they ran in processes of
    /// their own, interleaved.
    pub paired: bool,
    /// Why they were not paired, when they were not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unpaired_reason: Option<String>,
}

impl ManifestAb {
    /// `head (working tree) against base (1a2b3c4d)`, for titles.
    pub fn subject(&self) -> String {
        format!(
            "head ({}) against base ({})",
            self.head.label, self.base.label
        )
    }

    /// `paired in one process`, or `in separate processes`.
    pub fn how_short(&self) -> &'static str {
        if self.paired {
            "paired in one process"
        } else {
            "in separate processes"
        }
    }

    /// How the two shared processes, in a sentence.
    pub fn how(&self) -> String {
        if self.paired {
            "paired in one process: each process alternated base and head, and the \
             verdicts rest on the ratios of head to base per process"
                .to_string()
        } else {
            format!(
                "not paired: base and head ran in processes of their own, interleaved \
                 ({})",
                self.unpaired_reason.as_deref().unwrap_or("asked for")
            )
        }
    }
}

/// One revision of an `ab` run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestRevision {
    /// `working tree` or a short commit.
    pub label: String,
    /// Its commit (for the working tree, HEAD's), when in a git repository.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// Whether it had changes not committed (the working tree).
    #[serde(default)]
    pub dirty: bool,
    /// The files its processes loaded (`ab`'s libraries, or its executables when
    /// not paired), each with its SHA-256: this run's own copies, which no other
    /// build can change while it runs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub libraries: Vec<LibraryDigest>,
}

/// A file one side of an `ab` run loaded, with its digest.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct LibraryDigest {
    /// Its package.
    pub package: String,
    /// Its bench target.
    pub target: String,
    /// The SHA-256 of the file loaded, in hex.
    pub sha256: String,
}

/// What a run's bench targets listed and the run left out: a baseline benchmark the
/// run lacks is *not selected* when it is here, *not run* when it was selected and
/// has no record, and *gone* otherwise (when the run listed every bench target).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Selection {
    /// Whether the run listed every gpubench bench target there was: no `-p`,
    /// `--bench` or `--exe` chose among them, so a benchmark no target listed is gone
    /// from the suite.
    pub all_targets: bool,
    /// Benchmarks the bench targets listed that the filters left out (FILTER,
    /// `--exact`, `--skip`, ignored ones), sorted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub filtered_out: Vec<String>,
    /// Benchmarks selected but left to the other parts of `--partition`, sorted; in a
    /// merged run, those no input measured (their part is missing).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub other_parts: Vec<String>,
}

/// One run a merged run was folded from, as its own manifest described it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MergedPart {
    /// Its run id.
    pub run_id: String,
    /// Its directory when merged.
    pub path: String,
    /// Its `--partition`, when it measured a part.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<String>,
    /// The device it requested (`default` when the harness chose).
    pub device: String,
    /// The device models its records were measured on, e.g. `NVIDIA H200`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub device_models: Vec<String>,
    /// RFC 3339, UTC.
    pub started_at: String,
    /// RFC 3339, UTC; absent when it never finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<String>,
    /// Its state when merged.
    pub status: RunStatus,
    /// How many benchmarks it selected.
    pub benchmarks: usize,
}

impl RunManifest {
    /// The run's state as it stands: a run still marked running whose cargo gpubench
    /// is gone is [`RunStatus::Incomplete`].
    pub fn state(&self) -> RunStatus {
        match (self.status, self.pid) {
            // Written on another machine: its cargo gpubench is not one of this
            // machine's processes, and a copy still marked running was cut short.
            (RunStatus::Running, Some(_)) if self.written_elsewhere() => RunStatus::Incomplete,
            (RunStatus::Running, Some(pid)) if !process_alive(pid) => RunStatus::Incomplete,
            (status, _) => status,
        }
    }

    /// Whether another machine than this one wrote the run.
    fn written_elsewhere(&self) -> bool {
        self.host
            .as_deref()
            .is_some_and(|h| this_host().is_some_and(|here| here != h))
    }

    /// How many of its benchmarks finished (passed or failed).
    pub fn finished(&self) -> usize {
        self.benchmarks
            .iter()
            .filter(|b| matches!(b.status, BenchStatus::Passed | BenchStatus::Failed))
            .count()
    }

    /// Why the run has no end, in words that follow its name (`run `X` is still
    /// running`); `None` once it completed.
    pub fn why_unfinished(&self) -> Option<String> {
        match self.state() {
            RunStatus::Completed => None,
            RunStatus::Running => Some(match self.pid {
                Some(pid) => format!("is still running (cargo gpubench pid {pid})"),
                None => "is still running".to_string(),
            }),
            RunStatus::Interrupted => Some("was interrupted (Ctrl-C or SIGTERM)".to_string()),
            RunStatus::Incomplete => Some(match &self.error {
                Some(error) => format!("is incomplete: it was stopped by an error: {error}"),
                None => {
                    "is incomplete: its cargo gpubench died before the end (killed?)".to_string()
                }
            }),
        }
    }

    /// Why the run's results are partial, when its cargo gpubench stopped before the
    /// end, killed or by an error (or, for a merged run, a part's did).
    pub fn incomplete_note(&self) -> Option<String> {
        if self.state() != RunStatus::Incomplete {
            return None;
        }
        let finished = self.finished();
        if !self.merged_from.is_empty() {
            let parts: Vec<String> = self
                .merged_from
                .iter()
                .filter(|p| p.status == RunStatus::Incomplete)
                .map(|p| format!("`{}`", p.run_id))
                .collect();
            return Some(format!(
                "run `{}` is incomplete: it was merged from runs of which {} did not \
                 finish, and {finished} of its {} benchmarks finished",
                self.run_id,
                parts.join(", "),
                self.benchmarks.len()
            ));
        }
        Some(format!(
            "run `{}` {}; {finished} of its {} benchmark{} finished",
            self.run_id,
            self.why_unfinished()?,
            self.benchmarks.len(),
            if self.benchmarks.len() == 1 { "" } else { "s" }
        ))
    }

    /// Pretty JSON with a trailing newline.
    pub fn to_json_pretty(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("manifests always serialise");
        s.push('\n');
        s
    }

    /// Reads a manifest, refusing newer format versions and a benchmark listed twice.
    pub fn read(path: &Path) -> Result<Self, ManifestError> {
        let p = || path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|source| ManifestError::Io { path: p(), source })?;
        let value: serde_json::Value = serde_json::from_str(&text)
            .map_err(|source| ManifestError::Parse { path: p(), source })?;
        let found = value
            .get("format_version")
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(0);
        if found > u64::from(MANIFEST_FORMAT_VERSION) {
            return Err(ManifestError::TooNew {
                path: p(),
                found: found as u32,
                supported: MANIFEST_FORMAT_VERSION,
            });
        }
        let manifest: RunManifest = serde_json::from_value(value)
            .map_err(|source| ManifestError::Parse { path: p(), source })?;
        let mut seen = std::collections::BTreeMap::<&str, usize>::new();
        for b in &manifest.benchmarks {
            *seen.entry(b.id.as_str()).or_default() += 1;
        }
        // Records are files of the run: one named elsewhere is refused, as an
        // archive's entry that steps out is.
        for b in &manifest.benchmarks {
            if let Some(record) = b
                .record
                .as_ref()
                .filter(|r| !super::stays_inside(Path::new(r)))
            {
                return Err(ManifestError::RecordOutside {
                    path: p(),
                    id: b.id.clone(),
                    record: record.clone(),
                });
            }
        }
        if let Some((id, times)) = seen.into_iter().find(|(_, n)| *n > 1) {
            return Err(ManifestError::RepeatedBenchmark {
                path: p(),
                id: id.to_string(),
                times,
            });
        }
        Ok(manifest)
    }
}

/// This machine's host name, when it has one.
pub fn this_host() -> Option<String> {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer and its length match; the name is NUL-terminated on success
    // unless it was cut, which the last byte, kept 0, covers.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len() - 1) };
    if rc != 0 {
        return None;
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    let name = String::from_utf8_lossy(&buf[..end]).trim().to_string();
    (!name.is_empty()).then_some(name)
}

/// Whether process `pid` exists (a process of another user counts).
fn process_alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: signal 0 checks for the process without sending anything.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A manifest of one failed benchmark, for tests.
    pub(crate) fn manifest() -> RunManifest {
        RunManifest {
            format_version: MANIFEST_FORMAT_VERSION,
            run_id: "20260101T000000.000Z-1a2b".into(),
            started_at: "2026-01-01T00:00:00Z".into(),
            finished_at: None,
            status: RunStatus::Running,
            error: None,
            pid: None,
            host: None,
            command_line: vec!["cargo-gpubench".into(), "gpubench".into()],
            device: "default".into(),
            quick: false,
            flush_l2: false,
            processes: gpubench_record::measurement::ProcessPolicy::standard(),
            partition: None,
            ab: None,
            selection: None,
            timeout_s: 300.0,
            libtorch_lib: "/venv/torch/lib".into(),
            executables: vec![ManifestExecutable {
                package: Some("gpu".into()),
                target: "suite".into(),
                path: "/t/suite-0123".into(),
            }],
            archive: None,
            benchmarks: vec![ManifestBenchmark {
                id: "matmul".into(),
                target: "suite".into(),
                package: Some("gpu".into()),
                status: BenchStatus::Failed,
                failure_kind: Some(gpubench_record::failure::FailureKind::OutOfMemory),
                record: Some("matmul.json".into()),
                duration_s: Some(1.5),
                processes: 2,
                device: None,
            }],
            merged_from: Vec::new(),
            gaps: Vec::new(),
        }
    }

    #[test]
    fn a_running_run_is_judged_by_its_process_only_on_the_machine_that_wrote_it() {
        let alive = Some(std::process::id());
        let here = this_host().expect("the test machine has a host name");
        let at = |host: Option<&str>, pid: Option<u32>| RunManifest {
            host: host.map(str::to_string),
            pid,
            ..manifest()
        };
        assert_eq!(at(Some(&here), alive).state(), RunStatus::Running);
        assert_eq!(at(None, alive).state(), RunStatus::Running);
        // A copy from another machine: this machine's pid says nothing about it.
        let copied = at(Some("gpu-runner-7"), alive);
        assert_ne!(here, "gpu-runner-7");
        assert_eq!(copied.state(), RunStatus::Incomplete);
        // A process that is gone, here.
        assert_eq!(
            at(Some(&here), Some(u32::MAX - 1)).state(),
            RunStatus::Incomplete
        );
    }

    #[test]
    fn round_trips_and_refuses_newer_versions() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join(MANIFEST_FILE);
        std::fs::write(&path, manifest().to_json_pretty()).unwrap();
        assert_eq!(RunManifest::read(&path).unwrap(), manifest());
        let text = manifest().to_json_pretty();
        assert!(
            text.contains("\"failure_kind\": \"out_of_memory\""),
            "{text}"
        );

        let mut v: serde_json::Value = serde_json::to_value(manifest()).unwrap();
        v["format_version"] = 99.into();
        std::fs::write(&path, v.to_string()).unwrap();
        let err = RunManifest::read(&path).unwrap_err().to_string();
        assert!(
            err.contains("format_version 99") && err.contains("upgrade"),
            "{err}"
        );
    }

    #[test]
    fn a_record_named_outside_the_run_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join(MANIFEST_FILE);
        for outside in ["../../x.json", "/etc/passwd", "base/../../x.json", ""] {
            let mut m = manifest();
            m.benchmarks[0].record = Some(outside.into());
            std::fs::write(&path, m.to_json_pretty()).unwrap();
            let err = RunManifest::read(&path).unwrap_err();
            assert!(
                matches!(err, ManifestError::RecordOutside { .. }),
                "{outside}: {err}"
            );
            assert!(
                err.to_string().contains(&format!(
                    "names `{outside}` as the record of benchmark `matmul`"
                )),
                "{err}"
            );
        }
        // A record in a folder of the run (an `ab` run's base/) is the run's.
        let mut m = manifest();
        m.benchmarks[0].record = Some("base/matmul.json".into());
        std::fs::write(&path, m.to_json_pretty()).unwrap();
        assert!(RunManifest::read(&path).is_ok());
    }

    #[test]
    fn a_running_run_whose_process_is_gone_is_incomplete() {
        let mut m = manifest();
        assert_eq!(m.state(), RunStatus::Running, "no pid: as written");
        m.pid = Some(std::process::id());
        assert_eq!(m.state(), RunStatus::Running);
        assert!(m.incomplete_note().is_none());
        // A child that has exited and been reaped is gone.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let gone = child.id();
        child.wait().unwrap();
        m.pid = Some(gone);
        assert_eq!(m.state(), RunStatus::Incomplete);
        assert_eq!(
            m.incomplete_note().unwrap(),
            format!(
                "run `{}` is incomplete: its cargo gpubench died before the end (killed?); \
                 1 of its 1 benchmark finished",
                m.run_id
            )
        );
        m.status = RunStatus::Completed;
        assert_eq!(m.state(), RunStatus::Completed);
    }

    #[test]
    fn a_run_stopped_by_an_error_says_which_not_that_it_died() {
        let m = RunManifest {
            status: RunStatus::Incomplete,
            error: Some("failed to write /t/runs/r/mm.json: No space left on device".into()),
            ..manifest()
        };
        assert_eq!(
            m.incomplete_note().unwrap(),
            format!(
                "run `{}` is incomplete: it was stopped by an error: failed to write \
                 /t/runs/r/mm.json: No space left on device; 1 of its 1 benchmark finished",
                m.run_id
            )
        );
        // Read back by an older cargo-gpubench, or written by one: the field is
        // optional both ways.
        let text = m.to_json_pretty();
        assert!(text.contains("\"error\": \"failed to write"), "{text}");
        let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
        v.as_object_mut().unwrap().remove("error");
        let old: RunManifest = serde_json::from_value(v).unwrap();
        assert_eq!(old.error, None);
        assert!(!manifest().to_json_pretty().contains("\"error\""));
    }
}
