//! Models shared by the example benchmarks.

pub mod encoder;
pub mod mlp;
