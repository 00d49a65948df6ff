//! The command line of `cargo gpubench`: every option also reads a `GPUBENCH_*`
//! environment variable, so CI can set options without editing command lines.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use clap::builder::BoolishValueParser;
use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{ArgAction, Args, CommandFactory, Parser, Subcommand, ValueEnum};
use gpubench_analysis::baseline::validate_name;
use gpubench_analysis::baseline::{Gate, Metric};
use gpubench_analysis::compare::{
    DEFAULT_HOST_NOISE_THRESHOLD, DEFAULT_NOISE_THRESHOLD, DEFAULT_SIGNIFICANCE,
};
use gpubench_analysis::{CompareConfig, FailOn, ProcessPolicy};

use crate::exit;

/// Discover, build and run `#[gpu_bench]` benchmarks, each in its own process.
#[derive(Debug, Parser)]
#[command(
    name = "cargo-gpubench",
    bin_name = "cargo gpubench",
    version,
    about = "Discover, build and run #[gpu_bench] benchmarks, each in its own process.",
    long_about = "Discover, build and run #[gpu_bench] benchmarks, each in its own process.\n\n\
        Bench targets of workspace packages that depend on gpubench-core are built with \
        `cargo bench --no-run`, listed, and every selected benchmark is measured in \
        several processes of its own (rounds: round 1 of every benchmark, then round 2, \
        ...), each with a timeout: a machine's speed changes from one process to the \
        next, so the interval of every figure comes from how the processes differ. A \
        crash, panic, out-of-memory or timeout becomes a failed record and the other \
        benchmarks still run. Each run is stored under \
        <target-dir>/gpubench/runs/<run-id>/ (one JSON record per benchmark and a \
        manifest.json), with <target-dir>/gpubench/latest pointing at it, and its HTML \
        report is written to <target-dir>/gpubench/report/index.html (--no-report skips \
        it; `cargo gpubench report` renders it again).\n\n\
        libtorch is found through LIBTORCH, the project's .venv, a torch importable by \
        python3, or the build scripts' native library paths, and put on the loader path \
        of every benchmark process. The harness's own tuning variables (e.g. \
        GPUBENCH_MEASUREMENT_TIME) pass through to benchmark processes.\n\n\
        Baselines: --save-baseline NAME saves the run's measurements as \
        <workspace>/gpubench/baselines/NAME/ (one small JSON file per benchmark, made \
        to be committed to git). A run is compared with --baseline NAME, or by default \
        with the baseline `main` when one is saved (--no-baseline skips it); the \
        terminal table gains a change column, the comparison is stored as \
        runs/<run-id>/comparison.json, and --fail-on decides which verdicts end the \
        run with exit code 4. Comparing and saving in one run compares with the \
        baseline as it was before this run.\n\n\
        Words in the summary. A benchmark: passed, or failed (panic, out of memory, \
        crash, timeout, exit code); device-bound: the host returns long before the \
        device finishes, so the figure is device time; launch-bound: the device waits \
        on the host's dispatch; syncs inside the routine: host dispatch tracks device \
        time (something reads back); unstable: a process's samples never settled within \
        its time bound; unstable across processes: the processes' medians differ by \
        more than 10%; throttled: some samples ran with the GPU's SM clock below 75% \
        of its default or during a hardware, thermal or power-brake slowdown, and are \
        left out of the figures (the count is shown); contended: another process used \
        the GPU while the benchmark ran, so its figures may be slow by what that \
        process took. A comparison notes when its two sides ran at clearly different \
        SM clocks. --flush-l2 measures one call per sample after a flush, so the GPU \
        idles and clocks up between calls: a rested-GPU figure, often faster than \
        calls back to back. A verdict (on time, kernel time or counts): regressed or \
        improved: the whole 90% interval of the change lies beyond the threshold; no \
        change: it lies inside; ambiguous: neither, or too few processes; not \
        compared: recorded on another device model; new: not in the baseline. A run: \
        incomplete: its cargo gpubench died before the end.",
    after_long_help = exit::HELP,
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    /// What to do; running benchmarks when absent.
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Options of the default action (running benchmarks).
    #[command(flatten)]
    pub run: RunArgs,
}

