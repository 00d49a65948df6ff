//! Unit tests of agreement, input checks and verdicts (no timing).

use gpubench_record::eager_compiled::{
    EagerCompiled, EagerCompiledFlag, FlagKind, ShapeAgreement, ShapeCost, SteadyState,
    VariantInfo, VariantKind,
};
use gpubench_record::estimate::Estimate;
use gpubench_record::measurement::StopReason;
use tch::{Device, Kind, Tensor};

use super::agreement::{compare_outputs, repeat_agreement};
use super::analysis::{compile_cost, flags, respecialise_flag, respecialised};
use super::variant::{input_mismatch, InputCheck};
use super::{Request, Tolerance};

fn t(values: &[f32]) -> Tensor {
    Tensor::from_slice(values)
}

#[test]
fn identical_outputs_agree_and_a_planted_offset_does_not() {
    let e = Tensor::randn([4, 8], (Kind::Float, Device::Cpu));
    let same = compare_outputs(&[e.shallow_clone()], &[e.copy()], None, None);
    assert!(same.agrees, "{same:?}");
    assert_eq!(same.outputs[0].max_abs_diff, Some(0.0));
    let off = compare_outputs(&[e.shallow_clone()], &[&e + 1e-2], None, None);
    assert!(!off.agrees);
    let o = &off.outputs[0];
    assert!(!o.allclose);
    assert!((o.max_abs_diff.unwrap() - 1e-2).abs() < 1e-6, "{o:?}");
    assert_eq!((o.rtol, o.atol), (1.3e-6, 1e-5));
    // A loose enough tolerance accepts the same offset.
    let loose = compare_outputs(
        &[e.shallow_clone()],
        &[&e + 1e-2],
        Some(Tolerance {
            rtol: 0.0,
            atol: 2e-2,
        }),
        None,
    );
    assert!(loose.agrees);
}

#[test]
fn shape_mismatch_is_named_with_both_shapes() {
    let e = Tensor::zeros([1, 37, 4], (Kind::Float, Device::Cpu));
    let c = Tensor::zeros([1, 8, 4], (Kind::Float, Device::Cpu));
    let v = compare_outputs(&[e], &[c], None, None);
    assert!(!v.agrees);
    let msg = v.mismatch.unwrap();
    assert!(
        msg.contains("[1, 8, 4]") && msg.contains("[1, 37, 4]"),
        "{msg}"
    );
    assert_eq!(v.outputs[0].max_abs_diff, None);
}

#[test]
fn dtype_and_output_count_mismatches_are_named() {
    let e = t(&[1.0, 2.0]);
    let v = compare_outputs(&[e.shallow_clone()], &[e.to_kind(Kind::Half)], None, None);
    assert!(!v.agrees);
    assert!(v.mismatch.unwrap().contains("f16 where eager returned f32"));
    let v = compare_outputs(
        &[e.shallow_clone()],
        &[e.shallow_clone(), e.shallow_clone()],
        None,
        None,
    );
    assert!(!v.agrees);
    assert!(v
        .mismatch
        .unwrap()
        .contains("2 outputs where eager returned 1"));
}

#[test]
fn nan_matches_nan_but_not_a_number() {
    let e = t(&[1.0, f32::NAN, f32::INFINITY]);
    let same = compare_outputs(&[e.shallow_clone()], &[e.copy()], None, None);
    assert!(same.agrees, "{same:?}");
    assert_eq!(same.outputs[0].eager_non_finite, 2);
    let c = t(&[1.0, 0.0, f32::INFINITY]);
    let v = compare_outputs(&[e.shallow_clone()], &[c], None, None);
    assert!(!v.agrees);
    assert_eq!(v.outputs[0].non_finite_mismatch, 1);
    let c = t(&[1.0, f32::NAN, f32::NEG_INFINITY]);
    let v = compare_outputs(&[e], &[c], None, None);
    assert_eq!(v.outputs[0].non_finite_mismatch, 1);
}

#[test]
fn default_tolerances_follow_torch_testing() {
    for (kind, rtol, atol) in [
        (Kind::Float, 1.3e-6, 1e-5),
        (Kind::Half, 1e-3, 1e-5),
        (Kind::BFloat16, 1.6e-2, 1e-5),
        (Kind::Double, 1e-7, 1e-7),
        (Kind::Int64, 0.0, 0.0),
    ] {
        assert_eq!(
            Tolerance::for_kind(kind),
            Tolerance { rtol, atol },
            "{kind:?}"
        );
    }
    // bf16's looser tolerance accepts a 1% difference that f32's would not.
    let e = t(&[100.0, 200.0]);
    let c = t(&[101.0, 201.0]);
    let bf = compare_outputs(
        &[e.to_kind(Kind::BFloat16)],
        &[c.to_kind(Kind::BFloat16)],
        None,
        None,
    );
    assert!(bf.agrees, "{bf:?}");
    assert!(!compare_outputs(&[e], &[c], None, None).agrees);
}

