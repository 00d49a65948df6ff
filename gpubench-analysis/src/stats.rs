//! Statistics on samples: point estimates with bootstrap confidence intervals, spread,
//! relative noise and Tukey outlier classification.
//!
//! Every resampling routine takes a seed, so the same samples always give the same
//! interval (reports and baselines must be reproducible). Nothing here panics on odd
//! data: empty input gives NaN (or an empty classification), NaN sorts last.

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use serde::{Deserialize, Serialize};

use gpubench_record::estimate::Estimate;

/// Default confidence level of intervals.
pub const DEFAULT_CONFIDENCE: f64 = 0.95;
/// Default number of bootstrap resamples.
pub const DEFAULT_RESAMPLES: usize = 2000;
/// Default seed of the bootstrap.
pub const DEFAULT_SEED: u64 = 0x6770_7562_656e_6368;
/// Factor that makes the median absolute deviation estimate the standard deviation of
/// normally distributed data (1 / Φ⁻¹(3/4)).
pub const MAD_NORMAL_SCALE: f64 = 1.482_602_218_505_602;

/// How a bootstrap resamples: confidence level, number of resamples and seed.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct BootstrapConfig {
    /// Confidence level of the interval, in (0, 1).
    pub confidence: f64,
    /// Number of resamples; 0 gives a zero-width interval at the point.
    pub resamples: usize,
    /// Seed of the resampling generator.
    pub seed: u64,
}

impl Default for BootstrapConfig {
    /// [`DEFAULT_CONFIDENCE`], [`DEFAULT_RESAMPLES`], [`DEFAULT_SEED`].
    fn default() -> Self {
        BootstrapConfig {
            confidence: DEFAULT_CONFIDENCE,
            resamples: DEFAULT_RESAMPLES,
            seed: DEFAULT_SEED,
        }
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
    median_in_place(&mut xs.to_vec())
}

/// Median of `xs`, reordering it: linear time, for hot resampling loops. Gives exactly
/// what [`median`] gives.
pub fn median_in_place(xs: &mut [f64]) -> f64 {
    let n = xs.len();
    if n == 0 {
        return f64::NAN;
    }
    let mid = n / 2;
    let (left, hi, _) = xs.select_nth_unstable_by(mid, |a, b| a.total_cmp(b));
    let hi = *hi;
    if n % 2 == 1 {
        return hi;
    }
    let lo = left.iter().copied().fold(f64::NEG_INFINITY, |m, x| {
        if x.total_cmp(&m).is_gt() {
            x
        } else {
            m
        }
    });
    // The same interpolation as `quantile_sorted(.., 0.5)`, so both agree bit for bit.
    lo + (hi - lo) * 0.5
}

/// Sample standard deviation (n − 1 in the denominator); 0 for one value, NaN for none.
pub fn std_dev(xs: &[f64]) -> f64 {
    match xs.len() {
        0 => f64::NAN,
        1 => 0.0,
        n => {
            let m = mean(xs);
            let ss: f64 = xs.iter().map(|x| (x - m) * (x - m)).sum();
            (ss / (n - 1) as f64).sqrt()
        }
    }
}

/// Median absolute deviation from the median, scaled by [`MAD_NORMAL_SCALE`] so it
/// estimates the standard deviation of normal data while ignoring outliers; NaN for
/// no data.
pub fn mad(xs: &[f64]) -> f64 {
    let m = median(xs);
    let mut dev: Vec<f64> = xs.iter().map(|x| (x - m).abs()).collect();
    median_in_place(&mut dev) * MAD_NORMAL_SCALE
}

/// Relative noise: [`mad`] / [`median`], the robust counterpart of the coefficient of
/// variation (≈ std/mean for normal data, but a few slow outliers barely move it). NaN
/// for no data or a zero median.
pub fn rel_noise(xs: &[f64]) -> f64 {
    let m = median(xs);
    if m == 0.0 {
        return f64::NAN;
    }
    mad(xs) / m.abs()
}

/// Coefficient of variation: [`std_dev`] / [`mean`]; outliers inflate it, which is
/// why [`rel_noise`] is what reports show. NaN for no data or a zero mean.
pub fn coefficient_of_variation(xs: &[f64]) -> f64 {
    let m = mean(xs);
    if m == 0.0 {
        return f64::NAN;
    }
    std_dev(xs) / m.abs()
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
    let cfg = BootstrapConfig {
        confidence,
        resamples,
        seed,
    };
    let mut buf = vec![0.0; xs.len()];
    bootstrap_resampled(xs.len(), statistic(xs), cfg, |rng| {
        resample_into(xs, &mut buf, rng);
        statistic(&buf)
    })
}

/// The resampling loop shared by the estimators: `one_resample` draws one resample
/// from the generator and returns its statistic.
fn bootstrap_resampled<F>(
    n: usize,
    point: f64,
    cfg: BootstrapConfig,
    mut one_resample: F,
) -> Estimate
where
    F: FnMut(&mut Pcg64Mcg) -> f64,
{
    let confidence = cfg.confidence;
    if n < 2 || cfg.resamples == 0 {
        return Estimate {
            point,
            lower: point,
            upper: point,
            confidence,
        };
    }
    let mut rng = Pcg64Mcg::seed_from_u64(cfg.seed);
    let stats: Vec<f64> = (0..cfg.resamples).map(|_| one_resample(&mut rng)).collect();
    let stats = sorted(&stats);
    let alpha = (1.0 - confidence) / 2.0;
    Estimate {
        point,
        lower: quantile_sorted(&stats, alpha),
        upper: quantile_sorted(&stats, 1.0 - alpha),
        confidence,
    }
}

/// Fills `buf` with draws, with replacement, from `xs` (which must not be empty).
fn resample_into<R: Rng>(xs: &[f64], buf: &mut [f64], rng: &mut R) {
    for slot in buf.iter_mut() {
        *slot = xs[rng.gen_range(0..xs.len())];
    }
}

/// Medians of bootstrap resamples, fast: a draw only bumps a counter at the drawn
/// sample's rank, and the median is read off the counts; no floats are compared or
/// moved. Draws the same indices as resampling into a buffer and gives exactly its
/// [`median`].
pub(crate) struct MedianResampler {
    sorted: Vec<f64>,
    rank: Vec<usize>,
    counts: Vec<u32>,
}

impl MedianResampler {
    /// A resampler of `xs`.
    pub(crate) fn new(xs: &[f64]) -> Self {
        let mut order: Vec<usize> = (0..xs.len()).collect();
        order.sort_by(|&a, &b| xs[a].total_cmp(&xs[b]));
        let mut rank = vec![0; xs.len()];
        for (r, &i) in order.iter().enumerate() {
            rank[i] = r;
        }
        MedianResampler {
            sorted: order.iter().map(|&i| xs[i]).collect(),
            rank,
            counts: vec![0; xs.len()],
        }
    }

