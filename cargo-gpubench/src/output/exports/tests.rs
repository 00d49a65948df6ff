//! Tests of [`super`]: the exports checked against the shapes the tools document.

use gpubench_analysis::synthetic::{GpuLikeSamples, SyntheticKernels};
use gpubench_analysis::BenchmarkSummary;
use gpubench_record::failure::{Failure, FailureKind};
use rand::SeedableRng;
use rand_pcg::Pcg64;

use super::*;
use crate::store::manifest::BenchStatus;

/// A passed benchmark at about 1 ms of device time with a 250 µs kernel, a passed one
/// without kernel time, and a failed one.
fn entries() -> Vec<SummaryEntry> {
    let mut rng = Pcg64::seed_from_u64(7);
    let mut with_kernel =
        GpuLikeSamples::default().record_processes("mm/4096", "H200", 3, 30, &mut rng);
    SyntheticKernels::one("gemm", 250e3).attach(&mut with_kernel, &mut rng);
    let plain = GpuLikeSamples::default().record_processes("add", "H200", 3, 30, &mut rng);
    let mut failed = GpuLikeSamples::default().record("oom", "H200", 5, &mut rng);
    for r in &mut failed.processes {
        r.measurement = None;
        r.failure = Some(Failure::new(FailureKind::OutOfMemory, "CUDA out of memory"));
    }
    [
        (with_kernel, BenchStatus::Passed),
        (plain, BenchStatus::Passed),
        (failed, BenchStatus::Failed),
    ]
    .into_iter()
    .map(|(r, status)| SummaryEntry {
        name: format!("suite/{}", r.id),
        target: "suite".into(),
        id: r.id.clone(),
        status,
        record: None,
        summary: Some(BenchmarkSummary::from_record(&r)),
        comparison: None,
    })
    .collect()
}

/// github-action-benchmark's custom format: an array of objects with a string
/// `name` and `unit`, a numeric `value` and optional string `range` and `extra`.
#[test]
fn github_action_benchmark_matches_the_custom_format() {
    let doc = serde_json::to_value(github_action_benchmark(&entries())).unwrap();
    let items = doc.as_array().expect("an array");
    let names: Vec<&str> = items.iter().map(|i| i["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["suite/mm/4096", "suite/mm/4096 (kernel time)", "suite/add"],
        "failed benchmarks are left out"
    );
    for item in items {
        let obj = item.as_object().unwrap();
        for key in obj.keys() {
            assert!(
                ["name", "unit", "value", "range", "extra"].contains(&key.as_str()),
                "{key} is not in the format"
            );
        }
        assert_eq!(obj["unit"], "ns");
        let value = obj["value"].as_f64().expect("a number");
        assert!(value > 0.0 && value.is_finite());
        assert!(obj["range"].as_str().unwrap().starts_with("± "));
        assert!(obj["extra"].is_string());
    }
    let figure = items[0]["value"].as_f64().unwrap();
    assert!((figure / 1e6 - 1.0).abs() < 0.05, "{figure} ns for ~1 ms");
    let kernel = items[1]["value"].as_f64().unwrap();
    assert!(
        (kernel / 250e3 - 1.0).abs() < 0.05,
        "{kernel} ns for a 250 µs kernel"
    );
    assert!(items[0]["extra"].as_str().unwrap().contains("3 process"));
}

/// Bencher's metric format: `{benchmark: {measure: {value, lower_value?, upper_value?}}}`
/// with numbers, `lower_value <= value <= upper_value`.
#[test]
fn bmf_matches_bencher_metric_format() {
    let doc = bmf(&entries());
    let benches = doc.as_object().expect("an object");
    let mut names: Vec<&String> = benches.keys().collect();
    names.sort();
    assert_eq!(names, ["suite/add", "suite/mm/4096"]);
    assert!(benches["suite/add"].get("kernel-time").is_none());
    for (name, measures) in benches {
        for (measure, m) in measures.as_object().unwrap() {
            assert!(
                ["latency", "kernel-time"].contains(&measure.as_str()),
                "{measure}"
            );
            let obj = m.as_object().unwrap();
            assert_eq!(obj.len(), 3, "{name}/{measure}: {obj:?}");
            let v = |k: &str| obj[k].as_f64().unwrap_or_else(|| panic!("{k} is a number"));
            assert!(
                v("lower_value") <= v("value") && v("value") <= v("upper_value"),
                "{obj:?}"
            );
        }
    }
    let latency = benches["suite/mm/4096"]["latency"]["value"]
        .as_f64()
        .unwrap();
    assert!((latency / 1e6 - 1.0).abs() < 0.05, "{latency}");
}
