//! `cargo gpubench`: discovers the bench targets of a workspace that use
//! `gpubench-core`, builds them, lists their benchmarks, and runs every benchmark in a
//! process of its own, storing one record per benchmark and a manifest per run.
//!
//! The binary only calls [`main`]. The modules follow the data flow:
//! [`cli`] → [`discover`] → [`compile`] → [`libtorch`] → [`listing`] → [`select`] →
//! [`baselines`] (load) → [`runner`] (over [`process`]) → [`store`] and [`manifest`] →
//! [`comparison`] → [`run_report`] (the HTML [`report`]) → [`baselines`] (save) →
//! [`summary`] and [`markdown`]; [`app`] strings them together and [`exit`] documents
//! the exit codes. `cargo gpubench compare` is [`compare_command`], over
//! [`reference`](mod@reference); `cargo gpubench report` is [`report_command`];
//! `cargo gpubench doctor` is [`doctor`].
#![warn(missing_docs)]

pub mod app;
pub mod baselines;
pub mod cli;
pub mod compare_command;
pub mod comparison;
pub mod compile;
pub mod discover;
pub mod doctor;
pub mod exit;
pub mod gpu_notes;
pub mod libtorch;
pub mod listing;
pub mod manifest;
pub mod markdown;
pub mod process;
pub mod progress;
pub mod reference;
pub mod report;
pub mod report_command;
pub mod run_report;
pub mod runner;
pub mod select;
pub mod setup;
pub mod store;
pub mod summary;

use std::ffi::OsString;
use std::process::ExitCode;

use thiserror::Error;

use crate::cli::Cli;
use crate::exit::Exit;

/// A mistake in how `cargo gpubench` was invoked that the option parser cannot see,
/// e.g. a `--exe` path that does not exist.
#[derive(Debug, Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// Runs `cargo gpubench` with this process's arguments; see [`exit`] for the codes.
pub fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().collect();
    let cli = match Cli::parse_from_cargo(args.clone()) {
        Ok(cli) => cli,
        Err(err) => {
            let _ = err.print();
            return ExitCode::from(u8::try_from(err.exit_code()).unwrap_or(Exit::Usage.code()));
        }
    };
    match app::run(&cli, &args) {
        Ok(exit) => ExitCode::from(exit.code()),
        Err(err) => {
            eprintln!("error: {}", app::error_message(&err));
            ExitCode::from(Exit::for_error(&err).code())
        }
    }
}
