//! When a sampling loop has taken enough samples, and the order in which two sides
//! alternate: the one stopping rule of every loop (a process's samples, `ab`'s
//! paired blocks, eager-versus-compiled's blocks, a side measured alone) and the one
//! balanced scheme (`x y y x`) of the two that alternate sides.
//!
//! # The stopping rule
//!
//! Sample at least `min_samples` times; after each sample that counts, stop once the
//! median's 95% interval is within ± `target_rel_ci` of it (checked after every
//! sample up to 50, then every 5th: the check is a bootstrap); stop at the
//! measurement time bound once `min_samples` are taken, and at `max_samples`.
//! A sample left out of the figures (throttled) counts towards the bounds but
//! neither towards the minimum of the interval nor its width.
//!
//! # The alternation
//!
//! Two sides `x` and `y` measured in one process alternate in blocks `x y y x`: each
//! side goes first in half the pairs, and has one sample right after the other
//! side's and one right after its own, so an order effect (an identical matmul
//! sampled right after another kernel read 0.4–1.3% slower on the H200) weighs on
//! both alike and cancels in the block's ratio of their mean per-call times, where a
//! ratio of two adjacent samples (`x y`, then `y x`) would carry it. Sampling stops
//! by the rule above applied to the blocks' ratios.

use std::time::{Duration, Instant};

use gpubench_record::measurement::{MeasurementConfig, StopReason, TimeKind};

use crate::stats::{median_estimate_with, BootstrapConfig};

/// Resamples of the stopping check: it runs after every sample and only needs to be
/// roughly right (reported intervals use the default count).
const STOP_CHECK_RESAMPLES: usize = 500;

/// Up to this many samples the interval is checked after every one, then after
/// every 5th.
const CHECK_EVERY_SAMPLE_UNTIL: usize = 50;

/// When a sampling loop stops (module docs).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StoppingRule {
    /// Fewest samples (at least 2: an interval needs two).
    pub min: usize,
    /// Most samples (at least `min`).
    pub max: usize,
    /// The measurement time bound.
    pub time_bound: Duration,
    /// Stop once the median's interval is within ± this fraction.
    pub target_rel_ci: f64,
}

impl StoppingRule {
    /// The rule of `config`'s sample bounds, measurement time and target.
    pub fn of(config: &MeasurementConfig) -> Self {
        let min = config.min_samples.max(2) as usize;
        StoppingRule {
            min,
            max: (config.max_samples as usize).max(min),
            time_bound: Duration::from_secs_f64(config.measurement_time_s),
            target_rel_ci: config.target_rel_ci,
        }
    }

    /// A loop under this rule, its clock started now.
    pub fn start(&self) -> Sampling {
        Sampling {
            rule: *self,
            kept: Vec::new(),
            taken: 0,
            started: Instant::now(),
        }
    }

    /// Whether the interval of the median of `kept` is narrow enough, when the rule
    /// checks it at this count.
    fn converged(&self, kept: &[f64]) -> bool {
        let n = kept.len();
        if n < self.min || (n >= CHECK_EVERY_SAMPLE_UNTIL && !n.is_multiple_of(5)) {
            return false;
        }
        let estimate = median_estimate_with(
            kept,
            BootstrapConfig {
                resamples: STOP_CHECK_RESAMPLES,
                ..BootstrapConfig::default()
            },
        );
        estimate.rel_half_width() <= self.target_rel_ci
    }
}

/// A sampling loop in progress: what it has taken, and since when.
#[derive(Debug, Clone)]
pub struct Sampling {
    rule: StoppingRule,
    kept: Vec<f64>,
    taken: usize,
    started: Instant,
}

