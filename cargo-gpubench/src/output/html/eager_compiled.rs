//! The eager-versus-compiled part of the report: what pages and the scorecard show of
//! a record's [`EagerCompiled`], and its latency chart.
//!
//! Everything the templates read about a comparison is built here, from the record
//! type alone, so a change to that type touches this file and the template section
//! that shows it, nothing else.

use gpubench_analysis::stats;
use gpubench_record::eager_compiled::{EagerCompiled, FlagKind, ShapeAgreement};
use serde::Serialize;

use super::charts::{self, palette, Axis, AxisFormat, Plot, Series, SeriesKind};
use crate::format;

/// One request of the shape stream, as one variant served it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(super) struct RequestPoint {
    /// Position in the stream.
    pub index: usize,
    /// Its latency (device time when measured, else synced wall), ns.
    pub latency_ns: f64,
    /// Whether it was the first request at its shape.
    pub cold: bool,
}

/// One variant's latencies over the stream.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(super) struct VariantSeries {
    /// The variant, e.g. `eager`.
    pub name: String,
    /// Its requests in stream order (a failed call leaves a gap).
    pub points: Vec<RequestPoint>,
}

/// Per-variant figures for the table under the chart.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(super) struct VariantRow {
    /// The variant's label.
    pub name: String,
    /// How it was made, e.g. `TorchScript trace`.
    pub kind: String,
    /// Requests served.
    pub requests: usize,
    /// Cold calls among them.
    pub cold: usize,
    /// Median latency of the warm requests.
    pub warm_median: String,
    /// Median latency of the cold requests, or empty.
    pub cold_median: String,
    /// Time to trace or load it, or empty.
    pub build: String,
    /// Why it could not run, or empty.
    pub failure: String,
}

/// The speedup of compiled over eager (`eager / compiled`, so above 1 is faster).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(super) struct SpeedupView {
    /// The point estimate, e.g. `1.32×`.
    pub point: String,
    /// The interval, e.g. `1.28× to 1.36×`, `too noisy for an interval` past
    /// [`format::TOO_NOISY_RATIO`], or empty.
    pub interval: String,
    /// Whether the interval was too noisy to show.
    pub noisy: bool,
    /// Its numeric point for sorting.
    pub value: f64,
    /// Whether compiled is significantly slower.
    pub slower: bool,
}

/// A table of strings.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub(super) struct TableView {
    /// Column headings.
    pub headers: Vec<String>,
    /// Rows, each as long as `headers`.
    pub rows: Vec<Vec<String>>,
}

/// A flag raised by the comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(super) struct FlagView {
    /// Words with figures, e.g. `outputs disagree at 1 of 5 shapes`.
    pub label: String,
    /// Whether it is a problem (red) rather than a remark (amber).
    pub severe: bool,
}

/// A label and a value.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(super) struct Figure {
    /// What.
    pub label: String,
    /// The figure.
    pub value: String,
    /// A note, or empty.
    pub detail: String,
}

/// Everything the report shows about one eager-versus-compiled comparison.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub(super) struct EagerCompiledView {
    /// Latency series: eager, then compiled.
    pub variants: Vec<VariantSeries>,
    /// Per-variant rows.
    pub variant_rows: Vec<VariantRow>,
    /// The steady-state speedup, when measured.
    pub speedup: Option<SpeedupView>,
    /// Steady state and what compiling costs.
    pub figures: Vec<Figure>,
    /// Per shape: does the output agree, and by how much does it differ.
    pub agreement: TableView,
    /// Which agreement rows disagree, by position.
    pub disagreeing_rows: Vec<usize>,
    /// One line for the scorecard, e.g. `all 5 shapes agree`.
    pub agreement_summary: String,
    /// Whether any output disagreed (or the compiled variant failed).
    pub disagrees: bool,
    /// Per shape: first call against steady state, per variant.
    pub shape_costs: TableView,
    /// Flags, most severe first.
    pub flags: Vec<FlagView>,
    /// Every request: index, shape, each variant's latency.
    pub requests: TableView,
    /// The compiled artefact's metadata, source and exported shapes.
    pub artefact: Vec<(String, String)>,
}

