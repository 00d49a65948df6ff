//! Telemetry tests with a scripted fake GPU: throttled samples are flagged and left
//! out, another process on the GPU flags the process contended, and a device without
//! telemetry only says why.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::{Duration, Instant};

use gpubench_analysis::stats::median;
use gpubench_analysis::telemetry::TelemetrySource;
use gpubench_record::measurement::{Flag, MeasurementConfig, ProcessPolicy, RunMode};
use gpubench_record::record::ProcessRecord;
use gpubench_record::telemetry::{
    ClockReading, GpuProcess, GpuState, SlowdownReason, TelemetryReading,
};

use crate::device::spin_until;
use crate::device::{DeviceBackend, TorchDevice};
use crate::telemetry::Telemetry;
use crate::Bencher;

/// A GPU whose every `period`-th sample runs throttled, at a third of its clock, and
/// whose full readings list `processes` in turn.
struct FakeGpu {
    period: u32,
    reads: Cell<u32>,
    /// Whether the sample now running is throttled: the routine runs slower then.
    throttled_now: Rc<Cell<bool>>,
    processes: RefCell<Vec<Vec<u32>>>,
}

impl FakeGpu {
    fn new(period: u32, processes: Vec<Vec<u32>>) -> Self {
        FakeGpu {
            period,
            reads: Cell::new(0),
            throttled_now: Rc::new(Cell::new(false)),
            processes: RefCell::new(processes),
        }
    }

    fn clock(&self) -> ClockReading {
        let throttled = self.throttled_now.get();
        ClockReading {
            sm_clock_mhz: if throttled { 660 } else { 1980 },
            temperature_c: Some(if throttled { 87 } else { 52 }),
            slowdown: if throttled {
                vec![SlowdownReason::SwPowerCap]
            } else {
                vec![]
            },
            power_w: Some(if throttled { 700.0 } else { 350.0 }),
        }
    }
}

impl TelemetrySource for FakeGpu {
    fn state(&self) -> GpuState {
        GpuState {
            driver_version: Some("580.95.05".into()),
            max_sm_clock_mhz: Some(1980),
            default_sm_clock_mhz: Some(1980),
            ..GpuState::default()
        }
    }

    fn read(&self) -> Result<TelemetryReading, String> {
        let mut queue = self.processes.borrow_mut();
        let pids = if queue.len() > 1 {
            queue.remove(0)
        } else {
            queue.first().cloned().unwrap_or_default()
        };
        Ok(TelemetryReading {
            clock: self.clock(),
            memory_clock_mhz: Some(2619),
            power_limit_w: Some(700.0),
            processes: pids
                .into_iter()
                .map(|pid| GpuProcess {
                    pid,
                    used_memory_bytes: Some(1 << 30),
                })
                .collect(),
        })
    }

    /// Reports the sample that just ran, then decides whether the next one throttles.
    fn read_clock(&self) -> Result<ClockReading, String> {
        let reading = self.clock();
        let n = self.reads.get() + 1;
        self.reads.set(n);
        self.throttled_now.set(n.is_multiple_of(self.period));
        Ok(reading)
    }
}

fn config() -> MeasurementConfig {
    MeasurementConfig {
        mode: RunMode::Bench,
        warmup_time_s: 0.02,
        measurement_time_s: 0.3,
        sample_target_s: 0.002,
        min_samples: 12,
        max_samples: 40,
        target_rel_ci: 0.0001,
        flush_l2: false,
        processes: ProcessPolicy::single(),
        throttle_threshold: gpubench_record::telemetry::THROTTLE_CLOCK_FRACTION,
        cpu_threads: None,
    }
}

fn cpu() -> Rc<dyn DeviceBackend> {
    Rc::new(TorchDevice::new(tch::Device::Cpu))
}

/// Spinning tests take turns with the engine's timing tests.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    crate::engine_tests::SERIAL
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

#[test]
fn throttled_samples_are_flagged_counted_and_left_out_of_the_figures() {
    let _serial = serial();
    let gpu = Rc::new(FakeGpu::new(3, vec![vec![]]));
    let slow = Rc::clone(&gpu.throttled_now);
    let telemetry = Telemetry::new(gpu.clone());
    let mut b = Bencher::new("throttling", cpu(), config());
    b.telemetry(Some(telemetry));
    // A throttled sample runs three times slower, as at a third of the clock.
    b.iter(|| {
        let d = Duration::from_micros(if slow.get() { 600 } else { 200 });
        spin_until(Instant::now() + d);
    });
    let m = b.measurement.take().unwrap();
    let throttled = m.samples.iter().filter(|s| s.throttled()).count();
    assert!(
        throttled >= 3,
        "{throttled} throttled of {}",
        m.samples.len()
    );
    assert_eq!(m.throttled_samples(), throttled);
    assert!(m.flags.contains(&Flag::Throttled), "{:?}", m.flags);
    assert!(m.samples.iter().all(|s| s.clock.is_some()));
    let hot = m
        .samples
        .iter()
        .filter_map(|s| s.clock)
        .find(|c| c.throttled);
    assert_eq!(
        hot.map(|c| (c.sm_mhz, c.temperature_c)),
        Some((660, Some(87)))
    );
    // The figure is the full-clock one: no kept sample is a slow one.
    let kept = m.primary_per_iter();
    assert_eq!(kept.len(), m.samples.len() - throttled);
    let per_iter = median(&kept);
    assert!(
        per_iter < 400e3,
        "{per_iter} ns: throttled samples moved it"
    );
    assert!(
        kept.iter().all(|&x| x < 450e3),
        "a throttled sample was kept: {kept:?}"
    );
}

