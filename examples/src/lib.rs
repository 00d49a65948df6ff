//! Models shared by the example benchmarks.
