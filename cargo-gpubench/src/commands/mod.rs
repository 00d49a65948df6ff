//! The subcommands, one module each, and which one an invocation runs: [`run`]
//! (`cargo gpubench`, the default), [`ab`], [`archive`], [`compare`], [`report`], [`merge`],
//! [`capacity`], [`setup`], [`history`], [`doctor`] and [`slurm`]. Two modules are shared:
//! [`present`] is what a run, `ab` and `merge` show once their run is stored, `prepare` what
//! `run` and `capacity` do before they list their benchmarks.

pub(crate) mod ab;
pub(crate) mod archive;
pub(crate) mod capacity;
pub(crate) mod compare;
pub(crate) mod doctor;
pub(crate) mod history;
pub(crate) mod merge;
mod prepare;
pub(crate) mod present;
pub(crate) mod report;
pub(crate) mod run;
pub(crate) mod setup;
pub mod slurm;

use std::ffi::OsString;

use anyhow::Result;

use crate::cli::{Cli, Command};
use crate::exit_code::Exit;

/// Runs the subcommand `cli` names (a run when it names none); `command_line` is
/// recorded in a run's manifest.
pub(crate) fn dispatch(cli: &Cli, command_line: &[OsString]) -> Result<Exit> {
    match &cli.command {
        None => run::run(&cli.run, command_line),
        Some(Command::Run(args)) => run::run(args, command_line),
        Some(Command::Ab(args)) => {
            crate::cli::refuse_unsupported_harness_vars(|v| std::env::var_os(v))?;
            ab::run(args, command_line)
        }
        Some(Command::Archive(args)) => archive::run(args),
        Some(Command::Compare(args)) => compare::run(args),
        Some(Command::Report(args)) => report::run(args),
        Some(Command::Merge(args)) => merge::run(args, command_line),
        Some(Command::History(args)) => history::run(args),
        Some(Command::Setup(args)) => setup::run(args),
        Some(Command::Capacity(args)) => capacity::run(args),
        Some(Command::Doctor(args)) => doctor::run(args),
        Some(Command::Slurm(args)) => slurm::run(args),
    }
}
