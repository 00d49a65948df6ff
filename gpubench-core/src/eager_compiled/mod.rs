//! Eager versus compiled: one model served by its eager closure and by a compiled
//! variant on the same inputs, compared for speed, numerical agreement and
//! per-shape cold cost.
//!
//! ```no_run
//! use gpubench_core::eager_compiled::{EagerVsCompiled, Compiled};
//! use gpubench_core::{gpu_bench, Bencher};
//! use tch::nn::{self, Module};
//! use tch::{Kind, Tensor};
//!
//! #[gpu_bench]
//! fn mlp_eager_vs_traced(b: &mut Bencher) {
//!     let mut vs = nn::VarStore::new(b.device());
//!     let net = nn::seq()
//!         .add(nn::linear(vs.root() / "l1", 256, 512, Default::default()))
//!         .add_fn(|x| x.relu())
//!         .add(nn::linear(vs.root() / "l2", 512, 10, Default::default()));
//!     // Inference: no autograd, and tracing needs parameters that do not require grad.
//!     vs.freeze();
//!     // A stream of requests whose batch size changes.
//!     let stream: Vec<Tensor> = [8, 32, 8, 128, 32]
//!         .iter()
//!         .map(|&n| Tensor::randn([n, 256], (Kind::Float, b.device())))
//!         .collect();
//!     b.eager_compiled(
//!         EagerVsCompiled::new(|xs: &[Tensor]| net.forward(&xs[0]))
//!             .compiled(Compiled::trace())
//!             .inputs(stream),
//!     );
//! }
//! # fn main() {}
//! ```
//!
//! What happens, in order:
//!
//! 1. The compiled variant is built (traced from the eager closure on the first
//!    request, or loaded), synced and timed: its build cost.
//! 2. The stream is served once in order. For each request, eager and then the
//!    compiled variant are each synced and timed on their own (device time too,
//!    when the device has a timer); the first request at each shape is marked cold.
//!    Their outputs are compared (shape and dtype first, then values), eager is run
//!    a second time on the first request of each shape to check it agrees with
//!    itself, and the optional float64 reference runs there too. Eager runs first,
//!    so per-shape costs both variants share (allocator growth, library heuristics)
//!    land on eager and the compiled variant's cold excess is its own.
//! 3. A few more single calls per shape and variant give each shape's steady
//!    state, against which first calls are judged.
//! 4. The compiled variant is measured by the engine like any benchmark (warm-up,
//!    adaptive samples, naive loops): the record's `measurement`, which baselines
//!    track. Its iteration is one pass over the requests where the compiled variant
//!    ran and agreed (all it ran on, when it agreed nowhere), so every sample serves
//!    the same mix of shapes; with fixed inputs that is one call.
//! 5. Both variants are sampled interleaved over those requests, in balanced blocks
//!    (eager, compiled, compiled, eager: `ab`'s scheme, so drift and order hit both
//!    alike and cancel in each block's ratio) until the speedup's interval is narrow
//!    enough or the time bound; the speedup is the median of the blocks' ratios with
//!    a seeded bootstrap interval.
//! 6. Compile cost is the build plus the compiled variant's first-call excess over
//!    its steady state at every shape; it pays off after that cost divided by the
//!    saving per call (synced wall time), if the compiled variant is significantly
//!    faster at all. Flags: compiled failed, outputs disagree, compiled slower,
//!    re-specialises per shape (a first call at a new shape at least 3× its steady
//!    call, 250 µs more, and twice eager's own first-call excess there), not worth compiling at the expected traffic, non-finite outputs, eager
//!    nondeterministic.
//!
//! Everything runs under `no_grad`. Smoke runs (`cargo test --benches`) stop after
//! step 2. The result is a [`gpubench_record::eager_compiled::EagerCompiled`].

mod agreement;
mod analysis;
mod run;
mod serve;
mod summary;
mod variant;

#[cfg(test)]
mod tests;

use std::path::PathBuf;

