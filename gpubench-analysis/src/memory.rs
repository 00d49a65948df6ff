//! Memory verdicts: a run's peak allocated bytes, peak reserved bytes and growth per
//! call against a baseline's, each on a tolerance of its own, and the figures a
//! baseline keeps of each process.
//!
//! # The rule
//!
//! Each side is its processes' figures; a figure's value on a side is their median.
//! A figure is [`Verdict::Regressed`] when the current value exceeds the baseline's by
//! more than its tolerance, [`Verdict::Improved`] when it is lower by more, and
//! [`Verdict::NoChange`] otherwise. Memory is never ambiguous: the caching allocator
//! does the same for the same calls, so the figures repeat (on an H200 every
//! benchmark of the example suite repeated its peaks to the KiB from run to run, and
//! held 0 B per call in every process, `docs/gpu-validation.md`), and where they do
//! not, their spread is measured and widens the tolerance. A leaking routine's peaks
//! depend on how many calls it made and spread by hundreds of MB; its growth per call
//! does not, and flags it.
//!
//! The tolerance of a figure is the largest of:
//!
//! * a relative part, [`RELATIVE_TOLERANCE`] (1%) of the baseline's value: a change
//!   smaller than that is not one a user sizes a batch by;
//! * a floor: for the peaks [`PEAK_FLOOR_BYTES`] (2 MiB), the smallest segment the
//!   caching allocator reserves from the driver, so reserved memory moves in steps of
//!   it and a change below one step is the allocator's rounding; for growth
//!   [`BLOCK_BYTES`] (512 B, the allocator's smallest block) over the calls of a
//!   stretch: less than one block held in a stretch is nothing held;
//! * [`SPREAD_MULTIPLE`] (3) times the spread: the largest range (max − min) of the
//!   figure over one side's processes. A figure that moves from one process to the
//!   next by that much can land anywhere in it in the next run.
//!
//! A benchmark's memory verdict is the worst of its figures: regressed when any
//! regressed, improved when some improved and none regressed.

use serde::{Deserialize, Serialize};

use crate::compare::Verdict;
use crate::stats::median;
use gpubench_record::measurement::{Measurement, MemoryGrowth};
use gpubench_record::units::format_bytes;

/// Relative part of every figure's tolerance: 1% of the baseline's value.
pub const RELATIVE_TOLERANCE: f64 = 0.01;
/// Floor of the peaks' tolerance: the caching allocator's smallest segment, 2 MiB.
pub const PEAK_FLOOR_BYTES: f64 = 2.0 * 1024.0 * 1024.0;
/// The caching allocator's smallest block, 512 B: the least a routine can hold.
pub const BLOCK_BYTES: f64 = 512.0;
/// The tolerance is at least this many times the figure's range over a side's
/// processes.
pub const SPREAD_MULTIPLE: f64 = 3.0;
/// Bytes in a MiB.
const MIB: f64 = 1024.0 * 1024.0;

/// One process's memory, as a baseline keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessMemory {
    /// Peak bytes held by tensors.
    pub peak_allocated_bytes: u64,
    /// Peak bytes reserved from the driver.
    pub peak_reserved_bytes: u64,
    /// Memory held from call to call; absent in records from before it was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub growth: Option<MemoryGrowth>,
}

impl ProcessMemory {
    /// The memory figures of a measurement, when its device has an allocator.
    pub fn of(m: &Measurement) -> Option<Self> {
        m.memory.map(|s| ProcessMemory {
            peak_allocated_bytes: s.peak_allocated_bytes,
            peak_reserved_bytes: s.peak_reserved_bytes,
            growth: m.memory_growth,
        })
    }

    /// What a baseline keeps, as allocator statistics for a record rebuilt from it:
    /// the peaks. A baseline does not keep the figures when read nor the allocator's
    /// retries and OOMs: the first are taken as the peaks, the others as 0.
    pub fn as_stats(&self) -> gpubench_record::measurement::MemoryStats {
        gpubench_record::measurement::MemoryStats {
            peak_allocated_bytes: self.peak_allocated_bytes,
            peak_reserved_bytes: self.peak_reserved_bytes,
            allocated_bytes: self.peak_allocated_bytes,
            reserved_bytes: self.peak_reserved_bytes,
            alloc_retries: 0,
            num_ooms: 0,
        }
    }
}

/// Which memory figure a verdict is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemoryFigure {
    /// Peak bytes held by tensors.
    PeakAllocated,
    /// Peak bytes reserved from the driver.
    PeakReserved,
    /// Bytes held per call after the outputs were dropped.
    GrowthPerCall,
}

