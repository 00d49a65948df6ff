//! Tests of [`super`].

use super::*;
use crate::processes::Bound;
use crate::synthetic::{GpuLikeSamples, ProcessShift};
use proptest::prelude::*;
use rand::SeedableRng;

fn device_bound() -> GpuLikeSamples {
    GpuLikeSamples::default().with_shift(ProcessShift::LogNormal { sigma: 0.01 })
}

fn bimodal() -> GpuLikeSamples {
    GpuLikeSamples::default().with_shift(ProcessShift::Modes {
        slow_factor: 1.7,
        slow_share: 0.5,
        sigma: 0.02,
    })
}

#[test]
fn clear_changes_get_clear_verdicts() {
    let model = device_bound();
    let mut rng = Pcg64Mcg::seed_from_u64(3);
    let old = model.draw_processes(5, 30, &mut rng);
    let same = model.draw_processes(5, 30, &mut rng);
    let slower = model.scaled(1.10).draw_processes(5, 30, &mut rng);
    let faster = model.scaled(0.90).draw_processes(5, 30, &mut rng);
    let cfg = CompareConfig::default();

    let c = compare_processes(&old, &slower, Bound::Device, &cfg).unwrap();
    assert_eq!(c.verdict, Verdict::Regressed, "{c:?}");
    assert!(c.change.contains(0.10) && c.p_value < 0.01, "{c:?}");
    assert!((c.current_estimate / c.baseline_estimate - 1.0 - c.change.point).abs() < 1e-12);
    assert_eq!((c.baseline_processes, c.current_processes), (5, 5));
    assert_eq!(c.threshold, DEFAULT_NOISE_THRESHOLD, "{c:?}");

    let c = compare_processes(&old, &faster, Bound::Device, &cfg).unwrap();
    assert_eq!(c.verdict, Verdict::Improved, "{c:?}");

    let c = compare_processes(&old, &same, Bound::Device, &cfg).unwrap();
    assert_eq!(c.verdict, Verdict::NoChange, "{c:?}");
    assert!(c.change.contains(0.0) && c.note.is_none());
}

#[test]
fn processes_in_other_modes_are_not_a_change() {
    // Two thirds of the baseline's processes landed in the fast mode, two thirds of
    // this run's in the slow one: the spread between processes raises the
    // threshold, and the change is not called.
    let fast = [1.0, 1.01, 0.99, 1.0, 1.7, 1.71];
    let slow = [1.7, 1.72, 1.0, 1.69, 0.99, 1.7];
    let group = |ms: &[f64]| -> Vec<Vec<f64>> { ms.iter().map(|m| vec![m * 1e6; 5]).collect() };
    let c = compare_processes(
        &group(&fast),
        &group(&slow),
        Bound::Device,
        &CompareConfig::default(),
    )
    .unwrap();
    assert!(c.spread.unwrap() > 0.15, "{c:?}");
    assert!(c.threshold > 0.15, "{c:?}");
    assert_ne!(c.verdict, Verdict::Regressed, "{c:?}");
}

#[test]
fn host_bound_work_needs_a_change_beyond_the_hosts_drift_between_runs() {
    // Every process of this run 45% slower, as the host was in one run on an
    // H200: tight on both sides, so only the host noise threshold stops it.
    let group = |m: f64| -> Vec<Vec<f64>> {
        (0..5)
            .map(|i| vec![m * (1.0 + 0.002 * i as f64); 5])
            .collect()
    };
    let cfg = CompareConfig::default();
    // Within the host's drift between runs: no change worth a verdict.
    let c = compare_processes(&group(6.1e3), &group(8.8e3), Bound::Host, &cfg).unwrap();
    assert_eq!(c.verdict, Verdict::NoChange, "{c:?}");
    assert!((c.threshold - 0.5).abs() < 1e-9, "{c:?}");
    let c = compare_processes(&group(6.1e3), &group(8.8e3), Bound::Device, &cfg).unwrap();
    assert_eq!(c.verdict, Verdict::Regressed, "{c:?}");
    // Twice as slow is beyond it.
    let c = compare_processes(&group(6.1e3), &group(12.2e3), Bound::Host, &cfg).unwrap();
    assert_eq!(c.verdict, Verdict::Regressed, "{c:?}");
    let tolerant = CompareConfig {
        host_noise_threshold: 0.1,
        ..cfg
    };
    let c = compare_processes(&group(6.1e3), &group(8.8e3), Bound::Host, &tolerant).unwrap();
    assert_eq!(c.verdict, Verdict::Regressed, "{c:?}");
    // With fewer than five processes a side, host-bound work gets no verdict.
    let three: Vec<Vec<f64>> = group(6.1e3).into_iter().take(3).collect();
    let c = compare_processes(&three, &group(30e3), Bound::Host, &cfg).unwrap();
    assert_eq!(c.verdict, Verdict::Ambiguous, "{c:?}");
    assert!(c.note.unwrap().contains("needs 5 on each side"));
}

