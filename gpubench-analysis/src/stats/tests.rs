//! Tests of [`super`].

use super::*;
use proptest::prelude::*;

#[test]
fn median_and_quantiles() {
    assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
    assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
    assert!(median(&[]).is_nan());
    let empty = median_estimate(&[]);
    assert!(empty.point.is_nan() && empty.lower.is_nan());
    assert_eq!(median_estimate(&[7.0]).upper, 7.0);
}

#[test]
fn bootstrap_is_reproducible_and_brackets_the_point() {
    let xs: Vec<f64> = (0..50).map(|i| 100.0 + (i % 7) as f64).collect();
    let a = median_estimate(&xs);
    let b = median_estimate(&xs);
    assert_eq!(a, b);
    assert!(a.lower <= a.point && a.point <= a.upper);
    assert!(a.rel_half_width() < 0.05);
}

#[test]
fn specialised_bootstraps_match_the_generic_one() {
    let cfg = BootstrapConfig {
        confidence: 0.9,
        resamples: 500,
        seed: 7,
    };
    for n in [2, 3, 30, 31] {
        // Ties included: values repeat every 17.
        let xs: Vec<f64> = (0..n).map(|i| ((i * 37) % 17) as f64 + 0.25).collect();
        let generic = bootstrap(&xs, median, cfg.confidence, cfg.resamples, cfg.seed);
        assert_eq!(generic, median_estimate_with(&xs, cfg), "n = {n}");
        let generic = bootstrap(&xs, mean, cfg.confidence, cfg.resamples, cfg.seed);
        assert_eq!(generic, mean_estimate_with(&xs, cfg), "n = {n}");
    }
}

#[test]
fn different_seeds_give_different_resamples() {
    let xs: Vec<f64> = (0..40).map(|i| 100.0 + (i as f64 * 0.731).sin()).collect();
    let cfg = BootstrapConfig::default();
    let a = mean_estimate_with(&xs, cfg);
    let b = mean_estimate_with(&xs, BootstrapConfig { seed: 1, ..cfg });
    assert_eq!(a.point, b.point);
    assert_ne!((a.lower, a.upper), (b.lower, b.upper));
}

#[test]
fn spread_of_known_data() {
    let xs = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
    assert!((std_dev(&xs) - 2.138_089_935).abs() < 1e-6);
    // |x - 4.5| = 2.5 .5 .5 .5 .5 .5 2.5 4.5 → median 0.5.
    assert!((mad(&xs) - 0.5 * MAD_NORMAL_SCALE).abs() < 1e-12);
    assert!((rel_noise(&xs) - 0.5 * MAD_NORMAL_SCALE / 4.5).abs() < 1e-12);
    assert_eq!(std_dev(&[3.0]), 0.0);
    assert!(std_dev(&[]).is_nan() && mad(&[]).is_nan() && rel_noise(&[]).is_nan());
    assert!(rel_noise(&[0.0, 0.0, 0.0]).is_nan());
}

#[test]
fn relative_noise_ignores_a_few_slow_samples_unlike_the_cv() {
    let mut xs: Vec<f64> = (0..50).map(|i| 1000.0 + (i % 5) as f64).collect();
    let quiet = rel_noise(&xs);
    xs[3] = 2000.0;
    xs[17] = 1800.0;
    assert!(
        rel_noise(&xs) < quiet * 1.2,
        "{} vs {quiet}",
        rel_noise(&xs)
    );
    assert!(coefficient_of_variation(&xs) > 10.0 * quiet);
}

#[test]
fn tukey_classes_of_known_data() {
    // Quartiles 10 and 12 → IQR 2; fences 4, 7, 15, 18.
    let mut xs = vec![10.0, 10.0, 11.0, 11.0, 11.0, 12.0, 12.0];
    xs.extend([3.0, 6.0, 16.0, 19.0, 15.0, 7.0]);
    let r = classify_outliers(&xs);
    let f = r.fences.unwrap();
    assert_eq!(
        (f.low_severe, f.low_mild, f.high_mild, f.high_severe),
        (4.0, 7.0, 15.0, 18.0)
    );
    use OutlierClass::*;
    assert_eq!(
        r.classes[7..],
        [LowSevere, LowMild, HighMild, HighSevere, Normal, Normal]
    );
    assert_eq!(
        r.counts,
        OutlierCounts {
            low_severe: 1,
            low_mild: 1,
            normal: 9,
            high_mild: 1,
            high_severe: 1
        }
    );
    assert_eq!(r.counts.outliers(), 4);
    let empty = classify_outliers(&[]);
    assert!(empty.fences.is_none() && empty.classes.is_empty());
    assert_eq!(empty.counts.total(), 0);
}

