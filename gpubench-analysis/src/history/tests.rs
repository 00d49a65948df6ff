use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;

use super::*;

/// `n` points of 1 ms times `level(i)`, each with ±`noise` (log-normal-ish) scatter
/// and an interval of ±`half` around it.
fn series(
    n: usize,
    noise: f64,
    half: f64,
    seed: u64,
    level: impl Fn(usize) -> f64,
) -> Vec<SeriesPoint> {
    let mut rng = Pcg64::seed_from_u64(seed);
    (0..n)
        .map(|i| {
            let e: f64 = rng.gen_range(-1.0..1.0) * noise;
            let v = 1e6 * level(i) * (1.0 + e);
            SeriesPoint {
                value: v,
                lower: v * (1.0 - half),
                upper: v * (1.0 + half),
            }
        })
        .collect()
}

#[test]
fn a_five_percent_step_is_found_at_its_commit() {
    for seed in 0..20 {
        let s = series(15, 0.005, 0.01, seed, |i| if i >= 8 { 1.05 } else { 1.0 });
        let a = analyse_measured(&s, &HistoryOptions::default());
        assert_eq!(a.change_points.len(), 1, "seed {seed}: {a:?}");
        let c = a.change_points[0];
        assert!(c.index.abs_diff(8) <= 1, "seed {seed}: at {}", c.index);
        assert!((c.change - 0.05).abs() < 0.01, "size {}", c.change);
        assert!(c.change_lower > 0.02 && c.change_upper > c.change);
        let d = a.drift.expect("15 points have a drift window");
        assert!(!d.flagged, "seed {seed}: a step is not a drift: {d:?}");
    }
}

#[test]
fn a_flat_series_has_no_change_point_and_no_drift() {
    for seed in 0..50 {
        let s = series(15, 0.01, 0.01, seed, |_| 1.0);
        let a = analyse_measured(&s, &HistoryOptions::default());
        assert!(a.change_points.is_empty(), "seed {seed}: {a:?}");
        assert!(!a.drift.unwrap().flagged, "seed {seed}");
    }
}

#[test]
fn a_one_percent_per_commit_drift_is_flagged() {
    for seed in 0..20 {
        // Flat for 5 commits, then +1% per commit for 10.
        let s = series(15, 0.003, 0.01, seed, |i| {
            1.01f64.powi(i.saturating_sub(5) as i32)
        });
        let a = analyse_measured(&s, &HistoryOptions::default());
        let d = a.drift.unwrap();
        assert!(d.flagged, "seed {seed}: {d:?}");
        assert!((d.per_commit - 0.01).abs() < 0.003, "{d:?}");
        assert!(d.per_commit_lower > 0.0 && d.per_commit_upper > d.per_commit);
        assert!((d.total - 0.094).abs() < 0.03, "{d:?}");
        assert_eq!(d.points, 10);
        assert_eq!(d.from_index, 5);
    }
}

#[test]
fn wide_point_intervals_raise_the_threshold() {
    // A 5% step whose points each carry a ±10% interval is within one point's noise.
    let s = series(15, 0.002, 0.10, 1, |i| if i >= 8 { 1.05 } else { 1.0 });
    let a = analyse_measured(&s, &HistoryOptions::default());
    assert!((a.threshold - 0.10).abs() < 1e-9);
    assert!(a.change_points.is_empty(), "{a:?}");
}

#[test]
fn two_steps_are_both_found() {
    let s = series(24, 0.004, 0.01, 7, |i| match i {
        0..=7 => 1.0,
        8..=15 => 1.10,
        _ => 0.95,
    });
    let a = analyse_measured(&s, &HistoryOptions::default());
    let at: Vec<usize> = a.change_points.iter().map(|c| c.index).collect();
    assert_eq!(at, vec![8, 16], "{a:?}");
    assert!(a.change_points[1].change < -0.1);
}