impl EagerCompiledView {
    /// The view of a record's comparison.
    pub(super) fn new(c: &EagerCompiled) -> Self {
        let eager = VariantSeries {
            name: c.eager.label.clone(),
            points: c
                .requests
                .iter()
                .map(|r| RequestPoint {
                    index: r.index,
                    latency_ns: r.eager.primary_ns(),
                    cold: r.cold,
                })
                .collect(),
        };
        let compiled = VariantSeries {
            name: c.compiled.label.clone(),
            points: c
                .requests
                .iter()
                .filter_map(|r| {
                    Some(RequestPoint {
                        index: r.index,
                        latency_ns: r.compiled?.primary_ns(),
                        cold: r.cold,
                    })
                })
                .collect(),
        };
        let variant_rows = vec![
            variant_row(&eager, c.eager.kind.label(), &c.eager),
            variant_row(&compiled, c.compiled.kind.label(), &c.compiled),
        ];
        let speedup = c.steady.as_ref().map(|s| {
            let e = s.speedup;
            SpeedupView {
                point: format::ratio(e.point),
                interval: if !(e.lower.is_finite() && e.upper.is_finite() && e.lower < e.upper) {
                    String::new()
                } else if format::too_noisy(e.lower, e.upper) {
                    "too noisy for an interval".into()
                } else {
                    format!("{} to {}", format::ratio(e.lower), format::ratio(e.upper))
                },
                noisy: format::too_noisy(e.lower, e.upper),
                value: e.point,
                slower: c.has_flag(FlagKind::CompiledSlower),
            }
        });
        let disagreeing_rows: Vec<usize> = c
            .agreement
            .iter()
            .enumerate()
            .filter(|(_, a)| !a.agrees)
            .map(|(i, _)| i)
            .collect();
        let n = c.agreement.len();
        let agreement_summary = if let Some(f) = &c.compiled.failure {
            format!("compiled failed: {}", first_line(f))
        } else if n == 0 {
            "not checked".into()
        } else if disagreeing_rows.is_empty() {
            format!("all {n} shapes agree")
        } else {
            format!("{} of {n} shapes disagree", disagreeing_rows.len())
        };
        let mut flags: Vec<FlagView> = c
            .flags
            .iter()
            .map(|f| FlagView {
                label: f.describe(),
                severe: f.is_severe(),
            })
            .collect();
        flags.sort_by_key(|f| !f.severe);
        EagerCompiledView {
            requests: request_table(c),
            variants: vec![eager, compiled],
            variant_rows,
            speedup,
            figures: figures(c),
            agreement: agreement_table(&c.agreement),
            disagrees: !c.agrees(),
            disagreeing_rows,
            agreement_summary,
            shape_costs: shape_cost_table(c),
            flags,
            artefact: artefact_rows(c),
        }
    }

