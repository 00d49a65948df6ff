//! Eager against TorchScript on the CPU: a real trace of the eager closure, a
//! TorchScript file, and the failures a user can make.

mod eager_compiled_common;

use eager_compiled_common::{fast_config, input, run_on_cpu, serial, smoke_config, Mlp};
use gpubench_core::__private::device::TorchDevice;
use gpubench_core::__private::eager_compiled::EagerCompiledError;
use gpubench_core::__private::engine::EngineOptions;
use gpubench_core::eager_compiled::{Compiled, EagerVsCompiled};
use gpubench_record::eager_compiled::{FlagKind, VariantKind};
use tch::nn::{self, Module};
use tch::{Device, Tensor};

#[test]
fn a_traced_mlp_agrees_with_eager_and_is_measured() {
    let _serial = serial();
    let mlp = Mlp::new(64, 128);
    let stream = vec![input(8, 64), input(32, 64), input(8, 64), input(16, 64)];
    let outcome = run_on_cpu(
        EagerVsCompiled::new(|xs: &[Tensor]| mlp.forward(xs))
            .compiled(Compiled::trace())
            .inputs(stream),
        &fast_config(),
    );
    let c = &outcome.record;
    assert_eq!(c.compiled.kind, VariantKind::TorchscriptTrace);
    assert_eq!(c.compiled.label, "traced");
    assert!(c.compiled.build_ns.unwrap() > 0.0);
    assert!(c.agrees(), "{:#?}", c.agreement);
    assert!(!c.has_flag(FlagKind::OutputsDisagree));
    assert_eq!(c.agreement.len(), 3, "three distinct batch sizes");
    assert_eq!(c.agreement[0].requests, vec![0, 2]);
    for row in &c.agreement {
        assert!(row.eager_repeat_agrees);
        let o = &row.outputs[0];
        assert_eq!(o.eager_shape, o.compiled_shape);
        assert!(o.max_abs_diff.unwrap() <= 1e-5, "{o:?}");
    }
    // Per-request latency with the first call of each shape marked cold.
    let cold: Vec<bool> = c.requests.iter().map(|r| r.cold).collect();
    assert_eq!(cold, vec![true, true, false, true]);
    assert!(c.requests.iter().all(|r| r.compiled.is_some()));
    // The record's measurement is the compiled variant's, cold calls per shape.
    let m = outcome.measurement.expect("measured");
    assert!(!m.samples.is_empty());
    assert_eq!(m.cold.len(), 3);
    assert!(m.cold[0].label.starts_with("first call, shape [8, 64] f32"));
    let steady = c.steady.as_ref().expect("steady state in bench mode");
    assert_eq!(steady.eager.len(), steady.compiled.len());
    assert!(
        steady.speedup.lower <= steady.speedup.point
            && steady.speedup.point <= steady.speedup.upper
    );
    let cost = c.compile_cost.as_ref().unwrap();
    assert!(cost.total_ns >= cost.build_ns);
    assert_eq!(cost.expected_calls, 4);
}

#[test]
fn a_torchscript_file_loads_and_agrees() {
    let _serial = serial();
    let mlp = Mlp::new(16, 32);
    let x = input(4, 16);
    let traced = tch::CModule::create_by_tracing("m", "forward", &[x.shallow_clone()], &mut |xs| {
        vec![mlp.forward(xs)]
    })
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mlp.pt");
    traced.save(&path).unwrap();
    let outcome = run_on_cpu(
        EagerVsCompiled::new(|xs: &[Tensor]| mlp.forward(xs))
            .compiled(Compiled::load(&path))
            .input(x),
        &smoke_config(),
    );
    let c = &outcome.record;
    assert_eq!(c.compiled.kind, VariantKind::TorchscriptFile);
    assert_eq!(c.compiled.label, "mlp");
    assert_eq!(
        c.compiled.source.as_deref(),
        Some(path.display().to_string().as_str())
    );
    assert!(c.agrees(), "{:#?}", c.agreement);
    assert!(outcome.measurement.is_some());
    assert!(c.steady.is_none(), "smoke runs stop after the stream pass");
}

#[test]
fn a_missing_file_is_a_failed_variant_not_a_crash() {
    let _serial = serial();
    let mlp = Mlp::new(8, 8);
    let outcome = run_on_cpu(
        EagerVsCompiled::new(|xs: &[Tensor]| mlp.forward(xs))
            .compiled(Compiled::load("/nonexistent/model.pt"))
            .input(input(2, 8)),
        &smoke_config(),
    );
    assert!(outcome.measurement.is_none());
    let failure = outcome.failure().unwrap();
    assert!(
        failure.contains("/nonexistent/model.pt") && failure.contains("no such file"),
        "{failure}"
    );
    assert!(outcome.record.has_flag(FlagKind::CompiledFailed));
}

#[test]
fn tracing_unfrozen_parameters_fails_with_a_hint() {
    let _serial = serial();
    let vs = nn::VarStore::new(Device::Cpu);
    let lin = nn::linear(vs.root() / "l", 4, 4, Default::default());
    let outcome = run_on_cpu(
        EagerVsCompiled::new(|xs: &[Tensor]| lin.forward(&xs[0]))
            .compiled(Compiled::trace())
            .input(input(2, 4)),
        &smoke_config(),
    );
    let failure = outcome
        .record
        .compiled
        .failure
        .clone()
        .expect("tracing fails");
    assert!(failure.contains("vs.freeze()"), "{failure}");
}

#[test]
fn a_trace_that_bakes_in_a_size_is_caught_on_other_shapes() {
    let _serial = serial();
    // Reads the batch size on the Rust side: the trace keeps the first request's.
    let eager = |xs: &[Tensor]| {
        let n = xs[0].size()[0];
        xs[0]
            .reshape([n, -1])
            .sum_dim_intlist([1i64].as_slice(), false, None)
            * 2.0
            + Tensor::ones([n], (tch::Kind::Float, Device::Cpu))
    };
    let outcome = run_on_cpu(
        EagerVsCompiled::new(eager)
            .compiled(Compiled::trace())
            .inputs(vec![input(4, 3), input(6, 3), input(4, 3)]),
        &smoke_config(),
    );
    let c = &outcome.record;
    assert!(c.agreement[0].agrees, "{:#?}", c.agreement[0]);
    let other = &c.agreement[1];
    assert!(!other.agrees);
    assert!(other.mismatch.is_some(), "{other:#?}");
    assert!(c.has_flag(FlagKind::OutputsDisagree));
}

#[test]
fn a_comparison_without_inputs_or_compiled_variant_is_refused() {
    let _serial = serial();
    let device = TorchDevice::new(Device::Cpu);
    let options = EngineOptions::default();
    let err = EagerVsCompiled::new(|xs: &[Tensor]| xs[0].shallow_clone())
        .compiled(Compiled::trace())
        .run(&device, &smoke_config(), &options)
        .unwrap_err();
    assert!(matches!(err, EagerCompiledError::NoInputs));
    assert!(err
        .to_string()
        .starts_with("failed to start the comparison"));
    let err = EagerVsCompiled::new(|xs: &[Tensor]| xs[0].shallow_clone())
        .input(input(1, 1))
        .run(&device, &smoke_config(), &options)
        .unwrap_err();
    assert!(matches!(err, EagerCompiledError::NoCompiled));
}
