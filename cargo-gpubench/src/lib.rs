//! `cargo gpubench`: discovers the bench targets of a workspace that use
//! `gpubench-core`, builds them, lists their benchmarks, runs every benchmark in
//! processes of its own, stores one record per benchmark and a manifest per run,
//! judges the run against a baseline and reports it.
//!
//! The binary only calls [`main`]. The folders follow the stages of a run, in
//! layers:
//!
//! | layer | module | what it owns |
//! |---|---|---|
//! | 7 | [`commands`] | each subcommand (`run`, `ab`, `archive`, `compare`, `report`, `merge`, `capacity`, `setup`, `history`, `doctor`): turns its options into each stage's own and calls the stages in order |
//! | 6 | [`cli`] | the command line: options, their help and their environment variables |
//! | 6 | [`output`] | terminal, JSON, Markdown, HTML, laid out from one view model (`output::view`) |
//! | 5 | [`error`] | which error ends the process with which exit code |
//! | 4 | [`archive`] | carrying built benchmarks to another machine |
//! | 3 | [`execute`] | listing, selecting and running benchmark processes |
//! | 2 | [`build`] | finding and building the bench targets, finding and setting up libtorch, the workspace's places |
//! | 2 | [`compare`] | judging a run against a baseline; the run's summary and the exit code it ends with |
//! | 1 | [`store`] | runs, manifests and baselines on disk, a run's lifecycle from its running manifest to its final one, and the baselines' git history |
//! | 0 | [`format`] | numbers and words |
//! | 0 | [`console`] | how much is printed, and in colour or not |
//! | 0 | [`exit_code`] | the exit codes |
//!
//! A module imports only modules of a lower layer, never one of its own or a higher
//! one: stages never see the command line or the output, so the command layer turns
//! options into each stage's own (`SetupArgs::options`, `VerdictArgs::settings`,
//! `BaselineArgs::wanted`, ...). Inside [`commands`], a subcommand never imports
//! another: a step two of them share lives in the stage it belongs to; what they
//! say after storing a run lives in `commands::present`, and what `run` and
//! `capacity` do before they list their benchmarks in `commands::prepare`. A test
//! reads this table and fails on any `crate::` path that points up or sideways
//! (`checks/`, with the checks that no modules import each other in a circle and no
//! code is written twice).
//!
//! Nothing but [`main`] is this library's API: its modules are private and
//! `unreachable_pub` is denied, so every item is `pub(crate)` and the compiler reports
//! what nothing uses. The integration tests and benches reach the few items they need
//! through the hidden `testing` module.
#![warn(missing_docs)]
#![deny(unreachable_pub)]

mod archive;
mod build;
mod cli;
mod commands;
mod compare;
mod console;
mod error;
mod execute;
mod exit_code;
mod format;
mod output;
mod store;

#[cfg(test)]
mod checks;

/// What this crate's integration tests and benches reach inside it: the library is no
/// API (only [`main`] is), and these paths change with any release.
#[doc(hidden)]
pub mod testing {
    pub mod archive {
        pub use crate::archive::{pack, unpack, ArchivedBenchmark};
    }
    pub mod build {
        pub use crate::build::{compile, discover, library, libtorch, revision, setup};
    }
    pub mod cli {
        pub use crate::cli::{Cli, Command};
    }
    pub mod commands {
        pub use crate::commands::slurm;
    }
    pub mod compare {
        pub use crate::compare::{RunComparison, BASELINE_COPY};
    }
    pub mod execute {
        pub use crate::execute::paired;
    }
    pub mod format {
        pub use crate::format::duration_range;
    }
    pub mod output {
        pub use crate::output::html;
    }
    pub mod store {
        pub use crate::store::{history, manifest, references, runs};
    }
}

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
        .is_some_and(|a| a == execute::paired::args::PAIRED_SUBCOMMAND)
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
    console::init(cli.console.console());
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