    /// The median of one resample drawn from `rng`; NaN for no data.
    pub(crate) fn resample_median<R: Rng>(&mut self, rng: &mut R) -> f64 {
        let n = self.rank.len();
        if n == 0 {
            return f64::NAN;
        }
        self.counts.fill(0);
        for _ in 0..n {
            self.counts[self.rank[rng.gen_range(0..n)]] += 1;
        }
        // 0-based order statistics around the middle: equal for odd n.
        let (lo_k, hi_k) = ((n - 1) / 2, n / 2);
        let (mut lo, mut hi) = (None, n - 1);
        let mut seen = 0usize;
        for (r, &c) in self.counts.iter().enumerate() {
            seen += c as usize;
            if lo.is_none() && seen > lo_k {
                lo = Some(r);
            }
            if seen > hi_k {
                hi = r;
                break;
            }
        }
        let lo = self.sorted[lo.unwrap_or(hi)];
        let hi = self.sorted[hi];
        if n % 2 == 1 {
            hi
        } else {
            lo + (hi - lo) * 0.5
        }
    }
}

/// Median with a percentile-bootstrap interval at the default confidence and seed.
pub fn median_estimate(xs: &[f64]) -> Estimate {
    median_estimate_with(xs, BootstrapConfig::default())
}

/// Mean with a percentile-bootstrap interval at the default confidence and seed.
pub fn mean_estimate(xs: &[f64]) -> Estimate {
    mean_estimate_with(xs, BootstrapConfig::default())
}

/// Median with a percentile-bootstrap interval under `cfg`.
pub fn median_estimate_with(xs: &[f64], cfg: BootstrapConfig) -> Estimate {
    let mut resampler = MedianResampler::new(xs);
    bootstrap_resampled(xs.len(), median(xs), cfg, |rng| {
        resampler.resample_median(rng)
    })
}

/// Mean with a percentile-bootstrap interval under `cfg`.
pub fn mean_estimate_with(xs: &[f64], cfg: BootstrapConfig) -> Estimate {
    let n = xs.len();
    bootstrap_resampled(n, mean(xs), cfg, |rng| {
        // Summed in draw order, as `mean` of a resampled buffer would.
        let sum: f64 = (0..n).map(|_| xs[rng.gen_range(0..n)]).sum();
        sum / n as f64
    })
}

/// Where a sample lies relative to Tukey's fences.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutlierClass {
    /// Below Q1 − 3·IQR.
    LowSevere,
    /// Below Q1 − 1.5·IQR, not severe.
    LowMild,
    /// Within the inner fences.
    Normal,
    /// Above Q3 + 1.5·IQR, not severe.
    HighMild,
    /// Above Q3 + 3·IQR.
    HighSevere,
}

