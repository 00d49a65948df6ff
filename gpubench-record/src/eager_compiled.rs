//! The record of an eager-versus-compiled comparison: both variants side by side on
//! the same inputs (speed, numerical agreement, per-shape cold cost), as the harness
//! writes it into [`crate::record::ProcessRecord::eager_compiled`].
//!
//! Times are nanoseconds. "Primary" time is device time when the device has a timer
//! (CUDA events), synced wall time otherwise, as in [`crate::measurement::Measurement`].

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::estimate::Estimate;
use crate::measurement::{Sample, StopReason};

/// One benchmark's eager-versus-compiled comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EagerCompiled {
    /// The eager variant (the reference the compiled one is checked against).
    pub eager: VariantInfo,
    /// The compiled variant; the record's `measurement` is its steady state.
    pub compiled: VariantInfo,
    /// Whether device times come from device events (`true`) or are absent.
    pub device_timer: bool,
    /// The requests as served, in stream order: each variant's call synced and timed
    /// on its own, the first request at each shape marked cold.
    pub requests: Vec<RequestTiming>,
    /// Per distinct input shape: first call against steady state, per variant.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shape_costs: Vec<ShapeCost>,
    /// Per distinct input shape: whether the outputs agree, and by how much they differ.
    pub agreement: Vec<ShapeAgreement>,
    /// Interleaved steady-state samples and the speedup; absent in smoke runs and
    /// when the compiled variant could not be run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steady: Option<SteadyState>,
    /// What compiling costs and when it pays off; absent when `steady` is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compile_cost: Option<CompileCost>,
    /// What the comparison found, most severe first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flags: Vec<EagerCompiledFlag>,
}

impl EagerCompiled {
    /// Whether every shape's outputs agree (and the compiled variant ran on all).
    pub fn agrees(&self) -> bool {
        self.compiled.failure.is_none() && self.agreement.iter().all(|a| a.agrees)
    }

    /// Whether `kind` of flag was raised.
    pub fn has_flag(&self, kind: FlagKind) -> bool {
        self.flag(kind).is_some()
    }

    /// The flag of `kind`, when raised.
    pub fn flag(&self, kind: FlagKind) -> Option<&EagerCompiledFlag> {
        self.flags.iter().find(|f| f.kind() == kind)
    }
}

/// The eager-versus-compiled result of a benchmark as its summary (and `--format
/// json`) carries it: what a CI script gates on, without the per-request detail the
/// record keeps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EagerCompiledSummary {
    /// The eager variant's label.
    pub eager: String,
    /// The compiled variant's label, e.g. `traced`, `aoti dynamic`.
    pub compiled: String,
    /// How the compiled variant was made.
    pub compiled_kind: VariantKind,
    /// Why the compiled variant could not be built or run, when it could not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compiled_failure: Option<String>,
    /// Eager time over compiled time in steady state, with its interval (above 1:
    /// compiled is faster); absent in smoke runs and when compiled could not run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speedup: Option<Estimate>,
    /// Eager's steady time per call, ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eager_ns_per_call: Option<f64>,
    /// The compiled variant's steady time per call, ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compiled_ns_per_call: Option<f64>,
    /// Whether the outputs agree at every input shape.
    pub agrees: bool,
    /// Input shapes whose outputs disagree, of `shapes`.
    pub shapes_disagreeing: usize,
    /// Distinct input shapes served.
    pub shapes: usize,
    /// Steady calls after which compiling has paid for itself; absent when it never
    /// does (or was not measured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub break_even_calls: Option<u64>,
    /// What the comparison found, most severe first, with their figures.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flags: Vec<EagerCompiledFlag>,
    /// The same flags in words, as the terminal shows them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flag_words: Vec<String>,
}

