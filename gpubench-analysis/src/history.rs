//! A benchmark's figures over the commits of a branch: where they stepped (change
//! points), and whether they are drifting (a slow trend no single step explains).
//! Reading the commits is `cargo-gpubench`'s; this module only sees series.
//!
//! # Steps in measured figures: E-divisive means, tested as Apache Otava does
//!
//! A time series of a benchmark's figure, one point per commit, each with its own
//! interval. Candidate steps come from **E-divisive means** (Matteson & James, "A
//! Nonparametric Approach for Multiple Change Point Analysis of Multivariate Data",
//! JASA 109(505), 2014), with exponent α = 1 on the logarithms of the points: for a
//! segment `Z₀…Zₙ₋₁` and a split τ into `X = Z₀…Zτ₋₁` and `Y = Zτ…Zₙ₋₁`,
//!
//! ```text
//! Q(τ) = τ(n−τ)/n · ( 2/(τ(n−τ)) Σ|Xᵢ−Yⱼ| − 1/C(τ,2) Σ|Xᵢ−Xₖ| − 1/C(n−τ,2) Σ|Yⱼ−Yₖ| )
//! ```
//!
//! and the split with the largest `Q` is the candidate. The method makes no
//! assumption about the points' distribution, adapts to each series' own spread
//! instead of a fixed threshold, and finds several steps by splitting each side again
//! (bisection, as the paper does). This is what MongoDB's
//! signal-processing-algorithms and its successor Apache Otava run on performance
//! series in CI. Matteson & James test each candidate with a permutation test;
//! Otava (Fleming et al., "Hunter: Using Change Point Detection to Hunt for
//! Performance Regressions", ICPE 2023) replaced it by a Welch t-test between the two
//! sides, which is deterministic and a hundred times cheaper. Here the test is
//! Welch's question asked of points that each carry their own interval:
//!
//! * each point's own standard error `sᵢ` (its interval on the log scale, read as
//!   ±1.96 of them) and the commit-to-commit scatter the intervals do not cover (`τ²`,
//!   DerSimonian & Laird's moment estimate over the two sides) weigh it:
//!   `wᵢ = 1/(sᵢ² + τ²)`. Each side's level is its weighted mean, with variance
//!   `1/Σwᵢ`, widened by the scatter the weights leave unexplained when it exceeds
//!   them (Hartung & Knapp's factor, at least 1), and the step is tested with `n − 2`
//!   degrees of freedom. So a point measured with a wide interval moves a level little
//!   and cannot make a step, and it does not widen the other points' share either, so
//!   it cannot hide one;
//! * a point whose interval is over [`NOISY_POINT_WIDTH`] times the median width (and
//!   wider than the threshold) is left out of the search altogether
//!   ([`SeriesAnalysis::unplaced`]): it cannot pull the E-divisive split or the drift's
//!   line towards itself;
//! * a step is reported only when p ≤ [`HistoryOptions::max_p_value`] **and** the whole
//!   interval of its size lies beyond the series' threshold: the larger of the
//!   series' floor ([`HistoryOptions::min_change`], or for work on the CPU device
//!   [`HistoryOptions::cpu_min_change`], the floor `compare` judges CPU work on, and
//!   for energy at least [`HistoryOptions::energy_min_change`]) and
//!   the median relative half-width of the points' intervals. A step smaller than
//!   what one point's interval already allows is noise, as in a comparison with a
//!   baseline.
//!
//! Each side of a split holds at least [`HistoryOptions::min_segment`] points, so a
//! step is found once that many commits after it measured the new level. A series
//! holds only points measured alike (`series` splits a benchmark's figures where the
//! device or the settings that move figures change, as `compare` refuses to compare
//! them), so the commit before a step's is the last one measured at the old level in
//! that series, and the step lies in the commits between the two.
//!
//! # Drift
//!
//! Over the last [`HistoryOptions::drift_window`] points, the **Theil–Sen** slope of the
//! log figure per commit (Theil 1950, Sen 1968: the median of all pairwise slopes,
//! robust to a stray point where least squares is not), with Sen's rank interval
//! (from the distribution of Kendall's S). A drift is flagged when the slope's interval
//! excludes 0, the total over the window exceeds the threshold, and a line fits the
//! window better than the best single step does (a step explains a jump; only a line
//! explains ten small ones).
//!
//! # Exact figures
//!
//! Counters (kernels, copies, syncs, allocations per call) and memory repeat exactly,
//! so every commit where one differs from the point before is a change point, with
//! no test at all: [`exact_change_points`].

