//! The options of `compare` and `report`, and what a run shares with `compare`: the
//! output format and the verdict options (`--fail-on`, `--gate-on`, the statistics'
//! settings).

use std::path::PathBuf;

use clap::builder::BoolishValueParser;
use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{ArgAction, Args, ValueEnum};
use gpubench_analysis::baseline::validate_name;
use gpubench_analysis::baseline::{AllowMissing, AllowWord, Gate, Metric};
use gpubench_analysis::compare::{
    DEFAULT_CPU_NOISE_THRESHOLD, DEFAULT_ENERGY_NOISE_THRESHOLD, DEFAULT_HOST_NOISE_THRESHOLD,
    DEFAULT_NOISE_THRESHOLD, DEFAULT_SIGNIFICANCE,
};
use gpubench_analysis::{CompareConfig, FailOn};

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

    /// What it prints, and where the workspace and its runs are.
    #[command(flatten)]
    pub store: StoreArgs,

    /// Directory holding the saved baselines, one directory per name [default:
    /// `<workspace>/gpubench/baselines`, or ./gpubench/baselines outside a workspace].
    #[arg(long, value_name = "DIR", env = "GPUBENCH_BASELINES_DIR")]
    pub baselines_dir: Option<PathBuf>,

    /// How the comparison decides and gates.
    #[command(flatten)]
    pub verdicts: VerdictArgs,
}

/// What a command that reads stored runs prints, and where it finds the workspace and
/// its runs: shared by `compare`, `history` and `merge`.
#[derive(Debug, Clone, Args)]
pub struct StoreArgs {
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

    /// Where runs are stored and the report is written [default:
    /// `<target-dir>/gpubench` of the workspace, or ./target/gpubench outside one].
    #[arg(long, value_name = "DIR", env = "GPUBENCH_OUT_DIR")]
    pub out_dir: Option<PathBuf>,
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

/// Which baseline a run (or a merged run) is compared with and saved as.
#[derive(Debug, Clone, Args)]
pub struct BaselineArgs {
    /// Directory holding the saved baselines, one directory per name [default:
    /// `<workspace>/gpubench/baselines`, or ./gpubench/baselines with --exe or outside
    /// a workspace].
    #[arg(
        long,
        value_name = "DIR",
        env = "GPUBENCH_BASELINES_DIR",
        help_heading = "Baselines"
    )]
    pub baselines_dir: Option<PathBuf>,

    /// Compare with the saved baseline NAME [default: `main` when it is saved].
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

    /// Save the measurements as baseline NAME (one file per benchmark that passed;
    /// failed ones and other benchmarks keep their files). Saving does not compare:
    /// only with --baseline does the run compare first, and its verdicts gate it.
    #[arg(
        long,
        value_name = "NAME",
        env = "GPUBENCH_SAVE_BASELINE",
        value_parser = parse_baseline_name,
        help_heading = "Baselines"
    )]
    pub save_baseline: Option<String>,
}

impl BaselineArgs {
    /// The baseline a run compares with, as the store names it: none for a save
    /// (`--save-baseline` saves; it compares, and so gates, only with a baseline
    /// named by `--baseline`).
    pub fn wanted(&self) -> crate::store::baselines::Wanted {
        use crate::store::baselines::Wanted;
        match (&self.baseline, self.no_baseline) {
            (_, true) => Wanted::None,
            (Some(name), false) => Wanted::Named(name.clone()),
            (None, false) if self.save_baseline.is_some() => Wanted::None,
            (None, false) => Wanted::Default,
        }
    }
}

/// How a comparison with a baseline decides, what fails the run, and where its
/// summary and baselines go; shared by a run and `compare`.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Baselines")]
pub struct VerdictArgs {
    /// Largest p-value for a change to count as significant: the one-sided p of
    /// Welch's t-test of "no change" on the logarithms of the processes' medians (when
    /// `ab` pairs base and head in one process, the paired t-test of each process's
    /// ratio of head to base); strictly between 0 and 1.
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