#[test]
fn a_lower_throttle_threshold_keeps_power_capped_samples() {
    let _serial = serial();
    let gpu = Rc::new(FakeGpu::new(3, vec![vec![]]));
    let slow = Rc::clone(&gpu.throttled_now);
    let mut b = Bencher::new(
        "power-capped",
        cpu(),
        MeasurementConfig {
            // The fake's slow samples run at a third of the default clock, with the
            // power cap as their only reason: kept below a third.
            throttle_threshold: 0.3,
            ..config()
        },
    );
    b.telemetry(Some(Telemetry::new(gpu.clone())));
    b.iter(|| {
        let d = Duration::from_micros(if slow.get() { 600 } else { 200 });
        spin_until(Instant::now() + d);
    });
    let m = b.measurement.take().unwrap();
    let slow_samples = m
        .samples
        .iter()
        .filter(|s| s.clock.is_some_and(|c| c.sm_mhz == 660))
        .count();
    assert!(slow_samples >= 3, "{slow_samples} slow samples");
    assert_eq!(m.throttled_samples(), 0);
    assert!(!m.flags.contains(&Flag::Throttled), "{:?}", m.flags);
}

#[test]
fn a_gpu_that_never_throttles_flags_nothing() {
    let _serial = serial();
    let gpu = Rc::new(FakeGpu::new(u32::MAX, vec![vec![]]));
    let mut b = Bencher::new("steady", cpu(), config());
    b.telemetry(Some(Telemetry::new(gpu)));
    b.iter(|| spin_until(Instant::now() + Duration::from_micros(100)));
    let m = b.measurement.take().unwrap();
    assert_eq!(m.throttled_samples(), 0);
    assert!(!m.flags.contains(&Flag::Throttled));
    assert!(m.samples.iter().all(|s| s.clock.unwrap().sm_mhz == 1980));
    // Nothing capped the power, and the fake GPU has no energy counter: it says so.
    assert!(m.samples.iter().all(|s| !s.clock.unwrap().power_capped));
    assert!(m.energy.is_none());
    assert_eq!(m.energy_unavailable.as_deref(), Some("no energy counter"));
}

fn measured_process(
    telemetry: &Telemetry,
) -> (
    ProcessRecord,
    Result<gpubench_analysis::telemetry::TelemetryLog, String>,
) {
    let _serial = serial();
    let log = telemetry.start();
    let mut b = Bencher::new("shared", cpu(), config());
    b.telemetry(Some(telemetry.clone()));
    b.iter(|| spin_until(Instant::now() + Duration::from_micros(100)));
    let mut process = ProcessRecord::first("2026-11-30T00:00:00Z".into());
    process.measurement = b.measurement.take();
    (process, log)
}

#[test]
fn another_process_on_the_gpu_flags_the_process_contended() {
    let me = std::process::id();
    let gpu = Rc::new(FakeGpu::new(u32::MAX, vec![vec![], vec![me, 4242]]));
    let telemetry = Telemetry::new(gpu);
    let (mut process, log) = measured_process(&telemetry);
    telemetry.finish(log, &mut process);
    let t = process.telemetry.as_ref().expect("telemetry recorded");
    assert_eq!(
        t.other_processes.iter().map(|p| p.pid).collect::<Vec<_>>(),
        vec![4242]
    );
    assert_eq!(t.start.power_limit_w, Some(700.0));
    assert_eq!(t.max_temperature_c, Some(52));
    assert!(process.contended());
    assert!(process.telemetry_unavailable.is_none());
    let m = process.measurement.as_ref().unwrap();
    assert!(m.flags.contains(&Flag::Contended), "{:?}", m.flags);
}

#[test]
fn a_gpu_used_by_this_process_alone_is_not_contended() {
    let me = std::process::id();
    let gpu = Rc::new(FakeGpu::new(u32::MAX, vec![vec![], vec![me]]));
    let telemetry = Telemetry::new(gpu);
    let (mut process, log) = measured_process(&telemetry);
    telemetry.finish(log, &mut process);
    assert!(!process.contended());
    assert!(!process
        .measurement
        .unwrap()
        .flags
        .contains(&Flag::Contended));
}

