//! Engine tests on the simulated asynchronous device and on the CPU. Tests only, just
//! over 600 lines: they share the timing helpers at the top (`in_one_of_three`,
//! `measure_on`), which a split would repeat.

use std::cell::Cell;
use std::collections::HashSet;
use std::rc::Rc;
use std::time::{Duration, Instant};

use gpubench_analysis::stats::median;
use gpubench_record::cache::L2State;
use gpubench_record::kernels::{Counter, KernelMethod};
use gpubench_record::measurement::{
    Flag, Measurement, MeasurementConfig, ProcessPolicy, RunMode, StopReason,
};

use crate::device::spin_until;
use crate::device::{DeviceBackend, SimulatedDevice, TorchDevice};
use crate::engine::kernels;
use crate::Bencher;

/// Timing tests spin on the CPU; run them one at a time so they do not steal each
/// other's cores on a small CI machine.
pub(crate) static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn fast_config() -> MeasurementConfig {
    MeasurementConfig {
        mode: RunMode::Bench,
        warmup_time_s: 0.05,
        measurement_time_s: 0.4,
        sample_target_s: 0.005,
        min_samples: 5,
        max_samples: 60,
        target_rel_ci: 0.02,
        flush_l2: false,
        processes: ProcessPolicy::single(),
        throttle_threshold: gpubench_record::telemetry::THROTTLE_CLOCK_FRACTION,
        cpu_threads: None,
    }
}

fn spin(d: Duration) {
    spin_until(Instant::now() + d);
}

pub(crate) fn measure_on(
    device: Rc<dyn DeviceBackend>,
    config: MeasurementConfig,
    body: impl FnOnce(&mut Bencher),
) -> Measurement {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut b = Bencher::new("test", device, config);
    body(&mut b);
    b.measurement.take().expect("the routine was measured")
}

fn within(actual: f64, expected: f64, tolerance: f64) -> bool {
    (actual / expected - 1.0).abs() <= tolerance
}

/// Timing assertions on a shared machine: other processes can only make a run
/// slower, so a check that holds in one of three runs shows the engine is right.
pub(crate) fn in_one_of_three(mut attempt: impl FnMut() -> Result<(), String>) {
    let mut errors = Vec::new();
    for _ in 0..3 {
        match attempt() {
            Ok(()) => return,
            Err(e) => errors.push(e),
        }
    }
    panic!("failed in three runs: {errors:#?}");
}

macro_rules! ensure {
    ($cond:expr, $($fmt:tt)*) => {
        let holds: bool = $cond;
        if !holds {
            return Err(format!($($fmt)*));
        }
    };
}

#[test]
fn device_time_is_reported_where_a_naive_timer_sees_only_the_launch() {
    in_one_of_three(|| {
        let dev = Rc::new(SimulatedDevice::new());
        let work = Duration::from_millis(2);
        let d = Rc::clone(&dev);
        let m = measure_on(dev.clone(), fast_config(), move |b| {
            b.naive_loops(&[20]);
            b.iter(|| d.launch(work));
        });
        let device = median(&m.device_per_iter().expect("simulated device has a timer"));
        let wall = median(&m.wall_per_iter());
        let host = median(&m.host_per_iter());
        ensure!(within(device, 2e6, 0.05), "device {device} ns");
        ensure!(within(wall, 2e6, 0.10), "synced wall {wall} ns");
        ensure!(
            host < 0.2e6,
            "host dispatch {host} ns should be tiny: launches return at once"
        );
        let naive = &m.naive[0];
        ensure!(naive.naive_ns_per_iter < 0.2e6, "naive {:?}", naive);
        ensure!(
            within(naive.synced_ns_per_iter, 2e6, 0.10),
            "synced {:?}",
            naive
        );
        ensure!(m.flags.contains(&Flag::DeviceBound), "{:?}", m.flags);
        ensure!(
            !m.flags.contains(&Flag::SyncsInsideRoutine),
            "{:?}",
            m.flags
        );
        Ok(())
    });
}

