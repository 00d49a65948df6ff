//! A run judged against a baseline: whether each benchmark can be compared at all
//! (`comparability`: device model, settings, clocks), then its time and each
//! other metric by the metric's own judge (`judge_metric`); and the set's outcomes
//! and counts.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::*;
use crate::compare::{
    compare_cpu_processes, compare_processes, CompareConfig, Comparison, Contention, Verdict,
};
use crate::kernels::{counter_changes, kernel_changes, CounterChange, KernelChange};
use crate::memory::{compare_memory, ProcessMemory};
use crate::peaks::{sample_shares, ProcessClocks};
use crate::processes::Bound;
use crate::record_analysis::RecordAnalysis;
use gpubench_record::failure::Failure;
use gpubench_record::measurement::RunMode;
use gpubench_record::measurement::TimeKind;
use gpubench_record::record::RawRecord;

/// How [`compare_with_baseline`] compares.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct BaselineCompareOptions {
    /// The statistical settings.
    pub config: CompareConfig,
    /// Compare even when the device models differ (the set records each mismatch).
    pub allow_device_mismatch: bool,
    /// Compare even when the two sides were measured with settings that move the
    /// figures ([`MeasurementConfig::differences_that_move_figures`]; the set records
    /// each mismatch); otherwise such a benchmark is not compared.
    ///
    /// [`MeasurementConfig::differences_that_move_figures`]:
    ///     gpubench_record::measurement::MeasurementConfig::differences_that_move_figures
    #[serde(default)]
    pub allow_settings_mismatch: bool,
    /// The metrics a gate names: one judged only on request
    /// ([`MetricSpec::by_default`] false) is judged when it is here.
    #[serde(skip)]
    pub gated: MetricSet,
}

/// A benchmark compared although its two sides were measured with settings that
/// move the figures, because [`BaselineCompareOptions::allow_settings_mismatch`] was
/// set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OtherSettings {
    /// The benchmark id.
    pub id: String,
    /// How the settings differ, in words.
    pub differences: Vec<String>,
}

/// A side ran power-capped when at least this share of its samples read the board's
/// power limit holding the clock down: its time (and energy) was set by power.
pub const POWER_CAPPED_SHARE: f64 = 0.5;

/// A benchmark whose two sides ran at clearly different SM clocks (mean over their
/// samples; see [`gpubench_record::telemetry::CLOCK_DIFFERENCE_FRACTION`]), or of which
/// one side ran power-capped and the other did not ([`POWER_CAPPED_SHARE`]): a change
/// of its time or energy may be the clock's or the power limit's, not the code's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OtherClocks {
    /// The benchmark id.
    pub id: String,
    /// The baseline's mean SM clock, MHz.
    pub baseline_mhz: f64,
    /// This run's mean SM clock, MHz.
    pub current_mhz: f64,
    /// The share of each side's samples that ran power-capped, when one side ran
    /// power-capped and the other did not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_capped: Option<PowerCappedSides>,
}

/// The share of each side's samples that ran power-capped (0.97: 97%).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PowerCappedSides {
    /// The baseline's share.
    pub baseline_share: f64,
    /// This run's share.
    pub current_share: f64,
}

impl OtherClocks {
    /// In words: `the GPU ran at 1410 MHz here, 1980 MHz in the baseline (mean SM
    /// clock)`, then, when one side ran power-capped, `; power-capped in 97% of
    /// samples here, 0% in the baseline`.
    pub fn describe(&self) -> String {
        let mut text = format!(
            "the GPU ran at {:.0} MHz here, {:.0} MHz in the baseline (mean SM clock)",
            self.current_mhz, self.baseline_mhz
        );
        if let Some(p) = self.power_capped {
            text.push_str(&format!(
                "; power-capped in {:.0}% of samples here, {:.0}% in the baseline",
                p.current_share * 100.0,
                p.baseline_share * 100.0
            ));
        }
        text
    }
}

/// A benchmark measured on another device model than its baseline, compared because
/// [`BaselineCompareOptions::allow_device_mismatch`] was set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CrossDevice {
    /// The benchmark id.
    pub id: String,
    /// The baseline's device model.
    pub baseline_device: String,
    /// This run's device model.
    pub current_device: String,
}

