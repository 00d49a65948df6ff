//! Reading the GPU around a benchmark: which [`TelemetrySource`] the harness uses for
//! a device, and what one benchmark process gathers from it (the readings at its
//! start and end, the clock after every sample) into its round.
//!
//! The source is NVML for a CUDA device; the CPU and a machine without the NVIDIA
//! driver have none, and the round only says why, quietly.

use std::rc::Rc;

use gpubench_analysis::telemetry::TelemetryLog;
pub use gpubench_analysis::telemetry::TelemetrySource;
use gpubench_record::measurement::SampleClock;
use gpubench_record::record::Round;
use gpubench_record::telemetry::{is_throttled, GpuState};

use crate::device::DeviceBackend;

/// The GPU's telemetry for one process: the source and what does not change.
#[derive(Clone)]
pub struct Telemetry {
    source: Rc<dyn TelemetrySource>,
    /// Driver, clocks at start, limits and modes (the fingerprint's `gpu`).
    pub state: GpuState,
}

impl Telemetry {
    /// Telemetry from `source`, reading its state once.
    pub fn new(source: Rc<dyn TelemetrySource>) -> Self {
        let state = source.state();
        Telemetry { source, state }
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