use gpubench_record::eager_compiled::EagerCompiled;
use gpubench_record::measurement::{Measurement, MeasurementConfig};
use tch::{Kind, Tensor};
use thiserror::Error;

use crate::device::DeviceBackend;
use crate::engine::EngineOptions;

pub(crate) use summary::summary;

/// A model call: the request's input tensors in, output tensors out.
pub(crate) type ModelFn<'a> = Box<dyn FnMut(&[Tensor]) -> Vec<Tensor> + 'a>;

/// What a model closure may return: one tensor or several (a `Vec`, a pair or a
/// triple of tensors), compared output by output.
///
/// ```no_run
/// use gpubench_core::eager_compiled::{Compiled, EagerVsCompiled};
/// use tch::Tensor;
///
/// // Two outputs: both are compared between the variants.
/// let split = EagerVsCompiled::new(|xs: &[Tensor]| (xs[0].relu(), xs[0].sigmoid()))
///     .compiled(Compiled::trace())
///     .input(Tensor::ones([4, 8], (tch::Kind::Float, tch::Device::Cpu)));
/// # drop(split);
/// ```
pub trait ModelOutput {
    /// The output tensors in order.
    fn into_tensors(self) -> Vec<Tensor>;
}

impl ModelOutput for Tensor {
    fn into_tensors(self) -> Vec<Tensor> {
        vec![self]
    }
}

impl ModelOutput for Vec<Tensor> {
    fn into_tensors(self) -> Vec<Tensor> {
        self
    }
}

impl ModelOutput for (Tensor, Tensor) {
    fn into_tensors(self) -> Vec<Tensor> {
        vec![self.0, self.1]
    }
}

impl ModelOutput for (Tensor, Tensor, Tensor) {
    fn into_tensors(self) -> Vec<Tensor> {
        vec![self.0, self.1, self.2]
    }
}

fn boxed<'a, F, O>(mut f: F) -> ModelFn<'a>
where
    F: FnMut(&[Tensor]) -> O + 'a,
    O: ModelOutput,
{
    Box::new(move |xs: &[Tensor]| f(xs).into_tensors())
}

/// One request: the input tensors of one model call. A tensor, a `Vec` or a pair of
/// tensors converts into one.
///
/// ```
/// use gpubench_core::eager_compiled::Request;
/// use tch::{Device, Kind, Tensor};
///
/// let tokens = Tensor::zeros([1, 37, 256], (Kind::Float, Device::Cpu));
/// let mask = Tensor::ones([1, 37], (Kind::Bool, Device::Cpu));
/// let one = Request::from(tokens.shallow_clone());
/// assert_eq!(one.shape_label(), "[1, 37, 256] f32");
/// let two = Request::from((tokens, mask));
/// assert_eq!(two.tensors().len(), 2);
/// assert_eq!(two.shape_label(), "([1, 37, 256] f32, [1, 37] bool)");
/// ```
#[derive(Debug)]
pub struct Request {
    tensors: Vec<Tensor>,
}

impl Request {
    /// A request of several input tensors.
    pub fn new(tensors: Vec<Tensor>) -> Self {
        Request { tensors }
    }

    /// The input tensors.
    pub fn tensors(&self) -> &[Tensor] {
        &self.tensors
    }

    /// The shapes and dtypes, e.g. `[1, 37, 256] f32`; several inputs in parentheses.
    pub fn shape_label(&self) -> String {
        let parts: Vec<String> = self
            .tensors
            .iter()
            .map(|t| format!("{:?} {}", t.size(), kind_label(t.kind())))
            .collect();
        if parts.len() == 1 {
            parts.into_iter().next().unwrap_or_default()
        } else {
            format!("({})", parts.join(", "))
        }
    }
}

impl From<Tensor> for Request {
    fn from(t: Tensor) -> Self {
        Request { tensors: vec![t] }
    }
}

