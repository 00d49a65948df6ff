//! Asking a bench executable which benchmarks it holds, through libtest's
//! `--list --format terse` protocol (one `<id>: benchmark` line each).

use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use gpubench_record::protocol;
use thiserror::Error;

use crate::build::compile::BenchExecutable;
use crate::execute::process::{self, ChildEnv, Ending};
use crate::execute::select::Benchmark;

/// Errors listing an executable's benchmarks.
#[derive(Debug, Error)]
pub(crate) enum ListError {
    /// The executable could not be started.
    #[error("failed to run {exe} --list: {source}")]
    Spawn {
        /// The executable.
        exe: String,
        /// The cause.
        source: std::io::Error,
    },
    /// It did not list its benchmarks.
    #[error("failed to list the benchmarks of {exe}: {how}{}", stderr_section(.stderr))]
    Failed {
        /// The executable.
        exe: String,
        /// How it ended.
        how: String,
        /// The tail of its stderr.
        stderr: String,
        /// Its exit code, when it exited.
        code: Option<i32>,
    },
}

fn stderr_section(stderr: &str) -> String {
    let s = stderr.trim_end();
    if s.is_empty() {
        String::new()
    } else {
        format!("\n{s}")
    }
}

/// A benchmark as an executable lists it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct ListedBenchmark {
    /// Its id.
    pub id: String,
    /// Whether it is marked ignored.
    pub ignored: bool,
}

/// Lists the benchmarks of `exe` for `device` (the `--device` its benchmarks will
/// run with; the harness's default when `None`), ignored ones marked (two calls: all,
/// then the ignored ones alone). The list is sorted by id. The device is passed
/// because a benchmark's arguments may depend on it (`gpubench_core::bench_device`).
pub(crate) fn list(
    exe: &Path,
    device: Option<&str>,
    env: &ChildEnv,
    timeout: Duration,
    stop: &AtomicBool,
) -> Result<Listing, ListError> {
    let Some(all) = list_ids(exe, device, env, timeout, stop, false)? else {
        return Ok(Listing::NotGpubench);
    };
    let ignored = list_ids(exe, device, env, timeout, stop, true)?.unwrap_or_default();
    let mut out: Vec<ListedBenchmark> = all
        .into_iter()
        .map(|id| ListedBenchmark {
            ignored: ignored.contains(&id),
            id,
        })
        .collect();
    out.sort();
    out.dedup();
    Ok(Listing::Gpubench(out))
}

/// What listing an executable found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Listing {
    /// A gpubench harness and its benchmarks.
    Gpubench(Vec<ListedBenchmark>),
    /// An executable that did not answer the handshake: a criterion, libtest or other
    /// bench in a package that also depends on gpubench-core. It is not run.
    NotGpubench,
}

fn list_ids(
    exe: &Path,
    device: Option<&str>,
    env: &ChildEnv,
    timeout: Duration,
    stop: &AtomicBool,
    ignored: bool,
) -> Result<Option<Vec<String>>, ListError> {
    let mut cmd = Command::new(exe);
    cmd.args(["--list", "--format", "terse"]);
    if ignored {
        cmd.arg("--ignored");
    }
    env.apply(&mut cmd);
    // In the environment, which a bench that is not a gpubench harness (criterion,
    // libtest) ignores, where it would refuse an argument it does not know.
    if let Some(device) = device {
        cmd.env(protocol::DEVICE_VAR, device);
    }
    cmd.env(protocol::HANDSHAKE_VAR, "1");
    // The whole listing must be kept, not a tail: allow a generous size.
    let finished =
        process::run(cmd, timeout, stop, 16 << 20).map_err(|source| ListError::Spawn {
            exe: exe.display().to_string(),
            source,
        })?;
    let code = match finished.ending {
        Ending::Exited(code) => Some(code),
        _ => None,
    };
    let how = match finished.ending {
        // An executable that lists without the handshake is not a gpubench harness
        // (criterion answers `--list --format terse` too). One that fails stays an
        // error: a gpubench harness that cannot load libtorch never gets to say it.
        Ending::Exited(0) if !protocol::is_handshake(&finished.stdout_tail) => return Ok(None),
        Ending::Exited(0) => return Ok(Some(parse_terse(&finished.stdout_tail))),
        Ending::Exited(code) => format!("exit code {code}"),
        Ending::Signaled(sig) => match process::signal_name(sig) {
            Some(name) => format!("killed by {name}"),
            None => format!("killed by signal {sig}"),
        },
        Ending::TimedOut => format!("no answer within {} s", timeout.as_secs_f64()),
        Ending::Interrupted => "interrupted".to_string(),
    };
    let mut stderr = finished.stderr_tail;
    if stderr.len() > process::TAIL_BYTES {
        let mut cut = stderr.len() - process::TAIL_BYTES;
        while !stderr.is_char_boundary(cut) {
            cut += 1;
        }
        stderr.drain(..cut);
    }
    Err(ListError::Failed {
        exe: exe.display().to_string(),
        how,
        stderr,
        code,
    })
}

/// The ids in libtest's terse listing: lines `<id>: benchmark`. Tests (`: test`) and
/// anything else are skipped.
pub(crate) fn parse_terse(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .filter_map(|line| line.strip_suffix(": benchmark"))
        .filter(|id| !id.is_empty())
        .map(str::to_string)
        .collect()
}

