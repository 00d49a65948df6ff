//! Running one process of a benchmark in its own process and turning how it ended into
//! a record of that process: the harness's own record when it wrote one, or a failed
//! record made here for a crash, a timeout, or an exit code without a record.

use std::path::Path;
use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use gpubench_record::failure::{Failure, FailureKind};
use gpubench_record::id::{file_stem_for_id, split_id};
use gpubench_record::measurement::{MeasurementConfig, MeasurementSettings, ProcessPolicy};
use gpubench_record::protocol::{EXIT_BENCHMARK_FAILED, PROCESS_VAR, RECORD_DIR_VAR};
use gpubench_record::record::{Fingerprint, ProcessRecord, RawRecord};

use crate::execute::process::{self, ChildEnv, Ending, Finished};
use crate::execute::select::Benchmark;

/// Bytes of stderr quoted in a failure message, so that with its headline it fits
/// under the record's message cap and the end of the output is what is kept.
const QUOTED_STDERR_BYTES: usize = 3500;

/// Options every benchmark process gets.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// `--device`.
    pub device: Option<String>,
    /// The time limit of one process.
    pub timeout: Duration,
    /// How many processes measure each benchmark.
    pub processes: ProcessPolicy,
    /// How each process measures, its measurement time the benchmark's split across
    /// its processes.
    pub settings: MeasurementSettings,
    /// A benchmark's warm-up and measurement time, all its processes together.
    pub time_per_benchmark: Duration,
}

impl RunOptions {
    /// The device label for records made here: the requested one, or `default` when
    /// the harness chose.
    pub fn device_label(&self) -> &str {
        self.device.as_deref().unwrap_or("default")
    }

    /// The measurement options the harness was asked for.
    pub fn config(&self) -> MeasurementConfig {
        MeasurementConfig {
            processes: self.processes,
            ..self.settings.config()
        }
    }

    /// The measurement time of one process when a benchmark's `total` is split
    /// across the processes `policy` runs at least.
    pub fn split_measurement_time(total: f64, policy: &ProcessPolicy) -> f64 {
        total / f64::from(policy.min.max(1))
    }
}

/// What became of one benchmark.
#[derive(Debug, Clone)]
pub enum Outcome {
    /// It ran; the record says whether it passed.
    Recorded(Box<RawRecord>),
    /// Ctrl-C stopped it; there is no record.
    Interrupted,
}

/// The command that measures process `process` of `bench`, writing its record into
/// `record_dir`.
pub(crate) fn bench_command(
    bench: &Benchmark,
    process: u32,
    opts: &RunOptions,
    env: &ChildEnv,
    record_dir: &Path,
) -> Command {
    let mut cmd = Command::new(&bench.exe);
    cmd.args(["--bench", "--exact", &bench.id]);
    // The harness runs an ignored benchmark only when asked, and with `--ignored`
    // only ignored ones: pass it exactly for those.
    if bench.ignored {
        cmd.arg("--ignored");
    }
    if let Some(device) = &opts.device {
        cmd.args(["--device", device]);
    }
    cmd.args(opts.settings.harness_args());
    env.apply(&mut cmd);
    cmd.env(RECORD_DIR_VAR, record_dir);
    cmd.env(PROCESS_VAR, process.to_string());
    cmd
}

/// Runs process `process` of `bench` in its own process and classifies how it ended.
/// `record_dir` must be empty: the record found there afterwards is this process's.
pub(crate) fn run_benchmark(
    bench: &Benchmark,
    process: u32,
    opts: &RunOptions,
    env: &ChildEnv,
    record_dir: &Path,
    stop: &AtomicBool,
) -> std::io::Result<(Outcome, Finished)> {
    let cmd = bench_command(bench, process, opts, env, record_dir);
    crate::console::detail(format_args!(
        "process {process} of {}: {}",
        bench.qualified(),
        process::shell_line(&cmd)
    ));
    let finished = process::run(cmd, opts.timeout, stop, process::TAIL_BYTES)?;
    let record_path = record_dir.join(format!("{}.json", file_stem_for_id(&bench.id)));
    let written = record_path
        .exists()
        .then(|| RawRecord::read(&record_path).map_err(|e| e.to_string()));
    let outcome = classify(&bench.id, &finished, written, opts, now_rfc3339());
    Ok((outcome, finished))
}