#[test]
fn a_float64_reference_accepts_a_compiled_output_no_less_accurate() {
    let reference = Tensor::from_slice(&[1.0f64, 2.0, 3.0]);
    // Eager is off by 1e-3; compiled by 1.5e-3 the other way: not allclose to eager,
    // but within twice eager's RMSE of the reference.
    let e = t(&[1.001, 2.001, 3.001]);
    let c = t(&[0.9985, 1.9985, 2.9985]);
    let v = compare_outputs(
        &[e.shallow_clone()],
        &[c],
        None,
        Some(&[reference.shallow_clone()]),
    );
    let o = &v.outputs[0];
    assert!(!o.allclose);
    let r = o.reference.unwrap();
    assert!((r.rmse_ratio.unwrap() - 1.5).abs() < 0.01, "{r:?}");
    assert!(r.within && v.agrees);
    // Ten times eager's error is not.
    let c = t(&[1.01, 2.01, 3.01]);
    let v = compare_outputs(&[e], &[c], None, Some(&[reference]));
    assert!(!v.outputs[0].reference.unwrap().within);
    assert!(!v.agrees);
}

#[test]
fn repeat_agreement_reports_identical_runs() {
    let e = Tensor::randn([16], (Kind::Float, Device::Cpu));
    assert_eq!(
        repeat_agreement(&[e.shallow_clone()], &[e.copy()], None),
        (0.0, true, true)
    );
    let (max_abs, identical, agrees) = repeat_agreement(&[e.shallow_clone()], &[&e + 1.0], None);
    assert!((max_abs - 1.0).abs() < 1e-6);
    assert!(!identical && !agrees);
}

#[test]
fn request_labels_name_shape_and_dtype() {
    let one = Request::from(Tensor::zeros([1, 37, 256], (Kind::Float, Device::Cpu)));
    assert_eq!(one.shape_label(), "[1, 37, 256] f32");
    let two = Request::from((
        Tensor::zeros([2, 5], (Kind::Int64, Device::Cpu)),
        Tensor::zeros([2, 5], (Kind::Bool, Device::Cpu)),
    ));
    assert_eq!(two.shape_label(), "([2, 5] i64, [2, 5] bool)");
}

#[test]
fn inputs_off_the_exported_shapes_are_named() {
    let x = |n: i64| vec![Tensor::zeros([1, n, 4], (Kind::Float, Device::Cpu))];
    let fixed = vec![vec![Some(1), Some(8), Some(4)]];
    assert_eq!(input_mismatch(&fixed, &x(8)), InputCheck::Fine);
    match input_mismatch(&fixed, &x(12)) {
        InputCheck::Mismatch { note, run } => {
            assert!(
                note.contains("[1, 12, 4]") && note.contains("[1, 8, 4]"),
                "{note}"
            );
            assert!(run, "a larger input can be read safely");
        }
        other => panic!("{other:?}"),
    }
    match input_mismatch(&fixed, &x(5)) {
        InputCheck::Mismatch { note, run } => {
            assert!(!run, "a smaller input would be read past its end");
            assert!(note.contains("read past the end"), "{note}");
        }
        other => panic!("{other:?}"),
    }
    let dynamic = vec![vec![Some(1), None, Some(4)]];
    assert_eq!(input_mismatch(&dynamic, &x(37)), InputCheck::Fine);
    let wide = vec![Tensor::zeros([1, 37, 5], (Kind::Float, Device::Cpu))];
    assert!(matches!(
        input_mismatch(&dynamic, &wide),
        InputCheck::Mismatch { run: false, .. }
    ));
}

fn cost(eager: (f64, f64), compiled: (f64, f64)) -> ShapeCost {
    ShapeCost {
        shape: "s".into(),
        requests: 1,
        warm_calls: 5,
        eager_cold_ns: eager.0,
        eager_warm_ns: eager.1,
        compiled_cold_ns: Some(compiled.0),
        compiled_warm_ns: Some(compiled.1),
        respecialised: false,
    }
}

#[test]
fn respecialisation_needs_a_large_excess_of_its_own() {
    // 30 ms first call against a 0.2 ms steady call, eager flat: re-specialised.
    assert!(respecialised(&cost((2e5, 2e5), (3e7, 2e5))));
    // Eager paid as much at its own first call: a shared cost, not the compiled one's.
    assert!(!respecialised(&cost((3e7, 2e5), (3e7, 2e5))));
    // Large ratio but a tiny excess: timer noise on a fast call.
    assert!(!respecialised(&cost((1e4, 1e4), (5e4, 1e4))));
    // Large excess but under the ratio on a slow call.
    assert!(!respecialised(&cost((1e7, 1e7), (2e7, 1e7))));
}