#[test]
fn median_interval_covers_the_true_median_at_about_the_nominal_rate() {
    use crate::synthetic::GpuLikeSamples;
    let model = GpuLikeSamples {
        outlier_fraction: 0.0,
        ..GpuLikeSamples::default()
    };
    let truth = model.base_ns; // log-normal noise: the median is the base.
    let mut rng = Pcg64Mcg::seed_from_u64(42);
    let trials = 200;
    let covered = (0..trials)
        .filter(|&t| {
            let xs = model.draw(30, &mut rng);
            let cfg = BootstrapConfig {
                seed: t as u64,
                ..BootstrapConfig::default()
            };
            median_estimate_with(&xs, cfg).contains(truth)
        })
        .count();
    let rate = covered as f64 / trials as f64;
    assert!((0.90..=0.99).contains(&rate), "coverage {rate}");
}

fn samples() -> impl Strategy<Value = Vec<f64>> {
    prop::collection::vec(1e-3f64..1e9, 1..60)
}

fn quick() -> BootstrapConfig {
    BootstrapConfig {
        resamples: 200,
        ..BootstrapConfig::default()
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn median_lies_between_min_and_max(xs in samples()) {
        let m = median(&xs);
        let s = sorted(&xs);
        prop_assert!(s[0] <= m && m <= s[s.len() - 1]);
        prop_assert_eq!(m, quantile_sorted(&s, 0.5));
    }

    #[test]
    fn intervals_contain_their_point(xs in samples(), seed in any::<u64>()) {
        let cfg = BootstrapConfig { seed, ..quick() };
        let med = median_estimate_with(&xs, cfg);
        prop_assert!(med.contains(med.point), "{:?}", med);
        let mean = mean_estimate_with(&xs, cfg);
        prop_assert!(mean.lower <= mean.upper, "{:?}", mean);
        let s = sorted(&xs);
        prop_assert!(s[0] <= med.lower && med.upper <= s[s.len() - 1]);
    }

    #[test]
    fn estimates_scale_with_the_data(xs in samples(), k in -20i32..20) {
        // Powers of two scale floats exactly, so equality is exact.
        let c = 2f64.powi(k);
        let ys: Vec<f64> = xs.iter().map(|x| x * c).collect();
        let (a, b) = (median_estimate_with(&xs, quick()), median_estimate_with(&ys, quick()));
        prop_assert_eq!((a.point * c, a.lower * c, a.upper * c), (b.point, b.lower, b.upper));
        prop_assert_eq!(mad(&xs) * c, mad(&ys));
        let (sx, sy) = (std_dev(&xs) * c, std_dev(&ys));
        prop_assert!((sx - sy).abs() <= 1e-9 * sy.abs());
        prop_assert_eq!(rel_noise(&xs), rel_noise(&ys));
        prop_assert_eq!(classify_outliers(&xs).classes, classify_outliers(&ys).classes);
    }

    #[test]
    fn outlier_classification_is_consistent(xs in samples()) {
        let r = classify_outliers(&xs);
        prop_assert_eq!(r.classes.len(), xs.len());
        prop_assert_eq!(r.counts.total(), xs.len());
        // Classes never decrease as the value grows.
        let mut pairs: Vec<(f64, OutlierClass)> =
            xs.iter().copied().zip(r.classes.iter().copied()).collect();
        pairs.sort_by(|a, b| a.0.total_cmp(&b.0));
        prop_assert!(pairs.windows(2).all(|w| w[0].1 <= w[1].1));
        // The median is never an outlier, and the middle half never is either.
        let f = r.fences.unwrap();
        prop_assert_eq!(f.classify(median(&xs)), OutlierClass::Normal);
        prop_assert!(f.low_severe <= f.low_mild && f.low_mild <= f.high_mild && f.high_mild <= f.high_severe);
    }

    #[test]
    fn spread_is_non_negative_and_zero_only_for_constant_data(xs in samples()) {
        prop_assert!(std_dev(&xs) >= 0.0 && mad(&xs) >= 0.0);
        let constant = xs.iter().all(|&x| x == xs[0]);
        if xs.len() > 1 {
            prop_assert_eq!(std_dev(&xs) == 0.0, constant);
        }
    }
}
