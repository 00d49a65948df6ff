//! The record contract of cargo gpubench that every crate of it shares: plain serde
//! types and the rules written into them, with no statistics, no I/O beyond reading a
//! record's text and no hardware.
//!
//! * [`id`]: the rule for benchmark ids (what a name or an argument may hold, and the
//!   file name an id is stored under), applied by the `#[gpu_bench]` macro at compile
//!   time, by the harness's registry when it lists benchmarks, and by the subcommand
//!   when it stores their records.
//! * [`record`]: the raw record of one benchmark, one [`record::ProcessRecord`] per process,
//!   versioned; its parts: [`measurement`] (settings, samples, memory, flags),
//!   [`failure`], [`memory_snapshot`], [`kernels`], [`cache`], [`energy`], [`telemetry`], [`host`],
//!   [`eager_compiled`], [`paired`] (the `ab` ABI and a process's pairing) and
//!   [`estimate`].
//! * [`protocol`]: the harness's process boundary (variables, exit codes, handshake).
//! * [`units`]: how times and sizes are written for people.
//!
//! The harness (`gpubench-core`) writes these records and the subcommand reads them;
//! what they add up to (estimates, verdicts) is `gpubench-analysis`'s.
#![warn(missing_docs)]

pub mod cache;
pub mod eager_compiled;
pub mod energy;
pub mod estimate;
pub mod failure;
pub mod host;
pub mod id;
pub mod kernels;
pub mod measurement;
pub mod memory_snapshot;
pub mod paired;
pub mod protocol;
pub mod record;
pub mod telemetry;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod units;
