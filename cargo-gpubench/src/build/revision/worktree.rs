//! The worktrees `ab` checks the revisions out in: each held under a shared lock
//! while an `ab` uses it, made beside the repository (else under the target
//! directory), and removed by the last `ab` to let go of it, or by the next one where
//! a killed `ab` left it (the layout is in the parent module's docs).

use std::fs::{self, File, OpenOptions};
use std::path::{Path, PathBuf};

use super::{git_in, git_output, Repository, RevisionError, STATE_DIR, WORKTREES_DIR};
use crate::store::git::{self, stdout_line};

/// What a worktree beside the repository is called after the repository's name.
const SIBLING_INFIX: &str = ".gpubench-ab-";

/// The worktrees one `ab` uses, each under a shared lock (module docs). Dropping
/// (or [`release`](Self::release)) lets go of them and removes each one no other
/// `ab` uses.
#[derive(Debug)]
pub struct Checkouts {
    toplevel: PathBuf,
    held: Vec<Held>,
}

/// A worktree in use.
#[derive(Debug)]
struct Held {
    sha: String,
    path: PathBuf,
    lock: File,
    ready: PathBuf,
}

impl Checkouts {
    /// None yet, of the repository at `toplevel`.
    pub(super) fn new(toplevel: PathBuf) -> Self {
        Checkouts {
            toplevel,
            held: Vec::new(),
        }
    }

    /// The directory of a worktree of commit `sha`: one this `ab` holds already, else
    /// one it takes hold of now.
    pub(super) fn hold(
        &mut self,
        repo: &Repository,
        sha: &str,
        notes: &mut Vec<String>,
    ) -> Result<PathBuf, RevisionError> {
        if let Some(h) = self.held.iter().find(|h| h.sha == sha) {
            return Ok(h.path.clone());
        }
        let held = repo.worktree(sha, notes)?;
        let path = held.path.clone();
        self.held.push(held);
        Ok(path)
    }

    /// The worktrees' directories.
    pub fn paths(&self) -> Vec<PathBuf> {
        self.held.iter().map(|h| h.path.clone()).collect()
    }

    /// Lets go of the worktrees, removing each one no other `ab` uses; what could
    /// not be removed, in words.
    pub fn release(mut self) -> Vec<String> {
        self.let_go()
    }

    fn let_go(&mut self) -> Vec<String> {
        let mut problems = Vec::new();
        for held in self.held.drain(..) {
            // Another `ab` may use it still: it is removed by the last one out.
            let _ = held.lock.unlock();
            if held.lock.try_lock().is_err() {
                continue;
            }
            let removed = remove_worktree(&self.toplevel, &held.path, &held.ready);
            // Under the target directory, the folders go too when that empties them.
            if let Some(dir) = held.path.parent().filter(|d| d.ends_with(WORKTREES_DIR)) {
                let _ = fs::remove_dir(dir);
                let _ = dir.parent().map(fs::remove_dir);
            }
            if let Err(e) = removed {
                problems.push(format!(
                    "failed to remove the worktree of {} at {}: {e}; remove it with `git \
                     worktree remove --force {}`",
                    held.sha,
                    held.path.display(),
                    held.path.display()
                ));
            }
        }
        problems
    }
}

#[cfg(test)]
impl Checkouts {
    /// Lets go of the locks and leaves the worktrees, as a killed `ab` does.
    pub(super) fn abandon(mut self) {
        self.held.clear();
    }
}

impl Drop for Checkouts {
    fn drop(&mut self) {
        self.let_go();
    }
}

/// Removes the worktree at `path` (git's record and the directory) and its ready
/// marker; the caller holds its lock exclusively.
fn remove_worktree(toplevel: &Path, path: &Path, ready: &Path) -> Result<(), RevisionError> {
    remove_file(ready)?;
    let shown = path.display().to_string();
    if path.exists() {
        let _ = git_output(
            toplevel,
            &["worktree", "remove", "--force", "--force", &shown],
        );
    }
    if path.exists() {
        fs::remove_dir_all(path).map_err(|source| RevisionError::Io {
            what: "remove the worktree",
            path: shown,
            source,
        })?;
    }
    git_in(toplevel, "prune stale worktrees", &["worktree", "prune"]).map(|_| ())
}

