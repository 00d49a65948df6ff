//! A small pre-norm transformer encoder (self-attention and MLP blocks) built from
//! tch's nn, written so it traces and exports for any sequence length.
//!
//! `examples/python/export_aoti.py` defines the same model in PyTorch with the same
//! parameter names (`layers.0.attn.qkv.weight`, …), so weights move between the two
//! as safetensors. Keep the two in step.

use tch::nn::{self, Module};
use tch::{Device, Tensor};

/// Sizes of the encoder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EncoderConfig {
    /// Embedding width.
    pub d_model: i64,
    /// Attention heads (`d_model` must be a multiple).
    pub heads: i64,
    /// Encoder blocks.
    pub layers: usize,
    /// Hidden width of each block's MLP.
    pub ffn: i64,
}

impl EncoderConfig {
    /// 256 wide, 4 heads, 2 blocks on a GPU; 64 wide on the CPU so the example stays
    /// quick there. `export_aoti.py` uses the same two configurations.
    pub fn for_device(device: Device) -> Self {
        if device.is_cuda() {
            EncoderConfig {
                d_model: 256,
                heads: 4,
                layers: 2,
                ffn: 1024,
            }
        } else {
            EncoderConfig {
                d_model: 64,
                heads: 4,
                layers: 2,
                ffn: 256,
            }
        }
    }
}

#[derive(Debug)]
struct Attention {
    qkv: nn::Linear,
    out: nn::Linear,
    heads: i64,
}

impl Attention {
    fn new(path: &nn::Path, d_model: i64, heads: i64) -> Self {
        assert!(
            d_model % heads == 0,
            "d_model {d_model} is not a multiple of {heads} heads"
        );
        Attention {
            qkv: nn::linear(path / "qkv", d_model, 3 * d_model, Default::default()),
            out: nn::linear(path / "out", d_model, d_model, Default::default()),
            heads,
        }
    }

    fn forward(&self, x: &Tensor) -> Tensor {
        let (batch, _, d_model) = x.size3().expect("the encoder takes [batch, seq, d_model]");
        let head_dim = d_model / self.heads;
        // `-1` for the sequence length: a size read here would be a constant of the
        // trace, and the traced model would only serve that length.
        let qkv = self
            .qkv
            .forward(x)
            .view([batch, -1, 3, self.heads, head_dim])
            .permute([2, 0, 3, 1, 4]);
        let (q, k, v) = (qkv.get(0), qkv.get(1), qkv.get(2));
        let attended = Tensor::scaled_dot_product_attention(
            &q,
            &k,
            &v,
            None::<Tensor>,
            0.0,
            false,
            None,
            false,
        );
        self.out
            .forward(&attended.transpose(1, 2).reshape([batch, -1, d_model]))
    }
}

#[derive(Debug)]
struct Block {
    ln1: nn::LayerNorm,
    attn: Attention,
    ln2: nn::LayerNorm,
    fc1: nn::Linear,
    fc2: nn::Linear,
}

impl Block {
    fn new(path: &nn::Path, cfg: EncoderConfig) -> Self {
        Block {
            ln1: nn::layer_norm(path / "ln1", vec![cfg.d_model], Default::default()),
            attn: Attention::new(&(path / "attn"), cfg.d_model, cfg.heads),
            ln2: nn::layer_norm(path / "ln2", vec![cfg.d_model], Default::default()),
            fc1: nn::linear(path / "fc1", cfg.d_model, cfg.ffn, Default::default()),
            fc2: nn::linear(path / "fc2", cfg.ffn, cfg.d_model, Default::default()),
        }
    }

    fn forward(&self, x: &Tensor) -> Tensor {
        let h = x + self.attn.forward(&self.ln1.forward(x));
        let mlp = self
            .fc2
            .forward(&self.fc1.forward(&self.ln2.forward(&h)).gelu("none"));
        h + mlp
    }
}

/// The encoder: `layers` blocks and a final layer norm, `[batch, seq, d_model]` in
/// and out.
#[derive(Debug)]
pub struct Encoder {
    blocks: Vec<Block>,
    norm: nn::LayerNorm,
    config: EncoderConfig,
}

impl Encoder {
    /// Builds the parameters under `path` (names as in `export_aoti.py`).
    pub fn new(path: &nn::Path, config: EncoderConfig) -> Self {
        let layers = path / "layers";
        let blocks = (0..config.layers)
            .map(|i| Block::new(&(&layers / i), config))
            .collect();
        Encoder {
            blocks,
            norm: nn::layer_norm(path / "norm", vec![config.d_model], Default::default()),
            config,
        }
    }

    /// The sizes it was built with.
    pub fn config(&self) -> EncoderConfig {
        self.config
    }

    /// Forward pass.
    pub fn forward(&self, x: &Tensor) -> Tensor {
        let mut h = x.shallow_clone();
        for block in &self.blocks {
            h = block.forward(&h);
        }
        self.norm.forward(&h)
    }
}

/// One request per sequence length: `[1, len, d_model]` float inputs on `device`
/// (token embeddings from upstream), seeded so runs see the same data.
pub fn request_stream(lengths: &[i64], d_model: i64, device: Device) -> Vec<Tensor> {
    tch::manual_seed(42);
    lengths
        .iter()
        .map(|&len| Tensor::randn([1, len, d_model], (tch::Kind::Float, device)))
        .collect()
}
