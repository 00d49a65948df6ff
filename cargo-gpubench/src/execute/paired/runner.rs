//! Starting paired processes from `cargo gpubench ab`: this binary again as
//! `__paired`, with the libtorch environment of a run and a time limit, its two
//! records classified as a run's one is ([`crate::execute::runner::classify`]), and
//! listing a library's benchmarks the same way.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::AtomicBool;

use gpubench_record::id::file_stem_for_id;
use gpubench_record::paired::{PairedBenchmark, Role};
use gpubench_record::record::RawRecord;
use thiserror::Error;

use super::process::{EXIT_UNPAIRABLE, UNPAIRABLE_FILE};
use crate::execute::paired::args::PAIRED_SUBCOMMAND;
use crate::execute::process::{self, ChildEnv, Ending, Finished};
use crate::execute::runner::{classify, now_rfc3339, Outcome, RunOptions};

/// Why a paired process could not be used.
#[derive(Debug, Error)]
pub enum PairedRunError {
    /// This binary could not be found or started.
    #[error("failed to start a paired process ({exe}): {source}")]
    Spawn {
        /// The binary.
        exe: String,
        /// The cause.
        source: std::io::Error,
    },
    /// A library cannot be paired (the driver said so before measuring anything).
    #[error("the libraries cannot be paired in one process: {why}")]
    Unpairable {
        /// What the driver said.
        why: String,
    },
    /// A library's listing could not be read.
    #[error("failed to list the benchmarks of {library}: {why}")]
    List {
        /// The library.
        library: String,
        /// What went wrong.
        why: String,
    },
}

/// The two records one paired process left.
#[derive(Debug)]
pub struct PairedOutcome {
    /// The base side's; `None` for a benchmark the head measured alone.
    pub base: Option<Outcome>,
    /// The head side's.
    pub head: Outcome,
    /// How the process ended.
    pub finished: Finished,
}

/// This binary, to start as `__paired`: on Linux the running executable itself
/// (`/proc/self/exe`, which a forked child execs as its parent's file), so every
/// process of an `ab` runs the same code even when the file was replaced while it
/// ran (a `cargo install` or a build of the target directory: the path then names
/// the new file, or nothing).
fn this_binary() -> Result<PathBuf, PairedRunError> {
    let running = Path::new("/proc/self/exe");
    if running.exists() {
        return Ok(running.to_path_buf());
    }
    std::env::current_exe().map_err(|source| PairedRunError::Spawn {
        exe: "cargo-gpubench".into(),
        source,
    })
}

/// The benchmarks `library` offers, listed in a process of its own (loading it runs
/// its initialisers, which must not run in this one).
pub fn list(
    library: &Path,
    env: &ChildEnv,
    opts: &RunOptions,
    stop: &AtomicBool,
) -> Result<Vec<PairedBenchmark>, PairedRunError> {
    let exe = this_binary()?;
    let mut cmd = Command::new(&exe);
    cmd.arg(PAIRED_SUBCOMMAND).arg("--list").arg(library);
    env.apply(&mut cmd);
    let finished =
        process::run(cmd, opts.timeout, stop, 4 << 20).map_err(|source| PairedRunError::Spawn {
            exe: exe.display().to_string(),
            source,
        })?;
    let fail = |why: String| PairedRunError::List {
        library: library.display().to_string(),
        why,
    };
    match finished.ending {
        Ending::Exited(0) => serde_json::from_str(finished.stdout_tail.trim())
            .map_err(|e| fail(format!("its answer cannot be read: {e}"))),
        Ending::Exited(EXIT_UNPAIRABLE) => Err(PairedRunError::Unpairable {
            why: last_error(&finished.stderr_tail),
        }),
        other => Err(fail(format!(
            "the listing process {}: {}",
            ending_words(other),
            last_error(&finished.stderr_tail)
        ))),
    }
}

/// One process of one benchmark in a process of this binary as `__paired`: where its
/// records go and how it runs.
pub struct Process<'a> {
    /// The benchmark id.
    pub id: &'a str,
    /// Which process of the benchmark this is (1 for the first).
    pub process: u32,
    /// How to run and measure.
    pub opts: &'a RunOptions,
    /// The libtorch environment.
    pub env: &'a ChildEnv,
    /// Where the records go; must be empty.
    pub record_dir: &'a Path,
    /// The directories the base's and the head's code run in (each revision's
    /// checkout).
    pub dirs: [&'a Path; 2],
    /// Ctrl-C.
    pub stop: &'a AtomicBool,
}