/// What became of one benchmark present in both the run and the baseline.
///
/// In JSON, tagged by `status`; a compared one holds `kind` and `comparison` (time),
/// then each other metric's result under its name (`kernel`, `counters`, `memory`,
/// …, with `kernel_changes` after the counters), then `missing_metrics`: the gaps,
/// in [`Metric::ALL`]'s order.
#[derive(Debug, Clone, PartialEq)]
pub enum ComparisonOutcome {
    /// Compared.
    Compared {
        /// The timer compared: device when both sides have it, else wall.
        kind: TimeKind,
        /// The result on time. Every compared benchmark has one: it is what its
        /// outcome is counted by ([`VerdictCounts`]).
        comparison: Comparison,
        /// Each other metric judged, or missing on a side, in [`Metric::ALL`]'s
        /// order.
        metrics: Vec<MetricVerdict>,
        /// The kernels that are new, gone, or moved, when both sides have a table:
        /// evidence of what changed, with no verdict of its own.
        kernel_changes: Vec<KernelChange>,
    },
    /// The benchmark failed in this run.
    Failed {
        /// Why.
        failure: Failure,
    },
    /// It could not be compared (a smoke run, no samples, unusable samples).
    NotCompared {
        /// Why, as a lower-case fragment.
        reason: String,
    },
}

/// A metric's gap as it is written in `missing_metrics`.
#[derive(Serialize, Deserialize)]
struct GapJson<R> {
    metric: Metric,
    missing_on: MissingOn,
    reason: R,
}

impl Serialize for ComparisonOutcome {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        match self {
            ComparisonOutcome::Compared {
                kind,
                comparison,
                metrics,
                kernel_changes,
            } => {
                map.serialize_entry("status", "compared")?;
                map.serialize_entry("kind", kind)?;
                map.serialize_entry("comparison", comparison)?;
                for m in Metric::besides_time() {
                    if let Some(judged) = self.judged(m) {
                        map.serialize_entry(m.as_str(), judged)?;
                    }
                    if m == Metric::Counters && !kernel_changes.is_empty() {
                        map.serialize_entry("kernel_changes", kernel_changes)?;
                    }
                }
                let gaps: Vec<GapJson<&str>> = metrics
                    .iter()
                    .filter_map(|v| {
                        let gap = v.gap.as_ref()?;
                        Some(GapJson {
                            metric: v.metric,
                            missing_on: gap.missing_on,
                            reason: gap.reason.as_str(),
                        })
                    })
                    .collect();
                if !gaps.is_empty() {
                    map.serialize_entry("missing_metrics", &gaps)?;
                }
            }
            ComparisonOutcome::Failed { failure } => {
                map.serialize_entry("status", "failed")?;
                map.serialize_entry("failure", failure)?;
            }
            ComparisonOutcome::NotCompared { reason } => {
                map.serialize_entry("status", "not_compared")?;
                map.serialize_entry("reason", reason)?;
            }
        }
        map.end()
    }
}

/// [`ComparisonOutcome`] as stored: the metrics' results are fields of their own.
#[derive(Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
enum StoredOutcome {
    Compared {
        kind: TimeKind,
        comparison: Comparison,
        #[serde(default)]
        kernel_changes: Vec<KernelChange>,
        #[serde(default)]
        missing_metrics: Vec<GapJson<String>>,
        #[serde(flatten)]
        fields: BTreeMap<String, serde_json::Value>,
    },
    Failed {
        failure: Failure,
    },
    NotCompared {
        reason: String,
    },
}

impl<'de> Deserialize<'de> for ComparisonOutcome {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(match StoredOutcome::deserialize(deserializer)? {
            StoredOutcome::Compared {
                kind,
                comparison,
                kernel_changes,
                missing_metrics,
                mut fields,
            } => {
                let mut metrics = Vec::new();
                for metric in Metric::besides_time() {
                    let judged = match fields.remove(metric.as_str()) {
                        Some(value) => Some(
                            Judged::from_json(metric, value).map_err(serde::de::Error::custom)?,
                        ),
                        None => None,
                    };
                    let gap = missing_metrics
                        .iter()
                        .find(|g| g.metric == metric)
                        .map(|g| MetricGap::new(g.missing_on, g.reason.clone()));
                    if judged.is_some() || gap.is_some() {
                        metrics.push(MetricVerdict {
                            metric,
                            judged,
                            gap,
                        });
                    }
                }
                ComparisonOutcome::Compared {
                    kind,
                    comparison,
                    metrics,
                    kernel_changes,
                }
            }
            StoredOutcome::Failed { failure } => ComparisonOutcome::Failed { failure },
            StoredOutcome::NotCompared { reason } => ComparisonOutcome::NotCompared { reason },
        })
    }
}

