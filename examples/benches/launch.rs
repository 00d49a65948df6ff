//! Launch-bound work: each call's kernels take a few microseconds, about as long as
//! the host takes to dispatch them, so back-to-back calls measure the host's dispatch
//! speed, which differs from one process to the next on a cloud GPU machine.
//!
//! Planted changes, for trying out verdicts (both default to none):
//! * `GPUBENCH_EXAMPLE_EXTRA_KERNEL=1` adds one more kernel to every call of
//!   `add_1m` (an in-place scale by 1);
//! * `GPUBENCH_EXAMPLE_ELEMENTS=<factor>` scales the elements of `add_1m` (1.1: 10%
//!   more work per call, a real kernel slowdown).

use gpubench_core::{gpu_bench, Bencher, Throughput};
use tch::{Kind, Tensor};

const EXTRA_KERNEL_VAR: &str = "GPUBENCH_EXAMPLE_EXTRA_KERNEL";
const ELEMENTS_VAR: &str = "GPUBENCH_EXAMPLE_ELEMENTS";

fn extra_kernel() -> bool {
    std::env::var(EXTRA_KERNEL_VAR).is_ok_and(|v| !v.is_empty() && v != "0")
}

fn elements_factor() -> f64 {
    match std::env::var(ELEMENTS_VAR) {
        Err(_) => 1.0,
        Ok(v) => match v.trim().parse::<f64>() {
            Ok(f) if f.is_finite() && f > 0.0 => f,
            _ => panic!("{ELEMENTS_VAR} must be a positive number, got {v:?}"),
        },
    }
}

/// An elementwise add of 1M floats: one kernel of about 2 µs on an H200.
#[gpu_bench]
fn add_1m(b: &mut Bencher) {
    let n = (1_048_576.0 * elements_factor()).round() as i64;
    let x = Tensor::randn([n], (Kind::Float, b.device()));
    let y = Tensor::randn([n], (Kind::Float, b.device()));
    b.throughput(Throughput::Bytes(3.0 * 4.0 * n as f64));
    if extra_kernel() {
        b.iter(|| {
            let mut z = &x + &y;
            let _ = z.g_mul_scalar_(1.0);
            z
        });
    } else {
        b.iter(|| &x + &y);
    }
}

/// Causal scaled-dot-product attention, bf16, batch 8, 16 heads of 64, at a short
/// sequence: a few kernels of a few microseconds each.
#[gpu_bench(args = [128, 512])]
fn sdpa(b: &mut Bencher, seq: i64) {
    let kind = if b.device().is_cuda() {
        Kind::BFloat16
    } else {
        Kind::Float
    };
    let shape = [8, 16, seq, 64];
    let q = Tensor::randn(shape, (kind, b.device()));
    let k = Tensor::randn(shape, (kind, b.device()));
    let v = Tensor::randn(shape, (kind, b.device()));
    b.iter(|| {
        Tensor::scaled_dot_product_attention(&q, &k, &v, None::<Tensor>, 0.0, true, None, false)
    });
}

/// A stream of requests of varying length through a small layer (layer norm, linear,
/// GELU), as a server sees them: each new length is a cold call of its own.
#[gpu_bench]
fn request_stream(b: &mut Bencher) {
    let device = b.device();
    let width = 256;
    let weight = Tensor::randn([width, width], (Kind::Float, device));
    let lengths = [17i64, 64, 33, 128, 17, 90, 64, 33, 200, 17];
    let inputs: Vec<Tensor> = lengths
        .iter()
        .map(|&l| Tensor::randn([l, width], (Kind::Float, device)))
        .collect();
    b.iter_inputs(inputs, |x| {
        x.layer_norm([width], None::<Tensor>, None::<Tensor>, 1e-5, false)
            .matmul(&weight)
            .gelu("none")
    });
}

/// A routine that reads a scalar back to the host every call: it syncs inside.
#[gpu_bench]
fn scalar_readback(b: &mut Bencher) {
    let x = Tensor::randn([4096], (Kind::Float, b.device()));
    b.iter(|| x.sum(Kind::Float).double_value(&[]));
}

gpubench_core::main!();
