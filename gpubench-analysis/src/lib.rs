//! What cargo gpubench's records add up to: statistics over processes, regression
//! verdicts, summaries, history and the baseline store; and the probes the harness
//! reads the machine through (NVML, `/proc`).
//!
//! The records themselves are `gpubench-record`'s (see `docs/design/crates.md`). This
//! crate has no libtorch dependency: the harness (`gpubench-core`) uses its stopping
//! rule and probes, and the cargo subcommand analyses and compares records with it.
//! Statistics and verdicts: [`stats`], [`sampling`] (the stopping rule and the
//! alternation of two sides), [`processes`], [`record_analysis`], [`compare`],
//! [`summary`], [`kernels`], [`memory`], [`energy`], [`peaks`], [`capacity`],
//! [`history`],
//! [`baseline`]. I/O and hardware: [`atomic_dir`], the store's files
//! ([`baseline::BaselineStore`]), [`nvml`], [`host`], [`telemetry`].
#![warn(missing_docs)]

pub mod atomic_dir;
pub mod baseline;
pub mod capacity;
pub mod compare;
pub mod energy;
pub mod history;
pub mod host;
pub mod kernels;
pub mod memory;
pub mod memory_trace;
pub mod nvml;
pub mod peaks;
pub mod processes;
pub mod record_analysis;
pub mod sampling;
pub mod stats;
pub mod summary;
#[cfg(any(test, feature = "testing"))]
pub mod synthetic;
pub mod telemetry;

pub use baseline::{
    compare_with_baseline, BaselineCompareOptions, BaselineEntry, BaselineError, BaselineStore,
    ComparisonSet, FailOn,
};
pub use compare::{compare_processes, CompareConfig, Comparison, Verdict};

pub use record_analysis::RecordAnalysis;
pub use summary::BenchmarkSummary;
