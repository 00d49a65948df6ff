//! One capacity search: the capacity benchmarks an executable lists
//! (`--list-capacity`), and each one's probes, a fresh process each, to the end of
//! its search.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, Result};
use gpubench_analysis::capacity::{
    self, CapacityProbe, CapacityResult, Next, SearchEnd, SearchOptions,
};
use gpubench_record::id::file_stem_for_id;
use gpubench_record::protocol::RECORD_DIR_VAR;
use gpubench_record::record::RawRecord;
use gpubench_record::units::format_bytes;

use crate::cli::CapacityArgs;
use crate::console;
use crate::execute::process::{self, ChildEnv, Ending};
use crate::execute::runner::{ending_words, with_stderr};
use crate::exit_code::UsageError;

/// A capacity benchmark of one executable, as `--list-capacity` prints it.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Listed {
    pub(super) exe: PathBuf,
    pub(super) name: String,
    pub(super) unit: String,
    pub(super) start: u64,
}

/// `<exe> --list-capacity`: `name unit start` per line. An executable that refuses
/// the flag is not a gpubench harness of this version and holds none.
pub(super) fn list_capacity(
    exe: &Path,
    env: &ChildEnv,
    timeout: std::time::Duration,
    stop: &AtomicBool,
) -> Result<Vec<Listed>> {
    let mut cmd = Command::new(exe);
    cmd.arg("--list-capacity");
    env.apply(&mut cmd);
    let finished = process::run(cmd, timeout, stop, 1 << 16)
        .with_context(|| format!("failed to run {}", exe.display()))?;
    match finished.ending {
        Ending::Exited(0) => {}
        Ending::Exited(2)
            if finished.stderr_tail.contains("error:")
                && finished.stderr_tail.contains("capacity benchmark") =>
        {
            return Err(UsageError(finished.stderr_tail.trim().to_string()).into());
        }
        _ => {
            console::note(format_args!(
                "skipped {}: it does not list capacity benchmarks (--list-capacity)",
                exe.display()
            ));
            return Ok(Vec::new());
        }
    }
    Ok(parse_list(&finished.stdout_tail, exe))
}

pub(super) fn parse_list(stdout: &str, exe: &Path) -> Vec<Listed> {
    stdout
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let (name, unit, start) = (w.next()?, w.next()?, w.next()?.parse().ok()?);
            Some(Listed {
                exe: exe.to_path_buf(),
                name: name.to_string(),
                unit: unit.to_string(),
                start,
            })
        })
        .collect()
}

/// One benchmark's search: its result, and why it stopped early when it could not
/// go on (a probe that could not start, a device without memory figures; its `end`
/// is then `failed` and its probes those that finished before).
pub(super) struct Searched {
    pub(super) result: CapacityResult,
    pub(super) error: Option<String>,
}

/// The search of one benchmark: its probes to its end, to Ctrl-C, or to an error that
/// stops it (the result's `end` says which). A probe that crashed or hung is that
/// size's failure, and the search goes on.
pub(super) fn search(
    bench: &Listed,
    args: &CapacityArgs,
    env: &ChildEnv,
    out: &Path,
    stop: &AtomicBool,
) -> Searched {
    let mut options = SearchOptions {
        start: bench.start,
        max_probes: args.max_probes,
        resolution: args.resolution,
        limit_bytes: None,
        repeats: args.repeats,
    };
    let probe_dir = out.join("probes").join(file_stem_for_id(&bench.name));
    let mut probes: Vec<CapacityProbe> = Vec::new();
    let mut device = String::new();
    console::status(format_args!(
        "capacity {}: searching the largest {} that fits, from {} (at most {} probes; \
         {} at the boundary)",
        bench.name, bench.unit, bench.start, args.max_probes, args.repeats
    ));
    let mut error = None;
    let end = loop {
        let size = match capacity::next_probe(&probes, &options) {
            Next::Probe(size) => size,
            Next::Done(end) => break end,
        };
        let _ = std::fs::remove_dir_all(&probe_dir);
        if let Err(e) = std::fs::create_dir_all(&probe_dir) {
            error = Some(format!("failed to create {}: {e}", probe_dir.display()));
            break SearchEnd::Failed;
        }
        let mut cmd = Command::new(&bench.exe);
        cmd.args([
            "--exact",
            &bench.name,
            "--include-ignored",
            "--capacity-probe",
            &size.to_string(),
        ]);
        if let Some(d) = &args.process.device {
            cmd.args(["--device", d]);
        }
        if let Some(f) = args.memory_fraction {
            cmd.args(["--memory-fraction", &f.to_string()]);
        }
        env.apply(&mut cmd);
        cmd.env(RECORD_DIR_VAR, &probe_dir);
        console::detail(format_args!("probe: {}", process::shell_line(&cmd)));
        let finished = match process::run(cmd, args.process.timeout, stop, process::TAIL_BYTES) {
            Ok(f) => f,
            Err(e) => {
                error = Some(format!("failed to start the probe at {size}: {e}"));
                break SearchEnd::Failed;
            }
        };
        if finished.ending == Ending::Interrupted {
            break SearchEnd::Interrupted;
        }
        let id = format!("{}/{size}", bench.name);
        let path = probe_dir.join(format!("{}.json", file_stem_for_id(&id)));
        let seconds = finished.elapsed.as_secs_f64();
        // Whatever a killed process left behind is not a result.
        let record = match finished.ending {
            Ending::TimedOut => Err(format!(
                "timed out after {} s and was killed",
                args.process.timeout.as_secs_f64()
            )),
            ending if !path.exists() => {
                Err(format!("{} without writing a record", ending_words(ending)))
            }
            ending => RawRecord::read(&path).map_err(|e| {
                format!(
                    "{} but its record could not be read: {e}",
                    ending_words(ending)
                )
            }),
        };
        let probe = match record {
            Ok(record) => {
                if device.is_empty() {
                    device = record.fingerprint.device.label();
                    let total = record.fingerprint.device.total_memory_bytes;
                    options.limit_bytes =
                        total.map(|t| (args.memory_fraction.unwrap_or(1.0) * t as f64) as u64);
                }
                match CapacityProbe::from_record(size, &record, seconds) {
                    Ok(p) => p,
                    Err(e) => {
                        error = Some(e);
                        break SearchEnd::Failed;
                    }
                }
            }
            Err(why) => CapacityProbe::failed(
                size,
                seconds,
                Some(with_stderr(&why, &finished.stderr_tail)),
            ),
        };
        console::status(format_args!(
            "capacity {}: probe {} at {} {size}: {} ({seconds:.1} s)",
            bench.name,
            probes.len() + 1,
            bench.unit,
            match (probe.peak_allocated_bytes, &probe.failure) {
                (Some(p), _) => format!("fits, peak {} allocated", format_bytes(p)),
                (None, None) => "out of memory".to_string(),
                (None, Some(why)) => format!(
                    "failed, counted as not fitting: {}",
                    why.lines().next().unwrap_or_default()
                ),
            },
        ));
        probes.push(probe);
        if stop.load(Ordering::SeqCst) {
            break SearchEnd::Interrupted;
        }
    };
    let _ = std::fs::remove_dir_all(&probe_dir);
    if device.is_empty() {
        device = "unknown (no probe wrote a record)".to_string();
    }
    Searched {
        result: CapacityResult::new(
            &bench.name,
            &bench.unit,
            &device,
            &options,
            args.memory_fraction,
            probes,
            end,
        ),
        error,
    }
}
