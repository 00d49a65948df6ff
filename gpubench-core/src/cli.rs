//! The bench executable's command line: libtest-compatible, every option also read
//! from a `GPUBENCH_*` environment variable.

use gpubench_record::measurement::MeasurementSettings;
use gpubench_record::protocol;
use std::path::PathBuf;

use clap::builder::BoolishValueParser;
use clap::{ArgAction, Parser};

/// Command line of a `harness = false` bench target using `gpubench_core::main()`.
#[derive(Debug, Parser)]
#[command(
    name = "gpubench",
    about = "Runs the #[gpu_bench] benchmarks of this target",
    long_about = "Runs the #[gpu_bench] benchmarks of this target. Without --bench each \
                  benchmark runs once as a smoke test (what `cargo test --benches` does); \
                  with --bench it is measured.\n\nExit codes: 0 all passed, 101 a benchmark \
                  failed, 2 bad usage or setup (unknown device, duplicate ids)."
)]
pub struct HarnessArgs {
    /// Run only benchmarks whose id contains one of these (or equals one, with
    /// --exact), as libtest does.
    #[arg(value_name = "FILTER")]
    pub filters: Vec<String>,
    /// List benchmarks instead of running them.
    #[arg(long)]
    pub list: bool,
    /// Resolve --device, print it and exit (2 when it is not available): what
    /// `cargo gpubench` asks once before a run.
    #[arg(long, hide = true)]
    pub check_device: bool,
    /// Print every device a benchmark could run on (`cuda:N <name>` per visible GPU,
    /// else `cpu <name>`), one per line, and exit: what `cargo gpubench --devices all`
    /// asks once before a run.
    #[arg(long, hide = true)]
    pub list_devices: bool,
    /// Output format of --list: `pretty` or `terse` (libtest's).
    #[arg(long, value_name = "FORMAT")]
    pub format: Option<String>,
    /// A filter must match the id exactly.
    #[arg(long)]
    pub exact: bool,
    /// Run (or list) only benchmarks marked `ignore`.
    #[arg(long, env = "GPUBENCH_IGNORED", action = ArgAction::SetTrue, value_parser = BoolishValueParser::new())]
    pub ignored: bool,
    /// Run ignored benchmarks too.
    #[arg(long)]
    pub include_ignored: bool,
    /// Skip benchmarks whose id contains this (repeatable).
    #[arg(long, value_name = "FILTER")]
    pub skip: Vec<String>,
    /// Measure (what `cargo bench` passes); without it each benchmark runs once.
    #[arg(long)]
    pub bench: bool,
    /// Smoke-test mode (the default; accepted for libtest compatibility).
    #[arg(long, hide = true)]
    pub test: bool,
    /// Device to measure on: `cpu`, `cuda` or `cuda:N` (default: cuda:0 if available, else cpu).
    #[arg(long, env = protocol::DEVICE_VAR, value_name = "DEVICE")]
    pub device: Option<String>,
    /// Shorter warm-up and measurement bounds, fewer samples and a looser target
    /// (the defaults after `--quick:` below).
    #[arg(long, env = "GPUBENCH_QUICK", action = ArgAction::SetTrue, value_parser = BoolishValueParser::new())]
    pub quick: bool,
    /// Write one raw JSON record per benchmark into this directory.
    #[arg(long, env = protocol::RECORD_DIR_VAR, value_name = "DIR")]
    pub record_dir: Option<PathBuf>,
    /// Warm-up time bound in seconds [default: 1; --quick: 0.2].
    #[arg(
        long,
        env = "GPUBENCH_WARM_UP_TIME",
        allow_negative_numbers = true,
        value_name = "SECS"
    )]
    pub warm_up_time: Option<f64>,
    /// Measurement time bound in seconds [default: 5; --quick: 1].
    #[arg(
        long,
        env = "GPUBENCH_MEASUREMENT_TIME",
        allow_negative_numbers = true,
        value_name = "SECS"
    )]
    pub measurement_time: Option<f64>,
    /// Target duration of one sample in seconds [default: 0.01; --quick: 0.005].
    #[arg(
        long,
        env = "GPUBENCH_SAMPLE_TIME",
        allow_negative_numbers = true,
        value_name = "SECS"
    )]
    pub sample_time: Option<f64>,
    /// Fewest samples [default: 10; --quick: 5].
    #[arg(long, env = "GPUBENCH_MIN_SAMPLES", value_name = "N")]
    pub min_samples: Option<u32>,
    /// Most samples [default: 200; --quick: 100].
    #[arg(long, env = "GPUBENCH_MAX_SAMPLES", value_name = "N")]
    pub max_samples: Option<u32>,
    /// Stop once the median's 95% interval is within ± this fraction [default: 0.01;
    /// --quick: 0.02].
    #[arg(
        long,
        env = "GPUBENCH_TARGET_REL_CI",
        allow_negative_numbers = true,
        value_name = "FRACTION"
    )]
    pub target_rel_ci: Option<f64>,
    /// Leave out samples whose SM clock fell below this fraction of the GPU's default
    /// clock (nvbench's rule) [default: 0.75; 0: only hardware, thermal and
    /// power-brake slowdowns].
    #[arg(long, env = "GPUBENCH_THROTTLE_THRESHOLD", value_name = "FRACTION")]
    pub throttle_threshold: Option<f64>,
    /// libtorch's intra-op threads on the CPU device [default: the cores the host has
    /// free when the run starts, at least 1; the user's OMP_NUM_THREADS when set].
    #[arg(
        long,
        env = protocol::CPU_THREADS_VAR,
        value_name = "N",
        value_parser = clap::value_parser!(u32).range(1..)
    )]
    pub cpu_threads: Option<u32>,
    /// Overwrite a buffer larger than the last-level cache before each timed call:
    /// one call per sample, after a warm-up of such calls for the whole warm-up time
    /// (a cold-cache time at the clock flushed calls settle at).
    #[arg(long, env = "GPUBENCH_FLUSH_L2", action = ArgAction::SetTrue, value_parser = BoolishValueParser::new())]
    pub flush_l2: bool,
    /// Records where each device memory block is allocated (C++ stacks), so the
    /// snapshot taken at an out-of-memory failure says where its largest blocks came
    /// from. Slows allocation.
    #[arg(long, env = protocol::MEMORY_HISTORY_VAR, action = ArgAction::SetTrue, value_parser = BoolishValueParser::new())]
    pub memory_history: bool,
    /// After the samples, traces a sample's worth of calls (every allocation and free,
    /// with where each block was allocated) and records the caching allocator's state
    /// at their peak of allocated bytes: the largest live blocks, what was reserved but
    /// free. The samples are timed without the trace.
    #[arg(long, env = protocol::MEMORY_PEAK_SNAPSHOT_VAR, action = ArgAction::SetTrue, value_parser = BoolishValueParser::new())]
    pub memory_peak_snapshot: bool,
    /// Caps the device's caching allocator at this fraction (0 to 1] of its memory,
    /// as `torch.cuda.set_per_process_memory_fraction` does.
    #[arg(long, env = protocol::MEMORY_FRACTION_VAR, value_name = "FRACTION")]
    pub memory_fraction: Option<f64>,
    /// Lists the capacity benchmarks (`#[gpu_bench(capacity = "...")]`): one line
    /// `<name> <unit> <first size>` each.
    #[arg(long, hide = true)]
    pub list_capacity: bool,
    /// Runs the capacity benchmark named by the exact filter once at this size (one
    /// probe of `cargo gpubench capacity`); its record's id is `<name>/<size>`.
    #[arg(long, env = protocol::CAPACITY_PROBE_VAR, hide = true, value_name = "SIZE")]
    pub capacity_probe: Option<u64>,
    /// Which process of this benchmark `cargo gpubench` runs: from 2 on, the
    /// diagnostics the first process recorded are left out.
    #[arg(long = "round", env = protocol::PROCESS_VAR, hide = true, value_name = "N")]
    pub process: Option<u32>,
    /// Accepted for libtest compatibility (output is never captured).
    #[arg(long, hide = true)]
    pub nocapture: bool,
    /// Accepted for libtest compatibility.
    #[arg(long, hide = true)]
    pub show_output: bool,
    /// Accepted for libtest compatibility (benchmarks always run one at a time).
    #[arg(long, hide = true, value_name = "N")]
    pub test_threads: Option<String>,
    /// Accepted for libtest compatibility.
    #[arg(short = 'q', long, hide = true)]
    pub quiet: bool,
    /// Accepted for libtest compatibility.
    #[arg(long, hide = true, value_name = "WHEN")]
    pub color: Option<String>,
    /// Accepted for libtest compatibility.
    #[arg(long, hide = true, value_name = "PATH")]
    pub logfile: Option<String>,
    /// Accepted for libtest compatibility.
    #[arg(short = 'Z', hide = true, value_name = "FLAG")]
    pub unstable: Vec<String>,
}