mod series;

pub use series::*;

use serde::{Deserialize, Serialize};
use statrs::distribution::ContinuousCDF;

use crate::processes::TTest;
use crate::stats::mean;

/// How the series of a history are analysed.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct HistoryOptions {
    /// Smallest relative step or drift reported (0.02: 2%); the threshold of a series
    /// is at least the median half-width of its points' intervals.
    pub min_change: f64,
    /// Smallest relative step or drift reported of work on the CPU device (0.10).
    #[serde(default = "default_cpu_min_change")]
    pub cpu_min_change: f64,
    /// Smallest relative step or drift of energy per call reported, where larger than
    /// [`HistoryOptions::min_change`] (0.03).
    #[serde(default = "default_energy_min_change")]
    pub energy_min_change: f64,
    /// Largest p-value of a reported step (Welch's t-test of the two sides).
    pub max_p_value: f64,
    /// Fewest points on each side of a step.
    pub min_segment: usize,
    /// Points the drift is measured over (the latest ones).
    pub drift_window: usize,
    /// Confidence of the intervals of steps and drifts.
    pub confidence: f64,
}

/// Default [`HistoryOptions::min_change`]: the default noise threshold of a comparison.
pub const DEFAULT_MIN_CHANGE: f64 = crate::compare::DEFAULT_NOISE_THRESHOLD;
/// Default [`HistoryOptions::cpu_min_change`]: the noise threshold a comparison judges
/// work on the CPU device on, for the same reason (its figures move from run to run
/// by more than a run's processes show; `compare`, "The CPU device").
pub const DEFAULT_CPU_MIN_CHANGE: f64 = crate::compare::DEFAULT_CPU_NOISE_THRESHOLD;
/// Default [`HistoryOptions::energy_min_change`]: energy moves with power and
/// temperature more than time does (windows of one process spread by up to 3% on an
/// H200, where the matmul's time spread 0.3%), so a step under it is noise even where
/// `--min-change` is lower; `compare`'s energy noise threshold, for the same reason.
pub const DEFAULT_ENERGY_MIN_CHANGE: f64 = crate::compare::DEFAULT_ENERGY_NOISE_THRESHOLD;
/// A point whose interval is wider than this many times the series' median width (and
/// wider than its threshold) takes no part in finding steps and drifts.
pub const NOISY_POINT_WIDTH: f64 = 4.0;
/// The smallest standard error of a point's log figure (0.1%): a point saved without
/// an interval is not taken as exact.
const MIN_LOG_SE: f64 = 1e-3;
/// Default [`HistoryOptions::max_p_value`], Otava's.
pub const DEFAULT_MAX_P_VALUE: f64 = 0.001;
/// Default [`HistoryOptions::min_segment`].
pub const DEFAULT_MIN_SEGMENT: usize = 3;
/// Default [`HistoryOptions::drift_window`].
pub const DEFAULT_DRIFT_WINDOW: usize = 10;
/// Fewest points a drift is measured over.
pub const MIN_DRIFT_POINTS: usize = 5;

impl Default for HistoryOptions {
    fn default() -> Self {
        HistoryOptions {
            min_change: DEFAULT_MIN_CHANGE,
            cpu_min_change: DEFAULT_CPU_MIN_CHANGE,
            energy_min_change: DEFAULT_ENERGY_MIN_CHANGE,
            max_p_value: DEFAULT_MAX_P_VALUE,
            min_segment: DEFAULT_MIN_SEGMENT,
            drift_window: DEFAULT_DRIFT_WINDOW,
            confidence: 0.95,
        }
    }
}

fn default_cpu_min_change() -> f64 {
    DEFAULT_CPU_MIN_CHANGE
}

fn default_energy_min_change() -> f64 {
    DEFAULT_ENERGY_MIN_CHANGE
}

