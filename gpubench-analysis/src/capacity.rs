//! The capacity search: the largest size (a batch, a sequence length) of a
//! `#[gpu_bench(capacity = "...")]` benchmark that fits in device memory, found by
//! doubling then bisection over probes (each a process of its own), the fit of
//! memory against size (fixed + per-item bytes), and its comparison with a baseline.
//!
//! The search ([`next_probe`]):
//! 1. from the first size, halve until a size fits, or double until one fails;
//! 2. once two sizes fit, the fit of peak reserved memory against size predicts where
//!    memory runs out: instead of doubling, the next probe goes to just under
//!    (then just over) that prediction, so a search from batch 64 to 100 000 does not
//!    take eleven doublings;
//! 3. bisection between the largest size that fit and the smallest that failed,
//!    until they are within the resolution (`resolution` of the size, at least 1) or
//!    the probes run out;
//! 4. the two sizes at the boundary are probed again, up to `repeats` probes each:
//!    the largest size counts as fitting only when every one of its probes fitted
//!    (one that runs out of memory makes it the smallest failing size, and the
//!    bisection goes on below it), and the smallest failing size is probed again to
//!    tell a steady out-of-memory error from a flaky one. Once the limit shows
//!    itself flaky (a size both fitted and failed, or fitted above one that failed),
//!    every size must fit `repeats` times before the bisection counts it as fitting.
//!
//! A size fails when any probe of it failed: out of memory, or a probe that crashed,
//! hung or failed otherwise (recorded with its reason). A size with probes that fitted
//! and probes that failed is **flaky**. So an out-of-memory error that comes and goes
//! gives the same answer on every search: the largest size whose repeated probes all
//! fitted, below the sizes that failed.
//!
//! A comparison ([`compare`]) is a regression when a size the baseline fitted fails
//! now (the head's smallest failing size is at or below the baseline's largest
//! fitting one), an improvement when a size the baseline could not fit fits now, and
//! no change otherwise: both searches bracket the same limit to their resolution.

use serde::{Deserialize, Serialize};

use gpubench_record::units::format_bytes;

/// The version of [`CapacityResult`]'s file format.
pub const CAPACITY_FORMAT_VERSION: u32 = 1;

/// One probe: the benchmark run at one size in a fresh process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CapacityProbe {
    /// The size probed.
    pub size: u64,
    /// Whether it ran without running out of memory.
    pub fits: bool,
    /// Peak bytes held by tensors (fitting probes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_allocated_bytes: Option<u64>,
    /// Peak bytes reserved by the allocator (fitting probes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_reserved_bytes: Option<u64>,
    /// Wall time of the probe's process, seconds.
    #[serde(default)]
    pub seconds: f64,
    /// Why a probe that did not fit failed when it was not for memory: it crashed,
    /// hung past its timeout, or the benchmark failed otherwise. Its size counts as
    /// failing all the same.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
}

impl CapacityProbe {
    /// The probe a harness's record of one size makes: it fits when it passed, it
    /// does not when it failed (out of memory, or otherwise: then `failure` says
    /// how). `Err` when a passed record has no memory figures: no probe on that
    /// device can say anything about memory.
    pub fn from_record(
        size: u64,
        record: &gpubench_record::record::RawRecord,
        seconds: f64,
    ) -> Result<Self, String> {
        if let Some(f) = record.failure() {
            let failure = (f.kind != gpubench_record::failure::FailureKind::OutOfMemory)
                .then(|| format!("{}: {}", f.kind.label(), f.message));
            return Ok(CapacityProbe {
                failure,
                ..CapacityProbe::failed(size, seconds, None)
            });
        }
        let memory = record
            .first_measurement()
            .and_then(|m| m.memory)
            .ok_or_else(|| {
                format!(
                    "the probe of {} at size {size} has no memory figures (a capacity search \
                     needs a device with an allocator: CUDA)",
                    record.id
                )
            })?;
        Ok(CapacityProbe {
            size,
            fits: true,
            peak_allocated_bytes: Some(memory.peak_allocated_bytes),
            peak_reserved_bytes: Some(memory.peak_reserved_bytes),
            seconds,
            failure: None,
        })
    }

