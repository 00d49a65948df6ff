//! The contract of `cargo gpubench ab`, base and head measured in one process: the C
//! ABI between the driver process and a revision's bench code built as a loadable
//! library, what the driver asks of a side, and what a record keeps of the pairing.
//!
//! # How a process pairs two sides
//!
//! The driver loads both libraries (they share one libtorch, CUDA context and
//! caching allocator) and calls [`SYMBOL_OPEN`] on the first side with a
//! [`PairedRequest`] and a [`ReadyFn`]. That side sets up its device, runs the
//! benchmark's body, and when the body hands its routine to `b.iter…` it calls
//! `ready` with an [`AbiSide`]: the body's frame stays alive, waiting inside `iter`,
//! while the driver uses the side. From inside that call the driver opens the second
//! side the same way; with both ready it warms both and alternates their samples
//! in blocks (first, second, second, first), then returns from the inner `ready`, then the
//! outer. Each `open` returns its side's record as JSON, the samples in the order
//! they were taken and the [`Pairing`] in its process. Everything runs on one thread,
//! one call at a time; no Rust value crosses between the libraries (each has its own
//! copy of the standard library), only the C types here and JSON text.
//!
//! A library that lacks [`SYMBOL_VERSION`], or answers another [`ABI_VERSION`], is
//! not paired: `ab` then interleaves base and head processes and says why.

use std::ffi::{c_char, c_void};

use serde::{Deserialize, Serialize};

use crate::measurement::MeasurementConfig;

/// The version of this ABI; a library answering another one is not paired.
pub const ABI_VERSION: u32 = 1;

/// `extern "C" fn() -> u32`: the ABI version the library speaks.
pub const SYMBOL_VERSION: &str = "gpubench_paired_abi_version";
/// `extern "C" fn() -> *mut c_char`: the library's benchmarks, as JSON (a list of
/// [`PairedBenchmark`]); free with [`SYMBOL_FREE`].
pub const SYMBOL_LIST: &str = "gpubench_paired_list";
/// `extern "C" fn(request: *const c_char, ready: ReadyFn, user: *mut c_void) -> *mut
/// c_char`: runs one benchmark for pairing ([`PairedRequest`] as JSON in, the side's
/// `RawRecord` as JSON out, or a [`PairedError`] as JSON when there is no record);
/// free the result with [`SYMBOL_FREE`].
pub const SYMBOL_OPEN: &str = "gpubench_paired_open";
/// `extern "C" fn(text: *mut c_char)`: frees a string the library returned.
pub const SYMBOL_FREE: &str = "gpubench_paired_free";

/// One benchmark a library offers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PairedBenchmark {
    /// Its id.
    pub id: String,
    /// Whether it runs only when ignored ones are asked for.
    pub ignored: bool,
}

/// Which revision a side is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The revision judged against (the merge-base by default).
    Base,
    /// The revision judged (the working tree by default).
    Head,
}

impl Role {
    /// `base` or `head`.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Base => "base",
            Role::Head => "head",
        }
    }
}

/// What the driver asks of one side, as JSON through [`SYMBOL_OPEN`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairedRequest {
    /// The benchmark id.
    pub id: String,
    /// Which revision this side is.
    pub role: Role,
    /// `cpu`, `cuda` or `cuda:N`; the harness picks when absent.
    #[serde(default)]
    pub device: Option<String>,
    /// How to measure; identical for both sides.
    pub config: MeasurementConfig,
    /// Which process of the benchmark this is (1 for the first): from 2 on, the
    /// diagnostics one process recorded are left out, as in a run.
    #[serde(rename = "round")]
    pub process: u32,
}

/// Why a side gave no record at all (its library could not even start).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PairedError {
    /// What went wrong, as a lower-case fragment.
    pub error: String,
}

/// One synced sample a side took: `sync; t0; k calls; sync; t1`, as in a run.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct AbiSample {
    /// `t1 − t0`, ns.
    pub wall_ns: f64,
    /// From `t0` until the k-th call returned, ns.
    pub host_ns: f64,
    /// Device events around the k calls, ns; NaN without a device timer.
    pub device_ns: f64,
}

/// A side ready to be measured: its body waits inside `b.iter…` until the driver
/// returns from [`ReadyFn`]. The functions may only be called during that call.
#[repr(C)]
#[derive(Debug)]
pub struct AbiSide {
    /// The side's state, passed back to every function.
    pub ctx: *mut c_void,
    /// The cold calls and the warm-up, as a run makes them; returns the per-call
    /// estimate (ns), or a negative number when the side failed (its record says
    /// why).
    pub warm_up: unsafe extern "C" fn(ctx: *mut c_void) -> f64,
    /// Takes one synced sample of `iters` calls into `out`; returns 0 when it was
    /// taken, else the side failed (its record says why).
    pub sample: unsafe extern "C" fn(ctx: *mut c_void, iters: u64, out: *mut AbiSample) -> i32,
}

/// Called by a side once it is ready, with the `user` pointer given to
/// [`SYMBOL_OPEN`]; the side finishes its record when this returns.
pub type ReadyFn = unsafe extern "C" fn(user: *mut c_void, side: *const AbiSide);

/// `gpubench_paired_abi_version`.
pub type VersionFn = unsafe extern "C" fn() -> u32;
/// `gpubench_paired_list`.
pub type ListFn = unsafe extern "C" fn() -> *mut c_char;
/// `gpubench_paired_open`.
pub type OpenFn =
    unsafe extern "C" fn(request: *const c_char, ready: ReadyFn, user: *mut c_void) -> *mut c_char;
/// `gpubench_paired_free`.
pub type FreeFn = unsafe extern "C" fn(text: *mut c_char);

/// Why a process of an `ab` benchmark measured its side alone, in a process of its
/// own, instead of beside the other revision: pairing it failed, so from that process
/// on each revision of the benchmark runs alone (base and head in turn, the first
/// side alternating by process) and the verdict rests on separate processes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unpaired {
    /// The process whose paired process failed.
    #[serde(rename = "failed_round")]
    pub failed_process: u32,
    /// The side that failed in it; absent when the process itself ended (a crash, a
    /// time-out) before either side said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_side: Option<Role>,
    /// In the user's words: `the base failed beside the head (setup): …`.
    pub reason: String,
    /// The failed side's error as it came, for whoever digs deeper.
    pub error: String,
}

/// What a process of a paired record keeps of the process it shared with the other
/// side: enough to judge the pair from the two records alone.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pairing {
    /// Which side this record is.
    pub role: Role,
    /// Whether the base took the first sample of each block (base, head, head,
    /// base); the next process starts with the other side, so the order balances.
    pub base_first: bool,
    /// Blocks of four alternated samples the ratio rests on; 0 when a side measured
    /// itself in this process without alternating (an eager-versus-compiled
    /// benchmark), the ratio then of the two sides' own figures.
    pub blocks: u32,
    /// `ln(head / base)` of the per-call time the verdict uses (device time when both
    /// sides have it, else synced wall time): the median over the blocks.
    pub log_ratio: f64,
    /// `ln(head / base)` of kernel time, when both sides measured it here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_log_ratio: Option<f64>,
    /// `ln(head / base)` of energy per call, median over alternated window blocks,
    /// when both sides measured energy here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy_log_ratio: Option<f64>,
}
