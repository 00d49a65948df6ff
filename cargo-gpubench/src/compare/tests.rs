//! Tests of [`super`].

use super::*;
use crate::store::SourceKind;
use gpubench_analysis::synthetic::{GpuLikeSamples, ProcessShift};
use gpubench_analysis::{Failure, FailureKind};
use rand::SeedableRng;
use rand_pcg::Pcg64Mcg;

fn settings(fail_on: FailOn, allow: bool) -> VerdictSettings {
    VerdictSettings {
        config: CompareConfig::default(),
        fail_on,
        allow_device_mismatch: allow,
        gate: Gate::default(),
        allow_settings_mismatch: false,
    }
}

fn source() -> Source {
    Source {
        kind: SourceKind::Baseline,
        name: "main".into(),
        path: "/ws/gpubench/baselines/main".into(),
        default: true,
        device: None,
    }
}

fn records(ids: &[&str], device: &str, factor: f64, seed: u64) -> Vec<RawRecord> {
    let mut rng = Pcg64Mcg::seed_from_u64(seed);
    let model = GpuLikeSamples::default()
        .with_shift(ProcessShift::LogNormal { sigma: 0.005 })
        .scaled(factor);
    ids.iter()
        .map(|id| model.record_processes(id, device, 3, 30, &mut rng))
        .collect()
}

fn entries(records: &[RawRecord]) -> Vec<BaselineEntry> {
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
    assert!(!c.gate_tripped, "not compared is not a regression");
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
    let strict =
        RunComparison::judge(&now, &base, source(), settings(FailOn::Ambiguous, false)).unwrap();
    assert!(strict.gate_tripped);
    assert_eq!(strict.tripping(), ["mm", "conv"]);

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
    now[2].rounds[0].measurement = None;
    now[2].rounds[0].failure = Some(Failure::new(FailureKind::Panic, "boom"));
    let c =
        RunComparison::judge(&now, &base, source(), settings(FailOn::Regressed, false)).unwrap();
    assert_eq!(c.counts_text(), "1 no change, 1 failed, 1 new");
    assert!(c.is_new("new") && !c.is_new("mm"));
    assert_eq!(c.set.missing_in_current, ["gone"]);

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
}
