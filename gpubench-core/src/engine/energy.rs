//! Energy per call: windows of back-to-back calls after the samples, with the GPU's
//! energy counter polled by a thread of its own while they run, counted between the
//! counter's steps (`gpubench_analysis::energy`), and the idle power the process
//! read when it started.
//!
//! The calls run with a warm L2 (no `--flush-l2` flushes: the flush's own energy is
//! not the routine's), launched a little faster than the samples' time per call
//! ([`PACE`]) and [`LEAD`] ahead of it, so the device never waits for a call. The
//! counter is read on another thread because a read can take milliseconds (about
//! 4 ms through NVML in a gVisor sandbox on an H200): read between launches, it left
//! the device idle most of each window and counted idle power into every call.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use gpubench_analysis::energy;
use gpubench_analysis::stats::median;
use gpubench_analysis::telemetry::EnergyCounter;
use gpubench_record::energy::{EnergyMeasurement, EnergyWindow};
use gpubench_record::measurement::Sample;

use super::{Engine, Workload};
use crate::telemetry::poll_energy;

/// Windows per process: their spread is the figure's noise inside a process.
const WINDOWS: usize = 3;
/// Counter steps a window counts (about 300 ms on an H200, whose counter steps every
/// 100 ms): each step's time is known to half the time between two reads, so 3
/// steps hold the energy to about 1% with reads 4 ms apart.
const STEPS_PER_WINDOW: u32 = 3;
/// A window ends after this long even if the counter has not stepped enough.
const WINDOW_BOUND: Duration = Duration::from_secs(2);
/// Calls are launched in batches of about this much device work.
const BATCH_NS: f64 = 0.5e6;
/// How far the host may run ahead of the device's expected progress: enough that a
/// pause of the launching thread (a sleep that overshoots on a busy host) does not
/// leave the device idle.
const LEAD: Duration = Duration::from_millis(10);
/// The share of the samples' time per call the launches are paced at.
const PACE: f64 = 0.8;

/// How a window's calls are launched: batches of about [`BATCH_NS`] of device work,
/// paced at [`PACE`] of the samples' time per call.
#[derive(Debug, Clone, Copy)]
pub(crate) struct EnergyPace {
    per_call_ns: f64,
    batch: u64,
}

impl EnergyPace {
    /// The pace of calls whose samples were `samples`.
    pub(crate) fn of(samples: &[Sample]) -> Self {
        // Device time per call when measured: the device's own pace, which a
        // flushed sample's wall time (a flush and a sync per call) overstates.
        let per_call_ns = median(
            &samples
                .iter()
                .filter(|s| !s.throttled())
                .map(Sample::per_iter_primary)
                .collect::<Vec<_>>(),
        )
        .max(1.0);
        EnergyPace {
            per_call_ns,
            batch: ((BATCH_NS / per_call_ns).round() as u64).max(1),
        }
    }
}

