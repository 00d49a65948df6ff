//! A benchmark's figures from its raw record: per-iteration estimates with intervals,
//! noise and outliers of each timer, cold calls, throughput, memory and status. What
//! the terminal table, `--format json` and the HTML report present.

use serde::{Deserialize, Serialize};

use crate::failure::Failure;
use crate::record::{
    Flag, Measurement, MemoryStats, NaiveLoop, RawRecord, RunMode, StopReason, Throughput,
};
use crate::stats::{
    classify_outliers, mad, mean_estimate_with, median_estimate_with, rel_noise, std_dev,
    BootstrapConfig, Estimate, OutlierCounts,
};

/// Which timer a figure comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimeKind {
    /// Synced wall time.
    Wall,
    /// Host-dispatch time: when the last call returned to the host.
    Host,
    /// Device time from events.
    Device,
}

impl TimeKind {
    /// Words for tables.
    pub fn label(self) -> &'static str {
        match self {
            TimeKind::Wall => "wall",
            TimeKind::Host => "host",
            TimeKind::Device => "device",
        }
    }

    /// The kind [`Measurement::primary_per_iter`] uses: device time when every sample
    /// has one, else wall time.
    pub fn primary_of(m: &Measurement) -> TimeKind {
        match m.device_per_iter() {
            Some(d) if !d.is_empty() => TimeKind::Device,
            _ => TimeKind::Wall,
        }
    }
}

/// Statistics of one timer's per-iteration times, ns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimeSummary {
    /// Samples summarised (non-finite times, which a sound record never has, are left
    /// out).
    pub samples: usize,
    /// Median with its bootstrap interval, ns.
    pub median: Estimate,
    /// Mean with its bootstrap interval, ns.
    pub mean: Estimate,
    /// Fastest sample, ns.
    pub min: f64,
    /// Slowest sample, ns.
    pub max: f64,
    /// Sample standard deviation, ns.
    pub std_dev: f64,
    /// Median absolute deviation scaled to estimate the standard deviation, ns.
    pub mad: f64,
    /// Relative noise, MAD / median (see [`crate::stats::rel_noise`]); absent when the
    /// median is zero.
    pub rel_noise: Option<f64>,
    /// Tukey outlier counts.
    pub outliers: OutlierCounts,
}

impl TimeSummary {
    /// Statistics of `xs`, ns; `None` when no finite sample is left.
    pub fn from_samples(xs: &[f64], cfg: BootstrapConfig) -> Option<Self> {
        let xs: Vec<f64> = xs.iter().copied().filter(|x| x.is_finite()).collect();
        if xs.is_empty() {
            return None;
        }
        let noise = rel_noise(&xs);
        Some(TimeSummary {
            samples: xs.len(),
            median: median_estimate_with(&xs, cfg),
            mean: mean_estimate_with(&xs, cfg),
            min: xs.iter().copied().fold(f64::INFINITY, f64::min),
            max: xs.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            std_dev: std_dev(&xs),
            mad: mad(&xs),
            rel_noise: noise.is_finite().then_some(noise),
            outliers: classify_outliers(&xs).counts,
        })
    }
}

/// Whether the benchmark ran to completion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BenchmarkStatus {
    /// It ran to completion.
    Passed,
    /// It failed; see [`BenchmarkSummary::failure`].
    Failed,
}

/// A cold call next to the steady state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ColdCallSummary {
    /// What made it cold: `first call`, or the new shape.
    pub label: String,
    /// Synced wall time, ns.
    pub wall_ns: f64,
    /// When the call returned to the host, ns.
    pub host_ns: f64,
    /// Device time, ns, when measured.
    pub device_ns: Option<f64>,
    /// Wall time over the steady-state median wall time per iteration (50: the cold
    /// call cost fifty warm ones); absent without a steady state.
    pub times_steady: Option<f64>,
}

/// The rate at the primary median.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThroughputSummary {
    /// Work per iteration.
    pub per_iter: Throughput,
    /// Work per second at the primary median (FLOP/s, B/s or elem/s).
    pub rate_per_s: f64,
    /// The rate with its unit, e.g. `412.30 TFLOP/s`.
    pub rate: String,
}

