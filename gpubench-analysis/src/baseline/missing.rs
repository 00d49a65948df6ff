//! Evidence a comparison lacks — a benchmark or a metric that one side has and the
//! other does not — and which of it the gate lets pass (`--allow-missing`).
//!
//! A gate that passes because nothing could be judged is a gate that lies: a
//! benchmark in the baseline that did not run, or a metric the gate looks at that one
//! side never measured, could hide a regression. Each such gap is a [`Missing`] with
//! the reason, and by default it trips the gate like a regression (unless
//! `--fail-on never`); an explicit [`AllowMissing`] lets a kind of gap pass.
//!
//! What is not missing evidence:
//! * a benchmark the user left out (a filter, `--skip`, another `--partition` part):
//!   nothing was asked of it;
//! * a benchmark new in the judged side: it has no baseline, so no regression can
//!   hide in it (it is listed as new);
//! * a metric the gate does not look at, or one neither side measured while the gate
//!   is the default one (kernel time on a CPU): only a gate that names the metric
//!   (`--gate-on kernel`) asks for it, and then its absence is missing evidence.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use super::Metric;

/// What kind of evidence is missing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MissingKind {
    /// In the baseline and selected, but not measured: not run (interrupted, its run
    /// killed, its `--partition` part missing from a merge).
    NotRun,
    /// In the baseline but not on the judged side at all: gone from the suite
    /// (removed or renamed), or absent from a side that does not say why.
    Gone,
    /// On both sides, but not compared: recorded on another device model, measured
    /// with other settings, no usable samples, or failed on the baseline's side.
    NotCompared,
    /// A metric the gate looks at, measured on one side only (or on neither, when
    /// the gate names the metric).
    Metric,
}

impl MissingKind {
    /// Every kind, in the order tables show them.
    pub const ALL: [MissingKind; 4] = [
        MissingKind::NotRun,
        MissingKind::Gone,
        MissingKind::NotCompared,
        MissingKind::Metric,
    ];

    /// The word on the command line (`--allow-missing not-run`).
    pub fn as_str(self) -> &'static str {
        match self {
            MissingKind::NotRun => "not-run",
            MissingKind::Gone => "gone",
            MissingKind::NotCompared => "not-compared",
            MissingKind::Metric => "metric",
        }
    }

    /// The words in sentences and tables (`not run`).
    pub fn label(self) -> &'static str {
        match self {
            MissingKind::NotRun => "not run",
            MissingKind::Gone => "gone",
            MissingKind::NotCompared => "not compared",
            MissingKind::Metric => "metric missing",
        }
    }
}

impl fmt::Display for MissingKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One piece of missing evidence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Missing {
    /// The benchmark id.
    pub id: String,
    /// What is missing.
    pub kind: MissingKind,
    /// The metric, for [`MissingKind::Metric`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metric: Option<Metric>,
    /// Why, as a lower-case fragment that says the fix where there is one.
    pub reason: String,
}

impl Missing {
    /// A missing benchmark (`kind` other than [`MissingKind::Metric`]).
    pub fn benchmark(id: &str, kind: MissingKind, reason: impl Into<String>) -> Self {
        Missing {
            id: id.to_string(),
            kind,
            metric: None,
            reason: reason.into(),
        }
    }

    /// `not run`, or `kernel time missing` for a metric.
    pub fn what(&self) -> String {
        match self.metric {
            Some(metric) => format!("{} missing", metric.label()),
            None => self.kind.label().into(),
        }
    }
}

/// Which side of a comparison lacks a metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MissingOn {
    /// The baseline lacks it.
    Baseline,
    /// The judged side lacks it.
    Current,
    /// Neither side has it.
    Both,
}

/// The kinds of missing evidence the gate lets pass (`--allow-missing`); none by
/// default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct AllowMissing {
    /// Benchmarks not run.
    #[serde(default)]
    pub not_run: bool,
    /// Benchmarks gone from the judged side.
    #[serde(default)]
    pub gone: bool,
    /// Benchmarks not compared.
    #[serde(default)]
    pub not_compared: bool,
    /// Metrics one side lacks.
    #[serde(default)]
    pub metric: bool,
}

