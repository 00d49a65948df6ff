//! The lines the harness prints under a comparison benchmark's summary.

use gpubench_analysis::stats::median;
use gpubench_record::eager_compiled::{EagerCompiled, OutputAgreement};
use gpubench_record::units::format_ns;

/// Disagreeing shapes listed by name before the rest are only counted.
const MISMATCHES_SHOWN: usize = 3;

fn per_request(c: &EagerCompiled, compiled: bool) -> (Vec<f64>, Vec<f64>) {
    let mut warm = Vec::new();
    let mut cold = Vec::new();
    for r in &c.requests {
        let t = if compiled { r.compiled } else { Some(r.eager) };
        if let Some(t) = t {
            if r.cold {
                cold.push(t.wall_ns);
            } else {
                warm.push(t.wall_ns);
            }
        }
    }
    (warm, cold)
}

/// The largest figure over every shape's outputs, when any output has one.
fn largest(c: &EagerCompiled, figure: impl Fn(&OutputAgreement) -> Option<f64>) -> Option<f64> {
    c.agreement
        .iter()
        .flat_map(|a| &a.outputs)
        .filter_map(figure)
        .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))))
}

fn latency_line(label: &str, (warm, cold): (Vec<f64>, Vec<f64>)) -> String {
    let mut parts = Vec::new();
    if !warm.is_empty() {
        parts.push(format!("median {}", format_ns(median(&warm))));
    }
    if !cold.is_empty() {
        parts.push(format!(
            "{} cold calls median {}",
            cold.len(),
            format_ns(median(&cold))
        ));
    }
    if parts.is_empty() {
        parts.push("not run".into());
    }
    format!("{label} {}", parts.join(", "))
}

/// A few indented lines: variants, speedup, compile cost and pay-off, per-request
/// latency, agreement (naming the first disagreeing shapes) and flags.
pub fn summary(c: &EagerCompiled) -> String {
    let mut out = String::new();
    let shapes = c.agreement.len();
    let build = match (c.compiled.build_ns, c.compiled.kind) {
        (Some(ns), kind) => format!(", {} in {}", kind.label(), format_ns(ns)),
        (None, kind) => format!(", {}", kind.label()),
    };
    // The measurement printed above iterates over the requests the steady state
    // used; say so when that is more than one call.
    let per_iteration = match &c.steady {
        Some(s) if s.requests > 1 => format!(
            " (an iteration above is one pass over {} of them)",
            s.requests
        ),
        _ => String::new(),
    };
    out.push_str(&format!(
        "    {} vs {}{build}: {} requests at {shapes} shapes{per_iteration}\n",
        c.eager.label,
        c.compiled.label,
        c.requests.len(),
    ));
    if let Some(failure) = &c.compiled.failure {
        out.push_str(&format!("    {} failed: {failure}\n", c.compiled.label));
    }
    if let Some(s) = &c.steady {
        let which = if c.device_timer { "device" } else { "synced" };
        out.push_str(&format!(
            "    speedup {:.3}× [{:.3}× {:.3}×] ({which}): {} {} vs {} {} per call, {} balanced blocks (eager, compiled, compiled, eager) × {} passes over {} requests\n",
            s.speedup.point,
            s.speedup.lower,
            s.speedup.upper,
            c.eager.label,
            format_ns(s.eager_ns_per_call),
            c.compiled.label,
            format_ns(s.compiled_ns_per_call),
            s.eager.len() / 2,
            s.passes_per_sample,
            s.requests,
        ));
    }
    if let Some(cost) = &c.compile_cost {
        let pays = match cost.break_even_calls {
            Some(n) => format!("pays off after {n} calls"),
            None => "never pays off (not significantly faster)".to_string(),
        };
        out.push_str(&format!(
            "    compile cost {} (build {}, first call +{}, new shapes +{}); {pays}, expected {} calls\n",
            format_ns(cost.total_ns),
            format_ns(cost.build_ns),
            format_ns(cost.first_call_excess_ns),
            format_ns(cost.new_shape_excess_ns),
            cost.expected_calls,
        ));
    }
    out.push_str(&format!(
        "    per request: {}; {}\n",
        latency_line(&c.eager.label, per_request(c, false)),
        latency_line(&c.compiled.label, per_request(c, true)),
    ));
    let agree = c.agreement.iter().filter(|a| a.agrees).count();
    let max_abs = largest(c, |o| o.max_abs_diff);
    let max_rel = largest(c, |o| o.max_rel_diff);
    let diffs = match (max_abs, max_rel) {
        (Some(a), Some(r)) => format!("; max abs diff {a:.2e}, max rel diff {r:.2e}"),
        _ => String::new(),
    };
    out.push_str(&format!(
        "    agreement: {agree} of {shapes} shapes agree{diffs}\n"
    ));
    let disagreeing: Vec<_> = c.agreement.iter().filter(|a| !a.agrees).collect();
    for a in disagreeing.iter().take(MISMATCHES_SHOWN) {
        let why = a.mismatch.clone().unwrap_or_else(|| {
            let o = a.outputs.iter().find(|o| !o.allclose);
            match o {
                Some(o) => format!(
                    "outside rtol {:.1e} atol {:.1e} (max abs diff {:.2e})",
                    o.rtol,
                    o.atol,
                    o.max_abs_diff.unwrap_or(f64::NAN)
                ),
                None => "disagrees".into(),
            }
        });
        out.push_str(&format!("      {}: {why}\n", a.shape));
    }
    if disagreeing.len() > MISMATCHES_SHOWN {
        out.push_str(&format!(
            "      … and {} more shapes\n",
            disagreeing.len() - MISMATCHES_SHOWN
        ));
    }
    if !c.flags.is_empty() {
        let flags: Vec<String> = c.flags.iter().map(|f| f.describe()).collect();
        out.push_str(&format!("    comparison flags: {}\n", flags.join("; ")));
    }
    out
}
