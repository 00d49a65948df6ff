//! Statistics across processes, the unit of repetition: each process's median, the
//! headline estimate with the interval that the next run's figure falls in, the spread
//! between processes against the noise within them, whether the processes fall into
//! separate modes; and how many processes to run ([`ProcessPolicy`]).
//!
//! # Why processes
//!
//! On a GPU machine the host's dispatch speed is set per process: measured on an H200,
//! an add of 1M floats took 5.4 µs in some processes and 9.3 µs in others, while each
//! process's own samples agreed within ±1%. Samples of one process are therefore not
//! independent draws of what the next run will see; the process is (Kalibera & Jones,
//! ISMM'13: repeat at the level that varies, and take the uncertainty from there).
//!
//! # The estimate and its interval
//!
//! With `n ≥ 2` processes whose medians are `x₁…xₙ`, on a log scale (times vary by
//! ratios) with `yᵢ = ln xᵢ`, mean `ȳ` and standard deviation `s`:
//!
//! * the **estimate** is the geometric mean of the process medians, `exp(ȳ)`;
//! * the **interval** is a Student-t prediction interval for the estimate the *next*
//!   run of as many processes will report: `exp(ȳ ± t(1−α/2, n−1) · s · √(2/n))` —
//!   two independent runs' means differ with twice the variance of one — and never
//!   narrower than a floor for what moves between runs that one run's processes
//!   cannot show ([`RUN_FLOOR_DEVICE`], [`RUN_FLOOR_CPU`], [`RUN_FLOOR_HOST`]: on an H200 the host's
//!   dispatch speed drifted by tens of percent between runs while every process of a
//!   run agreed). This is what a user reads an interval as ("run it again and the
//!   figure lands here"), and what `docs/gpu-validation.md` checks: the share of
//!   other runs' figures inside a run's interval.
//!
//! A t-interval rather than a bootstrap over processes: with 3 to 10 processes a
//! percentile bootstrap takes its bounds from the few values there are (with 3, never
//! beyond the extremes) and covers far less than its nominal level; the t quantile
//! widens the interval for few processes as it must. Within-process noise needs no term
//! of its own: each process's median carries its own sampling error into the spread of
//! the medians. With one process only the within-process bootstrap interval of the
//! median is left, and it says so ([`EstimateBasis::OneProcess`]): it covers that
//! process, not the next one.

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, StudentsT};

use gpubench_record::measurement::ProcessPolicy;

use crate::stats::{median, median_estimate_with, rel_noise, BootstrapConfig};
use gpubench_record::estimate::Estimate;

/// Fewest processes for an interval (and a verdict) at the process level.
pub const MIN_PROCESSES: usize = 2;
/// Process medians whose range (`max / min − 1`) exceeds this are *unstable across
/// processes*, when the range is also well beyond the noise within a process.
pub const UNSTABLE_RANGE: f64 = 0.10;
/// How far beyond the within-process noise the range must be to count as unstable.
pub const UNSTABLE_NOISE_MULTIPLE: f64 = 4.0;
/// Smallest gap (`upper / lower − 1`) between two groups of process medians that can
/// make them separate modes.
pub const MODE_MIN_GAP: f64 = 0.05;
/// A gap makes modes only when it is this many times the widest group's own range.
pub const MODE_GAP_MULTIPLE: f64 = 3.0;

/// What [`DecideProcesses::decide`] says after a process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcessDecision {
    /// Run another process.
    Another,
    /// Enough processes.
    Done,
}

/// When a benchmark has had enough processes: the statistics' side of its
/// [`ProcessPolicy`].
pub trait DecideProcesses {
    /// Whether a benchmark with `done` processes, whose primary times' process
    /// statistics are `stats`, needs another: `host_bound` when its time rests on the
    /// host's dispatch speed ([`Bound::Host`]), `over_budget` when its processes have
    /// used its share of time.
    fn decide(
        &self,
        done: u32,
        stats: &ProcessStats,
        host_bound: bool,
        over_budget: bool,
    ) -> ProcessDecision;
}

impl DecideProcesses for ProcessPolicy {
    fn decide(
        &self,
        done: u32,
        stats: &ProcessStats,
        host_bound: bool,
        over_budget: bool,
    ) -> ProcessDecision {
        if done < self.min {
            return ProcessDecision::Another;
        }
        if host_bound || done >= self.max || over_budget {
            return ProcessDecision::Done;
        }
        let wide = match stats.estimate(&[], crate::stats::BootstrapConfig::default(), 0.0) {
            Some((e, EstimateBasis::Processes)) => e.rel_half_width() > self.target_rel_ci,
            _ => true,
        };
        if wide {
            ProcessDecision::Another
        } else {
            ProcessDecision::Done
        }
    }
}

