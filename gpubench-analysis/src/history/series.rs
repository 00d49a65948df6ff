//! The series of each benchmark over the versions of a baseline: its time (the
//! primary timer's estimate and interval, as saved), kernel time, exact counts per
//! call, and memory (peak allocated bytes and bytes held per call), each with the
//! change points and drift [`super`] finds in it. A benchmark's figure measured on
//! another device, or with settings that move figures (the intra-op threads on the
//! CPU, the sample time, the warm-up, `--flush-l2`: what `compare` refuses to compare),
//! is a series of its own ([`SeriesSettings`]), never a step.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{
    analyse_measured_above, exact_change_points, exact_change_points_beyond, HistoryOptions,
    SeriesAnalysis, SeriesPoint,
};
use crate::baseline::BaselineEntry;
use crate::memory::{growths, peak_tolerance, RELATIVE_TOLERANCE};
use crate::processes::{Bound, ProcessStats, RUN_FLOOR_CPU, RUN_FLOOR_DEVICE};
use crate::stats::{median, BootstrapConfig};
use gpubench_record::kernels::Counter;
use gpubench_record::measurement::{MeasurementConfig, MemoryGrowth, TimeKind};

/// Which figure a series follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(tag = "metric", content = "of", rename_all = "snake_case")]
pub enum SeriesMetric {
    /// The primary timer's estimate (device time, else synced wall time); a change of
    /// timer starts another series, since the two are not comparable.
    Time(TimeKindKey),
    /// The fastest sample per call of each process, their geometric mean, for work
    /// on the CPU device: other work on the host only ever adds time to a CPU
    /// routine's (it waits for a core), so the fastest samples are those it touched
    /// least. Chen & Revels ("Robust benchmarking in noisy environments", 2016) found
    /// the minimum the estimate that noise of this kind moves least; here it is what
    /// finds a step when the machine's load changed between versions, which moves the
    /// time itself by tens of percent.
    Fastest,
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
            SeriesMetric::Fastest => "fastest samples".into(),
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

/// What a series' points were measured on and with, as far as it moves the figures:
/// points of one series are comparable, as `compare` would compare them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeriesSettings {
    /// The device model (`fingerprint.device.name`).
    pub device: String,
    /// Whether it is the CPU device.
    pub cpu: bool,
    /// libtorch's intra-op threads on the CPU device, when recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_threads: Option<u32>,
    /// The measurement settings of the series' latest point, when saved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<MeasurementConfig>,
}

impl SeriesSettings {
    /// Those of one saved benchmark.
    pub fn of(entry: &BaselineEntry) -> Self {
        SeriesSettings {
            device: entry.fingerprint.device.name.clone(),
            cpu: entry.fingerprint.device.on_cpu(),
            cpu_threads: entry.config.as_ref().and_then(|c| c.cpu_threads),
            config: entry.config.clone(),
        }
    }

    /// Whether figures measured with `self` and `other` are comparable: the same
    /// device model, and no setting that moves figures differs
    /// ([`MeasurementConfig::differences_that_move_figures`], which `compare` refuses
    /// on). A file saved before its settings were kept is comparable with any.
    pub fn comparable(&self, other: &Self) -> bool {
        self.device == other.device
            && match (&self.config, &other.config) {
                (Some(a), Some(b)) => a.differences_that_move_figures(b).is_empty(),
                _ => true,
            }
    }

    /// Words for how `self` differs from `other`: `2 intra-op threads`, `on NVIDIA
    /// A100`, `samples of 5 ms`; empty when nothing that moves figures differs.
    pub fn words_against(&self, other: &Self) -> Vec<String> {
        let mut out = Vec::new();
        if self.device != other.device {
            out.push(format!("on {}", self.device));
        }
        if let (Some(a), Some(b)) = (&self.config, &other.config) {
            if a.cpu_threads != b.cpu_threads {
                if let Some(n) = a.cpu_threads {
                    out.push(format!(
                        "{n} intra-op thread{}",
                        if n == 1 { "" } else { "s" }
                    ));
                }
            }
            let seconds = |s: f64| gpubench_record::units::format_ns(s * 1e9);
            if a.sample_target_s != b.sample_target_s {
                out.push(format!("samples of {}", seconds(a.sample_target_s)));
            }
            if a.warmup_time_s != b.warmup_time_s {
                out.push(format!("a warm-up of {}", seconds(a.warmup_time_s)));
            }
            if a.throttle_threshold != b.throttle_threshold {
                out.push(format!("--throttle-threshold {}", a.throttle_threshold));
            }
            if a.flush_l2 != b.flush_l2 {
                out.push(format!(
                    "--flush-l2 {}",
                    if a.flush_l2 { "on" } else { "off" }
                ));
            }
        }
        out
    }
}