/// The subcommands.
// Parsed once per process: the size of the run variant does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run benchmarks (the default); with --exe, run already-built bench executables
    /// without cargo.
    #[command(after_long_help = exit::HELP)]
    Run(RunArgs),
    /// Compare two stored baselines or runs, without running anything.
    #[command(
        long_about = "Compare two stored baselines or runs, without running anything: \
            BASELINE is the reference, CURRENT is judged against it, benchmark by \
            benchmark, with the same statistics and --fail-on gate as a run.",
        after_long_help = COMPARE_HELP
    )]
    Compare(CompareArgs),
    /// Render the HTML report of a stored run again (the latest by default).
    #[command(
        long_about = "Render the HTML report of a stored run again, without running \
            anything: RUN's records, and its comparison with the baseline when it was \
            compared, are written to <out-dir>/report/ (index.html and a page per \
            benchmark), replacing the report there.",
        after_long_help = REPORT_HELP
    )]
    Report(ReportArgs),
    /// Install the libtorch this build needs into the user's cache, once.
    #[command(
        long_about = "Install libtorch (PyPI's torch wheel, CPU and CUDA 13, with the \
            CUDA headers kernel timing builds against) into a virtual environment in \
            the user's cache: GPUBENCH_CACHE_DIR, else XDG_CACHE_HOME/gpubench, else \
            ~/.cache/gpubench. cargo gpubench finds it there, builds tch against it and \
            runs benchmarks with it, with no environment to set. About 5 GB; needs \
            python3 with venv and access to PyPI."
    )]
    Setup(SetupArgs),
    /// Check the machine: libtorch, CUDA, the NVIDIA driver, each GPU's clocks, modes
    /// and other processes, the host's CPU governor and load.
    #[command(
        long_about = "Check the machine before benchmarking on it: the libtorch benchmarks \
            would load (where, which version, whether it is the one tch needs), whether \
            CUDA is usable, the NVIDIA driver and each GPU through NVML (clocks, \
            persistence mode, compute mode, ECC, slowdown reasons, other processes on \
            it), and the host (CPU frequency governor, load average). Each problem is \
            listed with why it makes results unreliable and what to do.",
        after_long_help = crate::doctor::DOCTOR_HELP
    )]
    Doctor(crate::doctor::DoctorArgs),
}

/// Options of `setup`.
#[derive(Debug, Clone, Args)]
pub struct SetupArgs {
    /// The virtual environment to make [default: <cache>/torch-<version>].
    #[arg(long, value_name = "DIR", env = "GPUBENCH_SETUP_VENV")]
    pub venv: Option<PathBuf>,
    /// The Python that makes it.
    #[arg(
        long,
        value_name = "PYTHON",
        env = "GPUBENCH_SETUP_PYTHON",
        default_value = "python3"
    )]
    pub python: OsString,
    /// Leave out the CUDA headers wheel (no kernel timing is built then).
    #[arg(long, env = "GPUBENCH_SETUP_NO_CUDA_HEADERS", action = ArgAction::SetTrue, value_parser = BoolishValueParser::new())]
    pub no_cuda_headers: bool,
    /// Install again even when it is there.
    #[arg(long, env = "GPUBENCH_SETUP_FORCE", action = ArgAction::SetTrue, value_parser = BoolishValueParser::new())]
    pub force: bool,
}

/// How `report` resolves its argument, and its exit codes.
pub const REPORT_HELP: &str = "\
RUN is resolved like the sides of `cargo gpubench compare` (see its --help):
latest (the default), run:ID, an id or the start of one, or a run directory's path.
A saved baseline is not a run and is refused.

Exit codes:
  0    the report was written (with --open, whether or not a browser opened)
  2    bad input: an unknown or ambiguous run, a corrupt or newer file
  5    a file could not be read, or the report could not be written";

/// How `compare` resolves its arguments, and its exit codes.
pub const COMPARE_HELP: &str = "\
How BASELINE and CURRENT are resolved:
  baseline:NAME   the saved baseline NAME (<baselines-dir>/NAME/)
  run:ID          the stored run ID (<out-dir>/runs/ID/); also run:latest, run:PATH
  latest          the newest run (what <out-dir>/latest points at)
  PATH            anything with a '/' (e.g. ./dir): a run directory (it holds
                  manifest.json) or a directory of baseline files
  NAME            a saved baseline NAME, or a stored run whose id is NAME or starts
                  with NAME; when both exist it is ambiguous and refused: write
                  baseline:NAME or run:NAME

Exit codes:
  0    compared; the --fail-on gate did not trip
  1    CURRENT holds a failed benchmark (wins over 4)
  2    bad input: an unknown or ambiguous name, a corrupt or newer file
  4    the --fail-on gate tripped: a regression was found
  5    a file could not be read or written";

impl Cli {
    /// Parses the command line as cargo passes it: `cargo gpubench ...` runs
    /// `cargo-gpubench gpubench ...`, so a leading `gpubench` is dropped.
    pub fn parse_from_cargo<I, T>(args: I) -> Result<Cli, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString>,
    {
        let mut args: Vec<OsString> = args.into_iter().map(Into::into).collect();
        if args.get(1).is_some_and(|a| a == "gpubench") {
            args.remove(1);
        }
        Cli::try_parse_from(args)
    }

    /// The options of a run, from the `run` subcommand or the top level (with
    /// `compare`, the top level's, which it does not use: see [`Cli::compare_args`]).
    pub fn run_args(&self) -> &RunArgs {
        match &self.command {
            Some(Command::Run(args)) => args,
            Some(
                Command::Compare(_) | Command::Report(_) | Command::Setup(_) | Command::Doctor(_),
            )
            | None => &self.run,
        }
    }

