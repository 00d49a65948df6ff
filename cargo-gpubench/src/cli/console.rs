//! The options of how `cargo gpubench` speaks, on every subcommand: `-q`, `-v` and
//! `--color`.

use clap::builder::BoolishValueParser;
use clap::{ArgAction, Args};

use crate::console::{self, ColorWhen, Console, Verbosity};

/// `-q`, `-v` and `--color`; global, so they go before or after the subcommand.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "Output")]
pub struct ConsoleArgs {
    /// Print only the lines of failed benchmarks and of verdicts (regressed,
    /// improved, the gate), the closing counts, warnings and errors: no progress, no
    /// table, no notes. JSON and Markdown are unchanged.
    #[arg(
        short,
        long,
        global = true,
        env = "GPUBENCH_QUIET",
        conflicts_with = "verbose",
        action = ArgAction::SetTrue,
        value_parser = BoolishValueParser::new()
    )]
    pub quiet: bool,

    /// Also print the command of every benchmark process as it starts (on stderr), and
    /// each process's median under the table.
    #[arg(
        short,
        long,
        global = true,
        env = "GPUBENCH_VERBOSE",
        action = ArgAction::SetTrue,
        value_parser = BoolishValueParser::new()
    )]
    pub verbose: bool,

    /// Colour the terminal summary's verdicts: auto (when stdout is a terminal and
    /// NO_COLOR is unset), always, never [default: CARGO_TERM_COLOR, else auto].
    /// JSON, Markdown and files are never coloured.
    #[arg(
        long,
        value_name = "WHEN",
        global = true,
        env = "GPUBENCH_COLOR",
        value_enum
    )]
    pub color: Option<ColorWhen>,
}

impl ConsoleArgs {
    /// The console these options ask for, in this process's environment.
    pub fn console(&self) -> Console {
        let verbosity = if self.quiet {
            Verbosity::Quiet
        } else if self.verbose {
            Verbosity::Verbose
        } else {
            Verbosity::Normal
        };
        let cargo = std::env::var("CARGO_TERM_COLOR").ok();
        Console {
            verbosity,
            color: console::color_enabled(
                self.color,
                cargo.as_deref(),
                console::stdout_takes_color,
            ),
        }
    }
}