/// The record for a benchmark that ended as `finished`, given the record it wrote
/// (`None`: none; `Some(Err)`: one that could not be read).
pub(crate) fn classify(
    id: &str,
    finished: &Finished,
    written: Option<Result<RawRecord, String>>,
    opts: &RunOptions,
    now: String,
) -> Outcome {
    let stderr = &finished.stderr_tail;
    let made = |kind, headline: String| {
        Outcome::Recorded(Box::new(synthesized(
            id,
            Failure::new(kind, with_stderr(&headline, stderr)),
            opts,
            now.clone(),
        )))
    };
    // `Some(code)` when it exited, `None` when a signal killed it.
    let code = match finished.ending {
        Ending::Interrupted => return Outcome::Interrupted,
        // Whatever a killed process left behind is not a result.
        Ending::TimedOut => {
            return made(
                FailureKind::Timeout,
                format!(
                    "timed out after {} s and was killed",
                    finished.elapsed.as_secs_f64().round()
                ),
            )
        }
        Ending::Exited(code) => Some(code),
        Ending::Signaled(_) => None,
    };
    let ended = ending_words(finished.ending);
    let written = match written {
        Some(Err(why)) => {
            return made(
                FailureKind::Setup,
                format!("{ended} but its record could not be read: {why}"),
            )
        }
        // The harness knows only its own process: the policy that decides how many
        // measure the benchmark is the run's, and the report and the baseline show it.
        Some(Ok(mut record)) => {
            record.config.processes = opts.processes;
            Some(record)
        }
        None => None,
    };
    match (code, written) {
        // The harness's verdict stands when its exit code agrees with its record.
        (Some(0), Some(record)) => Outcome::Recorded(Box::new(record)),
        (Some(EXIT_BENCHMARK_FAILED), Some(record)) if !record.passed() => {
            Outcome::Recorded(Box::new(record))
        }
        // It wrote a record, then died or exited oddly (e.g. a crash while CUDA shuts
        // down): keep the measurement, but the benchmark did not pass.
        (code, Some(mut record)) => {
            if record.passed() {
                let kind = match code {
                    None => FailureKind::Crash,
                    Some(_) => FailureKind::ExitCode,
                };
                let headline = format!("{ended} after writing its record");
                if let Some(process) = record.processes.last_mut() {
                    process.failure = Some(Failure::new(kind, with_stderr(&headline, stderr)));
                }
            }
            Outcome::Recorded(Box::new(record))
        }
        (Some(0), None) => made(
            FailureKind::ExitCode,
            "exited successfully without writing a record (is the bench target's main \
             `gpubench_core::main()`?)"
                .to_string(),
        ),
        (Some(_), None) => made(
            FailureKind::ExitCode,
            format!("{ended} without writing a record"),
        ),
        (None, None) => made(FailureKind::Crash, ended),
    }
}

/// A failed record for a benchmark whose process reported nothing usable.
pub(crate) fn synthesized(id: &str, failure: Failure, opts: &RunOptions, now: String) -> RawRecord {
    let (name, arg) = split_id(id);
    let mut process = ProcessRecord::first(now.clone());
    process.failure = Some(failure);
    RawRecord::new(
        id,
        name,
        arg.map(str::to_string),
        Fingerprint::unknown(opts.device_label(), now),
        opts.config(),
        process,
    )
}

/// How a benchmark's process ended, in words: `killed by signal 6 (SIGABRT)`.
pub(crate) fn ending_words(ending: Ending) -> String {
    match ending {
        Ending::Exited(code) => format!("exited with code {code}"),
        Ending::Signaled(sig) => match process::signal_name(sig) {
            Some(name) => format!("killed by signal {sig} ({name})"),
            None => format!("killed by signal {sig}"),
        },
        Ending::TimedOut => "timed out".to_string(),
        Ending::Interrupted => "interrupted".to_string(),
    }
}

/// `headline`, then the end of `stderr` when there is one.
pub(crate) fn with_stderr(headline: &str, stderr: &str) -> String {
    let stderr = stderr.trim_end();
    if stderr.is_empty() {
        return format!("{headline} (no output on stderr)");
    }
    let mut start = stderr.len().saturating_sub(QUOTED_STDERR_BYTES);
    while !stderr.is_char_boundary(start) {
        start += 1;
    }
    let cut = if start > 0 { "…" } else { "" };
    format!("{headline}\nstderr ends with:\n{cut}{}", &stderr[start..])
}

