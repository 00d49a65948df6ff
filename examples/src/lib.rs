//! Models shared by the example benchmarks.

pub mod mlp;
