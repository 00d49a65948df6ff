//! The libraries one `ab` run loads, kept apart from every other `ab`: each run
//! writes, builds and copies its libraries under one lock of the target directory
//! ([`BuildLock`]), into a folder of its own ([`RunLibraries`]), and names each
//! copy's SHA-256 in its records. Cargo builds a revision's library to the same
//! file every time (the working tree's of two clones alike), so without the copy a
//! second `ab` would replace the code the first is measuring.
//!
//! ```text
//! <target-dir>/gpubench/ab.lock              held while an `ab` writes, builds and copies
//! <target-dir>/gpubench/ab/run-<pid>/        one run's copies, removed when it ends
//!     .lock                                  held while the run lasts
//!     base/<file>.so, head/<file>.so
//! ```
//!
//! A run folder whose lock is free belongs to an `ab` that was killed: the next one
//! removes it.

use std::fs::{self, File, OpenOptions};
use std::io::Read;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use thiserror::Error;

use super::BenchLibrary;
pub use crate::store::manifest::LibraryDigest;

/// The lock of the target directory's library builds, under the target directory.
pub const BUILD_LOCK: &str = "gpubench/ab.lock";
/// Where runs keep their copies, under the target directory.
pub const RUNS_DIR: &str = "gpubench/ab";

/// Errors keeping a run's libraries.
#[derive(Debug, Error)]
#[error("failed to {action} {path}: {source}; check that the target directory is writable")]
pub struct RunCopyError {
    /// What was being done.
    action: &'static str,
    /// The path.
    path: String,
    /// The cause.
    source: std::io::Error,
}

fn io_error(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> RunCopyError {
    let path = path.display().to_string();
    move |source| RunCopyError {
        action,
        path,
        source,
    }
}

/// The lock every `ab` of a target directory holds while it writes its library
/// crates, builds them and copies them out; released when dropped.
#[derive(Debug)]
pub struct BuildLock {
    _file: File,
}

impl BuildLock {
    /// Takes the lock of `target_dir`, waiting for another `ab` that holds it;
    /// `waiting` is called once when it has to wait.
    pub fn take(target_dir: &Path, waiting: impl FnOnce()) -> Result<Self, RunCopyError> {
        let path = target_dir.join(BUILD_LOCK);
        let file = open_lock(&path)?;
        if file.try_lock().is_err() {
            waiting();
            file.lock().map_err(io_error("lock", &path))?;
        }
        Ok(BuildLock { _file: file })
    }
}

/// One run's folder of library copies, removed when dropped.
#[derive(Debug)]
pub struct RunLibraries {
    dir: PathBuf,
    lock: Option<File>,
}

impl RunLibraries {
    /// Makes this run's folder under `target_dir`, removing those of killed runs.
    pub fn create(target_dir: &Path) -> Result<Self, RunCopyError> {
        let runs = target_dir.join(RUNS_DIR);
        fs::create_dir_all(&runs).map_err(io_error("create", &runs))?;
        remove_stale(&runs)?;
        // A folder of this pid's name left now belonged to a killed process
        // (remove_stale found its lock free): gone.
        let dir = runs.join(format!("run-{}", std::process::id()));
        fs::create_dir_all(&dir).map_err(io_error("create", &dir))?;
        let lock_path = dir.join(".lock");
        let lock = open_lock(&lock_path)?;
        lock.lock().map_err(io_error("lock", &lock_path))?;
        Ok(RunLibraries {
            dir,
            lock: Some(lock),
        })
    }

    /// The folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Copies `libraries` into the `side` folder (`base`, `head`): what this run
    /// loads, with each copy's digest.
    pub fn keep(
        &self,
        side: &str,
        libraries: &[BenchLibrary],
    ) -> Result<(Vec<BenchLibrary>, Vec<LibraryDigest>), RunCopyError> {
        let mut kept = Vec::new();
        let mut digests = Vec::new();
        for lib in libraries {
            let (path, digest) = self.keep_file(side, &lib.package, &lib.target, &lib.path)?;
            digests.push(digest);
            kept.push(BenchLibrary {
                path,
                ..lib.clone()
            });
        }
        Ok((kept, digests))
    }

    /// Copies the file at `path` (bench target `target` of `package`) into the `side`
    /// folder: the copy and its digest.
    pub fn keep_file(
        &self,
        side: &str,
        package: &str,
        target: &str,
        path: &Path,
    ) -> Result<(PathBuf, LibraryDigest), RunCopyError> {
        let dir = self.dir.join(side);
        fs::create_dir_all(&dir).map_err(io_error("create", &dir))?;
        let name = path
            .file_name()
            .map(|n| n.to_os_string())
            .unwrap_or_else(|| format!("{package}-{target}").into());
        let to = dir.join(name);
        fs::copy(path, &to).map_err(io_error("copy a built file to", &to))?;
        let digest = LibraryDigest {
            package: package.to_string(),
            target: target.to_string(),
            sha256: sha256_of(&to)?,
        };
        Ok((to, digest))
    }
}

impl Drop for RunLibraries {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.dir);
        drop(self.lock.take());
        // Empty folders go too, so a finished `ab` leaves nothing there.
        if let Some(runs) = self.dir.parent() {
            let _ = fs::remove_dir(runs);
        }
    }
}