#[test]
fn cpu_work_is_judged_on_its_own_spread() {
    // Three processes a side, as `cargo gpubench` runs by default, their medians 4%
    // apart as a CPU matmul's were beside a parallel build.
    let group = |m: f64| -> Vec<Vec<f64>> {
        [1.0, 1.04, 0.98]
            .iter()
            .map(|f| (0..10).map(|i| m * f * (1.0 + 0.001 * i as f64)).collect())
            .collect()
    };
    let cfg = CompareConfig::default();
    // A planted 2x slowdown is regressed on the CPU device ...
    let c = compare_processes(&group(166e3), &group(332e3), Bound::Cpu, &cfg).unwrap();
    assert_eq!(c.verdict, Verdict::Regressed, "{c:?}");
    assert!(c.note.is_none(), "{c:?}");
    // ... where the GPU's host-dispatch rule never got a verdict from three processes.
    let c = compare_processes(&group(166e3), &group(332e3), Bound::Host, &cfg).unwrap();
    assert_eq!(c.verdict, Verdict::Ambiguous, "{c:?}");
    // The threshold is the CPU's ±10%, not the host's ±50% ...
    let c = compare_processes(&group(166e3), &group(166e3), Bound::Cpu, &cfg).unwrap();
    assert!((c.threshold - 0.10).abs() < 1e-12, "{c:?}");
    assert_eq!(c.verdict, Verdict::NoChange, "{c:?}");
    // ... or its processes' own spread, when that is wider.
    let wide = |m: f64| -> Vec<Vec<f64>> {
        [1.0, 1.12, 0.90]
            .iter()
            .map(|f| (0..10).map(|i| m * f * (1.0 + 0.001 * i as f64)).collect())
            .collect()
    };
    let c = compare_processes(&wide(166e3), &wide(166e3), Bound::Cpu, &cfg).unwrap();
    let spread = c.spread.unwrap();
    assert!(
        c.threshold > 0.10 && (c.threshold - (1.5 * spread).exp_m1()).abs() < 1e-12,
        "{c:?}"
    );
    // Unchanged code measured 4% faster in another run, its processes within 1%, as
    // on a CI runner, is no change: runs on the CPU drift by more than that ...
    let tight = |m: f64| -> Vec<Vec<f64>> {
        [1.0, 1.008, 0.994]
            .iter()
            .map(|f| (0..10).map(|i| m * f * (1.0 + 0.001 * i as f64)).collect())
            .collect()
    };
    let c = compare_processes(&tight(351.8e3), &tight(337.9e3), Bound::Cpu, &cfg).unwrap();
    assert_eq!(c.verdict, Verdict::NoChange, "{c:?}");
    // ... which device-bound work on a GPU would have called improved.
    let c = compare_processes(&tight(351.8e3), &tight(337.9e3), Bound::Device, &cfg).unwrap();
    assert_eq!(c.verdict, Verdict::Improved, "{c:?}");
    // --cpu-noise-threshold sets it.
    let strict = CompareConfig {
        cpu_noise_threshold: 0.02,
        ..cfg
    };
    let c = compare_processes(&tight(351.8e3), &tight(337.9e3), Bound::Cpu, &strict).unwrap();
    assert_eq!(c.verdict, Verdict::Improved, "{c:?}");
    // A planted 1.3x slowdown, well beyond the spread, is called.
    let c = compare_processes(&group(166e3), &group(216e3), Bound::Cpu, &cfg).unwrap();
    assert_eq!(c.verdict, Verdict::Regressed, "{c:?}");
    // One process a side says nothing of the next, on the CPU as anywhere.
    let one: Vec<Vec<f64>> = group(166e3).into_iter().take(1).collect();
    let c = compare_processes(&one, &group(332e3), Bound::Cpu, &cfg).unwrap();
    assert_eq!(c.verdict, Verdict::Ambiguous, "{c:?}");
    assert!(c.note.unwrap().contains("a verdict on CPU work needs 2"));
}

#[test]
fn contended_cpu_work_needs_a_change_beyond_what_the_load_moves() {
    // Every process of this run 20% slower, as one thread's matmul moved between runs
    // beside other engineers' builds on a 2-core machine, while a run's processes
    // agreed within a few percent.
    let group = |m: f64| -> Vec<Vec<f64>> {
        [1.0, 1.03, 0.97]
            .iter()
            .map(|f| (0..10).map(|i| m * f * (1.0 + 0.001 * i as f64)).collect())
            .collect()
    };
    let cfg = CompareConfig::default();
    // On a host that served its threads that is a regression ...
    let quiet =
        compare_cpu_processes(&group(450e3), &group(540e3), Contention::both(false), &cfg).unwrap();
    assert_eq!(quiet.verdict, Verdict::Regressed, "{quiet:?}");
    assert!(!quiet.contended);
    // ... on a contended one it is within what the load moves: no verdict either way.
    let loaded =
        compare_cpu_processes(&group(450e3), &group(540e3), Contention::both(true), &cfg).unwrap();
    assert!(
        !matches!(loaded.verdict, Verdict::Regressed | Verdict::Improved),
        "{loaded:?}"
    );
    assert!(
        loaded.contended && (loaded.threshold - 0.5).abs() < 1e-9,
        "{loaded:?}"
    );
    // Nor is a 2x change: on a busy host the wait alone moved unchanged code 4x
    // between runs, so a contended comparison is never regressed; the note names ab.
    let slower =
        compare_cpu_processes(&group(450e3), &group(900e3), Contention::both(true), &cfg).unwrap();
    assert_eq!(slower.verdict, Verdict::Ambiguous, "{slower:?}");
    assert!(slower.note.unwrap().contains("cargo gpubench ab"));
    // `contended` is a property of the CPU device's work only, and compare_processes
    // judges CPU work as on a quiet host.
    let plain = compare_processes(&group(450e3), &group(540e3), Bound::Cpu, &cfg).unwrap();
    assert_eq!(plain, quiet);
}