/// What a benchmark's time rests on, as its processes found it: the device's work;
/// the host's dispatch speed (launch-bound work and routines that sync inside on a
/// GPU), which differs between processes and drifts between runs; or, on the CPU
/// device, the routine's own work on the host's cores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Bound {
    /// Most processes found it device-bound.
    Device,
    /// Most processes did not.
    Host,
    /// It ran on the CPU device: there is no dispatch to a device, the host's time is
    /// the work itself, which drifts between runs by more than a run's processes show
    /// ([`RUN_FLOOR_CPU`]).
    Cpu,
}

impl Bound {
    /// The least relative half-width of an interval over processes for this bound.
    pub fn run_floor(self) -> f64 {
        match self {
            Bound::Device => RUN_FLOOR_DEVICE,
            Bound::Cpu => RUN_FLOOR_CPU,
            Bound::Host => RUN_FLOOR_HOST,
        }
    }

    /// Words for tables.
    pub fn label(self) -> &'static str {
        match self {
            Bound::Device => "device-bound",
            Bound::Host => "host-bound",
            Bound::Cpu => "CPU",
        }
    }
}

/// The least half-width, relative, of the interval of a device-bound benchmark: one
/// run's processes cannot show how the machine moves between runs (clocks, heat,
/// driver state), and on an H200 a device-bound figure moved by up to ±1.8% between
/// runs whose processes agreed within 0.1% (`docs/gpu-validation.md`). Half the
/// default noise threshold.
pub const RUN_FLOOR_DEVICE: f64 = 0.01;
/// The least half-width, relative, of the interval of a benchmark whose time rests on
/// the host's dispatch speed: on an H200 that moved by up to 45% between runs, with
/// every process of a run at the same speed. Half the default host noise threshold.
pub const RUN_FLOOR_HOST: f64 = 0.25;
/// The least half-width, relative, of the interval of work on the CPU device (on a
/// host that served its threads; a contended one gets [`RUN_FLOOR_HOST`]): on a
/// 2-core machine a matmul's runs moved by 1.7% (standard deviation) where their
/// processes alone would move them by 1.0%; with this floor 96% of 1,260 ordered pairs
/// of runs had the other run's figure inside a run's 95% interval
/// (`scripts/cpu-drift --judge`). Half the default CPU noise threshold
/// ([`crate::compare::DEFAULT_CPU_NOISE_THRESHOLD`]).
pub const RUN_FLOOR_CPU: f64 = 0.05;

/// The two-sided Student-t quantile `t(p, df)`; `df` may be fractional (Welch).
pub fn t_quantile(p: f64, df: f64) -> f64 {
    match StudentsT::new(0.0, 1.0, df.max(f64::MIN_POSITIVE)) {
        Ok(t) => t.inverse_cdf(p),
        Err(_) => f64::NAN,
    }
}

/// The Student-t cumulative distribution at `x` with `df` degrees of freedom.
pub fn t_cdf(x: f64, df: f64) -> f64 {
    match StudentsT::new(0.0, 1.0, df.max(f64::MIN_POSITIVE)) {
        Ok(t) => t.cdf(x),
        Err(_) => f64::NAN,
    }
}

/// A t-test of a difference: the difference, its standard error and the degrees of
/// freedom, from which its interval and p-values follow.
pub(crate) struct TTest {
    /// The difference.
    pub(crate) diff: f64,
    /// Its standard error.
    pub(crate) se: f64,
    /// The degrees of freedom.
    pub(crate) df: f64,
}

impl TTest {
    /// Welch's test of the mean of `after` minus that of `before`, each side given as
    /// its mean, variance and count (two or more): Welch–Satterthwaite's degrees of
    /// freedom, or `n_before + n_after − 2` when both variances are 0.
    pub(crate) fn welch(before: (f64, f64, usize), after: (f64, f64, usize)) -> Self {
        let ((mean_b, var_b, n_b), (mean_a, var_a, n_a)) = (before, after);
        let (n_b, n_a) = (n_b as f64, n_a as f64);
        let (e_b, e_a) = (var_b / n_b, var_a / n_a);
        let df = if e_b + e_a > 0.0 {
            (e_b + e_a).powi(2) / (e_b * e_b / (n_b - 1.0) + e_a * e_a / (n_a - 1.0))
        } else {
            n_b + n_a - 2.0
        };
        TTest {
            diff: mean_a - mean_b,
            se: (e_b + e_a).sqrt(),
            df,
        }
    }

