//! Tests of [`super`].

use super::*;
use crate::store::manifest::Selection;
use crate::store::SourceKind;
use gpubench_analysis::synthetic::{GpuLikeSamples, ProcessShift};
use gpubench_record::failure::{Failure, FailureKind};
use rand::SeedableRng;
use rand_pcg::Pcg64Mcg;

pub(crate) fn settings(fail_on: FailOn, allow: bool) -> VerdictSettings {
    VerdictSettings {
        config: CompareConfig::default(),
        fail_on,
        allow_device_mismatch: allow,
        gate: Gate::default(),
        allow_settings_mismatch: false,
        allow_missing: Default::default(),
    }
}

pub(crate) fn source() -> Source {
    Source {
        kind: SourceKind::Baseline,
        name: "main".into(),
        path: "/ws/gpubench/baselines/main".into(),
        default: true,
        device: None,
    }
}

pub(crate) fn records(ids: &[&str], device: &str, factor: f64, seed: u64) -> Vec<RawRecord> {
    let mut rng = Pcg64Mcg::seed_from_u64(seed);
    let model = GpuLikeSamples::default()
        .with_shift(ProcessShift::LogNormal { sigma: 0.005 })
        .scaled(factor);
    ids.iter()
        .map(|id| model.record_processes(id, device, 3, 30, &mut rng))
        .collect()
}

pub(crate) fn entries(records: &[RawRecord]) -> Vec<BaselineEntry> {
    records
        .iter()
        .map(|r| BaselineEntry::from_record(r).unwrap())
        .collect()
}

#[test]
fn another_device_is_not_compared_unless_allowed_and_says_both_devices() {
    let base = entries(&records(&["mm", "conv"], "NVIDIA A100", 1.0, 1));
    let now = records(&["mm", "conv"], "NVIDIA H200", 1.5, 2);
    let c =
        RunComparison::judge(&now, &base, source(), settings(FailOn::Regressed, false)).unwrap();
    assert_eq!(c.counts.not_compared, 2);
    // Not compared is no verdict, but missing evidence: it trips the gate...
    assert!(c.tripping().is_empty());
    assert!(c.gate_tripped);
    // ...unless --allow-missing not-compared lets it pass.
    let let_pass = VerdictSettings {
        allow_missing: AllowMissing::of(&[MissingKind::NotCompared]),
        ..settings(FailOn::Regressed, false)
    };
    let passed = RunComparison::judge(&now, &base, source(), let_pass).unwrap();
    assert!(!passed.gate_tripped && passed.missing.len() == 2);
    assert_eq!(c.baseline.device.as_deref(), Some("NVIDIA A100"));
    assert_eq!(c.current_device.as_deref(), Some("NVIDIA H200"));
    let msg = c.device_mismatch_message().unwrap();
    assert!(
        msg.contains(
            "baseline `main` was recorded on `NVIDIA A100` but this run is on `NVIDIA H200`"
        ) && msg.contains("2 benchmarks were not compared")
            && msg.contains("--allow-device-mismatch"),
        "{msg}"
    );
    let report_only =
        RunComparison::judge(&now, &base, source(), settings(FailOn::Never, false)).unwrap();
    assert!(!report_only.gate_tripped && report_only.missing.len() == 2);

    let allowed =
        RunComparison::judge(&now, &base, source(), settings(FailOn::Regressed, true)).unwrap();
    assert_eq!(allowed.counts.regressed, 2);
    assert!(allowed.gate_tripped && allowed.device_mismatch.is_empty());
    assert_eq!(allowed.set.cross_device.len(), 2);
    assert!(allowed.device_mismatch_message().is_none());
}

#[test]
fn stored_with_a_copy_of_the_baseline_and_read_back() {
    let base_records = records(&["mm", "gone", "broke"], "GPU", 1.0, 3);
    let base = entries(&base_records);
    let mut now = records(&["mm", "new"], "GPU", 1.0, 4);
    now.push(records(&["broke"], "GPU", 1.0, 5).remove(0));
    now[2].processes[0].measurement = None;
    now[2].processes[0].failure = Some(Failure::new(FailureKind::Panic, "boom"));
    let c =
        RunComparison::judge(&now, &base, source(), settings(FailOn::Regressed, false)).unwrap();
    assert_eq!((c.counts.no_change, c.counts.failed), (1, 1));
    assert!(c.is_new("new") && !c.is_new("mm"));
    assert_eq!(c.set.missing_in_current, ["gone"]);
    assert_eq!(c.missing.len(), 1);
    assert_eq!(
        (c.missing[0].id.as_str(), c.missing[0].kind),
        ("gone", MissingKind::Gone)
    );

    let tmp = tempfile::tempdir().unwrap();
    assert_eq!(RunComparison::read(tmp.path()).unwrap(), None);
    c.store(tmp.path(), &base).unwrap();
    assert_eq!(RunComparison::read(tmp.path()).unwrap(), Some(c.clone()));
    let copy = gpubench_analysis::BaselineStore::new(tmp.path())
        .load(BASELINE_COPY)
        .unwrap();
    let mut sorted = base.clone();
    sorted.sort_by(|a, b| a.id.cmp(&b.id));
    assert_eq!(copy, sorted);

    let text = std::fs::read_to_string(tmp.path().join(COMPARISON_FILE)).unwrap();
    let newer = text.replacen("\"format_version\": 1", "\"format_version\": 7", 1);
    std::fs::write(tmp.path().join(COMPARISON_FILE), newer).unwrap();
    let err = RunComparison::read(tmp.path()).unwrap_err().to_string();
    assert!(
        err.contains("format_version 7") && err.contains("upgrade"),
        "{err}"
    );
}