#[test]
fn one_process_on_a_side_is_ambiguous_and_says_why() {
    let mut rng = Pcg64Mcg::seed_from_u64(4);
    let model = device_bound();
    let one = model.draw_processes(1, 50, &mut rng);
    let five = model.scaled(1.5).draw_processes(5, 50, &mut rng);
    let c = compare_processes(&one, &five, Bound::Device, &CompareConfig::default()).unwrap();
    assert_eq!(c.verdict, Verdict::Ambiguous);
    assert!(c.change.point > 0.4, "{c:?}");
    let note = c.note.unwrap();
    assert!(
        note.starts_with("the baseline has 1 process: a verdict on device-bound work needs 2"),
        "{note}"
    );
    let c = compare_processes(&five, &one, Bound::Device, &CompareConfig::default()).unwrap();
    assert!(c.note.unwrap().starts_with("this run has 1 process"));
    let two = model.draw_processes(2, 50, &mut rng);
    let c = compare_processes(
        &two,
        &model.scaled(2.0).draw_processes(2, 50, &mut rng),
        Bound::Device,
        &CompareConfig::default(),
    )
    .unwrap();
    assert!(c.note.is_none());
}

#[test]
fn the_note_on_too_few_processes_names_each_short_side_with_its_own_count() {
    let mut rng = Pcg64Mcg::seed_from_u64(24);
    let model = device_bound();
    let (one, three, six) = (
        model.draw_processes(1, 40, &mut rng),
        model.draw_processes(3, 40, &mut rng),
        model.draw_processes(6, 40, &mut rng),
    );
    let cfg = CompareConfig::default();
    let note = |baseline: &[Vec<f64>], current: &[Vec<f64>]| {
        compare_processes(baseline, current, Bound::Host, &cfg)
            .unwrap()
            .note
            .expect("too few processes for a host-bound verdict")
    };
    // A run of 1 process against a baseline of 3: both are short of 5, each with
    // its own count (the probe saw "the baseline has 1 process").
    let both = note(&three, &one);
    assert!(
        both.starts_with("the baseline has 3 processes and this run 1 process: a verdict on host-bound work needs 5 on each side"),
        "{both}"
    );
    assert_eq!(
        note(&one, &three).split(':').next(),
        Some("the baseline has 1 process and this run 3 processes")
    );
    // Only the short side is named, with its count.
    assert_eq!(
        note(&six, &three).split(':').next(),
        Some("this run has 3 processes")
    );
    assert_eq!(
        note(&three, &six).split(':').next(),
        Some("the baseline has 3 processes")
    );
}

#[test]
fn too_few_host_processes_still_report_the_change_of_the_estimates() {
    // Three processes a side is short of a host-bound verdict, but the change
    // shown must be the one between the estimates shown beside it.
    let mut rng = Pcg64Mcg::seed_from_u64(14);
    let model = device_bound();
    let was = model.draw_processes(3, 40, &mut rng);
    let now = model.scaled(1.3).draw_processes(3, 40, &mut rng);
    let c = compare_processes(&was, &now, Bound::Host, &CompareConfig::default()).unwrap();
    assert_eq!(c.verdict, Verdict::Ambiguous);
    assert!(c.note.is_some());
    let ratio = c.current_estimate / c.baseline_estimate - 1.0;
    assert!((c.change.point - ratio).abs() < 1e-12, "{c:?}");
    assert!(c.change.lower < c.change.point && c.change.point < c.change.upper);
}

