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
//!    the probes run out.
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
}

impl CapacityProbe {
    /// The probe a harness's record of one size makes: it fits when it passed, it
    /// does not when it ran out of memory; any other failure is `Err`, since it says
    /// nothing about memory.
    pub fn from_record(
        size: u64,
        record: &gpubench_record::record::RawRecord,
        seconds: f64,
    ) -> Result<Self, String> {
        if let Some(f) = record.failure() {
            if f.kind == gpubench_record::failure::FailureKind::OutOfMemory {
                return Ok(CapacityProbe {
                    size,
                    fits: false,
                    peak_allocated_bytes: None,
                    peak_reserved_bytes: None,
                    seconds,
                });
            }
            return Err(format!(
                "the probe of {} at size {size} failed ({}), not for memory: {}",
                record.id,
                f.kind.label(),
                f.message
            ));
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
        })
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

/// The largest fitting and the smallest failing size above it, among `probes`.
fn bracket(probes: &[CapacityProbe]) -> (Option<u64>, Option<u64>) {
    let lo = probes.iter().filter(|p| p.fits).map(|p| p.size).max();
    let hi = probes
        .iter()
        .filter(|p| !p.fits && lo.is_none_or(|lo| p.size > lo))
        .map(|p| p.size)
        .min();
    (lo, hi)
}

/// The bracket width at which a search around `lo` stops.
fn resolution_items(lo: u64, resolution: f64) -> u64 {
    ((lo as f64 * resolution).ceil() as u64).max(1)
}

/// The next step of the search (see the module's documentation).
pub fn next_probe(probes: &[CapacityProbe], o: &SearchOptions) -> Next {
    let (lo, hi) = bracket(probes);
    let step = match (lo, hi) {
        (None, None) => o.start.max(1),
        (None, Some(hi)) => {
            if hi <= 1 {
                return Next::Done(SearchEnd::NothingFits);
            }
            hi / 2
        }
        (Some(lo), Some(hi)) => {
            if hi - lo <= resolution_items(lo, o.resolution) {
                return Next::Done(SearchEnd::Converged);
            }
            lo + (hi - lo) / 2
        }
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
    };
    if probes.len() >= o.max_probes {
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

/// The least-squares fit of `peak` against size over the fitting probes with
/// distinct sizes; `None` with fewer than two.
fn fit(probes: &[CapacityProbe], peak: Peak) -> Option<MemoryFit> {
    let points: Vec<(f64, f64)> = probes
        .iter()
        .filter(|p| p.fits)
        .filter_map(|p| {
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
    /// The largest size that fitted (0: none).
    pub max_size: u64,
    /// The smallest size above it that ran out of memory, if one was probed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_failing: Option<u64>,
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

impl CapacityResult {
    /// Summarises `probes` of a finished search.
    pub fn new(
        name: &str,
        unit: &str,
        device: &str,
        options: &SearchOptions,
        memory_fraction: Option<f64>,
        probes: Vec<CapacityProbe>,
        end: SearchEnd,
    ) -> Self {
        let (lo, hi) = bracket(&probes);
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
            end,
            limit_bytes: options.limit_bytes,
            memory_fraction,
            fit: fit(&probes, Peak::Allocated),
            headroom_bytes: headroom,
            probes,
        }
    }

    /// Lines a person reads.
    pub fn report_lines(&self) -> Vec<String> {
        let bracket = match (self.end, self.first_failing) {
            (SearchEnd::NothingFits, _) => format!("no {} fits, not even 1", self.unit),
            (_, Some(hi)) => format!(
                "largest {} that fits: {} ({} ran out of memory){}",
                self.unit,
                self.max_size,
                hi,
                if self.end == SearchEnd::OutOfProbes {
                    "; the probes ran out before the bracket narrowed to the resolution"
                } else {
                    ""
                }
            ),
            (_, None) => format!(
                "largest {} that fits: at least {} (no size ran out of memory within the probes)",
                self.unit, self.max_size
            ),
        };
        let mut lines = vec![format!(
            "{}: {bracket}, in {} probe processes",
            self.name,
            self.probes.len()
        )];
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
        let mut probes = Vec::new();
        let end = loop {
            match next_probe(&probes, &o) {
                Next::Probe(size) => {
                    let need = fixed + per_item * size;
                    let reserved = need.div_ceil(2 << 20) * (2 << 20);
                    let fits = reserved <= limit;
                    probes.push(CapacityProbe {
                        size,
                        fits,
                        peak_allocated_bytes: fits.then_some(need),
                        peak_reserved_bytes: fits.then_some(reserved),
                        seconds: 0.0,
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
            max_probes: 10,
            resolution: 0.01,
            limit_bytes: Some(limit),
        }
    }

    #[test]
    fn the_search_brackets_the_true_limit_within_ten_probes() {
        let (fixed, per_item, limit) = (300 << 20, 70_000, 8u64 << 30);
        let truth = (limit - fixed) / per_item;
        let r = search(fixed, per_item, limit, options(256, limit));
        assert_eq!(r.end, SearchEnd::Converged, "{:?}", r.probes);
        assert!(r.probes.len() <= 10, "{} probes", r.probes.len());
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
}
