//! Tests of [`super`]: what the report says of an `ab` comparison, and of energy
//! against a baseline.

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

/// The change fact of `id`'s page in a report of CPU work whose processes spread by
/// `spread` (log-scale sd of their shifts), against a baseline of the same.
fn cpu_change_fact(spread: f64, seed: u64) -> String {
    use gpubench_analysis::baseline::{compare_with_baseline, BaselineCompareOptions};
    use gpubench_analysis::synthetic::{GpuLikeSamples, ProcessShift};
    use rand::SeedableRng;
    let model = GpuLikeSamples::default().with_shift(ProcessShift::LogNormal { sigma: spread });
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(seed);
    let mut cpu = |id: &str| {
        let mut r = model.record_processes(id, "AMD EPYC", 4, 20, &mut rng);
        r.fingerprint.device.kind = "cpu".into();
        r
    };
    let base = [cpu("mm")];
    let head = vec![cpu("mm")];
    let entries: Vec<BaselineEntry> = base
        .iter()
        .map(|r| BaselineEntry::from_record(r).unwrap())
        .collect();
    let set = compare_with_baseline(&head, &entries, &BaselineCompareOptions::default()).unwrap();
    let input = ReportInput::new("gpubench", head).with_baseline("main", &entries, &set);
    let views = build_all(&input);
    let page = views.benchmarks.iter().find(|b| b.id == "mm").unwrap();
    page.facts
        .key_facts
        .iter()
        .find(|f| f.label == "change vs baseline")
        .unwrap()
        .detail
        .clone()
}

#[test]
fn a_cpu_page_names_the_cpu_noise_threshold_that_judged_it() {
    // Processes close together: the CPU device's ±10% judged, and the page says so.
    let quiet = cpu_change_fact(0.005, 1);
    assert!(
        quiet.ends_with("noise threshold ±10.0% (the CPU device's, --cpu-noise-threshold)"),
        "{quiet}"
    );
    // Processes far apart: the spread set the threshold, beside the CPU's ±10%, not
    // the GPU's ±2% that never judged it.
    let spread = cpu_change_fact(0.2, 2);
    assert!(
        spread.contains("(the spread between processes; noise threshold ±10.0%, the CPU device's)"),
        "{spread}"
    );
    assert!(!spread.contains("±2.0%"), "{spread}");
}

#[test]
fn a_benchmark_page_shows_energy_against_the_baseline_in_joules() {
    use gpubench_analysis::baseline::{compare_with_baseline, BaselineCompareOptions};
    use gpubench_analysis::synthetic::{GpuLikeSamples, ProcessShift, SyntheticEnergy};
    use rand::SeedableRng;
    let five = |energy: f64, seed: u64| {
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(seed);
        let mut r = GpuLikeSamples::default()
            .with_shift(ProcessShift::LogNormal { sigma: 0.005 })
            .record_processes("mm", "NVIDIA H200", 5, 30, &mut rng);
        SyntheticEnergy::h200_matmul()
            .scaled(energy)
            .plant(&mut r, &mut rng);
        r
    };
    let entries = vec![BaselineEntry::from_record(&five(1.0, 1)).unwrap()];
    let now = vec![five(1.1, 2)];
    let set = compare_with_baseline(&now, &entries, &BaselineCompareOptions::default()).unwrap();
    let input = ReportInput::new("gpubench run", now).with_baseline("main", &entries, &set);
    let views = build_all(&input);
    let facts = &views.benchmarks[0].facts.key_facts;
    let energy = facts
        .iter()
        .find(|f| f.label == "energy vs baseline")
        .unwrap_or_else(|| panic!("{facts:?}"));
    assert!(
        energy.value.starts_with('+') && energy.value.ends_with(" J per call)"),
        "{energy:?}"
    );
    assert!(
        energy
            .detail
            .ends_with("; regressed against 1.17 J in the baseline"),
        "{energy:?}"
    );
}

#[test]
fn a_page_gives_the_share_of_peak_verdict_in_shares_under_a_gate_that_names_it() {
    use gpubench_analysis::baseline::{
        compare_with_baseline, BaselineCompareOptions, Metric, MetricSet,
    };
    use gpubench_analysis::synthetic::GpuLikeSamples;
    use gpubench_record::measurement::Throughput;
    use rand::SeedableRng;
    let id = "matmul_bf16/8192";
    // As fast on both sides, the head's GPU at 1800 MHz where the base's ran at 1500.
    let at = |sm_mhz, seed| {
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(seed);
        let mut r = GpuLikeSamples::default().scaled(1.5).record_processes(
            id,
            "NVIDIA H200",
            3,
            20,
            &mut rng,
        );
        gpubench_analysis::synthetic::set_clock_and_work(
            &mut r,
            sm_mhz,
            Some(Throughput::Flops(2.0 * 8192f64.powi(3))),
        );
        r
    };
    let entries = [BaselineEntry::from_record(&at(1500, 1)).unwrap()];
    let head = vec![at(1800, 2)];
    let options = BaselineCompareOptions {
        gated: MetricSet::of(&[Metric::Time, Metric::Peak]),
        ..BaselineCompareOptions::default()
    };
    let set = compare_with_baseline(&head, &entries, &options).unwrap();
    let input = ReportInput::new("gpubench", head).with_baseline("main", &entries, &set);
    let views = build_all(&input);
    let page = views.benchmarks.iter().find(|b| b.id == id).unwrap();
    let fact = page
        .facts
        .key_facts
        .iter()
        .find(|f| f.label == "share of peak vs baseline")
        .unwrap_or_else(|| panic!("{:?}", page.facts.key_facts));
    // The share dropped by 1 − 1500/1800, give or take the samples' own noise.
    assert!(fact.value.starts_with("−16."), "{fact:?}");
    assert!(fact.detail.contains("regressed against "), "{fact:?}");
    assert!(
        fact.detail
            .ends_with("% of peak at its clock in the baseline"),
        "{fact:?}"
    );
}
