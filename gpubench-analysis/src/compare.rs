//! Comparison of a run with a baseline, process by process: the relative change of the
//! typical time with its interval and significance, and a verdict.
//!
//! # The decision rule
//!
//! The unit is the process ([`crate::processes`] says why): each side is the list of
//! its processes' medians. On a log scale (`ln` of each median), the change is Welch's
//! two-sample t on the means: `d = ȳ_current − ȳ_baseline`, standard error
//! `√(s²_b/n_b + s²_c/n_c)`, Welch–Satterthwaite degrees of freedom. Then:
//!
//! * the **change** is `exp(d) − 1` (0.05: 5% slower), the ratio of the geometric means
//!   of the process medians, and its **interval** is `exp(d ± t·SE) − 1` at
//!   [`CompareConfig::confidence`], 90% by default: each bound is a one-sided 5% test,
//!   which is the question a gate asks ("slower by more than the threshold?"), and the
//!   two together are the two one-sided tests (TOST) of "no change";
//! * the **p-value** is the one-sided t-test of "no change" in the direction of the
//!   change;
//! * the **threshold** is the larger of [`CompareConfig::noise_threshold`] and
//!   [`CompareConfig::spread_multiple`] × the pooled standard deviation of the log process medians:
//!   a change smaller than what one process differs from the next is not one a user
//!   would see in their next run, and with few processes two sides can land in
//!   different modes of a bimodal host (a launch-bound benchmark's dispatch speed) by
//!   chance alone.
//!
//! With `t` the threshold and `α` the [`CompareConfig::significance`] (the bounds are
//! symmetric on the log scale, so swapping the sides mirrors the verdict exactly):
//!
//! | verdict | when |
//! |---|---|
//! | [`Verdict::Regressed`] | `p < α` and the whole interval lies above `+t` |
//! | [`Verdict::Improved`] | `p < α` and the whole interval lies below `1/(1+t) − 1` (≈ `−t`) |
//! | [`Verdict::NoChange`] | the whole interval lies within those bounds (significant or not: a real change smaller than the threshold is no change worth reporting; when significant and excluding no change, [`Comparison::certain_under_threshold`] says so) |
//! | [`Verdict::Ambiguous`] | anything else: the interval straddles `±t` or is wider than the band; or a side has fewer than [`MIN_PROCESSES_PER_SIDE`] processes ([`MIN_PROCESSES_HOST`] for host-bound work on a GPU), when the change and its interval say nothing of the next run |
//!
//! # The CPU device
//!
//! Work on a GPU whose time rests on the host ([`Bound::Host`]: launch-bound, or
//! syncing inside) is judged on [`CompareConfig::host_noise_threshold`] (±50%) with
//! [`MIN_PROCESSES_HOST`] processes a side, because the host's dispatch speed drifts
//! between runs, every process of one run alike. On the CPU device ([`Bound::Cpu`])
//! nothing is dispatched: the host's time is the routine's work on its cores. It
//! still moves from run to run by more than a run's processes show, so it is judged
//! on [`CompareConfig::cpu_noise_threshold`] (±10%) or 1.5 times its processes'
//! spread, whichever is larger, with [`MIN_PROCESSES_PER_SIDE`] processes a side.
//! Measured on a 2-core cloud machine, one intra-op thread, 36 runs of a 256² f32
//! matmul (3 to 6 processes each; 8 of them beside a busy thread on the other core,
//! which no process was flagged contended for): a run's processes spread by 2.2%
//! (pooled standard deviation of the log medians), and the runs' figures by 1.7%
//! where the processes alone would move them by 1.0%, a drift of 1.4% between runs
//! that every process of a run shares; the figures spanned 7.9%. A CI runner's two
//! runs minutes apart read 4.0% apart with processes within 0.8%. Judged on the noise
//! threshold (±2%) and the spread alone, 110 of the 1,260 ordered pairs of those runs
//! (8.7%) called unchanged code regressed or improved; at ±10% none did, and 1,258
//! were "no change" (`scripts/cpu-drift --judge` over
//! `docs/cpu-runs/matmul-drift.tar.gz`). A planted 2× slowdown of that matmul is called
//! regressed with the defaults (3 processes a side), which the host rule, needing 5
//! and a change beyond 50%, never did (`cpu_work_is_judged_on_its_own_spread` in the
//! tests).
//!
//! On a host that could not serve its threads ([`compare_cpu_processes`] with
//! `contention`: a process of a side was flagged so, see [`crate::host`]) its time
//! also holds a share of waiting for a core, which follows the other work and which
//! no process of the run can separate from the code's own time. A contended
//! comparison is judged on at least [`CompareConfig::host_noise_threshold`], and is
//! never called regressed or improved: the verdict is [`Verdict::Ambiguous`] with a
//! note naming `cargo gpubench ab`, which measures both revisions in the same
//! processes under the same load. "No change" (within ±50%) stands. On a 2-core
//! machine beside other engineers' builds, unchanged code read +72.4% [+53.9%,
//! +93.2%] with one run contended in 4 of 4 processes and the other in none; and 12
//! runs of one thread's 256² matmul, every process contended, a busy loop on one
//! core beside every other run, spanned 4.1× (their processes 30% apart): judged on
//! ±50% and their spread, 40 of the 132 ordered pairs were called regressed or
//! improved; with this rule none is (`scripts/cpu-drift --judge` over
//! `docs/cpu-runs/busy-drift.tar.gz`). A change of CPU work on a busy host is
//! `cargo gpubench ab`'s to judge.
//!
//! # Too noisy to judge
//!
//! The spread term can widen the threshold without bound: processes of a busy host
//! 2× apart give ±100%, under which "no change" (`+7.1% [−38.4%, +86.4%]`) says
//! nothing a user would accept. Beyond [`MAX_NO_CHANGE_THRESHOLD`] (±50%, the widest
//! noise threshold the rule sets itself) "no change" becomes [`Verdict::Ambiguous`],
//! "too noisy to judge", with the fix (`cargo gpubench ab`, or a quieter machine);
//! a regression or improvement beyond even that threshold stands.
//!
//! Calibrated in `benches/calibration.rs` on synthetic samples with the per-process
//! shifts measured on an H200 (device-bound: 1% between processes; launch-bound: 14%
//! between processes, or two modes), at the numbers of processes `cargo gpubench` runs
//! ([`gpubench_record::measurement::ProcessPolicy::standard`]): identical code is called regressed
//! or improved in under 1% of comparisons, and a 5% slowdown of a device-bound
//! benchmark is called regressed in over 95%.