impl Process<'_> {
    /// Runs both libraries in one paired process (the head alone without `base`) and
    /// classifies each side's record.
    pub fn run(&self, base: Option<&Path>, head: &Path) -> Result<PairedOutcome, PairedRunError> {
        let mut libraries: Vec<(&str, &Path)> = base.map(|b| ("--base", b)).into_iter().collect();
        libraries.push(("--head", head));
        let finished = self.start(&libraries, None)?;
        Ok(PairedOutcome {
            base: base.map(|_| self.side(Role::Base, &finished)),
            head: self.side(Role::Head, &finished),
            finished,
        })
    }

    /// Runs one side's `library` alone, in a process of its own (a benchmark whose
    /// pairing failed), and classifies its record.
    pub fn run_alone(
        &self,
        role: Role,
        library: &Path,
    ) -> Result<(Outcome, Finished), PairedRunError> {
        let flag = match role {
            Role::Base => "--base",
            Role::Head => "--head",
        };
        let finished = self.start(&[(flag, library)], Some(role))?;
        Ok((self.side(role, &finished), finished))
    }

    /// Starts this binary as `__paired` with `libraries` (flag and path) and waits.
    fn start(
        &self,
        libraries: &[(&str, &Path)],
        alone: Option<Role>,
    ) -> Result<Finished, PairedRunError> {
        let exe = this_binary()?;
        let mut cmd = Command::new(&exe);
        cmd.arg(PAIRED_SUBCOMMAND);
        for (flag, path) in libraries {
            cmd.arg(flag).arg(path);
        }
        if let Some(role) = alone {
            cmd.args(["--alone", role.as_str()]);
        }
        cmd.args(["--id", self.id, "--round", &self.process.to_string()])
            .arg("--config")
            .arg(serde_json::to_string(&self.opts.config()).expect("plain data serialises"))
            .arg("--record-dir")
            .arg(self.record_dir)
            .arg("--base-dir")
            .arg(self.dirs[0])
            .arg("--head-dir")
            .arg(self.dirs[1]);
        if let Some(device) = &self.opts.device {
            cmd.args(["--device", device]);
        }
        self.env.apply(&mut cmd);
        crate::console::detail(format_args!(
            "paired process {} of {}: {}",
            self.process,
            self.id,
            process::shell_line(&cmd)
        ));
        let finished = process::run(cmd, self.opts.timeout, self.stop, process::TAIL_BYTES)
            .map_err(|source| PairedRunError::Spawn {
                exe: exe.display().to_string(),
                source,
            })?;
        // The driver's own word, not the exit code: the benchmark's code runs in
        // that process and may exit with any code.
        if let Ok(why) = std::fs::read_to_string(self.record_dir.join(UNPAIRABLE_FILE)) {
            return Err(PairedRunError::Unpairable { why });
        }
        Ok(finished)
    }

    /// `role`'s record from a process that `finished`, classified as a run's.
    fn side(&self, role: Role, finished: &Finished) -> Outcome {
        let path = self
            .record_dir
            .join(role.as_str())
            .join(format!("{}.json", file_stem_for_id(self.id)));
        let written = path
            .exists()
            .then(|| RawRecord::read(&path).map_err(|e| e.to_string()));
        // Both sides share the process: a side that wrote a passed record keeps
        // it even when the process then ended badly because of the other.
        let finished_for_side = match &written {
            Some(Ok(r)) if r.passed() && !matches!(finished.ending, Ending::TimedOut) => Finished {
                ending: Ending::Exited(0),
                ..finished.clone()
            },
            _ => finished.clone(),
        };
        classify(
            self.id,
            &finished_for_side,
            written,
            self.opts,
            now_rfc3339(),
        )
    }
}

/// The last `error: …` line of a child's stderr, or its last line.
fn last_error(stderr: &str) -> String {
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    lines
        .iter()
        .rev()
        .find_map(|l| l.strip_prefix("error: "))
        .or_else(|| lines.last().copied())
        .unwrap_or("no output")
        .to_string()
}

fn ending_words(ending: Ending) -> String {
    match ending {
        Ending::Exited(code) => format!("exited with code {code}"),
        Ending::Signaled(sig) => format!("was killed by signal {sig}"),
        Ending::TimedOut => "timed out".into(),
        Ending::Interrupted => "was interrupted".into(),
    }
}