impl Sampling {
    /// Counts one sample taken: `Some(figure)` when it counts, `None` when it is left
    /// out (throttled). Returns why the loop stops, or `None` to take another.
    pub fn add(&mut self, figure: Option<f64>) -> Option<StopReason> {
        self.taken += 1;
        if let Some(x) = figure {
            self.kept.push(x);
            if self.rule.converged(&self.kept) {
                return Some(StopReason::Converged);
            }
        }
        if self.taken >= self.rule.min && self.started.elapsed() >= self.rule.time_bound {
            return Some(StopReason::TimeBound);
        }
        (self.taken >= self.rule.max).then_some(StopReason::SampleBound)
    }

    /// The figures that counted, in the order taken.
    pub fn kept(&self) -> &[f64] {
        &self.kept
    }
}

/// One of two alternated sides: `x` (first in each block) or `y`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// `x`: opens and closes each block.
    First,
    /// `y`: the middle two samples of each block.
    Second,
}

impl Side {
    /// The other side.
    pub fn other(self) -> Side {
        match self {
            Side::First => Side::Second,
            Side::Second => Side::First,
        }
    }
}

/// The order of the samples in one block: `x y y x`.
pub const BLOCK: [Side; 4] = [Side::First, Side::Second, Side::Second, Side::First];

/// One sample's per-call time, ns: device time when the device timer measured it,
/// and synced wall time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PerCall {
    /// Device time per call; `None` without a device timer.
    pub device_ns: Option<f64>,
    /// Synced wall time per call.
    pub wall_ns: f64,
}

/// What alternating two sides gave.
#[derive(Debug, Clone, PartialEq)]
pub struct Alternated {
    /// Each block's ratio of the `numerator` side's mean per-call time over the
    /// other's, in the order taken.
    pub ratios: Vec<f64>,
    /// Why sampling stopped.
    pub stopped: StopReason,
    /// The timer the ratios rest on: device time when every sample of every block
    /// had it, else synced wall time for a block that lacked it.
    pub kind: TimeKind,
}

/// Alternates two sides in blocks of [`BLOCK`] until `rule` stops on the blocks'
/// ratios of `numerator` over the other side. `sample(side)` takes one sample of
/// `side` (its number of calls is the caller's); its `Err` ends the alternation.
pub fn alternate<E>(
    rule: &StoppingRule,
    numerator: Side,
    mut sample: impl FnMut(Side) -> Result<PerCall, E>,
) -> Result<Alternated, E> {
    let mut sampling = rule.start();
    let mut kind = TimeKind::Device;
    loop {
        let mut block = [(
            Side::First,
            PerCall {
                device_ns: None,
                wall_ns: 0.0,
            },
        ); 4];
        for (slot, side) in block.iter_mut().zip(BLOCK) {
            *slot = (side, sample(side)?);
        }
        let ratio = block_ratio(&block, numerator);
        if block.iter().any(|(_, s)| s.device_ns.is_none()) {
            kind = TimeKind::Wall;
        }
        if let Some(stopped) = sampling.add(Some(ratio)) {
            return Ok(Alternated {
                ratios: sampling.kept,
                stopped,
                kind,
            });
        }
    }
}

/// A block's ratio of `numerator`'s mean per-call time over the other side's: device
/// time when all four samples have it, else synced wall time.
fn block_ratio(block: &[(Side, PerCall); 4], numerator: Side) -> f64 {
    let device = block.iter().all(|(_, s)| s.device_ns.is_some());
    let figures = block.map(|(side, s)| {
        (
            side,
            match s.device_ns {
                Some(d) if device => d,
                _ => s.wall_ns,
            }
            .max(1e-3),
        )
    });
    mean_ratio(&figures, numerator)
}

