//! A point estimate with its confidence interval, as records (the eager-versus-compiled
//! speedup) and summaries carry it; the statistics that make one are
//! `gpubench-analysis`'s.

use serde::{Deserialize, Serialize};

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

    /// Whether `x` lies in the closed interval.
    pub fn contains(&self, x: f64) -> bool {
        self.lower <= x && x <= self.upper
    }
}
