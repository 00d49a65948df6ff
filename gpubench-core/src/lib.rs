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
//!
//! What a bench uses:
//!
//! * [`gpu_bench`] marks a benchmark; [`Bencher`] times it (`iter`, `iter_with_setup`,
//!   `iter_inputs`, `eager_compiled`), with a [`Throughput`] and the device
//!   [`bench_device`] picks (also for sizing `args` before a benchmark runs);
//!   [`InputShape`] says when an input of a stream has a new shape.
//! * [`main()`] or [`main!`] is the bench target's `main`.
//! * [`eager_compiled`]: an eager closure against a TorchScript trace, a TorchScript
//!   file, an AOTInductor package or another closure ([`EagerVsCompiled`],
//!   [`Compiled`]).
//! * `criterion` (the `criterion` feature): measurements that make a criterion bench
//!   of GPU work time the work, not the queue.
//! * [`cuda_loader`]: CUDA for a bench whose `main` is not [`main()`].
//!
//! The user guide is in the repository's `docs/guide/`.
//!
//! ## Inside
//!
//! The crate's modules (most of them private), in layers:
//!
//! | layer | module | what it owns |
//! |---|---|---|
//! | 8 | `harness` | the bench executable's `main`: its command line, listing, running each benchmark and writing its record; the C entry points of `ab`'s paired processes |
//! | 7 | `registry` | the benchmarks `#[gpu_bench]` registers, expanded into cases |
//! | 6 | `bencher` | the [`Bencher`] a benchmark receives, which hands the engine what to time |
//! | 6 | `output` | the summary the harness prints |
//! | 5 | `paired` | one side of an `ab` paired process: its samples taken by the driver |
//! | 5 | `eager_compiled` | an eager closure against a compiled variant |
//! | 4 | `engine` | the measurement: cold calls, warm-up, synced samples, kernels, memory |
//! | 3 | `fingerprint` | where a benchmark ran |
//! | 3 | `telemetry` | the GPU's clocks and readings around a benchmark |
//! | 3 | `criterion` | criterion measurements of GPU work |
//! | 2 | `device` | the device the engine measures through (libtorch's, the CPU, a simulated one in tests) |
//! | 1 | `cuda_loader` | CUDA made available without link flags |
//! | 0 | `shim` | the C++ shim's safe wrappers |
//! | 0 | `aoti` | AOTInductor packages |
//! | 0 | `cli` | the bench executable's command line |
//! | 0 | `host` | the host's threads and readings |
//! | 0 | `shapes` | what makes two inputs the same shape |
//! | 0 | `panic_site` | where a benchmark's panic happened |
//! | 0 | `quiet_panic` | panics the engine expects and handles |
//!
//! A module imports only modules of a lower layer; a test in cargo-gpubench reads
//! this table.
#![warn(missing_docs)]

// The bench author's API is what is `pub` here: the items re-exported below, and the
// `criterion`, `eager_compiled` and `cuda_loader` modules. Everything else is private;
// what cargo-gpubench's generated code, the macro and this crate's own benches,
// examples and integration tests need from inside is re-exported by `__private`,
// which is no part of the API. What `cargo doc` lists is held to
// `public-api.txt` (at most 30 items, each with an example) by `scripts/public-api`,
// which `.ci/run` runs.
mod aoti;
mod bencher;
mod cli;
#[cfg(feature = "criterion")]
pub mod criterion;
pub mod cuda_loader;
mod device;
pub mod eager_compiled;
mod engine;
mod fingerprint;
mod harness;
mod host;
mod output;
mod paired;
mod panic_site;
mod quiet_panic;
mod registry;
mod shapes;
mod shim;
mod telemetry;

pub use bencher::Bencher;
pub use eager_compiled::{Compiled, EagerVsCompiled};
/// ```no_run
/// use gpubench_core::{gpu_bench, Bencher};
/// use tch::{Kind, Tensor};
///
/// /// One benchmark, `relu`.
/// #[gpu_bench]
/// fn relu(b: &mut Bencher) {
///     let x = Tensor::randn([1 << 20], (Kind::Float, b.device()));
///     b.iter(|| x.relu());
/// }
///
/// /// One benchmark per argument, named by it: `sum/1024`, `sum/4096`.
/// #[gpu_bench(args = [1024, 4096])]
/// fn sum(b: &mut Bencher, n: i64) {
///     let x = Tensor::randn([n, n], (Kind::Float, b.device()));
///     b.iter(|| x.sum(Kind::Float));
/// }
///
/// /// Another name, and left out unless a run asks for `--ignored`.
/// #[gpu_bench(name = "huge_alloc", ignore)]
/// fn allocates_most_of_the_gpu(b: &mut Bencher) {
///     let device = b.device();
///     b.iter(|| Tensor::empty([1 << 33], (Kind::Uint8, device)));
/// }
///
/// gpubench_core::main!();
/// ```
pub use gpubench_macros::gpu_bench;
/// ```no_run
/// use gpubench_core::{gpu_bench, Bencher, Throughput};
/// use tch::{Kind, Tensor};
///
/// #[gpu_bench(args = [1 << 20, 1 << 24])]
/// fn copy(b: &mut Bencher, n: i64) {
///     let x = Tensor::randn([n], (Kind::Float, b.device()));
///     // Bytes read and written per call: the report shows GB/s.
///     b.throughput(Throughput::Bytes(2.0 * 4.0 * n as f64));
///     b.iter(|| x.copy());
/// }
///
/// gpubench_core::main!();
/// ```
pub use gpubench_record::measurement::Throughput;
pub use harness::{bench_device, main};
pub use shapes::InputShape;

/// Expands to `fn main() { gpubench_core::main() }`: the last line of a bench target.
///
/// ```no_run
/// use gpubench_core::{gpu_bench, Bencher};
///
/// #[gpu_bench]
/// fn arange(b: &mut Bencher) {
///     let device = b.device();
///     b.iter(|| tch::Tensor::arange(1 << 20, (tch::Kind::Float, device)));
/// }
///
/// gpubench_core::main!();
/// ```
#[macro_export]
macro_rules! main {
    () => {
        fn main() {
            $crate::main()
        }
    };
}

/// What the code `#[gpu_bench]` and `export_paired!` expand to calls, and what this
/// crate's own benches, examples and integration tests reach inside for. No part of
/// the API: it changes without notice.
#[doc(hidden)]
pub mod __private {
    pub use crate::registry::{arg_label, BenchDef, CapacityDef, CaseFn};
    pub use crate::Bencher;
    pub use inventory;

    /// What [`crate::export_paired`] expands to calls.
    pub mod paired {
        pub use crate::harness::paired_entry::{free, list, open, ReadyFn, ABI_VERSION};
    }

    /// The devices a [`crate::Bencher`] measures on.
    pub mod device {
        pub use crate::device::{spin_until, DeviceBackend, TorchDevice};
    }

    /// The measurement engine's options.
    pub mod engine {
        pub use crate::engine::EngineOptions;
    }

    /// AOTInductor packages.
    pub mod aoti {
        pub use crate::aoti::{AotiError, AotiPackage};
    }

    /// A comparison run outside a benchmark.
    pub mod eager_compiled {
        pub use crate::eager_compiled::{EagerCompiledError, EagerCompiledOutcome};
    }
}

#[cfg(test)]
mod engine_tests;
#[cfg(test)]
mod telemetry_tests;