    /// A probe that did not fit: out of memory when `failure` is `None`, else why.
    pub fn failed(size: u64, seconds: f64, failure: Option<String>) -> Self {
        CapacityProbe {
            size,
            fits: false,
            peak_allocated_bytes: None,
            peak_reserved_bytes: None,
            seconds,
            failure,
        }
    }

    /// Whether it ran out of memory (a failure without another reason).
    pub fn out_of_memory(&self) -> bool {
        !self.fits && self.failure.is_none()
    }
}

/// How the search ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SearchEnd {
    /// The largest fitting and smallest failing sizes are within the resolution.
    Converged,
    /// The probes ran out first: the bracket is wider than the resolution.
    OutOfProbes,
    /// Not even a size of 1 fits.
    NothingFits,
    /// Ctrl-C (or SIGTERM) stopped it: the probes are those that finished.
    Interrupted,
    /// An error stopped it (a probe that could not start, a record without memory
    /// figures): the probes are those before it.
    Failed,
}

/// Options of a search.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SearchOptions {
    /// The first size probed.
    pub start: u64,
    /// At most this many probes.
    pub max_probes: usize,
    /// Stop when the bracket is at most this fraction of the largest fitting size
    /// (at least one item).
    pub resolution: f64,
    /// What the allocator may hold (the device's memory, or its cap), for the
    /// prediction; `None`: plain doubling.
    pub limit_bytes: Option<u64>,
    /// Probes at the boundary: the largest size counts as fitting once this many of
    /// its probes fitted (and none failed); the smallest failing size is probed up to
    /// this many times to tell whether it is flaky. At least 1.
    pub repeats: u32,
}

/// Fraction under and over the predicted limit that the jumps probe.
const JUMP_MARGIN: f64 = 0.02;

/// What to do next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Probe this size.
    Probe(u64),
    /// Stop, for this reason.
    Done(SearchEnd),
}

/// What the probes of one size came to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Tally {
    fitted: u32,
    out_of_memory: u32,
    /// Failures other than out of memory (crashes, hangs).
    failed_otherwise: u32,
}

impl Tally {
    fn of(probes: &[CapacityProbe], size: u64) -> Self {
        let mut t = Tally::default();
        for p in probes.iter().filter(|p| p.size == size) {
            if p.fits {
                t.fitted += 1;
            } else if p.failure.is_none() {
                t.out_of_memory += 1;
            } else {
                t.failed_otherwise += 1;
            }
        }
        t
    }

    fn failed(&self) -> u32 {
        self.out_of_memory + self.failed_otherwise
    }
}

/// Whether the probes show a flaky limit: a size that both fitted and failed, or one
/// that fitted above a size that failed.
fn flaky_seen(probes: &[CapacityProbe]) -> bool {
    let Some(hi) = probes.iter().filter(|p| !p.fits).map(|p| p.size).min() else {
        return false;
    };
    probes.iter().any(|p| p.fits && p.size >= hi)
}

/// The smallest size that failed on any probe, and the largest size below it whose
/// probes all fitted: once the limit showed itself flaky, only a size that fitted
/// `repeats` times counts.
fn bracket(probes: &[CapacityProbe], repeats: u32) -> (Option<u64>, Option<u64>) {
    let hi = probes.iter().filter(|p| !p.fits).map(|p| p.size).min();
    let needed = if flaky_seen(probes) {
        repeats.max(1)
    } else {
        1
    };
    let lo = probes
        .iter()
        .filter(|p| p.fits && hi.is_none_or(|hi| p.size < hi))
        .map(|p| p.size)
        .filter(|&size| {
            let t = Tally::of(probes, size);
            t.failed() == 0 && t.fitted >= needed
        })
        .max();
    (lo, hi)
}

/// Once the limit showed itself flaky: the largest size between the bracket's ends
/// that fitted, but fewer than `repeats` times, to probe again before bisecting.
fn unconfirmed(
    probes: &[CapacityProbe],
    lo: Option<u64>,
    hi: Option<u64>,
    repeats: u32,
) -> Option<u64> {
    if !flaky_seen(probes) {
        return None;
    }
    probes
        .iter()
        .filter(|p| p.fits && lo.is_none_or(|lo| p.size > lo) && hi.is_none_or(|hi| p.size < hi))
        .map(|p| p.size)
        .filter(|&size| {
            let t = Tally::of(probes, size);
            t.failed() == 0 && t.fitted < repeats.max(1)
        })
        .max()
}

