//! Two ways to run out of device memory, run only with `--ignored`: tensors that
//! accumulate (a cache that never evicts), and a cache cut into pieces (every other
//! block freed, then one large request). The failure record's snapshot tells them
//! apart. On the CPU they stop after a few small tensors instead: host memory is not
//! theirs to exhaust.

use gpubench_core::{gpu_bench, Bencher};
use tch::{Kind, Tensor};

/// Floats in a 512 MiB tensor.
const LARGE: i64 = 128 << 20;

#[gpu_bench(ignore)]
fn oom_live_tensors(b: &mut Bencher) {
    let device = b.device();
    let mut cache = Vec::new();
    let limit = if device.is_cuda() { usize::MAX } else { 4 };
    b.iter(move || {
        if cache.len() < limit {
            // Kept forever: each call holds 512 MiB more.
            cache.push(Tensor::zeros([LARGE], (Kind::Float, device)));
        }
    });
}

#[gpu_bench(ignore)]
fn oom_fragmented(b: &mut Bencher) {
    let device = b.device();
    if !device.is_cuda() {
        b.iter(|| Tensor::zeros([1024], (Kind::Float, device)));
        return;
    }
    // Reserve the device (or its cap) in 1 GiB segments, then give them back to the
    // cache: the allocator keeps them.
    let gib = 256 << 20;
    let mut big = Vec::new();
    while let Ok(t) = Tensor::f_zeros([gib], (Kind::Float, device)) {
        big.push(t);
    }
    let segments = big.len();
    drop(big);
    // 16 MiB blocks carved out of those segments, every other one freed: half the
    // cache is free, in 16 MiB holes, and no segment can be returned.
    let mut small: Vec<Option<Tensor>> = (0..segments * 64)
        .map(|_| Some(Tensor::zeros([4 << 20], (Kind::Float, device))))
        .collect();
    for t in small.iter_mut().step_by(2) {
        *t = None;
    }
    b.iter(move || {
        let _keep = &small;
        // Fits in the free cache in total, in no single hole, and not beside it.
        Tensor::zeros([gib], (Kind::Float, device))
    });
}

gpubench_core::main!();
