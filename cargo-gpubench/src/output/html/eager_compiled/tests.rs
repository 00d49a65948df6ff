//! Tests of [`super`].

use super::*;
use gpubench_record::eager_compiled::{
    CallTiming, EagerCompiledFlag, OutputAgreement, RequestTiming, VariantInfo, VariantKind,
};

fn call(ns: f64) -> CallTiming {
    CallTiming {
        wall_ns: ns * 1.01,
        host_ns: ns * 0.2,
        device_ns: Some(ns),
    }
}

fn comparison() -> EagerCompiled {
    let shapes = ["[1, 128]", "[1, 128]", "[4, 128]", "[4, 128]"];
    EagerCompiled {
        eager: VariantInfo::new("eager", VariantKind::Eager),
        compiled: VariantInfo::new("traced", VariantKind::TorchscriptTrace),
        device_timer: true,
        requests: shapes
            .iter()
            .enumerate()
            .map(|(i, s)| RequestTiming {
                index: i,
                shape: s.to_string(),
                cold: i % 2 == 0,
                eager: call(1e6),
                compiled: (i != 3).then(|| call(if i % 2 == 0 { 9e7 } else { 7e5 })),
            })
            .collect(),
        shape_costs: vec![],
        agreement: ["[1, 128]", "[4, 128]"]
            .iter()
            .enumerate()
            .map(|(i, s)| ShapeAgreement {
                shape: s.to_string(),
                requests: vec![2 * i, 2 * i + 1],
                agrees: i == 0,
                mismatch: None,
                outputs: vec![OutputAgreement {
                    index: 0,
                    eager_shape: vec![1, 128],
                    compiled_shape: vec![1, 128],
                    eager_dtype: "f32".into(),
                    compiled_dtype: "f32".into(),
                    max_abs_diff: Some(if i == 0 { 1e-7 } else { 0.5 }),
                    max_rel_diff: Some(1e-6),
                    rtol: 1e-5,
                    atol: 1e-6,
                    allclose: i == 0,
                    eager_non_finite: 0,
                    compiled_non_finite: 0,
                    non_finite_mismatch: 0,
                    reference: None,
                }],
                eager_repeat_max_abs_diff: 0.0,
                eager_repeat_identical: true,
                eager_repeat_agrees: true,
            })
            .collect(),
        steady: None,
        compile_cost: None,
        flags: vec![
            EagerCompiledFlag::RespecialisesPerShape { shapes: 1, of: 1 },
            EagerCompiledFlag::OutputsDisagree { shapes: 1, of: 2 },
        ],
    }
}

#[test]
fn view_reads_variants_agreement_and_flags() {
    let c = EagerCompiledView::new(&comparison());
    assert_eq!(c.variants[0].name, "eager");
    assert_eq!(c.variants[1].points.len(), 3, "a failed call leaves a gap");
    assert_eq!(c.variant_rows[1].cold, 2);
    assert_eq!(c.variant_rows[1].kind, "TorchScript trace");
    assert_eq!(c.agreement_summary, "1 of 2 shapes disagree");
    assert_eq!(c.disagreeing_rows, vec![1]);
    assert_eq!(c.agreement.rows[1][2], "0.500");
    assert!(c.disagrees);
    // Severe flags first.
    assert_eq!(c.flags[0].label, "outputs disagree at 1 of 2 shapes");
    assert!(c.flags[0].severe && !c.flags[1].severe);
    assert_eq!(c.requests.rows[3][3], "failed");
    assert!(c.speedup.is_none());
    let plot = c.latency_plot().unwrap();
    assert!(
        plot.y.log,
        "cold calls 100× the steady state want a log axis"
    );
    assert!(plot.to_svg().unwrap().contains("traced"));
}
