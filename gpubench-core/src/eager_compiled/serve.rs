//! Serving requests to a variant under the engine's synced timing: single calls
//! (the stream pass and each shape's steady state), and samples of both variants
//! interleaved over the same requests.
//!
//! As an engine workload a variant's iteration is one pass over its requests, so
//! every sample serves the same mix of shapes and samples of a varied stream stay
//! comparable with each other.

use std::hint::black_box;
use std::time::Instant;

use gpubench_analysis::sampling::{alternate, PerCall, Side, StoppingRule};
use gpubench_record::eager_compiled::CallTiming;
use gpubench_record::measurement::{MeasurementConfig, Sample, StopReason};
use tch::Tensor;

use super::variant::Variant;
use super::Request;
use crate::engine::{Engine, Workload};

/// A variant as an engine workload: an iteration is one pass over a subset of the
/// requests.
pub(crate) struct Runner<'v, 'a> {
    label: String,
    variant: &'v mut (dyn Variant + 'a),
    requests: &'v [Request],
    /// Indices into `requests` that one pass serves, in order.
    order: Vec<usize>,
    last: Option<Vec<Tensor>>,
    /// Outputs of the last run, kept past the closing sync when `keep` is set.
    kept: Option<Vec<Tensor>>,
    keep: bool,
    error: Option<String>,
}

impl<'v, 'a> Runner<'v, 'a> {
    pub(crate) fn new(
        label: &str,
        variant: &'v mut (dyn Variant + 'a),
        requests: &'v [Request],
    ) -> Self {
        Runner {
            label: label.to_string(),
            variant,
            requests,
            order: (0..requests.len()).collect(),
            last: None,
            kept: None,
            keep: false,
            error: None,
        }
    }

    /// Makes one pass serve `order` (indices into the requests).
    pub(crate) fn pass_over(&mut self, order: Vec<usize>) {
        assert!(!order.is_empty(), "a pass needs at least one request");
        self.order = order;
    }

    /// The variant itself, for untimed calls.
    pub(crate) fn variant(&mut self) -> &mut (dyn Variant + 'a) {
        self.variant
    }

    /// One call on `request`, synced and timed on its own. Returns its timing and
    /// its outputs, or the variant's error.
    pub(crate) fn timed_call(
        &mut self,
        engine: &Engine<'_>,
        request: usize,
    ) -> (CallTiming, Result<Vec<Tensor>, String>) {
        let order = std::mem::replace(&mut self.order, vec![request]);
        self.keep = true;
        self.error = None;
        let sample = engine.timed_sample(self, 1);
        self.keep = false;
        self.order = order;
        let timing = CallTiming {
            wall_ns: sample.wall_ns,
            host_ns: sample.host_ns,
            device_ns: sample.device_ns,
        };
        let outputs = match self.error.take() {
            Some(e) => Err(e),
            None => Ok(self.kept.take().unwrap_or_default()),
        };
        (timing, outputs)
    }
}

impl Workload for Runner<'_, '_> {
    fn run(&mut self, iters: u64) -> Instant {
        for _ in 0..iters {
            for &index in &self.order {
                match self.variant.call(self.requests[index].tensors()) {
                    Ok(out) => self.last = Some(black_box(out)),
                    // A single timed call reports its error; in a sample, a variant
                    // that failed on a request it had served before is a failed
                    // benchmark.
                    Err(e) if self.keep => {
                        self.error = Some(e);
                        return Instant::now();
                    }
                    Err(e) => panic!(
                        "failed to run {} on request {index} ({}): {e}",
                        self.label,
                        self.requests[index].shape_label()
                    ),
                }
            }
        }
        Instant::now()
    }

    fn release(&mut self) {
        if self.keep {
            self.kept = self.last.take();
        } else {
            self.last = None;
        }
    }

    /// Cold calls are timed by the stream pass, before any steady-state work.
    fn cold_labels(&self) -> Vec<String> {
        Vec::new()
    }
}

/// Interleaved steady-state samples.
pub(crate) struct Interleaved {
    pub eager: Vec<Sample>,
    pub compiled: Vec<Sample>,
    /// Each block's ratio `eager / compiled` of mean primary time per pass.
    pub ratios: Vec<f64>,
    pub stop_reason: StopReason,
}

/// Samples `eager` and `compiled` in balanced blocks (eager, compiled, compiled,
/// eager: [`gpubench_analysis::sampling`], the scheme `ab` pairs base and head with)
/// of `passes` passes over the same requests, until the stopping rule ends it on the
/// blocks' ratios.
pub(crate) fn interleave(
    engine: &Engine<'_>,
    config: &MeasurementConfig,
    eager: &mut Runner<'_, '_>,
    compiled: &mut Runner<'_, '_>,
    passes: u64,
) -> Interleaved {
    let mut eager_samples = Vec::new();
    let mut compiled_samples = Vec::new();
    let alternated = alternate(&StoppingRule::of(config), Side::First, |side| {
        let (runner, samples): (&mut dyn Workload, &mut Vec<Sample>) = match side {
            Side::First => (&mut *eager, &mut eager_samples),
            Side::Second => (&mut *compiled, &mut compiled_samples),
        };
        let sample = engine.timed_sample(runner, passes);
        let per_call = PerCall {
            device_ns: sample.per_iter_device(),
            wall_ns: sample.per_iter_wall(),
        };
        samples.push(sample);
        Ok::<_, std::convert::Infallible>(per_call)
    });
    let Ok(alternated) = alternated;
    Interleaved {
        eager: eager_samples,
        compiled: compiled_samples,
        ratios: alternated.ratios,
        stop_reason: alternated.stopped,
    }
}

/// Mean primary time per pass over all samples.
pub(crate) fn mean_per_pass(samples: &[Sample]) -> f64 {
    let iters: u64 = samples.iter().map(|s| s.iters).sum();
    let total: f64 = samples
        .iter()
        .map(|s| s.per_iter_primary() * s.iters as f64)
        .sum();
    total / iters.max(1) as f64
}

/// Mean synced wall time per pass over all samples.
pub(crate) fn mean_wall_per_pass(samples: &[Sample]) -> f64 {
    let iters: u64 = samples.iter().map(|s| s.iters).sum();
    let total: f64 = samples.iter().map(|s| s.wall_ns).sum();
    total / iters.max(1) as f64
}