    /// The options of `compare`, when that is the subcommand.
    pub fn compare_args(&self) -> Option<&CompareArgs> {
        match &self.command {
            Some(Command::Compare(args)) => Some(args),
            _ => None,
        }
    }

    /// The options of `setup`, when that is the subcommand.
    pub fn setup_args(&self) -> Option<&SetupArgs> {
        match &self.command {
            Some(Command::Setup(args)) => Some(args),
            _ => None,
        }
    }

    /// The options of `doctor`, when that is the subcommand.
    pub fn doctor_args(&self) -> Option<&crate::doctor::DoctorArgs> {
        match &self.command {
            Some(Command::Doctor(args)) => Some(args),
            _ => None,
        }
    }

    /// The options of `report`, when that is the subcommand.
    pub fn report_args(&self) -> Option<&ReportArgs> {
        match &self.command {
            Some(Command::Report(args)) => Some(args),
            _ => None,
        }
    }
}

/// Options of a run.
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// Run only benchmarks whose id (or `<target>/<id>`) contains one of these.
    #[arg(value_name = "FILTER", env = "GPUBENCH_FILTER")]
    pub filters: Vec<String>,

    /// Match FILTER against the whole id (or `<target>/<id>`) instead of a substring.
    #[arg(long, env = "GPUBENCH_EXACT", action = ArgAction::SetTrue, value_parser = BoolishValueParser::new())]
    pub exact: bool,

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

    /// Print the matching benchmarks as `<target>/<id>`, sorted, ignored ones marked,
    /// without running them.
    #[arg(long, env = "GPUBENCH_LIST", action = ArgAction::SetTrue, value_parser = BoolishValueParser::new())]
    pub list: bool,

    /// Device to measure on: cpu, cuda or cuda:N (the harness picks when absent).
    #[arg(long, value_name = "DEVICE", env = "GPUBENCH_DEVICE", value_parser = parse_device)]
    pub device: Option<String>,

    /// Run only the benchmarks marked ignored.
    #[arg(long, env = "GPUBENCH_IGNORED", conflicts_with = "include_ignored", action = ArgAction::SetTrue, value_parser = BoolishValueParser::new())]
    pub ignored: bool,

    /// Run the benchmarks marked ignored as well as the others.
    #[arg(long, env = "GPUBENCH_INCLUDE_IGNORED", action = ArgAction::SetTrue, value_parser = BoolishValueParser::new())]
    pub include_ignored: bool,

    /// Time limit of one benchmark process, in seconds; it is killed past it.
    #[arg(
        long,
        value_name = "SECS",
        env = "GPUBENCH_TIMEOUT",
        default_value = "300",
        value_parser = parse_timeout
    )]
    pub timeout: Duration,

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

    /// Flush the GPU's L2 cache before every timed call: one call per sample, so the
    /// GPU idles and clocks up between calls (a rested GPU's cold-cache time, often
    /// faster than calls back to back).
    #[arg(long, env = "GPUBENCH_FLUSH_L2", action = ArgAction::SetTrue, value_parser = BoolishValueParser::new())]
    pub flush_l2: bool,

    /// The harness's measurement options, passed to every benchmark process.
    #[command(flatten)]
    pub measure: MeasureArgs,

    /// Path to the workspace's Cargo.toml.
    #[arg(long, value_name = "PATH", env = "GPUBENCH_MANIFEST_PATH")]
    pub manifest_path: Option<PathBuf>,

    /// Output format on stdout.
    #[arg(
        long,
        value_enum,
        value_name = "FORMAT",
        env = "GPUBENCH_FORMAT",
        default_value_t = Format::Human
    )]
    pub format: Format,

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

    /// Where runs are stored [default: `<target-dir>/gpubench`, or ./target/gpubench
    /// with --exe].
    #[arg(long, value_name = "DIR", env = "GPUBENCH_OUT_DIR")]
    pub out_dir: Option<PathBuf>,

    /// Do not write the HTML report (`<out-dir>/report/index.html`) after the run.
    #[arg(long, env = "GPUBENCH_NO_REPORT", action = ArgAction::SetTrue, value_parser = BoolishValueParser::new())]
    pub no_report: bool,

    /// Compare the run with the saved baseline NAME [default: `main` when it is
    /// saved].
    #[arg(
        long,
        value_name = "NAME",
        env = "GPUBENCH_BASELINE",
        value_parser = parse_baseline_name,
        help_heading = "Baselines"
    )]
    pub baseline: Option<String>,

    /// Do not compare with any baseline (not even `main`).
    #[arg(
        long,
        env = "GPUBENCH_NO_BASELINE",
        conflicts_with = "baseline",
        action = ArgAction::SetTrue,
        value_parser = BoolishValueParser::new(),
        help_heading = "Baselines"
    )]
    pub no_baseline: bool,

    /// Save the run's measurements as baseline NAME (one file per benchmark that
    /// passed; failed ones keep their previous file), after comparing.
    #[arg(
        long,
        value_name = "NAME",
        env = "GPUBENCH_SAVE_BASELINE",
        value_parser = parse_baseline_name,
        help_heading = "Baselines"
    )]
    pub save_baseline: Option<String>,

    /// How comparisons decide and gate.
    #[command(flatten)]
    pub verdicts: VerdictArgs,
}