/// One figure of one benchmark over the versions, analysed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Series {
    /// The figure.
    #[serde(flatten)]
    pub metric: SeriesMetric,
    /// What its points were measured on and with (all alike).
    pub settings: SeriesSettings,
    /// How its settings differ from those of the benchmark's latest series of the
    /// same figure (`2 intra-op threads`); empty for that series itself.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub settings_differ: Vec<String>,
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
    /// Its figures: time first, then kernel time, then the counts; a figure measured
    /// with other settings in some versions has a series for each, the latest first.
    pub series: Vec<Series>,
    /// The last version (index) that holds the benchmark.
    pub last_version: usize,
}

/// One series being built: its settings (the latest point's) and points.
struct Building {
    metric: SeriesMetric,
    settings: SeriesSettings,
    points: Vec<VersionPoint>,
    /// Whether any of its versions ran on a host that could not serve its threads.
    contended: bool,
}

/// Builds and analyses every benchmark's series from the versions of a baseline,
/// oldest first (each version's entries as loaded), sorted by id.
pub fn benchmark_series(
    versions: &[Vec<&BaselineEntry>],
    options: &HistoryOptions,
) -> Vec<BenchmarkSeries> {
    let mut by_id: BTreeMap<&str, Vec<Building>> = BTreeMap::new();
    let mut bounds: BTreeMap<&str, (Option<Bound>, usize)> = BTreeMap::new();
    for (version, entries) in versions.iter().enumerate() {
        for &entry in entries {
            let series = by_id.entry(&entry.id).or_default();
            bounds.insert(&entry.id, (entry.effective_bound(), version));
            let settings = SeriesSettings::of(entry);
            for (metric, point) in figures(entry) {
                let point = VersionPoint { version, point };
                // The series this point can be compared with, the latest extended
                // first; a new one when none.
                let open = series
                    .iter_mut()
                    .filter(|b| b.metric == metric && b.settings.comparable(&settings))
                    .max_by_key(|b| b.points.last().map(|p| p.version));
                match open {
                    Some(b) => {
                        b.settings = settings.clone();
                        b.points.push(point);
                        b.contended |= entry.contended;
                    }
                    None => series.push(Building {
                        metric,
                        settings: settings.clone(),
                        points: vec![point],
                        contended: entry.contended,
                    }),
                }
            }
        }
    }
    by_id
        .into_iter()
        .map(|(id, mut built)| {
            let (bound, last_version) = bounds.get(id).copied().unwrap_or((None, 0));
            // By figure, the latest series of each first.
            built.sort_by_key(|b| {
                (
                    b.metric,
                    std::cmp::Reverse(b.points.last().map(|p| p.version)),
                )
            });
            let latest: BTreeMap<SeriesMetric, SeriesSettings> = built
                .iter()
                .rev()
                .map(|b| (b.metric, b.settings.clone()))
                .collect();
            BenchmarkSeries {
                id: id.to_string(),
                bound,
                last_version,
                series: built
                    .into_iter()
                    .map(|b| {
                        let floor = floor(&b, options);
                        let analysis = analyse(b.metric, &b.points, floor, options);
                        Series {
                            metric: b.metric,
                            settings_differ: b.settings.words_against(&latest[&b.metric]),
                            settings: b.settings,
                            points: b.points,
                            analysis,
                        }
                    })
                    .collect(),
            }
        })
        .collect()
}

/// The smallest step or drift of a series, as `compare` judges its figure: on the
/// CPU device [`HistoryOptions::cpu_min_change`], and a time any of whose versions
/// ran contended (the host's CPUs oversubscribed) at least the host's noise threshold,
/// since waiting for a core moves it by tens of percent (its fastest samples are the
/// figure to follow there).
fn floor(b: &Building, options: &HistoryOptions) -> f64 {
    match (b.settings.cpu, b.metric) {
        (true, SeriesMetric::Time(_)) if b.contended => options
            .cpu_min_change
            .max(crate::compare::DEFAULT_HOST_NOISE_THRESHOLD),
        (true, _) => options.cpu_min_change,
        (false, _) => options.min_change,
    }
}

