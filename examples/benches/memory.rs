//! Peak device memory growing with batch size, and an opt-in benchmark that runs
//! out of memory on purpose to show a clean failure record.

use gpubench_core::{gpu_bench, Bencher};
use gpubench_examples::mlp::Mlp;
use tch::nn;
use tch::{Kind, Tensor};

/// The batch on a GPU, a sixteenth of it on the CPU: what a benchmark of the sweep
/// runs, and so the argument its id names (`mlp_forward_batch/64` on the CPU).
fn batch_for_device(on_gpu: i64) -> i64 {
    if gpubench_core::bench_device().is_cuda() {
        on_gpu
    } else {
        on_gpu / 16
    }
}

/// Activations grow with the batch (width 4096 on a GPU: 16 MiB per 1024 rows and
/// layer; 256 on the CPU), the weights stay; the peak shows both.
#[gpu_bench(args = [
    batch_for_device(256),
    batch_for_device(1024),
    batch_for_device(4096),
    batch_for_device(16384)
])]
fn mlp_forward_batch(b: &mut Bencher, batch: i64) {
    let device = b.device();
    let width = if device.is_cuda() { 4096 } else { 256 };
    let vs = nn::VarStore::new(device);
    let model = Mlp::new(&vs.root(), width, width, 4, 10);
    let x = Tensor::randn([batch, width], (Kind::Float, device));
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
