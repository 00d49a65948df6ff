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
//! After the samples, when both libraries speak [`ENERGY_ABI_VERSION`] or later, the
//! driver alternates the sides' energy windows ([`AbiSide::energy_window`]) in the
//! same balanced blocks, and each side keeps its windows as its record's energy.
//!
//! A library that lacks [`SYMBOL_VERSION`], or answers a version outside
//! [`MIN_ABI_VERSION`]`..=`[`ABI_VERSION`], is not paired: `ab` then interleaves base
//! and head processes and says why. A version-1 library is paired without energy
//! windows: its [`AbiSide`] ends before [`AbiSide::energy_window`] ([`AbiSideV1`]).

use std::ffi::{c_char, c_void};

use serde::{Deserialize, Serialize};

use crate::energy::EnergyWindow;
use crate::measurement::MeasurementConfig;

/// The version of this ABI.
pub const ABI_VERSION: u32 = 2;
/// The oldest version the driver still pairs: its sides have no energy windows.
pub const MIN_ABI_VERSION: u32 = 1;
/// The first version whose [`AbiSide`] has [`AbiSide::energy_window`].
pub const ENERGY_ABI_VERSION: u32 = 2;

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

/// Bytes of [`AbiEnergyWindow::reason`], its NUL included.
pub const ENERGY_REASON_BYTES: usize = 256;

/// [`AbiSide::energy_window`] took a window: `out` holds it.
pub const ENERGY_WINDOW_TAKEN: i32 = 0;
/// [`AbiSide::energy_window`] has no window to give (no energy counter, as on the
/// CPU, or a counter that did not step): `out`'s reason says why; the side is fine.
pub const ENERGY_WINDOW_NONE: i32 = 1;
/// [`AbiSide::energy_window`] failed: the side failed (its record says why).
pub const ENERGY_WINDOW_FAILED: i32 = -1;

/// One energy window a side took, as [`crate::energy::EnergyWindow`] keeps it, or
/// why there is none.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AbiEnergyWindow {
    /// Calls made in the window.
    pub calls: u64,
    /// Synced wall time of the calls, s.
    pub synced_s: f64,
    /// Time from the first counter step seen to the last, s.
    pub counted_s: f64,
    /// Counter steps between the first seen and the last.
    pub steps: u32,
    /// Energy the counter gained between those steps, J.
    pub energy_j: f64,
    /// Why there is no window ([`ENERGY_WINDOW_NONE`]): UTF-8, NUL-terminated.
    pub reason: [u8; ENERGY_REASON_BYTES],
}

impl Default for AbiEnergyWindow {
    fn default() -> Self {
        AbiEnergyWindow {
            calls: 0,
            synced_s: 0.0,
            counted_s: 0.0,
            steps: 0,
            energy_j: 0.0,
            reason: [0; ENERGY_REASON_BYTES],
        }
    }
}

impl AbiEnergyWindow {
    /// `window` as it crosses the ABI.
    pub fn of(window: &EnergyWindow) -> Self {
        AbiEnergyWindow {
            calls: window.calls,
            synced_s: window.synced_s,
            counted_s: window.counted_s,
            steps: window.steps,
            energy_j: window.energy_j,
            ..AbiEnergyWindow::default()
        }
    }

    /// No window, because of `why` (cut at a character to fit).
    pub fn none(why: &str) -> Self {
        let mut end = why.len().min(ENERGY_REASON_BYTES - 1);
        while !why.is_char_boundary(end) {
            end -= 1;
        }
        let mut out = AbiEnergyWindow::default();
        out.reason[..end].copy_from_slice(&why.as_bytes()[..end]);
        out
    }

    /// The window it holds.
    pub fn window(&self) -> EnergyWindow {
        EnergyWindow {
            calls: self.calls,
            synced_s: self.synced_s,
            counted_s: self.counted_s,
            steps: self.steps,
            energy_j: self.energy_j,
        }
    }

    /// Why it holds none.
    pub fn reason(&self) -> String {
        let end = self
            .reason
            .iter()
            .position(|&b| b == 0)
            .unwrap_or(ENERGY_REASON_BYTES);
        String::from_utf8_lossy(&self.reason[..end]).into_owned()
    }
}

/// `energy_window` of [`AbiSide`].
pub type EnergyWindowFn =
    unsafe extern "C" fn(ctx: *mut c_void, steps: u32, out: *mut AbiEnergyWindow) -> i32;

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
    /// Since [`ENERGY_ABI_VERSION`]; read only when the library answers it or later.
    /// One window of calls back to back, after the samples, while the GPU's energy
    /// counter is polled on a thread of its own until it stepped `steps` times (at
    /// least 3); returns [`ENERGY_WINDOW_TAKEN`], [`ENERGY_WINDOW_NONE`] (the reason
    /// in `out`) or [`ENERGY_WINDOW_FAILED`]. The side keeps the windows it took as
    /// its record's energy instead of measuring windows of its own alone.
    pub energy_window: EnergyWindowFn,
}

/// The [`AbiSide`] of a version-1 library: the fields before
/// [`AbiSide::energy_window`], all a driver may read of it.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct AbiSideV1 {
    /// [`AbiSide::ctx`].
    pub ctx: *mut c_void,
    /// [`AbiSide::warm_up`].
    pub warm_up: unsafe extern "C" fn(ctx: *mut c_void) -> f64,
    /// [`AbiSide::sample`].
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
    /// `ln(head / base)` of energy per call from the sides' alternated energy
    /// windows: the median over the energy blocks (each `first, second, second,
    /// first`) of the ratio of the sides' mean joules per call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy_log_ratio: Option<f64>,
    /// Blocks of four alternated energy windows `energy_log_ratio` rests on.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub energy_blocks: u32,
    /// Why there is no `energy_log_ratio` (a library too old for energy windows, a
    /// device without an energy counter, sides that were not alternated); each
    /// side's own energy, if any, is then its windows alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy_unpaired: Option<String>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_version_1_side_is_the_start_of_a_version_2_side() {
        assert_eq!(
            std::mem::size_of::<AbiSideV1>(),
            std::mem::offset_of!(AbiSide, energy_window)
        );
        assert_eq!(
            std::mem::offset_of!(AbiSideV1, sample),
            std::mem::offset_of!(AbiSide, sample)
        );
    }

    #[test]
    fn an_energy_window_crosses_whole_and_a_reason_is_cut_at_a_character() {
        let w = EnergyWindow {
            calls: 3750,
            synced_s: 0.31,
            counted_s: 0.3,
            steps: 3,
            energy_j: 120.0,
        };
        let abi = AbiEnergyWindow::of(&w);
        assert_eq!(abi.window(), w);
        assert_eq!(abi.reason(), "");
        assert_eq!(
            AbiEnergyWindow::none("no GPU telemetry").reason(),
            "no GPU telemetry"
        );
        let long = "é".repeat(ENERGY_REASON_BYTES);
        let cut = AbiEnergyWindow::none(&long).reason();
        assert_eq!(cut.len(), ENERGY_REASON_BYTES - 2, "whole characters only");
        assert!(cut.chars().all(|c| c == 'é'));
    }

    #[test]
    fn a_pairing_without_paired_energy_reads_and_writes_as_before() {
        let json = r#"{"role":"head","base_first":true,"blocks":12,"log_ratio":0.05}"#;
        let p: Pairing = serde_json::from_str(json).unwrap();
        assert_eq!(p.energy_log_ratio, None);
        assert_eq!(p.energy_blocks, 0);
        assert_eq!(serde_json::to_string(&p).unwrap(), json);
    }
}