/// Now, in RFC 3339 (UTC, seconds).
pub(crate) fn now_rfc3339() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> RunOptions {
        RunOptions {
            device: Some("cuda:1".into()),
            timeout: Duration::from_secs(300),
            processes: ProcessPolicy::fixed(3),
            settings: MeasurementSettings {
                quick: true,
                measurement_time_s: Some(0.25),
                ..MeasurementSettings::default()
            },
            time_per_benchmark: Duration::from_secs(1),
        }
    }

    fn finished(ending: Ending, stderr: &str) -> Finished {
        Finished {
            ending,
            stdout_tail: String::new(),
            stderr_tail: stderr.into(),
            elapsed: Duration::from_secs(300),
        }
    }

    fn record_of(o: Outcome) -> RawRecord {
        match o {
            Outcome::Recorded(r) => *r,
            Outcome::Interrupted => panic!("interrupted"),
        }
    }

    fn harness_failure() -> RawRecord {
        synthesized(
            "matmul/4096",
            Failure::new(FailureKind::OutOfMemory, "CUDA out of memory"),
            &opts(),
            "t".into(),
        )
    }

    fn passed_record() -> RawRecord {
        let mut r = harness_failure();
        r.processes[0].failure = None;
        r
    }

    #[test]
    fn a_crash_becomes_a_failed_record_quoting_stderr() {
        let r = record_of(classify(
            "matmul/4096",
            &finished(Ending::Signaled(6), "terminate called\nAborted"),
            None,
            &opts(),
            "2026-01-01T00:00:00Z".into(),
        ));
        let f = r.failure().cloned().unwrap();
        assert_eq!(f.kind, FailureKind::Crash);
        assert!(f.message.contains("signal 6"), "{}", f.message);
        assert!(
            f.message.ends_with("terminate called\nAborted"),
            "{}",
            f.message
        );
        assert_eq!(
            (r.name.as_str(), r.arg.as_deref()),
            ("matmul", Some("4096"))
        );
        assert_eq!(r.fingerprint.device.label(), "cuda:1");
        assert_eq!(r.fingerprint.timestamp, "2026-01-01T00:00:00Z");
        assert_eq!(
            r.config,
            MeasurementConfig {
                measurement_time_s: 0.25,
                processes: ProcessPolicy::fixed(3),
                ..MeasurementConfig::quick()
            }
        );
    }

    #[test]
    fn timeouts_and_bare_exit_codes_are_failures() {
        let r = record_of(classify(
            "x",
            &finished(Ending::TimedOut, ""),
            None,
            &opts(),
            "t".into(),
        ));
        let f = r.failure().cloned().unwrap();
        assert_eq!(f.kind, FailureKind::Timeout);
        assert!(f.message.contains("timed out after 300 s"), "{}", f.message);
        let r = record_of(classify(
            "x",
            &finished(Ending::Exited(2), "bad flag"),
            None,
            &opts(),
            "t".into(),
        ));
        assert_eq!(r.failure().unwrap().kind, FailureKind::ExitCode);
        assert!(r.failure().unwrap().message.contains("exited with code 2"));
        let r = record_of(classify(
            "x",
            &finished(Ending::Exited(0), ""),
            None,
            &opts(),
            "t".into(),
        ));
        assert_eq!(r.failure().unwrap().kind, FailureKind::ExitCode);
        // A timeout wins over anything half-written.
        let r = record_of(classify(
            "x",
            &finished(Ending::TimedOut, ""),
            Some(Ok(passed_record())),
            &opts(),
            "t".into(),
        ));
        assert_eq!(r.failure().unwrap().kind, FailureKind::Timeout);
    }

    #[test]
    fn the_harness_record_stands_when_the_exit_code_agrees() {
        let r = record_of(classify(
            "matmul/4096",
            &finished(Ending::Exited(101), "panicked"),
            Some(Ok(harness_failure())),
            &opts(),
            "t".into(),
        ));
        assert_eq!(r, harness_failure());
        let r = record_of(classify(
            "matmul/4096",
            &finished(Ending::Exited(0), ""),
            Some(Ok(passed_record())),
            &opts(),
            "t".into(),
        ));
        assert!(r.passed());
    }

    #[test]
    fn a_harness_record_carries_the_runs_process_policy_not_its_own_single_process() {
        // What a harness writes: it measures one process and knows of no other.
        let mut written = passed_record();
        written.config.processes = ProcessPolicy::single();
        let r = record_of(classify(
            "matmul/4096",
            &finished(Ending::Exited(0), ""),
            Some(Ok(written)),
            &opts(),
            "t".into(),
        ));
        assert_eq!(r.config.processes, ProcessPolicy::fixed(3));
    }

    #[test]
    fn a_crash_after_a_passed_record_keeps_the_measurement_but_fails() {
        let r = record_of(classify(
            "matmul/4096",
            &finished(Ending::Signaled(11), "segfault in cuda teardown"),
            Some(Ok(passed_record())),
            &opts(),
            "t".into(),
        ));
        let f = r.failure().cloned().unwrap();
        assert_eq!(f.kind, FailureKind::Crash);
        assert!(
            f.message.contains("after writing its record"),
            "{}",
            f.message
        );
    }

    #[test]
    fn an_unreadable_record_is_a_failure_that_says_why() {
        let r = record_of(classify(
            "x",
            &finished(Ending::Exited(0), ""),
            Some(Err("record has format_version 9, newer".into())),
            &opts(),
            "t".into(),
        ));
        let f = r.failure().cloned().unwrap();
        assert_eq!(f.kind, FailureKind::Setup);
        assert!(f.message.contains("format_version 9"), "{}", f.message);
    }

    #[test]
    fn interrupted_benchmarks_have_no_record() {
        let o = classify(
            "x",
            &finished(Ending::Interrupted, ""),
            None,
            &opts(),
            "t".into(),
        );
        assert!(matches!(o, Outcome::Interrupted));
    }

    #[test]
    fn quoted_stderr_is_the_end_and_fits_the_cap() {
        let long = format!("{}THE END", "x".repeat(20_000));
        let msg = with_stderr("killed", &long);
        assert!(msg.len() <= gpubench_record::failure::MESSAGE_CAP_BYTES);
        assert!(msg.ends_with("THE END"));
    }

    #[test]
    fn command_passes_the_options_to_the_harness() {
        let bench = Benchmark {
            package: None,
            target: "t".into(),
            exe: "/bin/t".into(),
            id: "slow".into(),
            ignored: true,
        };
        let cmd = bench_command(&bench, 2, &opts(), &ChildEnv::default(), Path::new("/rec"));
        let args: Vec<String> = cmd
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            args,
            [
                "--bench",
                "--exact",
                "slow",
                "--ignored",
                "--device",
                "cuda:1",
                "--quick",
                "--measurement-time",
                "0.25"
            ]
        );
        // The measurement options given reach the harness under their own names,
        // and the record's config says what was asked.
        let mut with = opts();
        with.settings = MeasurementSettings {
            sample_time_s: Some(0.002),
            min_samples: Some(20),
            warm_up_time_s: Some(0.5),
            throttle_threshold: Some(0.5),
            ..with.settings
        };
        let args: Vec<String> =
            bench_command(&bench, 1, &with, &ChildEnv::default(), Path::new("/r"))
                .get_args()
                .map(|a| a.to_string_lossy().into_owned())
                .collect();
        assert_eq!(
            &args[9..],
            [
                "--warm-up-time",
                "0.5",
                "--sample-time",
                "0.002",
                "--min-samples",
                "20",
                "--throttle-threshold",
                "0.5"
            ]
        );
        assert_eq!(with.config().throttle_threshold, 0.5);
        let config = with.config();
        assert_eq!(
            (
                config.sample_target_s,
                config.min_samples,
                config.warmup_time_s
            ),
            (0.002, 20, 0.5)
        );
        let env = |var: &str| {
            cmd.get_envs()
                .find(|(k, _)| *k == var)
                .and_then(|(_, v)| v)
                .map(|v| v.to_string_lossy().into_owned())
        };
        assert_eq!(env(RECORD_DIR_VAR).as_deref(), Some("/rec"));
        assert_eq!(env(PROCESS_VAR).as_deref(), Some("2"));
        assert_eq!(
            RunOptions::split_measurement_time(6.0, &ProcessPolicy::standard()),
            2.0
        );
    }
}
