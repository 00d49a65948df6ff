//! The series of each benchmark over the versions of a baseline: its time (the
//! primary timer's estimate and interval, as saved), kernel time, exact counts per
//! call, and memory (peak allocated bytes and bytes held per call), each with the
//! change points and drift [`super`] finds in it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{
    analyse_measured, exact_change_points, exact_change_points_beyond, HistoryOptions,
    SeriesAnalysis, SeriesPoint,
};
use crate::baseline::BaselineEntry;
use crate::memory::{growths, peak_tolerance, RELATIVE_TOLERANCE};
use crate::processes::{Bound, ProcessStats, RUN_FLOOR_DEVICE};
use crate::stats::{median, BootstrapConfig};
use gpubench_record::kernels::Counter;
use gpubench_record::measurement::{MemoryGrowth, TimeKind};

/// Which figure a series follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(tag = "metric", content = "of", rename_all = "snake_case")]
pub enum SeriesMetric {
    /// The primary timer's estimate (device time, else synced wall time); a change of
    /// timer starts another series, since the two are not comparable.
    Time(TimeKindKey),
    /// Kernel time per call.
    Kernel,
    /// An exact count per call.
    Counter(Counter),
    /// Peak bytes allocated by tensors, the median over the processes: it repeats up
    /// to the allocator's granularity, so its change points are exact commits beyond
    /// the memory verdicts' tolerance (1%, at least one 2 MiB segment).
    PeakAllocated,
    /// Bytes still held per call (growth per call), the median over the processes.
    GrowthPerCall,
}

/// [`TimeKind`] as a series key (ordered).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimeKindKey {
    /// Device time.
    Device,
    /// Synced wall time.
    Wall,
}

impl SeriesMetric {
    /// Words for tables: `device time`, `kernel time`, `kernels per call`.
    pub fn label(self) -> String {
        match self {
            SeriesMetric::Time(TimeKindKey::Device) => "device time".into(),
            SeriesMetric::Time(TimeKindKey::Wall) => "wall time".into(),
            SeriesMetric::Kernel => "kernel time".into(),
            SeriesMetric::Counter(c) => format!("{} per call", c.nouns()),
            SeriesMetric::PeakAllocated => "peak allocated bytes".into(),
            SeriesMetric::GrowthPerCall => "bytes held per call".into(),
        }
    }

    /// Whether the figure repeats exactly (its change points are exact commits).
    pub fn exact(self) -> bool {
        matches!(
            self,
            SeriesMetric::Counter(_) | SeriesMetric::PeakAllocated | SeriesMetric::GrowthPerCall
        )
    }
}

/// One point of a series: the version (index into the versions given) and figure.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct VersionPoint {
    /// Index of the version (0: the oldest).
    pub version: usize,
    /// The figure and its interval.
    #[serde(flatten)]
    pub point: SeriesPoint,
}

/// One figure of one benchmark over the versions, analysed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Series {
    /// The figure.
    #[serde(flatten)]
    pub metric: SeriesMetric,
    /// Its points, oldest first; versions without the figure are absent.
    pub points: Vec<VersionPoint>,
    /// Change points and drift; their indices are into `points`.
    pub analysis: SeriesAnalysis,
}

/// A benchmark's series.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchmarkSeries {
    /// The benchmark id.
    pub id: String,
    /// What its time rested on in the latest version, when saved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound: Option<Bound>,
    /// Its figures: time first, then kernel time, then the counts.
    pub series: Vec<Series>,
}

/// Builds and analyses every benchmark's series from the versions of a baseline,
/// oldest first (each version's entries as loaded), sorted by id.
pub fn benchmark_series(
    versions: &[Vec<&BaselineEntry>],
    options: &HistoryOptions,
) -> Vec<BenchmarkSeries> {
    let mut by_id: BTreeMap<&str, BTreeMap<SeriesMetric, Vec<VersionPoint>>> = BTreeMap::new();
    let mut bounds: BTreeMap<&str, Option<Bound>> = BTreeMap::new();
    for (version, entries) in versions.iter().enumerate() {
        for &entry in entries {
            let series = by_id.entry(&entry.id).or_default();
            bounds.insert(&entry.id, entry.effective_bound());
            for (metric, point) in figures(entry) {
                series
                    .entry(metric)
                    .or_default()
                    .push(VersionPoint { version, point });
            }
        }
    }
    by_id
        .into_iter()
        .map(|(id, metrics)| BenchmarkSeries {
            id: id.to_string(),
            bound: bounds.get(id).copied().flatten(),
            series: metrics
                .into_iter()
                .map(|(metric, points)| {
                    let analysis = analyse(metric, &points, options);
                    Series {
                        metric,
                        points,
                        analysis,
                    }
                })
                .collect(),
        })
        .collect()
}

