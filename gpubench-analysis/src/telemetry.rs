//! Reading the GPU while a benchmark runs: the [`TelemetrySource`] the harness reads
//! it through (NVML, [`crate::nvml::NvmlSource`], or a scripted fake in tests), the log
//! of one process's readings and the other processes found in them. The readings
//! themselves and the throttle rule are the record's ([`gpubench_record::telemetry`]).

use gpubench_record::telemetry::*;

/// Where the harness reads the GPU: NVML on a machine with the driver
/// ([`crate::nvml::NvmlSource`]), a scripted fake in tests.
pub trait TelemetrySource {
    /// What does not change while the process runs.
    fn state(&self) -> GpuState;
    /// A full reading (clocks, power, processes); `Err` says why it failed.
    fn read(&self) -> Result<TelemetryReading, String>;
    /// The light reading taken after each sample.
    fn read_clock(&self) -> Result<ClockReading, String>;
    /// A reader of the GPU's total-energy counter, which a thread of its own can
    /// poll while the calls run (see [`crate::energy`]); `Err` says why there is none.
    fn energy_counter(&self) -> Result<Box<dyn EnergyCounter>, String> {
        Err("no energy counter".into())
    }
}

/// The GPU's total-energy counter (NVML's steps every ~100 ms on an H200), read from
/// any thread: a read can take milliseconds (about 4 ms through NVML in a gVisor
/// sandbox), so the harness polls it beside the thread that launches the calls.
pub trait EnergyCounter: Send {
    /// The counter, mJ; `Err` says why it could not be read.
    fn read_mj(&mut self) -> Result<u64, String>;
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
                power_w: Some(120.0),
            },
            memory_clock_mhz: Some(2619),
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
            power_w: None,
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