/// Everything a report shows about one benchmark.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchmarkSummary {
    /// The benchmark id, e.g. `matmul/4096`.
    pub id: String,
    /// Its name without the argument.
    pub name: String,
    /// The argument of a parameterised benchmark.
    pub arg: Option<String>,
    /// Passed or failed.
    pub status: BenchmarkStatus,
    /// Why it failed.
    pub failure: Option<Failure>,
    /// Measured or smoke-tested.
    pub mode: RunMode,
    /// Device label, e.g. `cuda:0`.
    pub device_label: String,
    /// Device model, e.g. `NVIDIA H200`.
    pub device_name: String,
    /// The timer comparisons use: device when measured, else wall.
    pub primary_kind: Option<TimeKind>,
    /// Synced wall time per iteration.
    pub wall: Option<TimeSummary>,
    /// Host-dispatch time per iteration.
    pub host: Option<TimeSummary>,
    /// Device time per iteration, when every sample has one.
    pub device: Option<TimeSummary>,
    /// Iterations across all samples.
    pub total_iters: u64,
    /// Cold calls, in order.
    pub cold: Vec<ColdCallSummary>,
    /// Rate at the primary median, when the benchmark declares its work.
    pub throughput: Option<ThroughputSummary>,
    /// Peak device memory (CUDA only).
    pub memory: Option<MemoryStats>,
    /// Median cost of an empty sync, ns.
    pub sync_cost_ns: Option<f64>,
    /// What unsynchronised loops would have reported.
    pub naive: Vec<NaiveLoop>,
    /// Why sampling stopped.
    pub stop_reason: Option<StopReason>,
    /// What the engine noticed.
    pub flags: Vec<Flag>,
}

impl BenchmarkSummary {
    /// The summary with the default bootstrap (reproducible: fixed seed).
    pub fn from_record(record: &RawRecord) -> Self {
        Self::from_record_with(record, BootstrapConfig::default())
    }

    /// The summary with intervals from `cfg`.
    pub fn from_record_with(record: &RawRecord, cfg: BootstrapConfig) -> Self {
        let mut s = BenchmarkSummary {
            id: record.id.clone(),
            name: record.name.clone(),
            arg: record.arg.clone(),
            status: if record.passed() {
                BenchmarkStatus::Passed
            } else {
                BenchmarkStatus::Failed
            },
            failure: record.failure.clone(),
            mode: record.config.mode,
            device_label: record.fingerprint.device.label(),
            device_name: record.fingerprint.device.name.clone(),
            primary_kind: None,
            wall: None,
            host: None,
            device: None,
            total_iters: 0,
            cold: Vec::new(),
            throughput: None,
            memory: None,
            sync_cost_ns: None,
            naive: Vec::new(),
            stop_reason: None,
            flags: Vec::new(),
        };
        let Some(m) = &record.measurement else {
            return s;
        };
        s.wall = TimeSummary::from_samples(&m.wall_per_iter(), cfg);
        s.host = TimeSummary::from_samples(&m.host_per_iter(), cfg);
        s.device = m
            .device_per_iter()
            .and_then(|d| TimeSummary::from_samples(&d, cfg));
        let kind = TimeKind::primary_of(m);
        s.primary_kind = s.time(kind).map(|_| kind);
        s.total_iters = m.samples.iter().map(|x| x.iters).sum();
        let steady_wall = s.wall.as_ref().map(|w| w.median.point);
        s.cold = m
            .cold
            .iter()
            .map(|c| ColdCallSummary {
                label: c.label.clone(),
                wall_ns: c.wall_ns,
                host_ns: c.host_ns,
                device_ns: c.device_ns,
                times_steady: steady_wall
                    .filter(|w| *w > 0.0)
                    .map(|w| c.wall_ns / w)
                    .filter(|r| r.is_finite()),
            })
            .collect();
        let primary_median = s.primary().map(|p| p.median.point);
        s.throughput = match (m.throughput, primary_median) {
            (Some(t), Some(ns)) if ns > 0.0 && t.rate(ns).is_finite() => Some(ThroughputSummary {
                per_iter: t,
                rate_per_s: t.rate(ns),
                rate: t.format_rate(ns),
            }),
            _ => None,
        };
        s.memory = m.memory;
        s.sync_cost_ns = Some(m.sync_cost_ns);
        s.naive = m.naive.clone();
        s.stop_reason = Some(m.stop_reason);
        s.flags = m.flags.clone();
        s
    }

    /// The statistics of timer `kind`.
    pub fn time(&self, kind: TimeKind) -> Option<&TimeSummary> {
        match kind {
            TimeKind::Wall => self.wall.as_ref(),
            TimeKind::Host => self.host.as_ref(),
            TimeKind::Device => self.device.as_ref(),
        }
    }

