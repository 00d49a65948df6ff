//! The run directories under `<out-dir>` (the layout is in [`crate::store`]): making
//! a run's directory under the lock, storing records as they come, pointing `latest`
//! at the newest run that finished (a newer one that did not is named by
//! [`newer_than_latest`]), and finding runs again.

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use gpubench_record::id::file_stem_for_id;
use gpubench_record::record::RawRecord;
use thiserror::Error;

use crate::store::manifest::{RunManifest, RunStatus, MANIFEST_FILE};

/// The lock file's name in the output directory.
pub const LOCK_FILE: &str = "lock";
/// The name of the pointer to the newest run.
pub const LATEST: &str = "latest";
/// The directory of runs.
pub const RUNS_DIR: &str = "runs";
/// Where a benchmark process writes its record before it is checked and stored.
const INCOMING_DIR: &str = ".incoming";

/// Errors storing runs.
#[derive(Debug, Error)]
pub enum StoreError {
    /// Another run holds the lock.
    #[error("another cargo gpubench run{holder} is writing to {dir}: it holds the lock {lock}; wait for it to finish (or stop it) and try again")]
    Locked {
        /// The output directory.
        dir: String,
        /// The lock file.
        lock: String,
        /// ` (pid N)` when known.
        holder: String,
    },
    /// A file system operation failed.
    #[error("failed to {action} {path}: {source}")]
    Io {
        /// What was being done, e.g. `write`.
        action: &'static str,
        /// The path.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
}

fn io<'a>(action: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> StoreError + 'a {
    move |source| StoreError::Io {
        action,
        path: path.display().to_string(),
        source,
    }
}

/// An output directory, locked for writing while this value lives.
#[derive(Debug)]
pub struct RunStore {
    dir: PathBuf,
    _lock: File,
}

impl RunStore {
    /// Opens (creating) `dir` and takes its lock, failing at once when another run
    /// holds it.
    pub fn open(dir: &Path) -> Result<Self, StoreError> {
        fs::create_dir_all(dir).map_err(io("create", dir))?;
        let lock_path = dir.join(LOCK_FILE);
        let mut lock = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&lock_path)
            .map_err(io("open", &lock_path))?;
        if lock.try_lock().is_err() {
            let mut pid = String::new();
            let _ = lock.read_to_string(&mut pid);
            let pid = pid.trim();
            return Err(StoreError::Locked {
                dir: dir.display().to_string(),
                lock: lock_path.display().to_string(),
                holder: if pid.is_empty() {
                    String::new()
                } else {
                    format!(" (pid {pid})")
                },
            });
        }
        // Who holds it, for the message a second run prints; advisory only.
        let _ = lock
            .set_len(0)
            .and_then(|_| lock.seek(SeekFrom::Start(0)))
            .and_then(|_| writeln!(lock, "{}", std::process::id()));
        Ok(RunStore {
            dir: dir.to_path_buf(),
            _lock: lock,
        })
    }

    /// The output directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Marks the runs of this directory still marked running as incomplete: with the
    /// lock held, nothing else writes here, so their cargo gpubench died. Removes what
    /// they left half-written (`.incoming`). Returns the notes to show.
    pub fn mark_incomplete_runs(&self) -> Result<Vec<String>, StoreError> {
        let runs = self.dir.join(RUNS_DIR);
        let Ok(items) = fs::read_dir(&runs) else {
            return Ok(Vec::new());
        };
        let mut notes = Vec::new();
        let mut dirs: Vec<PathBuf> = items.filter_map(|e| e.ok().map(|e| e.path())).collect();
        dirs.sort();
        for dir in dirs {
            let path = dir.join(MANIFEST_FILE);
            let Ok(mut manifest) = RunManifest::read(&path) else {
                continue;
            };
            if manifest.status != RunStatus::Running {
                continue;
            }
            // Whatever the pid now names, the lock says its run is over.
            manifest.pid = None;
            manifest.status = RunStatus::Incomplete;
            let incoming = dir.join(INCOMING_DIR);
            if incoming.exists() {
                fs::remove_dir_all(&incoming).map_err(io("remove", &incoming))?;
            }
            write_atomic(&path, manifest.to_json_pretty().as_bytes())?;
            notes.push(format!(
                "run `{}` did not finish (its cargo gpubench died before the end; {} of \
                 {} benchmarks finished): marked incomplete",
                manifest.run_id,
                manifest.finished(),
                manifest.benchmarks.len()
            ));
        }
        Ok(notes)
    }

