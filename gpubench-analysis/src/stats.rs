//! Statistics on samples: point estimates with bootstrap confidence intervals.
//!
//! Every resampling routine takes a seed, so the same samples always give the same
//! interval (reports and baselines must be reproducible).

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use serde::{Deserialize, Serialize};

/// Default confidence level of intervals.
pub const DEFAULT_CONFIDENCE: f64 = 0.95;
/// Default number of bootstrap resamples.
pub const DEFAULT_RESAMPLES: usize = 2000;
/// Default seed of the bootstrap.
pub const DEFAULT_SEED: u64 = 0x6770_7562_656e_6368;

/// A point estimate with its confidence interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    /// The point estimate.
    pub point: f64,
    /// Lower bound of the interval.
    pub lower: f64,
    /// Upper bound of the interval.
    pub upper: f64,
    /// Confidence level of the interval, e.g. 0.95.
    pub confidence: f64,
}

impl Estimate {
    /// Half the interval's width relative to the point estimate.
    pub fn rel_half_width(&self) -> f64 {
        if self.point == 0.0 {
            return f64::INFINITY;
        }
        (self.upper - self.lower) / 2.0 / self.point.abs()
    }
}

/// Arithmetic mean; NaN for no data.
pub fn mean(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// Sorted copy of `xs` (NaNs last).
pub fn sorted(xs: &[f64]) -> Vec<f64> {
    let mut v = xs.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    v
}

/// Linear-interpolated quantile `q` in [0, 1] of already sorted data.
pub fn quantile_sorted(sorted: &[f64], q: f64) -> f64 {
    match sorted.len() {
        0 => f64::NAN,
        1 => sorted[0],
        n => {
            let pos = q.clamp(0.0, 1.0) * (n - 1) as f64;
            let lo = pos.floor() as usize;
            let hi = pos.ceil() as usize;
            let frac = pos - lo as f64;
            sorted[lo] + (sorted[hi] - sorted[lo]) * frac
        }
    }
}

/// Median; NaN for no data.
pub fn median(xs: &[f64]) -> f64 {
    quantile_sorted(&sorted(xs), 0.5)
}

/// Percentile bootstrap interval of `statistic` over `xs`.
pub fn bootstrap<F>(
    xs: &[f64],
    statistic: F,
    confidence: f64,
    resamples: usize,
    seed: u64,
) -> Estimate
where
    F: Fn(&[f64]) -> f64,
{
    let point = statistic(xs);
    if xs.len() < 2 || resamples == 0 {
        return Estimate {
            point,
            lower: point,
            upper: point,
            confidence,
        };
    }
    let mut rng = Pcg64Mcg::seed_from_u64(seed);
    let mut buf = vec![0.0; xs.len()];
    let mut stats = Vec::with_capacity(resamples);
    for _ in 0..resamples {
        for slot in buf.iter_mut() {
            *slot = xs[rng.gen_range(0..xs.len())];
        }
        stats.push(statistic(&buf));
    }
    let stats = sorted(&stats);
    let alpha = (1.0 - confidence) / 2.0;
    Estimate {
        point,
        lower: quantile_sorted(&stats, alpha),
        upper: quantile_sorted(&stats, 1.0 - alpha),
        confidence,
    }
}

/// Median with a percentile-bootstrap interval at the default confidence and seed.
pub fn median_estimate(xs: &[f64]) -> Estimate {
    bootstrap(
        xs,
        median,
        DEFAULT_CONFIDENCE,
        DEFAULT_RESAMPLES,
        DEFAULT_SEED,
    )
}

/// Mean with a percentile-bootstrap interval at the default confidence and seed.
pub fn mean_estimate(xs: &[f64]) -> Estimate {
    bootstrap(
        xs,
        mean,
        DEFAULT_CONFIDENCE,
        DEFAULT_RESAMPLES,
        DEFAULT_SEED,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_and_quantiles() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[]).is_nan());
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
}
