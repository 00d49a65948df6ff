//! Record formats, statistics and regression verdicts of cargo gpubench.
//!
//! This crate has no libtorch dependency: the harness (`gpubench-core`) writes the
//! records defined here, and the cargo subcommand reads, analyses and compares them.
#![warn(missing_docs)]

pub mod failure;
pub mod record;
pub mod stats;

pub use failure::{cap_message, Failure, FailureKind, MESSAGE_CAP_BYTES};
pub use record::*;
