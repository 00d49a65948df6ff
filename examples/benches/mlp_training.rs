//! An MLP training step (batch 256): the synced step time next to what naive
//! unsynchronised loops of 20, 100 and 400 steps report, the cold first step, and
//! host dispatch versus device time; and the same step as a capacity benchmark,
//! whose largest batch `cargo gpubench capacity` finds.

use gpubench_core::{gpu_bench, Bencher};
use gpubench_examples::mlp::Mlp;
use tch::nn::{self, OptimizerConfig};
use tch::{Kind, Tensor};

#[gpu_bench]
fn mlp_training_step(b: &mut Bencher) {
    b.naive_loops(&[20, 100, 400]);
    training_step(b, 256);
}

/// The same training step at a batch the capacity search chooses: `cargo gpubench
/// capacity` finds the largest batch that fits; a run measures batch 256.
#[gpu_bench(capacity = "batch", args = [256])]
fn mlp_training_batch(b: &mut Bencher, batch: i64) {
    training_step(b, batch);
}

/// Times one training step of the MLP (forward, loss, backward, SGD update) on a
/// batch of `batch` random inputs.
fn training_step(b: &mut Bencher, batch: i64) {
    let device = b.device();
    let vs = nn::VarStore::new(device);
    let (width, depth) = if device.is_cuda() {
        (4096, 6)
    } else {
        (512, 3)
    };
    let model = Mlp::new(&vs.root(), 1024, width, depth, 10);
    // Plain SGD: its update is the same kernel in libtorch's C++ optimizer and in
    // PyTorch's single-tensor one, so docs/gpu-validation.md can cross-check it.
    let mut opt = nn::Sgd::default().build(&vs, 1e-3).expect("optimizer");
    let x = Tensor::randn([batch, 1024], (Kind::Float, device));
    let y = Tensor::randint(10, [batch], (Kind::Int64, device));
    b.iter(|| {
        let loss = model.forward(&x).cross_entropy_for_logits(&y);
        opt.backward_step(&loss);
        loss
    });
}

gpubench_core::main!();
