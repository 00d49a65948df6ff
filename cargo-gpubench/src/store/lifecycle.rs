//! One run's life on disk, the same for `run`, `ab` and `merge`: it begins (its
//! directory, and its manifest marked running), records its processes (each benchmark's
//! entry, the manifest rewritten), and finishes (its final status written, then
//! `latest` pointed at it). An [`ActiveRun`] is the guard of that life: a run stopped
//! by an error says which in its manifest ([`ActiveRun::stopped_by`]), and one left
//! any other way (a panic, an error passed up past its command) is still written as
//! incomplete when the guard is dropped, so no run of a living cargo gpubench is
//! left marked running. Ctrl-C is no exit path of its own: the commands see it and
//! finish the run as interrupted. A merge that fails while copying its inputs
//! removes its run instead ([`ActiveRun::discard`]): no half-merged run is left.

use std::sync::Mutex;

use chrono::{DateTime, Utc};

use crate::store::manifest::{ManifestBenchmark, RunManifest, RunStatus};
use crate::store::runs::{RunDir, RunStore, StoreError};

/// What a run's manifest says when its guard was dropped before the run ended:
/// while a panic unwound, or after an error no one recorded.
const PANICKED: &str = "cargo gpubench panicked before the run's end";
const DROPPED: &str = "an error stopped cargo gpubench before the run's end";

/// A run being written: its directory, and its manifest as it stands. Its methods
/// take `&self` where the devices' threads of a run call them at once.
#[derive(Debug)]
pub struct ActiveRun<'s> {
    store: &'s RunStore,
    dir: RunDir,
    manifest: Mutex<RunManifest>,
    /// Whether the run's end is written (finished, stopped or discarded).
    ended: bool,
}

impl RunStore {
    /// Begins a run started at `started`: makes its directory and writes the manifest
    /// `manifest` makes for it, marked running by this process. An error writing it
    /// is written into it too, where it can be.
    pub fn begin_run(
        &self,
        started: DateTime<Utc>,
        manifest: impl FnOnce(&RunDir) -> RunManifest,
    ) -> Result<ActiveRun<'_>, StoreError> {
        let dir = self.create_run(started)?;
        let manifest = RunManifest {
            status: RunStatus::Running,
            pid: Some(std::process::id()),
            finished_at: None,
            error: None,
            ..manifest(&dir)
        };
        let run = ActiveRun {
            store: self,
            dir,
            manifest: Mutex::new(manifest),
            ended: false,
        };
        if let Err(e) = run.write() {
            run.stopped_by(&e.to_string());
            return Err(e);
        }
        Ok(run)
    }
}

impl ActiveRun<'_> {
    /// The run's directory.
    pub fn dir(&self) -> &RunDir {
        &self.dir
    }

    /// The manifest as it stands.
    pub fn manifest(&self) -> RunManifest {
        self.lock().clone()
    }

    /// Records benchmark `i`'s entry after one of its processes, and rewrites the
    /// manifest.
    pub fn process(&self, i: usize, entry: ManifestBenchmark) -> Result<(), StoreError> {
        let mut manifest = self.lock();
        manifest.benchmarks[i] = entry;
        self.dir.write_manifest(&manifest)
    }

    /// Ends the run as `status` (completed or interrupted): removes its processes'
    /// scratch directory, writes the final manifest, then points `latest` at the
    /// run. Returns the final manifest. An error before the final manifest is
    /// written stops the run with it.
    pub fn finish(self, status: RunStatus) -> Result<RunManifest, StoreError> {
        if let Err(e) = self.dir.remove_incoming() {
            self.stopped_by(&e.to_string());
            return Err(e);
        }
        let mut manifest = self.manifest();
        manifest.status = status;
        manifest.finished_at = Some(rfc3339_millis(Utc::now()));
        manifest.pid = None;
        self.finish_as(manifest)
    }

    /// Ends the run with `manifest` as its final one (a merged run's, whose status
    /// is its inputs'), then points `latest` at it. Returns `manifest`.
    pub fn finish_as(mut self, manifest: RunManifest) -> Result<RunManifest, StoreError> {
        *self.lock() = manifest;
        if let Err(e) = self.write() {
            self.stopped_by(&e.to_string());
            return Err(e);
        }
        self.ended = true;
        // `latest` moves only now, with the run's final status written: it names the
        // last run that finished (completed, or interrupted with whole records), never
        // one still being written or cut short, so `compare main latest` in CI judges
        // the last whole run rather than whatever a killed run left, and `report
        // latest` keeps showing it. A newer run that never finished is named in a
        // warning wherever `latest` is resolved (`store::runs::newer_than_latest`).
        self.store.point_latest(&self.dir)?;
        Ok(self.manifest())
    }

    /// Ends a run that the error `message` stopped before its end: its manifest says
    /// so (incomplete, with the message), when it can still be written, and its
    /// scratch directory goes, so the run reads later as stopped by that error, not
    /// as killed.
    pub fn stopped_by(mut self, message: &str) {
        self.end_incomplete(message);
    }

    /// Removes a run that an error stopped before anything of it was worth keeping
    /// (a merge copying its inputs): no half of it is left behind. Where its
    /// directory cannot be removed, the run is stopped by `message` instead.
    pub fn discard(mut self, message: &str) {
        match std::fs::remove_dir_all(&self.dir.path) {
            Ok(()) => self.ended = true,
            Err(_) => self.end_incomplete(message),
        }
    }

    fn end_incomplete(&mut self, message: &str) {
        self.ended = true;
        let _ = self.dir.remove_incoming();
        let mut manifest = self.lock();
        manifest.status = RunStatus::Incomplete;
        manifest.error = Some(message.to_string());
        manifest.finished_at = Some(rfc3339_millis(Utc::now()));
        manifest.pid = None;
        if let Err(also) = self.dir.write_manifest(&manifest) {
            crate::console::warning(format_args!(
                "the manifest of run `{}` could not record the error either ({also}): the \
                 run will read as killed",
                self.dir.id
            ));
        }
    }

    fn write(&self) -> Result<(), StoreError> {
        self.dir.write_manifest(&self.lock())
    }

    /// The manifest, also when a thread panicked holding it: a run's end is still
    /// written then.
    fn lock(&self) -> std::sync::MutexGuard<'_, RunManifest> {
        self.manifest
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Drop for ActiveRun<'_> {
    fn drop(&mut self) {
        if !self.ended {
            let why = if std::thread::panicking() {
                PANICKED
            } else {
                DROPPED
            };
            self.end_incomplete(why);
        }
    }
}