#[test]
fn a_significant_change_below_the_threshold_is_no_change() {
    let quiet = GpuLikeSamples {
        rel_noise: 0.001,
        outlier_fraction: 0.0,
        ..GpuLikeSamples::default()
    }
    .with_shift(ProcessShift::LogNormal { sigma: 0.001 });
    let mut rng = Pcg64Mcg::seed_from_u64(5);
    let c = compare_processes(
        &quiet.draw_processes(6, 30, &mut rng),
        &quiet.scaled(1.005).draw_processes(6, 30, &mut rng),
        Bound::Device,
        &CompareConfig::default(),
    )
    .unwrap();
    assert!(c.p_value < 0.01, "{c:?}");
    assert_eq!(c.verdict, Verdict::NoChange, "{c:?}");
    // It is certain, though under the threshold: the outputs say so.
    assert!(c.certain_under_threshold, "{c:?}");
    assert!(
        c.change.lower > 0.0 && c.change.upper < c.threshold,
        "{c:?}"
    );
    // A clean 2% step straddles the 2% threshold.
    let c = compare_processes(
        &quiet.draw_processes(6, 30, &mut rng),
        &quiet.scaled(1.02).draw_processes(6, 30, &mut rng),
        Bound::Device,
        &CompareConfig::default(),
    )
    .unwrap();
    assert_eq!(c.verdict, Verdict::Ambiguous, "{c:?}");
    assert!(!c.certain_under_threshold, "{c:?}");
    // No change whose interval holds 0 is not certain.
    let c = compare_processes(
        &quiet.draw_processes(6, 30, &mut rng),
        &quiet.draw_processes(6, 30, &mut rng),
        Bound::Device,
        &CompareConfig::default(),
    )
    .unwrap();
    assert_eq!(c.verdict, Verdict::NoChange, "{c:?}");
    if c.change.contains(0.0) {
        assert!(!c.certain_under_threshold, "{c:?}");
    }
}

#[test]
fn bad_input_is_an_error_not_a_panic() {
    let cfg = CompareConfig::default();
    assert_eq!(
        compare_processes(&[], &[vec![1.0]], Bound::Device, &cfg),
        Err(CompareError::NoSamples {
            side: Side::Baseline
        })
    );
    assert_eq!(
        compare_processes(&[vec![]], &[vec![1.0]], Bound::Device, &cfg),
        Err(CompareError::NoSamples {
            side: Side::Baseline
        })
    );
    let err = compare_processes(
        &[vec![1.0, 2.0]],
        &[vec![1.0, f64::NAN]],
        Bound::Device,
        &cfg,
    )
    .unwrap_err();
    assert!(matches!(
        err,
        CompareError::InvalidSample {
            side: Side::Current,
            ..
        }
    ));
    assert!(
        err.to_string().starts_with("current samples include"),
        "{err}"
    );
    assert!(compare_processes(&[vec![1.0, -2.0]], &[vec![1.0]], Bound::Device, &cfg).is_err());
    assert_eq!(
        compare_processes(&[vec![0.0, 0.0, 1.0]], &[vec![1.0]], Bound::Device, &cfg),
        Err(CompareError::ZeroMedian {
            side: Side::Baseline
        })
    );
    let bad = CompareConfig {
        significance: 1.5,
        ..cfg
    };
    let err = compare_processes(&[vec![1.0]], &[vec![1.0]], Bound::Device, &bad).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid comparison settings: significance must lie strictly between 0 and 1"
    );
    for bad in [
        CompareConfig {
            confidence: 1.0,
            ..cfg
        },
        CompareConfig {
            noise_threshold: f64::NAN,
            ..cfg
        },
        CompareConfig {
            resamples: 0,
            ..cfg
        },
        CompareConfig {
            cpu_noise_threshold: -0.1,
            ..cfg
        },
        CompareConfig {
            paired_noise_threshold: f64::INFINITY,
            ..cfg
        },
    ] {
        assert!(bad.validate().is_err(), "{bad:?}");
    }
    // Identical processes on both sides: no spread at all, still a verdict.
    let flat = vec![vec![5.0; 3]; 3];
    let c = compare_processes(&flat, &flat, Bound::Device, &cfg).unwrap();
    assert_eq!((c.verdict, c.p_value), (Verdict::NoChange, 1.0));
    let c = compare_processes(&flat, &vec![vec![6.0; 3]; 3], Bound::Device, &cfg).unwrap();
    assert_eq!(c.verdict, Verdict::Regressed, "{c:?}");
}

