//! What the GPU itself said while a benchmark ran: clocks, slowdown reasons,
//! temperature, power and the other processes on it, the rule that calls a sample
//! throttled; the harness reads it through `gpubench-analysis`'s `TelemetrySource`.
//!
//! A GPU that throttles, or that another process is using, makes a benchmark lie
//! without any of its own numbers showing it. The harness reads the GPU at the start
//! and end of every benchmark process and right after every timed sample (never
//! inside one: a reading costs tens of µs). Without NVML (a CPU machine, no driver)
//! there is no telemetry and one quiet field of the record says why.
//!
//! The throttle rule is nvbench's: a sample whose SM clock was below 75% of the
//! GPU's default clock, or taken while a hardware, thermal or power-brake slowdown
//! was active, is throttled. Throttled samples stay in the record (and in the
//! report's time series) but are left out of the statistics.

use serde::{Deserialize, Serialize};

/// A sample whose SM clock is below this fraction of the GPU's default clock is
/// throttled (nvbench's `--throttle-threshold` default).
pub const THROTTLE_CLOCK_FRACTION: f64 = 0.75;

/// Two sides of a comparison whose mean SM clocks differ by more than this fraction
/// ran at clearly different clocks.
pub const CLOCK_DIFFERENCE_FRACTION: f64 = 0.05;

/// Why the GPU ran below its clocks, as NVML reports it (`clocks_event_reasons`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SlowdownReason {
    /// Nothing is running on the GPU.
    GpuIdle,
    /// Clocks are held by the applications clocks setting.
    ApplicationsClocksSetting,
    /// The power management algorithm lowered clocks to stay under the power limit.
    SwPowerCap,
    /// Hardware slowdown (clocks cut by 2x or more): temperature, power brake or
    /// excess power draw.
    HwSlowdown,
    /// Held back by another GPU of its sync-boost group.
    SyncBoost,
    /// The driver lowered clocks because the GPU or its memory is too hot.
    SwThermalSlowdown,
    /// Hardware thermal slowdown (clocks cut by 2x or more).
    HwThermalSlowdown,
    /// An external power brake (e.g. the power supply) cut clocks by 2x or more.
    HwPowerBrakeSlowdown,
    /// Clocks are held by the display clock setting.
    DisplayClockSetting,
}

impl SlowdownReason {
    /// Whether this reason makes a sample throttled: the hardware, thermal and
    /// power-brake slowdowns, which cut clocks far below what the work would get.
    /// The software power cap is left out: a GPU under full load rides it in steady
    /// state, and the clock rule catches it when it bites deep.
    pub fn throttles(self) -> bool {
        matches!(
            self,
            SlowdownReason::HwSlowdown
                | SlowdownReason::SwThermalSlowdown
                | SlowdownReason::HwThermalSlowdown
                | SlowdownReason::HwPowerBrakeSlowdown
        )
    }

    /// Words for tables.
    pub fn label(self) -> &'static str {
        match self {
            SlowdownReason::GpuIdle => "idle",
            SlowdownReason::ApplicationsClocksSetting => "applications clocks setting",
            SlowdownReason::SwPowerCap => "power cap",
            SlowdownReason::HwSlowdown => "hardware slowdown",
            SlowdownReason::SyncBoost => "sync boost",
            SlowdownReason::SwThermalSlowdown => "thermal slowdown",
            SlowdownReason::HwThermalSlowdown => "hardware thermal slowdown",
            SlowdownReason::HwPowerBrakeSlowdown => "power brake",
            SlowdownReason::DisplayClockSetting => "display clock setting",
        }
    }
}

/// A process using the GPU, as NVML lists its compute processes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuProcess {
    /// Its process id (the host's, which may differ from what a container sees).
    pub pid: u32,
    /// GPU memory it holds, bytes, when the driver says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub used_memory_bytes: Option<u64>,
}

