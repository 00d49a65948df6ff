//! The comparison's flags on planted effects: outputs that disagree, a compiled
//! variant that is slower, one that pays a large cost at every new shape, and one
//! that never pays for its compile time.

mod eager_compiled_common;

use std::collections::HashSet;
use std::rc::Rc;
use std::time::Duration;

use eager_compiled_common::{
    fast_config, in_one_of_three, input, run_on_cpu, serial, smoke_config, spin, Mlp,
};
use gpubench_core::__private::device::TorchDevice;
use gpubench_core::eager_compiled::{Compiled, EagerVsCompiled};
use gpubench_core::Bencher;
use gpubench_record::eager_compiled::{EagerCompiledFlag, FlagKind};
use tch::{Device, Tensor};

#[test]
fn a_compiled_variant_that_adds_a_hundredth_disagrees() {
    let _serial = serial();
    let mlp = Mlp::new(32, 64);
    let stream = vec![input(4, 32), input(9, 32), input(4, 32)];
    let outcome = run_on_cpu(
        EagerVsCompiled::new(|xs: &[Tensor]| mlp.forward(xs))
            .compiled(Compiled::closure("plus 1e-2", |xs: &[Tensor]| {
                mlp.forward(xs) + 1e-2
            }))
            .inputs(stream),
        &smoke_config(),
    );
    let c = &outcome.record;
    assert_eq!(
        c.flag(FlagKind::OutputsDisagree),
        Some(&EagerCompiledFlag::OutputsDisagree { shapes: 2, of: 2 })
    );
    for row in &c.agreement {
        assert!(!row.agrees);
        let o = &row.outputs[0];
        assert!(!o.allclose);
        assert!((o.max_abs_diff.unwrap() - 1e-2).abs() < 1e-5, "{o:?}");
        // Eager itself is repeatable: the disagreement is the compiled variant's.
        assert!(row.eager_repeat_agrees);
    }
    assert!(!c.has_flag(FlagKind::CompiledFailed));
}

#[test]
fn a_float64_reference_is_compared_with_both() {
    let _serial = serial();
    let mlp = Mlp::new(16, 32);
    let mut mlp64 = Mlp::new(16, 32);
    mlp64.vs.copy(&mlp.vs).unwrap();
    mlp64.vs.double();
    let outcome = run_on_cpu(
        EagerVsCompiled::new(|xs: &[Tensor]| mlp.forward(xs))
            .compiled(Compiled::closure("plus 1e-2", |xs: &[Tensor]| {
                mlp.forward(xs) + 1e-2
            }))
            .reference_f64(|xs: &[Tensor]| mlp64.forward(xs))
            .inputs(vec![input(4, 16), input(8, 16)]),
        &smoke_config(),
    );
    for row in &outcome.record.agreement {
        let r = row.outputs[0].reference.expect("reference compared");
        assert!(r.eager_rmse < 1e-5, "{r:?}");
        assert!((r.compiled_rmse - 1e-2).abs() < 1e-4, "{r:?}");
        assert!(r.rmse_ratio.unwrap() > 100.0 && !r.within);
        assert!(!row.agrees);
    }
}

#[test]
fn a_deliberately_slower_compiled_variant_is_flagged() {
    let _serial = serial();
    let mlp = Mlp::new(64, 128);
    let x = input(16, 64);
    in_one_of_three(|| {
        let outcome = run_on_cpu(
            EagerVsCompiled::new(|xs: &[Tensor]| mlp.forward(xs))
                .compiled(Compiled::closure("slow", |xs: &[Tensor]| {
                    spin(Duration::from_millis(2));
                    mlp.forward(xs)
                }))
                .input(&x),
            &fast_config(),
        );
        let c = &outcome.record;
        let speedup = c.steady.as_ref().unwrap().speedup;
        if !c.has_flag(FlagKind::CompiledSlower) {
            return Err(format!(
                "not flagged slower: speedup {speedup:?}, flags {:?}",
                c.flags
            ));
        }
        if speedup.upper >= 0.5 {
            return Err(format!("speedup {speedup:?} should be far below 1"));
        }
        if !c.has_flag(FlagKind::NotWorthCompiling) {
            return Err(format!("a slower variant never pays off: {:?}", c.flags));
        }
        if !c.agrees() {
            return Err(format!("the outputs are the same: {:?}", c.agreement));
        }
        Ok(())
    });
}

