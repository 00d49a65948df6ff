//! The comparison from start to finish: build, serve the stream once (latency and
//! agreement), each shape's steady state, the engine's measurement of the compiled
//! variant, interleaved samples, then verdicts.

use std::collections::HashMap;

use gpubench_analysis::stats::median;
use gpubench_record::eager_compiled::{
    EagerCompiled, RequestTiming, ShapeAgreement, ShapeCost, SteadyState, VariantInfo, VariantKind,
};
use gpubench_record::failure::cap_message;
use gpubench_record::measurement::{ColdCall, MeasurementConfig, RunMode};
use tch::{Kind, Tensor};

use super::agreement::{compare_outputs, repeat_agreement, OutputsVerdict};
use super::serve::{self, Runner};
use super::variant::{self, ClosureVariant, InputCheck};
use super::{
    analysis, EagerCompiledError, EagerCompiledOutcome, EagerVsCompiled, ModelFn, Request,
    Tolerance,
};
use crate::device::DeviceBackend;
use crate::engine::{Engine, EngineOptions};

/// Distinct input shapes in order of first appearance, with their requests.
struct Shapes {
    /// Per request: its shape label.
    labels: Vec<String>,
    /// Per request: the index of its shape in `distinct`.
    of_request: Vec<usize>,
    /// Per shape: its label and the requests at it.
    distinct: Vec<(String, Vec<usize>)>,
}

impl Shapes {
    fn new(requests: &[Request]) -> Self {
        let labels: Vec<String> = requests.iter().map(Request::shape_label).collect();
        let mut index: HashMap<&str, usize> = HashMap::new();
        let mut distinct: Vec<(String, Vec<usize>)> = Vec::new();
        let mut of_request = Vec::with_capacity(labels.len());
        for (i, label) in labels.iter().enumerate() {
            let s = *index.entry(label.as_str()).or_insert_with(|| {
                distinct.push((label.clone(), Vec::new()));
                distinct.len() - 1
            });
            distinct[s].1.push(i);
            of_request.push(s);
        }
        Shapes {
            labels,
            of_request,
            distinct,
        }
    }
}

/// Pays the process-wide first-use costs (the cuBLAS handle, the caching
/// allocator's first block, the first kernel launch) before either variant runs, so
/// they are not charged to whichever variant happens to go first: the build of a
/// trace, or eager's first request when the compiled variant is a package.
fn warm_up_device(device: &dyn DeviceBackend) {
    let x = Tensor::ones([64, 64], (Kind::Float, device.tch_device()));
    let _ = (x.matmul(&x) + 1.0).sum(Kind::Float);
    device.synchronize();
}