/// The bracket width at which a search around `lo` stops.
fn resolution_items(lo: u64, resolution: f64) -> u64 {
    ((lo as f64 * resolution).ceil() as u64).max(1)
}

/// The boundary's next repeated probe, once the bracket is narrow: the largest
/// fitting size until it fitted `repeats` times, then the smallest failing size
/// until it ran out of memory `repeats` times or once fitted (flaky). A size that
/// crashed or hung is not probed again: each could cost a timeout, and it failed
/// either way.
fn repeat_at_boundary(
    probes: &[CapacityProbe],
    lo: Option<u64>,
    hi: Option<u64>,
    repeats: u32,
) -> Option<u64> {
    if let Some(lo) = lo {
        if Tally::of(probes, lo).fitted < repeats {
            return Some(lo);
        }
    }
    let hi = hi?;
    let t = Tally::of(probes, hi);
    (t.fitted == 0 && t.failed_otherwise == 0 && t.out_of_memory < repeats).then_some(hi)
}

/// The next step of the search (see the module's documentation).
pub fn next_probe(probes: &[CapacityProbe], o: &SearchOptions) -> Next {
    let (lo, hi) = bracket(probes, o.repeats);
    let again = unconfirmed(probes, lo, hi, o.repeats);
    let narrow = again.is_none()
        && match (lo, hi) {
            (None, Some(hi)) => hi <= 1,
            (Some(lo), Some(hi)) => hi - lo <= resolution_items(lo, o.resolution),
            _ => false,
        };
    let step = if let Some(size) = again {
        size
    } else if narrow {
        match repeat_at_boundary(probes, lo, hi, o.repeats.max(1)) {
            Some(size) => size,
            None if lo.is_none() => return Next::Done(SearchEnd::NothingFits),
            None => return Next::Done(SearchEnd::Converged),
        }
    } else {
        match (lo, hi) {
            (None, None) => o.start.max(1),
            (None, Some(hi)) => hi / 2,
            (Some(lo), Some(hi)) => lo + (hi - lo) / 2,
            (Some(lo), None) => {
                let doubled = lo.saturating_mul(2);
                match (o.limit_bytes, fit(probes, Peak::Reserved)) {
                    (Some(limit), Some(f)) if f.per_item_bytes > 0.0 => {
                        let predicted = (limit as f64 - f.fixed_bytes) / f.per_item_bytes;
                        let under = (predicted * (1.0 - JUMP_MARGIN)).floor();
                        let over = (predicted * (1.0 + JUMP_MARGIN)).ceil();
                        let jump = if (lo as f64) < under {
                            under
                        } else {
                            over.max(lo as f64 * (1.0 + 2.0 * JUMP_MARGIN))
                        };
                        (jump as u64).max(lo + 1)
                    }
                    _ => doubled,
                }
            }
        }
    };
    if probes.len() >= o.max_probes {
        // Not even size 1 fitted: that stands whatever the repeats would have said.
        if narrow && lo.is_none() {
            return Next::Done(SearchEnd::NothingFits);
        }
        // The largest size fitted as often as it must: the answer stands without the
        // failing size's repeats.
        if narrow && lo.is_some_and(|lo| Tally::of(probes, lo).fitted >= o.repeats.max(1)) {
            return Next::Done(SearchEnd::Converged);
        }
        return Next::Done(SearchEnd::OutOfProbes);
    }
    Next::Probe(step)
}

/// Which peak a fit is of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Peak {
    /// Bytes held by tensors.
    Allocated,
    /// Bytes reserved by the allocator.
    Reserved,
}

/// Memory against size: `fixed + per_item × size`, least squares over fitting probes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MemoryFit {
    /// Bytes at size 0 (weights, workspaces).
    pub fixed_bytes: f64,
    /// Bytes per item of size.
    pub per_item_bytes: f64,
    /// Fitting probes the fit rests on.
    pub points: usize,
}

