//! What a verdict is about ([`Metric`]), which metrics the CI gate looks at
//! ([`Gate`], `--gate-on`) and which outcomes fail it ([`FailOn`], `--fail-on`).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use super::*;
use crate::compare::Verdict;

/// What a verdict is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
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
}

impl Metric {
    /// Every metric, in the order tables show them.
    pub const ALL: [Metric; 4] = [
        Metric::Time,
        Metric::Kernel,
        Metric::Counters,
        Metric::Memory,
    ];

    /// The word used on the command line and in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Metric::Time => "time",
            Metric::Kernel => "kernel",
            Metric::Counters => "counters",
            Metric::Memory => "memory",
        }
    }
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The metrics a gate looks at; every one by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Gate {
    /// The benchmark's time.
    pub time: bool,
    /// Kernel time.
    pub kernel: bool,
    /// The exact counters.
    pub counters: bool,
    /// Peak memory and growth per call (absent in settings saved before memory
    /// verdicts, which gated on what they named).
    #[serde(default)]
    pub memory: bool,
    /// Whether the user named the metrics (`--gate-on`): then a metric neither side
    /// measured is missing evidence too, since the gate was asked to rest on it. The
    /// default gate looks at what is there (no kernel time on a CPU is no gap).
    #[serde(default)]
    pub explicit: bool,
}

impl Default for Gate {
    fn default() -> Self {
        Gate {
            time: true,
            kernel: true,
            counters: true,
            memory: true,
            explicit: false,
        }
    }
}

impl Gate {
    /// A gate the user asked for on `metrics`.
    pub fn of(metrics: &[Metric]) -> Self {
        Gate {
            time: metrics.contains(&Metric::Time),
            kernel: metrics.contains(&Metric::Kernel),
            counters: metrics.contains(&Metric::Counters),
            memory: metrics.contains(&Metric::Memory),
            explicit: true,
        }
    }

    /// Whether the gate looks at `metric`.
    pub fn contains(&self, metric: Metric) -> bool {
        match metric {
            Metric::Time => self.time,
            Metric::Kernel => self.kernel,
            Metric::Counters => self.counters,
            Metric::Memory => self.memory,
        }
    }

    /// The metrics it looks at, in [`Metric::ALL`]'s order.
    pub fn metrics(&self) -> Vec<Metric> {
        Metric::ALL
            .into_iter()
            .filter(|&m| self.contains(m))
            .collect()
    }
}

impl fmt::Display for Gate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let words: Vec<&str> = self.metrics().iter().map(|m| m.as_str()).collect();
        f.write_str(&words.join(","))
    }
}

/// An unknown [`Metric`] word.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("unknown metric {0:?}: expected `time`, `kernel`, `counters` or `memory`")]
pub struct UnknownMetric(pub String);

impl FromStr for Metric {
    type Err = UnknownMetric;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Metric::ALL
            .into_iter()
            .find(|m| m.as_str() == s)
            .ok_or_else(|| UnknownMetric(s.to_string()))
    }
}

/// Which comparison outcomes fail a CI run.
///
/// * [`FailOn::Regressed`] (the default): a regressed benchmark fails the run.
/// * [`FailOn::Ambiguous`]: strict; regressed and ambiguous benchmarks both fail it,
///   since neither shows the code is as fast as before.
/// * [`FailOn::Never`]: report only.
///
/// Under either of the first two, missing evidence ([`Missing`]: a benchmark not
/// run, gone or not compared, a gated metric one side lacks) fails it too, unless
/// [`AllowMissing`] lets its kind pass: a gate never passes for want of evidence.
/// Benchmarks that failed to run are not counted here: a failed benchmark has its own
/// exit status, whatever this says.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailOn {
    /// Fail on regressions.
    #[default]
    Regressed,
    /// Fail on regressions and on anything that cannot be told apart from one.
    Ambiguous,
    /// Never fail on a comparison.
    Never,
}

impl FailOn {
    /// Every value, for help texts.
    pub const ALL: [FailOn; 3] = [FailOn::Regressed, FailOn::Ambiguous, FailOn::Never];

    /// The word used on the command line and in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            FailOn::Regressed => "regressed",
            FailOn::Ambiguous => "ambiguous",
            FailOn::Never => "never",
        }
    }

    /// Whether a benchmark with `verdict` fails the run.
    pub fn fails(self, verdict: Verdict) -> bool {
        match self {
            FailOn::Regressed => verdict == Verdict::Regressed,
            FailOn::Ambiguous => matches!(verdict, Verdict::Regressed | Verdict::Ambiguous),
            FailOn::Never => false,
        }
    }

    /// Whether benchmark `b`'s verdicts fail the run on the metrics of `gate`; see
    /// the type's docs. A metric it has no verdict on is missing evidence, judged by
    /// [`FailOn::trips_on_missing`] (so is a benchmark not compared).
    pub fn trips(self, b: &BenchmarkComparison, gate: &Gate) -> bool {
        match &b.outcome {
            ComparisonOutcome::Compared { .. } => gate
                .metrics()
                .into_iter()
                .filter_map(|m| b.verdict_of(m))
                .any(|v| self.fails(v)),
            ComparisonOutcome::NotCompared { .. } | ComparisonOutcome::Failed { .. } => false,
        }
    }

    /// Whether `missing` fails the run: under any gate but `never`, unless `allow`
    /// lets its kind pass.
    pub fn trips_on_missing(self, missing: &Missing, allow: &AllowMissing) -> bool {
        self != FailOn::Never && !allow.allows(missing.kind)
    }

    /// Whether `set`'s verdicts fail the run on the metrics of `gate` (missing
    /// evidence aside: [`FailOn::trips_on_missing`]).
    pub fn should_fail(self, set: &ComparisonSet, gate: &Gate) -> bool {
        set.comparisons.iter().any(|b| self.trips(b, gate))
    }
}

impl fmt::Display for FailOn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An unknown [`FailOn`] word.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("unknown fail-on mode {0:?}: expected `regressed`, `ambiguous` or `never`")]
pub struct UnknownFailOn(pub String);

impl FromStr for FailOn {
    type Err = UnknownFailOn;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        FailOn::ALL
            .into_iter()
            .find(|f| f.as_str() == s)
            .ok_or_else(|| UnknownFailOn(s.to_string()))
    }
}
