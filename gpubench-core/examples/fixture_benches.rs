//! A bench target used by the harness's own tests: benchmarks that pass, panic,
//! are ignored, and are parameterised.

use gpubench_core::{gpu_bench, Bencher};
use tch::{Kind, Tensor};

#[gpu_bench]
fn adds(b: &mut Bencher) {
    let x = Tensor::ones([64], (Kind::Float, b.device()));
    b.iter(|| &x + 1.0);
}

#[gpu_bench]
fn panics(b: &mut Bencher) {
    b.iter(|| -> Tensor { panic!("deliberate failure inside the routine") });
}

#[gpu_bench(args = [8, 64, 512])]
fn sized(b: &mut Bencher, n: i64) {
    let x = Tensor::ones([n], (Kind::Float, b.device()));
    b.iter(|| x.sum(Kind::Float));
}

#[gpu_bench(name = "renamed")]
fn original_name(b: &mut Bencher) {
    b.iter(|| 1 + 1);
}

#[gpu_bench(ignore)]
fn slow_ignored(b: &mut Bencher) {
    b.iter(|| 2 + 2);
}

#[gpu_bench]
fn torch_error(b: &mut Bencher) {
    let x = Tensor::ones([3], (Kind::Float, b.device()));
    let y = Tensor::ones([4], (Kind::Float, b.device()));
    b.iter(|| &x + &y);
}

gpubench_core::main!();