impl MemoryFit {
    /// The fitted bytes at `size`.
    pub fn at(&self, size: f64) -> f64 {
        self.fixed_bytes + self.per_item_bytes * size
    }
}

/// The least-squares fit of `peak` against size over the fitting probes, the first
/// of each size (a repeated probe is no new evidence of the slope); `None` with fewer
/// than two sizes.
fn fit(probes: &[CapacityProbe], peak: Peak) -> Option<MemoryFit> {
    let points: Vec<(f64, f64)> = probes
        .iter()
        .enumerate()
        .filter(|&(i, p)| p.fits && !probes[..i].iter().any(|q| q.fits && q.size == p.size))
        .filter_map(|(_, p)| {
            let y = match peak {
                Peak::Allocated => p.peak_allocated_bytes,
                Peak::Reserved => p.peak_reserved_bytes,
            }?;
            Some((p.size as f64, y as f64))
        })
        .collect();
    fit_points(&points)
}

/// Least squares of `y = a + b x`; `None` with fewer than two distinct `x`.
fn fit_points(points: &[(f64, f64)]) -> Option<MemoryFit> {
    let n = points.len() as f64;
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    if points.len() < 2 || sxx <= 0.0 {
        return None;
    }
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let b = sxy / sxx;
    Some(MemoryFit {
        fixed_bytes: my - b * mx,
        per_item_bytes: b,
        points: points.len(),
    })
}

/// A finished search of one benchmark, as saved and compared.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CapacityResult {
    /// [`CAPACITY_FORMAT_VERSION`].
    pub version: u32,
    /// The benchmark name.
    pub name: String,
    /// What the size counts.
    pub unit: String,
    /// The device probed (`cuda:0 NVIDIA H200`).
    pub device: String,
    /// The size the benchmark declares (its first `args` value).
    pub start: u64,
    /// The largest size below `first_failing` whose probes all fitted (0: none).
    pub max_size: u64,
    /// The smallest size that failed on any probe (out of memory, or a crash or hang),
    /// if one was probed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_failing: Option<u64>,
    /// How many probes the boundary sizes had to have ([`SearchOptions::repeats`]);
    /// 1 in files of searches that probed each size once.
    #[serde(default = "one")]
    pub repeats: u32,
    /// Sizes with probes that fitted and probes that failed, ascending.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flaky_sizes: Vec<u64>,
    /// How the search ended.
    pub end: SearchEnd,
    /// The allocator's limit the search ran under.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit_bytes: Option<u64>,
    /// The memory cap set for the search (`--memory-fraction`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_fraction: Option<f64>,
    /// Peak allocated bytes against size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fit: Option<MemoryFit>,
    /// Bytes free under the limit at the declared size (limit − its peak reserved).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headroom_bytes: Option<u64>,
    /// Every probe, in the order run.
    pub probes: Vec<CapacityProbe>,
}

fn one() -> u32 {
    1
}

impl CapacityResult {
    /// Summarises `probes` of a finished (or interrupted) search.
    pub fn new(
        name: &str,
        unit: &str,
        device: &str,
        options: &SearchOptions,
        memory_fraction: Option<f64>,
        probes: Vec<CapacityProbe>,
        end: SearchEnd,
    ) -> Self {
        let (lo, hi) = bracket(&probes, options.repeats);
        let mut flaky: Vec<u64> = probes
            .iter()
            .map(|p| p.size)
            .filter(|&size| {
                let t = Tally::of(&probes, size);
                t.fitted > 0 && t.failed() > 0
            })
            .collect();
        flaky.sort_unstable();
        flaky.dedup();
        let headroom = probes
            .iter()
            .find(|p| p.size == options.start && p.fits)
            .and_then(|p| Some(options.limit_bytes?.saturating_sub(p.peak_reserved_bytes?)));
        CapacityResult {
            version: CAPACITY_FORMAT_VERSION,
            name: name.to_string(),
            unit: unit.to_string(),
            device: device.to_string(),
            start: options.start,
            max_size: lo.unwrap_or(0),
            first_failing: hi,
            repeats: options.repeats.max(1),
            flaky_sizes: flaky,
            end,
            limit_bytes: options.limit_bytes,
            memory_fraction,
            fit: fit(&probes, Peak::Allocated),
            headroom_bytes: headroom,
            probes,
        }
    }

