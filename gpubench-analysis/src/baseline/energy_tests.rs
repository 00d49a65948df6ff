//! Tests of energy verdicts through baselines: saved and loaded, judged, gated,
//! missing on a side, paired in `ab`, and sides that differ in running power-capped.

use rand::SeedableRng;
use rand_pcg::Pcg64Mcg;

use super::*;
use crate::compare::{Comparison, Verdict};
use crate::synthetic::{GpuLikeSamples, ProcessShift, SyntheticEnergy};
use gpubench_record::measurement::{Flag, SampleClock};
use gpubench_record::paired::Pairing;
use gpubench_record::record::RawRecord;

const H200: &str = "NVIDIA H200";

/// Five processes of a device-bound benchmark on an H200 (`record` a seed's), with
/// the H200 matmul's energy `factor` times over when `factor` is given.
fn record(factor: Option<f64>, seed: u64) -> RawRecord {
    let mut rng = Pcg64Mcg::seed_from_u64(seed);
    let mut r = GpuLikeSamples::default()
        .with_shift(ProcessShift::LogNormal { sigma: 0.005 })
        .record_processes("mm", H200, 5, 30, &mut rng);
    match factor {
        Some(f) => SyntheticEnergy::h200_matmul()
            .scaled(f)
            .plant(&mut r, &mut rng),
        None => {
            for m in r
                .processes
                .iter_mut()
                .filter_map(|p| p.measurement.as_mut())
            {
                m.energy_unavailable = Some("the GPU has no total-energy counter".into());
            }
        }
    }
    r
}

fn entry(r: &RawRecord) -> BaselineEntry {
    BaselineEntry::from_record(r).unwrap()
}

fn judged(
    now: &RawRecord,
    base: &BaselineEntry,
    options: &BaselineCompareOptions,
) -> ComparisonSet {
    compare_with_baseline(
        std::slice::from_ref(now),
        std::slice::from_ref(base),
        options,
    )
    .unwrap()
}

#[test]
fn ten_percent_more_energy_is_regressed_and_the_same_energy_no_change() {
    let base = entry(&record(Some(1.0), 1));
    // The file keeps each process's windows and reads back as saved.
    assert_eq!(base.energy_groups().map(|g| g.len()), Some(5));
    let json = base.to_json_pretty();
    assert!(json.contains("\"energy_j\": ["), "{json}");
    assert_eq!(BaselineEntry::from_json(&json, "mm.json").unwrap(), base);

    let default = BaselineCompareOptions::default();
    let set = judged(&record(Some(1.1), 2), &base, &default);
    let b = &set.comparisons[0];
    assert_eq!(
        b.verdict_of(Metric::Energy),
        Some(Verdict::Regressed),
        "{b:?}"
    );
    let e = b
        .outcome
        .judged(Metric::Energy)
        .and_then(Judged::timed)
        .unwrap();
    assert!((e.change.point - 0.1).abs() < 0.03, "{e:?}");
    assert!((e.noise_threshold - 0.03).abs() < 1e-9, "{e:?}");
    assert!((e.baseline_estimate - 1.17).abs() < 0.05, "{e:?}");
    // Judged and gated by default; the time did not move.
    assert_eq!(b.verdict(), Some(Verdict::NoChange));
    assert!(FailOn::Regressed.trips(b, &Gate::default()));
    assert!(!FailOn::Regressed.trips(b, &Gate::of(&[Metric::Time])));

    let set = judged(&record(Some(1.0), 3), &base, &default);
    let b = &set.comparisons[0];
    assert_eq!(
        b.verdict_of(Metric::Energy),
        Some(Verdict::NoChange),
        "{b:?}"
    );
    assert!(!FailOn::Regressed.should_fail(&set, &Gate::default()));
    assert!(set.missing(&Gate::default()).is_empty());
}

#[test]
fn an_outcome_with_energy_is_stored_and_read_back_as_it_was() {
    let base = entry(&record(Some(1.0), 4));
    let set = judged(
        &record(Some(1.1), 5),
        &base,
        &BaselineCompareOptions::default(),
    );
    let json = serde_json::to_string_pretty(&set).unwrap();
    assert!(json.contains("\"energy\": {"), "{json}");
    let back: ComparisonSet = serde_json::from_str(&json).unwrap();
    assert_eq!(back, set);
    assert_eq!(serde_json::to_string_pretty(&back).unwrap(), json);
}