//! # Paired (ab)
//!
//! When base and head ran in the same processes, samples alternated in balanced
//! order (`cargo gpubench ab`), each process gives one paired figure: the log of
//! head over base, the median over its pairs of adjacent samples. Whatever the
//! process adds (the host's dispatch mode, clocks at start) is shared by both sides
//! and cancels in it, so [`compare_paired`] judges those per-process log ratios
//! alone, by a one-sample Student's t (the paired t-test): the change is the
//! geometric mean ratio `exp(mean) − 1` with its interval `exp(mean ± t·s/√n) − 1`,
//! the threshold the larger of [`CompareConfig::paired_noise_threshold`] (±1%) and
//! [`SPREAD_MULTIPLE`] × `s` (a change smaller than one process's ratio differs
//! from the next is not one the next run would show), and the verdict by the table
//! above. Kernel time's paired ratios are judged the same way. The other noise
//! thresholds do not apply: they allow for drift between separate processes (clocks
//! and heat, ±2%; the host's dispatch mode, ±50%), which pairing cancels. What it
//! does not cancel is a bias of the pairing itself (what balanced blocks leave of
//! the order effect, the two revisions' code layout): more processes do not average
//! it away, so the threshold has a floor; on the CPU device, where those biases are
//! larger, at least [`PAIRED_CPU_NOISE_FLOOR`] (±5%). With one process the verdict
//! is ambiguous, since one process says nothing of the next.
//!
//! Calibrated in `benches/calibration.rs` (its paired table) on per-process log
//! ratios drawn as the change plus `N(0, sd²)` plus, for the "+ order" models, a
//! bias of 0.1–0.33% against the head in every process (a quarter of the order
//! effect measured unbalanced on the H200), under `ab`'s policy (5 to 10
//! processes), 10,000 comparisons a row; "detectable" is the median of
//! [`Comparison::detectable`] on identical code:
//!
//! | paired model (H200) | identical: regressed or improved | identical: no change | 1.75% slower: regressed | detectable |
//! |---|---|---|---|---|
//! | device-bound, sd 0.1% + order | 0% | 100% | 100% | ±1.11% |
//! | device-bound, sd 0.3% + order | 0% | 99.8% | 100% | ±1.27% |
//! | device-bound, sd 0.3% (8192³ matmul) | 0% | 100% | 99.2% | ±1.29% |
//! | launch-bound, sd 0.5% + order | 0% | 91.5% | 93.3% | ±1.45% |
//! | launch-bound, sd 1% + order | 0.07% | 76.2% | 37.1% | ±2.26% |
//! | host-bound, sd 1.5% (add of 1M floats) | 0.29% | 83.6% | 10.3% | ±3.02% |
//! | host-bound, sd 2.9% (SDPA/128 pilot) | 0.42% | 95.0% | 2.0% | ±5.94% |
//!
//! At ±2% (the run's threshold, which pairing used before it had its own) the 1.75%
//! slowdown — the H200's MLP step with a 3% larger batch, which `ab` read at +1.73%
//! to +1.77% with intervals of ±0.02–0.04% in 4 of 4 runs — was caught in 0.2–3.1% of
//! comparisons of the device-bound models; at ±0.5% the sd 0.5% launch-bound model
//! is "no change" in 59%; at ±0.25% the order bias alone is called regressed in
//! 1.1–1.9%, past the 1% target.
//!
//! # Certain, but under the threshold
//!
//! A "no change" whose interval excludes no change at all (and whose p-value is
//! significant) is a real change smaller than the threshold: +0.6% [+0.5%, +0.7%]
//! under ±1%. The verdict stays [`Verdict::NoChange`], so no gate moves, and
//! [`Comparison::certain_under_threshold`] says it, for the outputs to show.
//!
//! # What a comparison could detect
//!
//! [`Comparison::detectable`] is the smallest change the comparison could have
//! called regressed: on the log scale, with `T = ln(1 + threshold)` and `h` the
//! half-width of the change's interval, `D = T + h`, reported as `exp(D) − 1` (its
//! mirror image `exp(−D) − 1` is the smallest improvement). A change read at `d`
//! has the interval `d ± h`, which lies wholly beyond `T` exactly when `d > D`, so a
//! reading beyond `D` is regressed (or improved) and one within `T − h` is no
//! change; between the two, ambiguous. Under a significance stricter than the
//! interval's one-sided level, `D` is at least the change that significance needs.
//! A true change of `D` is read beyond it in about half of runs like this one; one
//! of about `T + 2h` in 95% (the calibration's "min found" tracks it). "No change"
//! therefore says the change lies within the threshold; "could detect" says how
//! large a change this run's noise would have let through. Absent when no verdict
//! was possible (too few processes).

