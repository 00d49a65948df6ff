//! What can go wrong finding or checking out the revisions `ab` measures.

use thiserror::Error;

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
    #[error("failed to find the base revision: HEAD and {branch} have no common ancestor{hint}")]
    NoMergeBase {
        /// The default branch.
        branch: String,
        /// What to do: fetch the history of a shallow clone, or pass --base.
        hint: String,
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