#[test]
fn cold_first_call_is_kept_out_of_the_steady_state() {
    let dev = Rc::new(SimulatedDevice::new());
    let first = Cell::new(true);
    let d = Rc::clone(&dev);
    let m = measure_on(dev.clone(), fast_config(), move |b| {
        b.iter(|| {
            if first.replace(false) {
                d.launch(Duration::from_millis(60));
            }
            d.launch(Duration::from_micros(500));
        })
    });
    assert_eq!(m.cold.len(), 1);
    assert_eq!(m.cold[0].label, "first call");
    assert!(m.cold[0].wall_ns >= 60e6, "cold {:?}", m.cold[0]);
    let worst = m
        .samples
        .iter()
        .map(|s| s.per_iter_wall())
        .fold(0.0, f64::max);
    assert!(
        worst < 5e6,
        "a steady-state sample contains the cold call: {worst} ns"
    );
    assert!(within(median(&m.primary_per_iter()), 0.5e6, 0.05));
}

#[test]
fn each_new_shape_gets_its_own_cold_call() {
    let dev = Rc::new(SimulatedDevice::new());
    let seen = std::cell::RefCell::new(HashSet::new());
    let d = Rc::clone(&dev);
    let inputs: Vec<usize> = vec![16, 32, 16, 7, 32, 100, 16];
    let m = measure_on(dev.clone(), fast_config(), move |b| {
        b.iter_inputs(inputs, |&len| {
            if seen.borrow_mut().insert(len) {
                // A compiled model re-specialising for a shape it has not seen.
                d.launch(Duration::from_millis(20));
            }
            d.launch(Duration::from_micros(100 * len as u64 / 16));
        })
    });
    let labels: Vec<&str> = m.cold.iter().map(|c| c.label.as_str()).collect();
    assert_eq!(
        labels,
        [
            "first call, shape 16",
            "new shape 32",
            "new shape 7",
            "new shape 100"
        ]
    );
    assert!(m.cold.iter().all(|c| c.wall_ns >= 20e6), "{:?}", m.cold);
    let worst = m
        .samples
        .iter()
        .map(|s| s.per_iter_wall())
        .fold(0.0, f64::max);
    assert!(worst < 5e6, "steady state includes a recompile: {worst} ns");
}

#[test]
fn adaptive_stopping_stops_early_on_quiet_data_and_at_the_bound_on_noisy_data() {
    let dev = Rc::new(SimulatedDevice::new());
    let d = Rc::clone(&dev);
    let quiet = measure_on(dev.clone(), fast_config(), move |b| {
        b.iter(|| d.launch(Duration::from_micros(200)))
    });
    assert_eq!(quiet.stop_reason, StopReason::Converged);
    assert!(quiet.samples.len() < 60, "{} samples", quiet.samples.len());

    let dev = Rc::new(SimulatedDevice::new());
    let d = Rc::clone(&dev);
    // Deterministic but wildly varying durations: 0.1 ms to 5 ms, k = 1 per sample.
    let state = Cell::new(12345u64);
    let config = MeasurementConfig {
        sample_target_s: 0.0001,
        max_samples: 10_000,
        ..fast_config()
    };
    let start = Instant::now();
    let noisy = measure_on(dev.clone(), config, move |b| {
        b.iter(|| {
            let x = state
                .get()
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            state.set(x);
            let us = 100 + (x >> 33) % 4900;
            d.launch(Duration::from_micros(us));
        })
    });
    assert_eq!(noisy.stop_reason, StopReason::TimeBound);
    assert!(noisy.flags.contains(&Flag::Unstable));
    assert!(
        start.elapsed() < Duration::from_secs(3),
        "ran far past its bound"
    );
}

