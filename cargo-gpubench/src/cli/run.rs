//! The options of a run (`cargo gpubench [run]`): what to build and run, how to
//! measure, where to keep results, and their parsers.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::compare::{BaselineArgs, Format, VerdictArgs};

use clap::builder::BoolishValueParser;
use clap::{ArgAction, Args};
use gpubench_record::measurement::{
    InvalidSetting, MeasurementOption, MeasurementSettings, ProcessPolicy,
};

use crate::execute::runner::RunOptions;

/// Which bench targets of which workspace a run or an archive builds.
#[derive(Debug, Clone, Args)]
pub struct TargetArgs {
    /// Only bench targets of these workspace packages.
    #[arg(
        short = 'p',
        long = "package",
        value_name = "SPEC",
        env = "GPUBENCH_PACKAGE",
        value_delimiter = ','
    )]
    pub packages: Vec<String>,

    /// Only these bench targets.
    #[arg(
        long = "bench",
        value_name = "TARGET",
        env = "GPUBENCH_BENCH",
        value_delimiter = ','
    )]
    pub benches: Vec<String>,

    /// Path to the workspace's Cargo.toml.
    #[arg(long, value_name = "PATH", env = "GPUBENCH_MANIFEST_PATH")]
    pub manifest_path: Option<PathBuf>,
}

/// Which listed benchmarks run: shared by a run and `ab`.
#[derive(Debug, Clone, Args)]
pub struct SelectArgs {
    /// Run only benchmarks whose id (or `<target>/<id>`) contains one of these.
    #[arg(value_name = "FILTER", env = "GPUBENCH_FILTER")]
    pub filters: Vec<String>,

    /// Match FILTER (and --skip) against the whole id (or `<target>/<id>`) instead of a
    /// substring.
    #[arg(long, env = "GPUBENCH_EXACT", action = ArgAction::SetTrue, value_parser = BoolishValueParser::new())]
    pub exact: bool,

    /// Leave out benchmarks whose id (or `<target>/<id>`) contains FILTER (with
    /// --exact: equals it), as libtest's --skip does; may be given several times
    /// (GPUBENCH_SKIP holds one). Applies to --list too.
    #[arg(long = "skip", value_name = "FILTER", env = "GPUBENCH_SKIP")]
    pub skip: Vec<String>,

    /// Run only the benchmarks marked ignored.
    #[arg(long, env = "GPUBENCH_IGNORED", conflicts_with = "include_ignored", action = ArgAction::SetTrue, value_parser = BoolishValueParser::new())]
    pub ignored: bool,

    /// Run the benchmarks marked ignored as well as the others.
    #[arg(long, env = "GPUBENCH_INCLUDE_IGNORED", action = ArgAction::SetTrue, value_parser = BoolishValueParser::new())]
    pub include_ignored: bool,
}

impl SelectArgs {
    /// The selection these options ask for.
    pub fn filter(&self) -> crate::execute::select::Filter {
        use crate::execute::select::{Filter, Ignored};
        Filter {
            patterns: self.filters.clone(),
            skip: self.skip.clone(),
            exact: self.exact,
            ignored: if self.ignored {
                Ignored::Only
            } else if self.include_ignored {
                Ignored::Include
            } else {
                Ignored::Skip
            },
        }
    }
}

/// Where each benchmark process runs and how long it may take: shared by a run,
/// `ab` and `capacity`.
#[derive(Debug, Clone, Args)]
pub struct ProcessArgs {
    /// Device to measure on: cpu, cuda or cuda:N (the harness picks when absent).
    #[arg(long, value_name = "DEVICE", env = "GPUBENCH_DEVICE", value_parser = crate::execute::devices::parse_label)]
    pub device: Option<String>,

    /// Time limit of one benchmark process, in seconds; it is killed past it.
    #[arg(
        long,
        value_name = "SECS",
        env = "GPUBENCH_TIMEOUT",
        default_value = "300",
        value_parser = parse_timeout
    )]
    pub timeout: Duration,
}

/// How many processes measure each benchmark when `--processes` is not given: a
/// run's or `ab`'s, each with its `--quick` number.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProcessDefaults {
    /// Without `--quick`.
    pub standard: ProcessPolicy,
    /// With `--quick`.
    pub quick: ProcessPolicy,
}

impl ProcessDefaults {
    /// A run's: [`ProcessPolicy::standard`], 3 with `--quick`.
    pub fn run() -> Self {
        ProcessDefaults {
            standard: ProcessPolicy::standard(),
            quick: ProcessPolicy::fixed(3),
        }
    }

