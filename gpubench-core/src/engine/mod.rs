//! The measurement engine: cold calls, warm-up, synchronized samples with device
//! timers, naive-loop figures, adaptive stopping, memory and flags.
//!
//! Every timed region is `sync; t0; k calls; sync; t1`: queued work is never taken
//! for finished work. The host-dispatch time (when the k-th call returned) and the
//! device time (events around the k calls) are kept beside the synced wall time.

use std::cell::{Cell, RefCell};
use std::time::{Duration, Instant};

use gpubench_analysis::memory_trace;
use gpubench_analysis::sampling::StoppingRule;
use gpubench_analysis::stats::median;
use gpubench_record::cache::L2State;
use gpubench_record::energy::EnergyMeasurement;
use gpubench_record::measurement::{
    ColdCall, Flag, Measurement, MeasurementConfig, MemoryGrowth, MemoryStats, NaiveLoop, RunMode,
    Sample, SampleClock, StopReason, Throughput, WarmupPoint,
};
use gpubench_record::memory_snapshot::PeakMemory;

use crate::device::{DeviceBackend, DeviceTimer};
use crate::telemetry::Telemetry;

mod energy;
#[cfg(test)]
mod growth_tests;
pub(crate) mod kernels;
mod own_memory;

pub(crate) use energy::EnergyPace;
pub(crate) use own_memory::OwnMemory;

/// What the engine times. Implemented by the [`crate::Bencher`] adapters.
pub trait Workload {
    /// Untimed preparation of the inputs for the next `iters` calls.
    fn prepare(&mut self, _iters: u64) {}
    /// Whether [`Workload::prepare`] makes inputs that stay alive until their call
    /// (`iter_with_setup`): the engine then prepares and times a sample in batches of
    /// a size that does not depend on the sample time.
    fn makes_inputs(&self) -> bool {
        false
    }
    /// Makes `iters` calls back to back and returns when the last one returned.
    /// Outputs stay alive until [`Workload::release`].
    fn run(&mut self, iters: u64) -> Instant;
    /// Drops outputs kept alive since the last `run` (called after the closing sync).
    fn release(&mut self) {}
    /// Makes `iters` calls like [`Workload::run`], but drops each call's output before
    /// the next call: what a CUDA-graph capture records, so the graph's memory pool
    /// hands every call the buffer the previous one freed, as PyTorch's graph replay
    /// (`do_bench_cudagraph`) does, instead of two buffers in turn.
    fn run_discarding(&mut self, iters: u64) -> Instant {
        let mut returned = Instant::now();
        for _ in 0..iters {
            returned = self.run(1);
            self.release();
        }
        returned
    }
    /// How many calls go through the inputs once (`iter_inputs`: one per input). A
    /// stretch of whole cycles holds every input equally often wherever it starts, so
    /// what it counts per call is the same in every process.
    fn cycle(&self) -> u64 {
        1
    }
    /// Labels of the cold calls: the first call ever, then one per new input shape.
    fn cold_labels(&self) -> Vec<String> {
        vec!["first call".into()]
    }
    /// Makes the `which`-th cold call (index into [`Workload::cold_labels`]).
    fn run_cold(&mut self, _which: usize) -> Instant {
        self.prepare(1);
        self.run(1)
    }
}

/// Device time queued ahead of the hidden-sync probe.
const PROBE_BLOCK: Duration = Duration::from_millis(50);
/// Calls of a workload that makes inputs are prepared and timed in batches of about
/// this long (the warm-up's first batch that lasts it sets the size), so how many
/// inputs are alive at once, and with them the caches' and the allocator's state,
/// does not grow with the sample time.
const SETUP_BATCH_NS: f64 = 1e6;
/// Fewest calls in each stretch of the growth measurement ([`MemoryGrowth`]): a
/// stretch is a sample's worth of calls, but at least this many, so a slow routine's
/// stretch still holds several calls' worth of whatever it keeps.
const GROWTH_MIN_CALLS: u64 = 4;

/// Options of one measurement beyond the record's config.
#[derive(Debug, Clone)]
pub struct EngineOptions {
    /// Iteration counts of the naive-loop figures (`None`: the engine's default).
    pub naive_loops: Option<Vec<u64>>,
    /// Work per iteration.
    pub throughput: Option<Throughput>,
    /// Whether to run the naive loops and the hidden-sync probe: a process's
    /// diagnostics, which a later process of the same benchmark need not repeat.
    pub diagnostics: bool,
    /// Whether to trace a stretch of calls after the samples and take the
    /// allocator's state at its peak (`--memory-peak-snapshot`).
    pub memory_peak: bool,
}

