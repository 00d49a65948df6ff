//! Tests of [`super`].

use super::*;

#[test]
fn the_eager_versus_compiled_result_is_in_the_summary_and_its_json() {
    let side_by_side = gpubench_record::testing::sample_comparison();
    let mut r = gpubench_record::testing::sample_record();
    r.processes[0].eager_compiled = Some(side_by_side.clone());
    let s = BenchmarkSummary::from_record(&r);
    let c = s.eager_compiled.as_ref().expect("summarised");
    assert_eq!(c.compiled, side_by_side.compiled.label);
    assert!(!c.agrees);
    assert_eq!((c.shapes_disagreeing, c.shapes), (1, 1));
    assert_eq!(c.flags, side_by_side.flags);
    assert_eq!(c.flag_words.len(), side_by_side.flags.len());
    let json = serde_json::to_value(&s).unwrap();
    assert_eq!(json["eager_compiled"]["agrees"], false);
    assert!(json["eager_compiled"]["flags"].is_array());
}
use crate::synthetic::{GpuLikeSamples, ProcessShift};
use gpubench_record::failure::FailureKind;
use gpubench_record::measurement::{ColdCall, Sample};
use rand::SeedableRng;
use rand_pcg::Pcg64Mcg;

fn record() -> RawRecord {
    let mut rng = Pcg64Mcg::seed_from_u64(9);
    let mut r = GpuLikeSamples::default().record("matmul/4096", "NVIDIA H200", 50, &mut rng);
    let m = r.processes[0].measurement.as_mut().unwrap();
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
    assert_eq!(s.outcome.status, BenchmarkStatus::Passed);
    assert_eq!(
        (s.identity.name.as_str(), s.device.label.as_str()),
        ("matmul", "cuda:0")
    );
    assert_eq!(s.timing.primary_kind, Some(TimeKind::Device));
    let p = s.primary().unwrap();
    assert_eq!(p.samples, 50);
    assert!((p.estimate.point / 1e6 - 1.0).abs() < 0.01, "{p:?}");
    assert!(p.estimate.contains(p.estimate.point) && p.estimate.rel_half_width() < 0.01);
    assert_eq!(p.basis, EstimateBasis::OneProcess);
    let wall = s.timing.wall.as_ref().unwrap();
    assert!((wall.estimate.point / p.estimate.point - 1.02).abs() < 1e-9);
    let host = s.timing.host.as_ref().unwrap();
    assert!((host.estimate.point / wall.estimate.point - 0.3).abs() < 1e-9);
    assert!(
        (0.005..0.02).contains(&p.processes.within.unwrap()),
        "{p:?}"
    );
    assert_eq!(p.outliers.total(), 50);
    assert_eq!(s.sampling.total_iters, 500);
    // 5e8 ns cold vs ~1.02e6 ns steady.
    let cold = s.cold[0].times_steady.unwrap();
    assert!((480.0..500.0).contains(&cold), "{cold}");
    let t = s.throughput.as_ref().unwrap();
    let expected = 2.0 * 4096f64.powi(3) / (p.estimate.point * 1e-9);
    assert!((t.rate_per_s / expected - 1.0).abs() < 1e-12);
    assert!(t.rate.ends_with("TFLOP/s"), "{}", t.rate);
    assert_eq!(s.sampling.stop_reason, Some(StopReason::Converged));
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

/// The share of samples read at the power cap, over every process, with the limit
/// read once per process; nothing without clock readings.
#[test]
fn power_capped_samples_are_counted_over_processes() {
    use gpubench_record::measurement::SampleClock;
    assert!(BenchmarkSummary::from_record(&record())
        .conditions
        .power_capped
        .is_none());
    let mut r = record();
    let mut read = 0;
    for m in r
        .processes
        .iter_mut()
        .filter_map(|r| r.measurement.as_mut())
    {
        for (i, x) in m.samples.iter_mut().enumerate() {
            read += 1;
            x.clock = Some(SampleClock {
                sm_mhz: 1707,
                temperature_c: None,
                throttled: false,
                power_capped: i % 4 != 0,
                power_w: None,
            });
        }
    }
    r.fingerprint.gpu = Some(gpubench_record::telemetry::GpuState {
        power_limit_w: Some(700.0),
        ..Default::default()
    });
    let capped = BenchmarkSummary::from_record(&r)
        .conditions
        .power_capped
        .expect("clocks were read");
    assert_eq!(capped.samples, read);
    let expected: usize = r
        .measurements()
        .map(|m| (0..m.samples.len()).filter(|i| i % 4 != 0).count())
        .sum();
    assert!((capped.share - expected as f64 / read as f64).abs() < 1e-12);
    assert!(capped.share > 0.0 && capped.share < 1.0, "{capped:?}");
    assert_eq!(capped.power_limit_w, Some(700.0));
}

#[test]
fn throttled_samples_and_other_processes_are_flagged_and_counted() {
    use gpubench_record::measurement::SampleClock;
    use gpubench_record::telemetry::{
        ClockReading, GpuProcess, ProcessTelemetry, TelemetryReading,
    };
    let quiet = BenchmarkSummary::from_record(&record());
    assert!(!quiet.flags.contains(&Flag::Throttled) && !quiet.flags.contains(&Flag::Contended));
    let mut r = record();
    let m = r.processes[0].measurement.as_mut().unwrap();
    let n = m.samples.len();
    for (i, x) in m.samples.iter_mut().enumerate() {
        x.clock = Some(SampleClock {
            sm_mhz: if i < 3 { 1000 } else { 1980 },
            temperature_c: Some(50 + i as u32 % 7),
            throttled: i < 3,
            power_capped: false,
            power_w: None,
        });
        if i < 3 {
            // Throttled samples are slow: left in, they would move the figure.
            x.wall_ns *= 3.0;
            x.device_ns = x.device_ns.map(|d| d * 3.0);
        }
    }
    let reading = |pids: &[u32]| TelemetryReading {
        clock: ClockReading {
            sm_clock_mhz: 1980,
            temperature_c: Some(55),
            slowdown: vec![],
            power_w: None,
        },
        memory_clock_mhz: None,
        power_limit_w: None,
        processes: pids
            .iter()
            .map(|&pid| GpuProcess {
                pid,
                used_memory_bytes: None,
            })
            .collect(),
    };
    r.processes[0].telemetry = Some(ProcessTelemetry {
        start: reading(&[]),
        end: reading(&[31337]),
        max_temperature_c: Some(56),
        other_processes: vec![GpuProcess {
            pid: 31337,
            used_memory_bytes: None,
        }],
    });
    let s = BenchmarkSummary::from_record(&r);
    assert_eq!(s.conditions.throttled_samples, 3);
    assert_eq!(s.primary().unwrap().samples, n - 3);
    assert!(s.flags.contains(&Flag::Throttled), "{:?}", s.flags);
    assert!(s.flags.contains(&Flag::Contended), "{:?}", s.flags);
    assert_eq!(s.conditions.other_processes, vec![31337]);
    assert_eq!(s.conditions.max_temperature_c, Some(56));
    assert_eq!(s.conditions.sm_clock_mhz, Some(1980.0));
    let slowest = s.primary().unwrap().max;
    assert!(
        slowest < 2.0 * s.primary().unwrap().min,
        "a throttled sample was kept"
    );
}

#[test]
fn summary_of_a_failed_record_keeps_the_failure() {
    let mut r = record();
    r.processes[0].measurement = None;
    r.processes[0].failure = Some(Failure::new(FailureKind::OutOfMemory, "CUDA out of memory"));
    let s = BenchmarkSummary::from_record(&r);
    assert_eq!(s.outcome.status, BenchmarkStatus::Failed);
    assert_eq!(
        s.outcome.failure.as_ref().unwrap().kind,
        FailureKind::OutOfMemory
    );
    assert!(s.primary().is_none() && s.timing.wall.is_none() && s.throughput.is_none());
    let back: BenchmarkSummary = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
    assert_eq!(s, back);
}

#[test]
fn wall_time_is_primary_without_device_events_and_bad_samples_do_not_panic() {
    let mut r = record();
    let m = r.processes[0].measurement.as_mut().unwrap();
    m.samples[0].device_ns = None;
    m.samples.push(Sample {
        iters: 0,
        wall_ns: 1.0,
        host_ns: 0.0,
        device_ns: None,
        clock: None,
    });
    let s = BenchmarkSummary::from_record(&r);
    assert_eq!(s.timing.primary_kind, Some(TimeKind::Wall));
    assert!(s.timing.device.is_none());
    // The zero-iteration sample gives an infinite time and is left out.
    assert_eq!(s.timing.wall.as_ref().unwrap().samples, 50);
    let json = serde_json::to_string(&s).unwrap();
    let back: BenchmarkSummary = serde_json::from_str(&json).unwrap();
    assert_eq!(s, back);
}

#[test]
fn processes_give_the_estimate_the_spread_and_per_process_cold_calls() {
    let mut rng = Pcg64Mcg::seed_from_u64(10);
    let model = GpuLikeSamples::default().with_shift(ProcessShift::Modes {
        slow_factor: 1.7,
        slow_share: 0.5,
        sigma: 0.0,
    });
    let mut r = model.record_processes("add", "NVIDIA H200", 6, 20, &mut rng);
    for (i, process) in r.processes.iter_mut().enumerate() {
        let m = process.measurement.as_mut().unwrap();
        m.cold.push(ColdCall {
            label: "first call".into(),
            wall_ns: 1e8 * (1.0 + i as f64),
            host_ns: 1e7,
            device_ns: None,
        });
        m.flags = if i < 4 {
            vec![Flag::LaunchBound]
        } else {
            vec![Flag::DeviceBound, Flag::Unstable]
        };
    }
    // Make sure both modes are there.
    for (i, process) in r.processes.iter_mut().enumerate() {
        let m = process.measurement.as_mut().unwrap();
        let scale = if i % 2 == 0 { 1.0 } else { 1.7 };
        for (j, x) in m.samples.iter_mut().enumerate() {
            let v = 1e7 * scale * (1.0 + (j % 5) as f64 * 1e-3);
            x.device_ns = Some(v);
            x.wall_ns = v * 1.02;
        }
    }
    let s = BenchmarkSummary::from_record(&r);
    assert_eq!((s.outcome.processes, s.processes()), (6, 6));
    let p = s.primary().unwrap();
    assert_eq!(p.basis, EstimateBasis::Processes);
    assert_eq!(p.samples, 120);
    let gm = (1.7f64).sqrt() * 1e6;
    assert!((p.estimate.point / gm - 1.0).abs() < 0.01, "{p:?}");
    assert!(
        p.estimate.lower < 1.05e6 && p.estimate.upper > 1.65e6,
        "{p:?}"
    );
    assert!(p.processes.unstable && p.processes.modes.is_some());
    assert_eq!(
        s.flags,
        [
            Flag::LaunchBound,
            Flag::Unstable,
            Flag::UnstableAcrossProcesses
        ]
    );
    let cold = &s.cold[0];
    assert_eq!(cold.per_process_wall_ns.len(), 6);
    assert_eq!(cold.wall_ns, 3.5e8);
}

/// The top-level keys a summary's JSON (`--format json`, the report's input) has when
/// every optional part is present, in the order they are written.
const WIRE_KEYS: &[&str] = &[
    "id",
    "name",
    "arg",
    "status",
    "failure",
    "failed_round",
    "rounds",
    "mode",
    "device_label",
    "device_name",
    "primary_kind",
    "bound",
    "wall",
    "host",
    "device",
    "kernel",
    "kernel_method",
    "not_capturable",
    "kernel_unavailable",
    "kernels",
    "launch_overhead",
    "counters",
    "counters_vary",
    "eager_compiled",
    "cold",
    "throughput",
    "memory",
    "memory_growth",
    "total_iters",
    "sync_cost_ns",
    "naive",
    "stop_reason",
    "flags",
    "throttled_samples",
    "sm_clock_mhz",
    "max_temperature_c",
    "other_processes",
    "telemetry_unavailable",
    "power_capped",
    "kernel_clock",
    "energy_unavailable",
    "host_cpus",
    "energy",
    "peak",
];

fn part<T: serde::de::DeserializeOwned>(v: serde_json::Value) -> T {
    serde_json::from_value(v).unwrap()
}

/// A summary with every optional field set, each to a value of its own type.
fn full_summary() -> BenchmarkSummary {
    let mut r = record();
    r.processes[0].eager_compiled = Some(gpubench_record::testing::sample_comparison());
    let mut s = BenchmarkSummary::from_record(&r);
    s.outcome.failed_process = Some(2);
    s.timing.kernel = s.timing.device.clone();
    s.kernels.method = Some(KernelMethod::GraphReplay);
    s.kernels.not_capturable = Some("it syncs".into());
    s.kernels.unavailable = Some("no kernel timing on cpu".into());
    s.kernels.table = vec![part(serde_json::json!(
        {"name": "gemm", "kind": "kernel", "count_per_call": 1.0, "ns_per_call": 9e5}
    ))];
    s.counters.counts = Some(part(serde_json::json!(
        {"calls": 10, "kernels": 3, "memcpys": 0, "memsets": 1, "syncs": 0}
    )));
    s.kernels.launch_overhead = Some(0.1);
    s.memory.peak = Some(part(serde_json::json!(
        {"peak_allocated_bytes": 1024, "peak_reserved_bytes": 2048, "allocated_bytes": 512,
         "reserved_bytes": 2048, "alloc_retries": 0, "num_ooms": 0}
    )));
    s.memory.growth = Some(part(serde_json::json!(
        {"per_call_bytes": 0.0, "per_process_bytes": [0.0], "calls": 8, "holds": false}
    )));
    s.conditions.throttled_samples = 1;
    s.conditions.sm_clock_mhz = Some(1980.0);
    s.conditions.max_temperature_c = Some(61);
    s.conditions.other_processes = vec![4242];
    s.conditions.telemetry_unavailable = Some("no NVIDIA driver/NVML".into());
    s.conditions.host_cpus = Some(part(serde_json::json!({
        "cpus": {"online": 16, "available": 16}, "intra_op_threads": 4,
        "threads_from": "libtorch", "processes": 1, "contended_processes": 0,
        "most_others_runnable": 0, "working_threads": 4
    })));
    s.conditions.power_capped = Some(part(serde_json::json!(
        {"share": 0.97, "samples": 40, "power_limit_w": 700.0}
    )));
    s.conditions.kernel_clock = Some(part(serde_json::json!(
        {"reads": 408, "sm_clock_mhz": 1980.0, "power_capped_share": 0.0}
    )));
    s.conditions.energy_unavailable = Some("no GPU telemetry".into());
    s.energy = Some(part(serde_json::json!({
        "joules_per_call": 1.16, "per_process_joules": [1.16], "power_w": 709.0,
        "idle_w": 83.0, "windows": 3, "window_s": 0.3, "steps": 9, "window_spread": 0.01
    })));
    s.peak = crate::peaks::PeakShare::of(
        "NVIDIA H200",
        Throughput::Flops(2.0 * 8192f64.powi(3)),
        1.395e6,
        Some("bf16"),
        Some(1707.0),
        None,
    );
    assert!(s.peak.is_some());
    s
}

/// The clock of the paced replays (`--flush-l2`), over every process, weighted by
/// each process's reads; nothing where no process read it.
#[test]
fn the_kernel_replays_clock_is_summed_over_processes() {
    use gpubench_record::kernels::{KernelMeasurement, KernelMethod, ReplayClock};
    let mut rng = Pcg64Mcg::seed_from_u64(3);
    let mut r = GpuLikeSamples::default().record_processes("mm", "NVIDIA H200", 2, 20, &mut rng);
    assert!(BenchmarkSummary::from_record(&r)
        .conditions
        .kernel_clock
        .is_none());
    let clocks = [(300, 1980.0, 0), (100, 1700.0, 100)];
    for (m, (reads, mhz, capped)) in r
        .processes
        .iter_mut()
        .filter_map(|r| r.measurement.as_mut())
        .zip(clocks)
    {
        m.kernel = Some(KernelMeasurement {
            method: KernelMethod::GraphReplay,
            not_capturable: None,
            samples_ns: vec![1e6],
            kernels: Vec::new(),
            counters: None,
            l2: Some(gpubench_record::cache::L2State::Flushed),
            clock: Some(ReplayClock {
                reads,
                sm_mhz_mean: mhz,
                sm_mhz_min: mhz as u32,
                sm_mhz_max: mhz as u32,
                power_capped: capped,
                throttled: 0,
            }),
        });
    }
    let k = BenchmarkSummary::from_record(&r)
        .conditions
        .kernel_clock
        .expect("the replays' clock was read");
    assert_eq!(k.reads, 400);
    assert!((k.sm_clock_mhz - 1910.0).abs() < 1e-9, "{k:?}");
    assert!((k.power_capped_share - 0.25).abs() < 1e-12, "{k:?}");
    assert!(k.differs_from(1700.0) && !k.differs_from(1980.0));
}

#[test]
fn the_summary_json_is_one_flat_object_with_its_keys_in_order() {
    let s = full_summary();
    let json = serde_json::to_string(&s).unwrap();
    let KeysInOrder(keys) = serde_json::from_str(&json).unwrap();
    assert_eq!(keys, WIRE_KEYS);
    let back: BenchmarkSummary = serde_json::from_str(&json).unwrap();
    assert_eq!(back, s);
}

/// A JSON object's keys in the order they were written (`serde_json::Value` sorts them).
struct KeysInOrder(Vec<String>);

impl<'de> Deserialize<'de> for KeysInOrder {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Keys;
        impl<'de> serde::de::Visitor<'de> for Keys {
            type Value = KeysInOrder;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<KeysInOrder, A::Error> {
                let mut keys = Vec::new();
                while let Some((k, serde::de::IgnoredAny)) = map.next_entry::<String, _>()? {
                    keys.push(k);
                }
                Ok(KeysInOrder(keys))
            }
        }
        d.deserialize_map(Keys)
    }
}