#[test]
fn verdicts_serialise_in_snake_case() {
    let json = serde_json::to_string(&[Verdict::NoChange, Verdict::Regressed]).unwrap();
    assert_eq!(json, r#"["no_change","regressed"]"#);
}

#[test]
fn false_alarms_are_rare_and_slowdowns_are_caught() {
    // A small version of benches/calibration.rs, so the rule cannot drift unnoticed.
    let mut rng = Pcg64Mcg::seed_from_u64(6);
    let trials = 200;
    let (mut false_alarms, mut caught) = (0, 0);
    let cfg = CompareConfig::default();
    for _ in 0..trials {
        let model = device_bound();
        let old = model.draw_processes(4, 15, &mut rng);
        let same = model.draw_processes(4, 15, &mut rng);
        let slow = model.scaled(1.05).draw_processes(4, 15, &mut rng);
        let verdict = compare_processes(&old, &same, Bound::Device, &cfg)
            .unwrap()
            .verdict;
        if matches!(verdict, Verdict::Regressed | Verdict::Improved) {
            false_alarms += 1;
        }
        if compare_processes(&old, &slow, Bound::Device, &cfg)
            .unwrap()
            .verdict
            == Verdict::Regressed
        {
            caught += 1;
        }
        let b = bimodal();
        let verdict = compare_processes(
            &b.draw_processes(3, 15, &mut rng),
            &b.draw_processes(3, 15, &mut rng),
            Bound::Host,
            &cfg,
        )
        .unwrap()
        .verdict;
        if matches!(verdict, Verdict::Regressed | Verdict::Improved) {
            false_alarms += 1;
        }
    }
    assert!(
        false_alarms <= 2,
        "{false_alarms} false alarms in {}",
        2 * trials
    );
    assert!(caught >= trials * 9 / 10, "caught {caught} of {trials}");
}

fn groups_strategy() -> impl Strategy<Value = Vec<Vec<f64>>> {
    prop::collection::vec(prop::collection::vec(1.0f64..1e6, 1..8), 1..7)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn comparisons_are_reproducible_and_consistent(
        old in groups_strategy(),
        new in groups_strategy(),
        seed in any::<u64>(),
    ) {
        let cfg = CompareConfig { seed, resamples: 200, ..CompareConfig::default() };
        let a = compare_processes(&old, &new, Bound::Device, &cfg).unwrap();
        prop_assert_eq!(&a, &compare_processes(&old, &new, Bound::Device, &cfg).unwrap());
        prop_assert!(a.change.lower <= a.change.upper);
        prop_assert!(a.p_value >= 0.0 && a.p_value <= 1.0);
        prop_assert!(a.threshold >= cfg.noise_threshold);
        let t = a.threshold;
        let improved = 1.0 / (1.0 + t) - 1.0;
        match a.verdict {
            Verdict::Regressed => prop_assert!(a.change.lower > t - 1e-12),
            Verdict::Improved => prop_assert!(a.change.upper < improved + 1e-12),
            Verdict::NoChange => prop_assert!(
                a.change.lower >= improved - 1e-12 && a.change.upper <= t + 1e-12
            ),
            Verdict::Ambiguous => {}
        }
    }

    #[test]
    fn swapping_sides_mirrors_the_verdict(
        old in prop::collection::vec(prop::collection::vec(1.0f64..1e6, 1..8), 2..7),
        new in prop::collection::vec(prop::collection::vec(1.0f64..1e6, 1..8), 2..7),
    ) {
        let cfg = CompareConfig::default();
        let ab = compare_processes(&old, &new, Bound::Device, &cfg).unwrap();
        let ba = compare_processes(&new, &old, Bound::Device, &cfg).unwrap();
        let mirrored = match ab.verdict {
            Verdict::Regressed => Verdict::Improved,
            Verdict::Improved => Verdict::Regressed,
            v => v,
        };
        // On the log scale the test is symmetric: the verdict mirrors exactly.
        prop_assert_eq!(ba.verdict, mirrored, "{:?} vs {:?}", ab, ba);
        prop_assert!(((1.0 + ab.change.point) * (1.0 + ba.change.point) - 1.0).abs() < 1e-9);
    }
}

#[test]
fn paired_ratios_judge_what_the_processes_share_away() {
    let config = CompareConfig::default();
    let ln = |x: f64| x.ln();
    // Base and head alike; each process's ratio within ±1% of 1 (measured on the
    // H200: sd 0.7–1.1% across processes whose own speed differed by 57–62%).
    let same: Vec<f64> = [1.004, 0.993, 1.008, 0.997, 1.002].map(ln).to_vec();
    let c = compare_paired(&same, 10_000.0, 10_010.0, &config).unwrap();
    assert_eq!(c.verdict, Verdict::NoChange, "{c:?}");
    assert_eq!((c.baseline_processes, c.current_processes), (5, 5));
    // A 6% host-side cost, read in every process.
    let slower: Vec<f64> = [1.068, 1.055, 1.071, 1.061, 1.064].map(ln).to_vec();
    let c = compare_paired(&slower, 10_000.0, 10_640.0, &config).unwrap();
    assert_eq!(c.verdict, Verdict::Regressed, "{c:?}");
    assert!(c.change.lower > 0.05 && c.change.upper < 0.08, "{c:?}");
    // The mirror image is improved.
    let faster: Vec<f64> = slower.iter().map(|x| -x).collect();
    let c = compare_paired(&faster, 10_640.0, 10_000.0, &config).unwrap();
    assert_eq!(c.verdict, Verdict::Improved);
    // Ratios that disagree widely across processes are ambiguous, not a change.
    let torn: Vec<f64> = [1.12, 0.99, 1.10, 1.00].map(ln).to_vec();
    let c = compare_paired(&torn, 1.0, 1.0, &config).unwrap();
    assert_eq!(c.verdict, Verdict::Ambiguous, "{c:?}");
    // One process: ambiguous, saying why.
    let c = compare_paired(&[ln(1.2)], 1.0, 1.2, &config).unwrap();
    assert_eq!(c.verdict, Verdict::Ambiguous);
    assert!(c.note.as_deref().unwrap().contains("paired in 1 process"));
    // Nothing, or a ratio that is no number, is an error.
    assert!(compare_paired(&[], 1.0, 1.0, &config).is_err());
    assert!(compare_paired(&[f64::NAN, 0.0], 1.0, 1.0, &config).is_err());
}

/// Per-process log ratios `ln(1 + x)` of `changes`.
fn log_ratios(changes: &[f64]) -> Vec<f64> {
    changes.iter().map(|x| x.ln_1p()).collect()
}

#[test]
fn paired_verdicts_have_a_threshold_of_their_own() {
    let config = CompareConfig::default();
    assert_eq!(
        config.paired_noise_threshold,
        DEFAULT_PAIRED_NOISE_THRESHOLD
    );
    // The H200's MLP step with a 3% larger batch: +1.73% to +1.77% with ±0.02–0.04%
    // intervals. Over 5 processes that is regressed: pairing cancelled the drift
    // the ±2% of separate processes is for.
    let mlp = log_ratios(&[0.0172, 0.0177, 0.0174, 0.0178, 0.0173]);
    let c = compare_paired(&mlp, 10_000.0, 10_175.0, &config).unwrap();
    assert_eq!(c.verdict, Verdict::Regressed, "{c:?}");
    assert!(c.paired && !c.certain_under_threshold, "{c:?}");
    assert!((c.change.upper - c.change.lower) / 2.0 < 0.0004, "{c:?}");
    assert!((c.threshold - 0.01).abs() < 1e-12, "{c:?}");
    assert_eq!(c.noise_threshold, DEFAULT_PAIRED_NOISE_THRESHOLD);
    // Under a run's ±2% it was "no change": shown as certain but under the threshold.
    let old = CompareConfig {
        paired_noise_threshold: DEFAULT_NOISE_THRESHOLD,
        ..config
    };
    let c = compare_paired(&mlp, 10_000.0, 10_175.0, &old).unwrap();
    assert_eq!(c.verdict, Verdict::NoChange, "{c:?}");
    assert!(c.certain_under_threshold, "{c:?}");
    // The unpaired noise thresholds do not touch a paired verdict.
    let loose = CompareConfig {
        noise_threshold: 0.05,
        host_noise_threshold: 0.5,
        ..config
    };
    let c = compare_paired(&mlp, 10_000.0, 10_175.0, &loose).unwrap();
    assert_eq!(c.verdict, Verdict::Regressed, "{c:?}");

    // Identical code whose per-process ratios spread by 0.3% (device-bound A/A on
    // the H200): no change, and not a certain one.
    let same = log_ratios(&[0.003, -0.003, 0.0033, -0.0033, 0.0]);
    assert!((sample_sd(&same) - 0.003).abs() < 0.0003);
    let c = compare_paired(&same, 10_000.0, 10_000.0, &config).unwrap();
    assert_eq!(c.verdict, Verdict::NoChange, "{c:?}");
    assert!(!c.certain_under_threshold, "{c:?}");
    // The spread rule still holds: ratios spread by 1% need a change beyond 1.5%.
    let launch = log_ratios(&[0.01, -0.01, 0.012, -0.012, 0.0]);
    let c = compare_paired(&launch, 1.0, 1.0, &config).unwrap();
    let sd = sample_sd(&launch);
    assert!(
        (c.threshold - (SPREAD_MULTIPLE * sd).exp_m1()).abs() < 1e-12,
        "{c:?}"
    );
    assert_eq!(c.verdict, Verdict::NoChange, "{c:?}");
}

#[test]
fn paired_settings_written_before_the_paired_threshold_read_its_default() {
    let mut json = serde_json::to_value(CompareConfig::default()).unwrap();
    json.as_object_mut()
        .unwrap()
        .remove("paired_noise_threshold");
    let config: CompareConfig = serde_json::from_value(json).unwrap();
    assert_eq!(config, CompareConfig::default());
    // And a comparison written before the new fields reads them as absent.
    let c = compare_paired(&log_ratios(&[0.01, 0.011]), 1.0, 1.0, &config).unwrap();
    let mut json = serde_json::to_value(&c).unwrap();
    for key in ["paired", "certain_under_threshold", "detectable"] {
        json.as_object_mut().unwrap().remove(key);
    }
    let old: Comparison = serde_json::from_value(json).unwrap();
    assert!(!old.paired && !old.certain_under_threshold && old.detectable.is_none());
    // Absent flags are not written.
    let c = compare_paired(&[0.0, 0.0], 1.0, 1.0, &config).unwrap();
    let text = serde_json::to_string(&c).unwrap();
    assert!(!text.contains("certain_under_threshold"), "{text}");
}

/// The ratios of `base` moved as a whole so their mean is `ln(1 + change)`: the same
/// spread, so the same interval width.
fn moved_to(base: &[f64], change: f64) -> Vec<f64> {
    let shift = change.ln_1p() - mean(base);
    base.iter().map(|x| x + shift).collect()
}

#[test]
fn the_detectable_change_is_where_the_verdict_turns() {
    let config = CompareConfig::default();
    // Paired: a change read just beyond the detectable one is regressed, one just
    // short of it is not (its interval reaches into the threshold).
    let same = log_ratios(&[0.003, -0.003, 0.0033, -0.0033, 0.0]);
    let c = compare_paired(&same, 1.0, 1.0, &config).unwrap();
    let d = c.detectable.unwrap();
    // The threshold plus the interval's half-width, on the log scale.
    let half_width = (c.change.upper.ln_1p() - c.change.lower.ln_1p()) / 2.0;
    assert!(
        (d.ln_1p() - c.threshold.ln_1p() - half_width).abs() < 1e-12,
        "{c:?}"
    );
    for (change, verdict) in [
        (d * 1.001, Verdict::Regressed),
        (d * 0.999, Verdict::Ambiguous),
    ] {
        let r = moved_to(&same, change);
        let c = compare_paired(&r, 1.0, 1.0, &config).unwrap();
        assert_eq!(c.verdict, verdict, "{change}: {c:?}");
        assert!((c.detectable.unwrap() - d).abs() < 1e-12);
    }
    // Mirrored, an improvement of 1/(1 + d) − 1.
    let r = moved_to(&same, 1.0 / (1.0 + d * 1.001) - 1.0);
    let c = compare_paired(&r, 1.0, 1.0, &config).unwrap();
    assert_eq!(c.verdict, Verdict::Improved, "{c:?}");

    // Unpaired: the same, moving the current side's processes as a whole.
    let base: Vec<Vec<f64>> = [100.0, 100.4, 99.7, 100.2, 99.9]
        .iter()
        .map(|&m| vec![m])
        .collect();
    let c = compare_processes(&base, &base, Bound::Device, &config).unwrap();
    let d = c.detectable.unwrap();
    assert!(d > DEFAULT_NOISE_THRESHOLD, "{c:?}");
    for (change, verdict) in [
        (d * 1.001, Verdict::Regressed),
        (d * 0.999, Verdict::Ambiguous),
    ] {
        let now: Vec<Vec<f64>> = base.iter().map(|g| vec![g[0] * (1.0 + change)]).collect();
        let c = compare_processes(&base, &now, Bound::Device, &config).unwrap();
        assert_eq!(c.verdict, verdict, "{change}: {c:?}");
    }
    // A significance stricter than the interval's needs more.
    let strict = CompareConfig {
        significance: 0.0001,
        ..config
    };
    let usual = compare_paired(&same, 1.0, 1.0, &config).unwrap();
    let c = compare_paired(&same, 1.0, 1.0, &strict).unwrap();
    assert!(c.detectable > usual.detectable, "{c:?}");
}

#[test]
fn no_detectable_change_without_a_possible_verdict() {
    let config = CompareConfig::default();
    // One paired process: no verdict whatever it read.
    let c = compare_paired(&[0.05], 1.0, 1.05, &config).unwrap();
    assert_eq!(c.detectable, None, "{c:?}");
    // Three host-bound processes a side: no verdict either.
    let three: Vec<Vec<f64>> = [6.0e3, 6.1e3, 6.2e3].iter().map(|&m| vec![m]).collect();
    let c = compare_processes(&three, &three, Bound::Host, &config).unwrap();
    assert_eq!(
        (c.verdict, c.detectable),
        (Verdict::Ambiguous, None),
        "{c:?}"
    );
    // Five: a verdict, and what it could have seen (beyond the host's ±50%).
    let five: Vec<Vec<f64>> = [6.0e3, 6.1e3, 6.2e3, 6.05e3, 6.15e3]
        .iter()
        .map(|&m| vec![m])
        .collect();
    let c = compare_processes(&five, &five, Bound::Host, &config).unwrap();
    assert!(
        c.detectable.unwrap() > DEFAULT_HOST_NOISE_THRESHOLD,
        "{c:?}"
    );
}

/// Processes of one side at `m` ns each, spread by `factors`, ten samples apiece.
fn processes_at(m: f64, factors: &[f64]) -> Vec<Vec<f64>> {
    factors
        .iter()
        .map(|f| (0..10).map(|i| m * f * (1.0 + 0.001 * i as f64)).collect())
        .collect()
}

#[test]
fn a_contended_side_is_never_regressed_or_improved() {
    // The user's case: unchanged code, this run's processes contended in 4 of 4 and
    // 72% slower, the baseline's quiet.
    let cfg = CompareConfig::default();
    let quiet = processes_at(450e3, &[1.0, 1.02, 0.98, 1.01]);
    let waited = processes_at(775e3, &[1.0, 1.03, 0.97, 1.02]);
    let one_sided = Contention {
        baseline: false,
        current: true,
    };
    // Judged as neither contended, that is a regression ...
    let none = compare_cpu_processes(&quiet, &waited, Contention::both(false), &cfg).unwrap();
    assert_eq!(none.verdict, Verdict::Regressed, "{none:?}");
    // ... but one side waited: ambiguous, naming ab.
    let c = compare_cpu_processes(&quiet, &waited, one_sided, &cfg).unwrap();
    assert_eq!(c.verdict, Verdict::Ambiguous, "{c:?}");
    assert!(c.contended);
    let note = c.note.expect("the verdict says why");
    assert!(
        note.starts_with("this run's processes waited for a core (contended)")
            && note.contains("cargo gpubench ab"),
        "{note}"
    );
    // The mirror image: the baseline waited, this run is faster by it alone.
    let swapped = Contention {
        baseline: true,
        current: false,
    };
    let c = compare_cpu_processes(&waited, &quiet, swapped, &cfg).unwrap();
    assert_eq!(c.verdict, Verdict::Ambiguous, "{c:?}");
    assert!(c
        .note
        .unwrap()
        .starts_with("the baseline's processes waited"));
    // "No change" stands: the wait did not hide a change beyond the threshold.
    let same = processes_at(460e3, &[1.0, 1.02, 0.98, 1.01]);
    let c = compare_cpu_processes(&quiet, &same, one_sided, &cfg).unwrap();
    assert_eq!(c.verdict, Verdict::NoChange, "{c:?}");
    assert!(c.note.is_none());
    // Both sides waited, each by what the other work took then: ambiguous too.
    let both = compare_cpu_processes(&quiet, &waited, Contention::both(true), &cfg).unwrap();
    assert_eq!(both.verdict, Verdict::Ambiguous, "{both:?}");
    assert!(both
        .note
        .unwrap()
        .starts_with("the processes of both sides waited for a core"));
    // Contention is the CPU device's: a GPU's comparison ignores it.
    let gpu = compare_processes(&quiet, &waited, Bound::Device, &cfg).unwrap();
    assert_eq!(gpu.verdict, Verdict::Regressed);
}

#[test]
fn no_change_under_a_threshold_wider_than_50_percent_is_too_noisy_to_judge() {
    // Processes of a busy host up to 2x apart: the spread term makes the threshold
    // about ±100%, under which +7% [-38%, +86%] would read "no change".
    let cfg = CompareConfig::default();
    let wild = [1.0, 1.9, 0.6, 1.4, 0.8];
    let was = processes_at(450e3, &wild);
    let now = processes_at(480e3, &[1.4, 0.6, 1.0, 1.9, 0.8]);
    let c = compare_cpu_processes(&was, &now, Contention::both(true), &cfg).unwrap();
    assert!(c.threshold > MAX_NO_CHANGE_THRESHOLD, "{c:?}");
    assert_eq!(c.verdict, Verdict::Ambiguous, "{c:?}");
    let note = c.note.expect("the verdict says why");
    assert!(
        note.starts_with("too noisy to judge")
            && note.contains("cargo gpubench ab")
            && note.contains("quieter machine"),
        "{note}"
    );
    // The same change from tight processes is "no change" under ±50%.
    let tight = [1.0, 1.02, 0.98, 1.01, 0.99];
    let c = compare_cpu_processes(
        &processes_at(450e3, &tight),
        &processes_at(480e3, &tight),
        Contention::both(true),
        &cfg,
    )
    .unwrap();
    assert_eq!(c.verdict, Verdict::NoChange, "{c:?}");
    assert!(c.note.is_none());
    // A change beyond even the wide threshold is still called.
    let c = compare_cpu_processes(
        &was,
        &processes_at(450e3 * 20.0, &wild),
        Contention::both(false),
        &cfg,
    )
    .unwrap();
    assert_eq!(c.verdict, Verdict::Regressed, "{c:?}");
    // Paired comparisons follow the same rule.
    let p = compare_paired(&[0.9, -0.8, 0.5, -0.4, 0.1], 1.0, 1.0, &cfg).unwrap();
    assert!(p.threshold > MAX_NO_CHANGE_THRESHOLD, "{p:?}");
    assert_ne!(p.verdict, Verdict::NoChange, "{p:?}");
}

#[test]
fn a_comparison_names_the_noise_threshold_of_the_rule_that_judged_it() {
    // Pages print "noise threshold ±x" from the comparison: for CPU work that is the
    // CPU's ±10% (±50% contended), not the GPU's ±2%.
    let cfg = CompareConfig::default();
    let tight = [1.0, 1.01, 0.99];
    let (was, now) = (processes_at(450e3, &tight), processes_at(455e3, &tight));
    let cpu = compare_cpu_processes(&was, &now, Contention::both(false), &cfg).unwrap();
    assert_eq!(cpu.noise_threshold, DEFAULT_CPU_NOISE_THRESHOLD);
    assert!(
        (cpu.threshold - DEFAULT_CPU_NOISE_THRESHOLD).abs() < 1e-9,
        "{cpu:?}"
    );
    let busy = compare_cpu_processes(&was, &now, Contention::both(true), &cfg).unwrap();
    assert_eq!(busy.noise_threshold, DEFAULT_HOST_NOISE_THRESHOLD);
    let gpu = compare_processes(&was, &now, Bound::Device, &cfg).unwrap();
    assert_eq!(gpu.noise_threshold, DEFAULT_NOISE_THRESHOLD);
}
