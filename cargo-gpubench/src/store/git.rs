//! The git processes that `history` ([`super::history`]) and `ab`
//! ([`crate::build::revision`]) start, made one way: run in a directory, on the
//! repository that directory is in. Each caller turns a failure into its own error,
//! with its own words.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// `git -C dir`. The repository is the one `dir` is in: git's variables that would
/// point elsewhere (as a hook's do) are removed, and the user's pager must not reach
/// a pipe.
pub(crate) fn command(dir: &Path) -> Command {
    let mut cmd = Command::new("git");
    cmd.arg("-C").arg(dir);
    cmd.env("GIT_PAGER", "cat");
    for var in [
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_INDEX_FILE",
        "GIT_COMMON_DIR",
        "GIT_OBJECT_DIRECTORY",
    ] {
        cmd.env_remove(var);
    }
    cmd
}

/// `git -C dir args`, its output whatever its exit status (stdin is empty); `Err`
/// only when git could not be started.
pub(crate) fn output(dir: &Path, args: &[&str]) -> std::io::Result<Output> {
    command(dir).args(args).output()
}

/// Its stdout as one line, trimmed.
pub(crate) fn stdout_line(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Its stderr, trimmed.
pub(crate) fn stderr_text(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).trim().to_string()
}

/// The arguments of [`toplevel`], for the message of a caller whose error names
/// them.
pub(crate) const TOPLEVEL_ARGS: [&str; 2] = ["rev-parse", "--show-toplevel"];

/// The root of the repository `dir` is in (`git rev-parse --show-toplevel`); the
/// inner `Err` is git's failed output (`dir` in no repository, or no directory).
pub(crate) fn toplevel(dir: &Path) -> std::io::Result<Result<PathBuf, Output>> {
    let out = output(dir, &TOPLEVEL_ARGS)?;
    Ok(if out.status.success() {
        Ok(PathBuf::from(stdout_line(&out)))
    } else {
        Err(out)
    })
}

/// The full id of the commit `rev` names (a branch, tag, commit or `HEAD`), `None`
/// when it names none.
pub(crate) fn commit_of(dir: &Path, rev: &str) -> std::io::Result<Option<String>> {
    let spec = format!("{rev}^{{commit}}");
    let out = output(
        dir,
        &[
            "rev-parse",
            "--verify",
            "--quiet",
            "--end-of-options",
            &spec,
        ],
    )?;
    Ok(out.status.success().then(|| stdout_line(&out)))
}
