//! `cargo gpubench`: discovers the bench targets of a workspace that use
//! `gpubench-core`, builds them, lists their benchmarks, runs every benchmark in
//! processes of its own, stores one record per benchmark and a manifest per run,
//! judges the run against a baseline and reports it.
//!
//! The binary only calls [`main`]. The folders follow the stages of a run:
//!
//! | stage | module |
//! |---|---|
//! | parse the command line | [`cli`] |
//! | pick the subcommand | [`commands`] (`run`, `archive`, `compare`, `report`, `merge`, `doctor`; `setup` is in [`build`]) |
//! | find, build, find libtorch | [`build`] |
//! | carry built benchmarks to another machine | [`archive`] |
//! | list, select, run processes | [`execute`] |
//! | keep runs, manifests, baselines | [`store`] |
//! | judge a run against a baseline | [`compare`] |
//! | terminal, JSON, Markdown, HTML | [`output`] (numbers and words: [`format`]) |
//! | exit codes; which error gets which | [`exit_code`]; [`error`] |
//!
//! Dependencies point down the table and never back: `commands` uses every stage,
//! `archive` reads `build`, `output` reads `compare` and `store`, `compare` reads
//! `store`, and `exit_code` imports nothing of this crate.
#![warn(missing_docs)]

pub mod archive;
pub mod build;
pub mod cli;
pub mod commands;
pub mod compare;
pub mod error;
pub mod execute;
pub mod exit_code;
pub mod format;
pub mod output;
pub mod store;

use std::ffi::OsString;
use std::process::ExitCode;

use crate::cli::Cli;
use crate::exit_code::Exit;

/// Runs `cargo gpubench` with this process's arguments; see [`exit_code`] for the
/// codes.
pub fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().collect();
    if args
        .get(1)
        .is_some_and(|a| a == cli::paired::PAIRED_SUBCOMMAND)
    {
        execute::paired::process::main(&args[2..]);
    }
    let cli = match Cli::parse_from_cargo(args.clone()) {
        Ok(cli) => cli,
        Err(err) => {
            let _ = err.print();
            return ExitCode::from(u8::try_from(err.exit_code()).unwrap_or(Exit::Usage.code()));
        }
    };
    output::console::init(cli.console.console());
    match commands::dispatch(&cli, &args) {
        Ok(exit) => ExitCode::from(exit.code()),
        Err(err) => {
            let message = error::message(&err);
            let exit = error::exit_for(&err);
            eprintln!("error: {message}");
            if cli.format() == Some(cli::Format::Json) && !output::json::document_printed() {
                output::json::print_document(&output::json::ErrorDocument::new(message, exit));
            }
            ExitCode::from(exit.code())
        }
    }
}
