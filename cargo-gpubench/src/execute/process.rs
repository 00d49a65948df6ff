//! Running a bench executable as a child process: the environment it gets, its own
//! process group, a time limit, a stop flag (Ctrl-C), and the tails of its output.
//!
//! The child leads a process group of its own so that a timeout or Ctrl-C kills
//! whatever it started too, and so the terminal's Ctrl-C reaches only this process,
//! which then decides what to keep. On Linux it also gets SIGTERM when this process
//! dies, however it dies (`kill -9` included): the harness then kills its group, so
//! no benchmark outlives the run that started it.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use gpubench_record::protocol::{PROCESS_VAR, RECORD_DIR_VAR};

use crate::build::libtorch::{self, Libtorch};
use crate::exit_code::Exit;

/// Bytes of a child's output kept: enough for a panic message and a backtrace's top.
pub(crate) const TAIL_BYTES: usize = 4096;

/// How often a running child is checked for its time limit and the stop flag.
const POLL: Duration = Duration::from_millis(25);

/// How long output readers may take to finish after the child is gone.
const DRAIN: Duration = Duration::from_secs(2);

/// Environment changes for bench processes.
#[derive(Debug, Clone, Default)]
pub struct ChildEnv {
    /// Variables set.
    pub set: Vec<(OsString, OsString)>,
    /// Variables removed.
    pub remove: Vec<OsString>,
    /// The directory it runs in, when not this process's (`ab` runs each revision
    /// in its own checkout).
    pub dir: Option<PathBuf>,
}

impl ChildEnv {
    /// Applies the changes to `cmd`.
    pub fn apply(&self, cmd: &mut Command) {
        if let Some(dir) = &self.dir {
            cmd.current_dir(dir);
        }
        for k in &self.remove {
            cmd.env_remove(k);
        }
        for (k, v) in &self.set {
            cmd.env(k, v);
        }
    }
}

/// How a child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// It exited with this code.
    Exited(i32),
    /// A signal killed it.
    Signaled(i32),
    /// It ran past its time limit and was killed.
    TimedOut,
    /// The stop flag was raised and it was killed.
    Interrupted,
}

/// A finished child.
#[derive(Debug, Clone)]
pub struct Finished {
    /// How it ended.
    pub ending: Ending,
    /// The last [`TAIL_BYTES`] of its stdout.
    pub stdout_tail: String,
    /// The last [`TAIL_BYTES`] of its stderr.
    pub stderr_tail: String,
    /// Wall time from spawn to exit.
    pub elapsed: Duration,
}

/// Makes the child receive SIGTERM when the thread that spawned it ends, which
/// [`run`]'s thread does only after the child is gone, or when this process dies.
#[cfg(target_os = "linux")]
fn die_with_parent(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: getpid is async-signal-safe and called before the fork.
    let parent = unsafe { libc::getpid() };
    // SAFETY: between fork and exec the closure only makes async-signal-safe calls
    // (prctl, getppid) and allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM as libc::c_ulong) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The parent may have died before the prctl: then nobody would tell.
            if libc::getppid() != parent {
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
}

/// `cmd` as a shell line a person can read and paste: the variables it sets, the
/// program and its arguments, each quoted when it needs to be (variables it removes
/// are left out).
pub(crate) fn shell_line(cmd: &Command) -> String {
    let quote = |s: &std::ffi::OsStr| {
        let s = s.to_string_lossy();
        let plain = !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "_-./,:=+@%".contains(c));
        if plain {
            s.into_owned()
        } else {
            format!("'{}'", s.replace('\'', r"'\''"))
        }
    };
    let mut words: Vec<String> = cmd
        .get_envs()
        .filter_map(|(k, v)| Some(format!("{}={}", k.to_string_lossy(), quote(v?))))
        .collect();
    words.push(quote(cmd.get_program()));
    words.extend(cmd.get_args().map(quote));
    words.join(" ")
}

/// Runs `cmd` to completion, killing its process group past `timeout` or once `stop`
/// is raised. Stdin is closed; stdout and stderr are captured (their tails kept).
pub(crate) fn run(
    mut cmd: Command,
    timeout: Duration,
    stop: &AtomicBool,
    tail_bytes: usize,
) -> std::io::Result<Finished> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
    }
    #[cfg(target_os = "linux")]
    die_with_parent(&mut cmd);
    let start = Instant::now();
    let mut child = cmd.spawn()?;
    let stdout = spawn_tail_reader(child.stdout.take().expect("piped"), tail_bytes);
    let stderr = spawn_tail_reader(child.stderr.take().expect("piped"), tail_bytes);

    let deadline = start + timeout;
    let killed = loop {
        if has_exited(&mut child)? {
            break None;
        }
        if stop.load(Ordering::SeqCst) {
            break Some(Ending::Interrupted);
        }
        if Instant::now() >= deadline {
            break Some(Ending::TimedOut);
        }
        thread::sleep(POLL);
    };
    // Killed on purpose, or exited: either way nothing the benchmark started may
    // outlive it (or hold its pipes open). The leader is not reaped yet, so its
    // group id cannot have been reused.
    kill_group(&mut child);
    let status = child.wait()?;
    let elapsed = start.elapsed();
    Ok(Finished {
        ending: killed.unwrap_or_else(|| ending_of(status)),
        stdout_tail: collect(stdout),
        stderr_tail: collect(stderr),
        elapsed,
    })
}

