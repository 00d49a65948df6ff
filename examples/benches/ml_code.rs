//! Ordinary ML code, as `cargo gpubench ab` must judge it: training steps that read
//! their loss back (as every loop that logs `loss.item()` does), a training step
//! whose inputs are drawn afresh for each call, a serving routine with a bounded
//! per-call cache, and three plain ops beside them.
//!
//! `PLANTED` is the change a pull request would make: scripts/gpu/ml-code-build.sh
//! commits it set to `true` and `ab` must find each part (a read-back added to a
//! training step, a 3% larger batch, a cache that keeps 64 KiB per call), while the
//! benchmarks it leaves alone stay "no change".

use std::cell::RefCell;
use std::collections::VecDeque;

use gpubench_core::{gpu_bench, Bencher, Throughput};
use gpubench_examples::mlp::{accumulated_step, Mlp};
use tch::nn::{self, OptimizerConfig};
use tch::{Device, Kind, Tensor};

/// Whether this revision carries the planted changes.
const PLANTED: bool = false;

/// The MLP of the training steps: smaller on the CPU, where it runs in CI.
fn model(device: Device) -> (nn::VarStore, Mlp, i64) {
    let vs = nn::VarStore::new(device);
    let (input, width, depth) = if device.is_cuda() {
        (1024, 1024, 3)
    } else {
        (64, 64, 2)
    };
    let mlp = Mlp::new(&vs.root(), input, width, depth, 10);
    (vs, mlp, input)
}

/// One training step that logs its loss, on both revisions: the read-back syncs, so
/// no CUDA graph can hold it, and its inputs are drawn with `randn` for each call
/// (`iter_with_setup`): random numbers drawn right after a failed graph capture
/// are what broke the other revision of a paired process.
#[gpu_bench]
fn logged_step(b: &mut Bencher) {
    let device = b.device();
    let (vs, mlp, input) = model(device);
    let mut opt = nn::Sgd::default().build(&vs, 1e-3).expect("optimizer");
    let batch = 256;
    let y = Tensor::randint(10, [batch], (Kind::Int64, device));
    b.iter_with_setup(
        || Tensor::randn([batch, input], (Kind::Float, device)),
        |x| {
            let loss = mlp.forward(&x).cross_entropy_for_logits(&y);
            opt.backward_step(&loss);
            loss.double_value(&[])
        },
    );
}

/// A training step; the planted head reads its loss back in every call (one more
/// sync per call, which the counters must show).
#[gpu_bench]
fn train_step(b: &mut Bencher) {
    let device = b.device();
    let (vs, mlp, input) = model(device);
    let mut opt = nn::Sgd::default().build(&vs, 1e-3).expect("optimizer");
    let batch = 256;
    let x = Tensor::randn([batch, input], (Kind::Float, device));
    let y = Tensor::randint(10, [batch], (Kind::Int64, device));
    b.iter(|| {
        let loss = mlp.forward(&x).cross_entropy_for_logits(&y);
        opt.backward_step(&loss);
        if PLANTED {
            let _ = loss.double_value(&[]);
        }
        loss
    });
}

/// A device-bound training step over a batch in micro-batches (gradients
/// accumulated, one optimizer step): on a GPU 32 micro-batches of 4096 rows through a
/// bf16 MLP of width 4096. The planted head trains on a 3.1% larger batch, 33
/// micro-batches: 3% more of the same kernels. (A batch of 4096 rows grown to 4224 in
/// one piece, width 1024, took 1.1% longer on an H200, and 32768 to 33792 rows at
/// width 4096 0.6%: cuBLAS fills its last wave of tiles rather than adding one, so
/// more rows in one matmul need not be more time. Micro-batches of 1024 rows were
/// +3.1% in kernel time, but their 960 launches a step took the host longer than the
/// GPU's 13 ms: launch-bound, its time ratios spread ±5-15% between processes.)
#[gpu_bench]
fn big_batch_step(b: &mut Bencher) {
    accumulated_step(b, 4096, if PLANTED { 33 } else { 32 });
}

/// A serving routine (normalise a request's embedding); the planted head keeps each
/// result in a cache of up to `CACHE_ENTRIES` entries of 64 KiB, dropping the oldest
/// beyond: a bounded cache, which grows memory by 64 KiB per call until it is full
/// and then holds 1 GiB.
#[gpu_bench]
fn cached_lookup(b: &mut Bencher) {
    const CACHE_ENTRIES: usize = 16_384;
    let device = b.device();
    let x = Tensor::randn([16_384], (Kind::Float, device));
    let cache = RefCell::new(VecDeque::new());
    b.iter(|| {
        let y = &x / x.norm();
        if PLANTED {
            let mut cache = cache.borrow_mut();
            if cache.len() == CACHE_ENTRIES {
                cache.pop_front();
            }
            cache.push_back(y.shallow_clone());
        }
        y
    });
}

/// An add of 1M floats: launch-bound on a GPU.
#[gpu_bench]
fn add_1m(b: &mut Bencher) {
    let x = Tensor::randn([1 << 20], (Kind::Float, b.device()));
    let y = Tensor::randn([1 << 20], (Kind::Float, b.device()));
    b.throughput(Throughput::Bytes(12.0 * f64::from(1 << 20)));
    b.iter(|| &x + &y);
}

/// A 4096² bf16 matmul (f32 on the CPU): device-bound on a GPU.
#[gpu_bench]
fn matmul_4096(b: &mut Bencher) {
    let (n, kind) = if b.device().is_cuda() {
        (4096, Kind::BFloat16)
    } else {
        (128, Kind::Float)
    };
    let x = Tensor::randn([n, n], (kind, b.device()));
    let y = Tensor::randn([n, n], (kind, b.device()));
    b.throughput(Throughput::Flops(2.0 * (n as f64).powi(3)));
    b.iter(|| x.matmul(&y));
}

/// Causal attention over 128 tokens (8 heads of 16 x 64, bf16 on a GPU).
#[gpu_bench]
fn attention_128(b: &mut Bencher) {
    let kind = if b.device().is_cuda() {
        Kind::BFloat16
    } else {
        Kind::Float
    };
    let shape = [8, 16, 128, 64];
    let q = Tensor::randn(shape, (kind, b.device()));
    let k = Tensor::randn(shape, (kind, b.device()));
    let v = Tensor::randn(shape, (kind, b.device()));
    b.iter(|| {
        Tensor::scaled_dot_product_attention(&q, &k, &v, None::<Tensor>, 0.0, true, None, false)
    });
}

gpubench_core::main!();
