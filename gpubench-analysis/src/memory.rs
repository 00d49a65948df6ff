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
//! not, the baseline's spread is measured and widens the tolerance.
//!
//! The tolerance comes from the baseline (the reference) alone, never from the side
//! judged: a regression is what makes that side's processes disagree. A routine that
//! keeps a tensor per call peaks by how many calls each process made, so its peaks
//! spread by gigabytes (on an H200 a bounded cache grew peak allocated from 196 KB to
//! 3.7 GB, and 3x the spread of its own processes, 11.7 GB, would have called that no
//! change). The tolerance of a figure is the largest of:
//!
//! * a relative part, [`RELATIVE_TOLERANCE`] (1%) of the baseline's value: a change
//!   smaller than that is not one a user sizes a batch by;
//! * a floor: for the peaks [`PEAK_FLOOR_BYTES`] (2 MiB), the smallest segment the
//!   caching allocator reserves from the driver, so reserved memory moves in steps of
//!   it and a change below one step is the allocator's rounding; for growth
//!   [`BLOCK_BYTES`] (512 B, the allocator's smallest block) over the calls of a
//!   stretch: less than one block held in a stretch is nothing held;
//! * [`SPREAD_MULTIPLE`] (3) times the baseline's spread: the range (max − min) of
//!   the figure over the baseline's processes. A figure of unchanged code that moves
//!   from one process to the next by that much can land anywhere in it in the next
//!   run. For the peaks this part is capped at `PEAK_FACTOR − 1` times the
//!   baseline's value: a peak more than [`PEAK_FACTOR`] (2) times the baseline's,
//!   and beyond the first two parts, is regressed however noisy the baseline was
//!   ([`ToleranceBasis::Factor`]; the text says how many times it grew). Processes
//!   of unchanged code do not double a peak's median: on the H200 they agreed to the
//!   KiB.
//!
//! # Memory kept from call to call
//!
//! A process holds memory per call when its growth ([`MemoryGrowth::per_call`], the
//! smaller of two stretches) is at least one allocator block per stretch. Where no
//! process of the baseline held memory per call, any process of the run that does is
//! a leak: growth per call is regressed even when the median process holds nothing
//! ([`ToleranceBasis::AnyProcess`]).
//!
//! A routine with a **bounded cache** (it keeps a tensor per call up to a cap, as
//! serving code does) holds memory per call only in the processes that had not filled
//! the cache before the growth stretches, which come after the samples; a process that
//! filled it before holds nothing per call, and one that filled it during the first
//! stretch grew in that stretch only. So, where no process of the baseline held
//! memory per call, the comparison names a bounded cache
//! ([`MemoryComparison::bounded_cache`]) when
//!
//! * some processes of the run held memory per call and others did not, or
//! * peak allocated regressed while growth stopped: no process held memory per call,
//!   and one grew by at least a block in one stretch but not in the other, where no
//!   process of the baseline grew in either (a one-time cache that fills late grows
//!   in one stretch too).
//!
//! Its size is estimated as the largest peak allocated of the run's processes less
//! the baseline's peak allocated: the process whose cache was fullest peaked at the
//! routine's working set plus the cache, and the baseline's peak is the working set
//! without it. Where every process of the run was still filling the cache, it is a
//! lower bound. The growth stretches cannot size it: they see a cache only while it
//! fills, and a process that filled it before them shows none.
//!
//! A benchmark's memory verdict is the worst of its figures: regressed when any
//! regressed, improved when some improved and none regressed.
//!
//! # Figures of a paired process
//!
//! In `cargo gpubench ab` base and head run in one process with one caching
//! allocator. Each side's allocated figures (peak allocated, growth per call) are its
//! own: gpubench-core counts them over the periods that side's code runs. Reserved
//! segments pass from one side to the other as cache, so a side's reserved figures
//! are the process's ([`MemoryStats::reserved_shared`]): peak reserved is then left
//! out of the comparison, saying why ([`MemoryComparison::left_out`]).

use serde::{Deserialize, Serialize};