/// Whether the child has exited, leaving it unreaped where the platform allows, so
/// its process group id stays reserved until [`kill_group`] has run.
#[cfg(target_os = "linux")]
fn has_exited(child: &mut Child) -> std::io::Result<bool> {
    // SAFETY: a zeroed siginfo_t is a valid out-parameter for waitid(2), which
    // writes to it only; si_pid stays 0 when no state change is pending.
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        let rc = libc::waitid(
            libc::P_PID,
            child.id() as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        );
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(info.si_pid() != 0)
    }
}

#[cfg(not(target_os = "linux"))]
fn has_exited(child: &mut Child) -> std::io::Result<bool> {
    Ok(child.try_wait()?.is_some())
}

fn ending_of(status: ExitStatus) -> Ending {
    if let Some(code) = status.code() {
        return Ending::Exited(code);
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = status.signal() {
            return Ending::Signaled(sig);
        }
    }
    Ending::Exited(-1)
}

/// Kills the child's process group, or the child alone where there are none.
fn kill_group(child: &mut Child) {
    #[cfg(unix)]
    {
        if let Ok(pid) = libc::pid_t::try_from(child.id()) {
            // SAFETY: kill(2) with a negative pid signals the process group the child
            // leads; it touches no memory. An empty group gives a harmless ESRCH.
            unsafe {
                libc::kill(-pid, libc::SIGKILL);
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = child.kill();
    }
}

/// A reader thread keeping the last `cap` bytes of a stream; the result arrives on the
/// channel once the stream closes.
fn spawn_tail_reader(
    mut stream: impl Read + Send + 'static,
    cap: usize,
) -> mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let mut tail = VecDeque::with_capacity(cap.min(64 << 10));
        let mut buf = [0u8; 8192];
        loop {
            match stream.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    tail.extend(&buf[..n]);
                    let excess = tail.len().saturating_sub(cap);
                    tail.drain(..excess);
                }
            }
        }
        let _ = tx.send(Vec::from(tail));
    });
    rx
}

fn collect(rx: mpsc::Receiver<Vec<u8>>) -> String {
    let bytes = rx.recv_timeout(DRAIN).unwrap_or_default();
    let text = String::from_utf8_lossy(&bytes);
    // The cut may split a character; drop the replacement char it leaves in front.
    text.trim_start_matches('\u{fffd}').to_string()
}