use std::fmt;

use rand::SeedableRng;
use rand_pcg::Pcg64Mcg;
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::processes::{sample_sd, Bound, TTest};
use crate::{
    stats::mean, stats::median, stats::quantile_sorted, stats::sorted, stats::MedianResampler,
    stats::DEFAULT_RESAMPLES, stats::DEFAULT_SEED,
};
use gpubench_record::estimate::Estimate;

/// Default significance level: a change must have a one-sided p < 0.05.
pub const DEFAULT_SIGNIFICANCE: f64 = 0.05;
/// Default confidence of the change's interval: 90%, whose bounds are the one-sided
/// 5% tests of "slower by more than the threshold" and "faster by more than it" (and
/// together the two one-sided tests of equivalence, TOST, for "no change").
pub const DEFAULT_VERDICT_CONFIDENCE: f64 = 0.90;
/// Default noise threshold: changes within ±2% are no change. GPU clocks, thermals and
/// driver state move run-to-run timings by about that much.
pub const DEFAULT_NOISE_THRESHOLD: f64 = 0.02;
/// Default noise threshold of work on the CPU device: ±10%. Its runs drift by more
/// than their processes spread (module docs, "The CPU device"); the threshold that
/// called none of 1,260 pairs of unchanged runs on a 2-core machine regressed or
/// improved.
pub const DEFAULT_CPU_NOISE_THRESHOLD: f64 = 0.10;
/// Default noise threshold of energy per call (`baseline`'s energy metric): ±3%.
/// Energy moves with the board's power and temperature more than time does: on the
/// H200 an 8192² bf16 matmul's 1 s windows spread by 3% within a process (its time by
/// 0.3%), its processes by 0.6%. Calibrated in `benches/calibration.rs` (its energy
/// table).
pub const DEFAULT_ENERGY_NOISE_THRESHOLD: f64 = 0.03;
/// Default noise threshold of a paired comparison (`cargo gpubench ab`): ±1%, as
/// criterion's. Pairing cancels the drift between processes that the ±2% is for;
/// what is left is the per-process ratio's own noise (covered by the spread term)
/// and biases no number of processes removes (what balanced blocks leave of the
/// order effect, the two revisions' code layout). With such a bias of up to 0.33%,
/// unchanged code got a verdict in at most 0.42% of paired comparisons and a 1.75%
/// slowdown of device-bound work was caught in over 99% (module docs, "Paired").
pub const DEFAULT_PAIRED_NOISE_THRESHOLD: f64 = 0.01;
/// The paired noise threshold of work on the CPU device is at least this: ±5%. Pairing
/// cancels the drift between runs, but two revisions' code on a CPU keeps biases of
/// its own (where each library's code and data land in the caches, which core each
/// sample gets beside other work): on a 2-core CI machine running other tests,
/// identical code's paired change read −1.6% [−2.1%, −1.1%] over 5 processes. A
/// planted 2× is far beyond it.
pub const PAIRED_CPU_NOISE_FLOOR: f64 = 0.05;
/// Fewest processes on each side for a verdict other than [`Verdict::Ambiguous`]: one
/// process cannot show how much the next one differs.
pub const MIN_PROCESSES_PER_SIDE: usize = crate::processes::MIN_PROCESSES;
/// The threshold is at least this many pooled standard deviations of the log process
/// medians; see the module docs and `benches/calibration.rs`.
pub const SPREAD_MULTIPLE: f64 = 1.5;
/// The widest threshold under which a comparison says [`Verdict::NoChange`]: ±50%,
/// the widest noise threshold the rule sets by design (host-bound work, contended CPU
/// work). A threshold the processes' spread pushes beyond it (±100% when processes
/// of a busy host lie 2× apart) is no claim a user would accept: such a comparison
/// is [`Verdict::Ambiguous`], "too noisy to judge", naming `cargo gpubench ab` (module
/// docs, "Too noisy to judge").
pub const MAX_NO_CHANGE_THRESHOLD: f64 = 0.5;
/// Default noise threshold of a benchmark whose time rests on the host's dispatch
/// speed: ±50%. On an H200 that speed drifted by up to 45% between runs of unchanged
/// code, every process of a run alike, which no number of processes in one run can
/// see; kernel time and counters are the sensitive gate for such work.
pub const DEFAULT_HOST_NOISE_THRESHOLD: f64 = 0.5;
/// Fewest processes on each side for a verdict on a benchmark whose time rests on the
/// host's dispatch speed. Its processes can fall into modes up to 2× apart; with three
/// a side, one run lands all in one mode and the next all in the other 3% of the time,
/// with five 0.2% (`benches/calibration.rs`).
pub const MIN_PROCESSES_HOST: usize = 5;