impl Engine<'_> {
    /// The energy of `workload`'s calls, whose samples were `samples`; `Err` says why
    /// there is none (no telemetry, no energy counter, a counter that never stepped).
    pub(super) fn energy(
        &self,
        workload: &mut dyn Workload,
        samples: &[Sample],
    ) -> Result<EnergyMeasurement, String> {
        let mut counter = self.energy_counter()?;
        let pace = EnergyPace::of(samples);
        let mut windows = Vec::with_capacity(WINDOWS);
        let mut refused = None;
        for _ in 0..WINDOWS {
            match self.energy_window(counter.as_mut(), workload, &pace, STEPS_PER_WINDOW)? {
                Ok(w) => windows.push(w),
                Err(why) => refused = Some(why),
            }
        }
        if windows.is_empty() {
            return Err(refused.unwrap_or_else(|| "no energy window".into()));
        }
        Ok(self.energy_of(windows))
    }

    /// A reader of the GPU's energy counter; `Err` says why there is none.
    pub(crate) fn energy_counter(&self) -> Result<Box<dyn EnergyCounter>, String> {
        self.telemetry
            .ok_or_else(|| "no GPU telemetry, so no energy counter".to_string())?
            .energy_counter()
    }

    /// The energy measurement of `windows`, with the idle power the process read.
    pub(crate) fn energy_of(&self, windows: Vec<EnergyWindow>) -> EnergyMeasurement {
        let (idle_w, idle_unavailable) = match self.telemetry.map(|t| &t.idle_power_w) {
            Some(Ok(w)) => (Some(*w), None),
            Some(Err(why)) => (None, Some(why.clone())),
            None => (None, Some("no GPU telemetry".into())),
        };
        EnergyMeasurement {
            windows,
            idle_w,
            idle_unavailable,
        }
    }

    /// One synced window of calls at `pace`, while another thread reads `counter`
    /// until it stepped `steps` times (at least [`STEPS_PER_WINDOW`]) past the first
    /// step. The outer `Err` is a failed read, the inner one a window that cannot be
    /// counted.
    pub(crate) fn energy_window(
        &self,
        counter: &mut dyn EnergyCounter,
        workload: &mut dyn Workload,
        pace: &EnergyPace,
        steps: u32,
    ) -> Result<Result<EnergyWindow, String>, String> {
        let steps = steps.max(STEPS_PER_WINDOW);
        let EnergyPace { per_call_ns, batch } = *pace;
        workload.release();
        self.device.synchronize();
        let done = AtomicBool::new(false);
        let t0 = Instant::now();
        let mut calls = 0u64;
        let readings = std::thread::scope(|scope| {
            let reader = scope.spawn(|| poll_energy(counter, t0, steps, WINDOW_BOUND, &done));
            while !done.load(Ordering::Acquire) && t0.elapsed() < WINDOW_BOUND {
                // Paced a little faster than the samples' time per call: a device
                // that ran slower would wait for calls and draw idle power.
                let due = Duration::from_nanos((calls as f64 * PACE * per_call_ns) as u64);
                if due <= t0.elapsed() + LEAD {
                    workload.prepare(batch);
                    workload.run(batch);
                    workload.release();
                    calls += batch;
                } else {
                    std::thread::sleep(Duration::from_micros(100));
                }
            }
            done.store(true, Ordering::Release);
            reader
                .join()
                .unwrap_or_else(|_| Err("the energy counter's reader panicked".into()))
        })?;
        self.device.synchronize();
        let synced_s = t0.elapsed().as_secs_f64();
        Ok(energy::window(&readings, calls, synced_s))
    }
}

#[cfg(test)]
mod tests {
    use std::rc::Rc;
    use std::time::Duration;

    use gpubench_analysis::telemetry::{EnergyCounter, TelemetrySource};
    use gpubench_record::measurement::{MeasurementConfig, ProcessPolicy, RunMode};
    use gpubench_record::telemetry::{ClockReading, GpuState, SlowdownReason, TelemetryReading};

    use crate::device::simulated::{SimulatedEnergyCounter, SIMULATED_BUSY_W, SIMULATED_IDLE_W};
    use crate::device::{DeviceBackend, SimulatedDevice};
    use crate::telemetry::Telemetry;
    use crate::Bencher;

    /// The simulated device's energy counter as NVML would give it, each read taking
    /// `read_cost` (NVML's took about 4 ms on an H200 in a gVisor sandbox), with every
    /// sample read at the power cap.
    struct SimulatedBoard {
        device: Rc<SimulatedDevice>,
        read_cost: Duration,
    }

    struct SlowCounter(SimulatedEnergyCounter, Duration);

    impl EnergyCounter for SlowCounter {
        fn read_mj(&mut self) -> Result<u64, String> {
            std::thread::sleep(self.1 / 2);
            let e = self.0.read_mj();
            std::thread::sleep(self.1 / 2);
            e
        }
    }

    impl TelemetrySource for SimulatedBoard {
        fn state(&self) -> GpuState {
            GpuState {
                power_limit_w: Some(SIMULATED_BUSY_W),
                ..GpuState::default()
            }
        }
        fn read(&self) -> Result<TelemetryReading, String> {
            Err("no full readings on the simulated board".into())
        }
        fn read_clock(&self) -> Result<ClockReading, String> {
            Ok(ClockReading {
                sm_clock_mhz: 1700,
                temperature_c: None,
                slowdown: vec![SlowdownReason::SwPowerCap],
                power_w: Some(self.device.power_w()),
            })
        }
        fn energy_counter(&self) -> Result<Box<dyn EnergyCounter>, String> {
            Ok(Box::new(SlowCounter(
                self.device.energy_counter(),
                self.read_cost,
            )))
        }
    }