impl Default for EngineOptions {
    fn default() -> Self {
        EngineOptions {
            naive_loops: None,
            throughput: None,
            diagnostics: true,
            memory_peak: false,
        }
    }
}

/// Measures workloads on one device.
pub struct Engine<'a> {
    device: &'a dyn DeviceBackend,
    config: &'a MeasurementConfig,
    /// One pair of device events, made once and re-recorded for every timed region.
    timer: RefCell<Option<Box<dyn DeviceTimer + 'a>>>,
    /// Calls per batch of a workload that makes inputs, once the warm-up set it.
    setup_batch: Cell<Option<u64>>,
    /// The GPU's clock is read after every steady-state sample, when there is one.
    telemetry: Option<&'a Telemetry>,
    /// A side of a paired process reads its own memory, not the process's.
    own_memory: Option<&'a OwnMemory>,
}

/// What the first step of a measurement found ([`Engine::begin`]).
pub(crate) struct Begun {
    sync_cost_ns: f64,
    cold: Vec<ColdCall>,
    device_timer: bool,
}

/// What a measurement took before its last step ([`Engine::finish`]).
pub(crate) struct Taken {
    /// The warm-up trace.
    pub(crate) warmup: Vec<WarmupPoint>,
    /// The steady-state samples, in the order taken.
    pub(crate) samples: Vec<Sample>,
    /// Why sampling stopped.
    pub(crate) stop_reason: StopReason,
    /// The energy already measured (a paired process's alternated windows), or why
    /// there is none; `None`: measure it after the samples.
    pub(crate) energy: Option<Result<EnergyMeasurement, String>>,
}

/// What one synced, timed region measured, ns.
#[derive(Default)]
struct Bracketed {
    wall_ns: f64,
    host_ns: f64,
    device_ns: Option<f64>,
}

impl<'a> Engine<'a> {
    /// An engine for `device` with `config`.
    pub fn new(device: &'a dyn DeviceBackend, config: &'a MeasurementConfig) -> Self {
        Engine {
            device,
            config,
            timer: RefCell::new(device.timer()),
            setup_batch: Cell::new(None),
            telemetry: None,
            own_memory: None,
        }
    }

    /// Reads memory through `own` (a side of a paired process, which shares the
    /// allocator with the other side) instead of the device's process-wide figures.
    pub(crate) fn with_own_memory(mut self, own: Option<&'a OwnMemory>) -> Self {
        self.own_memory = own;
        self
    }