    /// `ab`'s: each process gives one paired ratio, and a verdict on them needs more
    /// than a run's three ([`ProcessPolicy::paired`]; 5 with `--quick`).
    pub fn ab() -> Self {
        ProcessDefaults {
            standard: ProcessPolicy::paired(),
            quick: ProcessPolicy::fixed(5),
        }
    }
}

/// How each benchmark process measures (the bench executables' options, under the
/// same names, and how many processes): shared by a run and `ab`. Recorded in every
/// record's config; the ones that move figures (sample time, warm-up,
/// --throttle-threshold, --flush-l2) are checked when comparing. Each value is
/// checked as it is parsed, and all of them together
/// ([`MeasureArgs::run_options`]) before any process starts, by the rules the
/// harness checks them with ([`MeasurementSettings::checked_config`]).
#[derive(Debug, Clone, Args)]
pub struct MeasureArgs {
    /// Shorter warm-up and measurement bounds and 3 processes per benchmark (for
    /// smoke runs and CI).
    #[arg(long, env = "GPUBENCH_QUICK", action = ArgAction::SetTrue, value_parser = BoolishValueParser::new())]
    pub quick: bool,

    /// Processes per benchmark: N, or MIN..MAX to let the run decide [default: 3..6,
    /// where only device-bound benchmarks go past 3, while their interval is wider
    /// than ±3%; 3 with --quick].
    #[arg(
        long,
        value_name = "N|MIN..MAX",
        env = "GPUBENCH_PROCESSES",
        value_parser = parse_processes
    )]
    pub processes: Option<ProcessPolicy>,

    /// Flush the GPU's L2 cache before every timed call: one call per sample, after a
    /// warm-up of flushed calls for the whole warm-up time (a cold-cache time at the
    /// clock flushed calls settle at).
    #[arg(long, env = "GPUBENCH_FLUSH_L2", action = ArgAction::SetTrue, value_parser = BoolishValueParser::new())]
    pub flush_l2: bool,

    /// Warm-up time bound of a process, seconds [default: 1; --quick: 0.2].
    #[arg(long, value_name = "SECS", env = "GPUBENCH_WARM_UP_TIME", value_parser = value_of(MeasurementOption::WarmUpTime))]
    pub warm_up_time: Option<f64>,
    /// Measurement time of a benchmark, seconds, split across its processes
    /// [default: 5; --quick: 1].
    #[arg(long, value_name = "SECS", env = "GPUBENCH_MEASUREMENT_TIME", value_parser = value_of(MeasurementOption::MeasurementTime))]
    pub measurement_time: Option<f64>,
    /// Target duration of one sample, seconds [default: 0.01; --quick: 0.005].
    #[arg(long, value_name = "SECS", env = "GPUBENCH_SAMPLE_TIME", value_parser = value_of(MeasurementOption::SampleTime))]
    pub sample_time: Option<f64>,
    /// Fewest samples per process [default: 10; --quick: 5].
    #[arg(long, value_name = "N", env = "GPUBENCH_MIN_SAMPLES", value_parser = count_of(MeasurementOption::MinSamples))]
    pub min_samples: Option<u32>,
    /// Most samples per process [default: 200; --quick: 100].
    #[arg(long, value_name = "N", env = "GPUBENCH_MAX_SAMPLES", value_parser = count_of(MeasurementOption::MaxSamples))]
    pub max_samples: Option<u32>,
    /// Stop a process once its median's 95% interval is within ± this fraction
    /// [default: 0.01; --quick: 0.02].
    #[arg(long, value_name = "FRACTION", env = "GPUBENCH_TARGET_REL_CI", value_parser = value_of(MeasurementOption::TargetRelCi))]
    pub target_rel_ci: Option<f64>,
    /// Leave out samples whose SM clock fell below this fraction of the GPU's default
    /// clock (nvbench's rule) [default: 0.75; 0: only hardware, thermal and
    /// power-brake slowdowns].
    #[arg(long, value_name = "FRACTION", env = "GPUBENCH_THROTTLE_THRESHOLD", value_parser = value_of(MeasurementOption::ThrottleThreshold))]
    pub throttle_threshold: Option<f64>,
}

impl MeasureArgs {
    /// How many processes measure each benchmark: `--processes`, else `defaults`'
    /// number (its `--quick` one with `--quick`).
    pub fn process_policy(&self, defaults: ProcessDefaults) -> ProcessPolicy {
        match self.processes {
            Some(p) => p,
            None if self.quick => defaults.quick,
            None => defaults.standard,
        }
    }