/// Lists the benchmarks of `executables` for `device` (see [`list`]),
/// skipping (with a note) those that are not gpubench harnesses. Returns the
/// benchmarks and the harnesses; `None` when interrupted.
pub(crate) fn list_all(
    executables: &[BenchExecutable],
    device: Option<&str>,
    env: &ChildEnv,
    timeout: std::time::Duration,
    stop: &AtomicBool,
) -> anyhow::Result<Option<(Vec<Benchmark>, Vec<BenchExecutable>)>> {
    let mut all = Vec::new();
    let mut harnesses = Vec::new();
    for exe in executables {
        let listed = match list(&exe.path, device, env, timeout, stop)? {
            Listing::Gpubench(listed) => listed,
            Listing::NotGpubench => {
                crate::console::note(format_args!(
                    "skipped {}: not a gpubench harness (no handshake on --list; a criterion or libtest bench beside gpubench ones is left to `cargo bench`)",
                    exe.target
                ));
                continue;
            }
        };
        harnesses.push(exe.clone());
        all.extend(listed.into_iter().map(|b| Benchmark {
            package: exe.package.clone(),
            target: exe.target.clone(),
            exe: exe.path.clone(),
            id: b.id,
            ignored: b.ignored,
        }));
        if stop.load(Ordering::SeqCst) {
            return Ok(None);
        }
    }
    Ok(Some((all, harnesses)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terse_listing_keeps_benchmarks_only() {
        let out = "matmul/4096: benchmark\nconv: benchmark\nsome_test: test\n\nid: with: colons: benchmark\n";
        assert_eq!(
            parse_terse(out),
            ["matmul/4096", "conv", "id: with: colons"]
        );
    }

    /// Writes the shell script `script` to `exe`, executable.
    #[cfg(unix)]
    fn fake_bench(exe: &Path, script: &str) {
        use std::os::unix::fs::PermissionsExt;
        std::fs::write(exe, script).unwrap();
        std::fs::set_permissions(exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    /// Lists `exe` for `device` with an empty environment and a 10 s timeout.
    #[cfg(unix)]
    fn list_for(exe: &Path, device: Option<&str>) -> Result<Listing, ListError> {
        list(
            exe,
            device,
            &ChildEnv::default(),
            Duration::from_secs(10),
            &AtomicBool::new(false),
        )
    }

    #[cfg(unix)]
    #[test]
    fn listing_marks_ignored_benchmarks_and_reports_failures() {
        let tmp = tempfile::tempdir().unwrap();
        let exe = tmp.path().join("bench");
        fake_bench(
            &exe,
            "#!/bin/sh\n\
             [ -n \"$GPUBENCH_HANDSHAKE\" ] && echo 'gpubench-harness protocol 1'\n\
             case \"$*\" in\n\
             *--ignored*) echo 'slow: benchmark' ;;\n\
             *) printf 'b: benchmark\\nslow: benchmark\\na: benchmark\\n' ;;\n\
             esac\n",
        );
        let Listing::Gpubench(listed) = list_for(&exe, None).unwrap() else {
            panic!("the handshake was not seen");
        };
        let got: Vec<(&str, bool)> = listed.iter().map(|b| (b.id.as_str(), b.ignored)).collect();
        assert_eq!(got, [("a", false), ("b", false), ("slow", true)]);

        // Listing without the handshake, as criterion does: not a gpubench harness.
        std::fs::write(&exe, "#!/bin/sh\necho 'criterion_bench: benchmark'\n").unwrap();
        assert_eq!(list_for(&exe, None).unwrap(), Listing::NotGpubench);

        std::fs::write(
            &exe,
            "#!/bin/sh\necho 'libtorch_cpu.so: cannot open' >&2\nexit 127\n",
        )
        .unwrap();
        let err = list_for(&exe, None).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("exit code 127"), "{msg}");
        assert!(msg.contains("libtorch_cpu.so: cannot open"), "{msg}");
    }

    #[cfg(unix)]
    #[test]
    fn the_listing_asks_for_the_device_the_benchmarks_will_run_on() {
        let tmp = tempfile::tempdir().unwrap();
        let exe = tmp.path().join("bench");
        // A sweep sized for its device, as `gpubench_core::bench_device` allows.
        fake_bench(
            &exe,
            "#!/bin/sh\n\
             [ -n \"$GPUBENCH_HANDSHAKE\" ] && echo 'gpubench-harness protocol 1'\n\
             case \"$*\" in\n\
             *--ignored*) ;;\n\
             *) [ \"$GPUBENCH_DEVICE\" = cpu ] && echo 'matmul/256: benchmark' \
                  || echo 'matmul/4096: benchmark' ;;\n\
             esac\n",
        );
        let ids = |device| match list_for(&exe, device).unwrap() {
            Listing::Gpubench(l) => l.into_iter().map(|b| b.id).collect::<Vec<_>>(),
            Listing::NotGpubench => panic!("the handshake was not seen"),
        };
        assert_eq!(ids(Some("cpu")), ["matmul/256"]);
        assert_eq!(ids(None), ["matmul/4096"]);
    }
}
