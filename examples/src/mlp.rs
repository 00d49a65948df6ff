//! A plain multi-layer perceptron.

use gpubench_core::{Bencher, Throughput};
use tch::nn::{self, Module, OptimizerConfig};
use tch::{Kind, Tensor};

/// `depth` hidden layers of `width` with ReLU, then a linear head.
#[derive(Debug)]
pub struct Mlp {
    layers: Vec<nn::Linear>,
    head: nn::Linear,
}

impl Mlp {
    /// Builds the layers under `path`.
    pub fn new(path: &nn::Path, input: i64, width: i64, depth: usize, output: i64) -> Self {
        let mut layers = Vec::new();
        let mut dim = input;
        for i in 0..depth {
            layers.push(nn::linear(
                path / format!("l{i}"),
                dim,
                width,
                Default::default(),
            ));
            dim = width;
        }
        let head = nn::linear(path / "head", dim, output, Default::default());
        Mlp { layers, head }
    }

    /// Forward pass.
    pub fn forward(&self, x: &Tensor) -> Tensor {
        let mut h = x.shallow_clone();
        for l in &self.layers {
            h = l.forward(&h).relu();
        }
        self.head.forward(&h)
    }
}

/// Hands `b` one training step of an MLP over `micro_batches` micro-batches,
/// gradients accumulated, then one SGD step: on a GPU, bf16 of width 4096 with two
/// hidden layers and `gpu_rows` rows a micro-batch; on the CPU, f32 of width 64 and
/// 32 rows. It declares the step's FLOPs (forward and backward, 6 per weight and row).
pub fn accumulated_step(b: &mut Bencher, gpu_rows: i64, micro_batches: i64) {
    let device = b.device();
    let mut vs = nn::VarStore::new(device);
    let (width, rows, kind) = if device.is_cuda() {
        (4096, gpu_rows, Kind::BFloat16)
    } else {
        (64, 32, Kind::Float)
    };
    let mlp = Mlp::new(&vs.root(), width, width, 2, 16);
    if kind == Kind::BFloat16 {
        vs.bfloat16();
    }
    let mut opt = nn::Sgd::default().build(&vs, 1e-3).expect("optimizer");
    let x = Tensor::randn([rows, width], (kind, device));
    let y = Tensor::randint(16, [rows], (Kind::Int64, device));
    b.throughput(Throughput::Flops(
        6.0 * (micro_batches * rows) as f64 * (2.0 * (width * width) as f64 + (width * 16) as f64),
    ));
    b.iter(|| {
        opt.zero_grad();
        for _ in 0..micro_batches {
            mlp.forward(&x).cross_entropy_for_logits(&y).backward();
        }
        opt.step();
    });
}
