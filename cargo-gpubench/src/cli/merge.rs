//! The options of `cargo gpubench merge`.

use std::path::PathBuf;

use clap::builder::BoolishValueParser;
use clap::{ArgAction, Args};

use super::compare::{parse_baseline_name, Format};

/// Options of `cargo gpubench merge`.
#[derive(Debug, Clone, Args)]
pub struct MergeArgs {
    /// The runs to merge: run directories (holding manifest.json), output
    /// directories (their latest run), or stored runs (latest, run:ID, an id).
    #[arg(value_name = "RUN", required = true, num_args = 1..)]
    pub runs: Vec<String>,

    /// Output format on stdout.
    #[arg(
        long,
        value_enum,
        value_name = "FORMAT",
        env = "GPUBENCH_FORMAT",
        default_value_t = Format::Human
    )]
    pub format: Format,

    /// Path to the workspace's Cargo.toml (to find its runs and baselines).
    #[arg(long, value_name = "PATH", env = "GPUBENCH_MANIFEST_PATH")]
    pub manifest_path: Option<PathBuf>,

    /// Where the merged run is stored and its report written [default:
    /// `<target-dir>/gpubench` of the workspace, or ./target/gpubench outside one].
    #[arg(long, value_name = "DIR", env = "GPUBENCH_OUT_DIR")]
    pub out_dir: Option<PathBuf>,

    /// Do not write the HTML report (`<out-dir>/report/index.html`).
    #[arg(long, env = "GPUBENCH_NO_REPORT", action = ArgAction::SetTrue, value_parser = BoolishValueParser::new())]
    pub no_report: bool,

    /// Also write the Markdown summary (the --format markdown one) to this file.
    #[arg(long, value_name = "PATH", env = "GPUBENCH_SUMMARY_FILE")]
    pub summary_file: Option<PathBuf>,

    /// Save the merged run's measurements as baseline NAME (one file per benchmark
    /// that passed; other files of the baseline are left alone).
    #[arg(
        long,
        value_name = "NAME",
        env = "GPUBENCH_SAVE_BASELINE",
        value_parser = parse_baseline_name,
        help_heading = "Baselines"
    )]
    pub save_baseline: Option<String>,

    /// Directory holding the saved baselines [default:
    /// `<workspace>/gpubench/baselines`, or ./gpubench/baselines outside a workspace].
    #[arg(
        long,
        value_name = "DIR",
        env = "GPUBENCH_BASELINES_DIR",
        help_heading = "Baselines"
    )]
    pub baselines_dir: Option<PathBuf>,
}
