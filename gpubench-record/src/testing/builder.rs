//! The one builder of records for tests: a test names what its benchmark is about
//! (device, samples, memory, a failure) and the builder fills in the rest, so a new
//! record field is added here once, not in every test. Generated records (the
//! statistical models of `gpubench_analysis::synthetic`) come in through
//! [`RecordBuilder::from`] to be changed the same way.

use crate::failure::{Failure, FailureKind};
use crate::id::split_id;
use crate::measurement::{
    ColdCall, Flag, Measurement, MeasurementConfig, MemoryGrowth, MemoryStats, NaiveLoop, Sample,
    StopReason, Throughput, WarmupPoint,
};
use crate::record::{DeviceIdentity, Fingerprint, ProcessRecord, RawRecord};

/// When a built record was measured, unless a test says otherwise.
pub const MEASURED_AT: &str = "2026-01-01T00:00:00Z";

/// A record under construction. [`RecordBuilder::passed`] starts one process on an
/// unknown CPU with an empty measurement; every setter applies to each process (a
/// record from [`RecordBuilder::from`] may hold several).
#[derive(Debug, Clone)]
#[must_use]
pub struct RecordBuilder {
    record: RawRecord,
}

impl RecordBuilder {
    /// A passed record of `id` (`name/arg` split at the first `/`): one process started
    /// at [`MEASURED_AT`] on an unknown `cpu` device, standard settings, no samples,
    /// no sync cost, converged, no flags, no device timer.
    pub fn passed(id: &str) -> Self {
        let (name, arg) = split_id(id);
        let process = ProcessRecord {
            measurement: Some(Measurement::of_samples(Vec::new())),
            ..ProcessRecord::first(MEASURED_AT.into())
        };
        RecordBuilder {
            record: RawRecord::new(
                id,
                name,
                arg.map(str::to_string),
                Fingerprint::unknown("cpu", MEASURED_AT.into()),
                MeasurementConfig::standard(),
                process,
            ),
        }
    }

    /// The record.
    pub fn build(self) -> RawRecord {
        self.record
    }

    /// Measured on CUDA device 0 named `name`.
    pub fn cuda(self, name: &str) -> Self {
        self.device(DeviceIdentity {
            kind: "cuda".into(),
            index: Some(0),
            name: name.into(),
            total_memory_bytes: None,
        })
    }

    /// Measured on the CPU named `name` (no index, no memory size).
    pub fn cpu(self, name: &str) -> Self {
        self.device(DeviceIdentity {
            kind: "cpu".into(),
            index: None,
            name: name.into(),
            total_memory_bytes: None,
        })
    }

    /// Measured on `device`; the rest of the fingerprint stays.
    pub fn device(mut self, device: DeviceIdentity) -> Self {
        self.record.fingerprint.device = device;
        self
    }

    /// The whole fingerprint: device, software versions, machine, time.
    pub fn fingerprint(mut self, fingerprint: Fingerprint) -> Self {
        self.record.fingerprint = fingerprint;
        self
    }

    /// The fingerprint's time stamp.
    pub fn timestamp(mut self, timestamp: &str) -> Self {
        self.record.fingerprint.timestamp = timestamp.into();
        self
    }

    /// Measured with `config`.
    pub fn config(mut self, config: MeasurementConfig) -> Self {
        self.record.config = config;
        self
    }

    /// The measured cost of an empty sync, ns.
    pub fn sync_cost(self, ns: f64) -> Self {
        self.measurements(|m| m.sync_cost_ns = ns)
    }

    /// Adds a cold call named `label` (`"first call"`, `"new shape [8, 4096]"`).
    pub fn cold(self, label: &str, wall_ns: f64, host_ns: f64, device_ns: Option<f64>) -> Self {
        self.measurements(|m| {
            m.cold.push(ColdCall {
                label: label.into(),
                wall_ns,
                host_ns,
                device_ns,
            })
        })
    }

    /// The warm-up trace: `(iterations, wall ns)` per step.
    pub fn warmup(self, steps: impl IntoIterator<Item = (u64, f64)>) -> Self {
        let steps: Vec<WarmupPoint> = steps
            .into_iter()
            .map(|(iters, wall_ns)| WarmupPoint { iters, wall_ns })
            .collect();
        self.measurements(|m| m.warmup = steps.clone())
    }

    /// The steady-state samples (see [`sample`]).
    pub fn samples(self, samples: impl IntoIterator<Item = Sample>) -> Self {
        let samples: Vec<Sample> = samples.into_iter().collect();
        self.measurements(|m| m.samples = samples.clone())
    }

    /// Adds a naive (unsynced) loop of `iters` beside its synced time, per iteration.
    pub fn naive(self, iters: u64, naive_ns_per_iter: f64, synced_ns_per_iter: f64) -> Self {
        self.measurements(|m| {
            m.naive.push(NaiveLoop {
                iters,
                naive_ns_per_iter,
                synced_ns_per_iter,
            })
        })
    }

    /// Work per iteration.
    pub fn throughput(self, throughput: Throughput) -> Self {
        self.measurements(|m| m.throughput = Some(throughput))
    }

    /// The allocator's figures (see [`memory`]).
    pub fn memory(self, memory: MemoryStats) -> Self {
        self.measurements(|m| m.memory = Some(memory))
    }