/// One commit's figure with its interval (same unit as the figure, e.g. ns).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SeriesPoint {
    /// The figure.
    pub value: f64,
    /// Lower end of its interval.
    pub lower: f64,
    /// Upper end of its interval.
    pub upper: f64,
}

impl SeriesPoint {
    /// A point known exactly (a counter, memory).
    pub fn exact(value: f64) -> Self {
        SeriesPoint {
            value,
            lower: value,
            upper: value,
        }
    }

    /// Half the interval's width, relative to the figure.
    pub fn rel_half_width(&self) -> f64 {
        if self.value > 0.0 {
            ((self.upper - self.lower) / 2.0 / self.value).max(0.0)
        } else {
            0.0
        }
    }

    /// The standard error of ln(value), reading the interval as ±1.96 of them.
    fn log_se(&self) -> f64 {
        if self.lower > 0.0 && self.upper >= self.lower {
            (self.upper.ln() - self.lower.ln()) / 2.0 / 1.96
        } else {
            0.0
        }
    }
}

/// A step in a series: the level from `index` on differs from the level before it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ChangePoint {
    /// The first point of the new level: the commit that introduced the step.
    pub index: usize,
    /// The level before (geometric mean of the segment before; for an exact figure,
    /// the point before).
    pub before: f64,
    /// The level from `index` on (for an exact figure, the point at `index`).
    pub after: f64,
    /// Relative size, `after / before − 1`.
    pub change: f64,
    /// Lower end of the size's interval (equal to `change` for exact figures).
    pub change_lower: f64,
    /// Upper end of the size's interval.
    pub change_upper: f64,
    /// Welch's p of the two sides; absent for exact figures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p_value: Option<f64>,
}

/// The trend over the latest points.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Drift {
    /// Index of the first point of the window.
    pub from_index: usize,
    /// Points in the window.
    pub points: usize,
    /// Relative change per commit, `exp(slope) − 1`.
    pub per_commit: f64,
    /// Lower end of its interval.
    pub per_commit_lower: f64,
    /// Upper end of its interval.
    pub per_commit_upper: f64,
    /// Relative change over the window, `exp(slope · (points − 1)) − 1`.
    pub total: f64,
    /// Whether it is a drift: see the module docs.
    pub flagged: bool,
    /// Whether a single step fits the window at least as well as the line (so a
    /// steep slope is a step, not a drift).
    pub step_explains: bool,
}

/// What [`analyse_measured`] found in one series.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeriesAnalysis {
    /// The relative size below which a step or drift is noise for this series.
    pub threshold: f64,
    /// The steps, oldest first.
    pub change_points: Vec<ChangePoint>,
    /// The trend over the latest points, when there are enough of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift: Option<Drift>,
    /// The points too noisy to take part (their interval over [`NOISY_POINT_WIDTH`]
    /// times the median width and wider than the threshold), by index.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unplaced: Vec<usize>,
}

/// Finds the steps and the drift of a measured series, oldest point first, with
/// [`HistoryOptions::min_change`] as its floor (see [`analyse_measured_above`]).
pub fn analyse_measured(points: &[SeriesPoint], options: &HistoryOptions) -> SeriesAnalysis {
    analyse_measured_above(points, options.min_change, options)
}

/// Finds the steps and the drift of a measured series, oldest point first, none
/// smaller than `floor` (see the module docs). Points whose figure is not a positive
/// finite number make no sense on a log scale and must be left out by the caller.
pub fn analyse_measured_above(
    points: &[SeriesPoint],
    floor: f64,
    options: &HistoryOptions,
) -> SeriesAnalysis {
    let usable = points.iter().all(|p| p.value.is_finite() && p.value > 0.0);
    let widths: Vec<f64> = points.iter().map(SeriesPoint::rel_half_width).collect();
    let typical = median_of(&widths);
    let threshold = floor.max(typical);
    let unplaced: Vec<usize> = (0..points.len())
        .filter(|&i| usable && widths[i] > NOISY_POINT_WIDTH * typical && widths[i] > threshold)
        .collect();
    let kept: Vec<usize> = (0..points.len())
        .filter(|i| !unplaced.contains(i))
        .collect();
    let placed: Vec<SeriesPoint> = kept.iter().map(|&i| points[i]).collect();
    let mut analysis = analyse_placed(&placed, usable, threshold, options);
    for c in &mut analysis.change_points {
        c.index = kept[c.index];
    }
    if let Some(d) = &mut analysis.drift {
        d.from_index = kept[d.from_index];
    }
    analysis.unplaced = unplaced;
    analysis
}