    /// How the probes of `size` went, in words: `fitted on all 3 probes`, `ran out
    /// of memory on 1 of 3 probes`.
    fn probes_of(&self, size: u64) -> String {
        let t = Tally::of(&self.probes, size);
        let n = t.fitted + t.failed();
        let of = |k: u32| match (k == n, n) {
            (true, 1) => "its one probe".to_string(),
            (true, _) => format!("all {n} probes"),
            (false, _) => format!("{k} of {n} probes"),
        };
        let mut parts = Vec::new();
        if t.fitted > 0 {
            parts.push(format!("fitted on {}", of(t.fitted)));
        }
        if t.out_of_memory > 0 {
            parts.push(format!("ran out of memory on {}", of(t.out_of_memory)));
        }
        if t.failed_otherwise > 0 {
            parts.push(format!("crashed or hung on {}", of(t.failed_otherwise)));
        }
        parts.join(", ")
    }

    /// Whether the largest size fitted on as many probes as the search asks of it.
    pub fn max_size_is_reliable(&self) -> bool {
        self.max_size > 0 && Tally::of(&self.probes, self.max_size).fitted >= self.repeats
    }

    /// Lines a person reads.
    pub fn report_lines(&self) -> Vec<String> {
        let unit = &self.unit;
        let largest = if self.max_size == 0 {
            String::new()
        } else if self.max_size_is_reliable() {
            format!(
                "largest {unit} that fits: {} ({})",
                self.max_size,
                self.probes_of(self.max_size)
            )
        } else {
            format!(
                "largest {unit} that fitted: {} ({}; {} fitting probes make it reliable)",
                self.max_size,
                self.probes_of(self.max_size),
                self.repeats
            )
        };
        let failing = self.first_failing.map(|hi| {
            let flaky = if self.flaky_sizes.contains(&hi) {
                "flaky: "
            } else {
                ""
            };
            format!("{unit} {hi} {flaky}{}", self.probes_of(hi))
        });
        let bracket = match (self.end, failing) {
            (SearchEnd::NothingFits, f) => format!(
                "no {unit} fits, not even 1{}",
                f.map_or(String::new(), |f| format!(" ({f})"))
            ),
            (end @ (SearchEnd::Interrupted | SearchEnd::Failed), f) => format!(
                "{} before the search ended{}{}",
                if end == SearchEnd::Failed {
                    "stopped by an error"
                } else {
                    "interrupted"
                },
                if largest.is_empty() {
                    String::new()
                } else {
                    format!("; so far {largest}")
                },
                f.map_or(String::new(), |f| format!("; {f}"))
            ),
            (_, Some(f)) => format!(
                "{largest}; {f}{}",
                if self.end == SearchEnd::OutOfProbes {
                    "; the probes ran out before the bracket narrowed to the resolution \
                     and the boundary was probed again"
                } else {
                    ""
                }
            ),
            (_, None) => format!(
                "largest {unit} that fits: at least {} (no size failed within the probes)",
                self.max_size
            ),
        };
        let mut lines = vec![format!(
            "{}: {bracket}, in {} probe processes",
            self.name,
            self.probes.len()
        )];
        let flaky: Vec<String> = self
            .flaky_sizes
            .iter()
            .filter(|&&s| Some(s) != self.first_failing)
            .map(|&s| format!("{s} ({})", self.probes_of(s)))
            .collect();
        if !flaky.is_empty() {
            lines.push(format!(
                "  flaky {unit}s, counted as not fitting: {}",
                flaky.join(", ")
            ));
        }
        for p in &self.probes {
            if let Some(why) = &p.failure {
                lines.push(format!(
                    "  the probe at {unit} {} failed, counted as not fitting: {}",
                    p.size,
                    why.lines().next().unwrap_or_default()
                ));
            }
        }
        if let Some(f) = &self.fit {
            lines.push(format!(
                "  memory ≈ {} + {} per {} (peak allocated, fit over {} sizes that fitted)",
                format_bytes(f.fixed_bytes.max(0.0) as u64),
                format_bytes(f.per_item_bytes.max(0.0).round() as u64),
                self.unit,
                f.points
            ));
        }
        if let Some(limit) = self.limit_bytes {
            let cap = self
                .memory_fraction
                .map_or(String::new(), |f| format!(" (capped at {f} of the device)"));
            let head = self.headroom_bytes.map_or(String::new(), |h| {
                format!(
                    "; headroom at the declared {} {}: {}",
                    self.unit,
                    self.start,
                    format_bytes(h)
                )
            });
            lines.push(format!("  limit {}{cap}{head}", format_bytes(limit)));
        }
        lines
    }
}

