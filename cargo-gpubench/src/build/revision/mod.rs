//! The two revisions `cargo gpubench ab` measures, found with the git CLI: head (the
//! working tree as it is, or `--head REV`) and base (`--base REV`, else the
//! merge-base of HEAD with the default branch), each commit checked out as a git
//! worktree of its own for as long as the `ab` lasts ([`Checkouts`]).
//!
//! A worktree goes beside the repository, at the same depth:
//!
//! ```text
//! <parent>/<repo>/                            the repository (its toplevel)
//! <parent>/.<repo>.gpubench-ab-<12 hex>/      `git worktree add --detach` of that commit
//! ```
//!
//! so a relative path that leaves the repository (`path = "../cargo-gpubench/…"`,
//! `include_str!("../../data")`) names in the worktree what it names in the
//! checkout, and cargo finds no foreign workspace above it (the target directory may
//! lie in one). Where the parent is not writable, the worktree goes under
//! `<target-dir>/gpubench/ab/worktrees/<sha>/` instead, and `ab` says that paths
//! leaving the repository then resolve elsewhere.
//!
//! Who uses a worktree is kept in the repository's git directory:
//!
//! ```text
//! <git-common-dir>/gpubench-ab/<sha>.lock    shared by every `ab` using the worktree,
//!                                            exclusive while one makes or removes it
//! <git-common-dir>/gpubench-ab/<sha>.ready   the worktree's path, once it is whole
//! ```
//!
//! The last `ab` to let go of a worktree removes it, on success, failure and Ctrl-C
//! alike ([`Checkouts`] does it when dropped); one a killed `ab` left (its lock free)
//! is removed by the next `ab`, and git's records of worktrees whose directories are
//! gone are pruned.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;

use gpubench_record::paired::Role;

use crate::store::git::{self, stdout_line};

mod error;
mod worktree;

pub use error::RevisionError;
pub use worktree::Checkouts;

/// Where worktrees go, under the target directory, when the repository's parent
/// directory is not writable.
pub const WORKTREES_DIR: &str = "gpubench/ab/worktrees";

/// The folder of the repository's git directory that says who uses which worktree.
pub const STATE_DIR: &str = "gpubench-ab";

/// The branches the merge-base is taken with when `--base` is absent, in the order
/// they are tried (after `origin/HEAD`'s target).
pub const DEFAULT_BRANCHES: [&str; 4] = [
    "refs/remotes/origin/main",
    "refs/remotes/origin/master",
    "refs/heads/main",
    "refs/heads/master",
];

/// How a revision's files are at hand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Checkout {
    /// The working tree itself, uncommitted changes included.
    WorkingTree,
    /// A git worktree of a commit (module docs).
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
    /// Where its benchmark processes run: the directory `ab` was started in, or the
    /// same directory inside the worktree (its workspace root when that directory
    /// is not in the commit), so a file read by a relative path is its own.
    pub run_dir: PathBuf,
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

/// What [`resolve`] found.
#[derive(Debug)]
pub enum Resolution {
    /// Two revisions to compare, checked out.
    Compare(Box<Resolved>),
    /// Base and head are the same code (one commit, and a clean working tree):
    /// nothing to compare, and nothing was checked out.
    Identical {
        /// The commit both are.
        commit: String,
        /// How the base was chosen ([`Revision::chosen_by`]).
        base_chosen_by: String,
        /// How the head was chosen.
        head_chosen_by: String,
    },
}

/// Base and head, and the worktrees they hold.
#[derive(Debug)]
pub struct Resolved {
    /// The revision judged against.
    pub base: Revision,
    /// The revision judged.
    pub head: Revision,
    /// The worktrees, removed when this is dropped or released.
    pub checkouts: Checkouts,
    /// What the user should know about the checkouts (where a worktree went when it
    /// could not go beside the repository, submodules that could not be checked
    /// out).
    pub notes: Vec<String>,
}

/// Finds base and head of the workspace at `workspace_root` (see the module docs),
/// checking out each one that is a commit; `cwd` is where `ab` runs, mapped into
/// each worktree for its processes. Worktrees a killed `ab` left are removed first.
pub fn resolve(
    workspace_root: &Path,
    cwd: &Path,
    base: Option<&str>,
    head: Option<&str>,
    target_dir: &Path,
) -> Result<Resolution, RevisionError> {
    let repo = Repository::of(workspace_root, cwd, target_dir)?;
    // Which commits, before anything is checked out.
    let head_commit = match head {
        None => None,
        Some(rev) => Some((repo.commit_of(rev, Role::Head)?, format!("--head {rev}"))),
    };
    let (base_sha, base_chosen_by) = match base {
        Some(rev) => (repo.commit_of(rev, Role::Base)?, format!("--base {rev}")),
        None => {
            let (sha, branch) = repo.merge_base_with_default_branch()?;
            (sha, format!("the merge-base of HEAD with {branch}"))
        }
    };
    let working_tree = match &head_commit {
        None => Some(repo.working_tree()?),
        Some(_) => None,
    };
    let same = match (&head_commit, &working_tree) {
        (Some((sha, _)), _) => *sha == base_sha,
        (None, Some(w)) => !w.dirty && w.commit.as_deref() == Some(base_sha.as_str()),
        (None, None) => false,
    };
    if same {
        return Ok(Resolution::Identical {
            commit: base_sha,
            base_chosen_by,
            head_chosen_by: head_commit
                .map(|(_, by)| by)
                .unwrap_or_else(|| working_tree_chosen_by().to_string()),
        });
    }

    repo.remove_stale()?;
    let mut checkouts = Checkouts::new(repo.toplevel.clone());
    let mut notes = Vec::new();
    let head = match (working_tree, head_commit) {
        (Some(w), _) => w,
        (None, Some((sha, by))) => {
            repo.at_commit(Role::Head, &sha, by, &mut checkouts, &mut notes)?
        }
        (None, None) => unreachable!("the head is the working tree or a commit"),
    };
    let base = repo.at_commit(
        Role::Base,
        &base_sha,
        base_chosen_by,
        &mut checkouts,
        &mut notes,
    )?;
    Ok(Resolution::Compare(Box::new(Resolved {
        base,
        head,
        checkouts,
        notes,
    })))
}