impl MemoryFigure {
    /// Words for tables.
    pub fn label(self) -> &'static str {
        match self {
            MemoryFigure::PeakAllocated => "peak allocated",
            MemoryFigure::PeakReserved => "peak reserved",
            MemoryFigure::GrowthPerCall => "growth per call",
        }
    }
}

/// What set a figure's tolerance (the module docs' three parts).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToleranceBasis {
    /// [`RELATIVE_TOLERANCE`] of the baseline's value.
    Relative,
    /// The allocator's granularity ([`PEAK_FLOOR_BYTES`], or [`BLOCK_BYTES`] per
    /// stretch for growth).
    Granularity,
    /// [`SPREAD_MULTIPLE`] times the range over a side's processes.
    Spread,
}

/// One memory figure against the baseline's.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct FigureComparison {
    /// Which figure.
    pub figure: MemoryFigure,
    /// The baseline's value: the median over its processes (bytes; bytes per call
    /// for growth).
    pub baseline: f64,
    /// The current value, likewise.
    pub current: f64,
    /// The largest range (max − min) of the figure over one side's processes.
    pub spread: f64,
    /// The change the verdict needed, either way.
    pub tolerance: f64,
    /// What set the tolerance.
    pub basis: ToleranceBasis,
    /// The verdict.
    pub verdict: Verdict,
}

impl FigureComparison {
    fn bytes(&self, x: f64) -> String {
        let text = format_bytes(x.abs().round() as u64);
        match self.figure {
            MemoryFigure::GrowthPerCall => format!("{}{text} per call", sign(x)),
            _ => text,
        }
    }

    /// Why the tolerance is what it is, in words: `±2.00 MiB, one allocator segment`.
    pub fn tolerance_text(&self) -> String {
        let why = match (self.basis, self.figure) {
            (ToleranceBasis::Relative, _) => {
                format!("{}% of the baseline", RELATIVE_TOLERANCE * 100.0)
            }
            (ToleranceBasis::Granularity, MemoryFigure::GrowthPerCall) => format!(
                "one {} allocator block per stretch of calls",
                format_bytes(BLOCK_BYTES as u64)
            ),
            // A whole number of MiB, so `2 MiB` rather than format_bytes's `2.00 MiB`.
            (ToleranceBasis::Granularity, _) => {
                format!("one {} MiB allocator segment", PEAK_FLOOR_BYTES / MIB)
            }
            (ToleranceBasis::Spread, _) => format!(
                "{SPREAD_MULTIPLE}x the spread of {} between processes",
                format_bytes(self.spread.round() as u64)
            ),
        };
        let size = format_bytes(self.tolerance.round() as u64);
        match self.figure {
            MemoryFigure::GrowthPerCall => format!("±{size} per call, {why}"),
            _ => format!("±{size}, {why}"),
        }
    }

    /// The figure in words: `peak allocated 80.00 MiB -> 6.05 GiB (+7.6x, beyond
    /// ±2.00 MiB, one allocator segment)`, `holds +64.00 KiB per call (the baseline
    /// held none)`, `peak reserved 1.00 GiB, no change (within …)`.
    pub fn describe(&self) -> String {
        let held = |x: f64| x > self.tolerance;
        if self.figure == MemoryFigure::GrowthPerCall && self.verdict != Verdict::NoChange {
            return match (held(self.baseline), held(self.current)) {
                (false, true) => format!(
                    "holds {} (the baseline held none; beyond {})",
                    self.bytes(self.current),
                    self.tolerance_text()
                ),
                (true, false) => format!(
                    "no longer holds memory per call (the baseline held {})",
                    self.bytes(self.baseline)
                ),
                _ => format!(
                    "holds {} (the baseline held {}; beyond {})",
                    self.bytes(self.current),
                    self.bytes(self.baseline),
                    self.tolerance_text()
                ),
            };
        }
        match self.verdict {
            Verdict::NoChange => format!(
                "{} {}, no change (within {})",
                self.figure.label(),
                self.bytes(self.current),
                self.tolerance_text()
            ),
            _ => format!(
                "{} {} -> {} ({}, beyond {})",
                self.figure.label(),
                self.bytes(self.baseline),
                self.bytes(self.current),
                ratio_text(self.baseline, self.current),
                self.tolerance_text()
            ),
        }
    }
}

fn sign(x: f64) -> &'static str {
    if x < 0.0 {
        "-"
    } else {
        "+"
    }
}