/// One benchmark's comparison with its baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchmarkComparison {
    /// The benchmark id.
    pub id: String,
    /// What became of it.
    pub outcome: ComparisonOutcome,
}

impl BenchmarkComparison {
    /// The verdict on time, when compared.
    pub fn verdict(&self) -> Option<Verdict> {
        self.verdict_of(Metric::Time)
    }

    /// The verdict on `metric`, when it was compared.
    pub fn verdict_of(&self, metric: Metric) -> Option<Verdict> {
        self.outcome.verdict_of(metric)
    }

    /// What became of `metric` besides time, when compared.
    pub fn metric(&self, metric: Metric) -> Option<&MetricVerdict> {
        self.outcome.metric(metric)
    }
}

impl ComparisonOutcome {
    /// The result on time, when compared.
    pub fn time(&self) -> Option<&Comparison> {
        match self {
            ComparisonOutcome::Compared { comparison, .. } => Some(comparison),
            _ => None,
        }
    }

    /// What became of `metric` (besides time, which is [`ComparisonOutcome::time`]),
    /// when compared.
    pub fn metric(&self, metric: Metric) -> Option<&MetricVerdict> {
        match self {
            ComparisonOutcome::Compared { metrics, .. } => {
                metrics.iter().find(|v| v.metric == metric)
            }
            _ => None,
        }
    }

    /// The result on `metric` besides time, when both sides had it.
    pub fn judged(&self, metric: Metric) -> Option<&Judged> {
        self.metric(metric)?.judged.as_ref()
    }

    /// The verdict on `metric`, when it was compared ([`Judged::verdict`]).
    pub fn verdict_of(&self, metric: Metric) -> Option<Verdict> {
        match metric {
            Metric::Time => self.time().map(|c| c.verdict),
            _ => self.judged(metric).map(Judged::verdict),
        }
    }

    /// The kernels that are new, gone or moved (empty when not compared).
    pub fn kernel_changes(&self) -> &[KernelChange] {
        match self {
            ComparisonOutcome::Compared { kernel_changes, .. } => kernel_changes,
            _ => &[],
        }
    }
}

/// Regressed when a count went up, improved when some went down and none up, else no
/// change.
pub fn counters_verdict(changes: &[CounterChange]) -> Verdict {
    if changes.iter().any(CounterChange::is_increase) {
        Verdict::Regressed
    } else if changes.is_empty() {
        Verdict::NoChange
    } else {
        Verdict::Improved
    }
}

/// How many benchmarks of a set ended each way.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerdictCounts {
    /// Compared and improved.
    pub improved: usize,
    /// Compared and regressed.
    pub regressed: usize,
    /// Compared, no change.
    pub no_change: usize,
    /// Compared, too noisy to tell.
    pub ambiguous: usize,
    /// Failed in this run.
    pub failed: usize,
    /// Present on both sides but not compared.
    pub not_compared: usize,
}

/// A run compared with a baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComparisonSet {
    /// Benchmarks present on both sides, in the run's order.
    pub comparisons: Vec<BenchmarkComparison>,
    /// Ids run now that the baseline lacks (new benchmarks), in the run's order.
    pub missing_in_baseline: Vec<String>,
    /// Ids in the baseline that were not run now, sorted.
    pub missing_in_current: Vec<String>,
    /// Benchmarks compared across device models by request.
    pub cross_device: Vec<CrossDevice>,
    /// Benchmarks compared across settings that move the figures, by request.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub other_settings: Vec<OtherSettings>,
    /// Benchmarks compared whose two sides ran at clearly different SM clocks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub other_clocks: Vec<OtherClocks>,
}