#[test]
fn energy_on_one_side_only_is_a_gap_the_default_gate_sees() {
    let with = record(Some(1.0), 6);
    let without = record(None, 7);
    let default = BaselineCompareOptions::default();

    let set = judged(&without, &entry(&with), &default);
    let gap = set.comparisons[0]
        .metric(Metric::Energy)
        .unwrap()
        .gap
        .clone()
        .unwrap();
    assert_eq!(gap.missing_on, MissingOn::Current);
    assert_eq!(
        gap.reason,
        "this run has no energy: the GPU has no total-energy counter"
    );
    let missing = set.missing(&Gate::default());
    assert_eq!(missing.len(), 1, "{missing:?}");
    assert_eq!(missing[0].metric, Some(Metric::Energy));

    // A baseline saved before energy was kept: its file has no windows.
    let mut old: serde_json::Value = serde_json::from_str(&entry(&with).to_json_pretty()).unwrap();
    for p in old["processes"].as_array_mut().unwrap() {
        p.as_object_mut().unwrap().remove("energy_j").unwrap();
    }
    let old = BaselineEntry::from_json(&old.to_string(), "mm.json").unwrap();
    let set = judged(&with, &old, &default);
    let gap = set.comparisons[0]
        .metric(Metric::Energy)
        .unwrap()
        .gap
        .clone()
        .unwrap();
    assert_eq!(gap.missing_on, MissingOn::Baseline);
    assert!(
        gap.reason.starts_with("the baseline has no energy: "),
        "{gap:?}"
    );
    assert_eq!(set.missing(&Gate::default()).len(), 1);
}

#[test]
fn a_pair_without_energy_fails_only_a_gate_that_names_it() {
    // Neither side has the counter (the CPU, a GPU without one).
    let set = judged(
        &record(None, 8),
        &entry(&record(None, 9)),
        &BaselineCompareOptions::default(),
    );
    let v = set.comparisons[0].metric(Metric::Energy).unwrap();
    let gap = v.gap.as_ref().unwrap();
    assert_eq!(gap.missing_on, MissingOn::Both);
    assert!(
        gap.reason.starts_with("neither side measured energy: "),
        "{gap:?}"
    );
    assert!(set.missing(&Gate::default()).is_empty());
    assert!(!FailOn::Regressed.should_fail(&set, &Gate::default()));
    let named = set.missing(&Gate::of(&[Metric::Time, Metric::Energy]));
    assert_eq!(named.len(), 1, "{named:?}");
    assert_eq!(named[0].metric, Some(Metric::Energy));
}

/// Reads every sample of `r` at `sm_mhz`, power-capped or not.
fn clock(r: &mut RawRecord, sm_mhz: u32, power_capped: bool) {
    for m in r
        .processes
        .iter_mut()
        .filter_map(|p| p.measurement.as_mut())
    {
        for s in &mut m.samples {
            s.clock = Some(SampleClock {
                sm_mhz,
                temperature_c: Some(70),
                throttled: false,
                power_capped,
                power_w: None,
            });
        }
    }
}

#[test]
fn sides_that_differ_in_running_power_capped_are_noted_with_the_clocks() {
    let mut capped = record(Some(1.0), 10);
    clock(&mut capped, 1707, true);
    let base = entry(&capped);
    assert_eq!(base.power_capped_share(), Some(1.0));
    assert_eq!(
        BaselineEntry::from_json(&base.to_json_pretty(), "mm.json").unwrap(),
        base
    );
    // Clocks within 5% of each other, one side at the power limit.
    let mut free = record(Some(1.0), 11);
    clock(&mut free, 1750, false);
    let set = judged(&free, &base, &BaselineCompareOptions::default());
    assert_eq!(set.other_clocks.len(), 1, "{:?}", set.other_clocks);
    assert_eq!(
        set.other_clocks[0].describe(),
        "the GPU ran at 1750 MHz here, 1707 MHz in the baseline (mean SM clock); \
         power-capped in 0% of samples here, 100% in the baseline"
    );
    let json = serde_json::to_string(&set).unwrap();
    assert!(
        json.contains("\"power_capped\":{\"baseline_share\":1.0,\"current_share\":0.0}"),
        "{json}"
    );
    assert_eq!(serde_json::from_str::<ComparisonSet>(&json).unwrap(), set);
    // Both capped: nothing to say.
    let mut also = record(Some(1.0), 12);
    clock(&mut also, 1710, true);
    let set = judged(&also, &base, &BaselineCompareOptions::default());
    assert!(set.other_clocks.is_empty(), "{:?}", set.other_clocks);
}

/// Sets each head process's pairing, with its energy ratio when given.
fn pair(base: &mut RawRecord, head: &mut RawRecord, energy: &[Option<f64>]) {
    for (k, (b, h)) in base
        .processes
        .iter_mut()
        .zip(head.processes.iter_mut())
        .enumerate()
    {
        let pairing = |role: &str| -> Pairing {
            let mut p = serde_json::json!({
                "role": role, "base_first": k % 2 == 0, "blocks": 12, "log_ratio": 0.0,
            });
            if let Some(r) = energy[k] {
                p["energy_log_ratio"] = r.into();
            }
            serde_json::from_value(p).unwrap()
        };
        b.pairing = Some(pairing("base"));
        h.pairing = Some(pairing("head"));
    }
}