impl EagerCompiled {
    /// The result as a benchmark's summary carries it.
    pub fn summary(&self) -> EagerCompiledSummary {
        EagerCompiledSummary {
            eager: self.eager.label.clone(),
            compiled: self.compiled.label.clone(),
            compiled_kind: self.compiled.kind,
            compiled_failure: self.compiled.failure.clone(),
            speedup: self.steady.as_ref().map(|s| s.speedup),
            eager_ns_per_call: self.steady.as_ref().map(|s| s.eager_ns_per_call),
            compiled_ns_per_call: self.steady.as_ref().map(|s| s.compiled_ns_per_call),
            agrees: self.agrees(),
            shapes_disagreeing: self.agreement.iter().filter(|a| !a.agrees).count(),
            shapes: self.agreement.len(),
            break_even_calls: self.compile_cost.as_ref().and_then(|c| c.break_even_calls),
            flags: self.flags.clone(),
            flag_words: self.flags.iter().map(EagerCompiledFlag::describe).collect(),
        }
    }
}

/// What a variant is and how it was made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VariantInfo {
    /// Its name in tables, e.g. `eager`, `traced`, `aoti dynamic`.
    pub label: String,
    /// How it was made.
    pub kind: VariantKind,
    /// The file it was loaded from (TorchScript file, AOTInductor package).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Time to trace or load it, synced, ns; absent for closures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build_ns: Option<f64>,
    /// Metadata the compiled artefact carries (an AOTInductor package's metadata).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: BTreeMap<String, String>,
    /// An AOTInductor package's call spec (input and output tree specs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub call_spec: Vec<String>,
    /// Input shapes the artefact was exported for, one per input (`None`: dynamic
    /// dimension), when it declares them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exported_input_shapes: Option<Vec<Vec<Option<i64>>>>,
    /// Why it could not be built or run at all; the comparison then has no timing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
}

impl VariantInfo {
    /// A variant called `label` of `kind`, with nothing else known yet.
    pub fn new(label: impl Into<String>, kind: VariantKind) -> Self {
        VariantInfo {
            label: label.into(),
            kind,
            source: None,
            build_ns: None,
            metadata: BTreeMap::new(),
            call_spec: Vec::new(),
            exported_input_shapes: None,
            failure: None,
        }
    }
}

/// How a variant was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VariantKind {
    /// The eager Rust closure.
    Eager,
    /// A TorchScript trace of the eager closure with frozen parameters.
    TorchscriptTrace,
    /// A TorchScript file (e.g. saved from Python with `torch.jit.save`).
    TorchscriptFile,
    /// A closure the benchmark labelled as compiled.
    Closure,
    /// An AOTInductor package (`.pt2`).
    AotiPackage,
}

impl VariantKind {
    /// Words for tables.
    pub fn label(self) -> &'static str {
        match self {
            VariantKind::Eager => "eager",
            VariantKind::TorchscriptTrace => "TorchScript trace",
            VariantKind::TorchscriptFile => "TorchScript file",
            VariantKind::Closure => "closure",
            VariantKind::AotiPackage => "AOTInductor package",
        }
    }
}

/// One call timed on its own: `sync; t0; call; sync; t1`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CallTiming {
    /// Synced wall time, ns.
    pub wall_ns: f64,
    /// When the call returned to the host, ns after the start.
    pub host_ns: f64,
    /// Device time from events, ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_ns: Option<f64>,
}

impl CallTiming {
    /// Device time when measured, else synced wall time.
    pub fn primary_ns(&self) -> f64 {
        self.device_ns.unwrap_or(self.wall_ns)
    }
}

/// One request of the stream, as both variants served it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestTiming {
    /// Position in the stream.
    pub index: usize,
    /// The input shape, e.g. `[1, 37, 256] f32`.
    pub shape: String,
    /// Whether this is the first request at its shape (each variant's cold call there).
    pub cold: bool,
    /// The eager call.
    pub eager: CallTiming,
    /// The compiled call; absent when it failed or was not run on this input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compiled: Option<CallTiming>,
}

