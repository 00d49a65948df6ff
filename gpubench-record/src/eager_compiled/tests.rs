//! Tests of [`super`].

use super::*;

use crate::testing::sample_comparison;

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
