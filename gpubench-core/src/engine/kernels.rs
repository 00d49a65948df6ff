//! Kernel time and exact counters of a workload: a profiled stretch of calls (the
//! kernel table and the counts per call), then CUDA-graph capture and replay of a few
//! calls, several times over (the kernels back to back with no host in the way, timed
//! by device events), falling back to the profiler's kernel durations for a routine a graph cannot hold,
//! and saying why.
//!
//! Triton's `do_bench_cudagraph` is the model for the replay: capture on a side stream
//! after a warm-up there, replay between events, divide by the calls. With
//! `--flush-l2` a graph holds one call and each replay is timed on its own as a
//! flushed sample is (a sync, the flush queued ahead of the start event, the clock
//! read after it), so kernel time starts every call with a flushed L2. The clock it
//! runs at is the one the flushed warm-up settled (`Engine::warm_up`): on an H200 a
//! flushed 8192² matmul's replays, power-capped, read 0.955 of its samples' time
//! once both followed a whole warm-up time of flushed calls, and 1.14 when the
//! samples followed three.

use std::panic::{self, AssertUnwindSafe};
use std::time::Instant;

use gpubench_record::cache::L2State;
use gpubench_record::kernels;
use gpubench_record::kernels::{
    ActivityKind, Counters, KernelMeasurement, KernelMethod, ReplayClock,
};
use gpubench_record::measurement::SampleClock;

use super::{Engine, Workload};
use crate::device::DeviceProfile;
use crate::quiet_panic;

/// Device work a profiled stretch of calls aims at, ns.
const PROFILE_WORK_NS: f64 = 10e6;
/// Device work one captured graph holds, ns.
const GRAPH_WORK_NS: f64 = 1e6;
/// Device work one kernel-time sample replays, ns.
const SAMPLE_WORK_NS: f64 = 5e6;
/// Graphs captured per process. Replays of the same calls vary from one captured
/// graph to the next about as much as from one process to the next (one H200, an add
/// of 1M floats: 2.49–2.58 µs over six graphs in one process, in PyTorch's own
/// replay too), so a process's kernel time is the median over several graphs.
pub(crate) const CAPTURES: usize = 4;
/// Kernel-time samples per captured graph.
pub(crate) const SAMPLES_PER_CAPTURE: usize = 5;
/// Profiled stretches per process when the routine cannot be captured.
const PROFILER_SAMPLES: usize = 5;
/// Most replays one kernel-time sample makes with `--flush-l2`, each after a flush,
/// timed on its own and followed by a clock read: at most 4 × (1 + 5 × 20) paced
/// replays a process, of the order of a flushed launch-bound routine's samples
/// (200 a process for a 1024² matmul on an H200).
const FLUSHED_REPLAYS: u32 = 20;

/// `calls` rounded up to whole cycles of `cycle` calls; as it is when a cycle is
/// longer than [`MAX_CYCLE`] calls, which would make the stretch too long.
fn capped_whole_cycles(calls: u64, cycle: u64) -> u64 {
    if cycle > MAX_CYCLE {
        return calls;
    }
    super::whole_cycles(calls, cycle)
}

/// The longest input cycle a profiled or captured stretch is rounded up to.
const MAX_CYCLE: u64 = 1000;

