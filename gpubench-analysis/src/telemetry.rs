//! What the GPU itself said while a benchmark ran: clocks, slowdown reasons,
//! temperature, power and the other processes on it, the rule that calls a sample
//! throttled, and the [`TelemetrySource`] the harness reads it through.
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
}

/// A full reading, taken at the start and the end of a benchmark process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TelemetryReading {
    /// SM clock, temperature and slowdown reasons.
    #[serde(flatten)]
    pub clock: ClockReading,
    /// Memory clock, MHz.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_clock_mhz: Option<u32>,
    /// Power draw, W.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_w: Option<f64>,
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

/// Where the harness reads the GPU: NVML on a machine with the driver
/// ([`crate::nvml::NvmlSource`]), a scripted fake in tests.
pub trait TelemetrySource {
    /// What does not change while the process runs.
    fn state(&self) -> GpuState;
    /// A full reading (clocks, power, processes); `Err` says why it failed.
    fn read(&self) -> Result<TelemetryReading, String>;
    /// The light reading taken after each sample.
    fn read_clock(&self) -> Result<ClockReading, String>;
}

/// The processes of `readings` that are not this one (`own_pid`), each once, in the
/// order first seen. In a container NVML lists host process ids, so this process's
/// own id may be missing from every reading: a process that first shows up after the
/// first reading (taken before this process touched the GPU) is then taken for this
/// one when it is the only newcomer.
pub fn other_processes(readings: &[&TelemetryReading], own_pid: u32) -> Vec<GpuProcess> {
    let mut seen: Vec<GpuProcess> = Vec::new();
    for r in readings {
        for p in &r.processes {
            if p.pid != own_pid && !seen.iter().any(|s| s.pid == p.pid) {
                seen.push(p.clone());
            }
        }
    }
    let own_seen = readings
        .iter()
        .any(|r| r.processes.iter().any(|p| p.pid == own_pid));
    if !own_seen {
        let at_start: Vec<u32> = readings
            .first()
            .map(|r| r.processes.iter().map(|p| p.pid).collect())
            .unwrap_or_default();
        let newcomers: Vec<u32> = seen
            .iter()
            .map(|p| p.pid)
            .filter(|pid| !at_start.contains(pid))
            .collect();
        if let [only] = newcomers[..] {
            seen.retain(|p| p.pid != only);
        }
    }
    seen
}

/// The readings of one benchmark process, gathered as it runs and summed up at the
/// end ([`TelemetryLog::finish`]).
#[derive(Debug, Clone, Default)]
pub struct TelemetryLog {
    start: Option<TelemetryReading>,
    /// Full readings taken between start and end (processes, now and then).
    middle: Vec<TelemetryReading>,
    max_temperature_c: Option<u32>,
}

impl TelemetryLog {
    /// A log that starts with `start`.
    pub fn new(start: TelemetryReading) -> Self {
        let mut log = TelemetryLog::default();
        log.note_temperature(start.clock.temperature_c);
        log.start = Some(start);
        log
    }

    /// Notes a temperature read with a sample.
    pub fn note_temperature(&mut self, t: Option<u32>) {
        self.max_temperature_c = self.max_temperature_c.max(t);
    }

    /// Notes a full reading taken while measuring.
    pub fn note(&mut self, reading: TelemetryReading) {
        self.note_temperature(reading.clock.temperature_c);
        self.middle.push(reading);
    }