    /// Creates the directory of a new run started at `started`.
    pub fn create_run(&self, started: DateTime<Utc>) -> Result<RunDir, StoreError> {
        let runs = self.dir.join(RUNS_DIR);
        fs::create_dir_all(&runs).map_err(io("create", &runs))?;
        for attempt in 0u32.. {
            let id = run_id(started, std::process::id(), attempt);
            let path = runs.join(&id);
            match fs::create_dir(&path) {
                Ok(()) => return Ok(RunDir { id, path }),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && attempt < 1000 => {}
                Err(e) => return Err(io("create", &path)(e)),
            }
        }
        unreachable!("the loop returns")
    }

    /// Points `latest` at `run`: a relative symlink, or where symlinks are not
    /// available, a file holding the run id.
    pub fn point_latest(&self, run: &RunDir) -> Result<(), StoreError> {
        let latest = self.dir.join(LATEST);
        let tmp = self
            .dir
            .join(format!(".{LATEST}.tmp-{}", std::process::id()));
        let _ = fs::remove_file(&tmp);
        let target = Path::new(RUNS_DIR).join(&run.id);
        if make_symlink(&target, &tmp).is_ok() {
            // rename(2) replaces the old link (or old file) atomically.
            return fs::rename(&tmp, &latest).map_err(io("update", &latest));
        }
        write_atomic(&latest, format!("{}\n", run.id).as_bytes())
    }
}

/// The run `latest` points at in `dir`, if any.
pub fn resolve_latest(dir: &Path) -> Option<PathBuf> {
    let latest = dir.join(LATEST);
    let meta = fs::symlink_metadata(&latest).ok()?;
    if meta.file_type().is_symlink() {
        let target = fs::read_link(&latest).ok()?;
        return Some(dir.join(target));
    }
    let id = fs::read_to_string(&latest).ok()?;
    let id = id.trim();
    (!id.is_empty() && !id.contains(['/', '\\'])).then(|| dir.join(RUNS_DIR).join(id))
}

/// A warning for wherever `latest` is resolved, when a run newer than the one it
/// names never finished (killed, stopped by an error, or still running): `latest`
/// names the last run that finished, so a user judging `latest` learns that it is
/// not the newest run, and which one is. `None` when `latest` is the newest run.
pub fn newer_than_latest(dir: &Path) -> Option<String> {
    let latest = resolve_latest(dir)
        .filter(|p| p.join(MANIFEST_FILE).is_file())
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()));
    let mut newer: Vec<String> = fs::read_dir(dir.join(RUNS_DIR))
        .ok()?
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        // Run ids sort by start time.
        .filter(|id| latest.as_ref().is_none_or(|l| id > l))
        .collect();
    newer.sort();
    let (id, why) = newer.iter().rev().find_map(|id| {
        let manifest = RunManifest::read(&dir.join(RUNS_DIR).join(id).join(MANIFEST_FILE)).ok()?;
        Some((id, manifest.why_unfinished()?))
    })?;
    Some(match &latest {
        Some(latest) => format!(
            "the newest run `{id}` {why}; `latest` is the last run that finished: `{latest}`"
        ),
        None => {
            format!("the newest run `{id}` {why}; no run has finished, so there is no `latest`")
        }
    })
}

#[cfg(unix)]
fn make_symlink(target: &Path, link: &Path) -> std::io::Result<()> {
    std::os::unix::fs::symlink(target, link)
}

#[cfg(windows)]
fn make_symlink(target: &Path, link: &Path) -> std::io::Result<()> {
    std::os::windows::fs::symlink_dir(target, link)
}

#[cfg(not(any(unix, windows)))]
fn make_symlink(_target: &Path, _link: &Path) -> std::io::Result<()> {
    Err(std::io::ErrorKind::Unsupported.into())
}