    /// The statistics of the primary timer (device when measured, else wall).
    pub fn primary(&self) -> Option<&TimeSummary> {
        self.primary_kind.and_then(|k| self.time(k))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::failure::FailureKind;
    use crate::record::{ColdCall, Sample};
    use crate::synthetic::GpuLikeSamples;
    use rand::SeedableRng;
    use rand_pcg::Pcg64Mcg;

    fn record() -> RawRecord {
        let mut rng = Pcg64Mcg::seed_from_u64(9);
        let mut r = GpuLikeSamples::default().record("matmul/4096", "NVIDIA H200", 50, &mut rng);
        let m = r.measurement.as_mut().unwrap();
        m.cold.push(ColdCall {
            label: "first call".into(),
            wall_ns: 5e8,
            host_ns: 4e8,
            device_ns: None,
        });
        m.throughput = Some(Throughput::Flops(2.0 * 4096f64.powi(3)));
        r
    }

    #[test]
    fn summary_of_a_passed_record() {
        let s = BenchmarkSummary::from_record(&record());
        assert_eq!(s.status, BenchmarkStatus::Passed);
        assert_eq!(
            (s.name.as_str(), s.device_label.as_str()),
            ("matmul", "cuda:0")
        );
        assert_eq!(s.primary_kind, Some(TimeKind::Device));
        let p = s.primary().unwrap();
        assert_eq!(p.samples, 50);
        assert!((p.median.point / 1e6 - 1.0).abs() < 0.01, "{p:?}");
        assert!(p.median.contains(p.median.point) && p.median.rel_half_width() < 0.01);
        let wall = s.wall.as_ref().unwrap();
        assert!((wall.median.point / p.median.point - 1.02).abs() < 1e-9);
        let host = s.host.as_ref().unwrap();
        assert!((host.median.point / wall.median.point - 0.3).abs() < 1e-9);
        assert!((0.005..0.02).contains(&p.rel_noise.unwrap()), "{p:?}");
        assert_eq!(p.outliers.total(), 50);
        assert_eq!(s.total_iters, 500);
        // 5e8 ns cold vs ~1.02e6 ns steady.
        let cold = s.cold[0].times_steady.unwrap();
        assert!((480.0..500.0).contains(&cold), "{cold}");
        let t = s.throughput.as_ref().unwrap();
        let expected = 2.0 * 4096f64.powi(3) / (p.median.point * 1e-9);
        assert!((t.rate_per_s / expected - 1.0).abs() < 1e-12);
        assert!(t.rate.ends_with("TFLOP/s"), "{}", t.rate);
        assert_eq!(s.stop_reason, Some(StopReason::Converged));
    }

    #[test]
    fn summary_is_reproducible_and_round_trips_through_json() {
        let a = BenchmarkSummary::from_record(&record());
        assert_eq!(a, BenchmarkSummary::from_record(&record()));
        let json = serde_json::to_string_pretty(&a).unwrap();
        assert!(json.contains("\"primary_kind\": \"device\""), "{json}");
        assert!(json.contains("\"status\": \"passed\""));
        let back: BenchmarkSummary = serde_json::from_str(&json).unwrap();
        assert_eq!(a, back);
    }

    #[test]
    fn summary_of_a_failed_record_keeps_the_failure() {
        let mut r = record();
        r.measurement = None;
        r.failure = Some(Failure::new(FailureKind::OutOfMemory, "CUDA out of memory"));
        let s = BenchmarkSummary::from_record(&r);
        assert_eq!(s.status, BenchmarkStatus::Failed);
        assert_eq!(s.failure.as_ref().unwrap().kind, FailureKind::OutOfMemory);
        assert!(s.primary().is_none() && s.wall.is_none() && s.throughput.is_none());
        let back: BenchmarkSummary =
            serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
        assert_eq!(s, back);
    }

    #[test]
    fn wall_time_is_primary_without_device_events_and_bad_samples_do_not_panic() {
        let mut r = record();
        let m = r.measurement.as_mut().unwrap();
        m.samples[0].device_ns = None;
        m.samples.push(Sample {
            iters: 0,
            wall_ns: 1.0,
            host_ns: 0.0,
            device_ns: None,
        });
        let s = BenchmarkSummary::from_record(&r);
        assert_eq!(s.primary_kind, Some(TimeKind::Wall));
        assert!(s.device.is_none());
        // The zero-iteration sample gives an infinite time and is left out.
        assert_eq!(s.wall.as_ref().unwrap().samples, 50);
        let json = serde_json::to_string(&s).unwrap();
        let back: BenchmarkSummary = serde_json::from_str(&json).unwrap();
        assert_eq!(s, back);
    }
}