    /// The per-request latency chart: both variants over the shape stream, cold
    /// calls ringed. `None` without requests.
    pub(super) fn latency_plot(&self) -> Option<Plot> {
        let n = self
            .variants
            .iter()
            .flat_map(|v| v.points.iter().map(|p| p.index + 1))
            .max()?;
        let all = || {
            self.variants
                .iter()
                .flat_map(|v| v.points.iter().map(|p| p.latency_ns))
        };
        let log = charts::wants_log(all());
        // The legend lies under the plot, so the range needs no headroom for it.
        let range = charts::padded_range(all(), 0.08, log);
        let warm: Vec<f64> = self
            .variants
            .iter()
            .flat_map(|v| v.points.iter().filter(|p| !p.cold).map(|p| p.latency_ns))
            .collect();
        let typical = stats::median(&warm);
        let unit = charts::axis_unit(if typical.is_finite() {
            typical
        } else {
            range.end
        });
        let mut plot = Plot::new(
            Axis::linear(
                "request in the shape stream",
                -0.5..(n as f64 - 0.5).max(0.5),
                AxisFormat::Index,
            ),
            Axis::time("latency", range, log, unit),
        );
        for (v, color) in self.variants.iter().zip([palette::NEW, palette::COMPILED]) {
            plot.series.push(Series {
                name: Some(v.name.clone()),
                color,
                points: v
                    .points
                    .iter()
                    .map(|p| (p.index as f64, p.latency_ns))
                    .collect(),
                kind: SeriesKind::LineMarkers,
            });
        }
        let cold: Vec<(f64, f64)> = self
            .variants
            .iter()
            .flat_map(|v| {
                v.points
                    .iter()
                    .filter(|p| p.cold)
                    .map(|p| (p.index as f64, p.latency_ns))
            })
            .collect();
        if !cold.is_empty() {
            plot.series.push(Series {
                name: Some("cold call (first at its shape)".into()),
                color: palette::COLD,
                points: cold,
                kind: SeriesKind::Markers {
                    size: 7,
                    hollow: true,
                },
            });
        }
        Some(plot)
    }
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

fn variant_row(
    v: &VariantSeries,
    kind: &str,
    info: &gpubench_record::eager_compiled::VariantInfo,
) -> VariantRow {
    let pick = |cold: bool| -> Vec<f64> {
        v.points
            .iter()
            .filter(|p| p.cold == cold)
            .map(|p| p.latency_ns)
            .collect()
    };
    let median = |xs: &[f64]| {
        if xs.is_empty() {
            String::new()
        } else {
            format::duration(stats::median(xs))
        }
    };
    let (warm, cold) = (pick(false), pick(true));
    VariantRow {
        name: v.name.clone(),
        kind: kind.to_string(),
        requests: v.points.len(),
        cold: cold.len(),
        warm_median: median(&warm),
        cold_median: median(&cold),
        build: info.build_ns.map(format::duration).unwrap_or_default(),
        failure: info.failure.clone().unwrap_or_default(),
    }
}

fn figures(c: &EagerCompiled) -> Vec<Figure> {
    let mut out = Vec::new();
    let mut push = |label: &str, value: String, detail: String| {
        out.push(Figure {
            label: label.into(),
            value,
            detail,
        })
    };
    if let Some(s) = &c.steady {
        push(
            &format!("{} per call", c.eager.label),
            format::duration(s.eager_ns_per_call),
            format!("steady state, {} samples", s.eager.len()),
        );
        push(
            &format!("{} per call", c.compiled.label),
            format::duration(s.compiled_ns_per_call),
            format!("steady state, {} samples", s.compiled.len()),
        );
    }
    if let Some(k) = &c.compile_cost {
        push(
            "compiling costs",
            format::duration(k.total_ns),
            format!(
                "build {}, first call {}, new shapes {}",
                format::duration(k.build_ns),
                format::duration(k.first_call_excess_ns),
                format::duration(k.new_shape_excess_ns)
            ),
        );
        push(
            "saving per call",
            format::duration(k.saving_ns_per_call),
            if k.saving_ns_per_call < 0.0 {
                "compiled is slower".into()
            } else {
                "eager minus compiled, steady state".into()
            },
        );
        push(
            "pays off after",
            match k.break_even_calls {
                Some(n) => format!("{n} calls"),
                None => "never".into(),
            },
            format!("judged against {} expected calls", k.expected_calls),
        );
    }
    out
}

fn agreement_table(rows: &[ShapeAgreement]) -> TableView {
    let headers = [
        "shape",
        "requests",
        "max abs diff",
        "max rel diff",
        "tolerance",
        "eager vs itself",
        "mismatch",
        "agrees",
    ];
    let max_of = |xs: &mut dyn Iterator<Item = Option<f64>>| -> String {
        xs.flatten()
            .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))))
            .map(format::number)
            .unwrap_or_default()
    };
    TableView {
        headers: headers.iter().map(|h| h.to_string()).collect(),
        rows: rows
            .iter()
            .map(|a| {
                let tolerance = a
                    .outputs
                    .first()
                    .map(|o| {
                        format!(
                            "rtol {} atol {}",
                            format::number(o.rtol),
                            format::number(o.atol)
                        )
                    })
                    .unwrap_or_default();
                let repeat = if a.eager_repeat_identical {
                    "identical".to_string()
                } else if a.eager_repeat_agrees {
                    format!(
                        "within tol ({})",
                        format::number(a.eager_repeat_max_abs_diff)
                    )
                } else {
                    format!("differs ({})", format::number(a.eager_repeat_max_abs_diff))
                };
                vec![
                    a.shape.clone(),
                    a.requests.len().to_string(),
                    max_of(&mut a.outputs.iter().map(|o| o.max_abs_diff)),
                    max_of(&mut a.outputs.iter().map(|o| o.max_rel_diff)),
                    tolerance,
                    repeat,
                    a.mismatch.clone().unwrap_or_default(),
                    if a.agrees { "yes" } else { "no" }.to_string(),
                ]
            })
            .collect(),
    }
}

