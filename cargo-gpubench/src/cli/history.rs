//! The options of `cargo gpubench history`.

use std::path::PathBuf;

use clap::builder::BoolishValueParser;
use clap::{ArgAction, Args};
use gpubench_analysis::history::{
    DEFAULT_CPU_MIN_CHANGE, DEFAULT_DRIFT_WINDOW, DEFAULT_ENERGY_MIN_CHANGE, DEFAULT_MIN_CHANGE,
    MIN_DRIFT_POINTS,
};

use super::compare::{parse_baseline_name, parse_noise_threshold, StoreArgs};

/// What `history --help` says at length.
pub(crate) const HISTORY_ABOUT: &str = "Read every committed version of a saved baseline \
    (gpubench/baselines/NAME/, `main` by default) along the first-parent history of a \
    branch (the current one by default, --rev), straight from git without checking \
    anything out, and show each benchmark's figures over those commits: its time (the \
    saved estimate and interval), kernel time and exact counts per call, each point \
    with its commit, date and subject.\n\n\
    Change points (steps) in times are found by E-divisive means (Matteson & James \
    2014, as Apache Otava runs it), each tested by Welch's t-test with the points' own \
    intervals: a step is named by the commit that introduced it, with its size and \
    interval, when the whole interval lies beyond --min-change and beyond what one \
    point's interval already allows. A drift is a trend over the last --drift-window \
    commits that no single step explains (Theil-Sen slope whose interval excludes 0). \
    Counts per call repeat exactly, so each commit that changed one is a change point. \
    Every format version of baseline files that loads today loads here; files that \
    cannot be read are named with their commit and why.\n\n\
    The history page (<out-dir>/history/index.html, beside the run report) has one \
    trend chart per benchmark with its change points marked; a run's report links to \
    it when it is there.";

/// Exit codes of `history`, for `--help`.
pub(crate) const HISTORY_HELP: &str = "\
Exit codes:
  0    the history was read and shown (drifts and change points are findings,
       not failures)
  2    bad input: not a git repository, an unknown --rev, a bad baseline name, no
       committed version of the baseline, a FILTER that matches no benchmark, a
       --format history does not print
  5    git could not be run, or the HTML page could not be written";

/// Options of `cargo gpubench history`.
#[derive(Debug, Clone, Args)]
pub struct HistoryArgs {
    /// Show only benchmarks whose id contains one of these.
    #[arg(value_name = "FILTER", env = "GPUBENCH_FILTER")]
    pub filters: Vec<String>,

    /// Match FILTER against the whole id instead of a substring.
    #[arg(long, env = "GPUBENCH_EXACT", action = ArgAction::SetTrue, value_parser = BoolishValueParser::new())]
    pub exact: bool,

    /// The saved baseline whose history is read [default: main].
    #[arg(
        long,
        value_name = "NAME",
        env = "GPUBENCH_BASELINE",
        value_parser = parse_baseline_name
    )]
    pub baseline: Option<String>,

    /// The branch, tag or commit whose first-parent history is read [default: HEAD].
    #[arg(
        long,
        value_name = "REV",
        env = "GPUBENCH_HISTORY_REV",
        default_value = "HEAD"
    )]
    pub rev: String,

    /// Only commits after this date, as git reads it (`2026-01-01`, `3 months ago`).
    #[arg(long, value_name = "DATE", env = "GPUBENCH_HISTORY_SINCE")]
    pub since: Option<String>,

    /// Only the latest N versions of the baseline.
    #[arg(long, value_name = "N", env = "GPUBENCH_HISTORY_MAX_COMMITS", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_commits: Option<u32>,

    /// Smallest step or drift reported, a fraction (0.02) or a percentage (2%); a
    /// series whose points' intervals are wider uses their median half-width.
    #[arg(
        long,
        value_name = "FRACTION",
        env = "GPUBENCH_HISTORY_MIN_CHANGE",
        default_value_t = DEFAULT_MIN_CHANGE,
        value_parser = parse_noise_threshold
    )]
    pub min_change: f64,

    /// Smallest step or drift of energy per call reported, where larger than
    /// `--min-change`: energy moves with power and temperature more than time does.
    #[arg(
        long,
        value_name = "FRACTION",
        env = "GPUBENCH_HISTORY_ENERGY_MIN_CHANGE",
        default_value_t = DEFAULT_ENERGY_MIN_CHANGE,
        value_parser = parse_noise_threshold
    )]
    pub energy_min_change: f64,

    /// Smallest step or drift reported of work on the CPU device, in place of
    /// `--min-change`: a CPU's figures move from run to run by more than a run shows.
    #[arg(
        long,
        value_name = "FRACTION",
        env = "GPUBENCH_HISTORY_CPU_MIN_CHANGE",
        default_value_t = DEFAULT_CPU_MIN_CHANGE,
        value_parser = parse_noise_threshold
    )]
    pub cpu_min_change: f64,

    /// How many of the latest commits a drift is measured over.
    #[arg(
        long,
        value_name = "N",
        env = "GPUBENCH_HISTORY_DRIFT_WINDOW",
        default_value_t = DEFAULT_DRIFT_WINDOW as u32,
        value_parser = clap::value_parser!(u32).range(MIN_DRIFT_POINTS as i64..)
    )]
    pub drift_window: u32,

    /// What it prints, and where the workspace and its output directory are.
    #[command(flatten)]
    pub store: StoreArgs,

    /// Directory holding the saved baselines [default: `<workspace>/gpubench/baselines`].
    #[arg(long, value_name = "DIR", env = "GPUBENCH_BASELINES_DIR")]
    pub baselines_dir: Option<PathBuf>,

    /// Do not write the HTML history page.
    #[arg(long, env = "GPUBENCH_NO_REPORT", action = ArgAction::SetTrue, value_parser = BoolishValueParser::new())]
    pub no_report: bool,

    /// Also write the Markdown table to this file (its own variable: a run's
    /// GPUBENCH_SUMMARY_FILE is not overwritten by a history in the same job).
    #[arg(long, value_name = "PATH", env = "GPUBENCH_HISTORY_SUMMARY_FILE")]
    pub summary_file: Option<PathBuf>,
}