impl AllowMissing {
    /// Lets every kind pass.
    pub const ALL: AllowMissing = AllowMissing {
        not_run: true,
        gone: true,
        not_compared: true,
        metric: true,
    };

    /// An allowance of `kinds`.
    pub fn of(kinds: &[MissingKind]) -> Self {
        let mut allow = AllowMissing::default();
        for kind in kinds {
            allow.insert(*kind);
        }
        allow
    }

    /// Lets `kind` pass too.
    pub fn insert(&mut self, kind: MissingKind) {
        match kind {
            MissingKind::NotRun => self.not_run = true,
            MissingKind::Gone => self.gone = true,
            MissingKind::NotCompared => self.not_compared = true,
            MissingKind::Metric => self.metric = true,
        }
    }

    /// Whether `kind` passes.
    pub fn allows(&self, kind: MissingKind) -> bool {
        match kind {
            MissingKind::NotRun => self.not_run,
            MissingKind::Gone => self.gone,
            MissingKind::NotCompared => self.not_compared,
            MissingKind::Metric => self.metric,
        }
    }

    /// Whether nothing is allowed.
    pub fn is_none(&self) -> bool {
        *self == AllowMissing::default()
    }

    /// The kinds allowed, in [`MissingKind::ALL`]'s order.
    pub fn kinds(&self) -> Vec<MissingKind> {
        MissingKind::ALL
            .into_iter()
            .filter(|&k| self.allows(k))
            .collect()
    }
}

impl fmt::Display for AllowMissing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let words: Vec<&str> = self.kinds().iter().map(|k| k.as_str()).collect();
        f.write_str(&words.join(","))
    }
}

/// A word `--allow-missing` does not know.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("unknown kind of missing evidence {0:?}: expected `not-run`, `gone`, `not-compared`, `metric` or `all`")]
pub struct UnknownMissingKind(pub String);

/// One word of `--allow-missing`: a kind, or `all`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AllowWord(pub AllowMissing);

impl AllowWord {
    /// Every word `--allow-missing` takes.
    pub const WORDS: [&'static str; 5] = ["not-run", "gone", "not-compared", "metric", "all"];
}

impl FromStr for AllowWord {
    type Err = UnknownMissingKind;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s == "all" {
            return Ok(AllowWord(AllowMissing::ALL));
        }
        MissingKind::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .map(|k| AllowWord(AllowMissing::of(&[k])))
            .ok_or_else(|| UnknownMissingKind(s.to_string()))
    }
}

impl AllowMissing {
    /// The union of `words` (`--allow-missing not-run,gone`).
    pub fn from_words(words: &[AllowWord]) -> Self {
        let mut allow = AllowMissing::default();
        for w in words {
            for k in w.0.kinds() {
                allow.insert(k);
            }
        }
        allow
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_parse_to_kinds_and_all_allows_every_kind() {
        let words: Vec<AllowWord> = ["not-run", "metric"]
            .iter()
            .map(|w| w.parse().unwrap())
            .collect();
        let allow = AllowMissing::from_words(&words);
        assert!(allow.allows(MissingKind::NotRun) && allow.allows(MissingKind::Metric));
        assert!(!allow.allows(MissingKind::Gone) && !allow.allows(MissingKind::NotCompared));
        assert_eq!(allow.to_string(), "not-run,metric");
        let all: AllowWord = "all".parse().unwrap();
        assert!(MissingKind::ALL.iter().all(|&k| all.0.allows(k)));
        assert!("new".parse::<AllowWord>().is_err());
        assert!(AllowMissing::default().is_none());
        for w in AllowWord::WORDS {
            assert!(w.parse::<AllowWord>().is_ok(), "{w}");
        }
    }
}