    /// The settings given, as the one settings type.
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

    /// The options every benchmark process gets, checked together: the one place a
    /// command's options become how its processes run and measure. Each process
    /// measures its share of the benchmark's measurement time (split over the fewest
    /// processes `defaults` or `--processes` run).
    pub fn run_options(
        &self,
        process: &ProcessArgs,
        defaults: ProcessDefaults,
    ) -> Result<RunOptions, InvalidSetting> {
        let mut settings = self.settings();
        let config = settings.checked_config()?;
        let processes = self.process_policy(defaults);
        settings.measurement_time_s = Some(RunOptions::split_measurement_time(
            config.measurement_time_s,
            &processes,
        ));
        Ok(RunOptions {
            device: process.device.clone(),
            timeout: process.timeout,
            processes,
            settings,
            time_per_benchmark: Duration::from_secs_f64(
                config.warmup_time_s + config.measurement_time_s,
            ),
        })
    }
}

/// How a run spreads its benchmarks over devices and machines.
#[derive(Debug, Clone, Args)]
pub struct SpreadArgs {
    /// Measure on several devices at once: `cuda:0,cuda:1,…`, or `all` (every GPU the
    /// bench executable sees, which must be of one model). Each device runs one
    /// benchmark process at a time, never two; a benchmark keeps the device of its
    /// first process, and its record names it.
    #[arg(
        long,
        value_name = "LIST|all",
        env = "GPUBENCH_DEVICES",
        conflicts_with = "device",
        value_parser = parse_devices
    )]
    pub devices: Option<crate::execute::devices::DeviceList>,

    /// Run only part K of N of the selected benchmarks, e.g. for one job of a CI
    /// matrix: `count:K/N` deals them round-robin in sorted order, `hash:K/N` by a
    /// stable hash of their name (a benchmark keeps its part as the suite changes).
    /// The same on every machine; the run records its part.
    #[arg(long, value_name = "count:K/N|hash:K/N", env = "GPUBENCH_PARTITION", value_parser = parse_partition)]
    pub partition: Option<crate::execute::partition::Partition>,
}

/// Bench executables built elsewhere, run instead of building with cargo.
#[derive(Debug, Clone, Args)]
pub struct PrebuiltArgs {
    /// Run these already-built bench executables instead of building with cargo
    /// (for a machine without a Rust toolchain). One --exe takes several paths
    /// (--exe=PATH takes one), so FILTERs go before it or after `--`: `--exe a b --
    /// matmul`.
    #[arg(
        long = "exe",
        value_name = "PATH",
        env = "GPUBENCH_EXE",
        num_args = 1..,
        value_delimiter = ',',
        conflicts_with_all = ["packages", "manifest_path"]
    )]
    pub exes: Vec<PathBuf>,

    /// Run the bench executables of an archive made by `cargo gpubench archive`,
    /// without cargo or sources: it is extracted to a temporary directory, its
    /// libtorch version checked against the one found here, its baselines compared
    /// with (unless --baselines-dir) and its git commit recorded.
    #[arg(
        long = "archive",
        value_name = "FILE",
        env = "GPUBENCH_ARCHIVE",
        conflicts_with_all = ["exes", "packages", "manifest_path"]
    )]
    pub archive: Option<PathBuf>,
}

/// What a command prints and where it keeps its results: shared by a run, `ab` and
/// `capacity`.
#[derive(Debug, Clone, Args)]
pub struct OutputArgs {
    /// Output format on stdout.
    #[arg(
        long,
        value_enum,
        value_name = "FORMAT",
        env = "GPUBENCH_FORMAT",
        default_value_t = Format::Human
    )]
    pub format: Format,

    /// Where runs are stored [default: `<target-dir>/gpubench`, or ./target/gpubench
    /// with --exe or --archive].
    #[arg(long, value_name = "DIR", env = "GPUBENCH_OUT_DIR")]
    pub out_dir: Option<PathBuf>,
}