impl ComparisonSet {
    /// The evidence the gate on `gate` lacks among the benchmarks on both sides: each
    /// one not compared, and each gated metric a compared one lacks on a side (or on
    /// both, when the gate names the metric), in the run's order.
    pub fn missing(&self, gate: &Gate) -> Vec<Missing> {
        let mut out = Vec::new();
        for b in &self.comparisons {
            match &b.outcome {
                ComparisonOutcome::NotCompared { reason } => {
                    out.push(Missing::benchmark(&b.id, MissingKind::NotCompared, reason));
                }
                ComparisonOutcome::Compared { metrics, .. } => {
                    out.extend(metrics.iter().filter_map(|v| {
                        let gap = v.gap.as_ref()?;
                        (gate.contains(v.metric) && gap.gated(gate.explicit)).then(|| Missing {
                            id: b.id.clone(),
                            kind: MissingKind::Metric,
                            metric: Some(v.metric),
                            reason: gap.reason.clone(),
                        })
                    }))
                }
                ComparisonOutcome::Failed { .. } => {}
            }
        }
        out
    }

    /// How many benchmarks ended each way.
    pub fn counts(&self) -> VerdictCounts {
        let mut c = VerdictCounts::default();
        for b in &self.comparisons {
            match &b.outcome {
                ComparisonOutcome::Compared { comparison, .. } => match comparison.verdict {
                    Verdict::Improved => c.improved += 1,
                    Verdict::Regressed => c.regressed += 1,
                    Verdict::NoChange => c.no_change += 1,
                    Verdict::Ambiguous => c.ambiguous += 1,
                },
                ComparisonOutcome::Failed { .. } => c.failed += 1,
                ComparisonOutcome::NotCompared { .. } => c.not_compared += 1,
            }
        }
        c
    }
}

/// Compares current records with a baseline's entries, matched by id. Ids on one side
/// only are listed, not errors. A benchmark whose device model
/// (`fingerprint.device.name`) differs from its baseline's is an error unless
/// [`BaselineCompareOptions::allow_device_mismatch`] is set.
pub fn compare_with_baseline(
    current: &[RawRecord],
    baseline: &[BaselineEntry],
    options: &BaselineCompareOptions,
) -> Result<ComparisonSet, BaselineError> {
    options.config.validate()?;
    let by_id: HashMap<&str, &BaselineEntry> =
        baseline.iter().map(|e| (e.id.as_str(), e)).collect();
    let current_ids: HashSet<&str> = current.iter().map(|r| r.id.as_str()).collect();
    let mut set = ComparisonSet {
        comparisons: Vec::new(),
        missing_in_baseline: Vec::new(),
        missing_in_current: Vec::new(),
        cross_device: Vec::new(),
        other_settings: Vec::new(),
        other_clocks: Vec::new(),
    };
    for record in current {
        let Some(entry) = by_id.get(record.id.as_str()) else {
            set.missing_in_baseline.push(record.id.clone());
            continue;
        };
        let outcome = match comparability(record, entry, options, &mut set)? {
            Comparability::Comparable(sides) => judge(&sides, options),
            Comparability::Not(outcome) => outcome,
        };
        set.comparisons.push(BenchmarkComparison {
            id: record.id.clone(),
            outcome,
        });
    }
    set.missing_in_current = baseline
        .iter()
        .filter(|e| !current_ids.contains(e.id.as_str()))
        .map(|e| e.id.clone())
        .collect();
    set.missing_in_current.sort();
    Ok(set)
}

/// Whether a record and its baseline entry can be compared.
enum Comparability<'a> {
    /// They can, so each metric is judged.
    Comparable(Sides<'a>),
    /// They cannot: the benchmark's outcome (failed, not compared).
    Not(ComparisonOutcome),
}

/// A record and its baseline entry found comparable, with how their time is
/// compared.
struct Sides<'a> {
    record: &'a RawRecord,
    entry: &'a BaselineEntry,
    /// The timer both sides have: device, else wall.
    kind: TimeKind,
    /// The rule their time is judged by.
    bound: Bound,
    /// Whether a side's host could not serve its threads.
    contention: Contention,
}