#[test]
fn a_baseline_benchmark_the_run_lacks_is_not_selected_not_run_or_gone() {
    let base = entries(&records(
        &["ran", "filtered", "other_part", "killed", "removed"],
        "GPU",
        1.0,
        6,
    ));
    let now = records(&["ran"], "GPU", 1.0, 7);
    let absences = |all_targets: bool, merged: bool| Absences {
        side: "run `r`".into(),
        not_run: vec![(
            "killed".into(),
            "run `r` was interrupted before it ran".into(),
        )],
        selection: Some(Selection {
            all_targets,
            filtered_out: vec!["filtered".into()],
            other_parts: vec!["other_part".into()],
        }),
        merged,
        unusable_baseline: Vec::new(),
    };
    let judge = |a: &Absences| {
        RunComparison::judge_with(&now, &base, source(), settings(FailOn::Regressed, false), a)
            .unwrap()
    };
    let kinds = |c: &RunComparison| -> Vec<(String, MissingKind)> {
        c.missing.iter().map(|m| (m.id.clone(), m.kind)).collect()
    };

    // A run of every bench target: the one it never reached is not run, the one no
    // target lists is gone; a filter's and another part's are not selected.
    let c = judge(&absences(true, false));
    assert_eq!(
        kinds(&c),
        [
            ("killed".to_string(), MissingKind::NotRun),
            ("removed".to_string(), MissingKind::Gone)
        ]
    );
    assert_eq!(c.not_selected, ["filtered", "other_part"]);
    assert!(c.gate_tripped && c.tripping().is_empty());
    assert!(c.missing[1]
        .reason
        .ends_with("delete /ws/gpubench/baselines/main/removed.json from the baseline"));

    // With -p, --bench or --exe choosing targets, one no target listed may be in a
    // target not chosen: not selected.
    let c = judge(&absences(false, false));
    assert_eq!(kinds(&c), [("killed".to_string(), MissingKind::NotRun)]);
    assert_eq!(c.not_selected, ["filtered", "other_part", "removed"]);

    // In a merged run, another part's benchmark is one whose part is missing.
    let c = judge(&absences(false, true));
    assert_eq!(
        kinds(&c),
        [
            ("killed".to_string(), MissingKind::NotRun),
            ("other_part".to_string(), MissingKind::NotRun)
        ]
    );

    // Allowed kinds pass; the rest still trip.
    let only_not_run = VerdictSettings {
        allow_missing: AllowMissing::of(&[MissingKind::NotRun]),
        ..settings(FailOn::Regressed, false)
    };
    let c = RunComparison::judge_with(&now, &base, source(), only_not_run, &absences(true, false))
        .unwrap();
    assert!(c.gate_tripped, "gone is not allowed");
    assert_eq!(c.missing_tripping().len(), 1);
    assert_eq!(c.missing_tripping()[0].id, "removed");
}

#[test]
fn a_benchmark_the_baseline_side_cannot_offer_is_not_compared_rather_than_new() {
    let base = entries(&records(&["mm"], "GPU", 1.0, 8));
    let now = records(&["mm", "broke_there"], "GPU", 1.0, 9);
    let absences = Absences {
        side: "run `r`".into(),
        unusable_baseline: vec![("broke_there".into(), "it failed there".into())],
        ..Absences::default()
    };
    let c = RunComparison::judge_with(
        &now,
        &base,
        source(),
        settings(FailOn::Regressed, false),
        &absences,
    )
    .unwrap();
    assert!(!c.is_new("broke_there"));
    assert_eq!(c.missing.len(), 1);
    assert_eq!(c.missing[0].kind, MissingKind::NotCompared);
    assert!(c.missing[0]
        .reason
        .contains("has no usable measurement of it: it failed there"));
    assert!(c.gate_tripped);
}
