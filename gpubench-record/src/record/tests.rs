//! Tests of [`super`].

use super::*;
use crate::failure::FailureKind;
use crate::testing::{measurement, sample_record};

#[test]
fn record_round_trips_through_json() {
    let r = sample_record();
    let text = r.to_json_pretty();
    assert!(text.contains("\"format_version\": 2"), "{text}");
    let back = RawRecord::from_json(&text, "mem").unwrap();
    assert_eq!(r, back);
    let mut failed = sample_record();
    failed.processes[0].measurement = None;
    failed.processes[0].failure = Some(Failure::new(FailureKind::Panic, "boom"));
    let back = RawRecord::from_json(&failed.to_json_pretty(), "mem").unwrap();
    assert_eq!(failed, back);
    assert!(!back.passed());
    assert_eq!(back.failure().unwrap().message, "boom");
}

#[test]
fn newer_format_version_is_refused_with_a_clear_error() {
    let mut v: serde_json::Value = serde_json::to_value(sample_record()).unwrap();
    v["format_version"] = (RECORD_FORMAT_VERSION + 1).into();
    let err = RawRecord::from_json(&v.to_string(), "runs/x/matmul.json").unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, RecordError::TooNew { .. }));
    assert!(msg.contains("runs/x/matmul.json"), "{msg}");
    assert!(msg.contains("upgrade"), "{msg}");
}

#[test]
fn a_version_1_record_reads_as_one_process() {
    let mut v1 = serde_json::to_value(sample_record()).unwrap();
    let obj = v1.as_object_mut().unwrap();
    let process = obj.remove("rounds").unwrap()[0].clone();
    obj.insert("format_version".into(), 1.into());
    obj.insert("measurement".into(), process["measurement"].clone());
    obj["config"].as_object_mut().unwrap().remove("processes");
    let r = RawRecord::from_json(&v1.to_string(), "old.json").unwrap();
    assert_eq!(r.processes.len(), 1);
    assert_eq!(r.processes[0].started_at, "2026-11-29T00:00:00Z");
    assert_eq!(r.config.processes, ProcessPolicy::single());
    assert_eq!(r.first_measurement(), sample_record().first_measurement());
    assert_eq!(r.format_version, RECORD_FORMAT_VERSION);
}

#[test]
fn truncated_record_names_the_file() {
    let text = sample_record().to_json_pretty();
    let err = RawRecord::from_json(&text[..text.len() / 2], "a/b.json").unwrap_err();
    assert!(err.to_string().contains("a/b.json"));
}

#[test]
fn primary_time_prefers_device_events() {
    let r = sample_record();
    let m = r.first_measurement().unwrap();
    assert_eq!(m.primary_per_iter(), vec![3.9e6 / 4.0]);
    assert_eq!(r.primary_groups(), vec![vec![3.9e6 / 4.0]]);
}

#[test]
fn processes_append_in_order_and_keep_the_first_fingerprint() {
    let mut r = sample_record();
    let mut later = sample_record();
    later.fingerprint.timestamp = "later".into();
    later.processes[0].measurement = Some(measurement(4.1e6));
    r.append_processes(later.clone()).unwrap();
    r.append_processes(later).unwrap();
    assert_eq!(
        r.processes.iter().map(|x| x.process).collect::<Vec<_>>(),
        [1, 2, 3]
    );
    assert_eq!(r.fingerprint.timestamp, "2026-11-29T00:00:00Z");
    assert_eq!(
        r.primary_groups(),
        vec![vec![3.9e6 / 4.0], vec![4.1e6 / 4.0], vec![4.1e6 / 4.0]]
    );
    assert!(r.passed());
    let mut other = sample_record();
    other.id = "conv".into();
    let err = r.append_processes(other).unwrap_err().to_string();
    assert!(
        err.contains("`conv`") && err.contains("`matmul/4096`"),
        "{err}"
    );
    // One process without device times makes every process fall back to wall time.
    let mut wall_only = sample_record();
    wall_only.processes[0].measurement.as_mut().unwrap().samples[0].device_ns = None;
    r.append_processes(wall_only).unwrap();
    assert!(!r.device_timed());
    assert_eq!(r.primary_groups()[0], vec![1e6]);
}