#[test]
fn a_device_without_telemetry_says_why_in_a_few_words() {
    let err = Telemetry::for_device(cpu().as_ref()).err().unwrap();
    assert_eq!(err, "no GPU telemetry on cpu");
    // This crate's tests run without the NVIDIA driver (or with it): either way NVML
    // answers without a panic, and its reason names what is missing.
    if let Err(why) = gpubench_analysis::nvml::NvmlSource::open(None, 0) {
        assert!(why.contains("NVML"), "{why}");
    }
}

/// A GPU that runs power-capped at 1700 MHz once a graph was captured (the kernel
/// replays), at 1980 MHz before (the samples), and notes how many flushes the
/// simulated device had made at each clock read during the replays.
struct ReplayWatcher {
    device: Rc<crate::device::SimulatedDevice>,
    flushes_at_replay_reads: RefCell<Vec<u64>>,
}

impl TelemetrySource for ReplayWatcher {
    fn state(&self) -> GpuState {
        GpuState {
            max_sm_clock_mhz: Some(1980),
            default_sm_clock_mhz: Some(1980),
            ..GpuState::default()
        }
    }

    fn read(&self) -> Result<TelemetryReading, String> {
        Err("not read here".into())
    }

    fn read_clock(&self) -> Result<ClockReading, String> {
        let replaying = self.device.captures() > 0;
        if replaying {
            self.flushes_at_replay_reads
                .borrow_mut()
                .push(self.device.cache_flushes());
        }
        Ok(ClockReading {
            sm_clock_mhz: if replaying { 1700 } else { 1980 },
            temperature_c: None,
            slowdown: if replaying {
                vec![SlowdownReason::SwPowerCap]
            } else {
                vec![]
            },
            power_w: None,
        })
    }
}

/// Kernel time of a 200 µs kernel on the simulated device, watched by a
/// [`ReplayWatcher`]: the measurement and the flushes seen at its reads.
fn watched_replays(flush_l2: bool) -> (gpubench_record::measurement::Measurement, Vec<u64>) {
    let _serial = serial();
    let dev = Rc::new(crate::device::SimulatedDevice::new());
    let watcher = Rc::new(ReplayWatcher {
        device: Rc::clone(&dev),
        flushes_at_replay_reads: RefCell::new(Vec::new()),
    });
    let config = MeasurementConfig {
        flush_l2,
        max_samples: 20,
        ..config()
    };
    let mut b = Bencher::new("paced", dev.clone(), config);
    b.telemetry(Some(Telemetry::new(watcher.clone())));
    let d = Rc::clone(&dev);
    b.iter(|| d.launch(Duration::from_micros(200)));
    let m = b.measurement.take().unwrap();
    let reads = watcher.flushes_at_replay_reads.take();
    (m, reads)
}

#[test]
fn flushed_replays_are_paced_like_the_samples_and_record_their_clock() {
    let (m, flushes_at_reads) = watched_replays(true);
    let kernel = m.kernel.as_ref().expect("kernel time");
    let clock = kernel.clock.expect("the replays' clock is recorded");
    // One read after each replay: every replay timed, the one that says how long a
    // replay takes and the sampled ones, in every captured graph.
    let replays = flushes_at_reads.len() as u32;
    assert_eq!(clock.reads, replays);
    assert!(
        replays as usize >= kernel.samples_ns.len() + crate::engine::kernels::CAPTURES,
        "{replays} reads for {} kernel samples",
        kernel.samples_ns.len()
    );
    // Paced: exactly one flush (and one replay) between two reads, as a flushed
    // sample has one flush between its clock reads (a new graph's capture and upload
    // flush nothing).
    let steps: Vec<u64> = flushes_at_reads.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(
        steps.iter().all(|&s| s == 1),
        "flushes between reads: {steps:?}"
    );
    // The clock the replays ran at, apart from the samples'.
    assert_eq!(
        (clock.sm_mhz_min, clock.sm_mhz_max, clock.sm_mhz_mean),
        (1700, 1700, 1700.0)
    );
    assert_eq!(clock.power_capped, replays);
    assert_eq!(clock.power_capped_share(), 1.0);
    assert!(m.samples.iter().all(|s| s.clock.unwrap().sm_mhz == 1980));
}

#[test]
fn replays_without_the_flush_run_back_to_back_with_no_clock_read() {
    let (m, flushes_at_reads) = watched_replays(false);
    let kernel = m.kernel.as_ref().expect("kernel time");
    assert_eq!(kernel.clock, None);
    assert!(flushes_at_reads.is_empty(), "{flushes_at_reads:?}");
}
