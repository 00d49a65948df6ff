//! The runtime of cargo gpubench: what bench targets depend on.
//!
//! Mark functions with [`gpu_bench`], set `harness = false` on the bench target and
//! write `fn main() { gpubench_core::main() }`:
//!
//! ```no_run
//! use gpubench_core::{gpu_bench, Bencher};
//! use tch::{Kind, Tensor};
//!
//! #[gpu_bench(args = [1024, 4096])]
//! fn matmul(b: &mut Bencher, n: i64) {
//!     let x = Tensor::randn([n, n], (Kind::Float, b.device()));
//!     b.throughput(gpubench_core::Throughput::Flops(2.0 * (n * n * n) as f64));
//!     b.iter(|| x.matmul(&x));
//! }
//!
//! fn main() {
//!     gpubench_core::main()
//! }
//! ```
#![warn(missing_docs)]

pub mod aoti;
mod bencher;
pub mod cli;
#[cfg(feature = "criterion")]
pub mod criterion;
pub mod cuda_loader;
pub mod cuda_shim;
pub mod device;
pub mod eager_compiled;
pub mod engine;
pub mod fingerprint;
pub mod harness;
pub mod host;
pub mod output;
mod paired;
mod quiet_panic;
pub mod registry;
pub mod shapes;
pub mod shim;
pub mod telemetry;

pub use bencher::Bencher;
pub use eager_compiled::{Compiled, EagerVsCompiled};
pub use gpubench_analysis::Throughput;
pub use gpubench_macros::gpu_bench;
pub use harness::{bench_device, main};
pub use shapes::InputShape;

/// Expands to `fn main() { gpubench_core::main() }`.
#[macro_export]
macro_rules! main {
    () => {
        fn main() {
            $crate::main()
        }
    };
}

#[doc(hidden)]
pub mod __private {
    pub use crate::registry::{arg_label, BenchDef, CaseFn};
    pub use crate::Bencher;
    pub use inventory;

    /// What [`crate::export_paired`] expands to calls.
    pub mod paired {
        pub use crate::paired::{free, list, open, ReadyFn, ABI_VERSION};
    }
}

#[cfg(test)]
mod engine_tests;
#[cfg(test)]
mod telemetry_tests;
