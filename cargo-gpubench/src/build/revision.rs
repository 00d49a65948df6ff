//! The two revisions `cargo gpubench ab` measures, found with the git CLI: head (the
//! working tree as it is, or `--head REV`) and base (`--base REV`, else the
//! merge-base of HEAD with the default branch), each commit checked out as a git
//! worktree of its own so its workspace can be read and built beside the working
//! tree.
//!
//! Worktrees live under `<target-dir>/gpubench/ab/worktrees/`:
//!
//! ```text
//! <full-sha>/          `git worktree add --detach` of that commit
//! <full-sha>.ready     written once the checkout is whole; without it the
//!                      directory is half-made (a killed `ab`) and is made again
//! .lock                held while a checkout is made, so two `ab`s do not race
//! ```
//!
//! `cargo clean` removes them with the rest of the target directory; the next `ab`
//! prunes git's records of them (`git worktree prune`).

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::Output;

use gpubench_record::paired::Role;
use thiserror::Error;

use crate::store::git::{self, stdout_line};

/// Where worktrees go, under the target directory.
pub const WORKTREES_DIR: &str = "gpubench/ab/worktrees";

/// The branches the merge-base is taken with when `--base` is absent, in the order
/// they are tried (after `origin/HEAD`'s target).
pub const DEFAULT_BRANCHES: [&str; 4] = [
    "refs/remotes/origin/main",
    "refs/remotes/origin/master",
    "refs/heads/main",
    "refs/heads/master",
];

/// Errors finding or checking out a revision.
#[derive(Debug, Error)]
pub enum RevisionError {
    /// git could not be started.
    #[error("failed to run git: {source}; `cargo gpubench ab` checks revisions out with git, so install it or put it on PATH")]
    Spawn {
        /// The cause.
        source: std::io::Error,
    },
    /// The workspace is not in a git repository.
    #[error("failed to find the revisions to measure: {root} is not inside a git repository; `cargo gpubench ab` compares commits, so run it in a git checkout")]
    NotARepository {
        /// The workspace root.
        root: String,
    },
    /// `--base` or `--head` names no commit.
    #[error("failed to resolve --{role} {rev}: git knows no commit by that name; pass a commit, branch or tag (`git log --oneline` lists commits)")]
    UnknownRevision {
        /// `base` or `head`.
        role: &'static str,
        /// What was given.
        rev: String,
    },
    /// HEAD is not a commit yet (a repository without commits).
    #[error("failed to find the base revision: the repository has no commit yet (HEAD is unborn); commit once, or pass --base REV")]
    NoHead,
    /// No default branch to take the merge-base with.
    #[error("failed to find the base revision: no default branch to take the merge-base with (tried {tried}); pass --base REV")]
    NoDefaultBranch {
        /// What was tried, comma-separated.
        tried: String,
    },
    /// HEAD and the default branch share no commit.
    #[error("failed to find the base revision: HEAD and {branch} have no common ancestor; pass --base REV")]
    NoMergeBase {
        /// The default branch.
        branch: String,
    },
    /// A git command failed.
    #[error("failed to {what}: git {args} said: {message}")]
    Git {
        /// What was being done.
        what: String,
        /// git's arguments.
        args: String,
        /// git's stderr.
        message: String,
    },
    /// A file or directory of the worktrees could not be made or read.
    #[error("failed to {what} {path}: {source}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// The path.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The workspace does not exist at that commit.
    #[error("failed to find the workspace at {label}: {manifest} does not exist in that commit; pass a --{role} REV that has it")]
    NoWorkspace {
        /// `base` or `head`.
        role: &'static str,
        /// The revision's short sha.
        label: String,
        /// The manifest looked for, relative to the repository.
        manifest: String,
    },
}

/// How a revision's files are at hand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Checkout {
    /// The working tree itself, uncommitted changes included.
    WorkingTree,
    /// A git worktree of a commit under the target directory.
    Worktree,
}