    /// The account of a paired side's own memory, when this engine keeps one.
    pub(crate) fn own_memory(&self) -> Option<&'a OwnMemory> {
        self.own_memory
    }

    /// The allocator's statistics: the side's own in a paired process.
    fn memory(&self) -> Option<MemoryStats> {
        match self.own_memory {
            Some(own) => own.stats(),
            None => self.device.memory(),
        }
    }

    /// Reads the GPU's clock after every steady-state sample (outside the timed
    /// region) and leaves throttled samples out of the stopping rule.
    pub fn with_telemetry(mut self, telemetry: Option<&'a Telemetry>) -> Self {
        self.telemetry = telemetry;
        self
    }

    /// Runs the whole measurement of `workload`.
    pub fn measure(&self, workload: &mut dyn Workload, options: &EngineOptions) -> Measurement {
        let begun = self.begin(workload);
        if self.config.mode == RunMode::Smoke {
            return Measurement {
                sync_cost_ns: begun.sync_cost_ns,
                cold: begun.cold,
                warmup: vec![],
                samples: vec![],
                naive: vec![],
                throughput: options.throughput,
                memory: self.memory(),
                memory_growth: None,
                stop_reason: StopReason::Smoke,
                flags: vec![],
                device_timer: begun.device_timer,
                kernel: None,
                kernel_unavailable: None,
                memory_peak: None,
                memory_peak_unavailable: None,
                l2: Some(L2State::of(self.config.flush_l2)),
                energy: None,
                energy_unavailable: None,
            };
        }
        let (warmup, estimate_ns) = self.warm_up(workload);
        let iters = self.iters_per_sample(estimate_ns);
        let (samples, stop_reason) = self.sample(workload, iters);
        let taken = Taken {
            warmup,
            samples,
            stop_reason,
            energy: None,
        };
        self.finish(workload, options, begun, taken)
    }

    /// The first step of a measurement: the cost of an empty sync and the cold calls
    /// (the first call ever, then one per new input shape; only the first in a smoke
    /// run).
    pub(crate) fn begin(&self, workload: &mut dyn Workload) -> Begun {
        let device_timer = self.timer.borrow().is_some();
        let sync_cost_ns = self.sync_cost_ns();
        let labels = workload.cold_labels();
        let cold_count = if self.config.mode == RunMode::Smoke {
            1
        } else {
            labels.len()
        };
        let cold = labels
            .into_iter()
            .take(cold_count)
            .enumerate()
            .map(|(which, label)| self.cold_call(workload, which, label))
            .collect();
        Begun {
            sync_cost_ns,
            cold,
            device_timer,
        }
    }

    /// One steady-state sample of `iters` calls with the GPU's clock read after it:
    /// what [`Engine::measure`] takes in its loop, for a driver that takes samples
    /// itself (a paired process alternating two sides).
    pub(crate) fn steady_sample(&self, workload: &mut dyn Workload, iters: u64) -> Sample {
        let mut sample = self.timed_sample(workload, iters);
        // Right after the closing sync, outside the timed region: tens of µs.
        sample.clock = self.read_clock();
        sample
    }

    /// The GPU's clock now, judged by the throttle rule; `None` without telemetry or
    /// when the read failed.
    fn read_clock(&self) -> Option<SampleClock> {
        self.telemetry
            .and_then(|t| t.sample_clock(self.config.throttle_threshold))
    }

    /// The last step: the diagnostics (naive loops, the hidden-sync probe), the flags,
    /// memory, energy (unless `taken` has it) and kernel time, around the samples
    /// taken however they were.
    pub(crate) fn finish(
        &self,
        workload: &mut dyn Workload,
        options: &EngineOptions,
        begun: Begun,
        taken: Taken,
    ) -> Measurement {
        let Taken {
            warmup,
            samples,
            stop_reason,
            energy,
        } = taken;
        // The routine's own peak, before the diagnostics: the hidden-sync probe's
        // device work and the naive loops are the engine's, and only the first
        // process runs them (on an H200 they lifted its peak by up to 80 MiB over the
        // other processes', whose peaks agreed to the byte).
        let memory = self.memory();
        let per_iter = median(
            &samples
                .iter()
                .map(Sample::per_iter_wall)
                .collect::<Vec<_>>(),
        );
        let (naive, syncs_inside) = if options.diagnostics {
            (
                self.naive_loops(workload, per_iter, options.naive_loops.as_deref()),
                self.syncs_inside(workload, &samples),
            )
        } else {
            (Vec::new(), false)
        };
        let mut flags = classify(
            &samples,
            self.device.is_async(),
            syncs_inside,
            self.config.flush_l2,
        );
        if syncs_inside {
            flags.push(Flag::SyncsInsideRoutine);
        }
        if !matches!(stop_reason, StopReason::Converged | StopReason::Paired) {
            flags.push(Flag::Unstable);
        }
        if samples.iter().any(Sample::throttled) {
            flags.push(Flag::Throttled);
        }
        let busy = {
            let primary: Vec<f64> = samples.iter().map(Sample::per_iter_primary).collect();
            median(&primary)
        };
        // Before the kernel measurement, whose graph has a memory pool of its own.
        let memory_growth = self.memory_growth(workload, &samples);
        let (memory_peak, memory_peak_unavailable) = if options.memory_peak {
            match self.memory_at_peak(workload, &samples) {
                Ok(p) => (Some(p), None),
                Err(why) => (None, Some(why)),
            }
        } else {
            (None, None)
        };
        let energy = energy.unwrap_or_else(|| self.energy(workload, &samples));
        let (energy, energy_unavailable) = match energy {
            Ok(e) => (Some(e), None),
            Err(why) => (None, Some(why)),
        };
        let (kernel, kernel_unavailable) =
            match self.kernel_measurement(workload, busy, options.diagnostics) {
                Ok(k) => (Some(k), None),
                Err(why) => (None, Some(why)),
            };
        Measurement {
            sync_cost_ns: begun.sync_cost_ns,
            cold: begun.cold,
            warmup,
            samples,
            naive,
            throughput: options.throughput,
            memory,
            memory_growth,
            stop_reason,
            flags,
            device_timer: begun.device_timer,
            kernel,
            kernel_unavailable,
            memory_peak,
            memory_peak_unavailable,
            l2: Some(L2State::of(self.config.flush_l2)),
            energy,
            energy_unavailable,
        }
    }

    /// The allocator's state at the peak of a sample's worth of calls (whole input
    /// cycles), made as the samples made them with every allocation traced: after
    /// the samples, so their timing ran without the trace's cost.
    fn memory_at_peak(
        &self,
        workload: &mut dyn Workload,
        samples: &[Sample],
    ) -> Result<PeakMemory, String> {
        workload.release();
        self.device.synchronize();
        let calls = whole_cycles(samples.last().map_or(1, |s| s.iters), workload.cycle());
        self.device.memory_trace_start()?;
        self.timed_sample(workload, calls);
        self.device.synchronize();
        let trace = self.device.memory_trace_stop()?;
        Ok(memory_trace::at_peak(&trace, calls))
    }

    /// Memory the routine holds from call to call: allocated bytes read after a sync
    /// with the outputs dropped, before and after two stretches of a sample's worth of
    /// calls (at least [`GROWTH_MIN_CALLS`], whole input cycles). The steady state is
    /// reached by then (warm-up and samples ran), so a one-time cache is already
    /// filled, and one that fills late fills in one stretch only, which
    /// [`MemoryGrowth::per_call`] leaves out. `None` where the device has no
    /// allocator to read (the CPU): growth there is unknown, not zero. In a paired
    /// process the other side is idle through the stretches, so the growth is this
    /// side's, and the bytes read are its own ([`OwnMemory`]).
    fn memory_growth(
        &self,
        workload: &mut dyn Workload,
        samples: &[Sample],
    ) -> Option<MemoryGrowth> {
        let allocated = || {
            self.device.synchronize();
            self.memory().map(|m| m.allocated_bytes)
        };
        workload.release();
        let start_bytes = allocated()?;
        let per_sample = samples.last().map_or(1, |s| s.iters);
        let calls = whole_cycles(per_sample.max(GROWTH_MIN_CALLS), workload.cycle());
        // A timed sample prepares inputs, runs, syncs and drops the outputs: the
        // calls as the samples made them.
        self.timed_sample(workload, calls);
        let first_bytes = allocated()?;
        self.timed_sample(workload, calls);
        let second_bytes = allocated()?;
        Some(MemoryGrowth {
            calls,
            start_bytes,
            first_bytes,
            second_bytes,
        })
    }

    /// Median of `t0; sync; t1` on an idle device.
    fn sync_cost_ns(&self) -> f64 {
        self.device.synchronize();
        let costs: Vec<f64> = (0..21)
            .map(|_| {
                let t0 = Instant::now();
                self.device.synchronize();
                t0.elapsed().as_nanos() as f64
            })
            .collect();
        median(&costs)
    }

    /// `sync; t0; start event; run(); stop event; sync; t1`: `run` returns when its
    /// last call returned to the host.
    ///
    /// With `flush` the L2 flush is queued between the first sync and `t0`, as
    /// Triton's `do_bench` does: the device is busy with it while the host launches
    /// the calls, so the start event fires as the flush ends with the calls already
    /// queued, and device time holds the calls' own work without the host's
    /// dispatch of the first (about 10 µs of tch and cuBLAS on an H200: a flushed
    /// 1024² matmul read 27 µs between events after a sync against 10 µs of
    /// kernels). The wall time then holds what is left of the flush when the calls
    /// were launched. On the CPU the flush is done before it returns, outside `t0`.
    fn bracket(&self, flush: bool, run: impl FnOnce() -> Instant) -> Bracketed {
        let mut timer = self.timer.borrow_mut();
        self.device.synchronize();
        if flush {
            self.device.flush_cache();
        }
        let t0 = Instant::now();
        if let Some(t) = timer.as_mut() {
            t.start();
        }
        let returned = run();
        if let Some(t) = timer.as_mut() {
            t.stop();
        }
        self.device.synchronize();
        let t1 = Instant::now();
        Bracketed {
            wall_ns: (t1 - t0).as_nanos() as f64,
            host_ns: returned.saturating_duration_since(t0).as_nanos() as f64,
            device_ns: timer.as_mut().and_then(|t| t.elapsed_ns()),
        }
    }

    fn cold_call(&self, workload: &mut dyn Workload, which: usize, label: String) -> ColdCall {
        let timed = self.bracket(false, || workload.run_cold(which));
        workload.release();
        ColdCall {
            label,
            wall_ns: timed.wall_ns,
            host_ns: timed.host_ns,
            device_ns: timed.device_ns,
        }
    }

    /// One synced sample of `iters` calls. The calls of a workload that makes inputs
    /// are prepared and timed in batches ([`SETUP_BATCH_NS`]), the sample being their
    /// sum. Preparing a whole sample's inputs up front kept as many inputs alive as
    /// the sample had calls, so a longer sample ran its calls on colder caches and a
    /// larger heap: per-call time followed the sample time.
    pub(crate) fn timed_sample(&self, workload: &mut dyn Workload, iters: u64) -> Sample {
        let batch = match (workload.makes_inputs(), self.setup_batch.get()) {
            (true, Some(batch)) => batch.min(iters),
            _ => iters,
        };
        let mut total = Bracketed {
            device_ns: Some(0.0),
            ..Bracketed::default()
        };
        let mut left = iters;
        while left > 0 {
            let n = batch.min(left);
            workload.prepare(n);
            let timed = self.bracket(self.config.flush_l2, || workload.run(n));
            workload.release();
            total.wall_ns += timed.wall_ns;
            total.host_ns += timed.host_ns;
            total.device_ns = total.device_ns.zip(timed.device_ns).map(|(a, b)| a + b);
            left -= n;
        }
        if workload.makes_inputs()
            && self.setup_batch.get().is_none()
            && total.wall_ns >= SETUP_BATCH_NS
        {
            self.setup_batch.set(Some(iters));
        }
        Sample {
            iters,
            wall_ns: total.wall_ns,
            host_ns: total.host_ns,
            device_ns: total.device_ns,
            clock: None,
        }
    }

    /// Doubles the batch until one batch lasts a sample's target and the
    /// per-iteration estimate is stable (three batches within 5%), or the time bound;
    /// with `--flush-l2`, flushed calls to the time bound.
    pub(crate) fn warm_up(&self, workload: &mut dyn Workload) -> (Vec<WarmupPoint>, f64) {
        let bound = Duration::from_secs_f64(self.config.warmup_time_s);
        let target_ns = self.config.sample_target_s * 1e9;
        let start = Instant::now();
        let mut trace = Vec::new();
        let mut estimates: Vec<f64> = Vec::new();
        let mut iters = 1u64;
        loop {
            let s = self.timed_sample(workload, iters);
            trace.push(WarmupPoint {
                iters,
                wall_ns: s.wall_ns,
            });
            estimates.push(s.per_iter_wall());
            let long_enough = s.wall_ns >= target_ns || self.config.flush_l2;
            let stable = estimates.len() >= 3 && {
                let last = &estimates[estimates.len() - 3..];
                let hi = last.iter().cloned().fold(f64::MIN, f64::max);
                let lo = last.iter().cloned().fold(f64::MAX, f64::min);
                hi <= lo * 1.05
            };
            if (long_enough && stable) || start.elapsed() >= bound {
                break;
            }
            if !long_enough {
                iters = iters.saturating_mul(2);
            }
        }
        if self.config.flush_l2 {
            trace.extend(self.settle_flushed(workload, start + bound));
        }
        let tail = &estimates[estimates.len().saturating_sub(3)..];
        (trace, median(tail))
    }

    /// Flushed calls, one a sample as the samples will run, until `until`: one point
    /// of all of them, `None` when there was no time left. A flushed warm-up is
    /// stable after three calls, which settle no clock: on an H200 the samples of a
    /// flushed 8192² matmul that followed them read 1980 MHz, and the graph replays
    /// timed after the samples 1530 MHz, power-capped, 14% slower. Run for the rest
    /// of the warm-up time, both timers start from the clock the work holds.
    fn settle_flushed(&self, workload: &mut dyn Workload, until: Instant) -> Option<WarmupPoint> {
        let mut settled = WarmupPoint {
            iters: 0,
            wall_ns: 0.0,
        };
        while Instant::now() < until {
            settled.iters += 1;
            settled.wall_ns += self.timed_sample(workload, 1).wall_ns;
        }
        (settled.iters > 0).then_some(settled)
    }

    pub(crate) fn iters_per_sample(&self, estimate_ns: f64) -> u64 {
        if self.config.flush_l2 {
            // The cache is flushed before each timed call, so a sample holds one.
            return 1;
        }
        let target_ns = self.config.sample_target_s * 1e9;
        ((target_ns / estimate_ns.max(1.0)).round() as u64).max(1)
    }

    /// Takes samples until the stopping rule
    /// ([`gpubench_analysis::sampling`]) ends it; throttled samples are left out of
    /// the figures, so they count only towards the bounds.
    fn sample(&self, workload: &mut dyn Workload, iters: u64) -> (Vec<Sample>, StopReason) {
        let mut sampling = StoppingRule::of(self.config).start();
        let mut samples: Vec<Sample> = Vec::new();
        loop {
            let sample = self.steady_sample(workload, iters);
            let figure = (!sample.throttled()).then(|| sample.per_iter_primary());
            samples.push(sample);
            if let Some(stopped) = sampling.add(figure) {
                return (samples, stopped);
            }
        }
    }

    /// What an unsynchronised loop reports: host time until the last call returned,
    /// next to the same loop closed by a sync.
    fn naive_loops(
        &self,
        workload: &mut dyn Workload,
        per_iter_ns: f64,
        requested: Option<&[u64]>,
    ) -> Vec<NaiveLoop> {
        let counts: Vec<u64> = match requested {
            Some(c) => c.to_vec(),
            // By default one loop of 20, when it costs at most a second.
            None if per_iter_ns * 20.0 <= 1e9 => vec![20],
            None => vec![],
        };
        counts
            .into_iter()
            .filter(|&n| n > 0)
            .map(|n| {
                workload.prepare(n);
                self.device.synchronize();
                let t0 = Instant::now();
                let returned = workload.run(n);
                self.device.synchronize();
                let t1 = Instant::now();
                workload.release();
                NaiveLoop {
                    iters: n,
                    naive_ns_per_iter: returned.saturating_duration_since(t0).as_nanos() as f64
                        / n as f64,
                    synced_ns_per_iter: (t1 - t0).as_nanos() as f64 / n as f64,
                }
            })
            .collect()
    }

    /// Queues a long block of device work, then makes one call: a routine that
    /// returns only after the block finished waited on the device (a `.item()`, a
    /// print, a copy to the host).
    fn syncs_inside(&self, workload: &mut dyn Workload, samples: &[Sample]) -> bool {
        if !self.device.is_async() {
            return false;
        }
        let host = median(
            &samples
                .iter()
                .map(Sample::per_iter_host)
                .collect::<Vec<_>>(),
        );
        let block = PROBE_BLOCK.max(Duration::from_nanos((host * 4.0) as u64));
        workload.prepare(1);
        self.device.synchronize();
        if !self.device.enqueue_blocker(block) {
            return false;
        }
        let t0 = Instant::now();
        let returned = workload.run(1);
        let waited = returned.saturating_duration_since(t0);
        self.device.synchronize();
        workload.release();
        waited.as_secs_f64() >= 0.5 * block.as_secs_f64()
    }
}

