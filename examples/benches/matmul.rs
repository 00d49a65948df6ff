//! Matrix-multiply sweep over sizes and dtypes, with TFLOP/s. On a GPU the sizes are
//! 1024, 4096 and 8192, and 2048 for bf16 (the size between launch-bound and
//! device-bound that `--flush-l2` is checked at); on the CPU, where those would take
//! seconds a call, a sixteenth of each (64, 128, 256, 512), and the ids say so
//! (`matmul_f32/256`).
//!
//! `GPUBENCH_EXAMPLE_SLOWDOWN=<factor>` (a number ≥ 1; absent means 1) plants a real
//! regression for trying out baselines and CI gates: see [`slowdown`].

use gpubench_core::{gpu_bench, Bencher, Throughput};
use tch::{Kind, Tensor};

/// The environment variable that plants a slowdown.
const SLOWDOWN_VAR: &str = "GPUBENCH_EXAMPLE_SLOWDOWN";

/// The planted slowdown factor: 1 when the variable is absent. A bad value panics,
/// which the harness records as a failed benchmark naming the variable.
fn slowdown() -> f64 {
    match std::env::var(SLOWDOWN_VAR) {
        Err(_) => 1.0,
        Ok(v) => match v.trim().parse::<f64>() {
            Ok(f) if f.is_finite() && f >= 1.0 => f,
            _ => panic!("{SLOWDOWN_VAR} must be a number of at least 1, got {v:?}"),
        },
    }
}

/// `n` on a GPU, a sixteenth of it on the CPU: the size a benchmark of the sweep
/// runs, and so the argument its id names.
fn size(n: i64) -> i64 {
    if gpubench_core::bench_device().is_cuda() {
        n
    } else {
        n / 16
    }
}

fn matmul(b: &mut Bencher, n: i64, kind: Kind) {
    let x = Tensor::randn([n, n], (kind, b.device()));
    let y = Tensor::randn([n, n], (kind, b.device()));
    // The declared work stays one n×n matmul, so a planted slowdown shows as lower
    // TFLOP/s, as a real regression would.
    b.throughput(Throughput::Flops(2.0 * (n as f64).powi(3)));
    // A slowdown of f does f times the work for real (nothing sleeps): floor(f) full
    // matmuls, plus one over the first (f − floor(f))·n rows of x, whose cost is
    // proportional to its rows. The extra results are kept alive with the last one
    // so they are not skipped.
    let factor = slowdown();
    if factor == 1.0 {
        b.iter(|| x.matmul(&y));
        return;
    }
    let extra_full = factor.floor() as usize - 1;
    let extra_rows = ((factor - factor.floor()) * n as f64).round() as i64;
    let partial = (extra_rows > 0).then(|| x.narrow(0, 0, extra_rows));
    b.iter(|| {
        let mut out = vec![x.matmul(&y)];
        out.extend((0..extra_full).map(|_| x.matmul(&y)));
        out.extend(partial.as_ref().map(|p| p.matmul(&y)));
        out
    });
}

#[gpu_bench(args = [size(1024), size(4096), size(8192)])]
fn matmul_f32(b: &mut Bencher, n: i64) {
    matmul(b, n, Kind::Float);
}

#[gpu_bench(args = [size(1024), size(2048), size(4096), size(8192)])]
fn matmul_bf16(b: &mut Bencher, n: i64) {
    matmul(b, n, Kind::BFloat16);
}

gpubench_core::main!();
