//! Peak device memory growing with batch size, and an opt-in benchmark that runs
//! out of memory on purpose to show a clean failure record.

use gpubench_core::{gpu_bench, Bencher};
use gpubench_examples::mlp::Mlp;
use tch::nn;
use tch::{Kind, Tensor};

#[gpu_bench(args = [64, 256, 1024])]
fn mlp_forward_batch(b: &mut Bencher, batch: i64) {
    let vs = nn::VarStore::new(b.device());
    let model = Mlp::new(&vs.root(), 512, 1024, 3, 10);
    let x = Tensor::randn([batch, 512], (Kind::Float, b.device()));
    b.iter(|| tch::no_grad(|| model.forward(&x)));
}

/// Asks for far more memory than any device has: run with `--ignored`.
#[gpu_bench(ignore)]
fn out_of_memory(b: &mut Bencher) {
    let device = b.device();
    // 2^40 floats = 4 TiB.
    b.iter(|| Tensor::empty([1 << 40], (Kind::Float, device)).fill_(1.0));
}

gpubench_core::main!();