impl Repository {
    /// `<git-common-dir>/gpubench-ab`, made when missing.
    fn state_dir(&self) -> Result<PathBuf, RevisionError> {
        let common = self.git(
            "find the repository's git directory",
            &["rev-parse", "--path-format=absolute", "--git-common-dir"],
        )?;
        let dir = PathBuf::from(common.trim()).join(STATE_DIR);
        fs::create_dir_all(&dir).map_err(|source| RevisionError::Io {
            what: "create",
            path: dir.display().to_string(),
            source,
        })?;
        Ok(dir)
    }

    /// A worktree of `sha`, held under a shared lock: the one another `ab` made and
    /// uses, else made anew (module docs).
    fn worktree(&self, sha: &str, notes: &mut Vec<String>) -> Result<Held, RevisionError> {
        let state = self.state_dir()?;
        let lock_path = state.join(format!("{sha}.lock"));
        let ready = state.join(format!("{sha}.ready"));
        let lock = open_lock(&lock_path)?;
        let locking = |result: std::io::Result<()>| {
            result.map_err(|source| RevisionError::Io {
                what: "lock",
                path: lock_path.display().to_string(),
                source,
            })
        };
        loop {
            locking(lock.lock_shared())?;
            if let Some(path) = self.ready_worktree(&ready, sha)? {
                return Ok(Held {
                    sha: sha.to_string(),
                    path,
                    lock,
                    ready,
                });
            }
            // Not whole: made under the exclusive lock (unless another `ab` made it
            // meanwhile), then taken shared again.
            locking(lock.unlock())?;
            locking(lock.lock())?;
            if self.ready_worktree(&ready, sha)?.is_none() {
                self.make_worktree(sha, &ready, notes)?;
            }
            locking(lock.unlock())?;
        }
    }

    /// The worktree of `sha` the ready marker names, when it is whole.
    fn ready_worktree(&self, ready: &Path, sha: &str) -> Result<Option<PathBuf>, RevisionError> {
        let Ok(text) = fs::read_to_string(ready) else {
            return Ok(None);
        };
        let path = PathBuf::from(text.trim());
        Ok(self.is_checkout_of(&path, sha)?.then_some(path))
    }

    /// Checks out `sha` (module docs for where) and marks it ready; the caller holds
    /// its lock exclusively.
    fn make_worktree(
        &self,
        sha: &str,
        ready: &Path,
        notes: &mut Vec<String>,
    ) -> Result<(), RevisionError> {
        remove_file(ready)?;
        let path = self.place(sha, notes)?;
        if path.exists() {
            // Half-made, moved or changed: git forgets it, then it goes.
            remove_worktree(&self.toplevel, &path, ready)?;
        }
        let shown = path.display().to_string();
        self.git(
            &format!("check out {sha} as a git worktree"),
            &["worktree", "add", "--detach", "--quiet", &shown, sha],
        )?;
        if path.join(".gitmodules").is_file() {
            let out = git_output(
                &path,
                &["submodule", "update", "--init", "--recursive", "--quiet"],
            )?;
            if !out.status.success() {
                notes.push(format!(
                    "the submodules of {} are not checked out in its worktree ({}): git \
                     submodule update said: {}; a build that needs them fails",
                    &sha[..sha.len().min(12)],
                    shown,
                    git::stderr_text(&out)
                ));
            }
        }
        fs::write(ready, format!("{shown}\n")).map_err(|source| RevisionError::Io {
            what: "write",
            path: ready.display().to_string(),
            source,
        })
    }

    /// Where the worktree of `sha` goes: beside the repository, at its depth, else
    /// (a parent that is not writable) under the target directory, saying so.
    fn place(&self, sha: &str, notes: &mut Vec<String>) -> Result<PathBuf, RevisionError> {
        if let Some(path) = self.sibling(sha) {
            match fs::create_dir(&path) {
                Ok(()) => return Ok(path),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && path.is_dir() => {
                    return Ok(path)
                }
                Err(e) => notes.push(format!(
                    "the base's worktree cannot go beside the repository ({}: {e}): it is \
                     under the target directory, where relative paths that leave the \
                     repository (`path = \"../…\"`) resolve elsewhere than in the checkout",
                    path.display()
                )),
            }
        }
        let dir = self.target_dir.join(WORKTREES_DIR);
        fs::create_dir_all(&dir).map_err(|source| RevisionError::Io {
            what: "create the worktree directory",
            path: dir.display().to_string(),
            source,
        })?;
        Ok(dir.join(sha))
    }

