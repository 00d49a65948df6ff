//! The metrics a comparison judges, as data: the list ([`Metric`]) with what each
//! needs ([`MetricSpec`]: its words, unit, how it is judged, whether it is judged and
//! gated by default), a set of them ([`MetricSet`]), and one metric's result
//! against the baseline ([`MetricVerdict`]).
//!
//! A new metric is a variant here with its [`MetricSpec`], and its judge in
//! [`super::judge`]; the gate, the missing evidence, the JSON and the tables iterate
//! [`Metric::ALL`].

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::compare::{Comparison, Verdict};
use crate::kernels::CounterChange;
use crate::memory::MemoryComparison;

use super::{counters_verdict, MissingOn};

/// What a verdict is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// The benchmark's time: device time when measured, else synced wall time.
    Time,
    /// Kernel time: the GPU's own work per call.
    Kernel,
    /// The exact counts per call (kernels, copies, syncs, allocations).
    Counters,
    /// Peak allocated and reserved device memory and growth per call
    /// ([`crate::memory`]).
    Memory,
    /// Host-dispatch time per call: until the call returned to the host.
    Host,
    /// Energy per call from the GPU's energy counter ([`crate::energy`]).
    Energy,
    /// The share of the device's peak at the clock it ran ([`crate::peaks`]):
    /// FLOP/s or bytes/s over the peak scaled to the measured clock. Higher is
    /// better: a drop is regressed.
    Peak,
}

/// How a metric's two sides are judged, which is also the shape of its result
/// ([`Judged`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Judgement {
    /// A time per call, process by process ([`crate::compare`]): a change with its
    /// interval. The share of peak is judged so too, on its shares per sample, with
    /// the verdict turned round (a drop is regressed) and its typical values shares,
    /// not times.
    Timed,
    /// Exact counts per call: any change is a verdict.
    Counted,
    /// Memory figures, each on its own tolerance ([`crate::memory`]).
    Memory,
}

/// What a metric is measured in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Nanoseconds per call.
    Nanoseconds,
    /// Events per call (kernels, copies, syncs, allocations).
    PerCall,
    /// Bytes.
    Bytes,
    /// Joules per call.
    Joules,
    /// A share of the device's peak at the clock it ran (0.62: 62%).
    ShareOfPeak,
}

/// What one metric needs, in one place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetricSpec {
    /// The word on the command line (`--gate-on kernel`) and its field in JSON.
    pub name: &'static str,
    /// In sentences: `kernel time regressed`, `kernel time missing`.
    pub label: &'static str,
    /// The heading of its column in a terminal comparison table.
    pub column: &'static str,
    /// What it is measured in.
    pub unit: Unit,
    /// How it is judged.
    pub judgement: Judgement,
    /// Whether it is the GPU's own work (kernel time, counters, memory), which a
    /// comparison's summary counts apart from time.
    pub on_gpu: bool,
    /// Whether it is judged and gated without `--gate-on` naming it. A metric that
    /// is not is judged only when a gate names it, so default outputs stay as they
    /// are.
    pub by_default: bool,
}

impl Metric {
    /// Every metric, in the order tables show them.
    pub const ALL: [Metric; 7] = [
        Metric::Time,
        Metric::Kernel,
        Metric::Counters,
        Metric::Memory,
        Metric::Host,
        Metric::Energy,
        Metric::Peak,
    ];