/// Whether `record` can be compared with `entry` at all: it passed and measured
/// something, on the same device model (or across models by request), with
/// settings that do not move the figures (or other ones by request); and how: the
/// timer both have, the rule of their time, their hosts' contention. What the set
/// should know of the pair (another device, other settings, other clocks) goes into
/// `set`.
fn comparability<'a>(
    record: &'a RawRecord,
    entry: &'a BaselineEntry,
    options: &BaselineCompareOptions,
    set: &mut ComparisonSet,
) -> Result<Comparability<'a>, BaselineError> {
    let not = |reason: &str| Ok(Comparability::Not(not_compared(reason)));
    match (record.failure(), record.first_measurement()) {
        (Some(failure), _) => {
            return Ok(Comparability::Not(ComparisonOutcome::Failed {
                failure: failure.clone(),
            }))
        }
        (None, None) => return not("the run has no measurement"),
        (None, Some(_)) if record.config.mode == RunMode::Smoke => {
            return not("a smoke run measures nothing")
        }
        (None, Some(_)) => {}
    }
    let (was, now) = (
        &entry.fingerprint.device.name,
        &record.fingerprint.device.name,
    );
    if was != now {
        if !options.allow_device_mismatch {
            return Err(BaselineError::DeviceMismatch {
                id: record.id.clone(),
                baseline_device: was.clone(),
                current_device: now.clone(),
            });
        }
        set.cross_device.push(CrossDevice {
            id: record.id.clone(),
            baseline_device: was.clone(),
            current_device: now.clone(),
        });
    }
    let differences = entry
        .config
        .as_ref()
        .map(|was| record.config.differences_that_move_figures(was))
        .unwrap_or_default();
    if !differences.is_empty() {
        if !options.allow_settings_mismatch {
            return not(&format!(
                "measured with other settings ({}), which move the figures: \
                 measure both sides alike, or --allow-settings-mismatch",
                differences.join("; ")
            ));
        }
        set.other_settings.push(OtherSettings {
            id: record.id.clone(),
            differences,
        });
    }
    if let (Some(was), Some(now)) = (entry.mean_sm_clock_mhz(), record.mean_sm_clock_mhz()) {
        let power_capped = match (entry.power_capped_share(), power_capped_share(record)) {
            (Some(b), Some(c)) if (b >= POWER_CAPPED_SHARE) != (c >= POWER_CAPPED_SHARE) => {
                Some(PowerCappedSides {
                    baseline_share: b,
                    current_share: c,
                })
            }
            _ => None,
        };
        if gpubench_record::telemetry::clearly_different_clocks(was, now) || power_capped.is_some()
        {
            set.other_clocks.push(OtherClocks {
                id: record.id.clone(),
                baseline_mhz: was,
                current_mhz: now,
                power_capped,
            });
        }
    }
    let kind = match (record.primary_kind(), entry.primary_kind()) {
        (TimeKind::Device, TimeKind::Device) => TimeKind::Device,
        _ => TimeKind::Wall,
    };
    // The stricter rule when the sides disagree: host-bound on either side makes it
    // host-bound; the CPU device's own rule needs both sides on the CPU (see
    // `compare`, "The CPU device").
    let bound = match (record.bound(), entry.effective_bound()) {
        (Bound::Cpu, Some(Bound::Cpu)) => Bound::Cpu,
        (Bound::Device, Some(Bound::Device) | None) => Bound::Device,
        _ => Bound::Host,
    };
    let contention = Contention {
        baseline: entry.contended,
        current: record.contended(),
    };
    Ok(Comparability::Comparable(Sides {
        record,
        entry,
        kind,
        bound,
        contention,
    }))
}

/// Judges two comparable sides: their time, then each other metric judged by default
/// or gated ([`BaselineCompareOptions::gated`]), then the kernel table.
fn judge(sides: &Sides, options: &BaselineCompareOptions) -> ComparisonOutcome {
    let (record, entry, config) = (sides.record, sides.entry, &options.config);
    let was_times = entry.groups(sides.kind);
    let now_times = record.groups(sides.kind);
    let compared = match sides.bound {
        Bound::Cpu => compare_cpu_processes(&was_times, &now_times, sides.contention, config),
        bound => compare_processes(&was_times, &now_times, bound, config),
    };
    let comparison = match compared {
        Ok(comparison) => comparison,
        Err(e) => return not_compared(&e.to_string()),
    };
    let metrics = Metric::besides_time()
        .filter(|&m| m.spec().by_default || options.gated.contains(m))
        .filter_map(|m| judge_metric(m, sides, config))
        .collect();
    let now_table = record.kernel_table();
    let kernel_changes = if entry.kernels.is_empty() || now_table.is_empty() {
        Vec::new()
    } else {
        kernel_changes(&entry.kernels, &now_table)
    };
    ComparisonOutcome::Compared {
        kind: sides.kind,
        comparison,
        metrics,
        kernel_changes,
    }
}

