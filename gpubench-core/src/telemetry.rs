//! Reading the GPU around a benchmark: which [`TelemetrySource`] the harness uses for
//! a device, and what one benchmark process gathers from it (the readings at its
//! start and end, the clock after every sample) into its process.
//!
//! The source is NVML for a CUDA device; the CPU and a machine without the NVIDIA
//! driver have none, and the process only says why, quietly.

use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use gpubench_analysis::energy::{self, CounterReading};
pub use gpubench_analysis::telemetry::TelemetrySource;
use gpubench_analysis::telemetry::{EnergyCounter, TelemetryLog};
use gpubench_record::measurement::SampleClock;
use gpubench_record::record::ProcessRecord;
use gpubench_record::telemetry::{is_throttled, GpuState, SlowdownReason};

use crate::device::DeviceBackend;

/// The GPU's telemetry for one process: the source and what does not change.
#[derive(Clone)]
pub struct Telemetry {
    source: Rc<dyn TelemetrySource>,
    /// Driver, clocks at start, limits and modes (the fingerprint's `gpu`).
    pub state: GpuState,
    /// The board's power with nothing running, read from the energy counter when
    /// the process started, W; `Err` says why it was not.
    pub idle_power_w: Result<f64, String>,
}

/// Counter steps the idle power is counted over (about 200 ms on an H200).
const IDLE_STEPS: u32 = 2;
/// How long the idle power is read at most: a counter that steps every 100 ms
/// steps three times well within it.
const IDLE_BOUND: Duration = Duration::from_millis(600);

impl Telemetry {
    /// Telemetry from `source`, reading its state and the idle power once.
    pub fn new(source: Rc<dyn TelemetrySource>) -> Self {
        let state = source.state();
        let idle_power_w = idle_power(source.as_ref());
        Telemetry {
            source,
            state,
            idle_power_w,
        }
    }

    /// A reader of the GPU's energy counter; `Err` says why there is none.
    pub fn energy_counter(&self) -> Result<Box<dyn EnergyCounter>, String> {
        self.source.energy_counter()
    }

    /// The telemetry of the GPU `backend` measures on, or why there is none (`no GPU
    /// telemetry on cpu`, `no NVIDIA driver/NVML ...`).
    pub fn for_device(backend: &dyn DeviceBackend) -> Result<Self, String> {
        let id = backend.identity();
        let index = match (id.kind.as_str(), id.index) {
            ("cuda", Some(i)) => i,
            (kind, _) => return Err(format!("no GPU telemetry on {kind}")),
        };
        let pci = crate::device::cuda_device_pci_bus_id(index as usize);
        let source = gpubench_analysis::nvml::NvmlSource::open(pci.as_deref(), index)?;
        Ok(Telemetry::new(Rc::new(source)))
    }

    /// The clock after a sample, judged by the throttle rule with `threshold` (see
    /// [`is_throttled`]); `None` when the read failed (the sample then simply has no
    /// clock).
    pub fn sample_clock(&self, threshold: f64) -> Option<SampleClock> {
        let c = self.source.read_clock().ok()?;
        Some(SampleClock {
            sm_mhz: c.sm_clock_mhz,
            temperature_c: c.temperature_c,
            throttled: is_throttled(&c, self.state.reference_sm_clock_mhz(), threshold),
            power_capped: c.slowdown.contains(&SlowdownReason::SwPowerCap),
            power_w: c.power_w,
        })
    }

    /// Starts the log of one benchmark process with a full reading; `Err` says why
    /// it could not be read.
    pub fn start(&self) -> Result<TelemetryLog, String> {
        self.source.read().map(TelemetryLog::new)
    }

    /// Ends `log` with a full reading and puts what the process saw into `process`:
    /// the telemetry (with the hottest sample), or why there is none; a process that
    /// shared the GPU with another process is flagged contended
    /// ([`ProcessRecord::flag_contended`]).
    pub fn finish(&self, log: Result<TelemetryLog, String>, process: &mut ProcessRecord) {
        let end = self.source.read();
        let (mut log, end) = match (log, end) {
            (Ok(log), Ok(end)) => (log, end),
            (Err(why), _) | (_, Err(why)) => {
                process.telemetry_unavailable = Some(why);
                return;
            }
        };
        if let Some(m) = &process.measurement {
            for s in &m.samples {
                log.note_temperature(s.clock.and_then(|c| c.temperature_c));
            }
        }
        process.telemetry = log.finish(end, std::process::id());
        process.flag_contended();
    }
}

/// The board's power with nothing running: the energy counter polled over
/// [`IDLE_STEPS`] of its steps ([`energy::idle_power`]), within [`IDLE_BOUND`].
fn idle_power(source: &dyn TelemetrySource) -> Result<f64, String> {
    let mut counter = source.energy_counter()?;
    let readings = poll_energy(
        counter.as_mut(),
        Instant::now(),
        IDLE_STEPS,
        IDLE_BOUND,
        &AtomicBool::new(false),
    )?;
    energy::idle_power(&readings)
}

/// The pause between two reads of the energy counter.
const READ_PAUSE: Duration = Duration::from_micros(200);

/// Reads `counter` every [`READ_PAUSE`] (plus the read's own time) until it stepped
/// `steps` times past the first step it saw (then sets `done`), `done` is set
/// (by another thread), or `bound` has passed since `t0`; the readings' times are
/// from `t0`, each taken for the middle of its read.
pub(crate) fn poll_energy(
    counter: &mut dyn EnergyCounter,
    t0: Instant,
    steps: u32,
    bound: Duration,
    done: &AtomicBool,
) -> Result<Vec<CounterReading>, String> {
    let mut readings: Vec<CounterReading> = Vec::new();
    let mut seen = 0u32;
    while !done.load(Ordering::Acquire) && t0.elapsed() < bound {
        let before = t0.elapsed().as_secs_f64();
        let read = counter.read_mj();
        let at_s = 0.5 * (before + t0.elapsed().as_secs_f64());
        let energy_mj = match read {
            Ok(e) => e,
            Err(why) => {
                done.store(true, Ordering::Release);
                return Err(why);
            }
        };
        if readings.last().is_some_and(|r| r.energy_mj != energy_mj) {
            seen += 1;
        }
        readings.push(CounterReading { at_s, energy_mj });
        if seen > steps {
            done.store(true, Ordering::Release);
            break;
        }
        std::thread::sleep(READ_PAUSE);
    }
    Ok(readings)
}