    /// Device memory over repeated calls: `start_bytes` held before the first of
    /// `calls` calls, `first_bytes` after them, `second_bytes` after as many more.
    pub fn memory_growth(
        self,
        calls: u64,
        start_bytes: u64,
        first_bytes: u64,
        second_bytes: u64,
    ) -> Self {
        let growth = MemoryGrowth {
            calls,
            start_bytes,
            first_bytes,
            second_bytes,
        };
        self.measurements(|m| m.memory_growth = Some(growth))
    }

    /// The measurement's flags, in place of any before.
    pub fn flags(self, flags: &[Flag]) -> Self {
        self.measurements(|m| m.flags = flags.to_vec())
    }

    /// Why sampling stopped.
    pub fn stop_reason(self, reason: StopReason) -> Self {
        self.measurements(|m| m.stop_reason = reason)
    }

    /// Whether device time was measured (CUDA events): samples then carry it.
    pub fn device_timer(self, measured: bool) -> Self {
        self.measurements(|m| m.device_timer = measured)
    }

    /// No kernel time, for `reason` (as a harness without kernel timing says).
    pub fn kernel_unavailable(self, reason: &str) -> Self {
        self.measurements(|m| {
            m.kernel = None;
            m.kernel_unavailable = Some(reason.into());
        })
    }

    /// Failed in its first process with `kind` and `message` (capped as the harness
    /// caps it): see [`RecordBuilder::failure`].
    pub fn failed(self, kind: FailureKind, message: &str) -> Self {
        self.failure(Failure::new(kind, message))
    }

    /// Failed in its first process with `failure` as it is (an uncapped message,
    /// memory at the failure): the first process carries it and no measurement; later
    /// processes, if any, stand. Either way the record is a failed benchmark's.
    pub fn failure(mut self, failure: Failure) -> Self {
        let first = self
            .record
            .processes
            .first_mut()
            .expect("a record has a process");
        first.measurement = None;
        first.failure = Some(failure);
        self
    }

    /// Adds the processes of `later` (the same benchmark) as later processes, numbered
    /// after these; this record's fingerprint and settings stand.
    pub fn then_process(mut self, later: RecordBuilder) -> Self {
        self.record
            .append_processes(later.record)
            .expect("a later process of the same benchmark");
        self
    }

    fn measurements(mut self, mut set: impl FnMut(&mut Measurement)) -> Self {
        self.record
            .processes
            .iter_mut()
            .filter_map(|r| r.measurement.as_mut())
            .for_each(&mut set);
        self
    }
}

impl From<RawRecord> for RecordBuilder {
    /// A generated record, to change further.
    fn from(record: RawRecord) -> Self {
        RecordBuilder { record }
    }
}

/// One steady-state sample: `iters` iterations between two syncs taking `wall_ns`,
/// their dispatch returning after `host_ns`, the device busy `device_ns` (`None`:
/// no device timer); no clock reading.
pub fn sample(iters: u64, wall_ns: f64, host_ns: f64, device_ns: Option<f64>) -> Sample {
    Sample {
        iters,
        wall_ns,
        host_ns,
        device_ns,
        clock: None,
    }
}

/// The caching allocator's figures: peaks and what it held at the end, bytes; no
/// retries, no out-of-memory errors.
pub fn memory(
    peak_allocated_bytes: u64,
    peak_reserved_bytes: u64,
    allocated_bytes: u64,
    reserved_bytes: u64,
) -> MemoryStats {
    MemoryStats {
        peak_allocated_bytes,
        peak_reserved_bytes,
        allocated_bytes,
        reserved_bytes,
        alloc_retries: 0,
        num_ooms: 0,
        reserved_shared: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_passed_record_splits_its_id_and_reads_back_as_written() {
        let r = RecordBuilder::passed("matmul/4096")
            .cuda("NVIDIA H200")
            .samples((0..3).map(|i| sample(10, 1e6 + f64::from(i), 3e5, Some(9.9e5))))
            .memory(memory(3 << 29, 2 << 30, 0, 0))
            .build();
        assert_eq!(
            (r.name.as_str(), r.arg.as_deref()),
            ("matmul", Some("4096"))
        );
        assert!(r.passed());
        assert_eq!(r.fingerprint.device.label(), "cuda:0");
        assert_eq!(r.first_measurement().unwrap().samples.len(), 3);
        let back = RawRecord::from_json(&r.to_json_pretty(), "built").unwrap();
        assert_eq!(back, r);
    }

    #[test]
    fn a_failure_replaces_the_first_process_measurement_and_fails_the_record() {
        let r = RecordBuilder::passed("conv")
            .samples([sample(1, 5.0, 1.0, None)])
            .then_process(RecordBuilder::passed("conv").samples([sample(1, 6.0, 1.0, None)]))
            .failed(FailureKind::Panic, "boom")
            .build();
        assert_eq!(r.processes.len(), 2);
        assert_eq!(r.processes[1].process, 2);
        assert!(r.processes[0].measurement.is_none());
        assert_eq!(
            r.processes[1].measurement.as_ref().unwrap().samples[0].wall_ns,
            6.0
        );
        assert_eq!(r.failure().unwrap().kind, FailureKind::Panic);
        assert_eq!(r.failure().unwrap().message, "boom");
        assert!(!r.passed());
    }
}