use crate::compare::Verdict;
use crate::stats::median;
use gpubench_record::measurement::{Measurement, MemoryGrowth, MemoryStats};
use gpubench_record::units::format_bytes;

/// Relative part of every figure's tolerance: 1% of the baseline's value.
pub const RELATIVE_TOLERANCE: f64 = 0.01;
/// Floor of the peaks' tolerance: the caching allocator's smallest segment, 2 MiB.
pub const PEAK_FLOOR_BYTES: f64 = 2.0 * 1024.0 * 1024.0;
/// The caching allocator's smallest block, 512 B: the least a routine can hold.
pub const BLOCK_BYTES: f64 = 512.0;
/// The tolerance is at least this many times the figure's range over the baseline's
/// processes (for the peaks, up to [`PEAK_FACTOR`]).
pub const SPREAD_MULTIPLE: f64 = 3.0;
/// A peak more than this many times the baseline's (and beyond the relative part and
/// the floor) is regressed whatever the baseline's spread.
pub const PEAK_FACTOR: f64 = 2.0;
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
    /// Whether the reserved bytes are a paired process's, both revisions' together
    /// ([`MemoryStats::reserved_shared`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reserved_shared: bool,
}

impl ProcessMemory {
    /// The memory figures of a measurement, when its device has an allocator.
    pub fn of(m: &Measurement) -> Option<Self> {
        m.memory.map(|s| ProcessMemory {
            peak_allocated_bytes: s.peak_allocated_bytes,
            peak_reserved_bytes: s.peak_reserved_bytes,
            growth: m.memory_growth,
            reserved_shared: s.reserved_shared,
        })
    }

    /// What a baseline keeps, as allocator statistics for a record rebuilt from it:
    /// the peaks. A baseline does not keep the figures when read nor the allocator's
    /// retries and OOMs: the first are taken as the peaks, the others as 0.
    pub fn as_stats(&self) -> MemoryStats {
        MemoryStats {
            peak_allocated_bytes: self.peak_allocated_bytes,
            peak_reserved_bytes: self.peak_reserved_bytes,
            allocated_bytes: self.peak_allocated_bytes,
            reserved_bytes: self.peak_reserved_bytes,
            alloc_retries: 0,
            num_ooms: 0,
            reserved_shared: self.reserved_shared,
        }
    }

    /// Whether this process held memory per call: at least one allocator block
    /// ([`BLOCK_BYTES`]) in each of its two stretches.
    fn holds(&self) -> bool {
        self.growth.is_some_and(|g| holds(g.per_call(), g.calls))
    }

    /// Whether this process grew by at least one block in a stretch.
    fn grew(&self) -> bool {
        self.growth.is_some_and(|g| {
            let (first, second) = stretches(&g);
            first.max(second) >= BLOCK_BYTES
        })
    }
}