/// [`analyse_measured_above`] of the points that take part; indices are theirs.
fn analyse_placed(
    points: &[SeriesPoint],
    usable: bool,
    threshold: f64,
    options: &HistoryOptions,
) -> SeriesAnalysis {
    if !usable || points.len() < 2 * options.min_segment.max(2) {
        return SeriesAnalysis {
            threshold,
            change_points: Vec::new(),
            drift: usable.then(|| drift(points, threshold, options)).flatten(),
            unplaced: Vec::new(),
        };
    }
    let logs: Vec<f64> = points.iter().map(|p| p.value.ln()).collect();
    let se: Vec<f64> = points.iter().map(SeriesPoint::log_se).collect();
    let mut found = Vec::new();
    split(&logs, &se, 0, logs.len(), threshold, options, &mut found);
    found.sort_by_key(|c| c.index);
    // As Otava does: each step's size is measured between its neighbours, not
    // between the wider segments the bisection saw it in.
    let bounds: Vec<usize> = std::iter::once(0)
        .chain(found.iter().map(|c| c.index))
        .chain(std::iter::once(logs.len()))
        .collect();
    for (k, c) in found.iter_mut().enumerate() {
        let (a, at, b) = (bounds[k], bounds[k + 1], bounds[k + 2]);
        if let Some(step) = test_step(
            &logs[a..at],
            &se[a..at],
            &logs[at..b],
            &se[at..b],
            options.confidence,
        ) {
            *c = step.change_point(at);
        }
    }
    SeriesAnalysis {
        threshold,
        change_points: found,
        drift: drift(points, threshold, options),
        unplaced: Vec::new(),
    }
}

/// Every point where an exact figure differs from the one before it.
pub fn exact_change_points(values: &[f64]) -> Vec<ChangePoint> {
    exact_change_points_beyond(values, |_| 0.0)
}

/// Every point where a figure that repeats up to a granularity (peak memory: the
/// allocator's segments) differs from the one before it by more than `tolerance` of
/// the one before.
pub fn exact_change_points_beyond(
    values: &[f64],
    tolerance: impl Fn(f64) -> f64,
) -> Vec<ChangePoint> {
    values
        .windows(2)
        .enumerate()
        .filter(|(_, w)| (w[1] - w[0]).abs() > tolerance(w[0]))
        .map(|(i, w)| {
            let change = if w[0] != 0.0 {
                w[1] / w[0] - 1.0
            } else {
                f64::INFINITY
            };
            ChangePoint {
                index: i + 1,
                before: w[0],
                after: w[1],
                change,
                change_lower: change,
                change_upper: change,
                p_value: None,
            }
        })
        .collect()
}

/// Whether a head figure `change` (relative, against main's latest) continues `drift`:
/// a flagged drift, and a change in its direction beyond `threshold`.
pub fn continues_drift(drift: &Drift, change: f64, threshold: f64) -> bool {
    drift.flagged && change.abs() > threshold && (change > 0.0) == (drift.per_commit > 0.0)
}

/// E-divisive bisection of `logs[start..end]`: the best split, kept and split again
/// on both sides when significant.
fn split(
    logs: &[f64],
    se: &[f64],
    start: usize,
    end: usize,
    threshold: f64,
    options: &HistoryOptions,
    found: &mut Vec<ChangePoint>,
) {
    let min = options.min_segment.max(2);
    if end - start < 2 * min {
        return;
    }
    let Some(tau) = best_split(&logs[start..end], min) else {
        return;
    };
    let at = start + tau;
    let Some(step) = test_step(
        &logs[start..at],
        &se[start..at],
        &logs[at..end],
        &se[at..end],
        options.confidence,
    ) else {
        return;
    };
    let beyond = step.lower > threshold.ln_1p() || step.upper < (-threshold).ln_1p();
    if step.p > options.max_p_value || !beyond {
        return;
    }
    found.push(step.change_point(at));
    split(logs, se, start, at, threshold, options, found);
    split(logs, se, at, end, threshold, options, found);
}