/// The judge of each metric besides time: its result where both sides have it, and a
/// gap, with why, where a side lacks it.
fn judge_metric(metric: Metric, sides: &Sides, config: &CompareConfig) -> Option<MetricVerdict> {
    match metric {
        Metric::Time => None,
        Metric::Kernel => Some(judge_kernel(sides, config)),
        Metric::Counters => Some(judge_counters(sides)),
        Metric::Memory => Some(judge_memory(sides)),
        Metric::Host => Some(judge_host(sides, config)),
        Metric::Energy => Some(judge_energy(sides, config)),
        Metric::Peak => Some(judge_peak(sides, config)),
    }
}

/// Why the run has no energy per call, as its harness said.
fn energy_unavailable(record: &RawRecord) -> String {
    record
        .measurements()
        .find_map(|m| m.energy_unavailable.clone())
        .unwrap_or_else(|| "a process measured no energy window".to_string())
}

/// Compares energy per call, each side a list of processes holding their windows'
/// joules per call, of a benchmark bound as `bound`: device-bound work on
/// [`CompareConfig::energy_noise_threshold`] (or the noise threshold, when larger),
/// other work on the host rule ([`compare_processes`]).
pub fn compare_energy(
    baseline: &[Vec<f64>],
    current: &[Vec<f64>],
    bound: Bound,
    config: &CompareConfig,
) -> Result<Comparison, crate::compare::CompareError> {
    let bound = match bound {
        Bound::Device => Bound::Device,
        Bound::Host | Bound::Cpu => Bound::Host,
    };
    let config = CompareConfig {
        noise_threshold: config.noise_threshold.max(config.energy_noise_threshold),
        ..*config
    };
    compare_processes(baseline, current, bound, &config)
}

/// Energy per call: each process's windows' joules per call, judged process by
/// process like time on [`CompareConfig::energy_noise_threshold`]. Host-bound work's
/// energy holds the GPU's power while it waits for the host, which moves with the
/// host's dispatch speed, so it is judged on the host rule.
fn judge_energy(sides: &Sides, config: &CompareConfig) -> MetricVerdict {
    let record = sides.record;
    let gap = |missing_on, reason: String| {
        MetricVerdict::missing(Metric::Energy, MetricGap::new(missing_on, reason))
    };
    match (sides.entry.energy_groups(), energy_groups(record)) {
        (Some(was), Some(now)) => match compare_energy(&was, &now, sides.bound, config) {
            Ok(c) => MetricVerdict::judged(Metric::Energy, Judged::Timed(Box::new(c))),
            Err(e) => gap(
                MissingOn::Current,
                format!("its energy per call could not be compared: {e}"),
            ),
        },
        (Some(_), None) => gap(
            MissingOn::Current,
            format!("this run has no energy: {}", energy_unavailable(record)),
        ),
        (None, Some(_)) => gap(
            MissingOn::Baseline,
            "the baseline has no energy: saved where it was not measured (a CPU, a GPU \
             without an energy counter, or a gpubench from before energy verdicts): save \
             the baseline again where it is measured"
                .to_string(),
        ),
        (None, None) => gap(
            MissingOn::Both,
            format!(
                "neither side measured energy: {}",
                energy_unavailable(record)
            ),
        ),
    }
}