/// Options of `cargo gpubench compare`.
#[derive(Debug, Clone, Args)]
pub struct CompareArgs {
    /// The reference side: a saved baseline or a stored run (how names resolve: see
    /// --help).
    #[arg(value_name = "BASELINE")]
    pub baseline: String,

    /// The side judged against BASELINE: a saved baseline or a stored run.
    #[arg(value_name = "CURRENT")]
    pub current: String,

    /// Output format on stdout.
    #[arg(
        long,
        value_enum,
        value_name = "FORMAT",
        env = "GPUBENCH_FORMAT",
        default_value_t = Format::Human
    )]
    pub format: Format,

    /// Path to the workspace's Cargo.toml (to find its baselines and runs).
    #[arg(long, value_name = "PATH", env = "GPUBENCH_MANIFEST_PATH")]
    pub manifest_path: Option<PathBuf>,

    /// Where runs are stored [default: `<target-dir>/gpubench` of the workspace, or
    /// ./target/gpubench outside one].
    #[arg(long, value_name = "DIR", env = "GPUBENCH_OUT_DIR")]
    pub out_dir: Option<PathBuf>,

    /// How the comparison decides and gates.
    #[command(flatten)]
    pub verdicts: VerdictArgs,
}

/// Options of `cargo gpubench report`.
#[derive(Debug, Clone, Args)]
pub struct ReportArgs {
    /// The stored run to report on (how names resolve: see --help).
    #[arg(value_name = "RUN", default_value = "latest")]
    pub run: String,

    /// Open the report in a browser (xdg-open, or open on macOS) once written.
    #[arg(long, env = "GPUBENCH_OPEN", action = ArgAction::SetTrue, value_parser = BoolishValueParser::new())]
    pub open: bool,

    /// Path to the workspace's Cargo.toml (to find its runs).
    #[arg(long, value_name = "PATH", env = "GPUBENCH_MANIFEST_PATH")]
    pub manifest_path: Option<PathBuf>,

    /// Where runs are stored, and the report is written [default:
    /// `<target-dir>/gpubench` of the workspace, or ./target/gpubench outside one].
    #[arg(long, value_name = "DIR", env = "GPUBENCH_OUT_DIR")]
    pub out_dir: Option<PathBuf>,

    /// Directory holding the saved baselines, to tell a run from a baseline of the
    /// same name [default: `<workspace>/gpubench/baselines`, or ./gpubench/baselines
    /// outside a workspace].
    #[arg(long, value_name = "DIR", env = "GPUBENCH_BASELINES_DIR")]
    pub baselines_dir: Option<PathBuf>,
}

/// How a comparison with a baseline decides, what fails the run, and where its
/// summary and baselines go; shared by a run and `compare`.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Baselines")]
pub struct VerdictArgs {
    /// Directory holding the saved baselines, one directory per name [default:
    /// `<workspace>/gpubench/baselines`, or ./gpubench/baselines with --exe or outside
    /// a workspace].
    #[arg(long, value_name = "DIR", env = "GPUBENCH_BASELINES_DIR")]
    pub baselines_dir: Option<PathBuf>,