/// The τ in `min..=n−min` maximising Matteson & James's Q (α = 1), in O(n²).
fn best_split(z: &[f64], min: usize) -> Option<usize> {
    let n = z.len();
    // Row sums of the distance matrix to the left and the right of each point.
    let d = |i: usize, j: usize| (z[i] - z[j]).abs();
    let left_of: Vec<f64> = (0..n).map(|t| (0..t).map(|i| d(i, t)).sum()).collect();
    let right_of: Vec<f64> = (0..n).map(|t| (t + 1..n).map(|j| d(t, j)).sum()).collect();
    // For τ = 1: X = {z0}.
    let mut within_left = 0.0;
    let mut within_right: f64 = (1..n).map(|j| right_of[j]).sum();
    let mut cross = right_of[0];
    let mut best: Option<(usize, f64)> = None;
    for tau in 1..n {
        if tau >= min && n - tau >= min {
            let (m, k) = (tau as f64, (n - tau) as f64);
            let e = 2.0 * cross / (m * k)
                - 2.0 * within_left / (m * (m - 1.0))
                - 2.0 * within_right / (k * (k - 1.0));
            let q = m * k / (m + k) * e;
            if best.is_none_or(|(_, b)| q > b) {
                best = Some((tau, q));
            }
        }
        // Move z[tau] from the right side to the left.
        within_left += left_of[tau];
        within_right -= right_of[tau];
        cross += right_of[tau] - left_of[tau];
    }
    best.map(|(tau, _)| tau)
}

/// The test of a step between two sides on the log scale, each point weighed by its
/// own variance plus the scatter between points (module docs).
struct Step {
    mean_before: f64,
    mean_after: f64,
    diff: f64,
    lower: f64,
    upper: f64,
    p: f64,
}

impl Step {
    fn change_point(&self, index: usize) -> ChangePoint {
        ChangePoint {
            index,
            before: self.mean_before.exp(),
            after: self.mean_after.exp(),
            change: self.diff.exp_m1(),
            change_lower: self.lower.exp_m1(),
            change_upper: self.upper.exp_m1(),
            p_value: Some(self.p),
        }
    }
}

/// One side's level under weights `1/(vᵢ + τ²)`.
struct Level {
    mean: f64,
    /// `1/Σw`.
    variance: f64,
    /// `Σw(x − mean)²`.
    q: f64,
    /// `Σw − Σw²/Σw`, DerSimonian & Laird's scale.
    scale: f64,
}

impl Level {
    fn of(x: &[f64], v: &[f64], tau2: f64) -> Self {
        let w: Vec<f64> = v.iter().map(|v| 1.0 / (v + tau2)).collect();
        let sw: f64 = w.iter().sum();
        let mean = x.iter().zip(&w).map(|(x, w)| x * w).sum::<f64>() / sw;
        let q = x.iter().zip(&w).map(|(x, w)| w * (x - mean).powi(2)).sum();
        let sw2: f64 = w.iter().map(|w| w * w).sum();
        Level {
            mean,
            variance: 1.0 / sw,
            q,
            scale: sw - sw2 / sw,
        }
    }
}