    /// What this metric needs.
    pub fn spec(self) -> &'static MetricSpec {
        match self {
            Metric::Time => &MetricSpec {
                name: "time",
                label: "time",
                column: "change",
                unit: Unit::Nanoseconds,
                judgement: Judgement::Timed,
                on_gpu: false,
                by_default: true,
            },
            Metric::Kernel => &MetricSpec {
                name: "kernel",
                label: "kernel time",
                column: "kernel change",
                unit: Unit::Nanoseconds,
                judgement: Judgement::Timed,
                on_gpu: true,
                by_default: true,
            },
            Metric::Counters => &MetricSpec {
                name: "counters",
                label: "counters",
                column: "counters",
                unit: Unit::PerCall,
                judgement: Judgement::Counted,
                on_gpu: true,
                by_default: true,
            },
            Metric::Memory => &MetricSpec {
                name: "memory",
                label: "memory",
                column: "memory",
                unit: Unit::Bytes,
                judgement: Judgement::Memory,
                on_gpu: true,
                by_default: true,
            },
            // It moves with the host's dispatch speed from one process to the next
            // (tens of percent on launch-bound work), so only a gate that names it
            // has it judged: by default it would add noise, not evidence.
            Metric::Host => &MetricSpec {
                name: "host",
                label: "host time",
                column: "host change",
                unit: Unit::Nanoseconds,
                judgement: Judgement::Timed,
                on_gpu: false,
                by_default: false,
            },
            // Judged and gated by default: on the H200 an 8192² bf16 matmul's energy
            // per call varied 1.165–1.185 J between 5 processes of one run (sd ~0.6%,
            // windows within a process up to 3% apart), well inside its own noise
            // threshold (`CompareConfig::energy_noise_threshold`, ±3%), which A/A
            // calibration holds to under 5% false verdicts (`benches/calibration.rs`).
            // Host-bound work is judged on the host rule, since its energy per call
            // holds the idle GPU's power while the host dispatches. Neither side has
            // it on the CPU (or without the counter), which gates only a `--gate-on`
            // that names it ([`MetricGap::gated`]); one side without it (a baseline
            // saved before energy was kept) is missing evidence, as for memory.
            Metric::Energy => &MetricSpec {
                name: "energy",
                label: "energy",
                column: "energy change",
                unit: Unit::Joules,
                judgement: Judgement::Timed,
                on_gpu: true,
                by_default: true,
            },
            // Each process's FLOP/s or bytes/s over the peak at the clock it ran (its
            // mean SM clock, or its memory clock), so a change hidden in time by a
            // clock that rose (a power-capped GPU given headroom) shows as a drop.
            // Not judged by default: at equal clocks it is time's evidence again
            // (share ∝ 1 / (time × clock)), a second verdict on one measurement that
            // would double what a gate trips on; where the clocks differ, its
            // verdict rests on clock readings taken between samples, which add their
            // own noise, and no A/A calibration on a GPU stands behind it yet. A
            // gate that names it has it judged, and `other_clocks` already names a
            // comparison whose sides ran at clearly different clocks.
            Metric::Peak => &MetricSpec {
                name: "peak",
                label: "share of peak",
                column: "peak share",
                unit: Unit::ShareOfPeak,
                judgement: Judgement::Timed,
                on_gpu: true,
                by_default: false,
            },
        }
    }

    /// The word used on the command line and in JSON.
    pub fn as_str(self) -> &'static str {
        self.spec().name
    }

    /// The words in sentences (`kernel time`).
    pub fn label(self) -> &'static str {
        self.spec().label
    }

    /// The metrics besides time, each of which a compared benchmark may have a
    /// [`MetricVerdict`] on, in [`Metric::ALL`]'s order.
    pub fn besides_time() -> impl Iterator<Item = Metric> {
        Metric::ALL.into_iter().filter(|&m| m != Metric::Time)
    }
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An unknown [`Metric`] word.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("unknown metric {0:?}: expected {words}", words = Metric::words())]
pub struct UnknownMetric(pub String);

impl Metric {
    /// `` `time`, `kernel`, `counters` or `memory` ``, for messages.
    fn words() -> String {
        let mut words: Vec<String> = Metric::ALL
            .iter()
            .map(|m| format!("`{}`", m.as_str()))
            .collect();
        let last = words.pop().unwrap_or_default();
        format!("{} or {last}", words.join(", "))
    }
}

impl FromStr for Metric {
    type Err = UnknownMetric;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Metric::ALL
            .into_iter()
            .find(|m| m.as_str() == s)
            .ok_or_else(|| UnknownMetric(s.to_string()))
    }
}

/// A set of metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct MetricSet(u32);

impl MetricSet {
    /// The set of `metrics`.
    pub fn of(metrics: &[Metric]) -> Self {
        let mut set = MetricSet::default();
        for &m in metrics {
            set.insert(m);
        }
        set
    }

    /// The metrics judged and gated by default ([`MetricSpec::by_default`]).
    pub fn by_default() -> Self {
        let defaults: Vec<Metric> = Metric::ALL
            .into_iter()
            .filter(|m| m.spec().by_default)
            .collect();
        MetricSet::of(&defaults)
    }

    /// Adds `metric`.
    pub fn insert(&mut self, metric: Metric) {
        self.0 |= 1 << metric as u32;
    }

    /// Whether `metric` is in the set.
    pub fn contains(self, metric: Metric) -> bool {
        self.0 & (1 << metric as u32) != 0
    }

    /// Its metrics, in [`Metric::ALL`]'s order.
    pub fn iter(self) -> impl Iterator<Item = Metric> {
        Metric::ALL.into_iter().filter(move |&m| self.contains(m))
    }
}

/// A metric's result against the baseline, shaped by its [`Judgement`]; in JSON,
/// the result alone (the field's name says the metric).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Judged {
    /// A time per call compared process by process.
    Timed(Box<Comparison>),
    /// The counters per call that differ (empty: all equal).
    Counted(Vec<CounterChange>),
    /// Peak memory and growth per call.
    Memory(MemoryComparison),
}