    /// The t quantile of the two-sided interval `diff ± quantile · se` at `confidence`.
    pub(crate) fn quantile(&self, confidence: f64) -> f64 {
        t_quantile(1.0 - (1.0 - confidence) / 2.0, self.df)
    }

    /// The one-sided p-value of "no difference", in the direction of `diff`; with a
    /// zero standard error, 1 for no difference and 0 for any.
    pub(crate) fn one_sided_p(&self) -> f64 {
        if self.se > 0.0 {
            1.0 - t_cdf((self.diff / self.se).abs(), self.df)
        } else if self.diff == 0.0 {
            1.0
        } else {
            0.0
        }
    }

    /// The two-sided p-value of "no difference"; with a zero standard error, as
    /// [`TTest::one_sided_p`].
    pub(crate) fn two_sided_p(&self) -> f64 {
        if self.se > 0.0 {
            2.0 * (1.0 - t_cdf((self.diff / self.se).abs(), self.df))
        } else {
            self.one_sided_p()
        }
    }
}

/// What an [`Estimate`] of a time rests on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EstimateBasis {
    /// Two or more processes: the geometric mean of their medians, with the interval
    /// the next run's figure falls in (see the module docs).
    Processes,
    /// One process: its median with the bootstrap interval of its samples, which
    /// covers that process only.
    OneProcess,
}

/// A group of process medians that sit together, apart from another group.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Mode {
    /// Geometric mean of the group's process medians, in the unit of the input (ns).
    pub centre: f64,
    /// Processes in the group.
    pub processes: usize,
}

/// How the processes of one timer compare with each other.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProcessStats {
    /// Processes with samples.
    pub count: usize,
    /// Each process's median, in the order the processes ran (ns).
    pub medians: Vec<f64>,
    /// Standard deviation of the log process medians (≈ their relative standard
    /// deviation); absent with one process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub between: Option<f64>,
    /// `max / min − 1` of the process medians; absent with one process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range: Option<f64>,
    /// Noise within a process: the median over processes of MAD / median.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub within: Option<f64>,
    /// Whether the process medians differ by more than [`UNSTABLE_RANGE`] and well
    /// beyond the within-process noise.
    pub unstable: bool,
    /// Two separate groups of processes (lower first), when the medians split so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modes: Option<[Mode; 2]>,
}

impl ProcessStats {
    /// The statistics of `groups`, one group of per-iteration times per process (ns);
    /// empty groups and non-finite or non-positive times are left out.
    pub fn from_groups(groups: &[Vec<f64>]) -> Self {
        let clean: Vec<Vec<f64>> = groups
            .iter()
            .map(|g| {
                g.iter()
                    .copied()
                    .filter(|x| x.is_finite() && *x > 0.0)
                    .collect::<Vec<f64>>()
            })
            .filter(|g| !g.is_empty())
            .collect();
        let medians: Vec<f64> = clean.iter().map(|g| median(g)).collect();
        let noises: Vec<f64> = clean
            .iter()
            .map(|g| rel_noise(g))
            .filter(|x| x.is_finite())
            .collect();
        let within = (!noises.is_empty()).then(|| median(&noises));
        let count = medians.len();
        let (between, range) = if count >= MIN_PROCESSES {
            let logs: Vec<f64> = medians.iter().map(|x| x.ln()).collect();
            let lo = medians.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = medians.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            (Some(sample_sd(&logs)), Some(hi / lo - 1.0))
        } else {
            (None, None)
        };
        let unstable = range.is_some_and(|r| {
            r > UNSTABLE_RANGE && r > UNSTABLE_NOISE_MULTIPLE * within.unwrap_or(0.0)
        });
        let modes = find_modes(&medians);
        ProcessStats {
            count,
            medians,
            between,
            range,
            within,
            unstable,
            modes,
        }
    }