/// The bytes each stretch of `g` added.
fn stretches(g: &MemoryGrowth) -> (f64, f64) {
    let grew = |from: u64, to: u64| to as f64 - from as f64;
    (
        grew(g.start_bytes, g.first_bytes),
        grew(g.first_bytes, g.second_bytes),
    )
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

/// What set a figure's tolerance (the module docs' parts).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToleranceBasis {
    /// [`RELATIVE_TOLERANCE`] of the baseline's value.
    Relative,
    /// The allocator's granularity ([`PEAK_FLOOR_BYTES`], or [`BLOCK_BYTES`] per
    /// stretch for growth).
    Granularity,
    /// [`SPREAD_MULTIPLE`] times the range over the baseline's processes.
    Spread,
    /// A peak: `PEAK_FACTOR − 1` times the baseline's value, where 3x the
    /// baseline's spread would excuse more ([`PEAK_FACTOR`]).
    Factor,
    /// Growth: one allocator block per stretch in any process of the run, where no
    /// process of the baseline held memory per call.
    AnyProcess,
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
    /// The range (max − min) of the figure over the baseline's processes.
    pub spread: f64,
    /// The change the verdict needed, either way (for
    /// [`ToleranceBasis::AnyProcess`], in any one process).
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
                "{SPREAD_MULTIPLE}x the spread of {} between the baseline's processes",
                format_bytes(self.spread.round() as u64)
            ),
            (ToleranceBasis::Factor, _) => format!(
                "a peak over {PEAK_FACTOR}x the baseline's, whatever the spread of {} \
                 between the baseline's processes",
                format_bytes(self.spread.round() as u64)
            ),
            (ToleranceBasis::AnyProcess, _) => format!(
                "in any process, one {} allocator block per stretch of calls, as no \
                 process of the baseline held memory per call",
                format_bytes(BLOCK_BYTES as u64)
            ),
        };
        let size = format_bytes(self.tolerance.round() as u64);
        match self.figure {
            MemoryFigure::GrowthPerCall => format!("±{size} per call, {why}"),
            _ => format!("±{size}, {why}"),
        }
    }

    /// The figure in words: `peak allocated 80.00 MiB -> 6.05 GiB (+77.5x, beyond
    /// ±2.00 MiB, one allocator segment)`, `peak allocated 150.00 MiB -> 400.00 MiB
    /// (grew 2.7x, beyond ±150.00 MiB, a peak over 2x the baseline's, …)`, `holds
    /// +64.00 KiB per call (the baseline held none; …)`, `peak reserved 1.00 GiB, no
    /// change (within …)`.
    pub fn describe(&self) -> String {
        let held = |x: f64| x > self.tolerance;
        if self.figure == MemoryFigure::GrowthPerCall && self.verdict != Verdict::NoChange {
            if self.basis == ToleranceBasis::AnyProcess {
                return format!(
                    "holds memory per call in some processes (the baseline held none; \
                     median {}, beyond {})",
                    self.bytes(self.current),
                    self.tolerance_text()
                );
            }
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
            _ if self.basis == ToleranceBasis::Factor => format!(
                "{} {} -> {} (grew {}, beyond {})",
                self.figure.label(),
                self.bytes(self.baseline),
                self.bytes(self.current),
                times(self.current / self.baseline),
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

    /// `peak allocated 196.00 KiB -> 3.45 GiB`: the two values alone.
    fn change_text(&self) -> String {
        format!(
            "{} {} -> {}",
            self.figure.label(),
            self.bytes(self.baseline),
            self.bytes(self.current)
        )
    }
}

fn sign(x: f64) -> &'static str {
    if x < 0.0 {
        "-"
    } else {
        "+"
    }
}

/// `7.6x`, and `19342x` from 100 on, where a decimal says nothing more.
fn times(r: f64) -> String {
    if r >= 100.0 {
        format!("{r:.0}x")
    } else {
        format!("{r:.1}x")
    }
}

/// `+7.6x`, `+19342x`, `-25.0%`, `+3.1%`.
fn ratio_text(was: f64, now: f64) -> String {
    if was <= 0.0 {
        return "new".to_string();
    }
    let r = now / was;
    if r >= 2.0 {
        format!("+{}", times(r))
    } else {
        format!("{:+.1}%", (r - 1.0) * 100.0)
    }
}

/// A routine that keeps memory per call up to a cap, where the baseline kept none
/// (the module docs' rule).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct BoundedCache {
    /// Bytes held per call: the median over the processes that held memory per call;
    /// where none did, the largest growth of one stretch over its calls.
    pub per_call_bytes: f64,
    /// Processes of the run that held memory per call.
    pub holding_processes: usize,
    /// Processes of the run.
    pub processes: usize,
    /// About how much the cache holds once full: the largest peak allocated of the
    /// run's processes less the baseline's (the median); at least 0.
    pub size_bytes: f64,
}