/// `+7.6x`, `-25.0%`, `+3.1%`.
fn ratio_text(was: f64, now: f64) -> String {
    if was <= 0.0 {
        return "new".to_string();
    }
    let r = now / was;
    if r >= 2.0 {
        format!("+{r:.1}x")
    } else {
        format!("{:+.1}%", (r - 1.0) * 100.0)
    }
}

/// A benchmark's memory against its baseline's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryComparison {
    /// Peak allocated, peak reserved and, when both sides measured it, growth per
    /// call.
    pub figures: Vec<FigureComparison>,
}

impl MemoryComparison {
    /// The worst verdict of the figures: regressed when any regressed, improved
    /// when some improved and none regressed, else no change.
    pub fn verdict(&self) -> Verdict {
        let any = |v: Verdict| self.figures.iter().any(|f| f.verdict == v);
        if any(Verdict::Regressed) {
            Verdict::Regressed
        } else if any(Verdict::Improved) {
            Verdict::Improved
        } else {
            Verdict::NoChange
        }
    }

    /// The figures that changed, in words, or `no change`.
    pub fn describe(&self) -> String {
        let changed: Vec<String> = self
            .figures
            .iter()
            .filter(|f| f.verdict != Verdict::NoChange)
            .map(FigureComparison::describe)
            .collect();
        if changed.is_empty() {
            Verdict::NoChange.label().to_string()
        } else {
            changed.join("; ")
        }
    }

    /// The comparison of `figure`, when made.
    pub fn figure(&self, figure: MemoryFigure) -> Option<&FigureComparison> {
        self.figures.iter().find(|f| f.figure == figure)
    }
}

/// Compares the processes' memory of a run with a baseline's, by the module docs'
/// rule; `None` when a side has no process with memory. Growth is compared when
/// every process of both sides measured it.
pub fn compare_memory(
    baseline: &[ProcessMemory],
    current: &[ProcessMemory],
) -> Option<MemoryComparison> {
    if baseline.is_empty() || current.is_empty() {
        return None;
    }
    let peak = |f: fn(&ProcessMemory) -> u64| {
        move |side: &[ProcessMemory]| side.iter().map(|p| f(p) as f64).collect::<Vec<f64>>()
    };
    let allocated = peak(|p| p.peak_allocated_bytes);
    let reserved = peak(|p| p.peak_reserved_bytes);
    let mut figures = vec![
        judge(
            MemoryFigure::PeakAllocated,
            &allocated(baseline),
            &allocated(current),
            PEAK_FLOOR_BYTES,
        ),
        judge(
            MemoryFigure::PeakReserved,
            &reserved(baseline),
            &reserved(current),
            PEAK_FLOOR_BYTES,
        ),
    ];
    if let (Some(was), Some(now)) = (growths(baseline), growths(current)) {
        let calls = was.iter().chain(&now).map(|g| g.calls).min().unwrap_or(1);
        let per_call =
            |gs: &[MemoryGrowth]| gs.iter().map(MemoryGrowth::per_call).collect::<Vec<f64>>();
        figures.push(judge(
            MemoryFigure::GrowthPerCall,
            &per_call(&was),
            &per_call(&now),
            BLOCK_BYTES / calls.max(1) as f64,
        ));
    }
    Some(MemoryComparison { figures })
}

/// The tolerance of a peak without its spread: [`RELATIVE_TOLERANCE`] of `value`, at
/// least [`PEAK_FLOOR_BYTES`]. History reads a peak's steps by it, as one commit has
/// no spread between processes to widen it.
pub(crate) fn peak_tolerance(value: f64) -> f64 {
    (RELATIVE_TOLERANCE * value).max(PEAK_FLOOR_BYTES)
}

/// Every process's growth, when every process measured it.
pub fn growths(side: &[ProcessMemory]) -> Option<Vec<MemoryGrowth>> {
    side.iter().map(|p| p.growth).collect()
}

fn judge(figure: MemoryFigure, was: &[f64], now: &[f64], floor: f64) -> FigureComparison {
    let range = |xs: &[f64]| {
        let max = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let min = xs.iter().copied().fold(f64::INFINITY, f64::min);
        max - min
    };
    let (baseline, current) = (median(was), median(now));
    let spread = range(was).max(range(now));
    let parts = [
        (
            RELATIVE_TOLERANCE * baseline.abs(),
            ToleranceBasis::Relative,
        ),
        (floor, ToleranceBasis::Granularity),
        (SPREAD_MULTIPLE * spread, ToleranceBasis::Spread),
    ];
    let (tolerance, basis) =
        parts
            .into_iter()
            .fold((0.0, ToleranceBasis::Granularity), |best, part| {
                if part.0 > best.0 {
                    part
                } else {
                    best
                }
            });
    let d = current - baseline;
    let verdict = if d > tolerance {
        Verdict::Regressed
    } else if d < -tolerance {
        Verdict::Improved
    } else {
        Verdict::NoChange
    };
    FigureComparison {
        figure,
        baseline,
        current,
        spread,
        tolerance,
        basis,
        verdict,
    }
}