/// First call against steady state at one input shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShapeCost {
    /// The input shape.
    pub shape: String,
    /// Requests of the stream at this shape.
    pub requests: usize,
    /// Synced single calls per variant behind each `*_warm_ns` (their median).
    pub warm_calls: usize,
    /// Eager's first call at this shape, synced wall time, ns.
    pub eager_cold_ns: f64,
    /// Eager's steady single call at this shape, ns.
    pub eager_warm_ns: f64,
    /// The compiled variant's first call at this shape, ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compiled_cold_ns: Option<f64>,
    /// The compiled variant's steady single call at this shape, ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compiled_warm_ns: Option<f64>,
    /// Whether the compiled variant's first call here was far above its steady state
    /// (and above eager's own first-call cost): it specialised for this shape.
    pub respecialised: bool,
}

impl ShapeCost {
    /// The compiled variant's first call minus its steady call here (never negative).
    pub fn compiled_excess_ns(&self) -> Option<f64> {
        Some((self.compiled_cold_ns? - self.compiled_warm_ns?).max(0.0))
    }

    /// Eager's first call minus its steady call here (never negative).
    pub fn eager_excess_ns(&self) -> f64 {
        (self.eager_cold_ns - self.eager_warm_ns).max(0.0)
    }
}

/// Whether the two variants' outputs agree at one input shape (worst over its
/// requests).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShapeAgreement {
    /// The input shape.
    pub shape: String,
    /// Stream positions of the requests at this shape.
    pub requests: Vec<usize>,
    /// The verdict: same output count, shapes and dtypes, no non-finite values where
    /// eager has finite ones, and every output within tolerance (allclose, or with a
    /// float64 reference no less accurate than eager).
    pub agrees: bool,
    /// The loudest disagreement in words (a failed call, an input the compiled
    /// variant was not exported for, an output count, shape or dtype mismatch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mismatch: Option<String>,
    /// Per output tensor; empty when the compiled variant did not produce outputs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outputs: Vec<OutputAgreement>,
    /// Eager run twice on the same input: largest absolute difference.
    pub eager_repeat_max_abs_diff: f64,
    /// Whether eager's two runs were bitwise identical.
    pub eager_repeat_identical: bool,
    /// Whether eager's two runs agree within tolerance.
    pub eager_repeat_agrees: bool,
}

/// How one output tensor of the compiled variant compares with eager's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutputAgreement {
    /// Position among the outputs.
    pub index: usize,
    /// Eager's output shape.
    pub eager_shape: Vec<i64>,
    /// The compiled variant's output shape.
    pub compiled_shape: Vec<i64>,
    /// Eager's dtype, e.g. `f32`.
    pub eager_dtype: String,
    /// The compiled variant's dtype.
    pub compiled_dtype: String,
    /// Largest `|compiled - eager|` over elements finite in both; absent when the
    /// shapes differ.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_abs_diff: Option<f64>,
    /// Largest `|compiled - eager| / |eager|` over elements finite in both (infinite
    /// where eager is 0 and the outputs differ); absent when the shapes differ.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_rel_diff: Option<f64>,
    /// Relative tolerance used.
    pub rtol: f64,
    /// Absolute tolerance used.
    pub atol: f64,
    /// `|compiled - eager| <= atol + rtol * |eager|` everywhere, with matching
    /// non-finite values.
    pub allclose: bool,
    /// NaN or infinite elements in eager's output.
    pub eager_non_finite: u64,
    /// NaN or infinite elements in the compiled output.
    pub compiled_non_finite: u64,
    /// Elements where one output is non-finite and the other differs from it (NaN
    /// matches NaN).
    pub non_finite_mismatch: u64,
    /// Both outputs against a float64 eager reference, when one was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<ReferenceRmse>,
}