    /// `<parent>/.<repo>.gpubench-ab-<12 hex>`; `None` for a repository at `/`.
    fn sibling(&self, sha: &str) -> Option<PathBuf> {
        let parent = self.toplevel.parent()?;
        let name = self.toplevel.file_name()?.to_string_lossy();
        Some(parent.join(format!(
            ".{name}{SIBLING_INFIX}{}",
            &sha[..sha.len().min(12)]
        )))
    }

    /// Whether `path` is where this `ab` puts worktrees.
    fn is_ours(&self, path: &Path) -> bool {
        let path = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
        let beside = self.toplevel.parent().is_some_and(|parent| {
            path.parent() == Some(parent)
                && self.toplevel.file_name().is_some_and(|name| {
                    path.file_name().is_some_and(|n| {
                        n.to_string_lossy()
                            .starts_with(&format!(".{}{SIBLING_INFIX}", name.to_string_lossy()))
                    })
                })
        });
        let under_target = self
            .target_dir
            .join(WORKTREES_DIR)
            .canonicalize()
            .is_ok_and(|dir| path.starts_with(dir));
        beside || under_target
    }

    /// Removes the worktrees a killed `ab` left (theirs, with no `ab` holding them),
    /// the files of the layout before worktrees were held, and git's records of
    /// worktrees whose directories are gone.
    pub(super) fn remove_stale(&self) -> Result<(), RevisionError> {
        self.git("prune stale worktrees", &["worktree", "prune"])?;
        let listed = self.git("list the worktrees", &["worktree", "list", "--porcelain"])?;
        let mut state: Option<PathBuf> = None;
        for block in listed.split("\n\n") {
            let mut path = None;
            let mut head = None;
            for line in block.lines() {
                if let Some(p) = line.strip_prefix("worktree ") {
                    path = Some(PathBuf::from(p));
                } else if let Some(h) = line.strip_prefix("HEAD ") {
                    head = Some(h.to_string());
                }
            }
            let (Some(path), Some(sha)) = (path, head) else {
                continue;
            };
            if !self.is_ours(&path) {
                continue;
            }
            let dir = match &state {
                Some(d) => d.clone(),
                None => {
                    let d = self.state_dir()?;
                    state = Some(d.clone());
                    d
                }
            };
            let lock = open_lock(&dir.join(format!("{sha}.lock")))?;
            if lock.try_lock().is_ok() {
                remove_worktree(&self.toplevel, &path, &dir.join(format!("{sha}.ready")))?;
            }
        }
        // The layout before: `<sha>.ready` markers and a `.lock` beside the worktrees.
        let old = self.target_dir.join(WORKTREES_DIR);
        if let Ok(entries) = fs::read_dir(&old) {
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                if name == ".lock" || name.ends_with(".ready") {
                    remove_file(&entry.path())?;
                }
            }
        }
        // Empty folders go too, so a finished `ab` leaves nothing there.
        let _ = fs::remove_dir(&old);
        if let Some(ab) = old.parent() {
            let _ = fs::remove_dir(ab);
        }
        Ok(())
    }

    /// Whether `path` is a worktree of this repository with `sha` checked out.
    fn is_checkout_of(&self, path: &Path, sha: &str) -> Result<bool, RevisionError> {
        if !path.join(".git").is_file() {
            return Ok(false);
        }
        let common = |dir: &Path| -> Result<Option<PathBuf>, RevisionError> {
            let out = git_output(
                dir,
                &["rev-parse", "--path-format=absolute", "--git-common-dir"],
            )?;
            Ok(out
                .status
                .success()
                .then(|| PathBuf::from(stdout_line(&out))))
        };
        let head = git_output(path, &["rev-parse", "--verify", "--quiet", "HEAD"])?;
        if !head.status.success() || stdout_line(&head) != sha {
            return Ok(false);
        }
        let theirs = common(path)?;
        Ok(theirs.is_some() && theirs == common(&self.toplevel)?)
    }
}

/// Opens (creating) the lock file at `path`.
fn open_lock(path: &Path) -> Result<File, RevisionError> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|source| RevisionError::Io {
            what: "open",
            path: path.display().to_string(),
            source,
        })
}

fn remove_file(path: &Path) -> Result<(), RevisionError> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(RevisionError::Io {
            what: "remove",
            path: path.display().to_string(),
            source: e,
        }),
        _ => Ok(()),
    }
}
