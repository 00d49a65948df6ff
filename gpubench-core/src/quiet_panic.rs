//! Panics the engine expects and handles itself (a routine that fails while it is
//! being captured into a CUDA graph) are neither printed nor taken for the benchmark's
//! own failure.

use std::any::Any;
use std::cell::Cell;

thread_local! {
    static QUIET: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` with panics on this thread kept quiet.
pub fn quietly<T>(f: impl FnOnce() -> T) -> T {
    let was = QUIET.with(|q| q.replace(true));
    let out = f();
    QUIET.with(|q| q.set(was));
    out
}

/// Whether a panic now is one the caller expects (see [`quietly`]).
pub fn is_quiet() -> bool {
    QUIET.with(Cell::get)
}

/// A panic payload's message.
pub fn message(payload: &(dyn Any + Send)) -> String {
    let text = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic with a non-string payload".to_string());
    gpubench_record::failure::cap_message(&text)
}