/// How a comparison decides.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CompareConfig {
    /// Largest p-value that counts as significant; default [`DEFAULT_SIGNIFICANCE`].
    pub significance: f64,
    /// Relative change (0.02 = 2%) that is noise, not a change; default
    /// [`DEFAULT_NOISE_THRESHOLD`].
    pub noise_threshold: f64,
    /// Confidence level of the change's interval; default
    /// [`DEFAULT_VERDICT_CONFIDENCE`] (0.90).
    pub confidence: f64,
    /// Bootstrap resamples of the within-process fallback (a side with one process);
    /// default [`DEFAULT_RESAMPLES`] (2000).
    pub resamples: usize,
    /// Seed of those resamples, so a comparison is reproducible; default
    /// [`DEFAULT_SEED`].
    pub seed: u64,
    /// The threshold is at least this many pooled standard deviations of the log
    /// process medians; default [`SPREAD_MULTIPLE`].
    pub spread_multiple: f64,
    /// Noise threshold of a benchmark whose time rests on the host's dispatch speed
    /// ([`Bound::Host`]; not the CPU device's work, see the module docs); default
    /// [`DEFAULT_HOST_NOISE_THRESHOLD`].
    pub host_noise_threshold: f64,
    /// Noise threshold of work on the CPU device ([`Bound::Cpu`], on a host that
    /// served its threads; a contended one is judged on `host_noise_threshold`);
    /// default [`DEFAULT_CPU_NOISE_THRESHOLD`] (also for settings written before it).
    #[serde(default = "default_cpu_noise_threshold")]
    pub cpu_noise_threshold: f64,
    /// Noise threshold of a paired comparison ([`compare_paired`]: base and head
    /// measured in the same processes), in place of every other noise threshold;
    /// default [`DEFAULT_PAIRED_NOISE_THRESHOLD`] (also for settings written before
    /// it).
    #[serde(default = "default_paired_noise_threshold")]
    pub paired_noise_threshold: f64,
    /// Noise threshold of energy per call in processes of their own (device-bound
    /// work; host-bound work's is at least `host_noise_threshold`); default
    /// [`DEFAULT_ENERGY_NOISE_THRESHOLD`] (also for settings written before it).
    /// Paired energy ratios are judged on `paired_noise_threshold`.
    #[serde(default = "default_energy_noise_threshold")]
    pub energy_noise_threshold: f64,
}

fn default_cpu_noise_threshold() -> f64 {
    DEFAULT_CPU_NOISE_THRESHOLD
}

fn default_paired_noise_threshold() -> f64 {
    DEFAULT_PAIRED_NOISE_THRESHOLD
}

fn default_energy_noise_threshold() -> f64 {
    DEFAULT_ENERGY_NOISE_THRESHOLD
}