impl BoundedCache {
    /// `a bounded cache: holds +64.00 KiB per call until it holds about 3.63 GiB
    /// (peak allocated 192.00 KiB -> 3.45 GiB; held per call in 2 of 3 processes,
    /// the other had filled it; the baseline held none)`, with `peak` the peak
    /// allocated's comparison (named when it changed).
    fn describe(&self, peak: Option<&FigureComparison>) -> String {
        let size = format_bytes(self.size_bytes.max(0.0).round() as u64);
        let peak = peak
            .filter(|p| p.verdict != Verdict::NoChange)
            .map(|p| format!("{}; ", p.change_text()))
            .unwrap_or_default();
        if self.holding_processes > 0 {
            let others = match self.processes - self.holding_processes {
                1 => "the other",
                _ => "the others",
            };
            format!(
                "a bounded cache: {} until it holds about {size} ({peak}held per call in \
                 {} of {} processes, {others} had filled it; the baseline held none)",
                holds_text(self.per_call_bytes),
                self.holding_processes,
                self.processes,
            )
        } else {
            format!(
                "a bounded cache: holds memory per call until it holds about {size} \
                 ({peak}it grew up to +{} per call in one stretch of calls and then \
                 stopped; the baseline held none)",
                format_bytes(self.per_call_bytes.max(0.0).round() as u64),
            )
        }
    }
}

/// A figure a comparison left out, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeftOut {
    /// Which figure.
    pub figure: MemoryFigure,
    /// Why, as a lower-case fragment.
    pub reason: String,
}

/// Why peak reserved is left out of a comparison of paired processes.
pub const RESERVED_SHARED: &str = "the reserved bytes of a paired process (`ab`) are both \
     revisions' together: a segment one side left cached is reused by the other";

/// A benchmark's memory against its baseline's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryComparison {
    /// Peak allocated, peak reserved (unless [`Self::left_out`]) and, when both sides
    /// measured it, growth per call.
    pub figures: Vec<FigureComparison>,
    /// A bounded cache the run keeps and the baseline did not (module docs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bounded_cache: Option<BoundedCache>,
    /// Figures not judged, with why: peak reserved of paired processes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<LeftOut>,
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

    /// The figures that changed, in words, or `no change`; a bounded cache first, in
    /// one phrase with the peak allocated and the growth it explains.
    pub fn describe(&self) -> String {
        let bounded = self
            .bounded_cache
            .map(|c| c.describe(self.figure(MemoryFigure::PeakAllocated)));
        let has_bounded = bounded.is_some();
        let explained = |f: &FigureComparison| {
            has_bounded
                && matches!(
                    f.figure,
                    MemoryFigure::PeakAllocated | MemoryFigure::GrowthPerCall
                )
        };
        let changed: Vec<String> = bounded
            .into_iter()
            .chain(
                self.figures
                    .iter()
                    .filter(|f| f.verdict != Verdict::NoChange && !explained(f))
                    .map(FigureComparison::describe),
            )
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
/// every process of both sides measured it; peak reserved unless a side's is a
/// paired process's.
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
    let mut figures = vec![judge(
        MemoryFigure::PeakAllocated,
        &allocated(baseline),
        &allocated(current),
        PEAK_FLOOR_BYTES,
        Some(PEAK_FACTOR),
    )];
    let mut left_out = Vec::new();
    if baseline.iter().chain(current).any(|p| p.reserved_shared) {
        left_out.push(LeftOut {
            figure: MemoryFigure::PeakReserved,
            reason: RESERVED_SHARED.to_string(),
        });
    } else {
        figures.push(judge(
            MemoryFigure::PeakReserved,
            &reserved(baseline),
            &reserved(current),
            PEAK_FLOOR_BYTES,
            Some(PEAK_FACTOR),
        ));
    }
    let mut bounded_cache = None;
    if let (Some(was), Some(now)) = (growths(baseline), growths(current)) {
        let calls = was.iter().chain(&now).map(|g| g.calls).min().unwrap_or(1);
        let per_call =
            |gs: &[MemoryGrowth]| gs.iter().map(MemoryGrowth::per_call).collect::<Vec<f64>>();
        let floor = BLOCK_BYTES / calls.max(1) as f64;
        let mut growth = judge(
            MemoryFigure::GrowthPerCall,
            &per_call(&was),
            &per_call(&now),
            floor,
            None,
        );
        let baseline_held = baseline.iter().any(ProcessMemory::holds);
        let holding: Vec<&ProcessMemory> = current.iter().filter(|p| p.holds()).collect();
        if !baseline_held && !holding.is_empty() && growth.verdict != Verdict::Regressed {
            growth.verdict = Verdict::Regressed;
            growth.basis = ToleranceBasis::AnyProcess;
            growth.tolerance = floor;
        }
        let peak_regressed = figures[0].verdict == Verdict::Regressed;
        bounded_cache = bounded(baseline, current, &holding, peak_regressed);
        figures.push(growth);
    }
    Some(MemoryComparison {
        figures,
        bounded_cache,
        left_out,
    })
}