pub(crate) fn run(
    comparison: EagerVsCompiled<'_>,
    device: &dyn DeviceBackend,
    config: &MeasurementConfig,
    options: &EngineOptions,
) -> Result<EagerCompiledOutcome, EagerCompiledError> {
    let EagerVsCompiled {
        eager,
        eager_label,
        compiled,
        requests,
        mut reference,
        tolerance,
        expected_calls,
        warm_calls,
    } = comparison;
    let compiled = compiled.ok_or(EagerCompiledError::NoCompiled)?;
    if requests.is_empty() {
        return Err(EagerCompiledError::NoInputs);
    }
    if let Some(index) = requests.iter().position(|r| r.tensors().is_empty()) {
        return Err(EagerCompiledError::EmptyRequest { index });
    }
    let _no_grad = tch::no_grad_guard();
    warm_up_device(device);
    let engine = Engine::new(device, config);
    let mut eager = ClosureVariant::new(eager);
    let (compiled_info, built) = variant::build(compiled, &mut eager, &requests[0], device);
    let mut record = EagerCompiled {
        eager: VariantInfo::new(eager_label, VariantKind::Eager),
        compiled: compiled_info,
        device_timer: device.timer().is_some(),
        requests: Vec::new(),
        shape_costs: Vec::new(),
        agreement: Vec::new(),
        steady: None,
        compile_cost: None,
        flags: Vec::new(),
    };
    let mut compiled = match built {
        Ok(v) => v,
        Err(cause) => return Ok(failed(record, cause)),
    };
    let shapes = Shapes::new(&requests);
    let mut eager_runner = Runner::new(&record.eager.label, &mut eager, &requests);
    let mut compiled_runner = Runner::new(&record.compiled.label, compiled.as_mut(), &requests);

    let pass = stream_pass(
        &engine,
        &mut eager_runner,
        &mut compiled_runner,
        &requests,
        &shapes,
        reference.as_mut(),
        tolerance,
    );
    record.requests = pass.requests;
    record.agreement = pass.agreement;
    let served: Vec<usize> = (0..requests.len())
        .filter(|&i| record.requests[i].compiled.is_some())
        .collect();
    if served.is_empty() {
        let why = pass
            .first_error
            .unwrap_or_else(|| "no request was run".to_string());
        let cause = format!("it served none of the {} requests: {why}", requests.len());
        return Ok(failed(record, cause));
    }
    let cold = cold_calls(&record.requests, &shapes);
    // Steady state is timed where the compiled variant is right: a static package
    // fed longer inputs does less work than asked and would look fast.
    let agreeing: Vec<usize> = served
        .iter()
        .copied()
        .filter(|&i| record.agreement[shapes.of_request[i]].agrees)
        .collect();
    let timed = if agreeing.is_empty() {
        served
    } else {
        agreeing
    };

    if config.mode == RunMode::Smoke {
        compiled_runner.pass_over(timed);
        let mut measurement = engine.measure(&mut compiled_runner, options);
        measurement.cold = cold;
        record.flags = analysis::flags(&record);
        return Ok(EagerCompiledOutcome {
            record,
            measurement: Some(measurement),
        });
    }

    record.shape_costs = shape_costs(
        &engine,
        &mut eager_runner,
        &mut compiled_runner,
        &record.requests,
        &shapes,
        warm_calls,
    );
    for cost in record.shape_costs.iter_mut().skip(1) {
        cost.respecialised = analysis::respecialised(cost);
    }

    compiled_runner.pass_over(timed.clone());
    let mut measurement = engine.measure(&mut compiled_runner, options);
    measurement.cold = cold;

    eager_runner.pass_over(timed.clone());
    let passes = passes_per_sample(config, &record.shape_costs, &shapes, &timed);
    let sampled = serve::interleave(
        &engine,
        config,
        &mut eager_runner,
        &mut compiled_runner,
        passes,
    );
    let n = timed.len() as f64;
    let saving = (serve::mean_wall_per_pass(&sampled.eager)
        - serve::mean_wall_per_pass(&sampled.compiled))
        / n;
    let steady = SteadyState {
        passes_per_sample: passes,
        requests: timed.len(),
        eager_ns_per_call: serve::mean_per_pass(&sampled.eager) / n,
        compiled_ns_per_call: serve::mean_per_pass(&sampled.compiled) / n,
        speedup: analysis::speedup(&sampled.ratios),
        eager: sampled.eager,
        compiled: sampled.compiled,
        stop_reason: sampled.stop_reason,
    };
    record.compile_cost = Some(analysis::compile_cost(
        record.compiled.build_ns,
        &record.shape_costs,
        &steady,
        saving,
        expected_calls.unwrap_or(requests.len() as u64),
    ));
    record.steady = Some(steady);
    record.flags = analysis::flags(&record);
    Ok(EagerCompiledOutcome {
        record,
        measurement: Some(measurement),
    })
}

fn failed(mut record: EagerCompiled, cause: String) -> EagerCompiledOutcome {
    record.compiled.failure = Some(cap_message(&cause));
    record.flags = analysis::flags(&record);
    EagerCompiledOutcome {
        record,
        measurement: None,
    }
}

/// What serving the stream once produced.
struct StreamPass {
    requests: Vec<RequestTiming>,
    agreement: Vec<ShapeAgreement>,
    first_error: Option<String>,
}