/// A run's directory.
#[derive(Debug, Clone)]
pub struct RunDir {
    /// The run id (the directory's name).
    pub id: String,
    /// The directory.
    pub path: PathBuf,
}

impl RunDir {
    /// The record file name of benchmark `id`, relative to the run directory.
    pub fn record_file(id: &str) -> String {
        format!("{}.json", file_stem_for_id(id))
    }

    /// Stores `record` as benchmark `id`'s file, returning the name written.
    pub fn write_record(&self, id: &str, record: &RawRecord) -> Result<String, StoreError> {
        let name = Self::record_file(id);
        write_atomic(&self.path.join(&name), record.to_json_pretty().as_bytes())?;
        Ok(name)
    }

    /// Stores the manifest.
    pub fn write_manifest(&self, manifest: &RunManifest) -> Result<(), StoreError> {
        write_atomic(
            &self.path.join(MANIFEST_FILE),
            manifest.to_json_pretty().as_bytes(),
        )
    }

    /// An empty directory for the next benchmark process of device slot `slot` to
    /// write its record into (one per device, as their processes run at once).
    pub fn fresh_incoming(&self, slot: usize) -> Result<PathBuf, StoreError> {
        let dir = self.path.join(INCOMING_DIR).join(slot.to_string());
        if dir.exists() {
            fs::remove_dir_all(&dir).map_err(io("clear", &dir))?;
        }
        fs::create_dir_all(&dir).map_err(io("create", &dir))?;
        Ok(dir)
    }

    /// Removes the scratch directory of benchmark processes.
    pub fn remove_incoming(&self) -> Result<(), StoreError> {
        let dir = self.path.join(INCOMING_DIR);
        match fs::remove_dir_all(&dir) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io("remove", &dir)(e)),
            _ => Ok(()),
        }
    }
}

/// A run id: the UTC start time to the millisecond, then the process id and an
/// attempt counter, e.g. `20260315T101502.042Z-4f2a1-0`. Ids sort by start time.
pub fn run_id(started: DateTime<Utc>, pid: u32, attempt: u32) -> String {
    format!("{}-{pid:x}-{attempt}", started.format("%Y%m%dT%H%M%S%.3fZ"))
}