impl OutlierClass {
    /// Whether the sample is outside the inner fences.
    pub fn is_outlier(self) -> bool {
        self != OutlierClass::Normal
    }
}

/// Tukey's fences: 1.5 (mild) and 3 (severe) interquartile ranges beyond the quartiles.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TukeyFences {
    /// Q1 − 3·IQR.
    pub low_severe: f64,
    /// Q1 − 1.5·IQR.
    pub low_mild: f64,
    /// Q3 + 1.5·IQR.
    pub high_mild: f64,
    /// Q3 + 3·IQR.
    pub high_severe: f64,
}

impl TukeyFences {
    /// Fences from the quartiles of `xs`; `None` for no data.
    pub fn from_samples(xs: &[f64]) -> Option<Self> {
        if xs.is_empty() {
            return None;
        }
        let s = sorted(xs);
        let q1 = quantile_sorted(&s, 0.25);
        let q3 = quantile_sorted(&s, 0.75);
        let iqr = q3 - q1;
        Some(TukeyFences {
            low_severe: q1 - 3.0 * iqr,
            low_mild: q1 - 1.5 * iqr,
            high_mild: q3 + 1.5 * iqr,
            high_severe: q3 + 3.0 * iqr,
        })
    }

    /// The class of `x`; a value exactly on a fence takes the milder class.
    pub fn classify(&self, x: f64) -> OutlierClass {
        if x < self.low_severe {
            OutlierClass::LowSevere
        } else if x < self.low_mild {
            OutlierClass::LowMild
        } else if x > self.high_severe {
            OutlierClass::HighSevere
        } else if x > self.high_mild {
            OutlierClass::HighMild
        } else {
            OutlierClass::Normal
        }
    }
}

/// How many samples fall in each Tukey class.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutlierCounts {
    /// Below Q1 − 3·IQR.
    pub low_severe: usize,
    /// Below Q1 − 1.5·IQR, not severe.
    pub low_mild: usize,
    /// Within the inner fences.
    pub normal: usize,
    /// Above Q3 + 1.5·IQR, not severe.
    pub high_mild: usize,
    /// Above Q3 + 3·IQR.
    pub high_severe: usize,
}

impl OutlierCounts {
    /// Counts of `classes`.
    pub fn from_classes(classes: &[OutlierClass]) -> Self {
        let mut c = OutlierCounts::default();
        for class in classes {
            match class {
                OutlierClass::LowSevere => c.low_severe += 1,
                OutlierClass::LowMild => c.low_mild += 1,
                OutlierClass::Normal => c.normal += 1,
                OutlierClass::HighMild => c.high_mild += 1,
                OutlierClass::HighSevere => c.high_severe += 1,
            }
        }
        c
    }

    /// Samples counted, outliers or not.
    pub fn total(&self) -> usize {
        self.low_severe + self.low_mild + self.normal + self.high_mild + self.high_severe
    }

    /// Samples outside the inner fences.
    pub fn outliers(&self) -> usize {
        self.total() - self.normal
    }
}

/// Tukey classification of a set of samples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutlierReport {
    /// The fences used; `None` for no data.
    pub fences: Option<TukeyFences>,
    /// The class of each sample, in input order.
    pub classes: Vec<OutlierClass>,
    /// How many samples fall in each class.
    pub counts: OutlierCounts,
}

/// Classifies each sample against Tukey's fences of the whole set. Deterministic.
pub fn classify_outliers(xs: &[f64]) -> OutlierReport {
    let fences = TukeyFences::from_samples(xs);
    let classes: Vec<OutlierClass> = match &fences {
        Some(f) => xs.iter().map(|&x| f.classify(x)).collect(),
        None => Vec::new(),
    };
    OutlierReport {
        fences,
        counts: OutlierCounts::from_classes(&classes),
        classes,
    }
}

#[cfg(test)]
mod tests;
