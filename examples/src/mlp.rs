//! A plain multi-layer perceptron.

use tch::nn::{self, Module};
use tch::Tensor;

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