fn clocked(sm_mhz: u32, throttled: bool) -> Option<SampleClock> {
    Some(SampleClock {
        sm_mhz,
        temperature_c: Some(60),
        throttled,
        power_capped: false,
        power_w: None,
    })
}

#[test]
fn throttled_samples_are_left_out_of_the_figures_and_counted() {
    let mut r = sample_record();
    let m = r.processes[0].measurement.as_mut().unwrap();
    let fast = m.samples[0].clone();
    m.samples[0].clock = clocked(1980, false);
    m.samples.push(Sample {
        device_ns: Some(9e6),
        clock: clocked(1100, true),
        ..fast.clone()
    });
    m.samples.push(Sample {
        clock: clocked(1960, false),
        ..fast
    });
    assert_eq!(m.samples.len(), 3);
    assert_eq!(m.throttled_samples(), 1);
    assert_eq!(m.primary_per_iter(), vec![3.9e6 / 4.0, 3.9e6 / 4.0]);
    assert_eq!(r.throttled_samples(), 1);
    assert_eq!(r.mean_sm_clock_mhz(), Some(1970.0));
    let back = RawRecord::from_json(&r.to_json_pretty(), "mem").unwrap();
    assert_eq!(back, r);
    assert_eq!(back.throttled_samples(), 1);
}

#[test]
fn when_every_sample_throttled_all_are_kept() {
    let mut r = sample_record();
    let m = r.processes[0].measurement.as_mut().unwrap();
    m.samples[0].clock = clocked(900, true);
    assert_eq!(m.throttled_samples(), 0);
    assert_eq!(m.primary_per_iter().len(), 1);
}

#[test]
fn a_record_from_before_telemetry_loads_without_it() {
    let text = sample_record().to_json_pretty();
    assert!(
        !text.contains("clock") && !text.contains("telemetry"),
        "{text}"
    );
    let r = RawRecord::from_json(&text, "old.json").unwrap();
    assert_eq!(r.fingerprint.gpu, None);
    assert!(!r.contended());
    assert_eq!(r.throttled_samples(), 0);
    assert_eq!(r.mean_sm_clock_mhz(), None);
    assert_eq!(r.telemetry_unavailable(), None);
}

#[test]
fn a_failed_process_fails_the_record_and_keeps_the_others() {
    let mut r = sample_record();
    let mut failed = sample_record();
    failed.processes[0].measurement = None;
    failed.processes[0].failure = Some(Failure::new(FailureKind::Crash, "signal 11"));
    r.append_processes(failed).unwrap();
    assert!(!r.passed());
    assert_eq!(r.failed_process().unwrap().process, 2);
    assert_eq!(r.measurements().count(), 1);
}

#[test]
fn eager_versus_compiled_is_written_as_eager_compiled_and_read_from_old_comparison_keys() {
    let side_by_side = crate::testing::sample_comparison();
    let mut r = sample_record();
    r.processes[0].eager_compiled = Some(side_by_side.clone());
    let text = r.to_json_pretty();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert!(json["rounds"][0].get("eager_compiled").is_some(), "{text}");
    assert!(json["rounds"][0].get("comparison").is_none(), "{text}");
    assert_eq!(RawRecord::from_json(&text, "new.json").unwrap(), r);

    // A version 1 record kept the side-by-side result under `comparison`.
    let mut v1 = serde_json::to_value(sample_record()).unwrap();
    let obj = v1.as_object_mut().unwrap();
    let process = obj.remove("rounds").unwrap()[0].clone();
    obj.insert("format_version".into(), 1.into());
    obj.insert("measurement".into(), process["measurement"].clone());
    obj.insert(
        "comparison".into(),
        serde_json::to_value(&side_by_side).unwrap(),
    );
    obj["config"].as_object_mut().unwrap().remove("processes");
    let old = RawRecord::from_json(&v1.to_string(), "old.json").unwrap();
    assert_eq!(old.eager_compiled(), Some(&side_by_side));
}
