//! Tests of [`super`]: what the report says of an `ab` comparison.

use super::build_all;
use crate::compare::paired_fixture::{ab_comparison, ab_records, ADD, MATMUL, MLP};
use crate::output::html::input::ReportInput;
use gpubench_analysis::{BaselineEntry, CompareConfig};

/// The views of the paired fixture's report.
fn ab_views() -> super::Views {
    let (base, _) = ab_records();
    let (head, c) = ab_comparison(CompareConfig::default());
    let entries: Vec<BaselineEntry> = base
        .iter()
        .map(|r| BaselineEntry::from_record(r).unwrap())
        .collect();
    let input = ReportInput::new("gpubench ab", head).with_baseline("abc1234", &entries, &c.set);
    build_all(&input)
}

#[test]
fn the_report_shows_the_paired_threshold_certain_changes_and_what_ab_could_detect() {
    let views = ab_views();
    let row = |id: &str| {
        views
            .summary
            .rows
            .iter()
            .find(|r| r.id == id)
            .unwrap_or_else(|| panic!("no {id}"))
    };
    // The summary's change cell: the interval, a certain change under the
    // threshold, the smallest change each could have detected.
    assert_eq!(
        row(MLP).change.detail,
        "+1.7% to +1.8%; could detect ±1.02%"
    );
    assert_eq!(
        row(MATMUL).change.detail,
        "+0.6% to +0.6%; certain, under ±1%; could detect ±1.04%"
    );
    assert_eq!(
        row(ADD).change.detail,
        "−0.3% to +0.3%; could detect ±1.30%"
    );
    // A benchmark's page: the paired threshold that judged it, and what it could
    // have detected, the threshold plus the interval's half-width.
    let facts = |id: &str| {
        views
            .benchmarks
            .iter()
            .find(|b| b.id == id)
            .unwrap_or_else(|| panic!("no {id}"))
            .facts
            .key_facts
            .clone()
    };
    let mlp = facts(MLP);
    let change = mlp
        .iter()
        .find(|f| f.label == "change vs baseline")
        .unwrap();
    assert!(
        change
            .detail
            .ends_with("paired noise threshold ±1.0% (--paired-noise-threshold)"),
        "{change:?}"
    );
    let detect = mlp.iter().find(|f| f.label == "could detect").unwrap();
    assert_eq!(detect.value, "±1.02%");
    assert!(
        detect
            .detail
            .contains("the threshold ±1.00% plus the interval's half-width ±0.02%"),
        "{detect:?}"
    );
    let matmul = facts(MATMUL);
    let change = matmul
        .iter()
        .find(|f| f.label == "change vs baseline")
        .unwrap();
    assert!(
        change
            .detail
            .ends_with("; certain, but under the threshold: no change"),
        "{change:?}"
    );
}