fn analyse(
    metric: SeriesMetric,
    points: &[VersionPoint],
    floor: f64,
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
            unplaced: Vec::new(),
        }
    } else {
        let raw: Vec<SeriesPoint> = points.iter().map(|p| p.point).collect();
        analyse_measured_above(&raw, floor, options)
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
    if entry.fingerprint.device.on_cpu() {
        if let Some(point) = fastest_point(entry) {
            out.push((SeriesMetric::Fastest, point));
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

/// The fastest wall time per call of each process, their geometric mean with the 95%
/// interval of that mean (Student's t over the processes); one process's with the
/// CPU's floor either side.
fn fastest_point(entry: &BaselineEntry) -> Option<SeriesPoint> {
    let fastest: Vec<f64> = entry
        .processes
        .iter()
        .filter_map(|p| p.wall_ns.iter().copied().min_by(f64::total_cmp))
        .filter(|v| v.is_finite() && *v > 0.0)
        .collect();
    let n = fastest.len();
    if n == 0 || n != entry.processes.len() {
        return None;
    }
    let logs: Vec<f64> = fastest.iter().map(|v| v.ln()).collect();
    let m = crate::stats::mean(&logs);
    let half = if n == 1 {
        RUN_FLOOR_CPU.ln_1p()
    } else {
        let var = logs.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (n - 1) as f64;
        crate::processes::t_quantile(0.975, (n - 1) as f64) * (var / n as f64).sqrt()
    };
    Some(SeriesPoint {
        value: m.exp(),
        lower: (m - half).exp(),
        upper: (m + half).exp(),
    })
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
            0.0,
            &HistoryOptions::default(),
        );
        assert_eq!(a.change_points.len(), 1, "{:?}", a.change_points);
        assert_eq!(a.change_points[0].index, 6);
        assert!((a.change_points[0].change - 64.0 / 84.0).abs() < 0.01);
        // Counted exactly, the jitter would be a change at nearly every commit.
        let counted = analyse(
            SeriesMetric::Counter(Counter::Kernels),
            &points(&values),
            0.0,
            &HistoryOptions::default(),
        );
        assert!(counted.change_points.len() > 5);
    }

    /// Eight versions: the first four on an H200, the last four on an A100 at twice
    /// the time; the sixth with 5 ms samples. Each device and the other sample time
    /// are series of their own, none with a step; only the A100 series of 10 ms
    /// samples is the latest.
    #[test]
    fn other_devices_and_settings_are_series_of_their_own_not_steps() {
        use crate::synthetic::GpuLikeSamples;
        use rand::SeedableRng;
        let mut rng = rand_pcg::Pcg64::seed_from_u64(3);
        let entries: Vec<BaselineEntry> = (0..8)
            .map(|v| {
                let (device, level) = if v < 4 {
                    ("NVIDIA H200", 1.0)
                } else {
                    ("NVIDIA A100", 2.0)
                };
                let mut r = GpuLikeSamples::default()
                    .scaled(level)
                    .record_processes("mm", device, 3, 20, &mut rng);
                if v == 5 {
                    r.config.sample_target_s = 0.005;
                }
                BaselineEntry::from_record(&r).unwrap()
            })
            .collect();
        let versions: Vec<Vec<&BaselineEntry>> = entries.iter().map(|e| vec![e]).collect();
        let b = &benchmark_series(&versions, &HistoryOptions::default())[0];
        assert_eq!(b.last_version, 7);
        let times: Vec<&Series> = b
            .series
            .iter()
            .filter(|s| s.metric == SeriesMetric::Time(TimeKindKey::Device))
            .collect();
        let shape: Vec<(Vec<usize>, Vec<String>)> = times
            .iter()
            .map(|s| {
                (
                    s.points.iter().map(|p| p.version).collect(),
                    s.settings_differ.clone(),
                )
            })
            .collect();
        assert_eq!(
            shape,
            vec![
                (vec![4, 6, 7], vec![]),
                (vec![5], vec!["samples of 5.000 ms".to_string()]),
                (vec![0, 1, 2, 3], vec!["on NVIDIA H200".to_string()]),
            ]
        );
        assert!(times.iter().all(|s| s.analysis.change_points.is_empty()));
    }

    #[test]
    fn growth_per_call_changes_where_a_leak_starts() {
        let values = [0.0, 0.0, 0.0, 65536.0, 65536.0, 65536.0, 0.0];
        let a = analyse(
            SeriesMetric::GrowthPerCall,
            &points(&values),
            0.0,
            &HistoryOptions::default(),
        );
        let at: Vec<usize> = a.change_points.iter().map(|c| c.index).collect();
        assert_eq!(at, vec![3, 6]);
        assert!(SeriesMetric::GrowthPerCall.exact());
    }
}