fn test_step(a: &[f64], se_a: &[f64], b: &[f64], se_b: &[f64], confidence: f64) -> Option<Step> {
    let variances =
        |se: &[f64]| -> Vec<f64> { se.iter().map(|s| s.max(MIN_LOG_SE).powi(2)).collect() };
    let (va, vb) = (variances(se_a), variances(se_b));
    let df = (a.len() + b.len()) as f64 - 2.0;
    if df < 1.0 {
        return None;
    }
    // DerSimonian & Laird: the scatter beyond the points' own variances.
    let (fa, fb) = (Level::of(a, &va, 0.0), Level::of(b, &vb, 0.0));
    let scale = fa.scale + fb.scale;
    let tau2 = if scale > 0.0 {
        ((fa.q + fb.q - df) / scale).max(0.0)
    } else {
        0.0
    };
    let (before, after) = (Level::of(a, &va, tau2), Level::of(b, &vb, tau2));
    // Hartung & Knapp, never narrower than the weights say.
    let widen = ((before.q + after.q) / df).max(1.0);
    let test = TTest {
        diff: after.mean - before.mean,
        se: ((before.variance + after.variance) * widen).sqrt(),
        df,
    };
    let (diff, p, q) = (test.diff, test.two_sided_p(), test.quantile(confidence));
    if !p.is_finite() || !q.is_finite() {
        return None;
    }
    Some(Step {
        mean_before: before.mean,
        mean_after: after.mean,
        diff,
        lower: diff - q * test.se,
        upper: diff + q * test.se,
        p,
    })
}

/// The Theil–Sen drift over the latest points (module docs).
fn drift(points: &[SeriesPoint], threshold: f64, options: &HistoryOptions) -> Option<Drift> {
    let w = options.drift_window.min(points.len());
    if w < MIN_DRIFT_POINTS.max(3) {
        return None;
    }
    let from = points.len() - w;
    let y: Vec<f64> = points[from..].iter().map(|p| p.value.ln()).collect();
    let mut slopes = Vec::with_capacity(w * (w - 1) / 2);
    for i in 0..w {
        for j in i + 1..w {
            slopes.push((y[j] - y[i]) / (j - i) as f64);
        }
    }
    slopes.sort_by(f64::total_cmp);
    let slope = median_sorted(&slopes);
    // Sen (1968): the interval's ends are the slopes of ranks (N ∓ C)/2, where C is the
    // normal quantile times the standard deviation of Kendall's S.
    let n = w as f64;
    let z = statrs::distribution::Normal::standard()
        .inverse_cdf(1.0 - (1.0 - options.confidence) / 2.0);
    let c = z * (n * (n - 1.0) * (2.0 * n + 5.0) / 18.0).sqrt();
    let big_n = slopes.len() as f64;
    let lo_rank = ((big_n - c) / 2.0).round();
    let hi_rank = ((big_n + c) / 2.0).round() + 1.0;
    let at = |rank: f64| slopes[(rank.max(1.0) as usize - 1).min(slopes.len() - 1)];
    let (lower, upper) = (at(lo_rank), at(hi_rank));

    let intercept = {
        let mut r: Vec<f64> = y
            .iter()
            .enumerate()
            .map(|(i, v)| v - slope * i as f64)
            .collect();
        r.sort_by(f64::total_cmp);
        median_sorted(&r)
    };
    let line_sse: f64 = y
        .iter()
        .enumerate()
        .map(|(i, v)| (v - intercept - slope * i as f64).powi(2))
        .sum();
    let step_sse = best_step_sse(&y);
    let step_explains = step_sse <= line_sse;
    let total = (slope * (n - 1.0)).exp_m1();
    let excludes_zero = lower > 0.0 || upper < 0.0;
    Some(Drift {
        from_index: from,
        points: w,
        per_commit: slope.exp_m1(),
        per_commit_lower: lower.exp_m1(),
        per_commit_upper: upper.exp_m1(),
        total,
        flagged: excludes_zero && total.abs() > threshold && !step_explains,
        step_explains,
    })
}

/// The least squared error of fitting `y` by two levels (each at least 2 points).
fn best_step_sse(y: &[f64]) -> f64 {
    let sse = |x: &[f64]| {
        let m = mean(x);
        x.iter().map(|v| (v - m).powi(2)).sum::<f64>()
    };
    (2..y.len().saturating_sub(1))
        .map(|t| sse(&y[..t]) + sse(&y[t..]))
        .fold(f64::INFINITY, f64::min)
}

fn median_sorted(xs: &[f64]) -> f64 {
    let n = xs.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        xs[n / 2]
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) / 2.0
    }
}

fn median_of(xs: &[f64]) -> f64 {
    let mut v: Vec<f64> = xs.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        0.0
    } else {
        median_sorted(&v)
    }
}

#[cfg(test)]
mod tests;