/// A block's ratio of `numerator`'s mean figure over the other side's (per-call
/// time, or energy per call of `ab`'s alternated energy windows).
pub fn mean_ratio(block: &[(Side, f64); 4], numerator: Side) -> f64 {
    let mean = |side: Side| -> f64 {
        let of_side: Vec<f64> = block
            .iter()
            .filter(|(s, _)| *s == side)
            .map(|(_, x)| *x)
            .collect();
        of_side.iter().sum::<f64>() / of_side.len() as f64
    };
    mean(numerator) / mean(numerator.other())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(min: usize, max: usize, target_rel_ci: f64) -> StoppingRule {
        StoppingRule {
            min,
            max,
            time_bound: Duration::from_secs(3600),
            target_rel_ci,
        }
    }

    #[test]
    fn steady_samples_converge_at_the_minimum_and_noisy_ones_at_the_bound() {
        let mut steady = rule(5, 100, 0.01).start();
        let stops: Vec<_> = (0..5).map(|_| steady.add(Some(10.0))).collect();
        assert_eq!(stops[..4], [None, None, None, None]);
        assert_eq!(stops[4], Some(StopReason::Converged));

        let mut noisy = rule(5, 20, 0.001).start();
        let mut taken = 0;
        let stopped = loop {
            taken += 1;
            let x = if taken % 2 == 0 { 10.0 } else { 20.0 };
            if let Some(s) = noisy.add(Some(x)) {
                break s;
            }
        };
        assert_eq!((stopped, taken), (StopReason::SampleBound, 20));
    }

    #[test]
    fn a_left_out_sample_counts_towards_the_bounds_but_not_the_interval() {
        let mut s = rule(3, 4, 0.5).start();
        assert_eq!(s.add(Some(1.0)), None);
        assert_eq!(s.add(None), None);
        assert_eq!(s.add(Some(1.0)), None, "two kept: under the minimum of 3");
        assert_eq!(s.add(None), Some(StopReason::SampleBound));
        assert_eq!(s.kept(), [1.0, 1.0]);
    }

    #[test]
    fn the_time_bound_stops_only_past_the_minimum() {
        let mut s = StoppingRule {
            time_bound: Duration::ZERO,
            ..rule(3, 100, 1e-9)
        }
        .start();
        assert_eq!(s.add(Some(1.0)), None);
        assert_eq!(s.add(Some(2.0)), None);
        assert_eq!(s.add(Some(3.0)), Some(StopReason::TimeBound));
    }

    #[test]
    fn blocks_are_x_y_y_x_and_an_order_effect_cancels_in_their_ratio() {
        // The side sampled right after the other side reads 10% slower: an order
        // effect on two identical sides.
        let mut order = Vec::new();
        let mut previous = None;
        let alternated = alternate(&rule(4, 4, 1e-9), Side::Second, |side| {
            order.push(side);
            let after_other = previous.is_some_and(|p| p != side);
            previous = Some(side);
            let t = if after_other { 110.0 } else { 100.0 };
            Ok::<_, ()>(PerCall {
                device_ns: Some(t),
                wall_ns: t + 5.0,
            })
        })
        .unwrap();
        assert_eq!(order[..8], [BLOCK, BLOCK].concat()[..]);
        assert_eq!(alternated.ratios.len(), 4, "the rule stops at 4 blocks");
        assert_eq!(alternated.kind, TimeKind::Device);
        // From the second block on each side has one sample after the other's and one
        // after its own: the ratio is 1. (The first block's first sample follows
        // nothing here.)
        assert!(alternated.ratios[1..]
            .iter()
            .all(|r| (r - 1.0).abs() < 1e-12));
    }

    #[test]
    fn a_block_without_device_time_is_a_ratio_of_wall_times_and_a_failure_ends_it() {
        let mut n = 0;
        let alternated = alternate(&rule(2, 2, 1e-9), Side::First, |side| {
            n += 1;
            Ok::<_, ()>(PerCall {
                device_ns: (n > 1).then_some(1.0),
                wall_ns: if side == Side::First { 30.0 } else { 10.0 },
            })
        })
        .unwrap();
        assert_eq!(alternated.kind, TimeKind::Wall);
        assert_eq!(alternated.ratios, [3.0, 1.0]);

        let failed = alternate(&rule(2, 10, 1e-9), Side::First, |side| match side {
            Side::First => Ok(PerCall {
                device_ns: None,
                wall_ns: 1.0,
            }),
            Side::Second => Err("second side failed"),
        });
        assert_eq!(failed, Err("second side failed"));
    }
}