impl Engine<'_> {
    /// What the GPU does per call of `workload`, whose calls take about
    /// `per_iter_ns` each. With `profile` the process also records the kernel table
    /// and counters (the first process does; later ones only time the kernels).
    ///
    /// The graphs are replayed before anything is profiled: on an H200 the process
    /// that had run the profiler replayed slowest in four runs of five processes
    /// (1.3–3.4% above the others), with one graph per process.
    pub(super) fn kernel_measurement(
        &self,
        workload: &mut dyn Workload,
        per_iter_ns: f64,
        profile: bool,
    ) -> Result<KernelMeasurement, String> {
        // A call's kernels take at most its device time: the graph holds at most
        // GRAPH_WORK_NS of work.
        // Both stretches hold whole cycles of a stream's inputs: their lengths follow
        // the measured call time, which moves from process to process, and a part of
        // a cycle would count, and time, a different mix of inputs in each.
        let cycle = workload.cycle();
        // With --flush-l2 a graph holds one call, so a flush can come before each.
        let k = if self.config.flush_l2 {
            1
        } else {
            capped_whole_cycles(
                ((GRAPH_WORK_NS / per_iter_ns.max(1.0)).round() as u64).clamp(1, 1000),
                cycle,
            )
        };
        // A device without kernel timing says so before any inputs are made.
        let mut clocks = Vec::new();
        let replayed = self.captured_samples(workload, k, &mut clocks)?;
        let calls = capped_whole_cycles(
            ((PROFILE_WORK_NS / per_iter_ns.max(1.0)).ceil() as u64).clamp(3, 1000),
            cycle,
        );
        let (table, counters) = if profile {
            let (p, allocs) = self.profile_calls(workload, calls)?;
            if p.busy_ns() <= 0.0 {
                return Err("the routine launched no kernels".into());
            }
            let counters = Counters {
                calls,
                kernels: p.count(ActivityKind::Kernel),
                memcpys: p.count(ActivityKind::Memcpy),
                memsets: p.count(ActivityKind::Memset),
                // The engine's own sync that closes the stretch is not the routine's.
                syncs: p.syncs.saturating_sub(1),
                allocations: allocs.map(|a| a.0),
                allocated_bytes: allocs.map(|a| a.1),
            };
            (kernels::table(&p.activities, calls), Some(counters))
        } else {
            (Vec::new(), None)
        };
        match replayed {
            Ok(samples_ns) => Ok(KernelMeasurement {
                method: KernelMethod::GraphReplay,
                not_capturable: None,
                samples_ns,
                kernels: table,
                counters,
                l2: Some(L2State::of(self.config.flush_l2)),
                clock: replay_clock(&clocks),
            }),
            Err(why) => {
                let mut samples = Vec::with_capacity(PROFILER_SAMPLES);
                for _ in 0..PROFILER_SAMPLES {
                    let (p, _) = self.profile_calls(workload, calls)?;
                    if p.busy_ns() <= 0.0 {
                        return Err("the routine launched no kernels".into());
                    }
                    samples.push(p.busy_ns() / calls as f64);
                }
                Ok(KernelMeasurement {
                    method: KernelMethod::Profiler,
                    not_capturable: Some(why),
                    samples_ns: samples,
                    kernels: table,
                    counters,
                    // The profiled stretch runs its calls back to back.
                    l2: Some(L2State::Warm),
                    clock: None,
                })
            }
        }
    }

    /// Runs `calls` calls under the device's profiler, closed by one sync, and returns
    /// what the device did with the allocations made.
    fn profile_calls(
        &self,
        workload: &mut dyn Workload,
        calls: u64,
    ) -> Result<(DeviceProfile, Option<(u64, u64)>), String> {
        workload.prepare(calls);
        self.device.synchronize();
        self.device.reset_allocation_counts();
        self.device.profile_start()?;
        workload.run(calls);
        self.device.synchronize();
        let profile = self.device.profile_stop();
        let allocs = self.device.allocation_counts();
        workload.release();
        Ok((profile?, allocs))
    }

    /// Kernel-time samples of [`CAPTURES`] graphs of `k` calls each, captured and
    /// replayed one after the other, with the clock read after each paced replay
    /// put in `clocks`. The inner `Err` says why the routine cannot be captured; the
    /// outer one why the device has no kernel timing at all.
    fn captured_samples(
        &self,
        workload: &mut dyn Workload,
        k: u64,
        clocks: &mut Vec<SampleClock>,
    ) -> Result<Result<Vec<f64>, String>, String> {
        let mut samples = Vec::with_capacity(CAPTURES * SAMPLES_PER_CAPTURE);
        for _ in 0..CAPTURES {
            self.device.capture_enter()?;
            let replayed = self
                .capture(workload, k)
                .and_then(|()| self.replay_samples(k, clocks));
            self.device.capture_free();
            match replayed {
                Ok(s) => samples.extend(s),
                Err(why) => return Ok(Err(why)),
            }
        }
        Ok(Ok(samples))
    }

    /// Captures `k` calls in a graph on a side stream, after a warm-up there; `Err`
    /// says why the routine cannot be captured. Each call's output is dropped before
    /// the next ([`Workload::run_discarding`]). The device has entered capture mode.
    fn capture(&self, workload: &mut dyn Workload, k: u64) -> Result<(), String> {
        workload.prepare(k);
        workload.run_discarding(k);
        self.device.synchronize();
        workload.release();
        workload.prepare(k);
        if let Err(why) = self.device.capture_begin() {
            let _ = self.device.capture_end();
            self.device.capture_abandon();
            workload.release();
            return Err(why);
        }
        let ran = quiet_panic::quietly(|| {
            panic::catch_unwind(AssertUnwindSafe(|| workload.run_discarding(k)))
        });
        let ended = self.device.capture_end();
        if ran.is_err() || ended.is_err() {
            // What the failed capture left (the generator in capture mode, ...) would
            // break the next random op of this routine, or of the other revision in a
            // paired process.
            self.device.capture_abandon();
        }
        workload.release();
        self.device.synchronize();
        match (ran, ended) {
            (Err(payload), _) => Err(format!(
                "the routine failed while being captured: {}",
                capture_error(&quiet_panic::message(payload.as_ref()))
            )),
            (Ok(_), Err(why)) => Err(why),
            (Ok(_), Ok(())) => Ok(()),
        }
    }

    /// Kernel time per call from [`SAMPLES_PER_CAPTURE`] timed stretches of replays of a graph of
    /// `k` calls, each stretch about `SAMPLE_WORK_NS` long.
    fn replay_samples(&self, k: u64, clocks: &mut Vec<SampleClock>) -> Result<Vec<f64>, String> {
        // The first replay uploads the graph; the second says how long one takes.
        self.device.capture_replay(1)?;
        self.device.synchronize();
        let one = self.timed_replays(1, clocks)?;
        let most = if self.config.flush_l2 {
            FLUSHED_REPLAYS
        } else {
            10_000
        };
        let replays = ((SAMPLE_WORK_NS / one.max(1.0)).round() as u32).clamp(1, most);
        let mut samples = Vec::with_capacity(SAMPLES_PER_CAPTURE);
        for _ in 0..SAMPLES_PER_CAPTURE {
            samples.push(self.timed_replays(replays, clocks)? / (replays as f64 * k as f64));
        }
        Ok(samples)
    }

    /// Device time of `replays` replays of the captured graph, ns: back to back, or
    /// with `--flush-l2` one at a time, each paced as a flushed sample is: a sync,
    /// the flush queued ahead of the start event (so the replay's launch is hidden
    /// as the call's dispatch is in the samples), and the clock read after it (put in
    /// `clocks`), the rest the samples' calls have between them. Kernel time then
    /// starts each call with a cold L2 at the clock the device timer saw.
    fn timed_replays(&self, replays: u32, clocks: &mut Vec<SampleClock>) -> Result<f64, String> {
        if !self.config.flush_l2 {
            return self.timed_replay_run(replays, false);
        }
        let mut total = 0.0;
        for _ in 0..replays {
            total += self.timed_replay_run(1, true)?;
            clocks.extend(self.read_clock());
        }
        Ok(total)
    }

    /// Device time of `replays` back-to-back replays of the captured graph, after a
    /// flush with `flush`, ns.
    fn timed_replay_run(&self, replays: u32, flush: bool) -> Result<f64, String> {
        let mut result = Ok(());
        let timed = self.bracket(flush, || {
            result = self.device.capture_replay(replays);
            Instant::now()
        });
        result?;
        timed
            .device_ns
            .ok_or_else(|| "the device has no timer to time graph replays".to_string())
    }
}