/// Writes `bytes` to `path` through a temporary file in the same directory, flushed
/// to disk, then renamed over `path`.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let result = (|| {
        let mut f = File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result.map_err(io("write", path))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn run_ids_sort_by_time_and_are_unique() {
        let t1 = Utc.with_ymd_and_hms(2026, 3, 15, 9, 5, 2).unwrap();
        let t2 = Utc.with_ymd_and_hms(2026, 3, 15, 10, 0, 0).unwrap();
        let a = run_id(t1, 99999, 0);
        let b = run_id(t2, 1, 0);
        assert_eq!(a, "20260315T090502.000Z-1869f-0");
        assert!(a < b);

        let tmp = tempfile::tempdir().unwrap();
        let store = RunStore::open(tmp.path()).unwrap();
        let r1 = store.create_run(t1).unwrap();
        let r2 = store.create_run(t1).unwrap();
        assert_ne!(r1.id, r2.id);
        assert!(r1.path.is_dir() && r2.path.is_dir());
    }

    #[test]
    fn a_second_store_on_the_same_dir_is_refused_naming_the_lock() {
        let tmp = tempfile::tempdir().unwrap();
        let first = RunStore::open(tmp.path()).unwrap();
        let err = RunStore::open(tmp.path()).unwrap_err().to_string();
        assert!(
            err.contains(&tmp.path().join(LOCK_FILE).display().to_string()),
            "{err}"
        );
        assert!(
            err.contains(&format!("pid {}", std::process::id())),
            "{err}"
        );
        drop(first);
        RunStore::open(tmp.path()).expect("the lock is released with the store");
    }

    #[test]
    fn latest_follows_the_newest_run() {
        let tmp = tempfile::tempdir().unwrap();
        let store = RunStore::open(tmp.path()).unwrap();
        assert_eq!(resolve_latest(tmp.path()), None);
        let r1 = store.create_run(Utc::now()).unwrap();
        store.point_latest(&r1).unwrap();
        assert_eq!(
            fs::canonicalize(resolve_latest(tmp.path()).unwrap()).unwrap(),
            fs::canonicalize(&r1.path).unwrap()
        );
        let r2 = store.create_run(Utc::now()).unwrap();
        store.point_latest(&r2).unwrap();
        assert_eq!(
            fs::canonicalize(resolve_latest(tmp.path()).unwrap()).unwrap(),
            fs::canonicalize(&r2.path).unwrap()
        );
        // Written with a relative target, so the output directory can move.
        #[cfg(unix)]
        assert_eq!(
            fs::read_link(tmp.path().join(LATEST)).unwrap(),
            Path::new(RUNS_DIR).join(&r2.id)
        );
    }

    /// Stores a run started at `started` whose manifest says `status`, with `error`.
    fn stored_run(
        store: &RunStore,
        started: DateTime<Utc>,
        status: &str,
        error: Option<&str>,
    ) -> RunDir {
        let run = store.create_run(started).unwrap();
        let manifest: RunManifest = serde_json::from_value(serde_json::json!({
            "format_version": 1, "run_id": run.id, "started_at": "2026-01-01T00:00:00Z",
            "status": status, "error": error, "command_line": [], "device": "default",
            "quick": false, "flush_l2": false, "timeout_s": 300.0, "libtorch_lib": "/t",
            "executables": [], "benchmarks": [],
        }))
        .unwrap();
        run.write_manifest(&manifest).unwrap();
        run
    }

    #[test]
    fn a_newer_run_than_latest_that_never_finished_is_named_with_why() {
        use chrono::TimeZone;
        let tmp = tempfile::tempdir().unwrap();
        let store = RunStore::open(tmp.path()).unwrap();
        let at = |h| Utc.with_ymd_and_hms(2026, 3, 15, h, 0, 0).unwrap();
        let killed = stored_run(&store, at(8), "incomplete", None);
        assert_eq!(
            newer_than_latest(tmp.path()).unwrap(),
            format!(
                "the newest run `{}` is incomplete: its cargo gpubench died before the end \
                 (killed?); no run has finished, so there is no `latest`",
                killed.id
            )
        );
        let done = stored_run(&store, at(9), "completed", None);
        store.point_latest(&done).unwrap();
        assert_eq!(
            newer_than_latest(tmp.path()),
            None,
            "an older one is no news"
        );

        let killed = stored_run(&store, at(10), "incomplete", None);
        assert_eq!(
            newer_than_latest(tmp.path()).unwrap(),
            format!(
                "the newest run `{}` is incomplete: its cargo gpubench died before the end \
                 (killed?); `latest` is the last run that finished: `{}`",
                killed.id, done.id
            )
        );
        let stopped = stored_run(
            &store,
            at(11),
            "incomplete",
            Some("failed to write x: full"),
        );
        assert!(newer_than_latest(tmp.path()).unwrap().starts_with(&format!(
            "the newest run `{}` is incomplete: it was stopped by an error: failed to write \
                 x: full; `latest` is",
            stopped.id
        )),);
        let next = stored_run(&store, at(12), "completed", None);
        store.point_latest(&next).unwrap();
        assert_eq!(newer_than_latest(tmp.path()), None);
    }

    #[test]
    fn a_latest_file_holding_an_id_is_understood() {
        let tmp = tempfile::tempdir().unwrap();
        fs::write(tmp.path().join(LATEST), "20260101T000000.000Z-1-0\n").unwrap();
        assert_eq!(
            resolve_latest(tmp.path()).unwrap(),
            tmp.path().join("runs/20260101T000000.000Z-1-0")
        );
    }

    #[test]
    fn atomic_writes_replace_and_leave_no_temporary_files() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("a.json");
        write_atomic(&path, b"one").unwrap();
        write_atomic(&path, b"two").unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "two");
        let names: Vec<_> = fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["a.json"]);
        let err = write_atomic(&tmp.path().join("missing/dir/x.json"), b"x").unwrap_err();
        assert!(err.to_string().starts_with("failed to write "), "{err}");
    }
}