fn analyse(
    metric: SeriesMetric,
    points: &[VersionPoint],
    options: &HistoryOptions,
) -> SeriesAnalysis {
    if metric.exact() {
        let values: Vec<f64> = points.iter().map(|p| p.point.value).collect();
        let change_points = match metric {
            SeriesMetric::PeakAllocated => exact_change_points_beyond(&values, peak_tolerance),
            // Growth is 0 B per call for all but leaking routines; a byte per call
            // is below anything the allocator hands out.
            SeriesMetric::GrowthPerCall => {
                exact_change_points_beyond(&values, |before| (RELATIVE_TOLERANCE * before).max(1.0))
            }
            _ => exact_change_points(&values),
        };
        SeriesAnalysis {
            threshold: 0.0,
            change_points,
            drift: None,
        }
    } else {
        let raw: Vec<SeriesPoint> = points.iter().map(|p| p.point).collect();
        analyse_measured(&raw, options)
    }
}

/// The figures of one version of a benchmark.
fn figures(entry: &BaselineEntry) -> Vec<(SeriesMetric, SeriesPoint)> {
    let mut out = Vec::new();
    let e = &entry.estimates.estimate_ns;
    let key = match entry.estimates.primary {
        TimeKind::Device => Some(TimeKindKey::Device),
        TimeKind::Wall => Some(TimeKindKey::Wall),
        TimeKind::Host | TimeKind::Kernel => None,
    };
    if let Some(key) = key {
        if e.point.is_finite() && e.point > 0.0 {
            out.push((
                SeriesMetric::Time(key),
                SeriesPoint {
                    value: e.point,
                    lower: e.lower,
                    upper: e.upper,
                },
            ));
        }
    }
    if let Some(point) = kernel_point(entry) {
        out.push((SeriesMetric::Kernel, point));
    }
    if let Some(counters) = &entry.counters {
        for counter in Counter::ALL {
            if let Some(v) = counters.per_call(counter) {
                out.push((SeriesMetric::Counter(counter), SeriesPoint::exact(v)));
            }
        }
    }
    if let Some(memory) = entry.memory().filter(|m| !m.is_empty()) {
        let peaks: Vec<f64> = memory
            .iter()
            .map(|m| m.peak_allocated_bytes as f64)
            .collect();
        out.push((
            SeriesMetric::PeakAllocated,
            SeriesPoint::exact(median(&peaks)),
        ));
        if let Some(growths) = growths(&memory) {
            let per_call: Vec<f64> = growths.iter().map(MemoryGrowth::per_call).collect();
            out.push((
                SeriesMetric::GrowthPerCall,
                SeriesPoint::exact(median(&per_call)),
            ));
        }
    }
    out
}

/// Kernel time per call over the processes, with the interval a saved time gets
/// ([`ProcessStats::estimate`] with the device floor); one process's median with the
/// floor alone either side (no bootstrap: history reads thousands of files).
fn kernel_point(entry: &BaselineEntry) -> Option<SeriesPoint> {
    let groups = entry.groups(TimeKind::Kernel);
    if groups.is_empty() || groups.iter().any(Vec::is_empty) {
        return None;
    }
    let point = if groups.len() == 1 {
        let m = median(&groups[0]);
        SeriesPoint {
            value: m,
            lower: m * (1.0 - RUN_FLOOR_DEVICE),
            upper: m * (1.0 + RUN_FLOOR_DEVICE),
        }
    } else {
        let stats = ProcessStats::from_groups(&groups);
        let (e, _) = stats.estimate(&groups[0], BootstrapConfig::default(), RUN_FLOOR_DEVICE)?;
        SeriesPoint {
            value: e.point,
            lower: e.lower,
            upper: e.upper,
        }
    };
    (point.value.is_finite() && point.value > 0.0).then_some(point)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn points(values: &[f64]) -> Vec<VersionPoint> {
        values
            .iter()
            .enumerate()
            .map(|(version, &v)| VersionPoint {
                version,
                point: SeriesPoint::exact(v),
            })
            .collect()
    }

    #[test]
    fn peak_memory_changes_at_the_commit_of_a_step_beyond_the_allocator_granularity() {
        const MIB: f64 = 1024.0 * 1024.0;
        // 84 MiB with a few KiB of jitter, then 64 MiB more from version 6 on.
        let values: Vec<f64> = (0..12)
            .map(|i| 84.0 * MIB + f64::from(i % 3) * 4096.0 + if i >= 6 { 64.0 * MIB } else { 0.0 })
            .collect();
        let a = analyse(
            SeriesMetric::PeakAllocated,
            &points(&values),
            &HistoryOptions::default(),
        );
        assert_eq!(a.change_points.len(), 1, "{:?}", a.change_points);
        assert_eq!(a.change_points[0].index, 6);
        assert!((a.change_points[0].change - 64.0 / 84.0).abs() < 0.01);
        // Counted exactly, the jitter would be a change at nearly every commit.
        let counted = analyse(
            SeriesMetric::Counter(Counter::Kernels),
            &points(&values),
            &HistoryOptions::default(),
        );
        assert!(counted.change_points.len() > 5);
    }

    #[test]
    fn growth_per_call_changes_where_a_leak_starts() {
        let values = [0.0, 0.0, 0.0, 65536.0, 65536.0, 65536.0, 0.0];
        let a = analyse(
            SeriesMetric::GrowthPerCall,
            &points(&values),
            &HistoryOptions::default(),
        );
        let at: Vec<usize> = a.change_points.iter().map(|c| c.index).collect();
        assert_eq!(at, vec![3, 6]);
        assert!(SeriesMetric::GrowthPerCall.exact());
    }
}
