//! Which metrics the CI gate looks at ([`Gate`], `--gate-on`) and which outcomes
//! fail it ([`FailOn`], `--fail-on`).

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use thiserror::Error;

use super::*;
use crate::compare::Verdict;

/// The metrics a gate looks at: by default those judged by default
/// ([`MetricSpec::by_default`]).
///
/// In JSON, a flag per metric, `{"time": true, "kernel": true, …, "explicit": false}`:
/// every metric judged by default always, one judged only on request when gated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Gate {
    /// The metrics it looks at.
    pub metrics: MetricSet,
    /// Whether the user named the metrics (`--gate-on`): then a metric neither side
    /// measured is missing evidence too, since the gate was asked to rest on it. The
    /// default gate looks at what is there (no kernel time on a CPU is no gap).
    pub explicit: bool,
}

impl Default for Gate {
    fn default() -> Self {
        Gate {
            metrics: MetricSet::by_default(),
            explicit: false,
        }
    }
}

impl Gate {
    /// A gate the user asked for on `metrics`.
    pub fn of(metrics: &[Metric]) -> Self {
        Gate {
            metrics: MetricSet::of(metrics),
            explicit: true,
        }
    }

    /// Whether the gate looks at `metric`.
    pub fn contains(&self, metric: Metric) -> bool {
        self.metrics.contains(metric)
    }

    /// The metrics it looks at, in [`Metric::ALL`]'s order.
    pub fn metrics(&self) -> Vec<Metric> {
        self.metrics.iter().collect()
    }
}

impl Serialize for Gate {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        for m in Metric::ALL {
            if m.spec().by_default || self.contains(m) {
                map.serialize_entry(m.as_str(), &self.contains(m))?;
            }
        }
        map.serialize_entry("explicit", &self.explicit)?;
        map.end()
    }
}

/// A metric's flag absent is false: settings saved before memory verdicts gated on
/// what they named.
impl<'de> Deserialize<'de> for Gate {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let flags = BTreeMap::<String, bool>::deserialize(deserializer)?;
        let on = |word: &str| flags.get(word).copied().unwrap_or(false);
        let metrics: Vec<Metric> = Metric::ALL.into_iter().filter(|m| on(m.as_str())).collect();
        Ok(Gate {
            metrics: MetricSet::of(&metrics),
            explicit: on("explicit"),
        })
    }
}

impl fmt::Display for Gate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let words: Vec<&str> = self.metrics().iter().map(|m| m.as_str()).collect();
        f.write_str(&words.join(","))
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