#[test]
fn ab_judges_energy_on_the_paired_ratios_when_every_process_has_one() {
    // Two sides whose windows alone say nothing (each process's windows 3% apart,
    // the head's 2.5% higher), while the paired ratios, 1.5% apart as on the H200,
    // show 10% more energy per call in every process.
    let mut base = record(Some(1.0), 13);
    let mut head = record(Some(1.025), 14);
    let spread = [0.012, -0.015, 0.004, -0.008, 0.011];
    let ratios: Vec<Option<f64>> = spread.iter().map(|w| Some(1.1f64.ln() + w)).collect();
    let energy = |base: &RawRecord, head: &RawRecord| -> Comparison {
        let set = compare_paired_records(
            std::slice::from_ref(base),
            std::slice::from_ref(head),
            &BaselineCompareOptions::default(),
        )
        .unwrap();
        let judged = set.comparisons[0].outcome.judged(Metric::Energy);
        judged.and_then(Judged::timed).unwrap().clone()
    };
    pair(&mut base, &mut head, &ratios);
    let e = energy(&base, &head);
    assert!(e.paired, "{e:?}");
    assert_eq!(e.verdict, Verdict::Regressed, "{e:?}");
    assert!((e.change.point - 0.1).abs() < 0.01, "{e:?}");

    // A process without a ratio: the two sets of windows are judged as in a run.
    let mut ratios = ratios;
    ratios[2] = None;
    pair(&mut base, &mut head, &ratios);
    let e = energy(&base, &head);
    assert!(!e.paired, "{e:?}");
    assert_ne!(e.verdict, Verdict::Regressed, "{e:?}");
}

#[test]
fn host_bound_energy_is_judged_on_the_host_rule() {
    let mut base = record(Some(1.0), 15);
    let mut now = record(Some(1.2), 16);
    for r in [&mut base, &mut now] {
        for m in r
            .processes
            .iter_mut()
            .filter_map(|p| p.measurement.as_mut())
        {
            m.flags.retain(|f| *f != Flag::DeviceBound);
            m.flags.push(Flag::LaunchBound);
        }
    }
    let set = judged(&now, &entry(&base), &BaselineCompareOptions::default());
    let e = set.comparisons[0]
        .outcome
        .judged(Metric::Energy)
        .and_then(Judged::timed)
        .unwrap();
    assert!((e.noise_threshold - 0.5).abs() < 1e-9, "{e:?}");
    assert_eq!(e.verdict, Verdict::NoChange, "{e:?}");
}

/// One side of an energy comparison as the H200 matmul's noise draws it: a run-level
/// shift (`run_sigma`) every process shares, each process's level 0.6% apart, each
/// of its 3 windows 3% about it.
fn draw_energy(factor: f64, run_sigma: f64, rng: &mut Pcg64Mcg) -> Vec<Vec<f64>> {
    let run = SyntheticEnergy {
        process_sigma: 0.0,
        window_sigma: run_sigma,
        windows: 1,
        ..SyntheticEnergy::h200_matmul()
    }
    .process(rng)[0];
    let model = SyntheticEnergy::h200_matmul().scaled(factor * run / 1.17);
    (0..5).map(|_| model.process(rng)).collect()
}

/// The verdicts of `trials` comparisons of 5 processes a side, the current side
/// `factor` times the energy: the shares regressed, improved, no change, ambiguous.
fn energy_rates(factor: f64, run_sigma: f64, trials: usize, seed: u64) -> [f64; 4] {
    let mut rng = Pcg64Mcg::seed_from_u64(seed);
    let mut counts = [0usize; 4];
    for _ in 0..trials {
        let was = draw_energy(1.0, run_sigma, &mut rng);
        let now = draw_energy(factor, run_sigma, &mut rng);
        let c = compare_energy(
            &was,
            &now,
            crate::processes::Bound::Device,
            &Default::default(),
        )
        .unwrap();
        counts[match c.verdict {
            Verdict::Regressed => 0,
            Verdict::Improved => 1,
            Verdict::NoChange => 2,
            Verdict::Ambiguous => 3,
        }] += 1;
    }
    counts.map(|n| n as f64 / trials as f64)
}

/// The A/A calibration of the energy threshold at the H200's measured noise
/// (processes 0.6% apart, windows 3%): identical energy gets a verdict in at most
/// 5% of comparisons, 10% more energy is regressed in at least 95%, with 5
/// processes a side; and so with a 1% drift between runs (the device-bound time
/// model's), which no run's processes show.
#[test]
fn the_energy_threshold_keeps_false_verdicts_under_5_percent_and_catches_a_10_percent_rise() {
    for (run_sigma, seed) in [(0.0, 100), (0.01, 200)] {
        let same = energy_rates(1.0, run_sigma, 4000, seed);
        let rise = energy_rates(1.1, run_sigma, 4000, seed + 1);
        eprintln!(
            "energy A/A, run drift {:.0}%: regressed {:.2}%, improved {:.2}%, no change \
             {:.1}%, ambiguous {:.1}%; +10%: regressed {:.2}%",
            run_sigma * 100.0,
            same[0] * 100.0,
            same[1] * 100.0,
            same[2] * 100.0,
            same[3] * 100.0,
            rise[0] * 100.0
        );
        assert!(same[0] + same[1] <= 0.05, "{same:?}");
        assert!(rise[0] >= 0.95, "{rise:?}");
    }
}
