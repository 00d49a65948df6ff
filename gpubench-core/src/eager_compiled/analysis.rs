//! From timings and agreement rows to verdicts: the speedup, what compiling costs
//! and when it pays off, which shapes made the compiled variant re-specialise, and
//! the flags.

use gpubench_analysis::stats::median_estimate;
use gpubench_record::eager_compiled::{
    CompileCost, EagerCompiled, EagerCompiledFlag, ShapeCost, SteadyState,
};
use gpubench_record::estimate::Estimate;

/// A compiled first call at a new shape counts as re-specialising when it is at
/// least this many times its steady call at that shape…
pub const RESPECIALISE_RATIO: f64 = 3.0;
/// …exceeds it by at least this much (ns), so timer jitter on fast calls never
/// counts…
pub const RESPECIALISE_MIN_EXCESS_NS: f64 = 250_000.0;
/// …and exceeds it by at least this multiple of eager's own first-call excess there
/// (costs both variants pay per shape are not the compiled variant's doing).
pub const RESPECIALISE_VS_EAGER: f64 = 2.0;
/// The compiled variant is flagged slower when the speedup's whole interval is below
/// 1 and its point estimate below this.
pub const SLOWER_BELOW: f64 = 0.97;

/// `eager / compiled`: the median of the paired per-call ratios, with a seeded
/// percentile-bootstrap interval.
pub(crate) fn speedup(ratios: &[f64]) -> Estimate {
    median_estimate(ratios)
}

/// Whether the compiled variant's first call at a (new) shape was far above its
/// steady state there, and above what eager paid at its own first call.
pub(crate) fn respecialised(cost: &ShapeCost) -> bool {
    let (Some(cold), Some(warm), Some(excess)) = (
        cost.compiled_cold_ns,
        cost.compiled_warm_ns,
        cost.compiled_excess_ns(),
    ) else {
        return false;
    };
    cold >= RESPECIALISE_RATIO * warm
        && excess >= RESPECIALISE_MIN_EXCESS_NS
        && excess >= RESPECIALISE_VS_EAGER * cost.eager_excess_ns()
}

/// The flag, when new shapes re-specialised: at least two of them, or the only one
/// (a single slow call among many is more likely noise than a pattern).
pub(crate) fn respecialise_flag(costs: &[ShapeCost]) -> Option<EagerCompiledFlag> {
    let new_shapes: Vec<&ShapeCost> = costs
        .iter()
        .skip(1)
        .filter(|c| c.compiled_cold_ns.is_some())
        .collect();
    let of = new_shapes.len();
    let shapes = new_shapes.iter().filter(|c| c.respecialised).count();
    (shapes >= 2 || (shapes >= 1 && shapes == of))
        .then_some(EagerCompiledFlag::RespecialisesPerShape { shapes, of })
}

/// What compiling cost up front (build plus the compiled variant's first-call
/// excess at every shape) and the steady calls it takes to pay that back, judged on
/// synced wall time. Eager's own first-call costs are not credited: the figure never
/// understates what compiling costs.
pub(crate) fn compile_cost(
    build_ns: Option<f64>,
    costs: &[ShapeCost],
    steady: &SteadyState,
    saving_ns_per_call: f64,
    expected_calls: u64,
) -> CompileCost {
    let build_ns = build_ns.unwrap_or(0.0);
    let first_call_excess_ns = costs
        .first()
        .and_then(ShapeCost::compiled_excess_ns)
        .unwrap_or(0.0);
    let new_shape_excess_ns: f64 = costs
        .iter()
        .skip(1)
        .filter_map(ShapeCost::compiled_excess_ns)
        .sum();
    let total_ns = build_ns + first_call_excess_ns + new_shape_excess_ns;
    let faster = steady.speedup.lower > 1.0 && saving_ns_per_call > 0.0;
    let break_even_calls = faster.then(|| (total_ns / saving_ns_per_call).ceil().max(0.0) as u64);
    CompileCost {
        build_ns,
        first_call_excess_ns,
        new_shape_excess_ns,
        total_ns,
        saving_ns_per_call,
        break_even_calls,
        expected_calls,
    }
}

/// Every flag the record supports, most severe first.
pub(crate) fn flags(record: &EagerCompiled) -> Vec<EagerCompiledFlag> {
    let mut flags = Vec::new();
    if let Some(message) = &record.compiled.failure {
        flags.push(EagerCompiledFlag::CompiledFailed {
            message: message.clone(),
        });
    }
    let disagree = record.agreement.iter().filter(|a| !a.agrees).count();
    if disagree > 0 {
        flags.push(EagerCompiledFlag::OutputsDisagree {
            shapes: disagree,
            of: record.agreement.len(),
        });
    }
    if let Some(steady) = &record.steady {
        let s = steady.speedup;
        if s.upper < 1.0 && s.point < SLOWER_BELOW {
            flags.push(EagerCompiledFlag::CompiledSlower { speedup: s.point });
        }
    }
    if let Some(flag) = respecialise_flag(&record.shape_costs) {
        flags.push(flag);
    }
    if let Some(cost) = &record.compile_cost {
        if cost
            .break_even_calls
            .is_none_or(|n| n > cost.expected_calls)
        {
            flags.push(EagerCompiledFlag::NotWorthCompiling {
                break_even_calls: cost.break_even_calls,
                expected_calls: cost.expected_calls,
            });
        }
    }
    let (eager_nf, compiled_nf) = record
        .agreement
        .iter()
        .flat_map(|a| &a.outputs)
        .fold((0, 0), |(e, c), o| {
            (e + o.eager_non_finite, c + o.compiled_non_finite)
        });
    if eager_nf + compiled_nf > 0 {
        flags.push(EagerCompiledFlag::NonFiniteOutputs {
            eager: eager_nf,
            compiled: compiled_nf,
        });
    }
    let unstable = record
        .agreement
        .iter()
        .filter(|a| !a.eager_repeat_agrees)
        .count();
    if unstable > 0 {
        flags.push(EagerCompiledFlag::EagerNondeterministic { shapes: unstable });
    }
    flags
}