/// A "compiled" variant that pays 30 ms the first time it sees each shape, like a
/// compiler that re-specialises per input shape.
#[test]
fn per_shape_cold_calls_are_detected_and_counted() {
    let _serial = serial();
    let mlp = Mlp::new(32, 64);
    let batches = [4, 8, 4, 12, 8, 16, 12, 16];
    in_one_of_three(|| {
        let mut seen = HashSet::new();
        let stream: Vec<Tensor> = batches.iter().map(|&b| input(b, 32)).collect();
        let outcome = run_on_cpu(
            EagerVsCompiled::new(|xs: &[Tensor]| mlp.forward(xs))
                .compiled(Compiled::closure("respecialising", |xs: &[Tensor]| {
                    if seen.insert(xs[0].size()) {
                        spin(Duration::from_millis(30));
                    }
                    mlp.forward(xs)
                }))
                .inputs(stream),
            &fast_config(),
        );
        let c = &outcome.record;
        let cold: Vec<usize> = c
            .requests
            .iter()
            .filter(|r| r.cold)
            .map(|r| r.index)
            .collect();
        if cold != vec![0, 1, 3, 5] {
            return Err(format!("cold requests {cold:?}"));
        }
        let flag = c.flag(FlagKind::RespecialisesPerShape);
        if flag != Some(&EagerCompiledFlag::RespecialisesPerShape { shapes: 3, of: 3 }) {
            return Err(format!("flag {flag:?}; shape costs {:#?}", c.shape_costs));
        }
        let costs = c.compile_cost.as_ref().unwrap();
        if costs.new_shape_excess_ns < 3.0 * 25e6 {
            return Err(format!("new-shape excess {costs:?}"));
        }
        // The first shape's 30 ms is the first-call cost, not a re-specialisation.
        if c.shape_costs[0].respecialised || costs.first_call_excess_ns < 25e6 {
            return Err(format!(
                "first shape {:?}, cost {costs:?}",
                c.shape_costs[0]
            ));
        }
        Ok(())
    });
}

#[test]
fn a_variant_without_per_shape_costs_is_not_flagged() {
    let _serial = serial();
    let mlp = Mlp::new(32, 64);
    let batches = [4, 8, 4, 12, 8, 16, 12, 16];
    in_one_of_three(|| {
        let stream: Vec<Tensor> = batches.iter().map(|&b| input(b, 32)).collect();
        let outcome = run_on_cpu(
            EagerVsCompiled::new(|xs: &[Tensor]| mlp.forward(xs))
                .compiled(Compiled::closure("same", |xs: &[Tensor]| mlp.forward(xs)))
                .inputs(stream),
            &fast_config(),
        );
        let c = &outcome.record;
        match c.flag(FlagKind::RespecialisesPerShape) {
            None => Ok(()),
            Some(f) => Err(format!("{f:?}; shape costs {:#?}", c.shape_costs)),
        }
    });
}

#[test]
fn bencher_compare_records_the_compiled_measurement() {
    let _serial = serial();
    let mlp = Mlp::new(16, 16);
    let device = Rc::new(TorchDevice::new(Device::Cpu));
    let mut b = Bencher::new("cmp", device, smoke_config());
    let record = b.eager_compiled(
        EagerVsCompiled::new(|xs: &[Tensor]| mlp.forward(xs))
            .compiled(Compiled::trace())
            .input(input(2, 16)),
    );
    assert!(record.agrees());
    assert_eq!(record.requests.len(), 1);
}

#[test]
#[should_panic(expected = "failed to compare eager with model")]
fn bencher_compare_fails_the_benchmark_when_the_variant_cannot_load() {
    let _serial = serial();
    let device = Rc::new(TorchDevice::new(Device::Cpu));
    let mut b = Bencher::new("cmp", device, smoke_config());
    b.eager_compiled(
        EagerVsCompiled::new(|xs: &[Tensor]| xs[0].shallow_clone())
            .compiled(Compiled::load("/nonexistent/model.pt"))
            .input(input(2, 2)),
    );
}
