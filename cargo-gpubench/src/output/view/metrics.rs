//! Each metric's verdict on one benchmark, in words every output shows: the one
//! place that reads a comparison's per-metric fields (time, kernel time, counters,
//! memory, host time, energy), so a metric added to the judge is shown by adding it here.

use gpubench_analysis::baseline::{ComparisonOutcome, Judged, Judgement, Metric, Unit};
use gpubench_analysis::kernels::{CounterChange, KernelChange};
use gpubench_analysis::memory::MemoryComparison;
use gpubench_analysis::{Comparison, Verdict};
use gpubench_record::estimate::Estimate;

use crate::console::Tone;
use crate::format::{percent, plural};

/// One metric's verdict on a benchmark, in words.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct MetricView {
    /// Which metric.
    pub metric: Metric,
    /// Its verdict.
    pub verdict: Verdict,
    /// `+12.3% [+10.1%, +14.6%]`: the change with its interval, for a metric judged
    /// by statistics (time, kernel time).
    pub change: Option<String>,
    /// The verdict in words: `no change (certain, under ±1%)` (time, kernel time),
    /// `+1 kernel per call` or `no change` (counters), `regressed` (memory).
    pub words: String,
    /// What changed, figure by figure with the tolerance it went beyond (memory),
    /// when something did.
    pub detail: Option<String>,
    /// Each count that changed, in words (counters); `words` runs them together.
    pub changes: Vec<String>,
}

impl MetricView {
    /// The metric's name in a sentence: `time`, `kernel time`, `counters`, `memory`.
    pub(crate) fn label(&self) -> &'static str {
        self.metric.label()
    }

    /// Whether every change of it is a finding (exact counts, memory figures that
    /// repeat), rather than only a change beyond the noise.
    fn exact(&self) -> bool {
        self.metric.spec().judgement != Judgement::Timed
    }

    /// The colour of its verdict.
    pub(crate) fn tone(&self) -> Option<Tone> {
        verdict_tone(self.verdict)
    }

    /// Whether a summary makes it stand out: a regression, or any change of an
    /// exact metric.
    pub(crate) fn marked(&self) -> bool {
        self.verdict == Verdict::Regressed || (self.exact() && self.verdict != Verdict::NoChange)
    }

    /// Whether it moved either way for certain (regressed or improved).
    pub(crate) fn changed(&self) -> bool {
        matches!(self.verdict, Verdict::Regressed | Verdict::Improved)
    }

    /// A table cell's text: the change, then the verdict in words
    /// (`+12.3% [+10.1%, +14.6%] regressed`, `+1 kernel per call`).
    pub(crate) fn cell(&self) -> String {
        match &self.change {
            Some(change) => format!("{change} {}", self.words),
            None => self.words.clone(),
        }
    }

    /// Why it trips a gate, in a phrase: `kernel time regressed`, `counters: +1
    /// kernel per call`, `memory: holds +64.00 KiB per call (…)`.
    pub(crate) fn trip_phrase(&self) -> String {
        if self.exact() {
            format!(
                "{}: {}",
                self.label(),
                self.detail.as_deref().unwrap_or(&self.words)
            )
        } else {
            format!("{} {}", self.label(), self.verdict.label())
        }
    }
}

/// The colour of a verdict: none for no change.
pub(crate) fn verdict_tone(verdict: Verdict) -> Option<Tone> {
    match verdict {
        Verdict::Regressed => Some(Tone::Regressed),
        Verdict::Improved => Some(Tone::Improved),
        Verdict::Ambiguous => Some(Tone::Ambiguous),
        Verdict::NoChange => None,
    }
}

/// The verdict on every metric `outcome` compared, in [`Metric::ALL`]'s order (time
/// first); empty when it was not compared.
pub(crate) fn verdicts(outcome: &ComparisonOutcome) -> Vec<MetricView> {
    Metric::ALL
        .into_iter()
        .filter_map(|m| verdict(outcome, m))
        .collect()
}

