//! Why a benchmark failed, with messages capped so a libtorch error that embeds a
//! whole tensor dump cannot bloat a record.

use serde::{Deserialize, Serialize};

use crate::measurement::MemoryStats;
use crate::memory_snapshot::MemorySnapshot;

/// Longest message kept in a record, in bytes. libtorch error strings can embed
/// megabytes of tensor contents; a few KB always hold the useful part.
pub const MESSAGE_CAP_BYTES: usize = 4096;

/// What went wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    /// The benchmark panicked (a Rust panic, or a libtorch error surfaced by tch as one).
    Panic,
    /// libtorch ran out of device memory.
    OutOfMemory,
    /// The process died from a signal (abort, segfault, ...).
    Crash,
    /// The process exceeded its time limit and was killed.
    Timeout,
    /// The process exited with a non-zero code without writing a record.
    ExitCode,
    /// The benchmark could not be set up (bad device, missing file, ...).
    Setup,
}

impl FailureKind {
    /// A short lower-case word for tables.
    pub fn label(self) -> &'static str {
        match self {
            FailureKind::Panic => "panic",
            FailureKind::OutOfMemory => "out of memory",
            FailureKind::Crash => "crash",
            FailureKind::Timeout => "timeout",
            FailureKind::ExitCode => "exit code",
            FailureKind::Setup => "setup",
        }
    }
}

/// A failed benchmark.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Failure {
    /// What went wrong.
    pub kind: FailureKind,
    /// The message, capped at [`MESSAGE_CAP_BYTES`].
    pub message: String,
    /// The caching allocator's view at the failure (CUDA only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_at_failure: Option<MemoryStats>,
    /// What the caching allocator held at an out-of-memory failure: its largest live
    /// blocks, what it reserved but left free, the failed request and the cause.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_snapshot: Option<MemorySnapshot>,
    /// Why there is no [`Failure::memory_snapshot`] for an out-of-memory failure
    /// (no caching allocator, a shim built without CUDA, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_snapshot_unavailable: Option<String>,
}

impl Failure {
    /// A failure with a capped message.
    pub fn new(kind: FailureKind, message: impl AsRef<str>) -> Self {
        Failure {
            kind,
            message: cap_message(message.as_ref()),
            memory_at_failure: None,
            memory_snapshot: None,
            memory_snapshot_unavailable: None,
        }
    }

    /// Classifies a panic or libtorch message: CUDA's out-of-memory errors become
    /// [`FailureKind::OutOfMemory`], everything else [`FailureKind::Panic`].
    pub fn from_panic_message(message: &str) -> Self {
        let kind = if is_out_of_memory(message) {
            FailureKind::OutOfMemory
        } else {
            FailureKind::Panic
        };
        Failure::new(kind, message)
    }
}

/// Whether a libtorch message reports an out-of-memory condition.
pub fn is_out_of_memory(message: &str) -> bool {
    let lower = message.to_ascii_lowercase();
    lower.contains("out of memory")
        || lower.contains("outofmemoryerror")
        || lower.contains("can't allocate memory")
}

/// Caps `message` at [`MESSAGE_CAP_BYTES`] on a character boundary, keeping the head
/// (where libtorch puts the error) and a note of how much was cut. A C++ backtrace
/// that libtorch appends (`frame #0: ...`) is dropped first: it names only library
/// offsets.
pub fn cap_message(message: &str) -> String {
    let message = strip_cpp_backtrace(message);
    if message.len() <= MESSAGE_CAP_BYTES {
        return message.to_string();
    }
    let mut end = MESSAGE_CAP_BYTES;
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}… [{} more bytes cut]",
        &message[..end],
        message.len() - end
    )
}

/// Cuts libtorch's appended C++ backtrace, whether its newlines are real or escaped
/// (as in a `Debug`-formatted error).
fn strip_cpp_backtrace(message: &str) -> std::borrow::Cow<'_, str> {
    const MARKERS: [&str; 4] = [
        "\nframe #0:",
        "\\nframe #0:",
        "\nException raised from",
        "\\nException raised from",
    ];
    match MARKERS.iter().filter_map(|m| message.find(m)).min() {
        Some(pos) => format!("{} [C++ backtrace cut]", &message[..pos]).into(),
        None => message.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_messages_are_capped_on_a_char_boundary() {
        let long = "é".repeat(10_000);
        let capped = cap_message(&long);
        assert!(capped.len() < MESSAGE_CAP_BYTES + 64);
        assert!(capped.contains("more bytes cut"));
        assert_eq!(cap_message("short"), "short");
    }

    #[test]
    fn cpp_backtraces_are_cut() {
        let real = "CUDA error: boom\nframe #0: c10::Error + 0x1 (in libc10.so)\nframe #1: x";
        assert_eq!(cap_message(real), "CUDA error: boom [C++ backtrace cut]");
        let escaped = r#"Torch("can't allocate\nframe #0: c10::ThrowEnforceNotMet")"#;
        assert_eq!(
            cap_message(escaped),
            "Torch(\"can't allocate [C++ backtrace cut]"
        );
        let raised = "bad shape\nException raised from foo at bar.cpp:1";
        assert_eq!(cap_message(raised), "bad shape [C++ backtrace cut]");
    }

    #[test]
    fn cuda_oom_is_classified() {
        let f = Failure::from_panic_message(
            "Torch(\"CUDA out of memory. Tried to allocate 80.00 GiB\")",
        );
        assert_eq!(f.kind, FailureKind::OutOfMemory);
        assert_eq!(
            Failure::from_panic_message("index out of range").kind,
            FailureKind::Panic
        );
    }
}