impl From<&Tensor> for Request {
    fn from(t: &Tensor) -> Self {
        Request {
            tensors: vec![t.shallow_clone()],
        }
    }
}

impl From<Vec<Tensor>> for Request {
    fn from(tensors: Vec<Tensor>) -> Self {
        Request { tensors }
    }
}

impl From<(Tensor, Tensor)> for Request {
    fn from((a, b): (Tensor, Tensor)) -> Self {
        Request {
            tensors: vec![a, b],
        }
    }
}

/// Agreement tolerance: `|compiled - eager| <= atol + rtol * |eager|`. The defaults
/// follow eager's dtype; [`EagerVsCompiled::tolerance`] sets others.
///
/// ```
/// use gpubench_core::eager_compiled::Tolerance;
///
/// let bf16 = Tolerance::for_kind(tch::Kind::BFloat16);
/// assert_eq!((bf16.rtol, bf16.atol), (1.6e-2, 1e-5));
/// assert_eq!(Tolerance::for_kind(tch::Kind::Int64), Tolerance { rtol: 0.0, atol: 0.0 });
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tolerance {
    /// Relative tolerance.
    pub rtol: f64,
    /// Absolute tolerance.
    pub atol: f64,
}

impl Tolerance {
    /// `torch.testing.assert_close`'s defaults for eager's dtype: f16 1e-3/1e-5,
    /// bf16 1.6e-2/1e-5, f32 1.3e-6/1e-5, f64 1e-7/1e-7 (complex as their parts),
    /// exact for integers and booleans.
    pub fn for_kind(kind: Kind) -> Self {
        let (rtol, atol) = match kind {
            Kind::Half | Kind::ComplexHalf => (1e-3, 1e-5),
            Kind::BFloat16 => (1.6e-2, 1e-5),
            Kind::Float | Kind::ComplexFloat => (1.3e-6, 1e-5),
            Kind::Double | Kind::ComplexDouble => (1e-7, 1e-7),
            _ => (0.0, 0.0),
        };
        Tolerance { rtol, atol }
    }
}

/// A short dtype name: `f32`, `bf16`, `i64`, `bool`, …
pub(crate) fn kind_label(kind: Kind) -> &'static str {
    match kind {
        Kind::Uint8 => "u8",
        Kind::Int8 => "i8",
        Kind::Int16 => "i16",
        Kind::Int => "i32",
        Kind::Int64 => "i64",
        Kind::Half => "f16",
        Kind::Float => "f32",
        Kind::Double => "f64",
        Kind::ComplexHalf => "c32",
        Kind::ComplexFloat => "c64",
        Kind::ComplexDouble => "c128",
        Kind::Bool => "bool",
        Kind::BFloat16 => "bf16",
        _ => "other",
    }
}

/// The compiled side of a [`EagerVsCompiled`]: a trace of the eager closure, a
/// TorchScript file, an AOTInductor package, or any closure.
///
/// ```no_run
/// use gpubench_core::eager_compiled::Compiled;
/// use tch::Tensor;
///
/// let traced = Compiled::trace();
/// let scripted = Compiled::load("model.pt").label("scripted");
/// let aoti = Compiled::aoti("examples/packages/encoder-dynamic-cuda.pt2");
/// let hand_fused = Compiled::closure("fused", |xs: &[Tensor]| xs[0].gelu("tanh"));
/// # drop((traced, scripted, aoti, hand_fused));
/// ```
pub struct Compiled<'a> {
    label: Option<String>,
    source: CompiledSource<'a>,
}

enum CompiledSource<'a> {
    Trace,
    TorchScript(PathBuf),
    Closure(ModelFn<'a>),
    Aoti(PathBuf),
}