impl Default for CompareConfig {
    fn default() -> Self {
        CompareConfig {
            significance: DEFAULT_SIGNIFICANCE,
            noise_threshold: DEFAULT_NOISE_THRESHOLD,
            confidence: DEFAULT_VERDICT_CONFIDENCE,
            resamples: DEFAULT_RESAMPLES,
            seed: DEFAULT_SEED,
            spread_multiple: SPREAD_MULTIPLE,
            host_noise_threshold: DEFAULT_HOST_NOISE_THRESHOLD,
            cpu_noise_threshold: DEFAULT_CPU_NOISE_THRESHOLD,
            paired_noise_threshold: DEFAULT_PAIRED_NOISE_THRESHOLD,
            energy_noise_threshold: DEFAULT_ENERGY_NOISE_THRESHOLD,
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
        } else if !(self.host_noise_threshold.is_finite() && self.host_noise_threshold >= 0.0) {
            "host noise threshold must be a finite number of at least 0"
        } else if !(self.cpu_noise_threshold.is_finite() && self.cpu_noise_threshold >= 0.0) {
            "CPU noise threshold must be a finite number of at least 0"
        } else if !(self.paired_noise_threshold.is_finite() && self.paired_noise_threshold >= 0.0) {
            "paired noise threshold must be a finite number of at least 0"
        } else if !(self.energy_noise_threshold.is_finite() && self.energy_noise_threshold >= 0.0) {
            "energy noise threshold must be a finite number of at least 0"
        } else if self.resamples == 0 {
            "resamples must be at least 1"
        } else if !(self.spread_multiple.is_finite() && self.spread_multiple >= 0.0) {
            "the spread multiple must be a finite number of at least 0"
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

/// A run's processes against a baseline's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// Relative change of the typical time, `current / baseline − 1` (0.05: 5% slower),
    /// with its interval.
    pub change: Estimate,
    /// Significance of "no change": the one-sided t-test, on the log process medians,
    /// in the direction of the change.
    pub p_value: f64,
    /// The verdict.
    pub verdict: Verdict,
    /// The baseline's typical time: the geometric mean of its process medians, ns.
    pub baseline_estimate: f64,
    /// The current typical time, ns.
    pub current_estimate: f64,
    /// Processes on the baseline's side.
    pub baseline_processes: usize,
    /// Processes on the current side.
    pub current_processes: usize,
    /// Pooled standard deviation of the log process medians (≈ the relative spread
    /// between processes); absent when neither side has two processes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spread: Option<f64>,
    /// The noise threshold of the rule that judged it: [`CompareConfig::noise_threshold`]
    /// for device-bound work, at least the CPU's or the host's for theirs, the paired
    /// one for a paired comparison (what a page says "noise threshold" of).
    pub noise_threshold: f64,
    /// The threshold the verdict used: the noise threshold, or the spread between
    /// processes when that is larger.
    pub threshold: f64,
    /// The significance level the verdict used.
    pub significance: f64,
    /// Why the verdict is ambiguous whatever the change, when it is: too few processes,
    /// a threshold too wide to say "no change" under, or only one side contended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Whether work on the CPU device was judged as contended (a side ran on a host
    /// whose CPUs could not serve its threads): the threshold is then at least the
    /// host noise threshold.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub contended: bool,
    /// Whether base and head were measured in the same processes and the verdict
    /// rests on their per-process ratios ([`compare_paired`]); the noise threshold is
    /// then [`CompareConfig::paired_noise_threshold`].
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub paired: bool,
    /// Whether the verdict is no change although the change is certain: significant,
    /// its interval excluding no change, yet lying within the threshold. A real change
    /// smaller than the threshold; the verdict (and so the gate) stays no change, and
    /// the outputs say it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub certain_under_threshold: bool,
    /// The smallest change this comparison could have called regressed (its mirror
    /// image, `1/(1 + x) − 1`, improved): on the log scale, the threshold plus the
    /// half-width of the change's interval, the smallest true change whose interval
    /// of this width lies wholly beyond the threshold (at least the change a
    /// significance stricter than the interval's would need). Module docs, "What a
    /// comparison could detect". Absent when no verdict was possible (too few
    /// processes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detectable: Option<f64>,
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

/// Checks one side: at least one process with samples, every time finite and
/// non-negative, no process median of zero. Returns the process medians.
fn check_processes(groups: &[Vec<f64>], side: Side) -> Result<Vec<f64>, CompareError> {
    let mut medians = Vec::new();
    for g in groups.iter().filter(|g| !g.is_empty()) {
        check_side(g, side)?;
        medians.push(median(g));
    }
    if medians.is_empty() {
        return Err(CompareError::NoSamples { side });
    }
    Ok(medians)
}

/// Compares `current` with `baseline`, each a list of processes holding per-iteration
/// times (ns), of a benchmark bound as `bound`, under `config`; see the module docs for
/// the rule. Work on the CPU device is judged as on a host that served its threads
/// ([`compare_cpu_processes`] says otherwise). Deterministic.
pub fn compare_processes(
    baseline: &[Vec<f64>],
    current: &[Vec<f64>],
    bound: Bound,
    config: &CompareConfig,
) -> Result<Comparison, CompareError> {
    compare_by(baseline, current, bound, Contention::default(), config)
}

/// Which sides of a comparison of CPU work ran on a host that could not serve their
/// threads (a process of the side was flagged contended, see [`crate::host`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Contention {
    /// A process of the baseline was contended.
    pub baseline: bool,
    /// A process of the current run was contended.
    pub current: bool,
}

impl Contention {
    /// Both sides alike: contended, or not.
    pub fn both(contended: bool) -> Self {
        Contention {
            baseline: contended,
            current: contended,
        }
    }

    /// Whether either side was contended.
    pub fn any(self) -> bool {
        self.baseline || self.current
    }

    /// The note of a change that contention may explain, when a side was contended:
    /// its processes waited for a core, by as much as the other work made them.
    fn note(self) -> Option<&'static str> {
        match (self.baseline, self.current) {
            (true, false) => Some(
                "the baseline's processes waited for a core (contended) and this run's did \
                 not, so the change may be that wait rather than the code: judge it with \
                 `cargo gpubench ab`, or measure both sides on a quiet host",
            ),
            (false, true) => Some(
                "this run's processes waited for a core (contended) and the baseline's did \
                 not, so the change may be that wait rather than the code: judge it with \
                 `cargo gpubench ab`, or measure both sides on a quiet host",
            ),
            (true, true) => Some(
                "the processes of both sides waited for a core (contended), each by what \
                 the other work took then, so the change may be that wait rather than the \
                 code: judge it with `cargo gpubench ab`, or measure both sides on a quiet \
                 host",
            ),
            (false, false) => None,
        }
    }
}

/// [`compare_processes`] of work on the CPU device ([`Bound::Cpu`]); `contention` says
/// which sides had a process on a host whose CPUs could not serve its threads
/// ([`crate::host`]). Its time then holds a share of waiting for a core, which moves
/// with the other work from one run to the next where the run's own processes need
/// not show it, so the threshold is at least the host noise threshold; and that wait
/// alone can make any change, so such a pair is never called regressed or improved
/// (module docs, "The CPU device").
pub fn compare_cpu_processes(
    baseline: &[Vec<f64>],
    current: &[Vec<f64>],
    contention: Contention,
    config: &CompareConfig,
) -> Result<Comparison, CompareError> {
    compare_by(baseline, current, Bound::Cpu, contention, config)
}

/// The rule of the module docs; `contention` matters only on the CPU device.
fn compare_by(
    baseline: &[Vec<f64>],
    current: &[Vec<f64>],
    bound: Bound,
    contention: Contention,
    config: &CompareConfig,
) -> Result<Comparison, CompareError> {
    config.validate()?;
    let contention = if bound == Bound::Cpu {
        contention
    } else {
        Contention::default()
    };
    let contended = contention.any();
    let was = check_processes(baseline, Side::Baseline)?;
    let now = check_processes(current, Side::Current)?;
    let (nb, nc) = (was.len(), now.len());
    let log = |xs: &[f64]| xs.iter().map(|x| x.ln()).collect::<Vec<f64>>();
    let (yb, yc) = (log(&was), log(&now));
    let (mb, mc) = (mean(&yb), mean(&yc));
    let (sb, sc) = (sample_sd(&yb), sample_sd(&yc));
    let pooled_df = (nb + nc).saturating_sub(2);
    let spread = (pooled_df > 0).then(|| {
        (((nb - 1) as f64 * sb * sb + (nc - 1) as f64 * sc * sc) / pooled_df as f64).sqrt()
    });
    // On the log scale, where the rule is symmetric: a change of +t and one of
    // 1/(1+t) − 1 are the same size.
    // Host-bound work on a GPU needs a change beyond the host noise threshold: its
    // dispatch speed drifts between runs, every process of a run alike, where no
    // spread of one run can show it. On the CPU device there is no dispatch to drift,
    // but the routine's work on the cores drifts between runs by more than a run's
    // processes show, and on a contended host it holds a wait for a core that drifts
    // with the other work as well (module docs, "The CPU device").
    let noise = match bound {
        Bound::Cpu if contended => config.noise_threshold.max(config.host_noise_threshold),
        Bound::Cpu => config.noise_threshold.max(config.cpu_noise_threshold),
        Bound::Device => config.noise_threshold,
        Bound::Host => config.noise_threshold.max(config.host_noise_threshold),
    };
    let log_threshold = noise
        .ln_1p()
        .max(config.spread_multiple * spread.unwrap_or(0.0));
    let threshold = log_threshold.exp_m1();

    let needed = match bound {
        Bound::Device | Bound::Cpu => MIN_PROCESSES_PER_SIDE,
        Bound::Host => MIN_PROCESSES_HOST,
    };
    let (change, p_value, verdict, note, resolution) = if nb.min(nc) < needed {
        // Too few processes for a verdict. With two on each side the interval is
        // still the processes' own (so it agrees with the estimates shown beside
        // it); with one, nothing is known of how processes differ and it comes
        // from the samples of the processes there are.
        let (change, p_value) = if nb.min(nc) >= 2 {
            let (change, p_value, _) = welch_log(&yb, &yc, config.confidence);
            (change, p_value)
        } else {
            let pooled = |groups: &[Vec<f64>]| groups.concat();
            compare_within(&pooled(baseline), &pooled(current), config)
        };
        // Each side that is short, with its own count: the smaller count may be the
        // other side's, and both may be short.
        let processes = |n: usize| format!("{n} process{}", if n == 1 { "" } else { "es" });
        let short = match (nb < needed, nc < needed) {
            (true, true) => format!(
                "the baseline has {} and this run {}",
                processes(nb),
                processes(nc)
            ),
            (true, false) => format!("the baseline has {}", processes(nb)),
            _ => format!("this run has {}", processes(nc)),
        };
        let why = match bound {
            Bound::Device | Bound::Cpu => {
                "since one process says nothing of how the next one differs"
            }
            Bound::Host => {
                "since its time rests on the host's dispatch speed, whose processes fall into \
                 modes up to 2x apart (run more with --processes, or judge it on kernel time)"
            }
        };
        let note = format!(
            "{short}: a verdict on {} work needs {needed} on each side, {why}",
            bound.label()
        );
        (change, p_value, Verdict::Ambiguous, Some(note), None)
    } else {
        let (change, p_value, log_interval) = welch_log(&yb, &yc, config.confidence);
        let verdict = decide(log_interval, p_value, log_threshold, config.significance);
        let test = welch_test(&yb, &yc);
        let resolution = Resolution::of(&test, verdict, p_value, log_threshold, config);
        let (verdict, note) = match contention.note() {
            Some(why) if matches!(verdict, Verdict::Regressed | Verdict::Improved) => {
                (Verdict::Ambiguous, Some(why.to_string()))
            }
            _ => too_noisy_to_judge(verdict, threshold),
        };
        (change, p_value, verdict, note, Some(resolution))
    };
    Ok(Comparison {
        change,
        p_value,
        verdict,
        baseline_estimate: mb.exp(),
        current_estimate: mc.exp(),
        baseline_processes: nb,
        current_processes: nc,
        spread,
        noise_threshold: noise,
        threshold,
        significance: config.significance,
        note,
        contended,
        paired: false,
        certain_under_threshold: resolution.is_some_and(|r| r.certain_under_threshold),
        detectable: resolution.map(|r| r.detectable),
    })
}

/// Welch's t on the log process medians `yb` and `yc` (two or more each): the
/// change of the geometric mean with its interval, the one-sided p-value of "no
/// change" (module docs), and the interval on the log scale.
fn welch_log(yb: &[f64], yc: &[f64], confidence: f64) -> (Estimate, f64, (f64, f64)) {
    let test = welch_test(yb, yc);
    let (d, se) = (test.diff, test.se);
    let t = test.quantile(confidence);
    let p_value = test.one_sided_p().clamp(0.0, 1.0);
    let change = Estimate {
        point: d.exp_m1(),
        lower: (d - t * se).exp_m1(),
        upper: (d + t * se).exp_m1(),
        confidence,
    };
    (change, p_value, (d - t * se, d + t * se))
}

/// Welch's t of the log process medians `yc` against `yb` (two or more each).
fn welch_test(yb: &[f64], yc: &[f64]) -> TTest {
    let side = |ys: &[f64]| {
        let s = sample_sd(ys);
        (mean(ys), s * s, ys.len())
    };
    TTest::welch(side(yb), side(yc))
}

/// What a comparison with a verdict could tell beyond the verdict (module docs, "What
/// a comparison could detect").
#[derive(Debug, Clone, Copy)]
struct Resolution {
    /// [`Comparison::certain_under_threshold`].
    certain_under_threshold: bool,
    /// [`Comparison::detectable`].
    detectable: f64,
}

impl Resolution {
    /// Of the t-test `test` on the log scale, which ended in `verdict` with
    /// `p_value`, under the log threshold `log_threshold`.
    fn of(
        test: &TTest,
        verdict: Verdict,
        p_value: f64,
        log_threshold: f64,
        config: &CompareConfig,
    ) -> Self {
        let half_width = test.quantile(config.confidence) * test.se;
        let excludes_zero = test.diff.abs() > half_width;
        // A significance stricter than the interval's needs a larger change to call.
        let significant = if config.significance < 0.5 {
            test.quantile(1.0 - 2.0 * config.significance) * test.se
        } else {
            0.0
        };
        Resolution {
            certain_under_threshold: verdict == Verdict::NoChange
                && excludes_zero
                && p_value < config.significance,
            detectable: (log_threshold + half_width).max(significant).exp_m1(),
        }
    }
}

/// The change of the median within pooled samples, by a joint bootstrap of both
/// sides: what is left when a side has one process. Returns the change with its
/// interval and the bootstrap p-value of "no change".
fn compare_within(baseline: &[f64], current: &[f64], config: &CompareConfig) -> (Estimate, f64) {
    let point = relative_change(median(current), median(baseline));
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
    let p_value = ((1 + tail) as f64 / (config.resamples + 1) as f64).min(1.0);
    let changes = sorted(&changes);
    let alpha = (1.0 - config.confidence) / 2.0;
    (
        Estimate {
            point,
            lower: quantile_sorted(&changes, alpha),
            upper: quantile_sorted(&changes, 1.0 - alpha),
            confidence: config.confidence,
        },
        p_value,
    )
}

/// A "no change" under a threshold wider than [`MAX_NO_CHANGE_THRESHOLD`] (its
/// processes spread that much) claims more than the data hold: it becomes
/// [`Verdict::Ambiguous`], with the note that says so and the fix. Other verdicts
/// pass: a change beyond even that threshold is one.
fn too_noisy_to_judge(verdict: Verdict, threshold: f64) -> (Verdict, Option<String>) {
    if verdict != Verdict::NoChange || threshold <= MAX_NO_CHANGE_THRESHOLD {
        return (verdict, None);
    }
    let note = format!(
        "too noisy to judge: its processes spread so far that only a change beyond \
         ±{:.0}% could be told from noise, and \"no change\" needs a threshold within \
         ±{:.0}%; judge it with `cargo gpubench ab` (both revisions in the same \
         processes), or measure on a quieter machine",
        100.0 * threshold,
        100.0 * MAX_NO_CHANGE_THRESHOLD
    );
    (Verdict::Ambiguous, Some(note))
}

/// The table of the module docs, on the log scale: `interval` is the log ratio's and
/// `threshold` is `ln(1 + t)`.
fn decide(interval: (f64, f64), p_value: f64, threshold: f64, significance: f64) -> Verdict {
    let (lower, upper) = interval;
    let significant = p_value < significance;
    if significant && lower > threshold {
        Verdict::Regressed
    } else if significant && upper < -threshold {
        Verdict::Improved
    } else if lower >= -threshold && upper <= threshold {
        Verdict::NoChange
    } else {
        Verdict::Ambiguous
    }
}

/// Judges the per-process log ratios `ln(head / base)` of base and head measured
/// in the same processes (module docs, "Paired"). `base` and `head` are the two
/// sides' typical times (ns) for the estimates shown beside the change.
pub fn compare_paired(
    log_ratios: &[f64],
    base: f64,
    head: f64,
    config: &CompareConfig,
) -> Result<Comparison, CompareError> {
    config.validate()?;
    if log_ratios.is_empty() {
        return Err(CompareError::NoSamples {
            side: Side::Current,
        });
    }
    if let Some(&value) = log_ratios.iter().find(|x| !x.is_finite()) {
        return Err(CompareError::InvalidSample {
            side: Side::Current,
            value,
        });
    }
    let n = log_ratios.len();
    let d = log_ratios.iter().sum::<f64>() / n as f64;
    let spread = (n >= 2).then(|| sample_sd(log_ratios));
    let log_threshold = config
        .paired_noise_threshold
        .ln_1p()
        .max(config.spread_multiple * spread.unwrap_or(0.0));
    let (change, p_value, verdict, note, resolution) = match spread {
        Some(s) => {
            let test = TTest {
                diff: d,
                se: s / (n as f64).sqrt(),
                df: (n - 1) as f64,
            };
            let se = test.se;
            let t = test.quantile(config.confidence);
            let p_value = test.one_sided_p().clamp(0.0, 1.0);
            let interval = (d - t * se, d + t * se);
            let change = Estimate {
                point: d.exp_m1(),
                lower: interval.0.exp_m1(),
                upper: interval.1.exp_m1(),
                confidence: config.confidence,
            };
            let verdict = decide(interval, p_value, log_threshold, config.significance);
            let resolution = Resolution::of(&test, verdict, p_value, log_threshold, config);
            let (verdict, note) = too_noisy_to_judge(verdict, log_threshold.exp_m1());
            (change, p_value, verdict, note, Some(resolution))
        }
        None => (
            Estimate {
                point: d.exp_m1(),
                lower: d.exp_m1(),
                upper: d.exp_m1(),
                confidence: config.confidence,
            },
            1.0,
            Verdict::Ambiguous,
            Some(
                "paired in 1 process: a verdict needs 2 or more, since one process says \
                 nothing of how the next one differs (run more with --processes)"
                    .to_string(),
            ),
            None,
        ),
    };
    Ok(Comparison {
        change,
        p_value,
        verdict,
        baseline_estimate: base,
        current_estimate: head,
        baseline_processes: n,
        current_processes: n,
        spread,
        noise_threshold: config.paired_noise_threshold,
        threshold: log_threshold.exp_m1(),
        significance: config.significance,
        note,
        contended: false,
        paired: true,
        certain_under_threshold: resolution.is_some_and(|r| r.certain_under_threshold),
        detectable: resolution.map(|r| r.detectable),
    })
}

#[cfg(test)]
mod tests;
