//! A run judged against a baseline: per benchmark (time, kernel time, counters,
//! memory),
//! and the set's outcomes and counts.

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};

use super::*;
use crate::compare::{
    compare_cpu_processes, compare_processes, CompareConfig, Comparison, Contention, Verdict,
};
use crate::kernels::{counter_changes, kernel_changes, CounterChange, KernelChange};
use crate::memory::{compare_memory, MemoryComparison, ProcessMemory};
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

/// A benchmark whose two sides ran at clearly different SM clocks (mean over their
/// samples; see [`gpubench_record::telemetry::CLOCK_DIFFERENCE_FRACTION`]): a change may be the
/// clock's, not the code's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OtherClocks {
    /// The benchmark id.
    pub id: String,
    /// The baseline's mean SM clock, MHz.
    pub baseline_mhz: f64,
    /// This run's mean SM clock, MHz.
    pub current_mhz: f64,
}

impl OtherClocks {
    /// In words: `1410 MHz here, 1980 MHz in the baseline`.
    pub fn describe(&self) -> String {
        format!(
            "the GPU ran at {:.0} MHz here, {:.0} MHz in the baseline (mean SM clock)",
            self.current_mhz, self.baseline_mhz
        )
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum ComparisonOutcome {
    /// Compared.
    Compared {
        /// The timer compared: device when both sides have it, else wall.
        kind: TimeKind,
        /// The result.
        comparison: Comparison,
        /// Kernel time against the baseline's, when both sides measured it (judged
        /// like device-bound work: it is the GPU's own).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        kernel: Option<Box<Comparison>>,
        /// The counters per call that differ (empty: all equal), when both sides
        /// counted.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        counters: Option<Vec<CounterChange>>,
        /// The kernels that are new, gone, or moved, when both sides have a table.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        kernel_changes: Vec<KernelChange>,
        /// Peak memory and growth per call against the baseline's, when both sides
        /// read the device's allocator ([`crate::memory`]).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        memory: Option<MemoryComparison>,
        /// Kernel time, counters and memory where a side lacks them, and why: the gate
        /// counts them as missing evidence ([`ComparisonSet::missing`]).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        missing_metrics: Vec<MissingMetric>,
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
}

impl ComparisonOutcome {
    /// The verdict on `metric`, when it was compared: for the counters, regressed when
    /// any count per call went up, improved when some went down and none up; for
    /// memory, the worst of its figures ([`MemoryComparison::verdict`]).
    pub fn verdict_of(&self, metric: Metric) -> Option<Verdict> {
        let ComparisonOutcome::Compared {
            comparison,
            kernel,
            counters,
            memory,
            ..
        } = self
        else {
            return None;
        };
        match metric {
            Metric::Time => Some(comparison.verdict),
            Metric::Kernel => kernel.as_ref().map(|k| k.verdict),
            Metric::Counters => counters.as_ref().map(|c| counters_verdict(c)),
            Metric::Memory => memory.as_ref().map(MemoryComparison::verdict),
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
                ComparisonOutcome::Compared {
                    missing_metrics, ..
                } => out.extend(
                    missing_metrics
                        .iter()
                        .filter(|m| gate.contains(m.metric) && m.gated(gate.explicit))
                        .map(|m| Missing {
                            id: b.id.clone(),
                            kind: MissingKind::Metric,
                            metric: Some(m.metric),
                            reason: m.reason.clone(),
                        }),
                ),
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
        let outcome = match (record.failure(), record.first_measurement()) {
            (Some(failure), _) => ComparisonOutcome::Failed {
                failure: failure.clone(),
            },
            (None, None) => not_compared("the run has no measurement"),
            (None, Some(_)) if record.config.mode == RunMode::Smoke => {
                not_compared("a smoke run measures nothing")
            }
            (None, Some(_)) => {
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
                        set.comparisons.push(BenchmarkComparison {
                            id: record.id.clone(),
                            outcome: not_compared(&format!(
                                "measured with other settings ({}), which move the figures: \
                                 measure both sides alike, or --allow-settings-mismatch",
                                differences.join("; ")
                            )),
                        });
                        continue;
                    }
                    set.other_settings.push(OtherSettings {
                        id: record.id.clone(),
                        differences,
                    });
                }
                let kind = match (record.primary_kind(), entry.primary_kind()) {
                    (TimeKind::Device, TimeKind::Device) => TimeKind::Device,
                    _ => TimeKind::Wall,
                };
                let now_times = record.groups(kind);
                let was_times = entry.groups(kind);
                // The stricter rule when the sides disagree: host-bound on either
                // side makes it host-bound; the CPU device's own rule needs both
                // sides on the CPU (see `compare`, "The CPU device").
                let bound = match (record.bound(), entry.effective_bound()) {
                    (Bound::Cpu, Some(Bound::Cpu)) => Bound::Cpu,
                    (Bound::Device, Some(Bound::Device) | None) => Bound::Device,
                    _ => Bound::Host,
                };
                if let (Some(was), Some(now)) =
                    (entry.mean_sm_clock_mhz(), record.mean_sm_clock_mhz())
                {
                    if gpubench_record::telemetry::clearly_different_clocks(was, now) {
                        set.other_clocks.push(OtherClocks {
                            id: record.id.clone(),
                            baseline_mhz: was,
                            current_mhz: now,
                        });
                    }
                }
                let compared = match bound {
                    Bound::Cpu => compare_cpu_processes(
                        &was_times,
                        &now_times,
                        Contention {
                            baseline: entry.contended,
                            current: record.contended(),
                        },
                        &options.config,
                    ),
                    _ => compare_processes(&was_times, &now_times, bound, &options.config),
                };
                match compared {
                    Ok(comparison) => {
                        let mut gpu = compare_kernels(record, entry, &options.config);
                        let memory = compare_memory_of(record, entry, &mut gpu.missing);
                        ComparisonOutcome::Compared {
                            kind,
                            comparison,
                            kernel: gpu.kernel,
                            counters: gpu.counters,
                            kernel_changes: gpu.kernel_changes,
                            memory,
                            missing_metrics: gpu.missing,
                        }
                    }
                    Err(e) => not_compared(&e.to_string()),
                }
            }
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

/// What the GPU did, compared: kernel time, counters and the kernel table, and the
/// metrics a side lacks.
struct GpuComparison {
    kernel: Option<Box<Comparison>>,
    counters: Option<Vec<CounterChange>>,
    kernel_changes: Vec<KernelChange>,
    missing: Vec<MissingMetric>,
}

/// What a baseline without a metric was, for the reason of a gap.
const BASELINE_WITHOUT: &str = "saved where it was not measured (a CPU, a build without the \
     CUDA headers, or an older gpubench): save the baseline again where it is measured";

/// Kernel time, counters and the kernel table of `record` against `entry`'s, each when
/// both sides have it; a side without one is a gap, with why.
fn compare_kernels(
    record: &RawRecord,
    entry: &BaselineEntry,
    config: &CompareConfig,
) -> GpuComparison {
    let measured: Vec<_> = record.measurements().collect();
    let now_kernel = record.groups(TimeKind::Kernel);
    let was_kernel = entry.groups(TimeKind::Kernel);
    let now_timed = !measured.is_empty() && measured.iter().all(|m| m.kernel.is_some());
    let was_timed = !was_kernel.is_empty() && was_kernel.iter().all(|g| !g.is_empty());
    // Why this side has no kernel time (and so no counters), as its harness said.
    let unavailable = measured
        .iter()
        .find_map(|m| m.kernel_unavailable.clone())
        .unwrap_or_else(|| "this run did not measure it".to_string());
    let mut missing = Vec::new();
    let mut gap = |metric, missing_on, reason: String| {
        missing.push(MissingMetric {
            metric,
            missing_on,
            reason,
        })
    };
    // Kernel time is the GPU's own work, so it is judged like device-bound time.
    let kernel = match (was_timed, now_timed) {
        (true, true) => match compare_processes(&was_kernel, &now_kernel, Bound::Device, config) {
            Ok(k) => Some(Box::new(k)),
            Err(e) => {
                gap(
                    Metric::Kernel,
                    MissingOn::Current,
                    format!("its kernel times could not be compared: {e}"),
                );
                None
            }
        },
        (true, false) => {
            gap(
                Metric::Kernel,
                MissingOn::Current,
                format!("this run has no kernel time: {unavailable}"),
            );
            None
        }
        (false, true) => {
            gap(
                Metric::Kernel,
                MissingOn::Baseline,
                format!("the baseline has no kernel time: {BASELINE_WITHOUT}"),
            );
            None
        }
        (false, false) => {
            gap(
                Metric::Kernel,
                MissingOn::Both,
                format!("neither side measured kernel time: {unavailable}"),
            );
            None
        }
    };
    let counters = match (&entry.counters, record.counters()) {
        (Some(was), Some(now)) => Some(counter_changes(was, &now)),
        (Some(_), None) => {
            gap(
                Metric::Counters,
                MissingOn::Current,
                format!("this run has no counters: {unavailable}"),
            );
            None
        }
        (None, Some(_)) => {
            gap(
                Metric::Counters,
                MissingOn::Baseline,
                format!("the baseline has no counters: {BASELINE_WITHOUT}"),
            );
            None
        }
        (None, None) => {
            gap(
                Metric::Counters,
                MissingOn::Both,
                format!("neither side counted: {unavailable}"),
            );
            None
        }
    };
    let now_table = record.kernel_table();
    let kernel_changes = if entry.kernels.is_empty() || now_table.is_empty() {
        Vec::new()
    } else {
        kernel_changes(&entry.kernels, &now_table)
    };
    GpuComparison {
        kernel,
        counters,
        kernel_changes,
        missing,
    }
}

/// Memory of `record` against `entry`'s, when both sides read the allocator; a side
/// without it (the CPU, an older file) is a gap in `missing`, and so is growth per
/// call one side lacks while both have the peaks.
fn compare_memory_of(
    record: &RawRecord,
    entry: &BaselineEntry,
    missing: &mut Vec<MissingMetric>,
) -> Option<MemoryComparison> {
    let now: Option<Vec<ProcessMemory>> = record.measurements().map(ProcessMemory::of).collect();
    let now = now.filter(|n| !n.is_empty());
    let was = entry.memory();
    let mut gap = |missing_on, reason: String| {
        missing.push(MissingMetric {
            metric: Metric::Memory,
            missing_on,
            reason,
        })
    };
    const NO_ALLOCATOR: &str = "its device has no allocator to read (the CPU)";
    match (was, now) {
        (Some(was), Some(now)) => {
            let every_growth = |side: &[ProcessMemory]| side.iter().all(|p| p.growth.is_some());
            match (every_growth(&was), every_growth(&now)) {
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
                _ => {}
            }
            compare_memory(&was, &now)
        }
        (Some(_), None) => {
            gap(
                MissingOn::Current,
                format!("this run has no memory figures: {NO_ALLOCATOR}"),
            );
            None
        }
        (None, Some(_)) => {
            gap(
                MissingOn::Baseline,
                format!("the baseline has no memory figures: {BASELINE_WITHOUT}"),
            );
            None
        }
        (None, None) => {
            gap(
                MissingOn::Both,
                format!("neither side measured memory: {NO_ALLOCATOR}"),
            );
            None
        }
    }
}

pub(super) fn not_compared(reason: &str) -> ComparisonOutcome {
    ComparisonOutcome::NotCompared {
        reason: reason.to_string(),
    }
}