#[test]
fn busy_wait_of_known_duration_is_reported_within_a_few_percent() {
    in_one_of_three(|| {
        let cpu: Rc<dyn DeviceBackend> = Rc::new(TorchDevice::new(tch::Device::Cpu));
        let m = measure_on(cpu, fast_config(), |b| {
            b.iter(|| spin(Duration::from_micros(500)))
        });
        let per_iter = median(&m.primary_per_iter());
        ensure!(
            within(per_iter, 0.5e6, 0.03),
            "{per_iter} ns for a 500 µs busy-wait"
        );
        ensure!(!m.device_timer, "the CPU has no device timer");
        ensure!(m.memory.is_none(), "CPU memory must be absent, not zero");
        Ok(())
    });
}

#[test]
fn a_routine_that_waits_on_the_device_is_flagged() {
    let dev = Rc::new(SimulatedDevice::new());
    let d = Rc::clone(&dev);
    let m = measure_on(dev.clone(), fast_config(), move |b| {
        b.iter(|| {
            d.launch(Duration::from_micros(300));
            // Like `.item()`: the host waits for the result.
            d.wait_idle();
        })
    });
    assert!(m.flags.contains(&Flag::SyncsInsideRoutine), "{:?}", m.flags);
    assert!(!m.flags.contains(&Flag::LaunchBound), "{:?}", m.flags);
}

#[test]
fn a_routine_whose_host_work_outlasts_its_device_work_is_launch_bound() {
    in_one_of_three(|| {
        let dev = Rc::new(SimulatedDevice::new());
        let d = Rc::clone(&dev);
        let m = measure_on(dev.clone(), fast_config(), move |b| {
            b.iter(|| {
                // 200 µs of host-side dispatch for 20 µs of device work.
                spin(Duration::from_micros(200));
                d.launch(Duration::from_micros(20));
            })
        });
        ensure!(m.flags.contains(&Flag::LaunchBound), "{:?}", m.flags);
        ensure!(
            !m.flags.contains(&Flag::SyncsInsideRoutine),
            "{:?}",
            m.flags
        );
        Ok(())
    });
}

#[test]
fn setup_is_not_timed() {
    in_one_of_three(|| {
        let cpu: Rc<dyn DeviceBackend> = Rc::new(TorchDevice::new(tch::Device::Cpu));
        let m = measure_on(cpu, fast_config(), |b| {
            b.iter_with_setup(
                || spin(Duration::from_micros(400)),
                |()| spin(Duration::from_micros(100)),
            )
        });
        let per_iter = median(&m.primary_per_iter());
        ensure!(
            within(per_iter, 0.1e6, 0.10),
            "{per_iter} ns: setup leaked into the timing"
        );
        Ok(())
    });
}

/// Inputs made by an `iter_with_setup` setup that are alive now, and the most alive
/// at once so far.
#[derive(Default)]
struct LiveInputs {
    now: Cell<u64>,
    most: Cell<u64>,
}

/// One input that counts itself in [`LiveInputs`] while it is alive.
struct CountedInput(Rc<LiveInputs>);

impl CountedInput {
    fn new(live: &Rc<LiveInputs>) -> Self {
        live.now.set(live.now.get() + 1);
        live.most.set(live.most.get().max(live.now.get()));
        CountedInput(Rc::clone(live))
    }
}

impl Drop for CountedInput {
    fn drop(&mut self) {
        self.0.now.set(self.0.now.get() - 1);
    }
}

/// `iter_with_setup` on the CPU with samples of `sample_s`, each call taking
/// `base` plus `per_live` for every input alive (as cache misses and allocator work
/// grow with the memory inputs hold); returns the measurement and the most inputs
/// alive at once.
fn with_setup(sample_s: f64, base: Duration, per_live: Duration) -> (Measurement, u64) {
    let cpu: Rc<dyn DeviceBackend> = Rc::new(TorchDevice::new(tch::Device::Cpu));
    let live = Rc::new(LiveInputs::default());
    let (make, call) = (Rc::clone(&live), Rc::clone(&live));
    let config = MeasurementConfig {
        sample_target_s: sample_s,
        ..fast_config()
    };
    let m = measure_on(cpu, config, move |b| {
        b.iter_with_setup(
            || CountedInput::new(&make),
            |input| {
                let alive = u32::try_from(call.now.get()).unwrap_or(u32::MAX);
                spin(base + per_live * alive);
                drop(input);
            },
        )
    });
    (m, live.most.get())
}

