//! The options of `cargo gpubench merge`.

use clap::builder::BoolishValueParser;
use clap::{ArgAction, Args};

use super::compare::{BaselineArgs, StoreArgs, VerdictArgs};

/// Options of `cargo gpubench merge`.
#[derive(Debug, Clone, Args)]
pub struct MergeArgs {
    /// The runs to merge: run directories (holding manifest.json), output
    /// directories (their latest run), or stored runs (latest, run:ID, an id).
    #[arg(value_name = "RUN", required = true, num_args = 1..)]
    pub runs: Vec<String>,

    /// What it prints, and where the workspace, its runs and the merged run are.
    #[command(flatten)]
    pub store: StoreArgs,

    /// Do not write the HTML report (`<out-dir>/report/index.html`).
    #[arg(long, env = "GPUBENCH_NO_REPORT", action = ArgAction::SetTrue, value_parser = BoolishValueParser::new())]
    pub no_report: bool,

    /// Which baseline to compare the merged run with, as a run is compared
    /// (verdicts in the summary and the report, --fail-on decides the exit code),
    /// and save it as.
    #[command(flatten)]
    pub baselines: BaselineArgs,

    /// How the comparison with the baseline decides and gates, and where the summary
    /// and the baselines go.
    #[command(flatten)]
    pub verdicts: VerdictArgs,

    /// A part of the suite a cluster's job lost, and why (what `cargo gpubench slurm
    /// collect` passes): a gap, as an input cut short, that makes the merged run
    /// incomplete; repeat for each.
    #[arg(long = "lost-part", value_name = "WHY", hide = true)]
    pub lost_parts: Vec<String>,
}
