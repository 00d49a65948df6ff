//! Serving requests to a variant under the engine's synced timing: single calls
//! (the stream pass and each shape's steady state), and samples of both variants
//! interleaved over the same requests.
//!
//! As an engine workload a variant's iteration is one pass over its requests, so
//! every sample serves the same mix of shapes and samples of a varied stream stay
//! comparable with each other.

use std::hint::black_box;
use std::time::{Duration, Instant};

use gpubench_analysis::stats::{median_estimate_with, BootstrapConfig};
use gpubench_record::eager_compiled::CallTiming;
use gpubench_record::measurement::{MeasurementConfig, Sample, StopReason};
use tch::Tensor;

use super::variant::Variant;
use super::Request;
use crate::engine::{Engine, Workload};

/// Resamples behind the stop check run after every pair (reported intervals use the
/// default count): it only needs to be roughly right.
const STOP_CHECK_RESAMPLES: usize = 500;

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
    /// The paired ratios `eager / compiled` of primary time per pass.
    pub ratios: Vec<f64>,
    pub stop_reason: StopReason,
}

/// Samples `eager` and `compiled` in pairs of `passes` passes over the same
/// requests, alternating which goes first (A B, B A, …), until the median paired
/// ratio's interval is within the config's target, or the time or sample bound.
pub(crate) fn interleave(
    engine: &Engine<'_>,
    config: &MeasurementConfig,
    eager: &mut Runner<'_, '_>,
    compiled: &mut Runner<'_, '_>,
    passes: u64,
) -> Interleaved {
    let bound = Duration::from_secs_f64(config.measurement_time_s);
    let min = config.min_samples.max(2) as usize;
    let max = (config.max_samples as usize).max(min);
    let start = Instant::now();
    let mut out = Interleaved {
        eager: Vec::new(),
        compiled: Vec::new(),
        ratios: Vec::new(),
        stop_reason: StopReason::SampleBound,
    };
    let stop_check = BootstrapConfig {
        resamples: STOP_CHECK_RESAMPLES,
        ..BootstrapConfig::default()
    };
    loop {
        let (a, b) = if out.eager.len().is_multiple_of(2) {
            let a = engine.timed_sample(eager, passes);
            (a, engine.timed_sample(compiled, passes))
        } else {
            let b = engine.timed_sample(compiled, passes);
            (engine.timed_sample(eager, passes), b)
        };
        out.ratios.push(a.per_iter_primary() / b.per_iter_primary());
        out.eager.push(a);
        out.compiled.push(b);
        let n = out.ratios.len();
        if n >= min && (n < 50 || n.is_multiple_of(5)) {
            let est = median_estimate_with(&out.ratios, stop_check);
            if est.rel_half_width() <= config.target_rel_ci {
                out.stop_reason = StopReason::Converged;
                return out;
            }
        }
        if n >= min && start.elapsed() >= bound {
            out.stop_reason = StopReason::TimeBound;
            return out;
        }
        if n >= max {
            return out;
        }
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