/// What a run's processes hold per call, for its summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GrowthSummary {
    /// The median over processes of the bytes held per call.
    pub per_call_bytes: f64,
    /// Each process's bytes held per call, in round order.
    pub per_process_bytes: Vec<f64>,
    /// The fewest calls of a stretch in any process.
    pub calls: u64,
    /// Whether that is memory held, at least one allocator block ([`BLOCK_BYTES`])
    /// per stretch: the routine keeps memory per call.
    pub holds: bool,
}

impl GrowthSummary {
    /// The growth of `measurements`, when every one measured it.
    pub fn of(measurements: &[&Measurement]) -> Option<Self> {
        let growths: Option<Vec<MemoryGrowth>> =
            measurements.iter().map(|m| m.memory_growth).collect();
        let growths = growths.filter(|g| !g.is_empty())?;
        let per_process_bytes: Vec<f64> = growths.iter().map(MemoryGrowth::per_call).collect();
        let per_call_bytes = median(&per_process_bytes);
        let calls = growths.iter().map(|g| g.calls).min().unwrap_or(1);
        Some(GrowthSummary {
            per_call_bytes,
            per_process_bytes,
            calls,
            holds: holds(per_call_bytes, calls),
        })
    }

    /// `holds +64.00 KiB per call`, when it holds memory.
    pub fn flag_text(&self) -> Option<String> {
        self.holds.then(|| holds_text(self.per_call_bytes))
    }
}

/// Whether a growth per call of `bytes`, over stretches of `calls` calls, is memory
/// held: at least one allocator block ([`BLOCK_BYTES`]) per stretch.
fn holds(bytes_per_call: f64, calls: u64) -> bool {
    bytes_per_call * calls.max(1) as f64 >= BLOCK_BYTES
}

