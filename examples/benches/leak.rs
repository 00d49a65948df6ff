//! A cache that never evicts, the commonest leak in training and serving code: a
//! lookup whose every result is also kept "for later". gpubench reads the device
//! memory still allocated after each call's output is dropped and flags the routine
//! ("holds +64.00 KiB per call"); against a baseline from before the leak it is a
//! memory regression.
//!
//! * `cached_lookup` is the routine as it should be; `GPUBENCH_EXAMPLE_LEAK=1` plants
//!   the leak in it (same id, so it compares with a baseline saved without it);
//! * `cached_lookup_leaking` always leaks; it is ignored unless asked for
//!   (`cargo gpubench -- --ignored`, or `--exact cached_lookup_leaking --ignored`).

use std::cell::RefCell;

use gpubench_core::{gpu_bench, Bencher};
use tch::{Kind, Tensor};

const LEAK_VAR: &str = "GPUBENCH_EXAMPLE_LEAK";
/// Floats in each result: 16384 × 4 bytes = 64 KiB, a multiple of the caching
/// allocator's 512 B blocks, so what a leaking call holds is exactly this.
const RESULT_FLOATS: i64 = 16 * 1024;

fn planted_leak() -> bool {
    std::env::var(LEAK_VAR).is_ok_and(|v| !v.is_empty() && v != "0")
}

/// Looks rows up in a table and scales them; with `leak`, also keeps every result in
/// a cache that is never read or evicted.
fn lookup(b: &mut Bencher, leak: bool) {
    let device = b.device();
    let table = Tensor::randn([1024, RESULT_FLOATS], (Kind::Float, device));
    let row = Tensor::from_slice(&[7_i64]).to_device(device);
    let cache: RefCell<Vec<Tensor>> = RefCell::new(Vec::new());
    b.iter(|| {
        let out = table.index_select(0, &row).reshape([RESULT_FLOATS]) * 2.0;
        if leak {
            cache.borrow_mut().push(out.shallow_clone());
        }
        out
    });
}

/// The lookup; with `GPUBENCH_EXAMPLE_LEAK=1` it keeps every result.
#[gpu_bench]
fn cached_lookup(b: &mut Bencher) {
    lookup(b, planted_leak());
}

/// The lookup with the leak always in: one 64 KiB tensor kept per call. Ignored by
/// default, since it holds memory for as long as it runs.
#[gpu_bench(ignore)]
fn cached_lookup_leaking(b: &mut Bencher) {
    lookup(b, true);
}

gpubench_core::main!();