    fn config() -> MeasurementConfig {
        MeasurementConfig {
            mode: RunMode::Bench,
            warmup_time_s: 0.05,
            measurement_time_s: 0.2,
            sample_target_s: 0.005,
            min_samples: 5,
            max_samples: 30,
            target_rel_ci: 0.05,
            flush_l2: false,
            processes: ProcessPolicy::single(),
            throttle_threshold: gpubench_record::telemetry::THROTTLE_CLOCK_FRACTION,
            cpu_threads: None,
        }
    }

    /// Calls of 200 µs back to back keep the board at its busy power: each costs
    /// 400 W × 200 µs = 80 mJ, counted over windows of whole 100 ms counter steps,
    /// whether a read of the counter is quick or takes 3 ms (fifteen calls' time).
    /// Timing on a shared machine: it has to hold in one of three runs.
    #[test]
    fn a_simulated_run_records_the_energy_its_device_drew() {
        for read_cost in [Duration::from_micros(20), Duration::from_millis(3)] {
            crate::engine_tests::in_one_of_three(|| energy_of_200_us_calls(read_cost));
        }
    }

    fn energy_of_200_us_calls(read_cost: Duration) -> Result<(), String> {
        let _serial = crate::engine_tests::SERIAL
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let near = |x: f64, to: f64, tolerance: f64| (x / to - 1.0).abs() <= tolerance;
        let device = Rc::new(SimulatedDevice::new());
        let telemetry = Telemetry::new(Rc::new(SimulatedBoard {
            device: Rc::clone(&device),
            read_cost,
        }));
        let idle = telemetry.idle_power_w.clone()?;
        if !near(idle, SIMULATED_IDLE_W, 0.05) {
            return Err(format!("{idle} W idle with reads of {read_cost:?}"));
        }
        let backend: Rc<dyn DeviceBackend> = device.clone();
        let mut b = Bencher::new("energy", backend, config());
        b.telemetry(Some(telemetry));
        let d = Rc::clone(&device);
        b.iter(move || d.launch(Duration::from_micros(200)));
        let m = b.measurement.take().expect("measured");
        let e = m.energy.as_ref().unwrap_or_else(|| panic!("{m:?}"));
        assert_eq!(e.windows.len(), super::WINDOWS);
        assert!(e.idle_w.is_some() && e.idle_unavailable.is_none());
        assert!(m.energy_unavailable.is_none());
        // Every sample was read with the power cap among the slowdown reasons, and
        // with the board's power: an average over the counter's last whole step, so
        // it lags (the first samples follow the idle reading), between idle and busy.
        assert!(m
            .samples
            .iter()
            .all(|s| s.clock.is_some_and(|c| c.power_capped)));
        let power: Vec<f64> = m.samples.iter().filter_map(|s| s.clock?.power_w).collect();
        assert_eq!(power.len(), m.samples.len());
        assert!(
            power
                .iter()
                .all(|&w| (SIMULATED_IDLE_W * 0.99..=SIMULATED_BUSY_W * 1.01).contains(&w)),
            "{power:?}"
        );
        // After the energy windows' second of back-to-back calls it reads busy.
        let after = device.power_w();
        if !near(after, SIMULATED_BUSY_W, 0.05) {
            return Err(format!(
                "{after} W after the windows with reads of {read_cost:?}"
            ));
        }
        for w in &e.windows {
            assert_eq!(w.steps, super::STEPS_PER_WINDOW, "{w:?}");
            assert!(w.synced_s >= w.counted_s, "{w:?}");
            let joules = w.joules_per_call();
            if !(near(w.counted_s, 0.3, 0.03)
                && near(w.power_w(), SIMULATED_BUSY_W, 0.03)
                && near(joules, 0.08, 0.04))
            {
                return Err(format!(
                    "{} W, {joules} J per call with reads of {read_cost:?}: {w:?}",
                    w.power_w()
                ));
            }
        }
        Ok(())
    }

    #[test]
    fn without_telemetry_the_measurement_says_why_there_is_no_energy() {
        let _serial = crate::engine_tests::SERIAL
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let device: Rc<dyn DeviceBackend> = Rc::new(SimulatedDevice::new());
        let mut b = Bencher::new("no-energy", device, config());
        b.iter(|| ());
        let m = b.measurement.take().expect("measured");
        assert!(m.energy.is_none());
        assert!(
            m.energy_unavailable
                .as_deref()
                .is_some_and(|w| w.contains("no GPU telemetry")),
            "{:?}",
            m.energy_unavailable
        );
    }
}
