//! `--format json`: the summary of a run ([`crate::compare::summary`]) or of
//! `compare` printed as it is ([`print_document`]), or an [`ErrorDocument`] when the
//! command fails before it; [`crate::output::terminal`] and
//! [`crate::output::markdown`] lay the summary out.

use std::sync::atomic::{AtomicBool, Ordering};

use serde::Serialize;

use crate::compare::summary::{RunSummary, SUMMARY_FORMAT_VERSION};
use crate::exit_code::Exit;

impl RunSummary {
    /// Pretty JSON with a trailing newline.
    #[cfg(test)]
    pub(crate) fn to_json_pretty(&self) -> String {
        pretty_json(self)
    }
}

/// `value` as pretty JSON with a closing newline.
pub(crate) fn pretty_json(value: &impl serde::Serialize) -> String {
    let mut text =
        serde_json::to_string_pretty(value).expect("outputs are plain data and always serialise");
    text.push('\n');
    text
}

/// What `--format json` prints on stdout when the command fails without its summary:
/// `{"format_version": 1, "error": {"message": …, "exit_code": 2, "exit": "usage"}}`,
/// so a program reading stdout gets a document either way.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ErrorDocument {
    /// [`SUMMARY_FORMAT_VERSION`].
    pub format_version: u32,
    /// What went wrong.
    pub error: ErrorBody,
}

/// The error of an [`ErrorDocument`].
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ErrorBody {
    /// The message, as stderr shows it after `error: `.
    pub message: String,
    /// The process exit code.
    pub exit_code: u8,
    /// What it means, e.g. `usage`.
    pub exit: &'static str,
}

impl ErrorDocument {
    /// The document for an error ending the command with `exit`.
    pub(crate) fn new(message: String, exit: Exit) -> Self {
        ErrorDocument {
            format_version: SUMMARY_FORMAT_VERSION,
            error: ErrorBody {
                // A cause quoting a tool's stderr ends with its newline.
                message: message.trim_end().to_string(),
                exit_code: exit.code(),
                exit: exit.word(),
            },
        }
    }
}

/// Whether a `--format json` document went to stdout already.
static PRINTED: AtomicBool = AtomicBool::new(false);

/// Prints `value` on stdout as the command's one JSON document.
pub(crate) fn print_document(value: &impl serde::Serialize) {
    PRINTED.store(true, Ordering::SeqCst);
    print!("{}", pretty_json(value));
}

/// Whether [`print_document`] ran: an error after the summary (e.g. saving the
/// baseline failed) must not add a second document to stdout.
pub(crate) fn document_printed() -> bool {
    PRINTED.load(Ordering::SeqCst)
}