/// The bounded cache of the module docs, when the run keeps one: every process of
/// both sides measured growth, `holding` are the run's processes that held memory
/// per call.
fn bounded(
    baseline: &[ProcessMemory],
    current: &[ProcessMemory],
    holding: &[&ProcessMemory],
    peak_regressed: bool,
) -> Option<BoundedCache> {
    if baseline.iter().any(ProcessMemory::holds) {
        return None;
    }
    let some_held = !holding.is_empty() && holding.len() < current.len();
    // A one-time cache that fills late grows in one stretch too: only where the
    // baseline's never did is a stretch's growth in the run evidence of a cache.
    let stopped = holding.is_empty()
        && peak_regressed
        && current.iter().any(ProcessMemory::grew)
        && !baseline.iter().any(ProcessMemory::grew);
    if !(some_held || stopped) {
        return None;
    }
    let per_call_bytes = if some_held {
        median(
            &holding
                .iter()
                .filter_map(|p| p.growth.map(|g| g.per_call()))
                .collect::<Vec<f64>>(),
        )
    } else {
        current
            .iter()
            .filter_map(|p| p.growth)
            .map(|g| {
                let (first, second) = stretches(&g);
                first.max(second) / g.calls.max(1) as f64
            })
            .fold(0.0, f64::max)
    };
    let fullest = current
        .iter()
        .map(|p| p.peak_allocated_bytes as f64)
        .fold(0.0, f64::max);
    let without = median(
        &baseline
            .iter()
            .map(|p| p.peak_allocated_bytes as f64)
            .collect::<Vec<f64>>(),
    );
    Some(BoundedCache {
        per_call_bytes,
        holding_processes: holding.len(),
        processes: current.len(),
        size_bytes: (fullest - without).max(0.0),
    })
}

/// The tolerance of a peak without a baseline's spread: [`RELATIVE_TOLERANCE`] of
/// `value`, at least [`PEAK_FLOOR_BYTES`]. History reads a peak's steps by it, as one
/// commit's median has no spread between processes to widen it; a step beyond
/// [`PEAK_FACTOR`] is beyond it too.
pub(crate) fn peak_tolerance(value: f64) -> f64 {
    (RELATIVE_TOLERANCE * value).max(PEAK_FLOOR_BYTES)
}

/// Every process's growth, when every process measured it.
pub fn growths(side: &[ProcessMemory]) -> Option<Vec<MemoryGrowth>> {
    side.iter().map(|p| p.growth).collect()
}