/// Options of a run.
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// Which listed benchmarks run.
    #[command(flatten)]
    pub select: SelectArgs,

    /// Which bench targets of which workspace.
    #[command(flatten)]
    pub targets: TargetArgs,

    /// Print the matching benchmarks as `<target>/<id>`, sorted, ignored ones marked,
    /// without running them; with --partition, only the part a run would measure.
    #[arg(long, env = "GPUBENCH_LIST", action = ArgAction::SetTrue, value_parser = BoolishValueParser::new())]
    pub list: bool,

    /// How the benchmarks are spread over devices and machines.
    #[command(flatten)]
    pub spread: SpreadArgs,

    /// Where each benchmark process runs, and its time limit.
    #[command(flatten)]
    pub process: ProcessArgs,

    /// How each benchmark process measures.
    #[command(flatten)]
    pub measure: MeasureArgs,

    /// Bench executables built elsewhere, instead of the targets.
    #[command(flatten)]
    pub prebuilt: PrebuiltArgs,

    /// What the run prints and where it keeps results.
    #[command(flatten)]
    pub output: OutputArgs,

    /// Do not write the HTML report (`<out-dir>/report/index.html`) after the run.
    #[arg(long, env = "GPUBENCH_NO_REPORT", action = ArgAction::SetTrue, value_parser = BoolishValueParser::new())]
    pub no_report: bool,

    /// Which baseline to compare with and save as.
    #[command(flatten)]
    pub baselines: BaselineArgs,

    /// How comparisons decide and gate.
    #[command(flatten)]
    pub verdicts: VerdictArgs,
}

impl RunArgs {
    /// Where the run's benchmarks come from and its results go.
    pub(crate) fn sources(&self) -> Sources<'_> {
        Sources {
            targets: &self.targets,
            prebuilt: &self.prebuilt,
            out_dir: self.output.out_dir.as_deref(),
            list: self.list,
        }
    }
}

/// Where a command's benchmarks come from (the workspace's bench targets, bench
/// executables or an archive), and where its results go: what a run and `capacity`
/// share.
pub(crate) struct Sources<'a> {
    /// Which bench targets of which workspace.
    pub targets: &'a TargetArgs,
    /// Bench executables built elsewhere, instead of the targets.
    pub prebuilt: &'a PrebuiltArgs,
    /// `--out-dir`.
    pub out_dir: Option<&'a Path>,
    /// `--list`: nothing is stored.
    pub list: bool,
}

/// Most processes a benchmark may be given.
pub(crate) const MAX_PROCESSES: u32 = 100;

/// `N` (exactly N processes) or `MIN..MAX` (at least MIN, at most MAX).
pub(super) fn parse_processes(s: &str) -> Result<ProcessPolicy, String> {
    let number = |x: &str| -> Result<u32, String> {
        let n: u32 = x
            .trim()
            .parse()
            .map_err(|_| format!("`{s}` is not N or MIN..MAX (e.g. 5 or 3..6)"))?;
        if n == 0 || n > MAX_PROCESSES {
            return Err(format!(
                "the number of processes must be between 1 and {MAX_PROCESSES}, got `{s}`"
            ));
        }
        Ok(n)
    };
    match s.split_once("..") {
        None => Ok(ProcessPolicy::fixed(number(s)?)),
        Some((lo, hi)) => {
            let (min, max) = (number(lo)?, number(hi)?);
            if min > max {
                return Err(format!("MIN is above MAX in `{s}`"));
            }
            Ok(ProcessPolicy {
                min,
                max,
                target_rel_ci: ProcessPolicy::standard().target_rel_ci,
            })
        }
    }
}

/// A parser of `option`'s number that checks it by the option's rule.
fn value_of(option: MeasurementOption) -> impl Fn(&str) -> Result<f64, String> + Clone {
    move |s| {
        let v: f64 = s
            .trim()
            .parse()
            .map_err(|_| format!("`{s}` is not a number"))?;
        option.check(v).map_err(|e| e.to_string())
    }
}

/// A parser of `option`'s count that checks it by the option's rule.
fn count_of(option: MeasurementOption) -> impl Fn(&str) -> Result<u32, String> + Clone {
    move |s| {
        let n: u32 = s
            .trim()
            .parse()
            .map_err(|_| format!("`{s}` is not a whole number"))?;
        option
            .check(f64::from(n))
            .map(|_| n)
            .map_err(|e| e.to_string())
    }
}

pub(super) fn parse_timeout(s: &str) -> Result<Duration, String> {
    let secs: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a number of seconds"))?;
    if !(secs.is_finite() && secs > 0.0) {
        return Err(format!("the timeout must be positive, got `{s}`"));
    }
    Ok(Duration::from_secs_f64(secs))
}

pub(super) fn parse_devices(s: &str) -> Result<crate::execute::devices::DeviceList, String> {
    s.parse()
}

pub(super) fn parse_partition(s: &str) -> Result<crate::execute::partition::Partition, String> {
    s.parse()
}