#[test]
fn short_series_have_no_change_points() {
    let s = series(5, 0.0, 0.01, 1, |i| if i >= 3 { 2.0 } else { 1.0 });
    let a = analyse_measured(&s, &HistoryOptions::default());
    assert!(a.change_points.is_empty());
    assert!(a.drift.is_some(), "5 points are enough for a drift window");
    assert!(analyse_measured(&s[..4], &HistoryOptions::default())
        .drift
        .is_none());
}

#[test]
fn exact_figures_change_at_every_differing_commit() {
    let c = exact_change_points(&[12.0, 12.0, 12.0, 13.0, 13.0, 12.0]);
    assert_eq!(c.iter().map(|c| c.index).collect::<Vec<_>>(), vec![3, 5]);
    assert_eq!(c[0].before, 12.0);
    assert_eq!(c[0].after, 13.0);
    assert!((c[0].change - 1.0 / 12.0).abs() < 1e-12);
    assert_eq!(c[0].change_lower, c[0].change);
    assert!(exact_change_points(&[4.0; 9]).is_empty());
}

#[test]
fn a_head_change_continues_a_drift_in_its_direction_only() {
    let s = series(12, 0.002, 0.01, 3, |i| 1.01f64.powi(i as i32));
    let d = analyse_measured(&s, &HistoryOptions::default())
        .drift
        .unwrap();
    assert!(d.flagged);
    assert!(continues_drift(&d, 0.03, 0.02));
    assert!(!continues_drift(&d, -0.03, 0.02));
    assert!(!continues_drift(&d, 0.01, 0.02));
}

#[test]
fn the_split_maximises_q_at_a_clean_step() {
    let z = [0.0, 0.0, 0.1, 0.0, 1.0, 1.1, 1.0, 1.0];
    assert_eq!(best_split(&z, 2), Some(4));
}

#[test]
fn a_noisy_point_can_neither_hide_nor_make_a_step() {
    // A 10% step at 6; one point of the new level measured with a ±60% interval.
    let mut s = series(12, 0.003, 0.01, 5, |i| if i >= 6 { 1.10 } else { 1.0 });
    s[8].lower = s[8].value * 0.4;
    s[8].upper = s[8].value * 1.6;
    let a = analyse_measured(&s, &HistoryOptions::default());
    assert_eq!(a.unplaced, vec![8]);
    let at: Vec<usize> = a.change_points.iter().map(|c| c.index).collect();
    assert_eq!(at, vec![6], "{a:?}");
    assert!((a.change_points[0].change - 0.10).abs() < 0.01, "{a:?}");
    // Below the cut, the wide point weighs in, a little: still found.
    s[8].lower = s[8].value * 0.97;
    s[8].upper = s[8].value * 1.03;
    let a = analyse_measured(&s, &HistoryOptions::default());
    assert!(a.unplaced.is_empty());
    assert_eq!(a.change_points.len(), 1, "{a:?}");

    // Flat, with two wide points far off at the end: no step, no drift.
    let mut s = series(12, 0.003, 0.01, 6, |_| 1.0);
    for i in [9, 10] {
        s[i].value *= 1.5;
        s[i].lower = s[i].value * 0.3;
        s[i].upper = s[i].value * 1.7;
    }
    let a = analyse_measured(&s, &HistoryOptions::default());
    assert!(a.change_points.is_empty(), "{a:?}");
    assert!(!a.drift.unwrap().flagged);
}

#[test]
fn a_point_wider_than_its_neighbours_weighs_less() {
    // Four points at 1.0, the fifth at 1.2 with five times their interval: the
    // side's level stays near 1.0 (an unweighted mean would say 1.04).
    let x = [0.0, 0.0, 0.0, 0.0, 1.2f64.ln()];
    let se = [0.01, 0.01, 0.01, 0.01, 0.05];
    let y = [0.3f64; 4];
    let step = test_step(&x, &se, &y, &[0.01; 4], 0.95).unwrap();
    assert!(step.mean_before < 0.02, "{}", step.mean_before);
}