/// The clocks read after the paced replays, summed up; `None` when none was read
/// (replays back to back, or no telemetry).
fn replay_clock(clocks: &[SampleClock]) -> Option<ReplayClock> {
    let reads = u32::try_from(clocks.len()).ok().filter(|&n| n > 0)?;
    let count = |f: fn(&SampleClock) -> bool| clocks.iter().filter(|c| f(c)).count() as u32;
    Some(ReplayClock {
        reads,
        sm_mhz_mean: clocks.iter().map(|c| f64::from(c.sm_mhz)).sum::<f64>() / f64::from(reads),
        sm_mhz_min: clocks.iter().map(|c| c.sm_mhz).min()?,
        sm_mhz_max: clocks.iter().map(|c| c.sm_mhz).max()?,
        power_capped: count(|c| c.power_capped),
        throttled: count(|c| c.throttled),
    })
}

/// Characters of a capture failure kept in the record.
const REASON_CHARS: usize = 160;

/// The telling part of a panic raised while capturing: the CUDA error's own line
/// when there is one (`CUDA error: operation not permitted when stream is
/// capturing`), without the unwrap wrapper, hints and backtrace around it.
fn capture_error(message: &str) -> String {
    let from = message.find("CUDA error:").unwrap_or(0);
    // tch's errors arrive Debug-formatted, their newlines escaped as `\n`.
    let line = message[from..].lines().next().unwrap_or("");
    let line = line.split("\\n").next().unwrap_or(line);
    let line = line.trim().trim_end_matches(['"', ')']);
    if line.chars().count() > REASON_CHARS {
        let cut: String = line.chars().take(REASON_CHARS - 1).collect();
        format!("{cut}…")
    } else {
        line.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::capture_error;

    #[test]
    fn a_capture_failure_is_cut_to_the_cuda_error() {
        let tch = "called `Result::unwrap()` on an `Err` value: Torch(\"CUDA error: operation not permitted when stream is capturing\\nSearch for `cudaErrorStreamCaptureUnsupported' in https://docs.nvidia.com\\n [C++ backtrace cut]";
        assert_eq!(
            capture_error(tch),
            "CUDA error: operation not permitted when stream is capturing"
        );
        let multi = "CUDA error: operation not permitted when stream is capturing\nSearch for it";
        assert_eq!(
            capture_error(multi),
            "CUDA error: operation not permitted when stream is capturing"
        );
        assert_eq!(capture_error("boom\nmore"), "boom");
        assert_eq!(capture_error(&"x".repeat(500)).chars().count(), 160);
    }
}