/// `holds +64.00 KiB per call`.
fn holds_text(bytes_per_call: f64) -> String {
    format!(
        "holds +{} per call",
        format_bytes(bytes_per_call.max(0.0).round() as u64)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    fn process(allocated: u64, reserved: u64, per_call: Option<u64>) -> ProcessMemory {
        ProcessMemory {
            peak_allocated_bytes: allocated,
            peak_reserved_bytes: reserved,
            growth: per_call.map(|b| MemoryGrowth {
                calls: 100,
                start_bytes: 10 * MIB,
                first_bytes: 10 * MIB + 100 * b,
                second_bytes: 10 * MIB + 200 * b,
            }),
        }
    }

    fn side(allocated: u64, reserved: u64, per_call: u64) -> Vec<ProcessMemory> {
        vec![process(allocated, reserved, Some(per_call)); 3]
    }

    #[test]
    fn figures_that_repeat_are_no_change() {
        let c = compare_memory(&side(80 * MIB, 96 * MIB, 0), &side(80 * MIB, 96 * MIB, 0)).unwrap();
        assert_eq!(c.verdict(), Verdict::NoChange);
        assert_eq!(c.figures.len(), 3);
        assert_eq!(c.describe(), "no change");
        let peak = c.figure(MemoryFigure::PeakAllocated).unwrap();
        assert_eq!(peak.basis, ToleranceBasis::Granularity);
        assert_eq!(peak.tolerance, PEAK_FLOOR_BYTES);
    }

    #[test]
    fn a_leak_of_one_tensor_per_call_is_a_regression_in_words() {
        let c = compare_memory(
            &side(80 * MIB, 96 * MIB, 0),
            &side(6200 * MIB, 6300 * MIB, 64 << 10),
        )
        .unwrap();
        assert_eq!(c.verdict(), Verdict::Regressed);
        let g = c.figure(MemoryFigure::GrowthPerCall).unwrap();
        assert_eq!(g.verdict, Verdict::Regressed);
        assert_eq!(g.current, 65536.0);
        let words = c.describe();
        assert!(
            words.contains("holds +64.00 KiB per call (the baseline held none"),
            "{words}"
        );
        assert!(
            words.contains("peak allocated 80.00 MiB -> 6.05 GiB (+77.5x"),
            "{words}"
        );
    }

    #[test]
    fn a_fixed_leak_is_an_improvement() {
        let c = compare_memory(
            &side(80 * MIB, 96 * MIB, 4096),
            &side(80 * MIB, 96 * MIB, 0),
        )
        .unwrap();
        assert_eq!(c.verdict(), Verdict::Improved);
        assert!(c.describe().starts_with("no longer holds memory per call"));
    }

    #[test]
    fn changes_within_one_segment_or_one_percent_are_no_change() {
        // 1 MiB more of 80 MiB: under the 2 MiB segment.
        let c = compare_memory(&side(80 * MIB, 96 * MIB, 0), &side(81 * MIB, 96 * MIB, 0)).unwrap();
        assert_eq!(c.verdict(), Verdict::NoChange);
        // 50 MiB more of 8 GiB: under 1%, which sets the tolerance.
        let c = compare_memory(
            &side(8192 * MIB, 8192 * MIB, 0),
            &side(8242 * MIB, 8192 * MIB, 0),
        )
        .unwrap();
        let f = c.figure(MemoryFigure::PeakAllocated).unwrap();
        assert_eq!(
            (f.verdict, f.basis),
            (Verdict::NoChange, ToleranceBasis::Relative)
        );
        // 4 MiB more of 80 MiB: beyond both.
        let c = compare_memory(&side(80 * MIB, 96 * MIB, 0), &side(84 * MIB, 96 * MIB, 0)).unwrap();
        assert_eq!(c.verdict(), Verdict::Regressed);
    }

    #[test]
    fn a_figure_that_moves_between_processes_is_judged_on_its_spread() {
        let spread = |a: &[u64]| -> Vec<ProcessMemory> {
            a.iter()
                .map(|&x| process(x * MIB, 512 * MIB, Some(0)))
                .collect()
        };
        let was = spread(&[100, 110, 105]);
        // 12 MiB up: beyond the 2 MiB segment, within 3x the 10 MiB spread.
        let c = compare_memory(&was, &spread(&[117, 117, 117])).unwrap();
        let f = c.figure(MemoryFigure::PeakAllocated).unwrap();
        assert_eq!(
            (f.verdict, f.basis),
            (Verdict::NoChange, ToleranceBasis::Spread)
        );
        assert_eq!(f.spread, 10.0 * MIB as f64);
        assert!(f.tolerance_text().contains("3x the spread of 10.00 MiB"));
        let c = compare_memory(&was, &spread(&[140, 140, 140])).unwrap();
        assert_eq!(c.verdict(), Verdict::Regressed);
    }

    #[test]
    fn growth_is_compared_only_when_every_process_measured_it() {
        let mut old = side(80 * MIB, 96 * MIB, 0);
        old[1].growth = None;
        let c = compare_memory(&old, &side(80 * MIB, 96 * MIB, 64 << 10)).unwrap();
        assert!(c.figure(MemoryFigure::GrowthPerCall).is_none());
        assert!(growths(&old).is_none());
        assert!(compare_memory(&[], &old).is_none());
    }

    #[test]
    fn each_basis_names_its_part_of_the_rule() {
        let text = |figure, basis| {
            FigureComparison {
                figure,
                baseline: 0.0,
                current: 0.0,
                spread: 10.0 * MIB as f64,
                tolerance: PEAK_FLOOR_BYTES,
                basis,
                verdict: Verdict::NoChange,
            }
            .tolerance_text()
        };
        let peak = MemoryFigure::PeakAllocated;
        assert_eq!(
            text(peak, ToleranceBasis::Relative),
            "±2.00 MiB, 1% of the baseline"
        );
        assert_eq!(
            text(peak, ToleranceBasis::Granularity),
            "±2.00 MiB, one 2 MiB allocator segment"
        );
        assert_eq!(
            text(MemoryFigure::GrowthPerCall, ToleranceBasis::Granularity),
            "±2.00 MiB per call, one 512 B allocator block per stretch of calls"
        );
        assert_eq!(
            text(peak, ToleranceBasis::Spread),
            "±2.00 MiB, 3x the spread of 10.00 MiB between processes"
        );
    }

    #[test]
    fn less_than_one_block_per_stretch_is_nothing_held() {
        assert!(holds(65536.0, 4));
        assert!(holds(5.12, 100));
        assert!(!holds(5.0, 100));
        assert_eq!(holds_text(65536.0), "holds +64.00 KiB per call");
    }
}