#[test]
fn inputs_alive_at_once_do_not_grow_with_the_sample_time() {
    // 20 µs calls: batches of about 1 ms hold 32 to 64 inputs, whatever the sample.
    for sample_s in [0.002, 0.02] {
        let (m, most) = with_setup(sample_s, Duration::from_micros(20), Duration::ZERO);
        let iters = m.samples.iter().map(|s| s.iters).max().unwrap_or(0);
        assert!(
            most <= 128,
            "{most} inputs alive at once with samples of {sample_s} s ({iters} calls each)"
        );
        // A long sample still holds as many calls as fit in it at the per-call time
        // measured (a loaded machine makes calls slower, not batches shorter).
        let fit = sample_s / (median(&m.primary_per_iter()) * 1e-9);
        if sample_s > 0.01 {
            assert!(
                iters as f64 >= 0.5 * fit,
                "samples of {iters} calls where {fit:.0} fit"
            );
        }
    }
}

#[test]
fn per_call_time_with_setup_does_not_depend_on_the_sample_time() {
    // Each input alive costs every call 50 ns: a whole 20 ms sample prepared up front
    // (about 700 inputs) would add some 18 µs to a 20 µs call, a 2 ms one about 2 µs.
    in_one_of_three(|| {
        let per_call = |sample_s| {
            let (m, _) = with_setup(
                sample_s,
                Duration::from_micros(20),
                Duration::from_nanos(50),
            );
            median(&m.primary_per_iter())
        };
        let (short, long) = (per_call(0.002), per_call(0.02));
        ensure!(
            within(long, short, 0.08),
            "{short} ns per call with samples of 2 ms, {long} ns with 20 ms"
        );
        Ok(())
    });
}

#[test]
fn peak_memory_comes_from_the_device() {
    let dev = Rc::new(SimulatedDevice::new());
    let d = Rc::clone(&dev);
    dev.reset_memory();
    let m = measure_on(dev.clone(), fast_config(), move |b| {
        b.iter(|| {
            d.allocate(1 << 20);
            d.launch(Duration::from_micros(100));
            d.free(1 << 20);
        })
    });
    assert_eq!(
        m.memory.expect("simulated memory").peak_allocated_bytes,
        1 << 20
    );
}

#[test]
fn smoke_mode_makes_exactly_one_call() {
    let cpu: Rc<dyn DeviceBackend> = Rc::new(TorchDevice::new(tch::Device::Cpu));
    let calls = Rc::new(Cell::new(0));
    let c = Rc::clone(&calls);
    let config = MeasurementConfig {
        mode: RunMode::Smoke,
        ..fast_config()
    };
    let m = measure_on(cpu, config, move |b| b.iter(|| c.set(c.get() + 1)));
    assert_eq!(calls.get(), 1);
    assert_eq!(m.stop_reason, StopReason::Smoke);
    assert!(m.samples.is_empty());
}

