//! The options of `cargo-gpubench __paired`, one paired process that `cargo gpubench
//! ab` starts for a benchmark's base and head (hidden: not for users; what it does is
//! [`crate::execute::paired::process`]).

use std::path::PathBuf;

use clap::Parser;

/// The name `ab` starts this binary with for a paired process.
pub const PAIRED_SUBCOMMAND: &str = "__paired";

/// Options of a paired process.
#[derive(Debug, Clone, Parser)]
#[command(name = "cargo-gpubench __paired", no_binary_name = true)]
pub struct PairedArgs {
    /// Print the benchmarks of this library as JSON and exit.
    #[arg(long, value_name = "LIB", conflicts_with_all = ["base", "head"])]
    pub list: Option<PathBuf>,
    /// The base revision's library; without it the head's benchmark is measured
    /// alone (one the base lacks).
    #[arg(long, value_name = "LIB", requires_all = ["id", "config", "record_dir"])]
    pub base: Option<PathBuf>,
    /// The head revision's library.
    #[arg(long, value_name = "LIB", requires_all = ["id", "config", "record_dir"])]
    pub head: Option<PathBuf>,
    /// Measure only this side's library, alone in this process (a benchmark whose
    /// pairing failed runs each side so from then on).
    #[arg(long, value_name = "SIDE", value_parser = ["base", "head"])]
    pub alone: Option<String>,
    /// The benchmark id.
    #[arg(long, value_name = "ID")]
    pub id: Option<String>,
    /// Which process of the benchmark this is (1 for the first).
    #[arg(long = "round", value_name = "N", default_value_t = 1)]
    pub process: u32,
    /// cpu, cuda or cuda:N; the libraries pick when absent.
    #[arg(long, value_name = "DEVICE")]
    pub device: Option<String>,
    /// The measurement settings of both sides, as JSON (`MeasurementConfig`).
    #[arg(long, value_name = "JSON")]
    pub config: Option<String>,
    /// The directory the base's code runs in (its checkout's), entered before each
    /// of its calls.
    #[arg(long, value_name = "DIR")]
    pub base_dir: Option<PathBuf>,
    /// The directory the head's code runs in.
    #[arg(long, value_name = "DIR")]
    pub head_dir: Option<PathBuf>,
    /// Where the two records go (`base/` and `head/`).
    #[arg(long, value_name = "DIR")]
    pub record_dir: Option<PathBuf>,
}