impl HarnessArgs {
    /// How to measure, as given: what `cargo gpubench` wrote on this command line
    /// ([`MeasurementSettings::harness_args`]) read back into the one settings type.
    pub fn settings(&self) -> MeasurementSettings {
        MeasurementSettings {
            quick: self.quick,
            flush_l2: self.flush_l2,
            warm_up_time_s: self.warm_up_time,
            measurement_time_s: self.measurement_time,
            sample_time_s: self.sample_time,
            min_samples: self.min_samples,
            max_samples: self.max_samples,
            target_rel_ci: self.target_rel_ci,
            throttle_threshold: self.throttle_threshold,
        }
    }
}

/// What the harness says instead of clap's error when `argv` (the whole command
/// line) gave it an option it does not know: an option of `cargo gpubench`
/// ([`protocol::SUBCOMMAND_OPTIONS`]) is named as such with the command that takes
/// it; any other unknown option gets a note that `cargo bench` hands what follows
/// `--` to every bench target. `None` for other errors.
pub fn unknown_option_help(err: &clap::Error, argv: &[String]) -> Option<String> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if err.kind() != ErrorKind::UnknownArgument {
        return None;
    }
    let Some(ContextValue::String(given)) = err.get(ContextKind::InvalidArg) else {
        return None;
    };
    let name = given.split('=').next().unwrap_or(given);
    if protocol::SUBCOMMAND_OPTIONS.contains(&name) {
        // `--save-baseline main` or `--save-baseline=main`: the value goes with it.
        let with_value = format!("{name}=");
        let wanted = match argv
            .iter()
            .position(|a| a == name || a.starts_with(&with_value))
        {
            Some(i) if argv[i].contains('=') => argv[i].clone(),
            Some(i) => match argv.get(i + 1).filter(|v| !v.starts_with('-')) {
                Some(v) => format!("{name} {v}"),
                None => name.to_string(),
            },
            None => name.to_string(),
        };
        return Some(format!(
            "error: {name} is an option of `cargo gpubench`, not of this bench executable \
             (what follows `cargo bench --` goes to the bench executables, which measure \
             but keep no baselines): run `cargo gpubench {wanted}`"
        ));
    }
    Some(format!(
        "{}\nnote: `cargo bench -- OPTIONS` hands OPTIONS to every bench target of the \
         package (a library's or binary's libtest harness too, which rejects the options \
         of gpubench); give one target with `cargo bench --bench NAME -- OPTIONS`, or run \
         `cargo gpubench OPTIONS` (see `--help` for this executable's options)",
        err.render().to_string().trim_end()
    ))
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    /// Each measurement option's flag with its default and its `--quick` default.
    fn measurement_defaults() -> Vec<(&'static str, String, String)> {
        use gpubench_record::measurement::MeasurementConfig;
        let (s, q) = (MeasurementConfig::standard(), MeasurementConfig::quick());
        vec![
            (
                "--warm-up-time",
                s.warmup_time_s.to_string(),
                q.warmup_time_s.to_string(),
            ),
            (
                "--measurement-time",
                s.measurement_time_s.to_string(),
                q.measurement_time_s.to_string(),
            ),
            (
                "--sample-time",
                s.sample_target_s.to_string(),
                q.sample_target_s.to_string(),
            ),
            (
                "--min-samples",
                s.min_samples.to_string(),
                q.min_samples.to_string(),
            ),
            (
                "--max-samples",
                s.max_samples.to_string(),
                q.max_samples.to_string(),
            ),
            (
                "--target-rel-ci",
                s.target_rel_ci.to_string(),
                q.target_rel_ci.to_string(),
            ),
        ]
    }

    fn help_for(argv: &[&str]) -> Option<String> {
        let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
        let err = HarnessArgs::try_parse_from(&argv).expect_err("the options are refused");
        unknown_option_help(&err, &argv)
    }

    #[test]
    fn an_option_of_cargo_gpubench_is_named_with_the_command_that_takes_it() {
        let help = help_for(&["bench", "--bench", "--save-baseline", "main"]).unwrap();
        assert!(
            help.starts_with("error: --save-baseline is an option of `cargo gpubench`")
                && help.ends_with("run `cargo gpubench --save-baseline main`"),
            "{help}"
        );
        let help = help_for(&["bench", "--baseline=main", "--bench"]).unwrap();
        assert!(
            help.ends_with("run `cargo gpubench --baseline=main`"),
            "{help}"
        );
        // Any other unknown option: clap's error, and why cargo bench handed it over.
        let help = help_for(&["bench", "--bench", "--sample-size", "10"]).unwrap();
        assert!(
            help.contains("--sample-size") && help.contains("cargo bench --bench NAME -- OPTIONS"),
            "{help}"
        );
        // Not an unknown option: clap's own error stands.
        assert!(help_for(&["bench", "--min-samples", "x"]).is_none());
    }

    #[test]
    fn help_states_the_defaults_of_the_measurement_options() {
        let help = HarnessArgs::command().render_long_help().to_string();
        let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
        for (flag, default, quick) in measurement_defaults() {
            let at = help
                .find(&format!("{flag} <"))
                .unwrap_or_else(|| panic!("{flag}: {help}"));
            let end = help[at..].find("[env:").map_or(help.len(), |i| at + i);
            let text = &help[at..end];
            let expected = format!("[default: {default}; --quick: {quick}]");
            assert!(text.contains(&expected), "{flag} says: {text}");
        }
    }

    #[test]
    fn help_states_the_protocol_exit_codes() {
        let help = HarnessArgs::command().render_long_help().to_string();
        let failed = format!("{} a benchmark failed", protocol::EXIT_BENCHMARK_FAILED);
        let usage = format!("{} bad usage", protocol::EXIT_USAGE);
        assert!(help.contains(&failed), "{help}");
        assert!(help.contains(&usage), "{help}");
    }
}