impl<'a> Compiled<'a> {
    /// A TorchScript trace of the comparison's eager closure on the first request
    /// (`tch::CModule::create_by_tracing`), labelled `traced`.
    ///
    /// Freeze the model's `VarStore` first (`vs.freeze()`): a trace cannot capture
    /// parameters that require grad. Sizes the closure reads on the Rust side
    /// (`x.size()`) become constants of the trace; write shape-agnostic code
    /// (`view([b, -1, h, d])`) for a stream whose shapes vary, or the comparison
    /// will show where the trace fails or disagrees.
    pub fn trace() -> Self {
        Compiled {
            label: None,
            source: CompiledSource::Trace,
        }
    }

    /// A TorchScript file (e.g. `torch.jit.save` of a traced or scripted module in
    /// Python), loaded onto the benchmark's device; labelled by its file name.
    pub fn load(path: impl Into<PathBuf>) -> Self {
        Compiled {
            label: None,
            source: CompiledSource::TorchScript(path.into()),
        }
    }

    /// An AOTInductor package (`.pt2`) compiled for the benchmark's device type;
    /// labelled by its file name. Inputs whose shape differs from the shapes the
    /// package declares it was exported for are named in the agreement table (made
    /// with `examples/python/export_aoti.py`, see the guide's eager versus compiled).
    pub fn aoti(path: impl Into<PathBuf>) -> Self {
        Compiled {
            label: None,
            source: CompiledSource::Aoti(path.into()),
        }
    }

    /// Any closure the benchmark labels as the compiled variant.
    pub fn closure<F, O>(label: &str, f: F) -> Self
    where
        F: FnMut(&[Tensor]) -> O + 'a,
        O: ModelOutput,
    {
        Compiled {
            label: Some(label.to_string()),
            source: CompiledSource::Closure(boxed(f)),
        }
    }

    /// Renames the variant in tables.
    pub fn label(mut self, label: &str) -> Self {
        self.label = Some(label.to_string());
        self
    }
}

/// An eager-versus-compiled comparison, built up and handed to
/// [`crate::Bencher::eager_compiled`].
///
/// ```no_run
/// use gpubench_core::{gpu_bench, Bencher, Compiled, EagerVsCompiled};
/// use tch::{Kind, Tensor};
///
/// #[gpu_bench]
/// fn gelu_traced(b: &mut Bencher) {
///     let device = b.device();
///     let stream: Vec<Tensor> = [16, 64, 16, 256]
///         .iter()
///         .map(|&n| Tensor::randn([n, 1024], (Kind::Float, device)))
///         .collect();
///     b.eager_compiled(
///         EagerVsCompiled::new(|xs: &[Tensor]| xs[0].gelu("none"))
///             .compiled(Compiled::trace())
///             .reference_f64(|xs: &[Tensor]| xs[0].to_kind(Kind::Double).gelu("none"))
///             .tolerance(1e-5, 1e-6)
///             .expected_calls(10_000)
///             .inputs(stream),
///     );
/// }
///
/// gpubench_core::main!();
/// ```
pub struct EagerVsCompiled<'a> {
    eager: ModelFn<'a>,
    eager_label: String,
    compiled: Option<Compiled<'a>>,
    requests: Vec<Request>,
    reference: Option<ModelFn<'a>>,
    tolerance: Option<Tolerance>,
    expected_calls: Option<u64>,
    warm_calls: usize,
}

/// Synced single calls per shape and variant that give its steady state.
const DEFAULT_WARM_CALLS: usize = 5;

impl<'a> EagerVsCompiled<'a> {
    /// A comparison whose eager variant is `eager`: the request's input tensors in,
    /// a tensor (or several) out.
    pub fn new<F, O>(eager: F) -> Self
    where
        F: FnMut(&[Tensor]) -> O + 'a,
        O: ModelOutput,
    {
        EagerVsCompiled {
            eager: boxed(eager),
            eager_label: "eager".into(),
            compiled: None,
            requests: Vec::new(),
            reference: None,
            tolerance: None,
            expected_calls: None,
            warm_calls: DEFAULT_WARM_CALLS,
        }
    }

    /// Renames the eager variant in tables (default `eager`).
    pub fn label(mut self, label: &str) -> Self {
        self.eager_label = label.to_string();
        self
    }