    /// Noise threshold of benchmarks run on the CPU device: the routine's work on the
    /// host's cores drifts between runs by more than a run's processes show (on a
    /// 2-core machine 36 runs of unchanged code spanned 8%), so smaller changes of it are
    /// no change. A host too busy to serve the benchmark's threads needs
    /// --host-noise-threshold.
    #[arg(
        long,
        value_name = "FRACTION",
        env = "GPUBENCH_CPU_NOISE_THRESHOLD",
        default_value_t = DEFAULT_CPU_NOISE_THRESHOLD,
        value_parser = parse_noise_threshold
    )]
    pub cpu_noise_threshold: f64,

    /// Noise threshold of energy per call (`--gate-on energy`, judged by default where
    /// both sides measured it): energy moves with the board's power and temperature
    /// more than time does (on an H200 a matmul's 1 s windows spread by 3%, its time by
    /// 0.3%), so smaller changes of it are no change. Host-bound work's energy is
    /// judged on --host-noise-threshold; `ab`'s paired ratios on its paired threshold.
    #[arg(
        long,
        value_name = "FRACTION",
        env = "GPUBENCH_ENERGY_NOISE_THRESHOLD",
        default_value_t = DEFAULT_ENERGY_NOISE_THRESHOLD,
        value_parser = parse_noise_threshold
    )]
    pub energy_noise_threshold: f64,

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
    /// figures (sample time, warm-up, --throttle-threshold, --flush-l2; otherwise they
    /// are listed as not compared, naming the difference).
    #[arg(
        long,
        env = "GPUBENCH_ALLOW_SETTINGS_MISMATCH",
        action = ArgAction::SetTrue,
        value_parser = BoolishValueParser::new()
    )]
    pub allow_settings_mismatch: bool,

    /// Which verdicts end the run with exit code 4: `regressed`; `ambiguous`
    /// (regressed or ambiguous); `never` (report only). Under the first two, missing
    /// evidence trips it too (see --allow-missing).
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
    /// copies, syncs and allocations per call), `memory` (peak allocated and reserved
    /// bytes, and bytes held per call), `host` (host-dispatch time per call, judged
    /// on --host-noise-threshold; judged only when named here), `energy` (joules per
    /// call from the GPU's energy counter, judged on --energy-noise-threshold), `peak`
    /// (the share of the device's peak at the clock it ran, from the FLOPs or bytes a
    /// benchmark declares: a drop is regressed; judged only when named here)
    /// [default: time,kernel,counters,memory,energy, each where either side measured
    /// it].
    /// Launch-bound work is best gated on `kernel,counters`: its time rests on the
    /// host. A metric named here that a side did not measure is missing evidence.
    #[arg(
        long,
        value_name = "METRICS",
        env = "GPUBENCH_GATE_ON",
        value_delimiter = ',',
        value_parser = PossibleValuesParser::new(Metric::ALL.map(Metric::as_str))
            .map(|s| s.parse::<Metric>().expect("clap checked the value"))
    )]
    pub gate_on: Option<Vec<Metric>>,

    /// Kinds of missing evidence that do not trip the gate, comma-separated:
    /// `not-run` (a baseline benchmark selected but not measured: interrupted, its run
    /// killed, its --partition part missing from a merge), `gone` (in the baseline,
    /// listed by no bench target: removed or renamed), `not-compared` (another device
    /// model, other settings, no usable samples), `metric` (a gated metric one side
    /// lacks), or `all`. By default every kind trips --fail-on regressed and ambiguous;
    /// benchmarks left out by a filter, --skip or --partition are never missing.
    #[arg(
        long,
        value_name = "KINDS",
        env = "GPUBENCH_ALLOW_MISSING",
        value_delimiter = ',',
        value_parser = PossibleValuesParser::new(AllowWord::WORDS)
            .map(|s| s.parse::<AllowWord>().expect("clap checked the value"))
    )]
    pub allow_missing: Vec<AllowWord>,

    /// Also write the Markdown summary (the --format markdown one) to this file,
    /// e.g. for a pull-request comment or $GITHUB_STEP_SUMMARY.
    #[arg(long, value_name = "PATH", env = "GPUBENCH_SUMMARY_FILE")]
    pub summary_file: Option<PathBuf>,

    /// Where the HTML report can be opened, e.g. the CI artifact it was uploaded to:
    /// the Markdown summary links to it on its first line (without it, that line
    /// names the report's local path, when one was written).
    #[arg(long, value_name = "URL", env = "GPUBENCH_REPORT_URL")]
    pub report_url: Option<String>,
}

impl VerdictArgs {
    /// The statistics and gate these options ask for.
    pub fn settings(&self) -> crate::compare::VerdictSettings {
        crate::compare::VerdictSettings {
            config: self.compare_config(),
            fail_on: self.fail_on,
            allow_device_mismatch: self.allow_device_mismatch,
            gate: self.gate(),
            allow_settings_mismatch: self.allow_settings_mismatch,
            allow_missing: self.allow_missing(),
        }
    }

    /// The metrics the gate looks at: those `--gate-on` names, else every one.
    pub fn gate(&self) -> Gate {
        match &self.gate_on {
            Some(metrics) => Gate::of(metrics),
            None => Gate::default(),
        }
    }

    /// The missing evidence `--allow-missing` lets pass.
    pub fn allow_missing(&self) -> AllowMissing {
        AllowMissing::from_words(&self.allow_missing)
    }

    /// The statistical settings of the comparison.
    pub fn compare_config(&self) -> CompareConfig {
        CompareConfig {
            significance: self.significance,
            noise_threshold: self.noise_threshold,
            host_noise_threshold: self.host_noise_threshold,
            cpu_noise_threshold: self.cpu_noise_threshold,
            energy_noise_threshold: self.energy_noise_threshold,
            ..CompareConfig::default()
        }
    }
}

pub(super) fn parse_baseline_name(s: &str) -> Result<String, String> {
    validate_name(s).map_err(|e| e.to_string())?;
    Ok(s.to_string())
}

pub(super) fn parse_significance(s: &str) -> Result<f64, String> {
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
pub(super) fn parse_noise_threshold(s: &str) -> Result<f64, String> {
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

/// How results are printed on stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// A table for people; progress on stderr.
    Human,
    /// One JSON document for programs; no progress bar.
    Json,
    /// A Markdown summary for a pull-request comment.
    Markdown,
    /// github-action-benchmark's `customSmallerIsBetter` JSON: each benchmark's
    /// figure (and kernel time) in ns per call.
    GithubActionBenchmark,
    /// Bencher's metric format (BMF) JSON: `latency` (and `kernel-time`) in ns.
    Bmf,
}