/// The share of the peak at the clock each process ran, process by process, on the
/// rule of the benchmark's time (its timer and bound): a change in share that time
/// alone hides when the clock moved. A higher share is better, so the verdict of
/// [`compare_processes`] (made for times) is turned round: a drop is regressed.
fn judge_peak(sides: &Sides, config: &CompareConfig) -> MetricVerdict {
    let (record, entry) = (sides.record, sides.entry);
    let was_times = entry.groups(sides.kind);
    let was_clocks: Vec<ProcessClocks> = entry
        .processes
        .iter()
        .zip(&was_times)
        .map(|(p, times)| ProcessClocks {
            ns_per_iter: times,
            sm_clock_mhz: p.sm_clock_mhz.as_deref(),
            memory_clock_mhz: p.memory_clock_mhz.map(f64::from),
        })
        .collect();
    let now_processes: Vec<_> = record
        .processes
        .iter()
        .filter_map(|p| Some((p, p.measurement.as_ref()?)))
        .collect();
    let now_times: Vec<Vec<f64>> = now_processes
        .iter()
        .map(|(_, m)| m.per_iter(sides.kind))
        .collect();
    let now_sm: Vec<Option<Vec<u32>>> = now_processes
        .iter()
        .map(|(_, m)| m.sm_clocks_mhz())
        .collect();
    let now_clocks: Vec<ProcessClocks> = now_processes
        .iter()
        .zip(&now_times)
        .zip(&now_sm)
        .map(|(((p, _), times), sm)| ProcessClocks {
            ns_per_iter: times,
            sm_clock_mhz: sm.as_deref(),
            memory_clock_mhz: crate::peaks::process_memory_clock_mhz(p),
        })
        .collect();
    let was = sample_shares(
        &entry.fingerprint.device.name,
        entry.throughput,
        &record.id,
        &was_clocks,
    );
    let now = sample_shares(
        &record.fingerprint.device.name,
        record.first_measurement().and_then(|m| m.throughput),
        &record.id,
        &now_clocks,
    );
    let gap = |missing_on, reason: String| {
        MetricVerdict::missing(Metric::Peak, MetricGap::new(missing_on, reason))
    };
    match (was, now) {
        (Ok(was), Ok(now)) => match compare_processes(&was, &now, sides.bound, config) {
            Ok(c) => {
                MetricVerdict::judged(Metric::Peak, Judged::Timed(Box::new(drop_regresses(c))))
            }
            Err(e) => gap(
                MissingOn::Current,
                format!("its shares of peak could not be compared: {e}"),
            ),
        },
        (Err(_), Ok(_)) if entry.throughput.is_none() => gap(
            MissingOn::Baseline,
            "the baseline has no FLOPs or bytes per call: the benchmark declared none \
             then, or a gpubench from before shares of peak were judged saved it (save \
             the baseline again)"
                .into(),
        ),
        (Err(why), Ok(_)) => gap(
            MissingOn::Baseline,
            format!("the baseline has no share of peak at its clock: {why}"),
        ),
        (Ok(_), Err(why)) => gap(
            MissingOn::Current,
            format!("this run has no share of peak at its clock: {why}"),
        ),
        (Err(_), Err(why)) => gap(
            MissingOn::Both,
            format!("neither side has a share of peak at its clock: {why}"),
        ),
    }
}

/// A comparison of values where higher is better, told as verdicts are: a rise
/// improved, a drop regressed. The change and its interval stay as measured
/// (negative: it dropped).
fn drop_regresses(mut c: Comparison) -> Comparison {
    c.verdict = match c.verdict {
        Verdict::Improved => Verdict::Regressed,
        Verdict::Regressed => Verdict::Improved,
        v => v,
    };
    c
}

/// Host-dispatch time, which every process records, judged like host-bound time:
/// on the host noise threshold, from enough processes a side.
fn judge_host(sides: &Sides, config: &CompareConfig) -> MetricVerdict {
    let was = sides.entry.groups(TimeKind::Host);
    let now = sides.record.groups(TimeKind::Host);
    match compare_processes(&was, &now, Bound::Host, config) {
        Ok(c) => MetricVerdict::judged(Metric::Host, Judged::Timed(Box::new(c))),
        Err(e) => MetricVerdict::missing(
            Metric::Host,
            MetricGap::new(
                MissingOn::Current,
                format!("its host times could not be compared: {e}"),
            ),
        ),
    }
}

/// What a baseline without a metric was, for the reason of a gap.
const BASELINE_WITHOUT: &str = "saved where it was not measured (a CPU, a build without the \
     CUDA headers, or an older gpubench): save the baseline again where it is measured";

/// Why the run has no kernel time (and so no counters), as its harness said.
fn kernel_unavailable(record: &RawRecord) -> String {
    record
        .measurements()
        .find_map(|m| m.kernel_unavailable.clone())
        .unwrap_or_else(|| "this run did not measure it".to_string())
}

