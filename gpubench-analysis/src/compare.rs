//! Comparison of a run's per-iteration samples with a baseline's: the relative change
//! of the median with a bootstrap interval and significance, and a verdict.
//!
//! # The decision rule
//!
//! Both sides are resampled with replacement ([`CompareConfig::resamples`] times, from
//! [`CompareConfig::seed`]); each round gives a relative change of the medians,
//! `median(current*) / median(baseline*) − 1`. Of that distribution:
//!
//! * the **interval** is its central [`CompareConfig::confidence`] percentile range;
//! * the **p-value** is the two-sided bootstrap significance of "no change":
//!   `2 · (1 + min(#(change* ≤ 0), #(change* ≥ 0))) / (resamples + 1)`, capped at 1 — the
//!   smallest error rate at which a percentile interval would still exclude zero.
//!
//! With `t` the [`CompareConfig::noise_threshold`] and `α` the
//! [`CompareConfig::significance`]:
//!
//! | verdict | when |
//! |---|---|
//! | [`Verdict::Regressed`] | `p < α` and the whole interval lies above `+t` |
//! | [`Verdict::Improved`] | `p < α` and the whole interval lies below `−t` |
//! | [`Verdict::NoChange`] | the whole interval lies within `[−t, +t]` (significant or not: a real change smaller than the noise threshold is no change worth reporting) |
//! | [`Verdict::Ambiguous`] | anything else: the interval straddles `±t` or is wider than the band, or a side has fewer than [`MIN_SAMPLES_PER_SIDE`] samples |
//!
//! Requiring the whole interval beyond the threshold (not just the point estimate)
//! is what keeps false alarms rare: calibrated on synthetic GPU-like samples (1%
//! noise, 2% of samples 1.3–2× slower, 10–100 samples a side; see
//! `benches/calibration.rs`), identical distributions are called regressed in well
//! under 1% of comparisons, while a 5% slowdown is called regressed in over 95%.

use std::fmt;

use rand::SeedableRng;
use rand_pcg::Pcg64Mcg;
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::stats::{
    median, quantile_sorted, sorted, Estimate, MedianResampler, DEFAULT_CONFIDENCE,
    DEFAULT_RESAMPLES, DEFAULT_SEED,
};

/// Default significance level: a change must have p < 0.05.
pub const DEFAULT_SIGNIFICANCE: f64 = 0.05;
/// Default noise threshold: changes within ±2% are no change. GPU clocks, thermals and
/// driver state move run-to-run timings by about that much.
pub const DEFAULT_NOISE_THRESHOLD: f64 = 0.02;
/// Fewest samples on each side for a verdict other than [`Verdict::Ambiguous`]: one or
/// two samples cannot show how noisy a benchmark is.
pub const MIN_SAMPLES_PER_SIDE: usize = 3;

/// How a comparison decides.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CompareConfig {
    /// Largest p-value that counts as significant; default [`DEFAULT_SIGNIFICANCE`].
    pub significance: f64,
    /// Relative change (0.02 = 2%) that is noise, not a change; default
    /// [`DEFAULT_NOISE_THRESHOLD`].
    pub noise_threshold: f64,
    /// Confidence level of the change's interval; default
    /// [`DEFAULT_CONFIDENCE`] (0.95).
    pub confidence: f64,
    /// Bootstrap resamples; default [`DEFAULT_RESAMPLES`] (2000).
    pub resamples: usize,
    /// Seed of the resampling, so a comparison is reproducible; default
    /// [`DEFAULT_SEED`].
    pub seed: u64,
}

impl Default for CompareConfig {
    fn default() -> Self {
        CompareConfig {
            significance: DEFAULT_SIGNIFICANCE,
            noise_threshold: DEFAULT_NOISE_THRESHOLD,
            confidence: DEFAULT_CONFIDENCE,
            resamples: DEFAULT_RESAMPLES,
            seed: DEFAULT_SEED,
        }
    }
}

impl CompareConfig {
    /// Checks that every field is in range.
    pub fn validate(&self) -> Result<(), CompareError> {
        let open_unit = |x: f64| x > 0.0 && x < 1.0;
        let reason = if !open_unit(self.significance) {
            "significance must lie strictly between 0 and 1"
        } else if !open_unit(self.confidence) {
            "confidence must lie strictly between 0 and 1"
        } else if !(self.noise_threshold.is_finite() && self.noise_threshold >= 0.0) {
            "noise threshold must be a finite number of at least 0"
        } else if self.resamples == 0 {
            "resamples must be at least 1"
        } else {
            return Ok(());
        };
        Err(CompareError::InvalidConfig { reason })
    }
}