/// A capacity comparison's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CapacityVerdict {
    /// A size the baseline fitted runs out of memory now.
    Regressed,
    /// A size the baseline could not fit fits now.
    Improved,
    /// Both brackets hold the same limit.
    NoChange,
    /// The two searches cannot be compared (other device, other cap).
    NotComparable,
}

/// A capacity finding beside a run's other findings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CapacityFinding {
    /// The benchmark name.
    pub name: String,
    /// The verdict.
    pub verdict: CapacityVerdict,
    /// The baseline's largest fitting size.
    pub base_max_size: u64,
    /// This search's largest fitting size.
    pub head_max_size: u64,
    /// Per-item bytes, baseline and this search.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_item_bytes: Option<(f64, f64)>,
    /// Why, in words.
    pub reason: String,
}

/// Judges `head` against `base` by the rule at the top of this module.
pub fn compare(base: &CapacityResult, head: &CapacityResult) -> CapacityFinding {
    let per_item = base
        .fit
        .zip(head.fit)
        .map(|(b, h)| (b.per_item_bytes, h.per_item_bytes));
    let (verdict, reason) = if base.device != head.device
        || base.memory_fraction != head.memory_fraction
        || base.unit != head.unit
    {
        (
            CapacityVerdict::NotComparable,
            format!(
                "searched on {} (cap {:?}) against {} (cap {:?})",
                head.device, head.memory_fraction, base.device, base.memory_fraction
            ),
        )
    } else if head.first_failing.is_some_and(|f| f <= base.max_size) {
        (
            CapacityVerdict::Regressed,
            format!(
                "{} {} fitted in the baseline and runs out of memory now (largest now {})",
                base.unit,
                head.first_failing.unwrap_or_default(),
                head.max_size
            ),
        )
    } else if base.first_failing.is_some_and(|f| head.max_size >= f) {
        (
            CapacityVerdict::Improved,
            format!(
                "{} {} fits now; the baseline ran out of memory at {}",
                head.unit,
                head.max_size,
                base.first_failing.unwrap_or_default()
            ),
        )
    } else {
        (
            CapacityVerdict::NoChange,
            format!(
                "largest {} {} now, {} in the baseline: within the searches' resolution",
                head.unit, head.max_size, base.max_size
            ),
        )
    };
    CapacityFinding {
        name: head.name.clone(),
        verdict,
        base_max_size: base.max_size,
        head_max_size: head.max_size,
        per_item_bytes: per_item,
        reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs a search against a device where `fixed + per_item × size` bytes must fit
    /// under `limit` (reserved rounded up to 2 MiB, as segments are).
    fn search(fixed: u64, per_item: u64, limit: u64, o: SearchOptions) -> CapacityResult {
        search_with(fixed, per_item, o, |size, reserved| {
            (reserved <= limit).then_some(size)
        })
    }

    /// Runs a search where `fits(size, reserved bytes)` says whether a probe fits
    /// (`Some`), ran out of memory (`None`), or, with the `fits` result `Some(0)`,
    /// crashed.
    fn search_with(
        fixed: u64,
        per_item: u64,
        o: SearchOptions,
        mut fits: impl FnMut(u64, u64) -> Option<u64>,
    ) -> CapacityResult {
        let mut probes = Vec::new();
        let end = loop {
            match next_probe(&probes, &o) {
                Next::Probe(size) => {
                    let need = fixed + per_item * size;
                    let reserved = need.div_ceil(2 << 20) * (2 << 20);
                    probes.push(match fits(size, reserved) {
                        Some(0) => CapacityProbe::failed(size, 0.0, Some("crash: SIGSEGV".into())),
                        Some(_) => CapacityProbe {
                            size,
                            fits: true,
                            peak_allocated_bytes: Some(need),
                            peak_reserved_bytes: Some(reserved),
                            seconds: 0.0,
                            failure: None,
                        },
                        None => CapacityProbe::failed(size, 0.0, None),
                    });
                }
                Next::Done(end) => break end,
            }
        };
        CapacityResult::new("mlp", "batch", "sim", &o, None, probes, end)
    }

    fn options(start: u64, limit: u64) -> SearchOptions {
        SearchOptions {
            start,
            max_probes: 14,
            resolution: 0.01,
            limit_bytes: Some(limit),
            repeats: 3,
        }
    }

    #[test]
    fn the_search_brackets_the_true_limit_and_repeats_its_boundary_within_fourteen_probes() {
        let (fixed, per_item, limit) = (300 << 20, 70_000, 8u64 << 30);
        let truth = (limit - fixed) / per_item;
        let r = search(fixed, per_item, limit, options(256, limit));
        assert_eq!(r.end, SearchEnd::Converged, "{:?}", r.probes);
        assert!(r.probes.len() <= 14, "{} probes", r.probes.len());
        // Both boundary sizes probed three times; a steady limit is not flaky.
        let count = |size| r.probes.iter().filter(|p| p.size == size).count();
        assert_eq!(count(r.max_size), 3, "{:?}", r.probes);
        assert_eq!(count(r.first_failing.unwrap()), 3, "{:?}", r.probes);
        assert!(r.max_size_is_reliable() && r.flaky_sizes.is_empty());
        assert_eq!(
            r.fit.unwrap().points,
            r.probes
                .iter()
                .filter(|p| p.fits)
                .map(|p| p.size)
                .collect::<std::collections::BTreeSet<_>>()
                .len()
        );
        let hi = r.first_failing.unwrap();
        assert!(
            r.max_size <= truth && truth < hi,
            "{} {truth} {hi}",
            r.max_size
        );
        assert!(hi - r.max_size <= resolution_items(r.max_size, 0.01));
        let f = r.fit.unwrap();
        assert!((f.per_item_bytes - per_item as f64).abs() < 1.0);
        assert!(r.headroom_bytes.unwrap() > 7 << 30);
    }

    #[test]
    fn without_a_limit_it_doubles_and_a_too_large_start_halves() {
        let o = SearchOptions {
            limit_bytes: None,
            ..options(1000, 0)
        };
        let r = search(0, 1 << 20, 64 << 20, o);
        let sizes: Vec<u64> = r.probes.iter().map(|p| p.size).collect();
        assert_eq!(&sizes[..3], &[1000, 500, 250]);
        assert!(
            r.max_size <= 64 && r.first_failing.unwrap() > 64,
            "{sizes:?}"
        );
        let nothing = search(1 << 30, 1, 1 << 20, options(4, 1 << 20));
        assert_eq!(nothing.end, SearchEnd::NothingFits);
        assert_eq!(nothing.max_size, 0);
    }

    #[test]
    fn a_lower_max_size_is_a_regression_and_a_higher_one_an_improvement() {
        let limit = 8u64 << 30;
        let base = search(300 << 20, 70_000, limit, options(256, limit));
        let same = search(300 << 20, 70_000, limit, options(256, limit));
        assert_eq!(compare(&base, &same).verdict, CapacityVerdict::NoChange);
        let worse = search(300 << 20, 80_000, limit, options(256, limit));
        let finding = compare(&base, &worse);
        assert_eq!(
            finding.verdict,
            CapacityVerdict::Regressed,
            "{}",
            finding.reason
        );
        assert_eq!(compare(&worse, &base).verdict, CapacityVerdict::Improved);
        let other = CapacityResult {
            device: "other".into(),
            ..worse
        };
        assert_eq!(
            compare(&base, &other).verdict,
            CapacityVerdict::NotComparable
        );
    }

    #[test]
    fn out_of_probes_is_said() {
        let o = SearchOptions {
            max_probes: 3,
            limit_bytes: None,
            ..options(1, 0)
        };
        let r = search(0, 1 << 20, 1 << 30, o);
        assert_eq!(r.end, SearchEnd::OutOfProbes);
        assert!(r.report_lines()[0].contains("at least"));
    }

    /// Sizes up to 100 always fit, 101 to 120 run out of memory on every other probe
    /// (a counter of their probes, started at each phase), larger ones always fail.
    #[test]
    fn a_flaky_limit_gives_the_largest_size_that_fits_on_every_probe_whatever_the_phase() {
        for phase in 0..4u32 {
            let mut flaky_probes = phase;
            let o = SearchOptions {
                resolution: 0.001,
                max_probes: 40,
                limit_bytes: None,
                ..options(16, 0)
            };
            let r = search_with(0, 1 << 20, o, |size, _| match size {
                ..=100 => Some(size),
                101..=120 => {
                    flaky_probes += 1;
                    (flaky_probes % 2 == 0).then_some(size)
                }
                _ => None,
            });
            assert_eq!(
                (r.max_size, r.first_failing),
                (100, Some(101)),
                "phase {phase}: {:?}",
                r.probes
            );
            assert_eq!(r.end, SearchEnd::Converged, "{:?}", r.probes);
            assert!(r.max_size_is_reliable());
            assert!(
                r.flaky_sizes.iter().all(|s| (101..=120).contains(s)),
                "{:?}",
                r.flaky_sizes
            );
            let lines = r.report_lines().join("\n");
            assert!(
                lines.contains("largest batch that fits: 100 (fitted on all 3 probes)"),
                "{lines}"
            );
        }
        // Probed once each, as before, the same device gives answers that move with
        // the phase: the repeats are what make the answer stable.
        let once: std::collections::BTreeSet<u64> = (0..4u32)
            .map(|phase| {
                let mut flaky_probes = phase;
                let o = SearchOptions {
                    resolution: 0.001,
                    max_probes: 40,
                    repeats: 1,
                    limit_bytes: None,
                    ..options(16, 0)
                };
                search_with(0, 1 << 20, o, |size, _| match size {
                    ..=100 => Some(size),
                    101..=120 => {
                        flaky_probes += 1;
                        (flaky_probes % 2 == 0).then_some(size)
                    }
                    _ => None,
                })
                .max_size
            })
            .collect();
        assert!(once.len() > 1, "{once:?}");
    }

    #[test]
    fn a_crashed_probe_fails_its_size_and_is_not_repeated() {
        // Batch 128 crashes; everything above 100 runs out of memory.
        let o = SearchOptions {
            resolution: 0.001,
            max_probes: 40,
            limit_bytes: None,
            ..options(16, 0)
        };
        let r = search_with(0, 1 << 20, o, |size, _| match size {
            128 => Some(0),
            ..=100 => Some(size),
            _ => None,
        });
        assert_eq!(
            (r.max_size, r.first_failing),
            (100, Some(101)),
            "{:?}",
            r.probes
        );
        assert_eq!(r.probes.iter().filter(|p| p.size == 128).count(), 1);
        let lines = r.report_lines().join("\n");
        assert!(
            lines.contains("the probe at batch 128 failed, counted as not fitting: crash: SIGSEGV"),
            "{lines}"
        );
        // A crash at the boundary stays a failure of its size and is not probed again.
        let r = search_with(0, 1 << 20, o, |size, _| match size {
            101 => Some(0),
            ..=100 => Some(size),
            _ => None,
        });
        assert_eq!(
            (r.max_size, r.first_failing),
            (100, Some(101)),
            "{:?}",
            r.probes
        );
        assert_eq!(r.probes.iter().filter(|p| p.size == 101).count(), 1);
    }

    #[test]
    fn a_size_of_one_that_fails_sometimes_is_nothing_fitting_and_flaky() {
        let mut n = 0;
        let r = search_with(0, 1 << 20, options(4, 1 << 40), |size, _| {
            n += 1;
            (size == 1 && n % 2 == 0).then_some(size)
        });
        assert_eq!(r.end, SearchEnd::NothingFits, "{:?}", r.probes);
        assert_eq!((r.max_size, r.flaky_sizes.as_slice()), (0, &[1][..]));
        let lines = r.report_lines().join("\n");
        assert!(lines.contains("no batch fits, not even 1 (batch 1 flaky: fitted on 1 of 2 probes, ran out of memory on 1 of 2 probes)"), "{lines}");
    }
}