    /// The headline estimate and its interval at `confidence` (see the module docs);
    /// `one_process_samples` are the samples of the only process, for the bootstrap
    /// when there is one process. Over processes, the interval is at least `floor`
    /// (relative) either side of the estimate: how far a run moves from the next
    /// beyond what its own processes show ([`RUN_FLOOR_DEVICE`], [`RUN_FLOOR_HOST`]).
    /// `None` without processes.
    pub fn estimate(
        &self,
        one_process_samples: &[f64],
        cfg: BootstrapConfig,
        floor: f64,
    ) -> Option<(Estimate, EstimateBasis)> {
        match self.count {
            0 => None,
            1 => Some((
                median_estimate_with(one_process_samples, cfg),
                EstimateBasis::OneProcess,
            )),
            n => {
                let logs: Vec<f64> = self.medians.iter().map(|x| x.ln()).collect();
                let mean = logs.iter().sum::<f64>() / n as f64;
                let s = sample_sd(&logs);
                let t = t_quantile(1.0 - (1.0 - cfg.confidence) / 2.0, (n - 1) as f64);
                let half = (t * s * (2.0 / n as f64).sqrt()).max(floor.ln_1p());
                Some((
                    Estimate {
                        point: mean.exp(),
                        lower: (mean - half).exp(),
                        upper: (mean + half).exp(),
                        confidence: cfg.confidence,
                    },
                    EstimateBasis::Processes,
                ))
            }
        }
    }
}

/// Sample standard deviation (n − 1); 0 for fewer than two values.
pub(crate) fn sample_sd(xs: &[f64]) -> f64 {
    let n = xs.len();
    if n < 2 {
        return 0.0;
    }
    let m = xs.iter().sum::<f64>() / n as f64;
    (xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1) as f64).sqrt()
}