/// What a comparison concluded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Significantly faster, by more than the noise threshold.
    Improved,
    /// Significantly slower, by more than the noise threshold.
    Regressed,
    /// Any change is within the noise threshold.
    NoChange,
    /// Too noisy (or too few samples) to tell.
    Ambiguous,
}

impl Verdict {
    /// Words for tables.
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Improved => "improved",
            Verdict::Regressed => "regressed",
            Verdict::NoChange => "no change",
            Verdict::Ambiguous => "ambiguous",
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// A run's samples against a baseline's.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// Relative change of the median, `current / baseline − 1` (0.05: 5% slower), with
    /// its bootstrap interval.
    pub change: Estimate,
    /// Bootstrap significance of "no change"; see the module docs.
    pub p_value: f64,
    /// The verdict.
    pub verdict: Verdict,
    /// Median of the baseline's samples, ns.
    pub baseline_median: f64,
    /// Median of the current samples, ns.
    pub current_median: f64,
    /// Samples in the baseline.
    pub baseline_samples: usize,
    /// Samples in the current run.
    pub current_samples: usize,
    /// The noise threshold the verdict used.
    pub noise_threshold: f64,
    /// The significance level the verdict used.
    pub significance: f64,
}

/// Which side of a comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    /// The baseline's samples.
    Baseline,
    /// The current run's samples.
    Current,
}

impl fmt::Display for Side {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Side::Baseline => "baseline",
            Side::Current => "current",
        })
    }
}

/// Why samples could not be compared.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum CompareError {
    /// A side has no samples.
    #[error("no {side} samples to compare")]
    NoSamples {
        /// The empty side.
        side: Side,
    },
    /// A side has a NaN, infinite or negative time.
    #[error("{side} samples include a time that is not a finite non-negative number: {value}")]
    InvalidSample {
        /// The side.
        side: Side,
        /// The offending value.
        value: f64,
    },
    /// A side's median is zero, so a relative change is undefined.
    #[error("{side} median is zero, so a relative change is undefined")]
    ZeroMedian {
        /// The side.
        side: Side,
    },
    /// The configuration is out of range.
    #[error("invalid comparison settings: {reason}")]
    InvalidConfig {
        /// What is wrong.
        reason: &'static str,
    },
}

fn check_side(xs: &[f64], side: Side) -> Result<f64, CompareError> {
    if xs.is_empty() {
        return Err(CompareError::NoSamples { side });
    }
    if let Some(&value) = xs.iter().find(|x| !(x.is_finite() && **x >= 0.0)) {
        return Err(CompareError::InvalidSample { side, value });
    }
    let m = median(xs);
    if m == 0.0 {
        return Err(CompareError::ZeroMedian { side });
    }
    Ok(m)
}

fn relative_change(current: f64, baseline: f64) -> f64 {
    if baseline == 0.0 {
        // Only reachable inside resamples: the data's own medians are checked.
        return if current == 0.0 { 0.0 } else { f64::INFINITY };
    }
    current / baseline - 1.0
}

/// Compares `current` per-iteration times with `baseline`'s (both ns) under `config`;
/// see the module docs for the rule. Deterministic for a given seed.
pub fn compare_samples(
    baseline: &[f64],
    current: &[f64],
    config: &CompareConfig,
) -> Result<Comparison, CompareError> {
    config.validate()?;
    let baseline_median = check_side(baseline, Side::Baseline)?;
    let current_median = check_side(current, Side::Current)?;
    let point = relative_change(current_median, baseline_median);

    let mut rng = Pcg64Mcg::seed_from_u64(config.seed);
    let mut old = MedianResampler::new(baseline);
    let mut new = MedianResampler::new(current);
    let changes: Vec<f64> = (0..config.resamples)
        .map(|_| {
            let was = old.resample_median(&mut rng);
            relative_change(new.resample_median(&mut rng), was)
        })
        .collect();
    let at_or_below = changes.iter().filter(|&&c| c <= 0.0).count();
    let at_or_above = changes.iter().filter(|&&c| c >= 0.0).count();
    let tail = at_or_below.min(at_or_above);
    let p_value = (2.0 * (1 + tail) as f64 / (config.resamples + 1) as f64).min(1.0);

    let changes = sorted(&changes);
    let alpha = (1.0 - config.confidence) / 2.0;
    let change = Estimate {
        point,
        lower: quantile_sorted(&changes, alpha),
        upper: quantile_sorted(&changes, 1.0 - alpha),
        confidence: config.confidence,
    };
    let verdict = if baseline.len().min(current.len()) < MIN_SAMPLES_PER_SIDE {
        Verdict::Ambiguous
    } else {
        decide(&change, p_value, config)
    };
    Ok(Comparison {
        change,
        p_value,
        verdict,
        baseline_median,
        current_median,
        baseline_samples: baseline.len(),
        current_samples: current.len(),
        noise_threshold: config.noise_threshold,
        significance: config.significance,
    })
}