#[test]
fn the_flag_needs_two_shapes_or_the_only_one() {
    let mut costs = vec![cost((1.0, 1.0), (1.0, 1.0)); 4];
    costs[1].respecialised = true;
    assert_eq!(
        respecialise_flag(&costs),
        None,
        "one of three new shapes is noise"
    );
    costs[2].respecialised = true;
    assert_eq!(
        respecialise_flag(&costs),
        Some(EagerCompiledFlag::RespecialisesPerShape { shapes: 2, of: 3 })
    );
    let mut single = vec![cost((1.0, 1.0), (1.0, 1.0)); 2];
    single[1].respecialised = true;
    assert_eq!(
        respecialise_flag(&single),
        Some(EagerCompiledFlag::RespecialisesPerShape { shapes: 1, of: 1 })
    );
    // The first shape's cold call is the first-call cost, never a re-specialisation.
    let mut first_only = vec![cost((1.0, 1.0), (1.0, 1.0)); 3];
    first_only[0].respecialised = true;
    assert_eq!(respecialise_flag(&first_only), None);
}

fn steady(point: f64, lower: f64, upper: f64) -> SteadyState {
    SteadyState {
        passes_per_sample: 10,
        requests: 1,
        eager: vec![],
        compiled: vec![],
        speedup: Estimate {
            point,
            lower,
            upper,
            confidence: 0.95,
        },
        eager_ns_per_call: 2e6,
        compiled_ns_per_call: 1e6,
        stop_reason: StopReason::Converged,
    }
}

#[test]
fn break_even_divides_the_compile_cost_by_the_saving() {
    let costs = vec![cost((1e6, 1e6), (11e6, 1e6)), cost((1e6, 1e6), (6e6, 1e6))];
    let c = compile_cost(Some(80e6), &costs, &steady(2.0, 1.9, 2.1), 1e6, 13);
    assert_eq!(c.first_call_excess_ns, 10e6);
    assert_eq!(c.new_shape_excess_ns, 5e6);
    assert_eq!(c.total_ns, 95e6);
    assert_eq!(c.break_even_calls, Some(95));
    // Not significantly faster: it never pays off.
    let c = compile_cost(Some(80e6), &costs, &steady(1.01, 0.98, 1.04), 1e4, 13);
    assert_eq!(c.break_even_calls, None);
}

fn record_with(steady_state: SteadyState, break_even: Option<u64>, expected: u64) -> EagerCompiled {
    let costs = vec![cost((1e6, 1e6), (1e6, 1e6))];
    let mut cc = compile_cost(Some(1e6), &costs, &steady_state, 1e6, expected);
    cc.break_even_calls = break_even;
    EagerCompiled {
        eager: VariantInfo::new("eager", VariantKind::Eager),
        compiled: VariantInfo::new("traced", VariantKind::TorchscriptTrace),
        device_timer: false,
        requests: vec![],
        shape_costs: costs,
        agreement: vec![ShapeAgreement {
            shape: "s".into(),
            requests: vec![0],
            agrees: true,
            mismatch: None,
            outputs: vec![],
            eager_repeat_max_abs_diff: 0.0,
            eager_repeat_identical: true,
            eager_repeat_agrees: true,
        }],
        steady: Some(steady_state),
        compile_cost: Some(cc),
        flags: vec![],
    }
}

#[test]
fn flags_follow_speed_and_traffic() {
    let fast = record_with(steady(2.0, 1.9, 2.1), Some(10), 100);
    assert_eq!(flags(&fast), vec![]);
    let too_little_traffic = record_with(steady(2.0, 1.9, 2.1), Some(1000), 100);
    assert_eq!(
        flags(&too_little_traffic),
        vec![EagerCompiledFlag::NotWorthCompiling {
            break_even_calls: Some(1000),
            expected_calls: 100
        }]
    );
    let slower = record_with(steady(0.5, 0.45, 0.55), None, 100);
    let f = flags(&slower);
    assert_eq!(f[0], EagerCompiledFlag::CompiledSlower { speedup: 0.5 });
    assert!(f.iter().any(|f| f.kind() == FlagKind::NotWorthCompiling));
    // Within noise of eager: not called slower.
    let even = record_with(steady(0.99, 0.95, 1.03), None, 100);
    assert!(!flags(&even)
        .iter()
        .any(|f| f.kind() == FlagKind::CompiledSlower));
}

#[test]
fn the_printed_summary_names_flags_and_mismatched_shapes() {
    let mut r = record_with(steady(0.5, 0.45, 0.55), None, 13);
    r.agreement[0].agrees = false;
    r.agreement[0].mismatch =
        Some("compiled returned [1, 8, 4] where eager returned [1, 37, 4]".into());
    r.flags = flags(&r);
    let text = super::summary(&r);
    assert!(text.contains("eager vs traced"), "{text}");
    assert!(text.contains("speedup 0.500× [0.450× 0.550×]"), "{text}");
    assert!(
        text.contains("s: compiled returned [1, 8, 4] where eager returned [1, 37, 4]"),
        "{text}"
    );
    assert!(text.contains("outputs disagree at 1 of 1 shapes"), "{text}");
    assert!(
        text.contains("compiled slower (0.50× eager's speed)"),
        "{text}"
    );
    assert!(text.contains("never pays off"), "{text}");
}