    /// The compiled variant to compare with eager.
    pub fn compiled(mut self, compiled: Compiled<'a>) -> Self {
        self.compiled = Some(compiled);
        self
    }

    /// Fixed inputs: every call gets this request.
    pub fn input(mut self, request: impl Into<Request>) -> Self {
        self.requests = vec![request.into()];
        self
    }

    /// A stream of requests served in order, e.g. token sequences whose length
    /// changes per request.
    pub fn inputs<I>(mut self, stream: I) -> Self
    where
        I: IntoIterator,
        I::Item: Into<Request>,
    {
        self.requests = stream.into_iter().map(Into::into).collect();
        self
    }

    /// A float64 version of the eager model: it gets each shape's first request with
    /// floating-point inputs converted to float64, and both variants' outputs are
    /// judged by their RMSE against it (as PyTorch's compiler benchmarks do). A
    /// compiled output that fails allclose still agrees when it is no less accurate
    /// than eager: RMSE at most twice eager's, plus `atol / 10`.
    pub fn reference_f64<F, O>(mut self, reference: F) -> Self
    where
        F: FnMut(&[Tensor]) -> O + 'a,
        O: ModelOutput,
    {
        self.reference = Some(boxed(reference));
        self
    }

    /// Overrides the dtype-aware default tolerances ([`Tolerance::for_kind`]).
    pub fn tolerance(mut self, rtol: f64, atol: f64) -> Self {
        self.tolerance = Some(Tolerance { rtol, atol });
        self
    }

    /// Calls the compiled artefact is expected to serve over its life, against which
    /// its compile cost is judged (default: the requests of the stream).
    pub fn expected_calls(mut self, calls: u64) -> Self {
        self.expected_calls = Some(calls);
        self
    }

    /// Synced single calls per shape and variant that give each shape's steady
    /// state (default 5; at least 1).
    pub fn warm_calls(mut self, calls: usize) -> Self {
        self.warm_calls = calls.max(1);
        self
    }

    /// Runs the comparison on `device`. [`crate::Bencher::eager_compiled`] calls this; call
    /// it directly to compare outside a benchmark.
    #[doc(hidden)]
    pub fn run(
        self,
        device: &dyn DeviceBackend,
        config: &MeasurementConfig,
        options: &EngineOptions,
    ) -> Result<EagerCompiledOutcome, EagerCompiledError> {
        run::run(self, device, config, options)
    }
}

/// What [`EagerVsCompiled::run`] produced.
#[doc(hidden)]
#[derive(Debug, Clone)]
pub struct EagerCompiledOutcome {
    /// The side-by-side result.
    pub record: EagerCompiled,
    /// The compiled variant's steady-state measurement; absent when it could not be
    /// built or failed on every request.
    pub measurement: Option<Measurement>,
}

impl EagerCompiledOutcome {
    /// Why the compiled variant could not be measured, when it could not.
    pub fn failure(&self) -> Option<String> {
        if self.measurement.is_some() {
            return None;
        }
        let cause = self
            .record
            .compiled
            .failure
            .as_deref()
            .unwrap_or("nothing was measured");
        Some(format!(
            "failed to compare {} with {}: {cause}",
            self.record.eager.label, self.record.compiled.label
        ))
    }
}

/// A comparison that cannot start.
#[doc(hidden)]
#[derive(Debug, Error)]
pub enum EagerCompiledError {
    /// No `.compiled(..)` was given.
    #[error("failed to start the comparison: no compiled variant (add .compiled(Compiled::trace()) or another)")]
    NoCompiled,
    /// No `.input(..)` or `.inputs(..)` was given, or the stream was empty.
    #[error("failed to start the comparison: no inputs (add .input(x) or .inputs(stream))")]
    NoInputs,
    /// A request without tensors.
    #[error("failed to start the comparison: request {index} has no input tensors")]
    EmptyRequest {
        /// Its position in the stream.
        index: usize,
    },
}