/// One side of `ab`: which code it is and where its workspace is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Revision {
    /// Base or head.
    pub role: Role,
    /// `working tree`, or the commit's short sha.
    pub label: String,
    /// The commit: the one checked out for a [`Checkout::Worktree`]; HEAD's for the
    /// working tree (`None` only when HEAD is unborn).
    pub commit: Option<String>,
    /// Whether the files differ from [`commit`](Self::commit): the working tree with
    /// uncommitted changes or untracked files (ignored ones aside). Always `false`
    /// for a worktree.
    pub dirty: bool,
    /// How it was chosen, for the user: `the working tree`, `--base v1.2`, `the
    /// merge-base of HEAD with origin/main`.
    pub chosen_by: String,
    /// Where the files are.
    pub checkout: Checkout,
    /// Its cargo workspace root (the working tree's, or the same directory inside
    /// the worktree).
    pub root: PathBuf,
}

impl Revision {
    /// A name that is stable for the same code and safe in a path or a package
    /// name: `working-tree`, or the first 12 hex digits of the commit.
    pub fn key(&self) -> String {
        match (self.checkout, &self.commit) {
            (Checkout::Worktree, Some(sha)) => sha[..sha.len().min(12)].to_string(),
            _ => "working-tree".to_string(),
        }
    }

    /// `base (1a2b3c4d)`, `head (working tree)`: how messages name it.
    pub fn describe(&self) -> String {
        format!("{} ({})", self.role.as_str(), self.label)
    }

    /// Its workspace's `Cargo.toml`.
    pub fn manifest_path(&self) -> PathBuf {
        self.root.join("Cargo.toml")
    }
}

/// Finds base and head of the workspace at `workspace_root` (see the module docs),
/// checking out each one that is a commit under `target_dir`; returns `(base,
/// head)`.
pub fn resolve(
    workspace_root: &Path,
    base: Option<&str>,
    head: Option<&str>,
    target_dir: &Path,
) -> Result<(Revision, Revision), RevisionError> {
    let repo = Repository::of(workspace_root)?;
    let head = match head {
        None => repo.working_tree(target_dir)?,
        Some(rev) => {
            let sha = repo.commit_of(rev, Role::Head)?;
            repo.at_commit(Role::Head, &sha, format!("--head {rev}"), target_dir)?
        }
    };
    let base = match base {
        Some(rev) => {
            let sha = repo.commit_of(rev, Role::Base)?;
            repo.at_commit(Role::Base, &sha, format!("--base {rev}"), target_dir)?
        }
        None => {
            let (sha, branch) = repo.merge_base_with_default_branch()?;
            repo.at_commit(
                Role::Base,
                &sha,
                format!("the merge-base of HEAD with {branch}"),
                target_dir,
            )?
        }
    };
    Ok((base, head))
}

/// The git repository a workspace is in.
struct Repository {
    /// `git rev-parse --show-toplevel`.
    toplevel: PathBuf,
    /// The workspace root relative to `toplevel`.
    workspace: PathBuf,
    /// The workspace root as given.
    workspace_root: PathBuf,
}

impl Repository {
    fn of(workspace_root: &Path) -> Result<Self, RevisionError> {
        let Ok(toplevel) = git::toplevel(workspace_root).map_err(spawn)? else {
            return Err(RevisionError::NotARepository {
                root: workspace_root.display().to_string(),
            });
        };
        let canonical = |p: &Path| {
            p.canonicalize().map_err(|source| RevisionError::Io {
                what: "resolve",
                path: p.display().to_string(),
                source,
            })
        };
        let workspace = canonical(workspace_root)?
            .strip_prefix(canonical(&toplevel)?)
            .map(Path::to_path_buf)
            .unwrap_or_default();
        Ok(Repository {
            toplevel,
            workspace,
            workspace_root: workspace_root.to_path_buf(),
        })
    }

    fn git(&self, what: &str, args: &[&str]) -> Result<String, RevisionError> {
        git_in(&self.toplevel, what, args)
    }

    /// The full sha of commit-ish `rev`.
    fn commit_of(&self, rev: &str, role: Role) -> Result<String, RevisionError> {
        self.verify(rev)?
            .ok_or_else(|| RevisionError::UnknownRevision {
                role: role.as_str(),
                rev: rev.to_string(),
            })
    }