fn shape_cost_table(c: &EagerCompiled) -> TableView {
    if c.shape_costs.is_empty() {
        return TableView::default();
    }
    let opt = |x: Option<f64>| x.map(format::duration).unwrap_or_default();
    TableView {
        headers: [
            "shape",
            "requests",
            &format!("{} first", c.eager.label),
            &format!("{} steady", c.eager.label),
            &format!("{} first", c.compiled.label),
            &format!("{} steady", c.compiled.label),
            "re-specialised",
        ]
        .iter()
        .map(|h| h.to_string())
        .collect(),
        rows: c
            .shape_costs
            .iter()
            .map(|s| {
                vec![
                    s.shape.clone(),
                    s.requests.to_string(),
                    format::duration(s.eager_cold_ns),
                    format::duration(s.eager_warm_ns),
                    opt(s.compiled_cold_ns),
                    opt(s.compiled_warm_ns),
                    if s.respecialised { "yes" } else { "no" }.to_string(),
                ]
            })
            .collect(),
    }
}

fn request_table(c: &EagerCompiled) -> TableView {
    let cell = |t: Option<gpubench_record::eager_compiled::CallTiming>, cold: bool| match t {
        Some(t) if cold => format!("{} (cold)", format::duration(t.primary_ns())),
        Some(t) => format::duration(t.primary_ns()),
        None => "failed".into(),
    };
    TableView {
        headers: vec![
            "request".into(),
            "shape".into(),
            c.eager.label.clone(),
            c.compiled.label.clone(),
        ],
        rows: c
            .requests
            .iter()
            .map(|r| {
                vec![
                    r.index.to_string(),
                    r.shape.clone(),
                    cell(Some(r.eager), r.cold),
                    cell(r.compiled, r.cold),
                ]
            })
            .collect(),
    }
}

fn artefact_rows(c: &EagerCompiled) -> Vec<(String, String)> {
    let v = &c.compiled;
    let mut rows = vec![("kind".to_string(), v.kind.label().to_string())];
    if let Some(s) = &v.source {
        rows.push(("loaded from".into(), s.clone()));
    }
    if let Some(shapes) = &v.exported_input_shapes {
        let text = shapes
            .iter()
            .map(|dims| {
                let d: Vec<String> = dims
                    .iter()
                    .map(|d| d.map_or("dynamic".to_string(), |x| x.to_string()))
                    .collect();
                format!("[{}]", d.join(", "))
            })
            .collect::<Vec<_>>()
            .join("; ");
        rows.push(("exported for".into(), text));
    }
    for spec in &v.call_spec {
        rows.push(("call spec".into(), spec.clone()));
    }
    for (k, val) in &v.metadata {
        rows.push((k.clone(), val.clone()));
    }
    rows.push((
        "timer".into(),
        if c.device_timer {
            "device events".into()
        } else {
            "synced wall time".into()
        },
    ));
    rows
}

#[cfg(test)]
mod tests;
