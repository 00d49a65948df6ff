//! Tests of [`super`]: a comparison in words, on the judge's own fixtures.

use gpubench_analysis::energy::EnergySummary;
use gpubench_analysis::peaks::PeakShare;
use gpubench_analysis::summary::PowerCapped;
use gpubench_analysis::{BenchmarkSummary, FailOn};
use gpubench_record::estimate::Estimate;
use gpubench_record::failure::{Failure, FailureKind};
use gpubench_record::measurement::Throughput;

use crate::compare::tests::{entries, records, settings, source};
use crate::compare::{Absences, RunComparison};
use crate::format::percent;
use crate::output::view::metrics::change_text;
use crate::output::view::words::{counts_text, trip_headline, tripping_reasons};

/// `s` with the figures of the H200's 8192² bf16 matmul back to back: power-capped
/// in 38% of its samples at the 700 W limit, 1.6132 ms per call at a 1681.6 MHz SM
/// clock (75.0% of the bf16 peak there), and 1.16 J per call at 705 W, 83 W idle.
pub(crate) fn with_power_and_peak(s: &mut BenchmarkSummary) {
    s.conditions.power_capped = Some(PowerCapped {
        share: 0.38,
        samples: 91,
        power_limit_w: Some(700.0),
    });
    s.peak = PeakShare::of(
        "NVIDIA H200",
        Throughput::Flops(2.0 * 8192f64.powi(3)),
        1.6132e6,
        Some("bf16"),
        Some(1681.6),
        None,
    );
    s.energy = Some(EnergySummary {
        joules_per_call: 1.16,
        per_process_joules: vec![1.15, 1.16, 1.17],
        power_w: 705.0,
        idle_w: Some(83.0),
        windows: 9,
        window_s: 0.3,
        steps: 27,
        window_spread: 0.03,
    });
}

#[test]
fn benchmarks_not_compared_trip_the_gate_as_not_compared() {
    let base = entries(&records(&["mm", "conv"], "NVIDIA A100", 1.0, 1));
    let now = records(&["mm", "conv"], "NVIDIA H200", 1.5, 2);
    let c =
        RunComparison::judge(&now, &base, source(), settings(FailOn::Regressed, false)).unwrap();
    assert_eq!(
        tripping_reasons(&c),
        [
            ("mm", "not compared".to_string()),
            ("conv", "not compared".to_string())
        ]
    );
    assert_eq!(trip_headline(&c), "missing evidence");
    let allowed =
        RunComparison::judge(&now, &base, source(), settings(FailOn::Regressed, true)).unwrap();
    assert_eq!(trip_headline(&allowed), "regression found");
    assert_eq!(
        tripping_reasons(&allowed),
        [
            ("mm", "time regressed".to_string()),
            ("conv", "time regressed".to_string())
        ]
    );
}

#[test]
fn the_counts_name_failed_new_and_missing_benchmarks() {
    let base = entries(&records(&["mm", "gone", "broke"], "GPU", 1.0, 3));
    let mut now = records(&["mm", "new"], "GPU", 1.0, 4);
    now.push(records(&["broke"], "GPU", 1.0, 5).remove(0));
    now[2].processes[0].measurement = None;
    now[2].processes[0].failure = Some(Failure::new(FailureKind::Panic, "boom"));
    let c =
        RunComparison::judge(&now, &base, source(), settings(FailOn::Regressed, false)).unwrap();
    assert_eq!(counts_text(&c), "1 no change, 1 failed, 1 new, 1 missing");
    let nothing = RunComparison::judge_with(
        &[],
        &[],
        source(),
        settings(FailOn::Regressed, false),
        &Absences::default(),
    )
    .unwrap();
    assert_eq!(counts_text(&nothing), "nothing to compare");
}

#[test]
fn percentages_read_well() {
    assert_eq!(percent(0.1234), "+12.3%");
    assert_eq!(percent(-0.0004), "+0.0%");
    assert_eq!(percent(-0.05), "-5.0%");
    assert_eq!(percent(1.0), "+100.0%");
    let e = Estimate {
        point: 0.5,
        lower: 0.48,
        upper: 0.521,
        confidence: 0.95,
    };
    assert_eq!(change_text(&e), "+50.0% [+48.0%, +52.1%]");
    let wild = Estimate {
        point: 6.008,
        lower: -0.209,
        upper: 61.105,
        confidence: 0.9,
    };
    assert_eq!(change_text(&wild), "+600.8% (too noisy for an interval)");
}

#[test]
fn one_view_holds_the_rows_and_notes_every_output_lays_out() {
    use crate::output::view::notes::NoteKind;
    use crate::output::view::SummaryView;
    use crate::store::manifest::BenchStatus;
    use crate::store::references::SummaryEntry;
    use gpubench_analysis::BenchmarkSummary;

    let base = entries(&records(&["mm", "gone", "broke"], "GPU", 1.0, 3));
    let mut now = records(&["mm", "new"], "GPU", 1.0, 4);
    now.push(records(&["broke"], "GPU", 1.0, 5).remove(0));
    now[2].processes[0].measurement = None;
    now[2].processes[0].failure = Some(Failure::new(FailureKind::Panic, "boom"));
    let c =
        RunComparison::judge(&now, &base, source(), settings(FailOn::Regressed, false)).unwrap();
    let rows: Vec<SummaryEntry> = now
        .iter()
        .map(|r| SummaryEntry {
            name: format!("suite/{}", r.id),
            target: "suite".into(),
            id: r.id.clone(),
            status: if r.passed() {
                BenchStatus::Passed
            } else {
                BenchStatus::Failed
            },
            record: None,
            summary: Some(BenchmarkSummary::from_record(r)),
            comparison: None,
        })
        .collect();
    let view = SummaryView::build(&rows, Some(&c));
    let words: Vec<&str> = view.rows.iter().map(|r| r.word.text.as_str()).collect();
    assert_eq!(words, ["no change", "new", "failed"]);
    assert!(view.rows[0].unremarkable() && !view.rows[2].unremarkable());
    // Time is a column of its own; the other metrics one each where judged.
    assert!(view.rows[0].verdicts[0].metric == gpubench_analysis::baseline::Metric::Time);
    assert!(view
        .metric_columns
        .iter()
        .all(|m| view.rows[0].verdict(*m).is_some()));
    // Benchmarks are named as the run names them; a gone one by its id.
    let new = view.notes_of(&NoteKind::New);
    assert_eq!(new.len(), 1);
    assert_eq!(new[0].benchmarks, ["suite/new"]);
    let missing = view.notes_of(&NoteKind::Missing { allowed: false });
    assert_eq!(missing.len(), 1);
    assert_eq!(missing[0].benchmarks, ["gone"]);
    assert!(missing[0].text.starts_with("gone: "), "{}", missing[0].text);
    // Without a comparison there are no rows and no comparison notes.
    let plain = SummaryView::build(&rows, None);
    assert!(plain.rows.is_empty() && plain.metric_columns.is_empty());
    assert!(plain.notes_of(&NoteKind::New).is_empty());
}