    /// Largest p-value (bootstrap test of "no change") for a change to count as
    /// significant; between 0 and 1.
    #[arg(
        long,
        value_name = "P",
        env = "GPUBENCH_SIGNIFICANCE",
        default_value_t = DEFAULT_SIGNIFICANCE,
        value_parser = parse_significance
    )]
    pub significance: f64,

    /// Relative change that is noise, not a change: with 0.02 (or 2%) a device-bound
    /// benchmark is only called regressed or improved when the whole 90% interval of
    /// its change lies beyond ±2% (and beyond 1.5 times the spread between its
    /// processes).
    #[arg(
        long,
        value_name = "FRACTION",
        env = "GPUBENCH_NOISE_THRESHOLD",
        default_value_t = DEFAULT_NOISE_THRESHOLD,
        value_parser = parse_noise_threshold
    )]
    pub noise_threshold: f64,

    /// Noise threshold of benchmarks that are not device-bound: their time rests on the
    /// host's dispatch speed, which drifts between runs (on an H200 by up to 45%), so
    /// smaller changes of it are no change. Kernel time is their sensitive gate.
    #[arg(
        long,
        value_name = "FRACTION",
        env = "GPUBENCH_HOST_NOISE_THRESHOLD",
        default_value_t = DEFAULT_HOST_NOISE_THRESHOLD,
        value_parser = parse_noise_threshold
    )]
    pub host_noise_threshold: f64,

    /// Compare with a baseline recorded on another device model (otherwise such
    /// benchmarks are listed as not compared, naming both devices).
    #[arg(
        long,
        env = "GPUBENCH_ALLOW_DEVICE_MISMATCH",
        action = ArgAction::SetTrue,
        value_parser = BoolishValueParser::new()
    )]
    pub allow_device_mismatch: bool,

    /// Compare benchmarks whose two sides were measured with settings that move the
    /// figures (sample time, warm-up, --flush-l2; otherwise they are listed as not
    /// compared, naming the difference).
    #[arg(
        long,
        env = "GPUBENCH_ALLOW_SETTINGS_MISMATCH",
        action = ArgAction::SetTrue,
        value_parser = BoolishValueParser::new()
    )]
    pub allow_settings_mismatch: bool,

    /// Which verdicts end the run with exit code 4: `regressed`; `ambiguous`
    /// (regressed, ambiguous, or not compared, e.g. another device); `never` (report
    /// only).
    #[arg(
        long,
        value_name = "WHEN",
        env = "GPUBENCH_FAIL_ON",
        default_value = "regressed",
        value_parser = PossibleValuesParser::new(FailOn::ALL.map(FailOn::as_str))
            .map(|s| s.parse::<FailOn>().expect("clap checked the value"))
    )]
    pub fail_on: FailOn,

    /// The metrics whose verdicts --fail-on looks at, comma-separated: `time` (device
    /// time, else synced wall time), `kernel` (kernel time), `counters` (kernels,
    /// copies, syncs and allocations per call). Launch-bound work is best gated on
    /// `kernel,counters`: its time rests on the host.
    #[arg(
        long,
        value_name = "METRICS",
        env = "GPUBENCH_GATE_ON",
        default_value = "time,kernel,counters",
        value_delimiter = ',',
        value_parser = PossibleValuesParser::new(Metric::ALL.map(Metric::as_str))
            .map(|s| s.parse::<Metric>().expect("clap checked the value"))
    )]
    pub gate_on: Vec<Metric>,

    /// Also write the Markdown summary (the --format markdown one) to this file,
    /// e.g. for a pull-request comment or $GITHUB_STEP_SUMMARY.
    #[arg(long, value_name = "PATH", env = "GPUBENCH_SUMMARY_FILE")]
    pub summary_file: Option<PathBuf>,
}

impl VerdictArgs {
    /// The metrics the gate looks at.
    pub fn gate(&self) -> Gate {
        Gate::of(&self.gate_on)
    }

    /// The statistical settings of the comparison.
    pub fn compare_config(&self) -> CompareConfig {
        CompareConfig {
            significance: self.significance,
            noise_threshold: self.noise_threshold,
            host_noise_threshold: self.host_noise_threshold,
            ..CompareConfig::default()
        }
    }
}

/// How results are printed on stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// A table for people; progress on stderr.
    Human,
    /// One JSON document for programs; no progress bar.
    Json,
    /// A Markdown summary for a pull-request comment.
    Markdown,
}

/// The environment variables this command line reads. Benchmark processes do not
/// inherit them: the options reach the harness as explicit arguments, so a variable
/// meant for the subcommand (e.g. `GPUBENCH_IGNORED`) cannot change what the harness
/// lists or runs behind its back.
pub fn option_env_vars() -> Vec<String> {
    fn collect(cmd: &clap::Command, out: &mut Vec<String>) {
        for arg in cmd.get_arguments() {
            if let Some(env) = arg.get_env() {
                out.push(env.to_string_lossy().into_owned());
            }
        }
        for sub in cmd.get_subcommands() {
            collect(sub, out);
        }
    }
    let mut out = Vec::new();
    collect(&Cli::command(), &mut out);
    out.sort();
    out.dedup();
    out
}

/// Most processes a benchmark may be given.
pub const MAX_PROCESSES: u32 = 100;

impl RunArgs {
    /// How many processes measure each benchmark: `--processes`, else 3 with
    /// `--quick`, else [`ProcessPolicy::standard`].
    pub fn process_policy(&self) -> ProcessPolicy {
        match self.processes {
            Some(p) => p,
            None if self.quick => ProcessPolicy::fixed(3),
            None => ProcessPolicy::standard(),
        }
    }
}

