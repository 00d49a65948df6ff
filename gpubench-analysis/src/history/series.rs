//! The series of each benchmark over the versions of a baseline: its time (the
//! primary timer's estimate and interval, as saved), kernel time, energy per call,
//! share of the device's peak at the clock it ran, exact counts per call, and memory
//! (peak allocated bytes and bytes held per call), each with the
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
    /// Energy per call from the GPU's energy counter, J: the median over the
    /// processes of each one's median window (the run summary's `energy`). A
    /// version saved without energy (the CPU, older files) has no point: a gap,
    /// never a zero.
    Energy,
    /// The rate as a share of the device's peak scaled to the clock it ran at (the
    /// run summary's `peak.share`; 0.62: 62%). Higher is better: a drop is the
    /// regression.
    PeakShare,
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
            SeriesMetric::Energy => "energy per call".into(),
            SeriesMetric::PeakShare => "share of peak".into(),
            SeriesMetric::Counter(c) => format!("{} per call", c.nouns()),
            SeriesMetric::PeakAllocated => "peak allocated bytes".into(),
            SeriesMetric::GrowthPerCall => "bytes held per call".into(),
        }
    }

    /// Whether a rise of the figure is the better direction (the share of peak), so
    /// a step up is an improvement; for every other figure a rise is a regression.
    pub fn higher_is_better(self) -> bool {
        self == SeriesMetric::PeakShare
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
        (_, SeriesMetric::Energy) => options.min_change.max(options.energy_min_change),
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
    if let Some(point) = energy_point(entry) {
        out.push((SeriesMetric::Energy, point));
    }
    if let Some(point) = peak_share_point(entry) {
        out.push((SeriesMetric::PeakShare, point));
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

/// Energy per call, J: the median of the processes' median windows, with the 95%
/// interval of the processes' log medians (Student's t over the processes); one
/// process's from its windows the same way, and a single window's with
/// [`super::DEFAULT_ENERGY_MIN_CHANGE`] either side. `None` unless every process has energy:
/// a mean over some of them would move with which ones ran.
fn energy_point(entry: &BaselineEntry) -> Option<SeriesPoint> {
    let per_process = entry
        .energy_groups()
        .filter(|g| g.iter().flatten().all(|v| v.is_finite() && *v > 0.0))?;
    let medians: Vec<f64> = per_process.iter().map(|j| median(j)).collect();
    let spread_of = if medians.len() > 1 {
        &medians
    } else {
        &per_process[0]
    };
    let value = median(&medians);
    let n = spread_of.len();
    let half = if n == 1 {
        super::DEFAULT_ENERGY_MIN_CHANGE.ln_1p()
    } else {
        let logs: Vec<f64> = spread_of.iter().map(|v| v.ln()).collect();
        let m = crate::stats::mean(&logs);
        let var = logs.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (n - 1) as f64;
        crate::processes::t_quantile(0.975, (n - 1) as f64) * (var / n as f64).sqrt()
    };
    (value.is_finite() && value > 0.0).then(|| SeriesPoint {
        value,
        lower: value * (-half).exp(),
        upper: value * half.exp(),
    })
}

/// The share of the device's peak at the clock it ran ([`BaselineEntry::peak_share`]),
/// with the interval of the time it rests on turned over (the share goes as one
/// over the time).
fn peak_share_point(entry: &BaselineEntry) -> Option<SeriesPoint> {
    let share = entry.peak_share()?.share;
    let e = &entry.estimates.estimate_ns;
    if !(share.is_finite() && share > 0.0 && e.point > 0.0) {
        return None;
    }
    let scaled = |t: f64| {
        if t > 0.0 {
            share * e.point / t
        } else {
            share
        }
    };
    Some(SeriesPoint {
        value: share,
        lower: scaled(e.upper).min(share),
        upper: scaled(e.lower).max(share),
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

    /// One GPU entry per version of a bf16 matmul on an H200, 3 processes; version
    /// `v` measured `joules[v]` per call (with 2% scatter between its windows and
    /// 0.5% between its processes), or no energy at all when `None`; its time a
    /// `time[v]` multiple of the model's.
    fn energy_entries(joules: &[Option<f64>], time: impl Fn(usize) -> f64) -> Vec<BaselineEntry> {
        use crate::synthetic::GpuLikeSamples;
        use gpubench_record::energy::{EnergyMeasurement, EnergyWindow};
        use rand::{Rng, SeedableRng};
        let mut rng = rand_pcg::Pcg64::seed_from_u64(11);
        joules
            .iter()
            .enumerate()
            .map(|(v, j)| {
                let mut r = GpuLikeSamples::default().scaled(time(v)).record_processes(
                    "mm_bf16",
                    "NVIDIA H200",
                    3,
                    20,
                    &mut rng,
                );
                for p in &mut r.processes {
                    let m = p.measurement.as_mut().unwrap();
                    m.energy = j.map(|j| {
                        let process = 1.0 + rng.gen_range(-0.005..0.005);
                        EnergyMeasurement {
                            windows: (0..3)
                                .map(|_| {
                                    let jitter = 1.0 + rng.gen_range(-0.02..0.02);
                                    let (calls, synced_s, counted_s) = (800, 1.0, 0.9);
                                    EnergyWindow {
                                        calls,
                                        synced_s,
                                        counted_s,
                                        steps: 9,
                                        energy_j: j * process * jitter * calls as f64 * counted_s
                                            / synced_s,
                                    }
                                })
                                .collect(),
                            idle_w: Some(83.0),
                            idle_unavailable: None,
                        }
                    });
                }
                BaselineEntry::from_record(&r).unwrap()
            })
            .collect()
    }

    fn series_of(b: &BenchmarkSeries, metric: SeriesMetric) -> &Series {
        b.series
            .iter()
            .find(|s| s.metric == metric)
            .unwrap_or_else(|| panic!("no {metric:?} series in {:?}", b.series))
    }

    /// 1.16 J per call for seven versions, then 10% more for seven, at the same time.
    fn ten_percent_more_energy_from_version_7() -> Vec<BaselineEntry> {
        let joules: Vec<Option<f64>> = (0..14)
            .map(|v| Some(if v >= 7 { 1.276 } else { 1.16 }))
            .collect();
        energy_entries(&joules, |_| 1.0)
    }

    /// 1.16 J per call for seven versions, 10% more from the eighth on, at the same
    /// time: the energy series steps there, the time series does not.
    #[test]
    fn a_step_in_energy_is_found_at_its_commit() {
        let entries = ten_percent_more_energy_from_version_7();
        let versions: Vec<Vec<&BaselineEntry>> = entries.iter().map(|e| vec![e]).collect();
        let b = &benchmark_series(&versions, &HistoryOptions::default())[0];
        let energy = series_of(b, SeriesMetric::Energy);
        assert_eq!(energy.points.len(), 14);
        assert!((energy.points[0].point.value / 1.16 - 1.0).abs() < 0.02);
        let steps = &energy.analysis.change_points;
        assert_eq!(steps.len(), 1, "{steps:?}");
        assert_eq!(energy.points[steps[0].index].version, 7);
        assert!((steps[0].change - 0.10).abs() < 0.02, "{:?}", steps[0]);
        assert!(steps[0].change_lower > super::super::DEFAULT_ENERGY_MIN_CHANGE);
        assert!(energy.analysis.threshold >= super::super::DEFAULT_ENERGY_MIN_CHANGE);
        let time = series_of(b, SeriesMetric::Time(TimeKindKey::Device));
        assert!(time.analysis.change_points.is_empty(), "{time:?}");
    }

    /// The same 10% step under an energy floor of 20% is not reported, whatever the
    /// floor of time.
    #[test]
    fn an_energy_step_under_the_energy_floor_is_not_reported() {
        let entries = ten_percent_more_energy_from_version_7();
        let versions: Vec<Vec<&BaselineEntry>> = entries.iter().map(|e| vec![e]).collect();
        let options = HistoryOptions {
            energy_min_change: 0.2,
            min_change: 0.01,
            ..HistoryOptions::default()
        };
        let b = &benchmark_series(&versions, &options)[0];
        let energy = series_of(b, SeriesMetric::Energy);
        assert!(energy.analysis.threshold >= 0.2, "{:?}", energy.analysis);
        assert!(energy.analysis.change_points.is_empty(), "{energy:?}");
    }

    /// Versions 4 to 6 were saved without energy (an older gpubench, or the counter
    /// unread): the energy series has no point there, not a zero, finds no step
    /// across the gap, and stays one series.
    #[test]
    fn a_gap_in_energy_stays_a_gap() {
        let joules: Vec<Option<f64>> = (0..12)
            .map(|v| (!(4..7).contains(&v)).then_some(1.16))
            .collect();
        let entries = energy_entries(&joules, |_| 1.0);
        let versions: Vec<Vec<&BaselineEntry>> = entries.iter().map(|e| vec![e]).collect();
        let b = &benchmark_series(&versions, &HistoryOptions::default())[0];
        let energies: Vec<&Series> = b
            .series
            .iter()
            .filter(|s| s.metric == SeriesMetric::Energy)
            .collect();
        assert_eq!(energies.len(), 1);
        let at: Vec<usize> = energies[0].points.iter().map(|p| p.version).collect();
        assert_eq!(at, vec![0, 1, 2, 3, 7, 8, 9, 10, 11]);
        assert!(energies[0]
            .points
            .iter()
            .all(|p| (p.point.value / 1.16 - 1.0).abs() < 0.02 && p.point.lower > 0.0));
        assert!(energies[0].analysis.change_points.is_empty());
        // Time has every version.
        assert_eq!(
            series_of(b, SeriesMetric::Time(TimeKindKey::Device))
                .points
                .len(),
            12
        );
        // A file without energy reads back without it.
        let text = entries[5].to_json_pretty();
        assert!(!text.contains("energy"), "{text}");
        assert_eq!(BaselineEntry::from_json(&text, "v5").unwrap(), entries[5]);
        let saved = BaselineEntry::from_json(&entries[0].to_json_pretty(), "v0").unwrap();
        assert_eq!(saved, entries[0]);
        assert!(saved.processes.iter().all(|p| p.energy_j.is_some()));
    }

    /// The share of peak follows one over the time: 10% more time from version 6 on
    /// is a drop of about 9% in share, a step down, which is the worse direction.
    #[test]
    fn the_share_of_peak_steps_down_when_time_steps_up() {
        let entries = energy_entries(&[None; 12], |v| if v >= 6 { 1.1 } else { 1.0 });
        let versions: Vec<Vec<&BaselineEntry>> = entries.iter().map(|e| vec![e]).collect();
        let b = &benchmark_series(&versions, &HistoryOptions::default())[0];
        assert!(b.series.iter().all(|s| s.metric != SeriesMetric::Energy));
        let share = series_of(b, SeriesMetric::PeakShare);
        let first = &entries[0];
        let expected = 1e9 / (first.estimates.estimate_ns.point * 1e-9) / 989.4e12;
        assert!((share.points[0].point.value / expected - 1.0).abs() < 1e-9);
        let p = share.points[0].point;
        assert!(p.lower < p.value && p.value < p.upper, "{p:?}");
        let steps = &share.analysis.change_points;
        assert_eq!(steps.len(), 1, "{steps:?}");
        assert_eq!(steps[0].index, 6);
        assert!(
            (steps[0].change - (1.0 / 1.1 - 1.0)).abs() < 0.02,
            "{:?}",
            steps[0]
        );
        assert!(SeriesMetric::PeakShare.higher_is_better());
        assert!(!SeriesMetric::Energy.higher_is_better());
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