/// The request's inputs with floating-point tensors in float64.
fn inputs_f64(request: &Request) -> Vec<Tensor> {
    request
        .tensors()
        .iter()
        .map(|t| {
            if t.is_floating_point() {
                t.to_kind(Kind::Double)
            } else {
                t.shallow_clone()
            }
        })
        .collect()
}

/// Serves every request once, in order: eager then compiled, each synced and timed
/// on its own, outputs compared. The first request at each shape also runs eager a
/// second time (self-agreement) and the float64 reference.
fn stream_pass(
    engine: &Engine<'_>,
    eager: &mut Runner<'_, '_>,
    compiled: &mut Runner<'_, '_>,
    requests: &[Request],
    shapes: &Shapes,
    mut reference: Option<&mut ModelFn<'_>>,
    tolerance: Option<Tolerance>,
) -> StreamPass {
    let mut timings = Vec::with_capacity(requests.len());
    let mut rows: Vec<Option<ShapeAgreement>> = vec![None; shapes.distinct.len()];
    let mut first_error = None;
    for (i, request) in requests.iter().enumerate() {
        let shape = &shapes.labels[i];
        let s = shapes.of_request[i];
        let cold = rows[s].is_none();
        let (eager_timing, eager_out) = eager.timed_call(engine, i);
        let eager_out = eager_out.unwrap_or_else(|e| panic!("failed to run eager on {shape}: {e}"));
        let mut reference_out = None;
        if cold {
            let again = eager
                .variant()
                .call(request.tensors())
                .unwrap_or_else(|e| panic!("failed to run eager on {shape}: {e}"));
            let (max_abs, identical, agrees) = repeat_agreement(&eager_out, &again, tolerance);
            rows[s] = Some(ShapeAgreement {
                shape: shape.clone(),
                requests: Vec::new(),
                agrees: true,
                mismatch: None,
                outputs: Vec::new(),
                eager_repeat_max_abs_diff: max_abs,
                eager_repeat_identical: identical,
                eager_repeat_agrees: agrees,
            });
            if let Some(r) = reference.as_mut() {
                reference_out = Some(r(&inputs_f64(request)));
            }
        }
        let (note, run) = match compiled.variant().check_input(request.tensors()) {
            InputCheck::Fine => (None, true),
            InputCheck::Mismatch { note, run } => (Some(note), run),
        };
        let mut compiled_timing = None;
        let verdict = if run {
            let (timing, out) = compiled.timed_call(engine, i);
            match out {
                Ok(out) => {
                    compiled_timing = Some(timing);
                    compare_outputs(&eager_out, &out, tolerance, reference_out.as_deref())
                }
                Err(e) => {
                    let msg = format!("failed to run on {shape}: {e}");
                    first_error.get_or_insert_with(|| msg.clone());
                    failed_verdict(msg)
                }
            }
        } else {
            if let Some(note) = &note {
                first_error.get_or_insert_with(|| format!("not run on {shape}: {note}"));
            }
            failed_verdict(String::new())
        };
        let row = rows[s]
            .as_mut()
            .expect("the shape's row was made at its first request");
        merge(row, i, note, verdict);
        timings.push(RequestTiming {
            index: i,
            shape: shape.clone(),
            cold,
            eager: eager_timing,
            compiled: compiled_timing,
        });
    }
    StreamPass {
        requests: timings,
        agreement: rows.into_iter().flatten().collect(),
        first_error,
    }
}

fn failed_verdict(mismatch: String) -> OutputsVerdict {
    OutputsVerdict {
        outputs: Vec::new(),
        mismatch: (!mismatch.is_empty()).then_some(mismatch),
        agrees: false,
    }
}

