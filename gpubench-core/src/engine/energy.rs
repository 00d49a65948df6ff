//! Energy per call: windows of back-to-back calls after the samples, with the GPU's
//! energy counter read about every millisecond while they run, counted between the
//! counter's steps (`gpubench_analysis::energy`), and the idle power the process
//! read when it started.
//!
//! The calls run with a warm L2 (no `--flush-l2` flushes: the flush's own energy is
//! not the routine's), kept at most [`LEAD`] ahead of the device so the host's
//! readings and the device's work stay in step.

use std::time::{Duration, Instant};

use gpubench_analysis::energy::{self, CounterReading};
use gpubench_analysis::stats::median;
use gpubench_record::energy::{EnergyMeasurement, EnergyWindow};
use gpubench_record::measurement::Sample;

use super::{Engine, Workload};
use crate::telemetry::Telemetry;

/// Windows per process: their spread is the figure's noise inside a process.
const WINDOWS: usize = 3;
/// Counter steps a window counts (about 300 ms on an H200, whose counter steps every
/// 100 ms): each step's time is known to about a millisecond, so 3 steps hold the
/// energy to well under 1%.
const STEPS_PER_WINDOW: u32 = 3;
/// A window ends after this long even if the counter has not stepped enough.
const WINDOW_BOUND: Duration = Duration::from_secs(2);
/// The counter is read after a batch of calls of about this much work.
const READ_EVERY_NS: f64 = 1e6;
/// How far the host may run ahead of the device's expected progress.
const LEAD: Duration = Duration::from_millis(3);

impl Engine<'_> {
    /// The energy of `workload`'s calls, whose samples were `samples`; `Err` says why
    /// there is none (no telemetry, no energy counter, a counter that never stepped).
    pub(super) fn energy(
        &self,
        workload: &mut dyn Workload,
        samples: &[Sample],
    ) -> Result<EnergyMeasurement, String> {
        let telemetry = self
            .telemetry
            .ok_or_else(|| "no GPU telemetry, so no energy counter".to_string())?;
        telemetry.energy_mj()?;
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
        let batch = ((READ_EVERY_NS / per_call_ns).round() as u64).max(1);
        let mut windows = Vec::with_capacity(WINDOWS);
        let mut refused = None;
        for _ in 0..WINDOWS {
            match self.energy_window(telemetry, workload, per_call_ns, batch)? {
                Ok(w) => windows.push(w),
                Err(why) => refused = Some(why),
            }
        }
        if windows.is_empty() {
            return Err(refused.unwrap_or_else(|| "no energy window".into()));
        }
        let (idle_w, idle_unavailable) = match &telemetry.idle_power_w {
            Ok(w) => (Some(*w), None),
            Err(why) => (None, Some(why.clone())),
        };
        Ok(EnergyMeasurement {
            windows,
            idle_w,
            idle_unavailable,
        })
    }

    /// One synced window of calls in batches of `batch`, the counter read after each
    /// batch until it stepped [`STEPS_PER_WINDOW`] times past the first step. The
    /// outer `Err` is a failed read, the inner one a window that cannot be counted.
    fn energy_window(
        &self,
        telemetry: &Telemetry,
        workload: &mut dyn Workload,
        per_call_ns: f64,
        batch: u64,
    ) -> Result<Result<EnergyWindow, String>, String> {
        workload.release();
        self.device.synchronize();
        let t0 = Instant::now();
        let mut readings = vec![CounterReading {
            at_s: 0.0,
            energy_mj: telemetry.energy_mj()?,
        }];
        let mut calls = 0u64;
        let mut steps = 0u32;
        while steps <= STEPS_PER_WINDOW && t0.elapsed() < WINDOW_BOUND {
            let due = Duration::from_nanos((calls as f64 * per_call_ns) as u64);
            if due <= t0.elapsed() + LEAD {
                workload.prepare(batch);
                workload.run(batch);
                workload.release();
                calls += batch;
            } else {
                std::thread::sleep(Duration::from_micros(100));
            }
            let energy_mj = telemetry.energy_mj()?;
            if energy_mj != readings[readings.len() - 1].energy_mj {
                steps += 1;
            }
            readings.push(CounterReading {
                at_s: t0.elapsed().as_secs_f64(),
                energy_mj,
            });
        }
        self.device.synchronize();
        let synced_s = t0.elapsed().as_secs_f64();
        Ok(energy::window(&readings, calls, synced_s))
    }
}

#[cfg(test)]
mod tests {
    use std::rc::Rc;
    use std::time::Duration;

    use gpubench_analysis::telemetry::TelemetrySource;
    use gpubench_record::measurement::{MeasurementConfig, ProcessPolicy, RunMode};
    use gpubench_record::telemetry::{ClockReading, GpuState, SlowdownReason, TelemetryReading};

    use crate::device::simulated::{SIMULATED_BUSY_W, SIMULATED_IDLE_W};
    use crate::device::{DeviceBackend, SimulatedDevice};
    use crate::telemetry::Telemetry;
    use crate::Bencher;

    /// The simulated device's energy counter as NVML would give it, with every
    /// sample read at the power cap.
    struct SimulatedBoard(Rc<SimulatedDevice>);

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
            })
        }
        fn read_energy_mj(&self) -> Result<u64, String> {
            Ok(self.0.energy_mj())
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
    /// 400 W × 200 µs = 80 mJ, counted over windows of whole 100 ms counter steps.
    #[test]
    fn a_simulated_run_records_the_energy_its_device_drew() {
        let _serial = crate::engine_tests::SERIAL
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let device = Rc::new(SimulatedDevice::new());
        let telemetry = Telemetry::new(Rc::new(SimulatedBoard(Rc::clone(&device))));
        let idle = telemetry.idle_power_w.clone().expect("idle power");
        assert!(
            (idle / SIMULATED_IDLE_W - 1.0).abs() < 0.05,
            "{idle} W idle"
        );
        let backend: Rc<dyn DeviceBackend> = device.clone();
        let mut b = Bencher::new("energy", backend, config());
        b.telemetry(Some(telemetry));
        let d = Rc::clone(&device);
        b.iter(move || d.launch(Duration::from_micros(200)));
        let m = b.measurement.take().expect("measured");
        let e = m.energy.as_ref().unwrap_or_else(|| panic!("{m:?}"));
        assert_eq!(e.windows.len(), super::WINDOWS);
        for w in &e.windows {
            assert_eq!(w.steps, super::STEPS_PER_WINDOW, "{w:?}");
            assert!((w.counted_s - 0.3).abs() < 0.01, "{w:?}");
            assert!(w.synced_s >= w.counted_s, "{w:?}");
            assert!(
                (w.power_w() / SIMULATED_BUSY_W - 1.0).abs() < 0.05,
                "{} W: {w:?}",
                w.power_w()
            );
            let joules = w.joules_per_call();
            assert!(
                (joules / 0.08 - 1.0).abs() < 0.08,
                "{joules} J per call: {w:?}"
            );
        }
        assert!(e.idle_w.is_some() && e.idle_unavailable.is_none());
        assert!(m.energy_unavailable.is_none());
        // Every sample was read with the power cap among the slowdown reasons.
        assert!(m
            .samples
            .iter()
            .all(|s| s.clock.is_some_and(|c| c.power_capped)));
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