/// Root-mean-square error of each variant against a float64 eager reference, as
/// PyTorch's compiler benchmarks judge accuracy.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ReferenceRmse {
    /// RMSE of eager's output against the reference.
    pub eager_rmse: f64,
    /// RMSE of the compiled output against the reference.
    pub compiled_rmse: f64,
    /// `compiled_rmse / eager_rmse`; absent when eager is exact.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rmse_ratio: Option<f64>,
    /// `compiled_rmse <= 2 * eager_rmse + atol / 10`: compiled is no less accurate
    /// than eager, within PyTorch's margin.
    pub within: bool,
}

/// Interleaved steady-state samples of both variants over the same requests.
///
/// A sample's iteration is one pass over the `requests` (every sample then serves
/// the same mix of shapes): `Sample::iters` counts passes, and per-call figures
/// divide by `requests`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SteadyState {
    /// Passes over the requests per sample (the same for both variants).
    pub passes_per_sample: u64,
    /// Requests in one pass: those where the compiled variant ran and its outputs
    /// agree (all it ran on, when none agree).
    pub requests: usize,
    /// Eager's samples, in time order.
    pub eager: Vec<Sample>,
    /// The compiled variant's samples, paired with eager's by position.
    pub compiled: Vec<Sample>,
    /// `eager / compiled` (above 1: compiled is faster): the median of the paired
    /// ratios with a seeded bootstrap interval.
    pub speedup: Estimate,
    /// Eager's mean primary time per call over all samples, ns.
    pub eager_ns_per_call: f64,
    /// The compiled variant's mean primary time per call over all samples, ns.
    pub compiled_ns_per_call: f64,
    /// Why sampling stopped.
    pub stop_reason: StopReason,
}

/// What compiling costs up front, and when it pays off.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompileCost {
    /// Tracing or loading, ns (0 for a closure).
    pub build_ns: f64,
    /// The compiled variant's first call minus its steady call, at the first shape, ns.
    pub first_call_excess_ns: f64,
    /// The same summed over every later new shape, ns.
    pub new_shape_excess_ns: f64,
    /// `build_ns + first_call_excess_ns + new_shape_excess_ns`.
    pub total_ns: f64,
    /// Eager's minus the compiled variant's mean synced wall time per call in steady
    /// state, ns (negative: compiled is slower).
    pub saving_ns_per_call: f64,
    /// Steady calls after which the compiled variant's saving per call has paid back
    /// `total_ns`: absent when it is not significantly faster (never pays off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub break_even_calls: Option<u64>,
    /// The traffic it is judged against: calls expected over the compiled
    /// artefact's life (default: the requests of the stream).
    pub expected_calls: u64,
}

/// Which flag, without its figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FlagKind {
    /// See [`EagerCompiledFlag::CompiledFailed`].
    CompiledFailed,
    /// See [`EagerCompiledFlag::OutputsDisagree`].
    OutputsDisagree,
    /// See [`EagerCompiledFlag::CompiledSlower`].
    CompiledSlower,
    /// See [`EagerCompiledFlag::RespecialisesPerShape`].
    RespecialisesPerShape,
    /// See [`EagerCompiledFlag::NotWorthCompiling`].
    NotWorthCompiling,
    /// See [`EagerCompiledFlag::NonFiniteOutputs`].
    NonFiniteOutputs,
    /// See [`EagerCompiledFlag::EagerNondeterministic`].
    EagerNondeterministic,
}