/// Kernel time is the GPU's own work, so it is judged like device-bound time.
fn judge_kernel(sides: &Sides, config: &CompareConfig) -> MetricVerdict {
    let (record, entry) = (sides.record, sides.entry);
    let now_kernel = record.groups(TimeKind::Kernel);
    let was_kernel = entry.groups(TimeKind::Kernel);
    let measured: Vec<_> = record.measurements().collect();
    let now_timed = !measured.is_empty() && measured.iter().all(|m| m.kernel.is_some());
    let was_timed = !was_kernel.is_empty() && was_kernel.iter().all(|g| !g.is_empty());
    let gap = |missing_on, reason: String| {
        MetricVerdict::missing(Metric::Kernel, MetricGap::new(missing_on, reason))
    };
    match (was_timed, now_timed) {
        (true, true) => match compare_processes(&was_kernel, &now_kernel, Bound::Device, config) {
            Ok(k) => MetricVerdict::judged(Metric::Kernel, Judged::Timed(Box::new(k))),
            Err(e) => gap(
                MissingOn::Current,
                format!("its kernel times could not be compared: {e}"),
            ),
        },
        (true, false) => gap(
            MissingOn::Current,
            format!(
                "this run has no kernel time: {}",
                kernel_unavailable(record)
            ),
        ),
        (false, true) => gap(
            MissingOn::Baseline,
            format!("the baseline has no kernel time: {BASELINE_WITHOUT}"),
        ),
        (false, false) => gap(
            MissingOn::Both,
            format!(
                "neither side measured kernel time: {}",
                kernel_unavailable(record)
            ),
        ),
    }
}

/// The counts per call: any change is a verdict.
fn judge_counters(sides: &Sides) -> MetricVerdict {
    let (record, entry) = (sides.record, sides.entry);
    let gap = |missing_on, reason: String| {
        MetricVerdict::missing(Metric::Counters, MetricGap::new(missing_on, reason))
    };
    match (&entry.counters, record.counters()) {
        (Some(was), Some(now)) => MetricVerdict::judged(
            Metric::Counters,
            Judged::Counted(counter_changes(was, &now)),
        ),
        (Some(_), None) => gap(
            MissingOn::Current,
            format!("this run has no counters: {}", kernel_unavailable(record)),
        ),
        (None, Some(_)) => gap(
            MissingOn::Baseline,
            format!("the baseline has no counters: {BASELINE_WITHOUT}"),
        ),
        (None, None) => gap(
            MissingOn::Both,
            format!("neither side counted: {}", kernel_unavailable(record)),
        ),
    }
}

/// Memory of the run against the baseline's, when both sides read the allocator; a
/// side without it (the CPU, an older file) is a gap, and so is growth per call one
/// side lacks while both have the peaks.
fn judge_memory(sides: &Sides) -> MetricVerdict {
    let (record, entry) = (sides.record, sides.entry);
    let now: Option<Vec<ProcessMemory>> = record.measurements().map(ProcessMemory::of).collect();
    let now = now.filter(|n| !n.is_empty());
    let was = entry.memory();
    let gap = |missing_on, reason: String| Some(MetricGap::new(missing_on, reason));
    const NO_ALLOCATOR: &str = "its device has no allocator to read (the CPU)";
    let (judged, gap) = match (was, now) {
        (Some(was), Some(now)) => {
            let every_growth = |side: &[ProcessMemory]| side.iter().all(|p| p.growth.is_some());
            let growth_gap = match (every_growth(&was), every_growth(&now)) {
                (true, false) => gap(
                    MissingOn::Current,
                    "this run has no growth per call: a process did not measure it".into(),
                ),
                (false, true) => gap(
                    MissingOn::Baseline,
                    "the baseline has no growth per call: saved by a gpubench from before \
                     it was measured; save the baseline again"
                        .into(),
                ),
                _ => None,
            };
            (compare_memory(&was, &now).map(Judged::Memory), growth_gap)
        }
        (Some(_), None) => (
            None,
            gap(
                MissingOn::Current,
                format!("this run has no memory figures: {NO_ALLOCATOR}"),
            ),
        ),
        (None, Some(_)) => (
            None,
            gap(
                MissingOn::Baseline,
                format!("the baseline has no memory figures: {BASELINE_WITHOUT}"),
            ),
        ),
        (None, None) => (
            None,
            gap(
                MissingOn::Both,
                format!("neither side measured memory: {NO_ALLOCATOR}"),
            ),
        ),
    };
    MetricVerdict {
        metric: Metric::Memory,
        judged,
        gap,
    }
}

pub(super) fn not_compared(reason: &str) -> ComparisonOutcome {
    ComparisonOutcome::NotCompared {
        reason: reason.to_string(),
    }
}