/// `t` as RFC 3339 to the millisecond, as manifests write times.
pub(crate) fn rfc3339_millis(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::manifest::{BenchStatus, MANIFEST_FILE};

    fn manifest(run: &RunDir) -> RunManifest {
        let mut m = crate::store::manifest::tests::manifest();
        m.run_id = run.id.clone();
        m.status = RunStatus::Completed;
        m.pid = None;
        m
    }

    fn read(dir: &RunDir) -> RunManifest {
        RunManifest::read(&dir.path.join(MANIFEST_FILE)).unwrap()
    }

    #[test]
    fn a_run_is_running_while_it_runs_and_latest_names_it_once_finished() {
        let tmp = tempfile::tempdir().unwrap();
        let store = RunStore::open(tmp.path()).unwrap();
        let run = store.begin_run(Utc::now(), manifest).unwrap();
        let dir = run.dir().clone();
        let on_disk = read(&dir);
        assert_eq!(on_disk.status, RunStatus::Running);
        assert_eq!(on_disk.pid, Some(std::process::id()));
        let mut entry = on_disk.benchmarks[0].clone();
        entry.status = BenchStatus::Passed;
        run.process(0, entry).unwrap();
        assert_eq!(read(&dir).benchmarks[0].status, BenchStatus::Passed);
        assert!(crate::store::runs::resolve_latest(tmp.path()).is_none());
        let finished = run.finish(RunStatus::Interrupted).unwrap();
        assert_eq!(read(&dir), finished);
        assert_eq!(
            (finished.status, finished.pid),
            (RunStatus::Interrupted, None)
        );
        assert!(finished.finished_at.is_some());
        assert_eq!(
            crate::store::runs::resolve_latest(tmp.path()),
            Some(tmp.path().join("runs").join(&dir.id))
        );
    }

    #[test]
    fn every_way_out_before_the_end_is_written_into_the_manifest() {
        let tmp = tempfile::tempdir().unwrap();
        let store = RunStore::open(tmp.path()).unwrap();
        // An error the command records.
        let run = store.begin_run(Utc::now(), manifest).unwrap();
        let dir = run.dir().clone();
        run.stopped_by("failed to write x.json: no space");
        let m = read(&dir);
        assert_eq!((m.status, m.pid), (RunStatus::Incomplete, None));
        assert_eq!(m.error.as_deref(), Some("failed to write x.json: no space"));
        // A panic.
        let run = store.begin_run(Utc::now(), manifest).unwrap();
        let dir = run.dir().clone();
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
            let _run = run;
            panic!("a bug");
        }))
        .unwrap_err();
        let m = read(&dir);
        assert_eq!(
            (m.status, m.error.as_deref()),
            (RunStatus::Incomplete, Some(PANICKED))
        );
        // A guard dropped without a word.
        let run = store.begin_run(Utc::now(), manifest).unwrap();
        let dir = run.dir().clone();
        drop(run);
        assert_eq!(read(&dir).error.as_deref(), Some(DROPPED));
        assert_eq!(read(&dir).state(), RunStatus::Incomplete);
        // None of them is `latest`.
        assert!(crate::store::runs::resolve_latest(tmp.path()).is_none());
    }

    #[test]
    fn a_discarded_run_leaves_nothing_behind() {
        let tmp = tempfile::tempdir().unwrap();
        let store = RunStore::open(tmp.path()).unwrap();
        let run = store.begin_run(Utc::now(), manifest).unwrap();
        let dir = run.dir().clone();
        run.discard("failed to read a record");
        assert!(!dir.path.exists());
    }
}