/// `N` (exactly N processes) or `MIN..MAX` (at least MIN, at most MAX).
fn parse_processes(s: &str) -> Result<ProcessPolicy, String> {
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

/// The measurement options of the bench executables, under the same names, so a
/// run sets them like the harness; recorded in every record's config, and the ones
/// that move figures (sample time, warm-up, --flush-l2) are checked when comparing.
#[derive(Debug, Clone, Default, Args)]
pub struct MeasureArgs {
    /// Warm-up time bound of a process, seconds [default: 1; --quick: 0.2].
    #[arg(long, value_name = "SECS", env = "GPUBENCH_WARM_UP_TIME", value_parser = parse_seconds)]
    pub warm_up_time: Option<f64>,
    /// Measurement time of a benchmark, seconds, split across its processes
    /// [default: 5; --quick: 1].
    #[arg(long, value_name = "SECS", env = "GPUBENCH_MEASUREMENT_TIME", value_parser = parse_seconds)]
    pub measurement_time: Option<f64>,
    /// Target duration of one sample, seconds [default: 0.01; --quick: 0.005].
    #[arg(long, value_name = "SECS", env = "GPUBENCH_SAMPLE_TIME", value_parser = parse_seconds)]
    pub sample_time: Option<f64>,
    /// Fewest samples per process [default: 10; --quick: 5].
    #[arg(long, value_name = "N", env = "GPUBENCH_MIN_SAMPLES", value_parser = clap::value_parser!(u32).range(2..))]
    pub min_samples: Option<u32>,
    /// Most samples per process [default: 200; --quick: 100].
    #[arg(long, value_name = "N", env = "GPUBENCH_MAX_SAMPLES", value_parser = clap::value_parser!(u32).range(2..))]
    pub max_samples: Option<u32>,
    /// Stop a process once its median's 95% interval is within ± this fraction
    /// [default: 0.01; --quick: 0.02].
    #[arg(long, value_name = "FRACTION", env = "GPUBENCH_TARGET_REL_CI", value_parser = parse_fraction)]
    pub target_rel_ci: Option<f64>,
}

fn parse_seconds(s: &str) -> Result<f64, String> {
    let secs: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a number of seconds"))?;
    if !(secs.is_finite() && secs > 0.0) {
        return Err(format!("a time must be positive, got `{s}`"));
    }
    Ok(secs)
}

fn parse_fraction(s: &str) -> Result<f64, String> {
    let x: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a number"))?;
    if !(x.is_finite() && x > 0.0 && x < 1.0) {
        return Err(format!("a fraction strictly between 0 and 1, got `{s}`"));
    }
    Ok(x)
}

fn parse_timeout(s: &str) -> Result<Duration, String> {
    let secs: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a number of seconds"))?;
    if !(secs.is_finite() && secs > 0.0) {
        return Err(format!("the timeout must be positive, got `{s}`"));
    }
    Ok(Duration::from_secs_f64(secs))
}

fn parse_baseline_name(s: &str) -> Result<String, String> {
    validate_name(s).map_err(|e| e.to_string())?;
    Ok(s.to_string())
}

fn parse_significance(s: &str) -> Result<f64, String> {
    let p: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a number"))?;
    if p > 0.0 && p < 1.0 {
        Ok(p)
    } else {
        Err(format!(
            "the significance must lie strictly between 0 and 1, got `{s}`"
        ))
    }
}

/// A fraction (`0.05`) or a percentage (`5%`).
fn parse_noise_threshold(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let (number, scale) = match t.strip_suffix('%') {
        Some(n) => (n.trim(), 0.01),
        None => (t, 1.0),
    };
    let x: f64 = number
        .parse()
        .map_err(|_| format!("`{s}` is not a fraction (0.02) or a percentage (2%)"))?;
    let x = x * scale;
    if x.is_finite() && x >= 0.0 {
        Ok(x)
    } else {
        Err(format!(
            "the noise threshold must be a finite number of at least 0, got `{s}`"
        ))
    }
}

fn parse_device(s: &str) -> Result<String, String> {
    let ok = s == "cpu"
        || s == "cuda"
        || s.strip_prefix("cuda:")
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    if ok {
        Ok(s.to_string())
    } else {
        Err(format!("`{s}` is not a device: use cpu, cuda or cuda:N"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn cargo_passes_the_subcommand_name_first() {
        let cli =
            Cli::parse_from_cargo(["cargo-gpubench", "gpubench", "--quick", "matmul"]).unwrap();
        let args = cli.run_args();
        assert!(args.quick);
        assert_eq!(args.filters, ["matmul"]);
        let direct = Cli::parse_from_cargo(["cargo-gpubench", "--list"]).unwrap();
        assert!(direct.run_args().list);
    }

    #[test]
    fn run_subcommand_takes_executables() {
        let cli = Cli::parse_from_cargo([
            "cargo-gpubench",
            "run",
            "--exe",
            "a",
            "--exe",
            "b",
            "--timeout",
            "2.5",
            "conv",
        ])
        .unwrap();
        let args = cli.run_args();
        assert_eq!(args.exes, [PathBuf::from("a"), PathBuf::from("b")]);
        assert_eq!(args.timeout, Duration::from_millis(2500));
        assert_eq!(args.filters, ["conv"]);
    }

    #[test]
    fn one_exe_takes_several_paths_and_filters_follow_a_double_dash() {
        let parse = |argv: &[&str]| {
            let cli = Cli::parse_from_cargo(["cargo-gpubench", "run"].iter().chain(argv).copied())
                .unwrap();
            let args = cli.run_args().clone();
            let exes: Vec<String> = args.exes.iter().map(|p| p.display().to_string()).collect();
            (exes, args.filters)
        };
        let (a, b, c) = ("a".to_string(), "b".to_string(), "c".to_string());
        assert_eq!(
            parse(&["--exe", "a", "b", "c"]),
            (vec![a.clone(), b.clone(), c.clone()], vec![])
        );
        assert_eq!(
            parse(&["--exe", "a", "b", "--", "mm", "conv"]),
            (vec![a.clone(), b.clone()], vec!["mm".into(), "conv".into()])
        );
        assert_eq!(
            parse(&["mm", "--exe", "a", "b", "--quick"]),
            (vec![a.clone(), b.clone()], vec!["mm".into()])
        );
        assert_eq!(
            parse(&["--exe", "a", "--exe", "b,c"]),
            (vec![a.clone(), b.clone(), c.clone()], vec![])
        );
        assert_eq!(parse(&["--exe=a", "mm"]), (vec![a], vec!["mm".into()]));
        let help = Cli::command()
            .find_subcommand_mut("run")
            .unwrap()
            .render_long_help()
            .to_string();
        assert!(
            help.contains("FILTERs go before it or after `--`"),
            "{help}"
        );
    }

    #[test]
    fn processes_take_a_number_or_a_range() {
        let policy = |argv: &[&str]| {
            Cli::parse_from_cargo(std::iter::once("cargo-gpubench").chain(argv.iter().copied()))
                .map(|c| c.run_args().process_policy())
        };
        assert_eq!(policy(&[]).unwrap(), ProcessPolicy::standard());
        assert_eq!(policy(&["--quick"]).unwrap(), ProcessPolicy::fixed(3));
        assert_eq!(
            policy(&["--processes", "5"]).unwrap(),
            ProcessPolicy::fixed(5)
        );
        let p = policy(&["--processes", "2..8"]).unwrap();
        assert_eq!((p.min, p.max), (2, 8));
        assert_eq!(p.target_rel_ci, ProcessPolicy::standard().target_rel_ci);
        for (bad, why) in [
            ("0", "between 1 and 100"),
            ("many", "is not N or MIN..MAX"),
            ("5..3", "MIN is above MAX"),
            ("1..101", "between 1 and 100"),
        ] {
            let err = policy(&["--processes", bad]).unwrap_err();
            assert_eq!(err.exit_code(), 2);
            assert!(err.to_string().contains(why), "{bad}: {err}");
        }
    }

    #[test]
    fn report_takes_a_run_reference_defaulting_to_latest() {
        let cli = Cli::parse_from_cargo(["cargo-gpubench", "gpubench", "report"]).unwrap();
        let r = cli.report_args().unwrap();
        assert_eq!((r.run.as_str(), r.open), ("latest", false));
        let cli =
            Cli::parse_from_cargo(["cargo-gpubench", "report", "run:2026", "--open"]).unwrap();
        let r = cli.report_args().unwrap();
        assert_eq!((r.run.as_str(), r.open), ("run:2026", true));
        assert!(
            Cli::parse_from_cargo(["cargo-gpubench", "--no-report"])
                .unwrap()
                .run_args()
                .no_report
        );
    }

    #[test]
    fn bad_values_are_usage_errors() {
        for bad in [
            &["cargo-gpubench", "--device", "tpu"][..],
            &["cargo-gpubench", "--timeout", "0"],
            &["cargo-gpubench", "--timeout", "soon"],
            &["cargo-gpubench", "--format", "xml"],
            &["cargo-gpubench", "--ignored", "--include-ignored"],
            &["cargo-gpubench", "--exe", "a", "-p", "x"],
        ] {
            let err = Cli::parse_from_cargo(bad.iter().copied()).unwrap_err();
            assert_eq!(err.exit_code(), 2, "{bad:?}: {err}");
        }
        assert!(Cli::parse_from_cargo(["cargo-gpubench", "--device", "cuda:1"]).is_ok());
    }

    #[test]
    fn every_option_reads_an_environment_variable() {
        let cmd = Cli::command();
        for arg in cmd.get_arguments() {
            let id = arg.get_id().as_str();
            if matches!(id, "help" | "version") {
                continue;
            }
            let env = arg
                .get_env()
                .unwrap_or_else(|| panic!("--{id} has no env var"));
            assert!(env.to_string_lossy().starts_with("GPUBENCH_"), "{id}");
        }
        let vars = option_env_vars();
        assert!(vars.contains(&"GPUBENCH_IGNORED".to_string()));
        assert!(vars.contains(&"GPUBENCH_DEVICE".to_string()));
    }

    #[test]
    fn baseline_options_map_to_the_comparison_settings() {
        let cli = Cli::parse_from_cargo(["cargo-gpubench", "gpubench"]).unwrap();
        let v = &cli.run_args().verdicts;
        assert_eq!(v.compare_config(), CompareConfig::default());
        assert_eq!(v.fail_on, FailOn::Regressed);
        assert_eq!(v.gate(), Gate::default());
        assert!(!v.allow_device_mismatch && v.summary_file.is_none());

        let cli = Cli::parse_from_cargo([
            "cargo-gpubench",
            "--baseline",
            "pr-1",
            "--save-baseline",
            "main",
            "--significance",
            "0.01",
            "--noise-threshold",
            "5%",
            "--fail-on",
            "ambiguous",
            "--gate-on",
            "kernel,counters",
            "--format",
            "markdown",
        ])
        .unwrap();
        let args = cli.run_args();
        assert_eq!(
            args.verdicts.gate(),
            Gate::of(&[Metric::Kernel, Metric::Counters])
        );
        assert_eq!(args.verdicts.gate().to_string(), "kernel,counters");
        assert_eq!(args.baseline.as_deref(), Some("pr-1"));
        assert_eq!(args.save_baseline.as_deref(), Some("main"));
        assert_eq!(args.format, Format::Markdown);
        let config = args.verdicts.compare_config();
        assert_eq!((config.significance, config.noise_threshold), (0.01, 0.05));
        assert_eq!(args.verdicts.fail_on, FailOn::Ambiguous);

        let cli = Cli::parse_from_cargo([
            "cargo-gpubench",
            "compare",
            "main",
            "latest",
            "--fail-on",
            "never",
            "--noise-threshold",
            "0.1",
        ])
        .unwrap();
        let c = cli.compare_args().unwrap();
        assert_eq!(
            (c.baseline.as_str(), c.current.as_str()),
            ("main", "latest")
        );
        assert_eq!(c.verdicts.fail_on, FailOn::Never);
        assert_eq!(c.verdicts.noise_threshold, 0.1);
    }

    #[test]
    fn bad_baseline_options_are_usage_errors_with_the_reason() {
        for (bad, reason) in [
            (
                &["--save-baseline", "../up"][..],
                "a baseline name is 1 to 64",
            ),
            (&["--baseline", ".x"], "it starts with '.'"),
            (&["--baseline", "a", "--no-baseline"], "cannot be used with"),
            (&["--significance", "0"], "strictly between 0 and 1"),
            (&["--significance", "1.5"], "strictly between 0 and 1"),
            (&["--noise-threshold=-1%"], "at least 0"),
            (&["--noise-threshold", "lots"], "percentage (2%)"),
            (
                &["--fail-on", "sometimes"],
                "[possible values: regressed, ambiguous, never]",
            ),
            (
                &["--gate-on", "time,speed"],
                "[possible values: time, kernel, counters]",
            ),
        ] {
            let args = std::iter::once("cargo-gpubench").chain(bad.iter().copied());
            let err = Cli::parse_from_cargo(args).unwrap_err();
            assert_eq!(err.exit_code(), 2, "{bad:?}");
            assert!(err.to_string().contains(reason), "{bad:?}: {err}");
        }
        let err = Cli::parse_from_cargo(["cargo-gpubench", "compare", "main"]).unwrap_err();
        assert_eq!(err.exit_code(), 2);
    }

    #[test]
    fn compare_options_read_environment_variables_too() {
        let cmd = Cli::command();
        let compare = cmd.find_subcommand("compare").unwrap();
        for arg in compare.get_arguments() {
            let id = arg.get_id().as_str();
            if arg.is_positional() || matches!(id, "help" | "version") {
                continue;
            }
            let env = arg
                .get_env()
                .unwrap_or_else(|| panic!("compare --{id} has no env var"));
            assert!(env.to_string_lossy().starts_with("GPUBENCH_"), "{id}");
        }
        let help = compare.clone().render_long_help().to_string();
        assert!(help.contains("ambiguous and refused"), "{help}");
        assert!(help.contains("4    the --fail-on gate tripped"), "{help}");
    }

    #[test]
    fn help_documents_exit_codes() {
        let help = Cli::command().render_long_help().to_string();
        assert!(help.contains("Exit codes:"), "{help}");
        assert!(help.contains("3    the bench targets failed to build"));
        assert!(help.contains("4    regression found"), "{help}");
        assert!(help.contains("[default: 0.05]") && help.contains("[default: 0.02]"));
        assert!(help.contains("[default: regressed]"), "{help}");
    }
}