/// The table of the module docs.
fn decide(change: &Estimate, p_value: f64, config: &CompareConfig) -> Verdict {
    let t = config.noise_threshold;
    let significant = p_value < config.significance;
    if significant && change.lower > t {
        Verdict::Regressed
    } else if significant && change.upper < -t {
        Verdict::Improved
    } else if change.lower >= -t && change.upper <= t {
        Verdict::NoChange
    } else {
        Verdict::Ambiguous
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synthetic::GpuLikeSamples;
    use proptest::prelude::*;
    use rand::SeedableRng;

    fn quick() -> CompareConfig {
        CompareConfig {
            resamples: 500,
            ..CompareConfig::default()
        }
    }

    #[test]
    fn clear_changes_get_clear_verdicts() {
        let model = GpuLikeSamples::default();
        let mut rng = Pcg64Mcg::seed_from_u64(3);
        let old = model.draw(30, &mut rng);
        let same = model.draw(30, &mut rng);
        let slower = model.scaled(1.10).draw(30, &mut rng);
        let faster = model.scaled(0.90).draw(30, &mut rng);
        let cfg = CompareConfig::default();

        let c = compare_samples(&old, &slower, &cfg).unwrap();
        assert_eq!(c.verdict, Verdict::Regressed, "{c:?}");
        assert!(c.change.contains(0.10) && c.p_value < 0.01, "{c:?}");
        assert!((c.current_median / c.baseline_median - 1.0 - c.change.point).abs() < 1e-12);

        let c = compare_samples(&old, &faster, &cfg).unwrap();
        assert_eq!(c.verdict, Verdict::Improved, "{c:?}");

        let c = compare_samples(&old, &same, &cfg).unwrap();
        assert_eq!(c.verdict, Verdict::NoChange, "{c:?}");
        assert!(c.change.contains(0.0));
    }

    #[test]
    fn a_change_near_the_threshold_or_in_very_noisy_data_is_ambiguous() {
        let mut rng = Pcg64Mcg::seed_from_u64(4);
        let noisy = GpuLikeSamples {
            rel_noise: 0.10,
            ..GpuLikeSamples::default()
        };
        let c = compare_samples(
            &noisy.draw(15, &mut rng),
            &noisy.scaled(1.03).draw(15, &mut rng),
            &CompareConfig::default(),
        )
        .unwrap();
        assert_eq!(c.verdict, Verdict::Ambiguous, "{c:?}");
        // A clean 2% step straddles the 2% threshold.
        let quiet = GpuLikeSamples {
            rel_noise: 0.002,
            outlier_fraction: 0.0,
            ..GpuLikeSamples::default()
        };
        let c = compare_samples(
            &quiet.draw(50, &mut rng),
            &quiet.scaled(1.02).draw(50, &mut rng),
            &CompareConfig::default(),
        )
        .unwrap();
        assert_eq!(c.verdict, Verdict::Ambiguous, "{c:?}");
        assert!(c.p_value < 0.01, "real but not beyond the threshold: {c:?}");
    }

    #[test]
    fn a_significant_change_below_the_threshold_is_no_change() {
        let quiet = GpuLikeSamples {
            rel_noise: 0.001,
            outlier_fraction: 0.0,
            ..GpuLikeSamples::default()
        };
        let mut rng = Pcg64Mcg::seed_from_u64(5);
        let c = compare_samples(
            &quiet.draw(50, &mut rng),
            &quiet.scaled(1.005).draw(50, &mut rng),
            &CompareConfig::default(),
        )
        .unwrap();
        assert!(c.p_value < 0.01, "{c:?}");
        assert_eq!(c.verdict, Verdict::NoChange, "{c:?}");
    }

    #[test]
    fn two_samples_are_too_few_for_a_verdict() {
        let c = compare_samples(&[100.0, 101.0], &[200.0, 201.0], &quick()).unwrap();
        assert_eq!(c.verdict, Verdict::Ambiguous);
        assert!(c.change.point > 0.9);
        let c = compare_samples(&[100.0, 101.0, 100.5], &[200.0, 201.0, 200.5], &quick());
        assert_eq!(c.unwrap().verdict, Verdict::Regressed);
    }

    #[test]
    fn bad_input_is_an_error_not_a_panic() {
        let cfg = quick();
        assert_eq!(
            compare_samples(&[], &[1.0], &cfg),
            Err(CompareError::NoSamples {
                side: Side::Baseline
            })
        );
        let err = compare_samples(&[1.0, 2.0], &[1.0, f64::NAN], &cfg).unwrap_err();
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
        assert!(compare_samples(&[1.0, -2.0], &[1.0], &cfg).is_err());
        assert_eq!(
            compare_samples(&[0.0, 0.0, 1.0], &[1.0], &cfg),
            Err(CompareError::ZeroMedian {
                side: Side::Baseline
            })
        );
        let bad = CompareConfig {
            significance: 1.5,
            ..cfg
        };
        let err = compare_samples(&[1.0], &[1.0], &bad).unwrap_err();
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
        ] {
            assert!(bad.validate().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn verdicts_serialise_in_snake_case() {
        let json = serde_json::to_string(&[Verdict::NoChange, Verdict::Regressed]).unwrap();
        assert_eq!(json, r#"["no_change","regressed"]"#);
    }

    #[test]
    fn false_alarms_are_rare_and_slowdowns_are_caught() {
        // A small version of benches/calibration.rs, so the rule cannot drift unnoticed.
        let model = GpuLikeSamples::default();
        let mut rng = Pcg64Mcg::seed_from_u64(6);
        let trials = 60;
        let mut false_alarms = 0;
        let mut caught = 0;
        for seed in 0..trials {
            let cfg = CompareConfig { seed, ..quick() };
            let old = model.draw(30, &mut rng);
            let same = model.draw(30, &mut rng);
            let slow = model.scaled(1.05).draw(30, &mut rng);
            if compare_samples(&old, &same, &cfg).unwrap().verdict == Verdict::Regressed {
                false_alarms += 1;
            }
            if compare_samples(&old, &slow, &cfg).unwrap().verdict == Verdict::Regressed {
                caught += 1;
            }
        }
        assert_eq!(false_alarms, 0);
        assert!(caught >= trials - 2, "caught {caught} of {trials}");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn comparisons_are_reproducible_and_consistent(
            old in prop::collection::vec(1.0f64..1e6, 1..40),
            new in prop::collection::vec(1.0f64..1e6, 1..40),
            seed in any::<u64>(),
        ) {
            let cfg = CompareConfig { seed, resamples: 200, ..CompareConfig::default() };
            let a = compare_samples(&old, &new, &cfg).unwrap();
            prop_assert_eq!(a, compare_samples(&old, &new, &cfg).unwrap());
            prop_assert!(a.change.lower <= a.change.upper);
            prop_assert!(a.p_value > 0.0 && a.p_value <= 1.0);
            match a.verdict {
                Verdict::Regressed => prop_assert!(a.change.lower > cfg.noise_threshold),
                Verdict::Improved => prop_assert!(a.change.upper < -cfg.noise_threshold),
                Verdict::NoChange => prop_assert!(
                    a.change.lower >= -cfg.noise_threshold && a.change.upper <= cfg.noise_threshold
                ),
                Verdict::Ambiguous => {}
            }
        }

        #[test]
        fn swapping_sides_mirrors_the_verdict(
            old in prop::collection::vec(1.0f64..1e6, 3..40),
            new in prop::collection::vec(1.0f64..1e6, 3..40),
        ) {
            let cfg = CompareConfig { resamples: 200, ..CompareConfig::default() };
            let ab = compare_samples(&old, &new, &cfg).unwrap();
            let ba = compare_samples(&new, &old, &cfg).unwrap();
            let mirrored = match ab.verdict {
                Verdict::Regressed => Verdict::Improved,
                Verdict::Improved => Verdict::Regressed,
                v => v,
            };
            // Resampling noise can move a borderline case to ambiguous, never across.
            prop_assert!(ba.verdict == mirrored || ba.verdict == Verdict::Ambiguous
                || ab.verdict == Verdict::Ambiguous, "{:?} vs {:?}", ab, ba);
            prop_assert!(((1.0 + ab.change.point) * (1.0 + ba.change.point) - 1.0).abs() < 1e-9);
        }
    }
}
