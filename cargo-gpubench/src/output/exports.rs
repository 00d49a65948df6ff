//! History exports: a run's figures in the JSON that benchmark dashboards ingest.
//!
//! * `--format github-action-benchmark`: the `customSmallerIsBetter` input of
//!   github-action-benchmark, an array of `{name, unit, value, range, extra}`, one
//!   entry per benchmark's figure (its primary timer) and one for its kernel time
//!   when measured, in nanoseconds per call.
//! * `--format bmf`: Bencher's metric format, `{name: {measure: {value, lower_value,
//!   upper_value}}}`, with the built-in `latency` measure (nanoseconds) for the
//!   figure and a `kernel-time` measure (nanoseconds) when measured.
//!
//! Failed benchmarks have no figure and are left out of both.

use serde::Serialize;
use serde_json::{json, Map, Value};

use crate::store::references::SummaryEntry;

/// One entry of github-action-benchmark's custom format.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub(crate) struct ActionBenchmark {
    /// The benchmark, e.g. `matmul/matmul_f32/4096`, with ` (kernel time)` for that one.
    pub name: String,
    /// Always `ns`: a time per call.
    pub unit: &'static str,
    /// The figure, ns per call.
    pub value: f64,
    /// Its interval, e.g. `± 12.5`, in the same unit.
    pub range: String,
    /// Which timer and how many processes it rests on.
    pub extra: String,
}

/// The figures of `entries` as github-action-benchmark's `customSmallerIsBetter` input.
pub(crate) fn github_action_benchmark(entries: &[SummaryEntry]) -> Vec<ActionBenchmark> {
    let mut out = Vec::new();
    for e in entries {
        let Some(s) = &e.summary else { continue };
        let processes = s.processes();
        if let (Some(kind), Some(t)) = (s.timing.primary_kind, s.primary()) {
            out.push(ActionBenchmark {
                name: e.name.clone(),
                unit: "ns",
                value: t.estimate.point,
                range: half_width(t.estimate.lower, t.estimate.upper),
                extra: format!("{} time per call, {processes} process(es)", kind.label()),
            });
        }
        if let Some(k) = &s.timing.kernel {
            out.push(ActionBenchmark {
                name: format!("{} (kernel time)", e.name),
                unit: "ns",
                value: k.estimate.point,
                range: half_width(k.estimate.lower, k.estimate.upper),
                extra: format!("kernel time per call, {processes} process(es)"),
            });
        }
    }
    out
}

/// `± 12.5`: half of an interval's width.
fn half_width(lower: f64, upper: f64) -> String {
    format!("± {}", round3((upper - lower) / 2.0))
}

/// `x` with at most three decimals.
fn round3(x: f64) -> f64 {
    (x * 1e3).round() / 1e3
}

/// The figures of `entries` in Bencher's metric format (BMF).
pub(crate) fn bmf(entries: &[SummaryEntry]) -> Value {
    let mut out = Map::new();
    for e in entries {
        let Some(s) = &e.summary else { continue };
        let mut measures = Map::new();
        if let Some(t) = s.primary() {
            measures.insert(
                "latency".into(),
                metric(t.estimate.point, t.estimate.lower, t.estimate.upper),
            );
        }
        if let Some(k) = &s.timing.kernel {
            measures.insert(
                "kernel-time".into(),
                metric(k.estimate.point, k.estimate.lower, k.estimate.upper),
            );
        }
        if !measures.is_empty() {
            out.insert(e.name.clone(), Value::Object(measures));
        }
    }
    Value::Object(out)
}

fn metric(value: f64, lower: f64, upper: f64) -> Value {
    json!({ "value": value, "lower_value": lower, "upper_value": upper })
}

#[cfg(test)]
mod tests;