/// The verdict on `metric`, when `outcome` compared it.
pub(crate) fn verdict(outcome: &ComparisonOutcome, metric: Metric) -> Option<MetricView> {
    let statistical = |c: &Comparison| MetricView {
        metric,
        verdict: c.verdict,
        change: Some(match metric.spec().unit {
            // Energy has no figure of its own elsewhere in a table: its value leads.
            Unit::Joules => format!(
                "{}, {}",
                crate::format::joules(c.current_estimate),
                change_text(&c.change)
            ),
            _ => change_text(&c.change),
        }),
        words: verdict_text(c),
        detail: None,
        changes: Vec::new(),
    };
    if metric == Metric::Time {
        return time(outcome).map(statistical);
    }
    match outcome.judged(metric)? {
        Judged::Timed(c) => Some(statistical(c)),
        Judged::Counted(counted) => {
            let changes: Vec<String> = counted.iter().map(CounterChange::describe).collect();
            Some(MetricView {
                metric,
                verdict: gpubench_analysis::baseline::counters_verdict(counted),
                change: None,
                words: if changes.is_empty() {
                    Verdict::NoChange.label().to_string()
                } else {
                    changes.join(", ")
                },
                detail: None,
                changes,
            })
        }
        Judged::Memory(m) => {
            let verdict = m.verdict();
            Some(MetricView {
                metric,
                verdict,
                change: None,
                words: verdict.label().to_string(),
                detail: (verdict != Verdict::NoChange).then(|| m.describe()),
                changes: Vec::new(),
            })
        }
    }
}

/// The time comparison of `outcome`, when it was compared.
pub(crate) fn time(outcome: &ComparisonOutcome) -> Option<&Comparison> {
    outcome.time()
}

/// The kernel-time comparison of `outcome`, when both sides measured kernel time.
pub(crate) fn kernel(outcome: &ComparisonOutcome) -> Option<&Comparison> {
    outcome.judged(Metric::Kernel)?.timed()
}

/// The counter changes of `outcome` (empty: all equal), when both sides counted.
fn counter_changes(outcome: &ComparisonOutcome) -> Option<&[CounterChange]> {
    outcome.judged(Metric::Counters)?.counted()
}

/// The memory comparison of `outcome`, when both sides read the allocator.
pub(crate) fn memory(outcome: &ComparisonOutcome) -> Option<&MemoryComparison> {
    outcome.judged(Metric::Memory)?.memory()
}

/// Kernel changes named under a benchmark; the rest are counted.
pub(crate) const KERNEL_CHANGES_SHOWN: usize = 5;

/// What the GPU did differently, in words: the counter changes, then the kernels
/// that are new, gone or moved (the first [`KERNEL_CHANGES_SHOWN`], then how many
/// more).
pub(crate) fn gpu_changes(outcome: &ComparisonOutcome) -> Vec<String> {
    let kernel_changes = outcome.kernel_changes();
    let mut out: Vec<String> = counter_changes(outcome)
        .unwrap_or_default()
        .iter()
        .map(CounterChange::describe)
        .collect();
    out.extend(
        kernel_changes
            .iter()
            .take(KERNEL_CHANGES_SHOWN)
            .map(KernelChange::describe),
    );
    let more = kernel_changes.len().saturating_sub(KERNEL_CHANGES_SHOWN);
    if more > 0 {
        out.push(format!("{more} more kernel{} changed", plural(more)));
    }
    out
}

/// `+12.3% [+10.1%, +14.6%]`: a change with its interval; `+600.8% (too noisy for
/// an interval)` when the interval's ratios span more than
/// [`crate::format::TOO_NOISY_RATIO`], as a figure's would.
pub(crate) fn change_text(change: &Estimate) -> String {
    if crate::format::too_noisy(1.0 + change.lower, 1.0 + change.upper) {
        return format!("{} (too noisy for an interval)", percent(change.point));
    }
    format!(
        "{} [{}, {}]",
        percent(change.point),
        percent(change.lower),
        percent(change.upper)
    )
}

/// A verdict in words: its label, or for a change that is certain but under the
/// threshold, `no change (certain, under ±1%)`, so it does not read as nothing.
pub(crate) fn verdict_text(c: &Comparison) -> String {
    if c.certain_under_threshold {
        format!(
            "{} (certain, under ±{})",
            c.verdict.label(),
            crate::format::plain_percent(c.threshold)
        )
    } else {
        c.verdict.label().to_string()
    }
}