/// The light reading taken right after each timed sample.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClockReading {
    /// SM clock, MHz.
    pub sm_clock_mhz: u32,
    /// GPU temperature, °C.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature_c: Option<u32>,
    /// Slowdown reasons active.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub slowdown: Vec<SlowdownReason>,
    /// Power draw, W (NVML's power usage, which averages over up to a second on
    /// recent boards).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_w: Option<f64>,
}

/// A full reading, taken at the start and the end of a benchmark process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TelemetryReading {
    /// SM clock, temperature, slowdown reasons and power draw.
    #[serde(flatten)]
    pub clock: ClockReading,
    /// Memory clock, MHz.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_clock_mhz: Option<u32>,
    /// The power limit the driver enforces, W.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_limit_w: Option<f64>,
    /// The compute processes on the GPU, this one included.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub processes: Vec<GpuProcess>,
}

/// What does not change while a process runs: the device fingerprint's GPU part.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GpuState {
    /// The NVIDIA driver's version, e.g. `580.95.05`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver_version: Option<String>,
    /// SM clock when the process started, MHz.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sm_clock_mhz: Option<u32>,
    /// Memory clock when the process started, MHz.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_clock_mhz: Option<u32>,
    /// The highest SM clock the GPU can run at, MHz.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_sm_clock_mhz: Option<u32>,
    /// The default applications SM clock, MHz: what the throttle rule compares with
    /// (the maximum when the GPU has none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_sm_clock_mhz: Option<u32>,
    /// The power limit the driver enforces, W.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_limit_w: Option<f64>,
    /// Whether the driver stays loaded between processes (without it, each process
    /// pays the driver's start-up and the clocks start low).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persistence_mode: Option<bool>,
    /// `default`, `exclusive_process` or `prohibited`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compute_mode: Option<String>,
    /// Whether ECC is on (it costs memory bandwidth).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ecc_enabled: Option<bool>,
}

impl GpuState {
    /// The clock the throttle rule compares with: the default applications clock,
    /// else the maximum.
    pub fn reference_sm_clock_mhz(&self) -> Option<u32> {
        self.default_sm_clock_mhz
            .or(self.max_sm_clock_mhz)
            .filter(|&c| c > 0)
    }
}

/// Whether a sample read as `clock` was throttled: its SM clock below `threshold` of
/// `reference_mhz` (see [`GpuState::reference_sm_clock_mhz`]; nvbench's threshold is
/// [`THROTTLE_CLOCK_FRACTION`]), or a slowdown reason that throttles. Without a
/// reference clock, or with a threshold of 0, only the reasons count.
pub fn is_throttled(clock: &ClockReading, reference_mhz: Option<u32>, threshold: f64) -> bool {
    let slow_clock =
        reference_mhz.is_some_and(|r| f64::from(clock.sm_clock_mhz) < threshold * f64::from(r));
    slow_clock || clock.slowdown.iter().any(|r| r.throttles())
}

/// The mean of every clock of `groups` (one group per process), MHz; `None` when
/// there is none.
pub fn mean_clock_mhz(groups: &[Vec<u32>]) -> Option<f64> {
    let n: usize = groups.iter().map(Vec::len).sum();
    let sum: f64 = groups.iter().flatten().map(|&c| f64::from(c)).sum();
    (n > 0).then(|| sum / n as f64)
}

/// Whether mean clocks `a` and `b` differ by more than [`CLOCK_DIFFERENCE_FRACTION`]
/// of the higher one.
pub fn clearly_different_clocks(a: f64, b: f64) -> bool {
    (a - b).abs() > CLOCK_DIFFERENCE_FRACTION * a.max(b)
}

/// What the GPU said during one benchmark process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProcessTelemetry {
    /// The reading when the process started on the benchmark.
    pub start: TelemetryReading,
    /// The reading when it finished.
    pub end: TelemetryReading,
    /// The hottest the GPU got over every reading, °C.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_temperature_c: Option<u32>,
    /// Processes other than this one that used the GPU at some reading: contention.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub other_processes: Vec<GpuProcess>,
}

impl ProcessTelemetry {
    /// Whether another process used the GPU while this one measured.
    pub fn contended(&self) -> bool {
        !self.other_processes.is_empty()
    }
}
