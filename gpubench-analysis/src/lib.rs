//! Record formats, statistics and regression verdicts of cargo gpubench.
//!
//! This crate has no libtorch dependency: the harness (`gpubench-core`) writes the
//! records defined here, and the cargo subcommand reads, analyses and compares them.
#![warn(missing_docs)]

pub mod atomic_dir;
pub mod baseline;
pub mod compare;
pub mod eager_compiled;
pub mod failure;
pub mod host;
pub mod kernels;
pub mod measurement;
pub mod nvml;
pub mod paired;
pub mod processes;
pub mod protocol;
pub mod record;
pub mod stats;
pub mod summary;
pub mod synthetic;
pub mod telemetry;
pub mod units;

pub use baseline::{
    compare_with_baseline, BaselineCompareOptions, BaselineEntry, BaselineError, BaselineStore,
    ComparisonSet, FailOn,
};
pub use compare::{compare_processes, CompareConfig, Comparison, Verdict};

pub use failure::{cap_message, Failure, FailureKind, MESSAGE_CAP_BYTES};
pub use measurement::*;
pub use record::*;
pub use summary::{BenchmarkSummary, TimeKind};