/// `calls` rounded up to whole cycles of `cycle` calls (a cycle of 0 counts as 1).
fn whole_cycles(calls: u64, cycle: u64) -> u64 {
    let cycle = cycle.max(1);
    calls.div_ceil(cycle) * cycle
}

/// Device-bound when the host returned well before the device finished (work was
/// queued ahead); launch-bound when the host never got ahead (the k-th call returned
/// only as the device finished) or the device sat idle for a good part of the synced
/// time. Device events alone cannot tell launch-bound from busy: a device waiting for
/// launches still has its events ticking. Only meaningful on an asynchronous device,
/// and a routine that syncs inside is reported as that instead.
///
/// With `flushed` (`--flush-l2`) a sample's wall time holds the tail of the flush,
/// the device's work but no call's, so the call's device time stands in for it: the
/// host's dispatch against the call's own work.
fn classify(samples: &[Sample], is_async: bool, syncs_inside: bool, flushed: bool) -> Vec<Flag> {
    if !is_async || samples.is_empty() {
        return vec![];
    }
    let wall = median(
        &samples
            .iter()
            .map(Sample::per_iter_wall)
            .collect::<Vec<_>>(),
    );
    let h = median(
        &samples
            .iter()
            .map(Sample::per_iter_host)
            .collect::<Vec<_>>(),
    );
    let device: Option<f64> = samples
        .iter()
        .map(Sample::per_iter_device)
        .collect::<Option<Vec<f64>>>()
        .filter(|d| !d.is_empty())
        .map(|d| median(&d));
    let w = match device {
        Some(d) if flushed => d,
        _ => wall,
    };
    let idle_device = device.is_some_and(|d| d < 0.7 * w);
    if h < 0.7 * w && !idle_device {
        vec![Flag::DeviceBound]
    } else if !syncs_inside && (idle_device || h >= 0.9 * w) {
        vec![Flag::LaunchBound]
    } else {
        vec![]
    }
}
