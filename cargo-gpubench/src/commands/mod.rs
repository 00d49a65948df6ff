//! The subcommands, one module each, and which one an invocation runs: [`run`]
//! (`cargo gpubench`, the default), [`ab`], [`archive`], [`compare`], [`report`], [`merge`],
//! [`history`], [`doctor`], and `setup` ([`crate::build::setup`]); [`present`] is what a run and
//! `merge` show once their run is stored.

pub mod ab;
pub mod archive;
pub mod compare;
pub mod doctor;
pub mod history;
pub mod merge;
pub mod present;
pub mod report;
pub mod run;

use std::ffi::OsString;

use anyhow::Result;

use crate::cli::Cli;
use crate::exit_code::Exit;

/// Runs the subcommand `cli` names; `command_line` is recorded in a run's manifest.
pub fn dispatch(cli: &Cli, command_line: &[OsString]) -> Result<Exit> {
    if let Some(args) = cli.ab_args() {
        crate::cli::refuse_unsupported_harness_vars(|v| std::env::var_os(v))?;
        return ab::run(args, command_line);
    }
    if let Some(args) = cli.archive_args() {
        return archive::run(args);
    }
    if let Some(args) = cli.compare_args() {
        return compare::run(args);
    }
    if let Some(args) = cli.report_args() {
        return report::run(args);
    }
    if let Some(args) = cli.merge_args() {
        return merge::run(args, command_line);
    }
    if let Some(args) = cli.history_args() {
        return history::run(args);
    }
    if let Some(args) = cli.setup_args() {
        crate::build::setup::run(&args.options())?;
        return Ok(Exit::Success);
    }
    if let Some(args) = cli.capacity_args() {
        return run::capacity::run(args);
    }
    if let Some(args) = cli.doctor_args() {
        return doctor::run(args);
    }
    run::run(cli.run_args(), command_line)
}
