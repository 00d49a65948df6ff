//! How this process speaks to a person: how much (`-q`, `-v`) and whether in colour,
//! chosen once from the command line, the colours of verdicts, and the notes and
//! warnings on stderr that follow the chosen verbosity.
//!
//! The choice is process-wide, as cargo's shell is: the messages it governs come from
//! every stage of a run, and threading it through each would change every signature
//! for one flag. Renderers still take a [`Console`] as an argument, so tests pin their
//! output without touching the global.

use std::fmt;
use std::sync::OnceLock;

use anstyle::{AnsiColor, Style};

/// How much is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Verbosity {
    /// `-q`: the failure and verdict lines and errors; no progress, no notes.
    Quiet,
    /// The summary table and its notes, progress, and notes on stderr.
    #[default]
    Normal,
    /// `-v`: also each process's median and each benchmark process's command.
    Verbose,
}

/// How the terminal output is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Console {
    /// How much.
    pub verbosity: Verbosity,
    /// Whether the human summary on stdout is coloured.
    pub color: bool,
}

/// When to colour, as `--color` (and cargo's `CARGO_TERM_COLOR`) spell it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorWhen {
    /// When stdout is a terminal and `NO_COLOR` is not set.
    Auto,
    /// Always, even into a pipe or a file.
    Always,
    /// Never.
    Never,
}

impl ColorWhen {
    /// `auto`, `always` or `never`, as cargo reads `CARGO_TERM_COLOR`; anything else is
    /// `None`.
    pub fn parse(s: &str) -> Option<Self> {
        match s.trim() {
            "auto" => Some(ColorWhen::Auto),
            "always" => Some(ColorWhen::Always),
            "never" => Some(ColorWhen::Never),
            _ => None,
        }
    }
}

/// Whether to colour: what was asked (`--color` or `GPUBENCH_COLOR`) wins, then
/// `CARGO_TERM_COLOR` (set by whoever runs `cargo gpubench` for all of cargo), then
/// `auto`, which asks `stdout_auto` (stdout is a terminal and the environment does not
/// forbid colour: `NO_COLOR`, `CLICOLOR=0`, `TERM=dumb`).
pub(crate) fn color_enabled(
    asked: Option<ColorWhen>,
    cargo_term_color: Option<&str>,
    stdout_auto: impl FnOnce() -> bool,
) -> bool {
    match asked.or_else(|| cargo_term_color.and_then(ColorWhen::parse)) {
        Some(ColorWhen::Always) => true,
        Some(ColorWhen::Never) => false,
        Some(ColorWhen::Auto) | None => stdout_auto(),
    }
}

/// Whether stdout takes colour when nothing was asked: anstream's rules (`NO_COLOR`,
/// `CLICOLOR`, `CLICOLOR_FORCE`, `TERM`, and whether stdout is a terminal).
pub(crate) fn stdout_takes_color() -> bool {
    let stdout = std::io::stdout();
    anstream::AutoStream::choice(&stdout) != anstream::ColorChoice::Never
}

static CHOSEN: OnceLock<Console> = OnceLock::new();

/// Sets the process's console once, from the command line; later calls are ignored.
pub(crate) fn init(console: Console) {
    let _ = CHOSEN.set(console);
}

/// The process's console: normal and without colour until [`init`] ran.
pub(crate) fn get() -> Console {
    CHOSEN.get().copied().unwrap_or_default()
}

/// What a piece of output says, which decides its colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tone {
    /// Slower than the baseline, or more work per call: red.
    Regressed,
    /// Faster, or less work: green.
    Improved,
    /// Too noisy to tell, or not compared: yellow.
    Ambiguous,
    /// A failed benchmark, or a tripped gate: bold red.
    Failed,
    /// Stopped or never run: yellow.
    NotRun,
    /// Not in the baseline: cyan.
    New,
}

impl Tone {
    fn style(self) -> Style {
        match self {
            Tone::Regressed => AnsiColor::Red.on_default(),
            Tone::Improved => AnsiColor::Green.on_default(),
            Tone::Ambiguous | Tone::NotRun => AnsiColor::Yellow.on_default(),
            Tone::Failed => AnsiColor::Red.on_default().bold(),
            Tone::New => AnsiColor::Cyan.on_default(),
        }
    }
}

impl Console {
    /// `text` in the colour of `tone`, when colouring; as it is otherwise.
    pub fn paint(&self, tone: Option<Tone>, text: &str) -> String {
        match tone {
            Some(t) if self.color && !text.is_empty() => {
                let style = t.style();
                format!("{style}{text}{style:#}")
            }
            _ => text.to_string(),
        }
    }

    /// Whether `-q` was given.
    pub fn quiet(&self) -> bool {
        self.verbosity == Verbosity::Quiet
    }

    /// Whether `-v` was given.
    pub fn verbose(&self) -> bool {
        self.verbosity == Verbosity::Verbose
    }
}

/// Prints `text` on stdout as it is, or with its colour codes turned into console
/// calls or dropped where the terminal needs that (old Windows consoles).
pub(crate) fn print_stdout(text: &str) {
    use std::io::Write as _;
    let choice = if get().color {
        anstream::ColorChoice::Always
    } else {
        anstream::ColorChoice::Never
    };
    let mut out = anstream::AutoStream::new(std::io::stdout().lock(), choice);
    // As print! does, a closed stdout (e.g. `| head`) ends the output, not the run.
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
}

/// `gpubench: note: …` on stderr, unless quiet.
pub(crate) fn note(message: fmt::Arguments<'_>) {
    if !get().quiet() {
        eprintln!("gpubench: note: {message}");
    }
}

/// `gpubench: …` on stderr, unless quiet: what the run is doing.
pub(crate) fn status(message: fmt::Arguments<'_>) {
    if !get().quiet() {
        eprintln!("gpubench: {message}");
    }
}

/// `gpubench: …` on stderr, with `-v` only.
pub(crate) fn detail(message: fmt::Arguments<'_>) {
    if get().verbose() {
        eprintln!("gpubench: {message}");
    }
}

/// `gpubench: warning: …` on stderr, always: a warning says the results may mislead,
/// which `-q` must not hide.
pub(crate) fn warning(message: fmt::Arguments<'_>) {
    eprintln!("gpubench: warning: {message}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn asked_wins_then_cargo_then_the_terminal() {
        let never_asked = || panic!("auto was not consulted");
        assert!(color_enabled(
            Some(ColorWhen::Always),
            Some("never"),
            never_asked
        ));
        assert!(!color_enabled(
            Some(ColorWhen::Never),
            Some("always"),
            never_asked
        ));
        assert!(color_enabled(None, Some("always"), never_asked));
        assert!(!color_enabled(None, Some("never"), never_asked));
        // `auto`, unset or unreadable: whatever stdout takes.
        assert!(color_enabled(Some(ColorWhen::Auto), Some("always"), || {
            true
        }));
        assert!(!color_enabled(None, None, || false));
        assert!(color_enabled(None, Some("sometimes"), || true));
    }

    #[test]
    fn paint_wraps_text_in_its_colour_only_when_colouring() {
        let on = Console {
            color: true,
            ..Console::default()
        };
        assert_eq!(
            on.paint(Some(Tone::Regressed), "regressed"),
            "\u{1b}[31mregressed\u{1b}[0m"
        );
        assert_eq!(
            on.paint(Some(Tone::Failed), "failed"),
            "\u{1b}[1m\u{1b}[31mfailed\u{1b}[0m"
        );
        assert_eq!(on.paint(None, "passed"), "passed");
        assert_eq!(Console::default().paint(Some(Tone::Improved), "x"), "x");
    }
}