/// The SHA-256 of the file at `path`, in hex.
pub fn sha256_of(path: &Path) -> Result<String, RunCopyError> {
    let mut file = File::open(path).map_err(io_error("read", path))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = file.read(&mut buf).map_err(io_error("read", path))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

/// Removes the run folders under `runs` whose lock no process holds.
fn remove_stale(runs: &Path) -> Result<(), RunCopyError> {
    let entries = fs::read_dir(runs).map_err(io_error("read", runs))?;
    for entry in entries.flatten() {
        let path = entry.path();
        let is_run = entry.file_name().to_string_lossy().starts_with("run-");
        if !is_run || !path.is_dir() {
            continue;
        }
        let lock_path = path.join(".lock");
        let free = match OpenOptions::new().read(true).write(true).open(&lock_path) {
            Ok(lock) => lock.try_lock().is_ok(),
            // Made by a run killed before it took its lock.
            Err(_) => true,
        };
        if free {
            fs::remove_dir_all(&path).map_err(io_error("remove", &path))?;
        }
    }
    Ok(())
}

fn open_lock(path: &Path) -> Result<File, RunCopyError> {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).map_err(io_error("create", parent))?;
    }
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(io_error("open", path))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn library(dir: &Path, name: &str, bytes: &[u8]) -> BenchLibrary {
        let path = dir.join(name);
        fs::write(&path, bytes).unwrap();
        BenchLibrary {
            package: "p".into(),
            target: "t".into(),
            path,
        }
    }

    #[test]
    fn a_run_loads_its_own_copies_which_a_later_build_cannot_change() {
        let tmp = tempfile::tempdir().unwrap();
        let target = tmp.path().join("target");
        let built = tmp.path().join("release");
        fs::create_dir_all(&built).unwrap();
        let lib = library(&built, "libgpubench_ab_working_tree_p_t.so", b"first");

        let first = RunLibraries::create(&target).unwrap();
        let (kept, digests) = first.keep("head", std::slice::from_ref(&lib)).unwrap();
        assert!(kept[0].path.starts_with(first.dir()), "{:?}", kept[0].path);
        // sha256("first")
        assert_eq!(
            digests[0].sha256,
            "a7937b64b8caa58f03721bb6bacf5c78cb235febe0e70b1b84cd99541461a08e"
        );
        // Another `ab` builds the same file again: this run's copy is untouched.
        fs::write(&lib.path, b"second").unwrap();
        assert_eq!(fs::read(&kept[0].path).unwrap(), b"first");
        assert_eq!(sha256_of(&kept[0].path).unwrap(), digests[0].sha256);

        // Its folder goes when it ends, and the empty `ab/` with it.
        let dir = first.dir().to_path_buf();
        drop(first);
        assert!(!dir.exists());
        assert!(!target.join(RUNS_DIR).exists());
    }

    #[test]
    fn a_killed_runs_folder_is_removed_and_a_live_ones_is_kept() {
        let tmp = tempfile::tempdir().unwrap();
        let target = tmp.path().join("target");
        let runs = target.join(RUNS_DIR);
        // Killed: its lock file is there, and nobody holds it.
        let dead = runs.join("run-999999999");
        fs::create_dir_all(&dead).unwrap();
        fs::write(dead.join(".lock"), "").unwrap();
        fs::write(dead.join("x.so"), "").unwrap();
        // Alive: its lock is held (by this test, as by another `ab`).
        let live = runs.join("run-999999998");
        fs::create_dir_all(&live).unwrap();
        let held = open_lock(&live.join(".lock")).unwrap();
        held.lock().unwrap();

        let run = RunLibraries::create(&target).unwrap();
        assert!(!dead.exists(), "a killed run's copies are removed");
        assert!(live.is_dir(), "a live run's copies are kept");
        drop(run);
        assert!(live.is_dir());
    }

    #[test]
    fn the_build_lock_makes_a_second_ab_wait() {
        let tmp = tempfile::tempdir().unwrap();
        let first = BuildLock::take(tmp.path(), || panic!("nobody holds it yet")).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let dir = tmp.path().to_path_buf();
        let second = std::thread::spawn(move || {
            let mut waited = false;
            let lock = BuildLock::take(&dir, || waited = true).unwrap();
            tx.send(()).unwrap();
            drop(lock);
            waited
        });
        assert!(
            rx.recv_timeout(std::time::Duration::from_millis(300))
                .is_err(),
            "the second takes it only once the first lets go"
        );
        drop(first);
        rx.recv_timeout(std::time::Duration::from_secs(10)).unwrap();
        assert!(second.join().unwrap(), "and it said it waited");
    }
}