fn working_tree_chosen_by() -> &'static str {
    "the working tree (uncommitted changes included)"
}

/// The git repository a workspace is in.
struct Repository {
    /// `git rev-parse --show-toplevel`, canonical.
    toplevel: PathBuf,
    /// The workspace root relative to `toplevel`.
    workspace: PathBuf,
    /// The workspace root as given.
    workspace_root: PathBuf,
    /// Where `ab` runs, relative to `toplevel` (`None` outside it).
    cwd: Option<PathBuf>,
    /// Where `ab` runs, as given.
    cwd_given: PathBuf,
    /// The target directory.
    target_dir: PathBuf,
}

impl Repository {
    fn of(workspace_root: &Path, cwd: &Path, target_dir: &Path) -> Result<Self, RevisionError> {
        let Ok(toplevel) = git::toplevel(workspace_root).map_err(spawn)? else {
            return Err(RevisionError::NotARepository {
                root: workspace_root.display().to_string(),
            });
        };
        let toplevel = canonical(&toplevel)?;
        let workspace = canonical(workspace_root)?
            .strip_prefix(&toplevel)
            .map(Path::to_path_buf)
            .unwrap_or_default();
        let cwd_rel = cwd
            .canonicalize()
            .ok()
            .and_then(|c| c.strip_prefix(&toplevel).map(Path::to_path_buf).ok());
        Ok(Repository {
            toplevel,
            workspace,
            workspace_root: workspace_root.to_path_buf(),
            cwd: cwd_rel,
            cwd_given: cwd.to_path_buf(),
            target_dir: target_dir.to_path_buf(),
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

    /// The working tree; worktrees `ab` made under the target directory are not
    /// changes of it.
    fn working_tree(&self) -> Result<Revision, RevisionError> {
        let commit = self.verify("HEAD")?;
        let mut args = vec![
            "status".to_string(),
            "--porcelain".to_string(),
            "--untracked-files=normal".to_string(),
        ];
        let inside = self
            .target_dir
            .join(WORKTREES_DIR)
            .canonicalize()
            .ok()
            .and_then(|ours| {
                ours.strip_prefix(&self.toplevel)
                    .map(Path::to_path_buf)
                    .ok()
            });
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
            chosen_by: working_tree_chosen_by().to_string(),
            checkout: Checkout::WorkingTree,
            root: self.workspace_root.clone(),
            run_dir: self.cwd_given.clone(),
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
            Some(1) if out.stderr.is_empty() => Err(RevisionError::NoMergeBase {
                branch: shown,
                hint: self.no_merge_base_hint()?,
            }),
            _ => Err(git_failed(
                "find the merge-base",
                &["merge-base", "HEAD", &reference],
                &out,
            )),
        }
    }

    /// What to do when there is no merge-base: in a shallow clone the common
    /// ancestor was not fetched.
    fn no_merge_base_hint(&self) -> Result<String, RevisionError> {
        let shallow = self.git(
            "ask whether the clone is shallow",
            &["rev-parse", "--is-shallow-repository"],
        )?;
        Ok(if shallow.trim() == "true" {
            " in the fetched history: this clone is shallow, so their common ancestor \
             may not have been fetched; fetch the whole history (`git fetch --unshallow`, \
             or `fetch-depth: 0` for actions/checkout), or pass --base REV"
                .to_string()
        } else {
            "; pass --base REV".to_string()
        })
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

    /// The revision of commit `sha`, checked out as a worktree held by `checkouts`.
    fn at_commit(
        &self,
        role: Role,
        sha: &str,
        chosen_by: String,
        checkouts: &mut Checkouts,
        notes: &mut Vec<String>,
    ) -> Result<Revision, RevisionError> {
        let label = self.git("shorten a commit id", &["rev-parse", "--short", sha])?;
        let label = label.trim().to_string();
        let worktree = checkouts.hold(self, sha, notes)?;
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
        let run_dir = self
            .cwd
            .as_ref()
            .map(|rel| worktree.join(rel))
            .filter(|d| d.is_dir())
            .unwrap_or_else(|| root.clone());
        Ok(Revision {
            role,
            label,
            commit: Some(sha.to_string()),
            dirty: false,
            chosen_by,
            checkout: Checkout::Worktree,
            root,
            run_dir,
        })
    }
}

fn canonical(p: &Path) -> Result<PathBuf, RevisionError> {
    p.canonicalize().map_err(|source| RevisionError::Io {
        what: "resolve",
        path: p.display().to_string(),
        source,
    })
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