#[test]
fn flush_l2_times_one_call_per_sample_after_a_flush() {
    let dev = Rc::new(SimulatedDevice::new());
    let d = Rc::clone(&dev);
    let config = MeasurementConfig {
        flush_l2: true,
        ..fast_config()
    };
    let warmup_s = config.warmup_time_s;
    let m = measure_on(dev.clone(), config, move |b| {
        b.iter(|| d.launch(Duration::from_micros(50)))
    });
    assert!(
        m.samples.iter().all(|s| s.iters == 1),
        "a flushed sample holds one call"
    );
    // The warm-up runs flushed calls for its whole time, so that the samples and the
    // replays after them start from the clock the work holds.
    let warm_calls: u64 = m.warmup.iter().map(|p| p.iters).sum();
    let warm_ns: f64 = m.warmup.iter().map(|p| p.wall_ns).sum();
    assert!(
        warm_ns >= 0.5 * warmup_s * 1e9 && warm_calls > 3,
        "{warm_calls} warm-up calls in {warm_ns} ns of a {warmup_s} s warm-up"
    );
    let timed_regions = warm_calls + m.samples.len() as u64;
    assert!(
        dev.cache_flushes() >= timed_regions,
        "{} flushes for {timed_regions} timed regions",
        dev.cache_flushes()
    );
    // Kernel time too: graphs of one call, each replay after a flush.
    let kernel = m.kernel.as_ref().expect("kernel time");
    assert_eq!(kernel.l2, Some(L2State::Flushed));
    assert_eq!(m.l2, Some(L2State::Flushed));
    let replays = (kernel.samples_ns.len() + kernels::CAPTURES) as u64;
    assert!(
        dev.cache_flushes() >= timed_regions + replays,
        "{} flushes for {timed_regions} timed regions and {replays} timed replays at least",
        dev.cache_flushes()
    );
    assert!(
        within(median(&kernel.samples_ns), 50e3, 0.1),
        "{:?}",
        kernel.samples_ns
    );
}

#[test]
fn kernel_time_is_the_graph_replay_of_the_kernels_without_host_gaps() {
    in_one_of_three(|| {
        let dev = Rc::new(SimulatedDevice::new());
        let d = Rc::clone(&dev);
        let m = measure_on(dev.clone(), fast_config(), move |b| {
            b.iter(|| {
                // Launch-bound: 400 µs of host work around 250 µs of kernels.
                spin(Duration::from_micros(200));
                d.launch_kernel("gemm", Duration::from_micros(200));
                spin(Duration::from_micros(200));
                d.launch_kernel("add", Duration::from_micros(50));
            })
        });
        let k = m
            .kernel
            .as_ref()
            .ok_or(format!("{:?}", m.kernel_unavailable))?;
        ensure!(k.method == KernelMethod::GraphReplay, "{k:?}");
        ensure!(k.not_capturable.is_none(), "{k:?}");
        let kernel = median(&k.samples_ns);
        ensure!(within(kernel, 250e3, 0.05), "kernel time {kernel} ns");
        let device = median(&m.device_per_iter().unwrap());
        ensure!(device > 1.4 * kernel, "device {device} vs kernel {kernel}");
        let c = k.counters.ok_or("the first process counts")?;
        ensure!(c.per_call(Counter::Kernels) == Some(2.0), "{c:?}");
        ensure!(c.per_call(Counter::Syncs) == Some(0.0), "{c:?}");
        let names: Vec<&str> = k.kernels.iter().map(|s| s.name.as_str()).collect();
        ensure!(names == ["gemm", "add"], "{names:?}");
        ensure!(
            within(k.kernels[0].ns_per_call, 200e3, 0.01),
            "{:?}",
            k.kernels
        );
        // The graph is replayed before the profiler runs, which would slow it.
        ensure!(
            dev.replays_after_profiling() == 0,
            "replayed after profiling"
        );
        Ok(())
    });
}

#[test]
fn a_stream_is_counted_and_timed_over_whole_cycles_of_its_inputs() {
    // Inputs that launch 1, 1 and 10 kernels: any stretch that is not whole cycles
    // counts other than 4 per call. The stretches' lengths follow the measured call
    // time, so two host costs per call must give the same figures.
    for host in [Duration::from_micros(30), Duration::from_micros(170)] {
        let dev = Rc::new(SimulatedDevice::new());
        let d = Rc::clone(&dev);
        let m = measure_on(dev.clone(), fast_config(), move |b| {
            b.iter_inputs(vec![1usize, 1, 10], |&n| {
                spin(host);
                for _ in 0..n {
                    d.launch_kernel("k", Duration::from_micros(20));
                }
            })
        });
        let k = m
            .kernel
            .as_ref()
            .expect("the simulated device times kernels");
        let c = k.counters.as_ref().expect("the first process counts");
        assert_eq!(c.calls % 3, 0, "{host:?}: {c:?}");
        assert_eq!(c.per_call(Counter::Kernels), Some(4.0), "{host:?}: {c:?}");
        let kernel = median(&k.samples_ns);
        assert!(
            within(kernel, 80e3, 0.05),
            "{host:?}: kernel time {kernel} ns"
        );
    }
}