    /// The process's telemetry, ending with `end`; `own_pid` is this process's id.
    pub fn finish(self, end: TelemetryReading, own_pid: u32) -> Option<ProcessTelemetry> {
        let start = self.start?;
        let mut max = self.max_temperature_c;
        max = max.max(end.clock.temperature_c);
        let mut all: Vec<&TelemetryReading> = vec![&start];
        all.extend(self.middle.iter());
        all.push(&end);
        let other_processes = other_processes(&all, own_pid);
        Some(ProcessTelemetry {
            start,
            end,
            max_temperature_c: max,
            other_processes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(sm: u32, pids: &[u32]) -> TelemetryReading {
        TelemetryReading {
            clock: ClockReading {
                sm_clock_mhz: sm,
                temperature_c: Some(40),
                slowdown: vec![],
            },
            memory_clock_mhz: Some(2619),
            power_w: Some(120.0),
            power_limit_w: Some(700.0),
            processes: pids
                .iter()
                .map(|&pid| GpuProcess {
                    pid,
                    used_memory_bytes: None,
                })
                .collect(),
        }
    }

    #[test]
    fn a_sample_below_three_quarters_of_the_default_clock_is_throttled() {
        let clock = |sm, slowdown| ClockReading {
            sm_clock_mhz: sm,
            temperature_c: None,
            slowdown,
        };
        let t = THROTTLE_CLOCK_FRACTION;
        assert!(!is_throttled(&clock(1980, vec![]), Some(1980), t));
        assert!(!is_throttled(&clock(1500, vec![]), Some(1980), t));
        assert!(is_throttled(&clock(1400, vec![]), Some(1980), t));
        // The power cap alone is steady state under load, a thermal slowdown is not.
        assert!(!is_throttled(
            &clock(1800, vec![SlowdownReason::SwPowerCap]),
            Some(1980),
            t
        ));
        assert!(is_throttled(
            &clock(1800, vec![SlowdownReason::HwThermalSlowdown]),
            Some(1980),
            t
        ));
        assert!(is_throttled(
            &clock(1980, vec![SlowdownReason::HwPowerBrakeSlowdown]),
            None,
            t
        ));
        assert!(!is_throttled(&clock(300, vec![]), None, t));
        // --throttle-threshold: 0.5 keeps a sample at 70% of the default clock, 0 keeps
        // any clock but still drops a hardware slowdown.
        assert!(!is_throttled(&clock(1400, vec![]), Some(1980), 0.5));
        assert!(!is_throttled(&clock(300, vec![]), Some(1980), 0.0));
        assert!(is_throttled(
            &clock(1980, vec![SlowdownReason::HwThermalSlowdown]),
            Some(1980),
            0.0
        ));
    }

    #[test]
    fn other_processes_leave_this_one_out() {
        let start = reading(1980, &[77]);
        let end = reading(1980, &[77, 4242, 88]);
        let others = other_processes(&[&start, &end], 4242);
        assert_eq!(
            others.iter().map(|p| p.pid).collect::<Vec<_>>(),
            vec![77, 88]
        );
        assert!(other_processes(&[&reading(1980, &[]), &reading(1980, &[4242])], 4242).is_empty());
    }

    #[test]
    fn in_a_container_the_only_newcomer_is_this_process() {
        // NVML lists the host's id 90001 for this process, which sees itself as 12.
        let alone = other_processes(&[&reading(1980, &[]), &reading(1980, &[90001])], 12);
        assert!(alone.is_empty());
        let shared = other_processes(&[&reading(1980, &[555]), &reading(1980, &[555, 90001])], 12);
        assert_eq!(shared.iter().map(|p| p.pid).collect::<Vec<_>>(), vec![555]);
        // Two newcomers: one of them is another process, so both are reported.
        let two = other_processes(&[&reading(1980, &[]), &reading(1980, &[90001, 90002])], 12);
        assert_eq!(two.len(), 2);
    }

    #[test]
    fn the_log_keeps_the_hottest_reading_and_the_other_processes() {
        let mut log = TelemetryLog::new(reading(1980, &[]));
        log.note_temperature(Some(71));
        log.note(reading(1900, &[9, 3]));
        let t = log.finish(reading(1850, &[3]), 3).unwrap();
        assert_eq!(t.max_temperature_c, Some(71));
        assert_eq!(t.start.clock.sm_clock_mhz, 1980);
        assert_eq!(t.end.clock.sm_clock_mhz, 1850);
        assert!(t.contended());
        assert_eq!(t.other_processes[0].pid, 9);
    }

    #[test]
    fn the_reference_clock_is_the_default_else_the_maximum() {
        let mut s = GpuState {
            max_sm_clock_mhz: Some(1980),
            ..GpuState::default()
        };
        assert_eq!(s.reference_sm_clock_mhz(), Some(1980));
        s.default_sm_clock_mhz = Some(1755);
        assert_eq!(s.reference_sm_clock_mhz(), Some(1755));
        assert_eq!(GpuState::default().reference_sm_clock_mhz(), None);
    }
}
