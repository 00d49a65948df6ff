//! Tests of [`super`].

use super::*;

pub(crate) fn sample_comparison() -> EagerCompiled {
    let timing = CallTiming {
        wall_ns: 2e6,
        host_ns: 1e5,
        device_ns: Some(1.9e6),
    };
    EagerCompiled {
        eager: VariantInfo::new("eager", VariantKind::Eager),
        compiled: VariantInfo {
            build_ns: Some(8e7),
            metadata: [("AOTI_DEVICE_KEY".to_string(), "cuda".to_string())].into(),
            exported_input_shapes: Some(vec![vec![Some(1), None, Some(256)]]),
            ..VariantInfo::new("aoti dynamic", VariantKind::AotiPackage)
        },
        device_timer: true,
        requests: vec![RequestTiming {
            index: 0,
            shape: "[1, 37, 256] f32".into(),
            cold: true,
            eager: timing,
            compiled: Some(timing),
        }],
        shape_costs: vec![],
        agreement: vec![ShapeAgreement {
            shape: "[1, 37, 256] f32".into(),
            requests: vec![0],
            agrees: false,
            mismatch: Some(
                "compiled returned [1, 8, 256] where eager returned [1, 37, 256]".into(),
            ),
            outputs: vec![],
            eager_repeat_max_abs_diff: 0.0,
            eager_repeat_identical: true,
            eager_repeat_agrees: true,
        }],
        steady: None,
        compile_cost: None,
        flags: vec![
            EagerCompiledFlag::OutputsDisagree { shapes: 1, of: 1 },
            EagerCompiledFlag::NotWorthCompiling {
                break_even_calls: None,
                expected_calls: 13,
            },
        ],
    }
}

#[test]
fn comparison_round_trips_through_json() {
    let c = sample_comparison();
    let json = serde_json::to_string_pretty(&c).unwrap();
    let back: EagerCompiled = serde_json::from_str(&json).unwrap();
    assert_eq!(c, back);
    // Flags are tagged objects a reader can pick out by `kind`.
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["flags"][0]["kind"], "outputs_disagree");
    assert_eq!(v["compiled"]["kind"], "aoti_package");
    assert!(v["compiled"]["exported_input_shapes"][0][1].is_null());
}

#[test]
fn verdict_helpers_read_the_flags_and_rows() {
    let c = sample_comparison();
    assert!(!c.agrees());
    assert!(c.has_flag(FlagKind::OutputsDisagree));
    assert!(!c.has_flag(FlagKind::CompiledSlower));
    let described = c.flag(FlagKind::NotWorthCompiling).unwrap().describe();
    assert_eq!(
        described,
        "not worth compiling at 13 calls (never pays off)"
    );
}
