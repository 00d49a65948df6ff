//! The state of the L2 cache a timer's calls started with, which `--flush-l2` sets:
//! the samples' timers and kernel time each record theirs.

use serde::{Deserialize, Serialize};

/// The state of the L2 cache when a timer's calls started (`--flush-l2` flushes it
/// before every timed call).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum L2State {
    /// Whatever the previous call left in it.
    Warm,
    /// Flushed before each call.
    Flushed,
}

impl L2State {
    /// The state `--flush-l2` (`flush`) asks for.
    pub fn of(flush: bool) -> Self {
        if flush {
            L2State::Flushed
        } else {
            L2State::Warm
        }
    }
}