impl Judged {
    /// The verdict: a time's; for the counters, regressed when any count per call
    /// went up, improved when some went down and none up; for memory, the worst of
    /// its figures ([`MemoryComparison::verdict`]).
    pub fn verdict(&self) -> Verdict {
        match self {
            Judged::Timed(c) => c.verdict,
            Judged::Counted(changes) => counters_verdict(changes),
            Judged::Memory(m) => m.verdict(),
        }
    }

    /// The comparison of a time per call.
    pub fn timed(&self) -> Option<&Comparison> {
        match self {
            Judged::Timed(c) => Some(c),
            _ => None,
        }
    }

    /// The changes of the counters per call.
    pub fn counted(&self) -> Option<&[CounterChange]> {
        match self {
            Judged::Counted(changes) => Some(changes),
            _ => None,
        }
    }

    /// The memory comparison.
    pub fn memory(&self) -> Option<&MemoryComparison> {
        match self {
            Judged::Memory(m) => Some(m),
            _ => None,
        }
    }

    /// Reads the result of `metric` from its JSON field.
    pub(super) fn from_json(
        metric: Metric,
        value: serde_json::Value,
    ) -> Result<Self, serde_json::Error> {
        Ok(match metric.spec().judgement {
            Judgement::Timed => Judged::Timed(serde_json::from_value(value)?),
            Judgement::Counted => Judged::Counted(serde_json::from_value(value)?),
            Judgement::Memory => Judged::Memory(serde_json::from_value(value)?),
        })
    }
}

/// Why a side lacks a metric.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MetricGap {
    /// Which side lacks it.
    pub missing_on: MissingOn,
    /// Why, when a side says (e.g. `kernel timing was not built in: …`).
    pub reason: String,
}

impl MetricGap {
    /// A gap on `missing_on`, for `reason`.
    pub fn new(missing_on: MissingOn, reason: impl Into<String>) -> Self {
        MetricGap {
            missing_on,
            reason: reason.into(),
        }
    }

    /// Whether a gate on its metric sees this gap: always when one side has the
    /// metric; when neither has it, only a gate that names the metric (`explicit`).
    pub fn gated(&self, explicit: bool) -> bool {
        self.missing_on != MissingOn::Both || explicit
    }
}

/// One metric of a compared benchmark: its result, why a side lacks it, or both
/// (memory's peaks compared while one side lacks growth per call).
#[derive(Debug, Clone, PartialEq)]
pub struct MetricVerdict {
    /// The metric.
    pub metric: Metric,
    /// Its result, when both sides have it.
    pub judged: Option<Judged>,
    /// What a side lacks of it, and why: missing evidence for a gate on it
    /// ([`super::ComparisonSet::missing`]).
    pub gap: Option<MetricGap>,
}

impl MetricVerdict {
    /// `metric` judged.
    pub fn judged(metric: Metric, judged: Judged) -> Self {
        MetricVerdict {
            metric,
            judged: Some(judged),
            gap: None,
        }
    }

    /// `metric` lacking on a side.
    pub fn missing(metric: Metric, gap: MetricGap) -> Self {
        MetricVerdict {
            metric,
            judged: None,
            gap: Some(gap),
        }
    }

    /// The verdict, when judged.
    pub fn verdict(&self) -> Option<Verdict> {
        self.judged.as_ref().map(Judged::verdict)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_metric_is_read_back_from_its_word() {
        for m in Metric::ALL {
            assert_eq!(m.as_str().parse::<Metric>(), Ok(m));
        }
        let e = "speed".parse::<Metric>().unwrap_err().to_string();
        let last = Metric::ALL[Metric::ALL.len() - 1];
        assert!(
            e.contains("expected `time`, `kernel`, ") && e.ends_with(&format!(" or `{last}`")),
            "{e}"
        );
    }

    #[test]
    fn a_set_keeps_the_list_order() {
        let set = MetricSet::of(&[Metric::Memory, Metric::Time]);
        assert_eq!(
            set.iter().collect::<Vec<_>>(),
            [Metric::Time, Metric::Memory]
        );
        let default: Vec<Metric> = MetricSet::by_default().iter().collect();
        assert_eq!(
            default,
            [
                Metric::Time,
                Metric::Kernel,
                Metric::Counters,
                Metric::Memory,
                Metric::Energy
            ]
        );
    }

    #[test]
    fn a_metric_neither_side_has_counts_only_for_a_gate_that_names_it() {
        let gap = |missing_on| MetricGap::new(missing_on, "");
        assert!(gap(MissingOn::Current).gated(false));
        assert!(gap(MissingOn::Baseline).gated(false));
        assert!(!gap(MissingOn::Both).gated(false));
        assert!(gap(MissingOn::Both).gated(true));
    }
}