    /// `rev`'s commit, or `None` when it names none.
    fn verify(&self, rev: &str) -> Result<Option<String>, RevisionError> {
        git::commit_of(&self.toplevel, rev).map_err(spawn)
    }

    /// The working tree; its worktrees under `target_dir` are not changes of it.
    fn working_tree(&self, target_dir: &Path) -> Result<Revision, RevisionError> {
        let commit = self.verify("HEAD")?;
        let mut args = vec![
            "status".to_string(),
            "--porcelain".to_string(),
            "--untracked-files=normal".to_string(),
        ];
        let ours = target_dir.join(WORKTREES_DIR);
        let inside = ours
            .canonicalize()
            .ok()
            .zip(self.toplevel.canonicalize().ok())
            .and_then(|(ours, top)| ours.strip_prefix(top).map(Path::to_path_buf).ok());
        if let Some(rel) = inside {
            args.extend(["--".to_string(), ".".to_string()]);
            args.push(format!(":(exclude){}", rel.display()));
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let status = self.git("read the working tree's status", &args)?;
        Ok(Revision {
            role: Role::Head,
            label: "working tree".to_string(),
            commit,
            dirty: !status.trim().is_empty(),
            chosen_by: "the working tree (uncommitted changes included)".to_string(),
            checkout: Checkout::WorkingTree,
            root: self.workspace_root.clone(),
        })
    }

    /// The merge-base of HEAD with the first default branch that exists, and how
    /// that branch is named to the user.
    fn merge_base_with_default_branch(&self) -> Result<(String, String), RevisionError> {
        if self.verify("HEAD")?.is_none() {
            return Err(RevisionError::NoHead);
        }
        let (reference, shown) =
            self.default_branch()?
                .ok_or_else(|| RevisionError::NoDefaultBranch {
                    tried: std::iter::once("origin/HEAD".to_string())
                        .chain(DEFAULT_BRANCHES.iter().map(|b| short_ref(b)))
                        .collect::<Vec<_>>()
                        .join(", "),
                })?;
        let out = git_output(&self.toplevel, &["merge-base", "HEAD", &reference])?;
        match out.status.code() {
            Some(0) => Ok((stdout_line(&out), shown)),
            // merge-base exits 1, saying nothing, when there is no common ancestor.
            Some(1) if out.stderr.is_empty() => Err(RevisionError::NoMergeBase { branch: shown }),
            _ => Err(git_failed(
                "find the merge-base",
                &["merge-base", "HEAD", &reference],
                &out,
            )),
        }
    }

    /// `origin/HEAD`'s target, else the first of [`DEFAULT_BRANCHES`] that is a
    /// commit: the full ref and its name for the user.
    fn default_branch(&self) -> Result<Option<(String, String)>, RevisionError> {
        let out = git_output(
            &self.toplevel,
            &["symbolic-ref", "--quiet", "refs/remotes/origin/HEAD"],
        )?;
        if out.status.success() {
            let target = stdout_line(&out);
            if self.verify(&target)?.is_some() {
                let shown = format!("{} (origin/HEAD)", short_ref(&target));
                return Ok(Some((target, shown)));
            }
        }
        for branch in DEFAULT_BRANCHES {
            if self.verify(branch)?.is_some() {
                return Ok(Some((branch.to_string(), short_ref(branch))));
            }
        }
        Ok(None)
    }

    /// The revision of commit `sha`, checked out as a worktree.
    fn at_commit(
        &self,
        role: Role,
        sha: &str,
        chosen_by: String,
        target_dir: &Path,
    ) -> Result<Revision, RevisionError> {
        let label = self.git("shorten a commit id", &["rev-parse", "--short", sha])?;
        let label = label.trim().to_string();
        let worktree = self.worktree(sha, &target_dir.join(WORKTREES_DIR))?;
        let root = worktree.join(&self.workspace);
        let manifest = root.join("Cargo.toml");
        if !manifest.is_file() {
            return Err(RevisionError::NoWorkspace {
                role: role.as_str(),
                label,
                manifest: self.workspace.join("Cargo.toml").display().to_string(),
            });
        }
        // A commit without a Cargo.lock (a repository that does not commit it)
        // resolves its dependencies as the working tree does.
        let lock = root.join("Cargo.lock");
        let ours = self.workspace_root.join("Cargo.lock");
        if !lock.exists() && ours.is_file() {
            fs::copy(&ours, &lock).map_err(|source| RevisionError::Io {
                what: "copy the working tree's Cargo.lock to",
                path: lock.display().to_string(),
                source,
            })?;
        }
        Ok(Revision {
            role,
            label,
            commit: Some(sha.to_string()),
            dirty: false,
            chosen_by,
            checkout: Checkout::Worktree,
            root,
        })
    }

    /// A worktree of `sha` under `dir`: the one there when it is whole and at that
    /// commit, else made anew.
    fn worktree(&self, sha: &str, dir: &Path) -> Result<PathBuf, RevisionError> {
        fs::create_dir_all(dir).map_err(|source| RevisionError::Io {
            what: "create the worktree directory",
            path: dir.display().to_string(),
            source,
        })?;
        let lock_path = dir.join(".lock");
        let lock = File::create(&lock_path).map_err(|source| RevisionError::Io {
            what: "create",
            path: lock_path.display().to_string(),
            source,
        })?;
        lock.lock().map_err(|source| RevisionError::Io {
            what: "lock",
            path: lock_path.display().to_string(),
            source,
        })?;
        // Records of worktrees whose directories are gone (`cargo clean`).
        self.git("prune stale worktrees", &["worktree", "prune"])?;

        let path = dir.join(sha);
        let ready = dir.join(format!("{sha}.ready"));
        if ready.is_file() && self.is_checkout_of(&path, sha)? {
            // Whole, at that commit: put back any tracked file that was changed.
            git_in(
                &path,
                "restore the worktree's files",
                &["reset", "--hard", "--quiet", sha],
            )?;
            return Ok(path);
        }
        remove_file(&ready)?;
        if path.exists() {
            // Half-made, moved or changed: git forgets it, then it goes.
            let shown = path.display().to_string();
            let _ = git_output(
                &self.toplevel,
                &["worktree", "remove", "--force", "--force", &shown],
            );
            if path.exists() {
                fs::remove_dir_all(&path).map_err(|source| RevisionError::Io {
                    what: "remove the half-made worktree",
                    path: shown,
                    source,
                })?;
            }
            self.git("prune stale worktrees", &["worktree", "prune"])?;
        }
        let shown = path.display().to_string();
        self.git(
            &format!("check out {sha} as a git worktree"),
            &["worktree", "add", "--detach", "--quiet", &shown, sha],
        )?;
        File::create(&ready).map_err(|source| RevisionError::Io {
            what: "create",
            path: ready.display().to_string(),
            source,
        })?;
        Ok(path)
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

/// `refs/remotes/origin/main` → `origin/main`; `refs/heads/main` → `main`.
fn short_ref(reference: &str) -> String {
    reference
        .strip_prefix("refs/remotes/")
        .or_else(|| reference.strip_prefix("refs/heads/"))
        .unwrap_or(reference)
        .to_string()
}

/// `git -C dir args`, its output whatever its exit status ([`git::output`]).
fn git_output(dir: &Path, args: &[&str]) -> Result<Output, RevisionError> {
    git::output(dir, args).map_err(spawn)
}

fn spawn(source: std::io::Error) -> RevisionError {
    RevisionError::Spawn { source }
}

/// `git -C dir args`, its stdout; a failure says `what` was being done.
fn git_in(dir: &Path, what: &str, args: &[&str]) -> Result<String, RevisionError> {
    let out = git_output(dir, args)?;
    if !out.status.success() {
        return Err(git_failed(what, args, &out));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn git_failed(what: &str, args: &[&str], out: &Output) -> RevisionError {
    let stderr = git::stderr_text(out);
    RevisionError::Git {
        what: what.to_string(),
        args: args.join(" "),
        message: if stderr.is_empty() {
            format!("nothing ({})", out.status)
        } else {
            stderr
        },
    }
}

#[cfg(test)]
mod tests;