#[test]
fn kernel_time_is_the_median_over_several_captured_graphs() {
    use crate::engine::kernels::{CAPTURES, SAMPLES_PER_CAPTURE};
    in_one_of_three(|| {
        let dev = Rc::new(SimulatedDevice::new());
        // One graph of the four replays 30% slower, as a graph of the same calls can.
        dev.set_graph_slowdowns(vec![1.0, 1.3, 1.0, 1.0]);
        let d = Rc::clone(&dev);
        let m = measure_on(dev.clone(), fast_config(), move |b| {
            b.iter(|| d.launch_kernel("add", Duration::from_micros(100)))
        });
        let k = m
            .kernel
            .as_ref()
            .ok_or(format!("{:?}", m.kernel_unavailable))?;
        ensure!(dev.captures() == CAPTURES, "{} captures", dev.captures());
        ensure!(
            k.samples_ns.len() == CAPTURES * SAMPLES_PER_CAPTURE,
            "{} samples",
            k.samples_ns.len()
        );
        let kernel = median(&k.samples_ns);
        ensure!(within(kernel, 100e3, 0.05), "kernel time {kernel} ns");
        let slow = k.samples_ns.iter().filter(|&&s| s > 120e3).count();
        ensure!(slow == SAMPLES_PER_CAPTURE, "{:?}", k.samples_ns);
        Ok(())
    });
}

#[test]
fn a_routine_a_graph_cannot_hold_is_timed_by_the_profiler_and_says_why() {
    in_one_of_three(|| {
        let dev = Rc::new(SimulatedDevice::new());
        let d = Rc::clone(&dev);
        let m = measure_on(dev.clone(), fast_config(), move |b| {
            b.iter(|| {
                d.launch_kernel("reduce", Duration::from_micros(300));
                d.allocate(4096);
                d.free(4096);
                // Like `.item()`.
                d.wait_idle();
            })
        });
        let k = m
            .kernel
            .as_ref()
            .ok_or(format!("{:?}", m.kernel_unavailable))?;
        ensure!(k.method == KernelMethod::Profiler, "{k:?}");
        let why = k.not_capturable.as_deref().unwrap_or("");
        ensure!(why.contains("synchronised"), "{why}");
        ensure!(
            within(median(&k.samples_ns), 300e3, 0.02),
            "{:?}",
            k.samples_ns
        );
        let c = k.counters.ok_or("counted")?;
        ensure!(c.per_call(Counter::Syncs) == Some(1.0), "{c:?}");
        ensure!(c.per_call(Counter::Allocations) == Some(1.0), "{c:?}");
        ensure!(c.per_call(Counter::AllocatedBytes) == Some(4096.0), "{c:?}");
        Ok(())
    });
}

#[test]
fn captured_calls_drop_their_output_before_the_next_call() {
    use std::cell::Cell;

    /// An output that counts how many are alive.
    struct Output(Rc<Cell<u32>>);
    impl Drop for Output {
        fn drop(&mut self) {
            self.0.set(self.0.get() - 1);
        }
    }

    let dev = Rc::new(SimulatedDevice::new());
    let d = Rc::clone(&dev);
    let live = Rc::new(Cell::new(0u32));
    let most_while_captured = Rc::new(Cell::new(0u32));
    let (l, most) = (Rc::clone(&live), Rc::clone(&most_while_captured));
    let m = measure_on(dev.clone(), fast_config(), move |b| {
        b.iter(|| {
            d.launch_kernel("add", Duration::from_micros(50));
            l.set(l.get() + 1);
            if d.is_capturing() {
                most.set(most.get().max(l.get()));
            }
            Output(Rc::clone(&l))
        })
    });
    assert_eq!(
        m.kernel.expect("kernel time").method,
        KernelMethod::GraphReplay
    );
    // A graph's memory pool reuses a buffer only once it is freed: one output alive
    // at a time, as PyTorch's graph replay has it.
    assert_eq!(most_while_captured.get(), 1);
    assert_eq!(live.get(), 0, "every output is dropped in the end");
}

