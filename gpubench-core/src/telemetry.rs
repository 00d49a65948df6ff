//! Reading the GPU around a benchmark: which [`TelemetrySource`] the harness uses for
//! a device, and what one benchmark process gathers from it (the readings at its
//! start and end, the clock after every sample) into its round.
//!
//! The source is NVML for a CUDA device; the CPU and a machine without the NVIDIA
//! driver have none, and the round only says why, quietly.

use std::rc::Rc;
use std::time::{Duration, Instant};

use gpubench_analysis::energy::{self, CounterReading};
use gpubench_analysis::telemetry::TelemetryLog;
pub use gpubench_analysis::telemetry::TelemetrySource;
use gpubench_record::measurement::SampleClock;
use gpubench_record::record::Round;
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

/// How long the idle power is read at most: a counter that steps every 100 ms
/// steps twice well within it.
const IDLE_BOUND: Duration = Duration::from_millis(400);

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

    /// The GPU's energy counter, mJ; `Err` says why it cannot be read.
    pub fn energy_mj(&self) -> Result<u64, String> {
        self.source.read_energy_mj()
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
        })
    }

    /// Starts the log of one benchmark process with a full reading; `Err` says why
    /// it could not be read.
    pub fn start(&self) -> Result<TelemetryLog, String> {
        self.source.read().map(TelemetryLog::new)
    }

    /// Ends `log` with a full reading and puts what the process saw into `round`:
    /// the telemetry (with the hottest sample), or why there is none; a round that
    /// shared the GPU with another process is flagged contended
    /// ([`Round::flag_contended`]).
    pub fn finish(&self, log: Result<TelemetryLog, String>, round: &mut Round) {
        let end = self.source.read();
        let (mut log, end) = match (log, end) {
            (Ok(log), Ok(end)) => (log, end),
            (Err(why), _) | (_, Err(why)) => {
                round.telemetry_unavailable = Some(why);
                return;
            }
        };
        if let Some(m) = &round.measurement {
            for s in &m.samples {
                log.note_temperature(s.clock.and_then(|c| c.temperature_c));
            }
        }
        round.telemetry = log.finish(end, std::process::id());
        round.flag_contended();
    }
}

/// The board's power with nothing running: the energy counter read every
/// millisecond until it stepped twice ([`energy::idle_power`]), within
/// [`IDLE_BOUND`].
fn idle_power(source: &dyn TelemetrySource) -> Result<f64, String> {
    let start = Instant::now();
    let first = source.read_energy_mj()?;
    let mut readings = vec![CounterReading {
        at_s: 0.0,
        energy_mj: first,
    }];
    let mut steps = 0;
    while steps < 2 && start.elapsed() < IDLE_BOUND {
        std::thread::sleep(Duration::from_millis(1));
        let energy_mj = source.read_energy_mj()?;
        if energy_mj != readings[readings.len() - 1].energy_mj {
            steps += 1;
        }
        readings.push(CounterReading {
            at_s: start.elapsed().as_secs_f64(),
            energy_mj,
        });
    }
    energy::idle_power(&readings)
}