/// Adds one request's verdict to its shape's row: the worst figures win.
fn merge(row: &mut ShapeAgreement, request: usize, note: Option<String>, verdict: OutputsVerdict) {
    row.requests.push(request);
    row.agrees &= verdict.agrees && note.is_none();
    if row.mismatch.is_none() {
        row.mismatch = match (note, verdict.mismatch) {
            (Some(n), Some(m)) => Some(format!("{n}; {m}")),
            (n, m) => n.or(m),
        };
    }
    if row.outputs.is_empty() {
        row.outputs = verdict.outputs;
        return;
    }
    for (o, new) in row.outputs.iter_mut().zip(verdict.outputs) {
        let worst = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        o.max_abs_diff = worst(o.max_abs_diff, new.max_abs_diff);
        o.max_rel_diff = worst(o.max_rel_diff, new.max_rel_diff);
        o.allclose &= new.allclose;
        o.eager_non_finite += new.eager_non_finite;
        o.compiled_non_finite += new.compiled_non_finite;
        o.non_finite_mismatch += new.non_finite_mismatch;
        if o.reference.is_none() {
            o.reference = new.reference;
        }
    }
}

/// The compiled variant's first call at each shape it served there, labelled like
/// the engine's cold calls.
fn cold_calls(requests: &[RequestTiming], shapes: &Shapes) -> Vec<ColdCall> {
    shapes
        .distinct
        .iter()
        .enumerate()
        .filter_map(|(n, (label, indices))| {
            let t = requests[indices[0]].compiled?;
            let label = if n == 0 {
                format!("first call, shape {label}")
            } else {
                format!("new shape {label}")
            };
            Some(ColdCall {
                label,
                wall_ns: t.wall_ns,
                host_ns: t.host_ns,
                device_ns: t.device_ns,
            })
        })
        .collect()
}

/// Each shape's steady state: `warm` synced single calls per variant on the
/// shape's first request, alternating which variant goes first; synced wall time,
/// like the cold calls they are judged against.
fn shape_costs(
    engine: &Engine<'_>,
    eager: &mut Runner<'_, '_>,
    compiled: &mut Runner<'_, '_>,
    requests: &[RequestTiming],
    shapes: &Shapes,
    warm: usize,
) -> Vec<ShapeCost> {
    shapes
        .distinct
        .iter()
        .map(|(label, indices)| {
            let first = indices[0];
            let compiled_cold = requests[first].compiled;
            let mut eager_warm = Vec::with_capacity(warm);
            let mut compiled_warm = Vec::with_capacity(warm);
            let mut time_compiled = |compiled: &mut Runner<'_, '_>| {
                if compiled_cold.is_some() {
                    let (t, out) = compiled.timed_call(engine, first);
                    if out.is_ok() {
                        compiled_warm.push(t.wall_ns);
                    }
                }
            };
            for w in 0..warm {
                let compiled_first = w.is_multiple_of(2);
                if compiled_first {
                    time_compiled(compiled);
                }
                eager_warm.push(eager.timed_call(engine, first).0.wall_ns);
                if !compiled_first {
                    time_compiled(compiled);
                }
            }
            ShapeCost {
                shape: label.clone(),
                requests: indices.len(),
                warm_calls: warm,
                eager_cold_ns: requests[first].eager.wall_ns,
                eager_warm_ns: median(&eager_warm),
                compiled_cold_ns: compiled_cold.map(|t| t.wall_ns),
                compiled_warm_ns: (!compiled_warm.is_empty()).then(|| median(&compiled_warm)),
                respecialised: false,
            }
        })
        .collect()
}

/// Passes per interleaved sample: enough for the faster variant's sample to last
/// the config's sample target, estimated from each shape's steady single calls (one
/// pass when L2 is flushed, the engine's choice there too).
fn passes_per_sample(
    config: &MeasurementConfig,
    costs: &[ShapeCost],
    shapes: &Shapes,
    pass: &[usize],
) -> u64 {
    if config.flush_l2 {
        return 1;
    }
    let per_pass = |f: &dyn Fn(&ShapeCost) -> Option<f64>| -> f64 {
        pass.iter()
            .filter_map(|&i| f(&costs[shapes.of_request[i]]))
            .sum()
    };
    let eager = per_pass(&|c| Some(c.eager_warm_ns));
    let compiled = per_pass(&|c| c.compiled_warm_ns);
    let faster = eager.min(compiled).max(1.0);
    ((config.sample_target_s * 1e9 / faster).ceil() as u64).max(1)
}