#[test]
fn a_later_process_times_kernels_without_profiling() {
    let dev = Rc::new(SimulatedDevice::new());
    let d = Rc::clone(&dev);
    let m = measure_on(dev.clone(), fast_config(), move |b| {
        b.diagnostics(false);
        b.iter(|| d.launch_kernel("gemm", Duration::from_micros(100)));
    });
    let k = m.kernel.expect("kernel time");
    assert!(k.kernels.is_empty() && k.counters.is_none(), "{k:?}");
    assert!(
        within(median(&k.samples_ns), 100e3, 0.05),
        "{:?}",
        k.samples_ns
    );
}

#[test]
fn the_cpu_says_it_has_no_kernel_timing() {
    let cpu: Rc<dyn DeviceBackend> = Rc::new(TorchDevice::new(tch::Device::Cpu));
    let m = measure_on(cpu, fast_config(), |b| {
        let x = tch::Tensor::ones([64], (tch::Kind::Float, tch::Device::Cpu));
        b.iter(|| &x + 1.0);
    });
    assert!(m.kernel.is_none());
    assert_eq!(
        m.kernel_unavailable.as_deref(),
        Some("no kernel timing on cpu")
    );
}

#[test]
fn a_flushed_call_is_timed_without_the_hosts_dispatch_and_kernel_time_agrees() {
    in_one_of_three(|| {
        let dev = Rc::new(SimulatedDevice::new());
        // The flush keeps the device busy while the host dispatches the call.
        dev.set_flush_work(Duration::from_millis(1));
        let d = Rc::clone(&dev);
        let config = MeasurementConfig {
            flush_l2: true,
            ..fast_config()
        };
        let m = measure_on(dev.clone(), config, move |b| {
            b.iter(|| {
                // 300 µs of host dispatch before 200 µs of kernel.
                spin(Duration::from_micros(300));
                d.launch(Duration::from_micros(200));
            })
        });
        let device = median(&m.device_per_iter().unwrap());
        ensure!(
            within(device, 200e3, 0.1),
            "device {device} ns holds the dispatch"
        );
        let kernel = median(&m.kernel.as_ref().ok_or("no kernel time")?.samples_ns);
        ensure!(
            within(kernel / device, 1.0, 0.05),
            "kernel {kernel} ns against device {device} ns"
        );
        // The dispatch outlasts the kernel: launch-bound, as calls back to back are.
        ensure!(m.flags.contains(&Flag::LaunchBound), "{:?}", m.flags);
        Ok(())
    });
}

#[test]
fn a_flushed_call_longer_than_its_dispatch_is_device_bound_though_the_flush_fills_its_wall_time() {
    in_one_of_three(|| {
        let dev = Rc::new(SimulatedDevice::new());
        dev.set_flush_work(Duration::from_millis(1));
        let d = Rc::clone(&dev);
        let config = MeasurementConfig {
            flush_l2: true,
            ..fast_config()
        };
        let m = measure_on(dev.clone(), config, move |b| {
            b.iter(|| {
                spin(Duration::from_micros(30));
                d.launch(Duration::from_micros(400));
            })
        });
        let wall = median(
            &m.samples
                .iter()
                .map(|s| s.per_iter_wall())
                .collect::<Vec<_>>(),
        );
        let device = median(&m.device_per_iter().unwrap());
        ensure!(within(device, 400e3, 0.1), "device {device} ns");
        ensure!(wall > 2.0 * device, "wall {wall} ns holds the flush's tail");
        ensure!(m.flags.contains(&Flag::DeviceBound), "{:?}", m.flags);
        Ok(())
    });
}