/// Splits the sorted medians at their widest gap when it is at least [`MODE_MIN_GAP`]
/// and [`MODE_GAP_MULTIPLE`] times the range within either side; needs 3 processes.
fn find_modes(medians: &[f64]) -> Option<[Mode; 2]> {
    if medians.len() < 3 {
        return None;
    }
    let mut s = medians.to_vec();
    s.sort_by(f64::total_cmp);
    let (k, gap) = s
        .windows(2)
        .enumerate()
        .map(|(i, w)| (i, w[1] / w[0] - 1.0))
        .max_by(|a, b| a.1.total_cmp(&b.1))?;
    let (low, high) = s.split_at(k + 1);
    let spread = |g: &[f64]| g[g.len() - 1] / g[0] - 1.0;
    let within = spread(low).max(spread(high));
    if gap < MODE_MIN_GAP || gap < MODE_GAP_MULTIPLE * within {
        return None;
    }
    let mode = |g: &[f64]| Mode {
        centre: (g.iter().map(|x| x.ln()).sum::<f64>() / g.len() as f64).exp(),
        processes: g.len(),
    };
    Some([mode(low), mode(high)])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::BootstrapConfig;

    fn groups(medians: &[f64]) -> Vec<Vec<f64>> {
        medians
            .iter()
            .map(|&m| {
                (0..11)
                    .map(|i| m * (1.0 + (i as f64 - 5.0) * 1e-3))
                    .collect()
            })
            .collect()
    }

    #[test]
    fn t_quantiles_match_tables() {
        assert!((t_quantile(0.975, 4.0) - 2.776_445).abs() < 1e-5);
        assert!((t_quantile(0.975, 1.0) - 12.706_2).abs() < 1e-3);
        assert!((t_quantile(0.995, 10.0) - 3.169_27).abs() < 1e-4);
        assert!((t_cdf(2.776_445, 4.0) - 0.975).abs() < 1e-6);
    }

    #[test]
    fn the_interval_is_the_next_runs_and_widens_for_few_processes() {
        let cfg = BootstrapConfig::default();
        let five = ProcessStats::from_groups(&groups(&[100.0, 102.0, 98.0, 101.0, 99.0]));
        let (e, basis) = five.estimate(&[], cfg, 0.0).unwrap();
        assert_eq!(basis, EstimateBasis::Processes);
        let logs: Vec<f64> = five.medians.iter().map(|x| x.ln()).collect();
        let s = sample_sd(&logs);
        let expected = 2.776_445 * s * (2.0f64 / 5.0).sqrt();
        assert!(((e.upper / e.point).ln() - expected).abs() < 1e-6, "{e:?}");
        assert!((e.point / 100.0 - 1.0).abs() < 0.001, "{e:?}");
        // The same spread over three processes gives a wider interval.
        let three = ProcessStats::from_groups(&groups(&[100.0, 102.0, 98.0]));
        let (e3, _) = three.estimate(&[], cfg, 0.0).unwrap();
        assert!(e3.rel_half_width() > e.rel_half_width());
        // The run-to-run floor widens an interval the processes alone make narrower.
        let (floored, _) = five.estimate(&[], cfg, RUN_FLOOR_HOST).unwrap();
        assert!(
            ((floored.upper / floored.point) - 1.25).abs() < 1e-9,
            "{floored:?}"
        );
        assert!(
            ((floored.point / floored.lower) - 1.25).abs() < 1e-9,
            "{floored:?}"
        );
        assert_eq!(five.count, 5);
        assert!((five.range.unwrap() - (102.0 / 98.0 - 1.0)).abs() < 1e-12);
        assert!(!five.unstable && five.modes.is_none());
        // Samples 0.1% apart: MAD 0.3%, scaled to a standard deviation.
        assert!(
            (five.within.unwrap() - 0.003 * 1.4826).abs() < 1e-4,
            "{five:?}"
        );
    }

    #[test]
    fn one_process_falls_back_to_its_own_bootstrap_and_says_so() {
        let g = groups(&[100.0]);
        let one = ProcessStats::from_groups(&g);
        let (e, basis) = one
            .estimate(&g[0], BootstrapConfig::default(), RUN_FLOOR_HOST)
            .expect("one process");
        assert_eq!(basis, EstimateBasis::OneProcess);
        assert!(e.contains(100.0));
        assert!(one.between.is_none() && one.range.is_none() && !one.unstable);
        // One process's interval is its own; no floor makes it look like a run's.
        assert!(e.rel_half_width() < 0.01, "{e:?}");
        assert!(ProcessStats::from_groups(&[])
            .estimate(&[], BootstrapConfig::default(), 0.0)
            .is_none());
    }

    #[test]
    fn processes_in_two_modes_are_unstable_and_named() {
        let p = ProcessStats::from_groups(&groups(&[5.4, 9.3, 5.5, 9.2, 5.4]));
        assert!(p.unstable, "{p:?}");
        let [low, high] = p.modes.expect("two modes");
        assert_eq!((low.processes, high.processes), (3, 2));
        assert!((low.centre - 5.43).abs() < 0.01 && (high.centre - 9.25).abs() < 0.01);
        // A steady drift is unstable but not two modes.
        let drift = ProcessStats::from_groups(&groups(&[100.0, 104.0, 108.0, 112.0, 116.0]));
        assert!(drift.unstable && drift.modes.is_none(), "{drift:?}");
        // A small, even spread is neither.
        let calm = ProcessStats::from_groups(&groups(&[100.0, 100.5, 101.0, 99.8]));
        assert!(!calm.unstable && calm.modes.is_none());
    }

    #[test]
    fn a_large_range_inside_very_noisy_processes_is_not_called_unstable() {
        let noisy: Vec<Vec<f64>> = [100.0, 112.0, 95.0]
            .iter()
            .map(|&m| (0..21).map(|i| m * (0.6 + 0.04 * i as f64)).collect())
            .collect();
        let p = ProcessStats::from_groups(&noisy);
        assert!(p.range.unwrap() > UNSTABLE_RANGE);
        assert!(!p.unstable, "{p:?}");
    }

    #[test]
    fn bad_times_and_empty_processes_are_left_out() {
        let p = ProcessStats::from_groups(&[
            vec![],
            vec![f64::NAN, 10.0, 10.0],
            vec![-1.0, 0.0],
            vec![11.0],
        ]);
        assert_eq!(p.medians, [10.0, 11.0]);
    }

    #[test]
    fn the_policy_runs_its_floor_then_while_the_interval_is_wide() {
        use ProcessDecision::*;
        let p = ProcessPolicy::standard();
        let tight = ProcessStats::from_groups(&groups(&[100.0, 100.2, 99.9]));
        let wide = ProcessStats::from_groups(&groups(&[100.0, 103.0, 97.0]));
        // Below the floor, always another.
        assert_eq!(p.decide(1, &tight, false, false), Another);
        assert_eq!(p.decide(2, &tight, false, true), Another);
        // Device-bound: done at 3 when tight; wide asks for more until the max or the
        // budget.
        assert_eq!(p.decide(3, &tight, false, false), Done);
        assert_eq!(p.decide(3, &wide, false, false), Another);
        assert_eq!(p.decide(3, &wide, false, true), Done);
        assert_eq!(p.decide(6, &wide, false, false), Done);
        // Host-bound: exactly the minimum, however the processes look.
        assert_eq!(p.decide(2, &wide, true, false), Another);
        assert_eq!(p.decide(3, &wide, true, false), Done);
        // A fixed number is fixed.
        let fixed = ProcessPolicy::fixed(2);
        assert_eq!(fixed.decide(1, &wide, true, false), Another);
        assert_eq!(fixed.decide(2, &wide, false, false), Done);
        assert!(fixed.is_fixed() && !p.is_fixed());
    }
}