/// One figure by the module docs' rule: the tolerance from the baseline's values
/// `was` alone; for a peak, `factor` caps the spread's part.
fn judge(
    figure: MemoryFigure,
    was: &[f64],
    now: &[f64],
    floor: f64,
    factor: Option<f64>,
) -> FigureComparison {
    let range = |xs: &[f64]| {
        let max = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let min = xs.iter().copied().fold(f64::INFINITY, f64::min);
        max - min
    };
    let (baseline, current) = (median(was), median(now));
    let spread = range(was);
    let spread_part = match factor {
        Some(f) if (f - 1.0) * baseline.abs() < SPREAD_MULTIPLE * spread => {
            ((f - 1.0) * baseline.abs(), ToleranceBasis::Factor)
        }
        _ => (SPREAD_MULTIPLE * spread, ToleranceBasis::Spread),
    };
    let parts = [
        (
            RELATIVE_TOLERANCE * baseline.abs(),
            ToleranceBasis::Relative,
        ),
        (floor, ToleranceBasis::Granularity),
        spread_part,
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
    /// Each process's bytes held per call, in process order.
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
            reserved_shared: false,
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
        assert!(f
            .tolerance_text()
            .contains("3x the spread of 10.00 MiB between the baseline's processes"));
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
            "±2.00 MiB, 3x the spread of 10.00 MiB between the baseline's processes"
        );
        assert_eq!(
            text(peak, ToleranceBasis::Factor),
            "±2.00 MiB, a peak over 2x the baseline's, whatever the spread of 10.00 MiB \
             between the baseline's processes"
        );
        assert_eq!(
            text(MemoryFigure::GrowthPerCall, ToleranceBasis::AnyProcess),
            "±2.00 MiB per call, in any process, one 512 B allocator block per stretch of \
             calls, as no process of the baseline held memory per call"
        );
    }

    #[test]
    fn less_than_one_block_per_stretch_is_nothing_held() {
        assert!(holds(65536.0, 4));
        assert!(holds(5.12, 100));
        assert!(!holds(5.0, 100));
        assert_eq!(holds_text(65536.0), "holds +64.00 KiB per call");
    }

    /// A process of `peak` bytes at its peak allocated whose two stretches of 100
    /// calls grew by `first` and `second` bytes.
    fn grown(peak: u64, first: u64, second: u64) -> ProcessMemory {
        ProcessMemory {
            peak_allocated_bytes: peak,
            peak_reserved_bytes: peak.next_multiple_of(2 * MIB),
            growth: Some(MemoryGrowth {
                calls: 100,
                start_bytes: 10 * MIB,
                first_bytes: 10 * MIB + first,
                second_bytes: 10 * MIB + first + second,
            }),
            reserved_shared: false,
        }
    }

    const KIB64: u64 = 64 << 10;

    /// The H200's case: a bounded cache keeps a 64 KiB tensor per call up to a cap.
    /// Two processes of the head were still filling it in their growth stretches,
    /// the third had filled it before; the peaks spread by gigabytes.
    #[test]
    fn a_bounded_cache_is_regressed_and_named_with_its_size() {
        let baseline = [
            grown(196_608, 0, 0),
            grown(196_608, 0, 0),
            grown(200_704, 0, 0),
        ];
        let head = [
            grown(3_900_000_000, 0, 0),
            grown(3_700_000_000, 100 * KIB64, 100 * KIB64),
            grown(50_000_000, 100 * KIB64, 100 * KIB64),
        ];
        let c = compare_memory(&baseline, &head).unwrap();
        assert_eq!(c.verdict(), Verdict::Regressed);
        let peak = c.figure(MemoryFigure::PeakAllocated).unwrap();
        assert_eq!(
            (peak.verdict, peak.basis, peak.spread),
            (Verdict::Regressed, ToleranceBasis::Granularity, 4096.0),
            "the tolerance is the baseline's, not 3x the head's spread of 3.85 GB"
        );
        let cache = c.bounded_cache.expect("a bounded cache");
        assert_eq!((cache.holding_processes, cache.processes), (2, 3));
        assert_eq!(cache.per_call_bytes, KIB64 as f64);
        assert_eq!(cache.size_bytes, 3_900_000_000.0 - 196_608.0);
        let words = c.describe();
        assert!(
            words.starts_with(
                "a bounded cache: holds +64.00 KiB per call until it holds about 3.63 GiB \
                 (peak allocated 192.00 KiB -> 3.45 GiB; held per call in 2 of 3 processes, \
                 the other had filled it; the baseline held none)"
            ),
            "{words}"
        );
        assert!(
            !words.contains("peak allocated 192.00 KiB -> 3.45 GiB ("),
            "the peak is said once: {words}"
        );
    }

    #[test]
    fn growth_in_one_process_where_the_baseline_held_none_is_a_leak() {
        let baseline = [
            grown(80 * MIB, 0, 0),
            grown(80 * MIB, 0, 0),
            grown(80 * MIB, 0, 0),
        ];
        let head = [
            grown(80 * MIB, 0, 0),
            grown(80 * MIB, 0, 0),
            grown(80 * MIB + 200 * KIB64, 100 * KIB64, 100 * KIB64),
        ];
        let c = compare_memory(&baseline, &head).unwrap();
        let g = c.figure(MemoryFigure::GrowthPerCall).unwrap();
        assert_eq!(g.current, 0.0, "the median process holds nothing");
        assert_eq!(
            (g.verdict, g.basis),
            (Verdict::Regressed, ToleranceBasis::AnyProcess)
        );
        assert_eq!(c.verdict(), Verdict::Regressed);
        let cache = c.bounded_cache.expect("some processes held, others not");
        assert_eq!(cache.holding_processes, 1);
        assert_eq!(cache.size_bytes, (200 * KIB64) as f64);
        assert!(
            c.describe().starts_with(
                "a bounded cache: holds +64.00 KiB per call until it holds about 12.50 MiB \
                 (held per call in 1 of 3 processes"
            ),
            "{}",
            c.describe()
        );
        // Less than a block per stretch in that process is nothing held.
        let head = [
            grown(80 * MIB, 0, 0),
            grown(80 * MIB, 0, 0),
            grown(80 * MIB, 400, 400),
        ];
        let c = compare_memory(&baseline, &head).unwrap();
        assert_eq!(c.verdict(), Verdict::NoChange);
        assert!(c.bounded_cache.is_none());
    }

    #[test]
    fn a_peak_that_grew_while_growth_stopped_is_a_bounded_cache() {
        let baseline = [
            grown(80 * MIB, 0, 0),
            grown(80 * MIB, 0, 0),
            grown(80 * MIB, 0, 0),
        ];
        // Every process filled the cache before or during its first stretch.
        let head = [
            grown(2048 * MIB, 0, 0),
            grown(2048 * MIB, 100 * KIB64, 0),
            grown(2048 * MIB, 0, 0),
        ];
        let c = compare_memory(&baseline, &head).unwrap();
        assert_eq!(c.verdict(), Verdict::Regressed);
        assert_eq!(
            c.figure(MemoryFigure::GrowthPerCall).unwrap().verdict,
            Verdict::NoChange
        );
        let cache = c.bounded_cache.expect("a bounded cache");
        assert_eq!(cache.holding_processes, 0);
        assert_eq!(cache.size_bytes, (1968 * MIB) as f64);
        assert!(
            c.describe().starts_with(
                "a bounded cache: holds memory per call until it holds about 1.92 GiB \
                 (peak allocated 80.00 MiB -> 2.00 GiB; it grew up to +64.00 KiB per call"
            ),
            "{}",
            c.describe()
        );
        // A one-time cache filled in one stretch, the peak where it was: nothing.
        let head = [
            grown(80 * MIB, 0, 0),
            grown(81 * MIB, 100 * KIB64, 0),
            grown(80 * MIB, 0, 0),
        ];
        let c = compare_memory(&baseline, &head).unwrap();
        assert_eq!(c.verdict(), Verdict::NoChange);
        assert!(c.bounded_cache.is_none());
    }

    #[test]
    fn unchanged_code_with_a_realistic_spread_is_no_change() {
        // Peaks that differ by a few KiB between processes, reserved by a segment,
        // growth of a few bytes per stretch (a block freed late, a counter).
        let was = [
            ProcessMemory {
                peak_reserved_bytes: 98 * MIB,
                ..grown(80 * MIB, 0, 0)
            },
            grown(80 * MIB + 64 * 1024, 200, 0),
            grown(80 * MIB, 0, 100),
        ];
        let now = [
            grown(80 * MIB, 100, 0),
            ProcessMemory {
                peak_reserved_bytes: 98 * MIB,
                ..grown(80 * MIB + 64 * 1024, 0, 0)
            },
            grown(80 * MIB + 32 * 1024, 0, 300),
        ];
        let c = compare_memory(&was, &now).unwrap();
        assert_eq!(c.verdict(), Verdict::NoChange, "{}", c.describe());
        assert!(c.bounded_cache.is_none());
        assert_eq!(c.figures.len(), 3);
    }

    #[test]
    fn a_spread_only_on_the_judged_side_no_longer_widens_the_tolerance() {
        let peaks = |a: &[u64]| -> Vec<ProcessMemory> {
            a.iter()
                .map(|&x| process(x * MIB, 512 * MIB, Some(0)))
                .collect()
        };
        let c = compare_memory(&peaks(&[100, 100, 100]), &peaks(&[100, 300, 140])).unwrap();
        let f = c.figure(MemoryFigure::PeakAllocated).unwrap();
        assert_eq!(f.spread, 0.0, "the baseline's spread only");
        assert_eq!(
            (f.verdict, f.basis, f.tolerance),
            (
                Verdict::Regressed,
                ToleranceBasis::Granularity,
                PEAK_FLOOR_BYTES
            ),
            "3x the head's 200 MiB spread would have called +40 MiB no change"
        );
    }

    #[test]
    fn a_peak_over_twice_the_baseline_is_regressed_whatever_its_spread() {
        let peaks = |a: &[u64]| -> Vec<ProcessMemory> {
            a.iter()
                .map(|&x| process(x * MIB, 512 * MIB, Some(0)))
                .collect()
        };
        // A baseline spread by 100 MiB: 3x that is 300 MiB, over the 150 MiB median.
        let was = peaks(&[100, 200, 150]);
        let c = compare_memory(&was, &peaks(&[310, 310, 310])).unwrap();
        let f = c.figure(MemoryFigure::PeakAllocated).unwrap();
        assert_eq!(
            (f.verdict, f.basis, f.tolerance),
            (
                Verdict::Regressed,
                ToleranceBasis::Factor,
                150.0 * MIB as f64
            )
        );
        assert!(
            f.describe()
                .starts_with("peak allocated 150.00 MiB -> 310.00 MiB (grew 2.1x, beyond"),
            "{}",
            f.describe()
        );
        // Within twice the baseline, the spread excuses it.
        let c = compare_memory(&was, &peaks(&[290, 290, 290])).unwrap();
        assert_eq!(
            c.figure(MemoryFigure::PeakAllocated).unwrap().verdict,
            Verdict::NoChange
        );
        // Beyond twice a peak of a few KiB is still within one segment.
        let small = |x: u64| vec![process(x, 2 * MIB, Some(0)); 3];
        let c = compare_memory(&small(4096), &small(40960)).unwrap();
        assert_eq!(c.verdict(), Verdict::NoChange);
    }

    #[test]
    fn the_reserved_bytes_of_paired_processes_are_left_out_saying_why() {
        let paired = |allocated: u64, reserved: u64| {
            vec![
                ProcessMemory {
                    reserved_shared: true,
                    ..process(allocated, reserved, Some(0))
                };
                3
            ]
        };
        // Each side's reserved bytes hold the other's cache: 4 GiB on both.
        let c =
            compare_memory(&paired(80 * MIB, 4096 * MIB), &paired(80 * MIB, 8192 * MIB)).unwrap();
        assert!(c.figure(MemoryFigure::PeakReserved).is_none());
        assert_eq!(c.left_out.len(), 1);
        assert_eq!(c.left_out[0].figure, MemoryFigure::PeakReserved);
        assert!(c.left_out[0].reason.contains("both revisions"));
        assert_eq!(c.verdict(), Verdict::NoChange);
        // A baseline of a plain run against paired processes: left out too.
        let c = compare_memory(&side(80 * MIB, 96 * MIB, 0), &paired(80 * MIB, 96 * MIB)).unwrap();
        assert!(c.figure(MemoryFigure::PeakReserved).is_none());
        // Allocated figures are judged as ever.
        let c = compare_memory(&paired(80 * MIB, 96 * MIB), &paired(800 * MIB, 96 * MIB)).unwrap();
        assert_eq!(c.verdict(), Verdict::Regressed);
    }
}