/// A signal's name, e.g. `SIGABRT`, when it is a common one.
pub(crate) fn signal_name(sig: i32) -> Option<&'static str> {
    #[cfg(unix)]
    {
        let name = match sig {
            libc::SIGABRT => "SIGABRT",
            libc::SIGSEGV => "SIGSEGV",
            libc::SIGBUS => "SIGBUS",
            libc::SIGILL => "SIGILL",
            libc::SIGFPE => "SIGFPE",
            libc::SIGKILL => "SIGKILL",
            libc::SIGTERM => "SIGTERM",
            libc::SIGINT => "SIGINT",
            libc::SIGPIPE => "SIGPIPE",
            libc::SIGTRAP => "SIGTRAP",
            _ => return None,
        };
        Some(name)
    }
    #[cfg(not(unix))]
    {
        let _ = sig;
        None
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    fn sh(script: &str) -> Command {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", script]);
        cmd
    }

    const LONG: Duration = Duration::from_secs(30);

    #[test]
    fn a_command_reads_as_a_shell_line_to_paste() {
        let mut cmd = Command::new("/bin/bench-1a2b");
        cmd.args(["--bench", "--exact", "mm/4096 f32", "it's"])
            .env("GPUBENCH_ROUND", "2")
            .env_remove("GPUBENCH_QUICK");
        assert_eq!(
            shell_line(&cmd),
            r"GPUBENCH_ROUND=2 /bin/bench-1a2b --bench --exact 'mm/4096 f32' 'it'\''s'"
        );
    }

    #[test]
    fn exit_codes_and_signals_are_told_apart() {
        let stop = AtomicBool::new(false);
        let f = run(sh("echo out; echo err >&2; exit 7"), LONG, &stop, 100).unwrap();
        assert_eq!(f.ending, Ending::Exited(7));
        assert_eq!(f.stdout_tail, "out\n");
        assert_eq!(f.stderr_tail, "err\n");
        let f = run(sh("kill -ABRT $$"), LONG, &stop, 100).unwrap();
        assert_eq!(f.ending, Ending::Signaled(libc::SIGABRT));
        assert_eq!(signal_name(libc::SIGABRT), Some("SIGABRT"));
    }

    #[test]
    fn only_the_tail_of_long_output_is_kept() {
        let stop = AtomicBool::new(false);
        let f = run(
            sh("i=0; while [ $i -lt 2000 ]; do echo line$i >&2; i=$((i+1)); done"),
            LONG,
            &stop,
            64,
        )
        .unwrap();
        assert!(f.stderr_tail.len() <= 64);
        assert!(f.stderr_tail.ends_with("line1999\n"), "{}", f.stderr_tail);
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn timeout_kills_the_whole_process_group() {
        let tmp = tempfile::tempdir().unwrap();
        let pid_file = tmp.path().join("pid");
        let script = format!("sleep 30 & echo $! > {}; wait", pid_file.display());
        let stop = AtomicBool::new(false);
        let start = Instant::now();
        let f = run(sh(&script), Duration::from_millis(500), &stop, 100).unwrap();
        assert_eq!(f.ending, Ending::TimedOut);
        assert!(start.elapsed() < Duration::from_secs(10));
        let pid: i32 = std::fs::read_to_string(&pid_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        // The grandchild `sleep` was killed with the group. Killed, it may linger as a
        // zombie when no init reaps orphans (containers), so a zombie counts as dead.
        thread::sleep(Duration::from_millis(100));
        let alive = match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Ok(stat) => !stat
                .rsplit_once(") ")
                .is_some_and(|(_, rest)| rest.starts_with('Z') || rest.starts_with('X')),
            Err(_) => false,
        };
        assert!(!alive, "the grandchild survived the timeout");
    }

    #[test]
    fn raising_the_stop_flag_kills_the_child() {
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        thread::spawn(move || {
            thread::sleep(Duration::from_millis(300));
            flag.store(true, Ordering::SeqCst);
        });
        let start = Instant::now();
        let f = run(sh("sleep 30"), LONG, &stop, 100).unwrap();
        assert_eq!(f.ending, Ending::Interrupted);
        assert!(start.elapsed() < Duration::from_secs(10));
    }
}
/// The environment of benchmark processes: libtorch (and build-script libraries in
/// the target directory) on the loader path; the subcommand's own `GPUBENCH_*`
/// options (`option_vars`) removed, since they reach the harness as arguments. (A run
/// adds the intra-op threads of its baseline, `commands::run::cpu_threads`.)
pub(crate) fn for_benchmarks(
    libtorch: &Libtorch,
    native_paths: &[PathBuf],
    target_dir: &Path,
    option_vars: &[String],
) -> ChildEnv {
    let mut dirs = vec![libtorch.lib_dir.clone()];
    dirs.extend(
        native_paths
            .iter()
            .filter(|p| p.starts_with(target_dir))
            .cloned(),
    );
    let var = libtorch::loader_path_var();
    let existing = std::env::var_os(var);
    let mut remove: Vec<OsString> = option_vars.iter().map(OsString::from).collect();
    remove.push(RECORD_DIR_VAR.into());
    remove.push(PROCESS_VAR.into());
    ChildEnv {
        set: vec![(
            var.into(),
            libtorch::prepend_paths(&dirs, existing.as_deref()),
        )],
        remove,
        dir: None,
    }
}

/// The flag Ctrl-C (and SIGTERM) raises: the running benchmark is killed, finished
/// records are kept. A second Ctrl-C exits at once.
pub(crate) fn interrupt_flag() -> Result<Arc<AtomicBool>> {
    static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();
    if let Some(flag) = FLAG.get() {
        return Ok(flag.clone());
    }
    let flag = Arc::new(AtomicBool::new(false));
    let handler_flag = flag.clone();
    ctrlc::set_handler(move || {
        if handler_flag.swap(true, Ordering::SeqCst) {
            std::process::exit(i32::from(Exit::Interrupted.code()));
        }
        eprintln!("gpubench: interrupted; stopping the running benchmark and saving what finished (Ctrl-C again to quit at once)");
    })
    .context("failed to install the Ctrl-C handler")?;
    Ok(FLAG.get_or_init(|| flag).clone())
}