/// Something the comparison found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum EagerCompiledFlag {
    /// The compiled variant could not be built, or failed on every request.
    CompiledFailed {
        /// Why, capped.
        message: String,
    },
    /// The outputs differ beyond tolerance (or in shape, dtype, count) at some shapes.
    OutputsDisagree {
        /// Shapes that disagree.
        shapes: usize,
        /// Distinct shapes compared.
        of: usize,
    },
    /// The compiled variant is significantly slower in steady state.
    CompiledSlower {
        /// The speedup's point estimate (below 1).
        speedup: f64,
    },
    /// The first call at each new shape is far above steady state: the compiled
    /// variant specialises (recompiles, re-profiles) per input shape.
    RespecialisesPerShape {
        /// New shapes (after the first) whose first call triggered it.
        shapes: usize,
        /// New shapes in the stream.
        of: usize,
    },
    /// Compiling does not pay off within the expected traffic.
    NotWorthCompiling {
        /// Calls needed to pay off; absent when it never does.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        break_even_calls: Option<u64>,
        /// The traffic judged against.
        expected_calls: u64,
    },
    /// An output holds NaN or infinity.
    NonFiniteOutputs {
        /// In eager's outputs.
        eager: u64,
        /// In the compiled variant's outputs.
        compiled: u64,
    },
    /// Eager run twice on the same input gives results outside tolerance of each
    /// other: agreement cannot be tighter than that.
    EagerNondeterministic {
        /// Shapes where it happened.
        shapes: usize,
    },
}

impl EagerCompiledFlag {
    /// Which flag this is.
    pub fn kind(&self) -> FlagKind {
        match self {
            EagerCompiledFlag::CompiledFailed { .. } => FlagKind::CompiledFailed,
            EagerCompiledFlag::OutputsDisagree { .. } => FlagKind::OutputsDisagree,
            EagerCompiledFlag::CompiledSlower { .. } => FlagKind::CompiledSlower,
            EagerCompiledFlag::RespecialisesPerShape { .. } => FlagKind::RespecialisesPerShape,
            EagerCompiledFlag::NotWorthCompiling { .. } => FlagKind::NotWorthCompiling,
            EagerCompiledFlag::NonFiniteOutputs { .. } => FlagKind::NonFiniteOutputs,
            EagerCompiledFlag::EagerNondeterministic { .. } => FlagKind::EagerNondeterministic,
        }
    }

    /// Short words for tables, e.g. `outputs disagree`.
    pub fn label(&self) -> &'static str {
        match self.kind() {
            FlagKind::CompiledFailed => "compiled failed",
            FlagKind::OutputsDisagree => "outputs disagree",
            FlagKind::CompiledSlower => "compiled slower",
            FlagKind::RespecialisesPerShape => "re-specialises per shape",
            FlagKind::NotWorthCompiling => "not worth compiling at this traffic",
            FlagKind::NonFiniteOutputs => "non-finite outputs",
            FlagKind::EagerNondeterministic => "eager nondeterministic",
        }
    }

    /// Whether it is a problem with the compiled variant (rather than a remark).
    pub fn is_severe(&self) -> bool {
        matches!(
            self.kind(),
            FlagKind::CompiledFailed | FlagKind::OutputsDisagree | FlagKind::CompiledSlower
        )
    }

    /// The label with its figures, e.g. `outputs disagree at 12 of 13 shapes`.
    pub fn describe(&self) -> String {
        match self {
            EagerCompiledFlag::CompiledFailed { message } => format!("compiled failed: {message}"),
            EagerCompiledFlag::OutputsDisagree { shapes, of } => {
                format!("outputs disagree at {shapes} of {of} shapes")
            }
            EagerCompiledFlag::CompiledSlower { speedup } => {
                format!("compiled slower ({speedup:.2}× eager's speed)")
            }
            EagerCompiledFlag::RespecialisesPerShape { shapes, of } => {
                format!("re-specialises per shape ({shapes} of {of} new shapes)")
            }
            EagerCompiledFlag::NotWorthCompiling {
                break_even_calls,
                expected_calls,
            } => match break_even_calls {
                Some(n) => {
                    format!("not worth compiling at {expected_calls} calls (pays off after {n})")
                }
                None => format!("not worth compiling at {expected_calls} calls (never pays off)"),
            },
            EagerCompiledFlag::NonFiniteOutputs { eager, compiled } => {
                format!("non-finite outputs (eager {eager}, compiled {compiled} elements)")
            }
            EagerCompiledFlag::EagerNondeterministic { shapes } => {
                format!("eager nondeterministic at {shapes} shapes")
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests;
