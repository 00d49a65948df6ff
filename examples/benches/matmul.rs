//! Matrix-multiply sweep over sizes and dtypes, with TFLOP/s.

use gpubench_core::{gpu_bench, Bencher, Throughput};
use tch::{Kind, Tensor};

fn matmul(b: &mut Bencher, n: i64, kind: Kind) {
    // Large sizes are for GPUs; on the CPU the sweep stays small enough for CI.
    let n = if b.device().is_cuda() { n } else { n / 16 };
    let x = Tensor::randn([n, n], (kind, b.device()));
    let y = Tensor::randn([n, n], (kind, b.device()));
    b.throughput(Throughput::Flops(2.0 * (n as f64).powi(3)));
    b.iter(|| x.matmul(&y));
}

#[gpu_bench(args = [1024, 4096, 8192])]
fn matmul_f32(b: &mut Bencher, n: i64) {
    matmul(b, n, Kind::Float);
}

#[gpu_bench(args = [1024, 4096, 8192])]
fn matmul_bf16(b: &mut Bencher, n: i64) {
    matmul(b, n, Kind::BFloat16);
}

gpubench_core::main!();
