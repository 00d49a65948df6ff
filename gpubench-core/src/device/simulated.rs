//! A simulated asynchronous device: work "launched" on it completes after the host
//! call returns, as on a GPU, so the engine's handling of the queue can be tested on
//! any machine. It also records what it ran (named kernels, syncs, allocations) and
//! captures work into a graph to replay, as CUDA graphs do. Its allocator
//! ([`SimAllocator`]) keeps live blocks in segments like libtorch's caching
//! allocator: with a capacity set it rounds requests, caches freed blocks, fails
//! with CUDA's out-of-memory message, and fragments as the real one does.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use gpubench_analysis::memory_trace::{
    AllocatorTrace, TraceAction, TraceEvent, TracedBlock, TracedSegment,
};
use gpubench_analysis::telemetry::EnergyCounter;
use gpubench_record::kernels::ActivityKind;
use gpubench_record::measurement::MemoryStats;
use gpubench_record::memory_snapshot::{BlockView, MemorySnapshot, SegmentView};
use gpubench_record::record::DeviceIdentity;
use gpubench_record::units::format_bytes;

use super::{spin_until, DeviceBackend, DeviceProfile, DeviceTimer};

/// The name [`SimulatedDevice::launch`] gives its kernels.
pub const DEFAULT_KERNEL: &str = "simulated_kernel";

#[derive(Debug)]
struct Queue {
    /// When all queued work will have finished.
    busy_until: Instant,
    memory: SimAllocator,
    flushes: u64,
    /// Device time one flush of the cache takes (none unless set): a GPU's flush
    /// writes a buffer larger than its L2.
    flush_work: Duration,
    /// Allocations (and bytes) since the counts were reset.
    allocations: (u64, u64),
    /// What ran while recording: kernels in launch order, and syncs.
    profile: Option<(Vec<(String, Duration)>, u64)>,
    /// Work captured instead of run, or why the capture failed.
    capturing: Option<Result<Vec<(String, Duration)>, String>>,
    /// The last capture that succeeded.
    graph: Option<Vec<(String, Duration)>>,
    /// Captures that succeeded so far.
    captures: usize,
    /// How much longer than their own duration the kernels of the n-th captured
    /// graph take when replayed (1 past the end): graphs of the same calls replay
    /// at different speeds on a GPU.
    graph_slowdowns: Vec<f64>,
    /// A workspace the first kernel allocates and keeps for the process, as cuBLAS
    /// does (bytes), and whether it was allocated.
    workspace: (u64, bool),
    /// Whether the allocator reads nothing (until the first allocation, which clears
    /// it), as CUDA's caching allocator starts with the process's first tensor.
    lazy_allocator: bool,
    /// Whether the random generator is in capture mode: set when a capture begins,
    /// cleared when it ends, and left set by a capture that failed to end until
    /// [`DeviceBackend::capture_abandon`], as libtorch's CUDA generator is.
    generator_capturing: bool,
    /// Whether the profiler has run, and graph replays since it first did.
    profiled: bool,
    replays_after_profiling: u64,
}

/// The simulated board's power with nothing running, W.
pub const SIMULATED_IDLE_W: f64 = 80.0;
/// Its power while work runs, W.
pub const SIMULATED_BUSY_W: f64 = 400.0;
/// How often its energy counter steps, as NVML's does on an H200.
pub const SIMULATED_ENERGY_STEP: Duration = Duration::from_millis(100);

/// A total-energy counter that steps every [`SIMULATED_ENERGY_STEP`]: the energy
/// drawn at [`SIMULATED_IDLE_W`], and [`SIMULATED_BUSY_W`] while work runs, up to its
/// last step.
#[derive(Debug)]
struct SimEnergy {
    started: Instant,
    /// The energy is integrated up to here, J.
    until: Instant,
    joules: f64,
    /// Steps taken, and the counter at the last one, mJ.
    steps: u32,
    counter_mj: u64,
    /// The energy of the last whole step, J: the power reading averages over it.
    last_step_j: f64,
    /// The queue's work runs without a gap from `until` to here.
    busy_until: Instant,
}

impl SimEnergy {
    fn new(now: Instant) -> Self {
        SimEnergy {
            started: now,
            until: now,
            joules: 0.0,
            steps: 0,
            counter_mj: 0,
            last_step_j: 0.0,
            busy_until: now,
        }
    }

    /// Integrates to `to`, stepping at each step's time.
    fn advance(&mut self, to: Instant) {
        let busy_until = self.busy_until;
        loop {
            let next = self.started + SIMULATED_ENERGY_STEP * (self.steps + 1);
            let end = next.min(to);
            if end > self.until {
                let span = (end - self.until).as_secs_f64();
                let busy = busy_until.min(end).saturating_duration_since(self.until);
                self.joules += SIMULATED_IDLE_W * span
                    + (SIMULATED_BUSY_W - SIMULATED_IDLE_W) * busy.as_secs_f64();
                self.until = end;
            }
            if next > to {
                return;
            }
            self.steps += 1;
            let counter_mj = (self.joules * 1e3) as u64;
            self.last_step_j = (counter_mj - self.counter_mj) as f64 / 1e3;
            self.counter_mj = counter_mj;
        }
    }
}

/// A device with a single in-order queue, timed with the host clock.
#[derive(Debug)]
pub struct SimulatedDevice {
    queue: Mutex<Queue>,
    /// Its energy counter, which another thread may read.
    energy: Arc<Mutex<SimEnergy>>,
}

/// The simulated device's energy counter, readable from any thread.
#[derive(Debug, Clone)]
pub struct SimulatedEnergyCounter(Arc<Mutex<SimEnergy>>);

impl EnergyCounter for SimulatedEnergyCounter {
    fn read_mj(&mut self) -> Result<u64, String> {
        let mut e = self.0.lock().map_err(|_| "simulated energy poisoned")?;
        e.advance(Instant::now());
        Ok(e.counter_mj)
    }
}

impl Default for SimulatedDevice {
    fn default() -> Self {
        Self::new()
    }
}

impl SimulatedDevice {
    /// An idle device.
    pub fn new() -> Self {
        SimulatedDevice {
            queue: Mutex::new(Queue {
                busy_until: Instant::now(),
                memory: SimAllocator::default(),
                flushes: 0,
                flush_work: Duration::ZERO,
                allocations: (0, 0),
                profile: None,
                capturing: None,
                graph: None,
                captures: 0,
                graph_slowdowns: Vec::new(),
                generator_capturing: false,
                lazy_allocator: false,
                workspace: (0, false),
                profiled: false,
                replays_after_profiling: 0,
            }),
            energy: Arc::new(Mutex::new(SimEnergy::new(Instant::now()))),
        }
    }

    fn queue(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue.lock().expect("simulated queue poisoned")
    }

    /// Queues `work` of device time and returns at once, like a kernel launch.
    pub fn launch(&self, work: Duration) {
        self.launch_kernel(DEFAULT_KERNEL, work);
    }

    /// Makes the first kernel launched allocate `bytes` that stay allocated for the
    /// process, as cuBLAS's workspace does ([`DeviceBackend::warm_libraries`]
    /// allocates it beforehand).
    pub fn set_workspace(&self, bytes: u64) {
        self.queue().workspace = (bytes, false);
    }

    /// Allocates the workspace, once.
    fn ensure_workspace(&self) {
        let (bytes, made) = self.queue().workspace;
        if bytes > 0 && !made {
            self.queue().workspace.1 = true;
            // Kept for the process: never released.
            let _ = self.try_allocate(bytes, "workspace");
        }
    }

    /// Queues a kernel called `name` taking `work`, like a kernel launch; while
    /// capturing, records it into the graph instead.
    pub fn launch_kernel(&self, name: &str, work: Duration) {
        self.ensure_workspace();
        let now = Instant::now();
        let mut q = self.queue();
        if let Some(capture) = &mut q.capturing {
            if let Ok(graph) = capture {
                graph.push((name.to_string(), work));
            }
            return;
        }
        if let Some((kernels, _)) = &mut q.profile {
            kernels.push((name.to_string(), work));
        }
        q.busy_until = q.busy_until.max(now) + work;
        let mut energy = self.energy.lock().expect("simulated energy poisoned");
        energy.advance(now);
        energy.busy_until = q.busy_until;
    }

    /// Queues a kernel that draws random numbers (as `randn` does), advancing the
    /// generator. Outside a capture it panics with libtorch's message when a capture
    /// that failed left the generator in capture mode.
    pub fn launch_random(&self, work: Duration) {
        {
            let q = self.queue();
            if q.capturing.is_none() && q.generator_capturing {
                drop(q);
                panic!(
                    "Offset increment outside graph capture encountered unexpectedly \
                     (simulated: a failed capture left the generator in capture mode)"
                );
            }
        }
        self.launch_kernel("simulated_random", work);
    }

    /// Blocks until the queue drains, like `.item()` or a copy to the host. While
    /// capturing, this invalidates the capture, as it would on a GPU.
    pub fn wait_idle(&self) {
        let until = {
            let mut q = self.queue();
            if let Some(capture) = &mut q.capturing {
                *capture = Err(
                    "the routine synchronised with the device while it was being captured \
                     (e.g. `.item()` or a copy to the host)"
                        .into(),
                );
                return;
            }
            if let Some((_, syncs)) = &mut q.profile {
                *syncs += 1;
            }
            q.busy_until
        };
        spin_until(until);
    }

    /// Simulates an allocation of `bytes` (for peak-memory and counter tests). Past
    /// the capacity ([`SimulatedDevice::set_capacity`]) it panics with CUDA's
    /// out-of-memory message, as tch does.
    pub fn allocate(&self, bytes: u64) {
        if let Err(oom) = self.try_allocate(bytes, "") {
            panic!("{oom}");
        }
    }

    /// Allocates a block of `bytes`, recording `at` as where it was allocated when
    /// history is on; `Err` is the out-of-memory message.
    pub fn try_allocate(&self, bytes: u64, at: &str) -> Result<BlockId, String> {
        let mut q = self.queue();
        let id = q.memory.allocate(bytes, at)?;
        q.allocations.0 += 1;
        q.allocations.1 += bytes;
        q.lazy_allocator = false;
        Ok(id)
    }

    /// Frees the block `id` (its memory stays reserved while a capacity is set).
    pub fn release(&self, id: BlockId) {
        self.queue().memory.release(id);
    }

    /// Simulates freeing `bytes`: the latest live block of that size, else the latest
    /// blocks until `bytes` are freed.
    pub fn free(&self, bytes: u64) {
        self.queue().memory.free_bytes(bytes);
    }

    /// Makes the allocator behave like CUDA's caching one with `bytes` of device
    /// memory: requests rounded to 512 bytes, carved from 2 MiB segments (small) or
    /// 20 MiB and larger ones, freed blocks kept reserved, and an out-of-memory error
    /// when a new segment does not fit even after the cache is emptied.
    pub fn set_capacity(&self, bytes: u64) {
        self.queue().memory.capacity = Some(bytes);
    }

    /// Makes the allocator read nothing ([`DeviceBackend::memory`] is `None`) until
    /// the first allocation, as CUDA's does until the process's first tensor.
    pub fn set_lazy_allocator(&self, lazy: bool) {
        self.queue().lazy_allocator = lazy;
    }

    /// Records where blocks are allocated from now on.
    pub fn record_history(&self, on: bool) {
        self.queue().memory.history = on;
    }

    /// What the allocator holds now.
    pub fn snapshot(&self) -> MemorySnapshot {
        self.queue().memory.snapshot()
    }

    /// Graph replays made after the profiler first ran (which on a GPU slows them).
    pub fn replays_after_profiling(&self) -> u64 {
        self.queue().replays_after_profiling
    }

    /// Makes the n-th captured graph replay `slowdowns[n]` times slower than its
    /// kernels' own durations (graphs past the end replay at their own speed).
    pub fn set_graph_slowdowns(&self, slowdowns: Vec<f64>) {
        self.queue().graph_slowdowns = slowdowns;
    }

    /// Graphs captured so far.
    pub fn captures(&self) -> usize {
        self.queue().captures
    }

    /// Whether work is being captured into a graph now.
    pub fn is_capturing(&self) -> bool {
        self.queue().capturing.is_some()
    }

    /// The energy counter: it steps every [`SIMULATED_ENERGY_STEP`], as NVML's
    /// total-energy counter does.
    pub fn energy_counter(&self) -> SimulatedEnergyCounter {
        SimulatedEnergyCounter(Arc::clone(&self.energy))
    }

    /// The board's power, W, averaged over the counter's last whole step as NVML's
    /// power usage averages over its own window; idle before the first step.
    pub fn power_w(&self) -> f64 {
        let mut e = self.energy.lock().unwrap_or_else(|e| e.into_inner());
        e.advance(Instant::now());
        if e.steps == 0 {
            SIMULATED_IDLE_W
        } else {
            e.last_step_j / SIMULATED_ENERGY_STEP.as_secs_f64()
        }
    }

    /// Makes each flush of the cache queue `work` of device time, as writing a
    /// buffer larger than a GPU's L2 does (no device time unless set).
    pub fn set_flush_work(&self, work: Duration) {
        self.queue().flush_work = work;
    }

    /// How many times the cache was flushed (`--flush-l2`).
    pub fn cache_flushes(&self) -> u64 {
        self.queue().flushes
    }

    fn completion_time(&self) -> Instant {
        let q = self.queue();
        q.busy_until.max(Instant::now())
    }
}

struct SimulatedTimer<'a> {
    device: &'a SimulatedDevice,
    start: Option<Instant>,
    stop: Option<Instant>,
}

impl DeviceTimer for SimulatedTimer<'_> {
    fn start(&mut self) {
        self.start = Some(self.device.completion_time());
    }
    fn stop(&mut self) {
        self.stop = Some(self.device.completion_time());
    }
    fn elapsed_ns(&mut self) -> Option<f64> {
        Some((self.stop? - self.start?).as_nanos() as f64)
    }
}

impl DeviceBackend for SimulatedDevice {
    fn identity(&self) -> DeviceIdentity {
        DeviceIdentity {
            kind: "simulated".into(),
            index: Some(0),
            name: "simulated asynchronous device".into(),
            total_memory_bytes: None,
        }
    }
    fn tch_device(&self) -> tch::Device {
        tch::Device::Cpu
    }
    fn is_async(&self) -> bool {
        true
    }
    fn synchronize(&self) {
        self.wait_idle();
    }
    fn timer(&self) -> Option<Box<dyn DeviceTimer + '_>> {
        Some(Box::new(SimulatedTimer {
            device: self,
            start: None,
            stop: None,
        }))
    }
    fn reset_memory(&self) {
        self.queue().memory.reset_peak();
    }
    fn reset_memory_peak(&self) {
        self.queue().memory.reset_peak();
    }
    fn memory(&self) -> Option<MemoryStats> {
        let q = self.queue();
        if q.lazy_allocator {
            return None;
        }
        Some(q.memory.stats())
    }
    fn memory_snapshot(&self) -> Result<MemorySnapshot, String> {
        Ok(self.snapshot())
    }
    fn record_memory_history(&self) -> Result<(), String> {
        self.record_history(true);
        Ok(())
    }
    /// Traces every allocation and free, with where each block is allocated.
    fn memory_trace_start(&self) -> Result<(), String> {
        self.queue().memory.trace = Some(Vec::new());
        Ok(())
    }
    fn memory_trace_stop(&self) -> Result<AllocatorTrace, String> {
        self.queue()
            .memory
            .take_trace()
            .ok_or_else(|| "the allocator's trace was not started".into())
    }
    fn warm_libraries(&self) {
        self.ensure_workspace();
    }
    fn cap_memory(&self, fraction: f64) -> Result<u64, String> {
        let bytes = (fraction * SIMULATED_MEMORY_BYTES as f64) as u64;
        self.set_capacity(bytes);
        Ok(bytes)
    }
    fn enqueue_blocker(&self, duration: Duration) -> bool {
        self.launch(duration);
        true
    }
    fn flush_cache(&self) {
        let now = Instant::now();
        let mut q = self.queue();
        q.flushes += 1;
        if !q.flush_work.is_zero() {
            q.busy_until = q.busy_until.max(now) + q.flush_work;
            let mut energy = self.energy.lock().expect("simulated energy poisoned");
            energy.advance(now);
            energy.busy_until = q.busy_until;
        }
    }
    fn profile_start(&self) -> Result<(), String> {
        let mut q = self.queue();
        q.profile = Some((Vec::new(), 0));
        q.profiled = true;
        Ok(())
    }
    fn profile_stop(&self) -> Result<DeviceProfile, String> {
        let (kernels, syncs) = self
            .queue()
            .profile
            .take()
            .ok_or("the profiler was not started")?;
        let mut activities: Vec<(String, ActivityKind, u64, f64)> = Vec::new();
        for (name, d) in kernels {
            let ns = d.as_nanos() as f64;
            match activities.iter_mut().find(|a| a.0 == name) {
                Some(a) => {
                    a.2 += 1;
                    a.3 += ns;
                }
                None => activities.push((name, ActivityKind::Kernel, 1, ns)),
            }
        }
        Ok(DeviceProfile { activities, syncs })
    }
    fn capture_enter(&self) -> Result<(), String> {
        Ok(())
    }
    fn capture_begin(&self) -> Result<(), String> {
        let mut q = self.queue();
        q.capturing = Some(Ok(Vec::new()));
        q.generator_capturing = true;
        Ok(())
    }
    fn capture_end(&self) -> Result<(), String> {
        let mut q = self.queue();
        // A capture that fails leaves the generator in capture mode, as libtorch's
        // CUDAGraph::capture_end does when cudaStreamEndCapture fails.
        let graph = q.capturing.take().ok_or("no capture was started")??;
        q.generator_capturing = false;
        let slowdown = q.graph_slowdowns.get(q.captures).copied().unwrap_or(1.0);
        q.graph = Some(
            graph
                .into_iter()
                .map(|(name, d)| (name, d.mul_f64(slowdown)))
                .collect(),
        );
        q.captures += 1;
        Ok(())
    }
    fn capture_abandon(&self) {
        let mut q = self.queue();
        q.capturing = None;
        q.generator_capturing = false;
    }
    fn capture_replay(&self, times: u32) -> Result<(), String> {
        let graph = {
            let mut q = self.queue();
            if q.profiled {
                q.replays_after_profiling += u64::from(times);
            }
            q.graph.clone().ok_or("nothing was captured")?
        };
        for _ in 0..times {
            for (name, d) in &graph {
                self.launch_kernel(name, *d);
            }
        }
        Ok(())
    }
    fn capture_free(&self) {
        let mut q = self.queue();
        q.graph = None;
        q.capturing = None;
    }
    fn allocation_counts(&self) -> Option<(u64, u64)> {
        Some(self.queue().allocations)
    }
    fn reset_allocation_counts(&self) {
        self.queue().allocations = (0, 0);
    }
}

/// The memory [`DeviceBackend::cap_memory`] takes a fraction of on the simulated
/// device.
pub const SIMULATED_MEMORY_BYTES: u64 = 16 << 30;

/// A block handed out by the simulated allocator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockId(u64);

#[derive(Debug, Clone)]
struct SimBlock {
    bytes: u64,
    requested: u64,
    /// The id of the allocation holding it; `None`: free.
    live: Option<u64>,
    at: Vec<String>,
}

#[derive(Debug, Clone)]
struct SimSegment {
    /// Its first byte's (made-up) address.
    address: u64,
    bytes: u64,
    blocks: Vec<SimBlock>,
}

/// The simulated device's allocator. Without a capacity each allocation is a segment
/// of its own, returned on free (reserved equals allocated, figures exact); with one
/// it caches like libtorch's CUDA caching allocator.
#[derive(Debug, Default)]
pub struct SimAllocator {
    segments: Vec<SimSegment>,
    capacity: Option<u64>,
    history: bool,
    /// Every allocation and free since the trace was started.
    trace: Option<Vec<TraceEvent>>,
    next_id: u64,
    /// Where the next segment starts: segments never overlap.
    next_address: u64,
    peak_allocated: u64,
    peak_reserved: u64,
    retries: u64,
    ooms: u64,
}

/// Requests are rounded to this many bytes, as CUDA's allocator does.
const ROUND: u64 = 512;
/// Requests up to this size come from small segments of [`SMALL_SEGMENT`].
const SMALL_REQUEST: u64 = 1 << 20;
const SMALL_SEGMENT: u64 = 2 << 20;
/// Requests under this size get a segment of [`MEDIUM_SEGMENT`]; larger ones a
/// segment of their own size rounded to 2 MiB.
const MEDIUM_REQUEST: u64 = 10 << 20;
const MEDIUM_SEGMENT: u64 = 20 << 20;

impl SimAllocator {
    fn allocated(&self) -> u64 {
        self.segments
            .iter()
            .flat_map(|s| &s.blocks)
            .filter(|b| b.live.is_some())
            .map(|b| b.bytes)
            .sum()
    }

    fn reserved(&self) -> u64 {
        self.segments.iter().map(|s| s.bytes).sum()
    }

    fn stats(&self) -> MemoryStats {
        MemoryStats {
            peak_allocated_bytes: self.peak_allocated,
            peak_reserved_bytes: self.peak_reserved,
            allocated_bytes: self.allocated(),
            reserved_bytes: self.reserved(),
            alloc_retries: self.retries,
            num_ooms: self.ooms,
            reserved_shared: false,
        }
    }

    fn reset_peak(&mut self) {
        self.peak_allocated = self.allocated();
        self.peak_reserved = self.reserved();
    }

    fn allocate(&mut self, bytes: u64, at: &str) -> Result<BlockId, String> {
        let caching = self.capacity.is_some();
        let size = if caching {
            bytes.max(1).div_ceil(ROUND) * ROUND
        } else {
            bytes
        };
        self.next_id += 1;
        let id = self.next_id;
        let at = if (self.history || self.trace.is_some()) && !at.is_empty() {
            vec![at.to_string()]
        } else {
            Vec::new()
        };
        let block = SimBlock {
            bytes: size,
            requested: bytes,
            live: Some(id),
            at,
        };
        let (s, b) = if !caching {
            self.push_segment(size, vec![block]);
            (self.segments.len() - 1, 0)
        } else if let Some((s, b)) = self.best_fit(size) {
            let seg = &mut self.segments[s];
            let rest = seg.blocks[b].bytes - size;
            seg.blocks[b] = block;
            if rest > 0 {
                seg.blocks.insert(
                    b + 1,
                    SimBlock {
                        bytes: rest,
                        requested: 0,
                        live: None,
                        at: Vec::new(),
                    },
                );
            }
            (s, b)
        } else {
            let segment = if size <= SMALL_REQUEST {
                SMALL_SEGMENT
            } else if size < MEDIUM_REQUEST {
                MEDIUM_SEGMENT
            } else {
                size.div_ceil(2 << 20) * (2 << 20)
            };
            let capacity = self.capacity.unwrap_or(u64::MAX);
            if self.reserved() + segment > capacity {
                // As CUDA's allocator: free the cached segments and retry once.
                self.retries += 1;
                self.return_free_segments();
                if self.reserved() + segment > capacity {
                    self.ooms += 1;
                    return Err(self.oom_message(bytes, capacity));
                }
            }
            let mut blocks = vec![block];
            if segment > size {
                blocks.push(SimBlock {
                    bytes: segment - size,
                    requested: 0,
                    live: None,
                    at: Vec::new(),
                });
            }
            self.push_segment(segment, blocks);
            (self.segments.len() - 1, 0)
        };
        if self.trace.is_some() {
            let address = self.block_address(s, b);
            let block = &self.segments[s].blocks[b];
            let event = TraceEvent {
                requested_bytes: block.requested,
                allocated_at: block.at.clone(),
                ..sim_event(TraceAction::Alloc, address, block.bytes)
            };
            self.trace_event(event);
        }
        self.peak_allocated = self.peak_allocated.max(self.allocated());
        self.peak_reserved = self.peak_reserved.max(self.reserved());
        Ok(BlockId(id))
    }

    /// The smallest free block of at least `size`, as (segment, block). Small
    /// requests come from small segments only, large from large, as in CUDA's pools.
    fn best_fit(&self, size: u64) -> Option<(usize, usize)> {
        let small = size <= SMALL_REQUEST;
        let mut best: Option<(u64, usize, usize)> = None;
        for (s, seg) in self.segments.iter().enumerate() {
            if (seg.bytes == SMALL_SEGMENT) != small {
                continue;
            }
            for (b, block) in seg.blocks.iter().enumerate() {
                if block.live.is_none()
                    && block.bytes >= size
                    && best.is_none_or(|x| block.bytes < x.0)
                {
                    best = Some((block.bytes, s, b));
                }
            }
        }
        best.map(|(_, s, b)| (s, b))
    }

    /// CUDA's message, word for word where it matters (`Tried to allocate`).
    fn oom_message(&self, bytes: u64, capacity: u64) -> String {
        let allocated = self.allocated();
        let reserved = self.reserved();
        format!(
            "CUDA out of memory. Tried to allocate {}. Simulated device has a total capacity of {} \
             of which {} is free. Of the allocated memory {} is allocated by PyTorch, and {} is \
             reserved by PyTorch but unallocated.",
            format_bytes(bytes),
            format_bytes(capacity),
            format_bytes(capacity.saturating_sub(reserved)),
            format_bytes(allocated),
            format_bytes(reserved - allocated),
        )
    }

    fn release(&mut self, id: BlockId) {
        let caching = self.capacity.is_some();
        let found = self.segments.iter().enumerate().find_map(|(s, seg)| {
            seg.blocks
                .iter()
                .position(|b| b.live == Some(id.0))
                .map(|b| (s, b))
        });
        if let Some((s, b)) = found {
            if self.trace.is_some() {
                let event = sim_event(
                    TraceAction::Free,
                    self.block_address(s, b),
                    self.segments[s].blocks[b].bytes,
                );
                self.trace_event(event);
            }
            let seg = &mut self.segments[s];
            seg.blocks[b].live = None;
            seg.blocks[b].requested = 0;
            seg.blocks[b].at.clear();
            merge_free(&mut seg.blocks);
        }
        if !caching {
            self.return_free_segments();
        }
    }

    /// Adds a segment of `bytes` holding `blocks` at the next free address.
    fn push_segment(&mut self, bytes: u64, blocks: Vec<SimBlock>) {
        let address = self.next_address;
        self.next_address += bytes.div_ceil(ROUND) * ROUND;
        self.trace_event(sim_event(TraceAction::SegmentAlloc, address, bytes));
        self.segments.push(SimSegment {
            address,
            bytes,
            blocks,
        });
    }

    /// Returns the segments no live block uses to the (simulated) driver.
    fn return_free_segments(&mut self) {
        let (kept, returned): (Vec<SimSegment>, Vec<SimSegment>) =
            std::mem::take(&mut self.segments)
                .into_iter()
                .partition(|s| s.blocks.iter().any(|b| b.live.is_some()));
        self.segments = kept;
        for seg in returned {
            self.trace_event(sim_event(TraceAction::SegmentFree, seg.address, seg.bytes));
        }
    }

    fn block_address(&self, s: usize, b: usize) -> u64 {
        let seg = &self.segments[s];
        seg.address + seg.blocks[..b].iter().map(|b| b.bytes).sum::<u64>()
    }

    fn trace_event(&mut self, event: TraceEvent) {
        if let Some(trace) = &mut self.trace {
            trace.push(event);
        }
    }

    /// The state now with the events traced since the trace started, which stops.
    fn take_trace(&mut self) -> Option<AllocatorTrace> {
        let events = self.trace.take()?;
        let segments = self
            .segments
            .iter()
            .enumerate()
            .map(|(s, seg)| TracedSegment {
                address: seg.address,
                bytes: seg.bytes,
                stream: "0x0".into(),
                live: seg
                    .blocks
                    .iter()
                    .enumerate()
                    .filter(|(_, b)| b.live.is_some())
                    .map(|(b, block)| TracedBlock {
                        address: self.block_address(s, b),
                        bytes: block.bytes,
                        requested_bytes: block.requested,
                        allocated_at: block.at.clone(),
                    })
                    .collect(),
            })
            .collect();
        Some(AllocatorTrace {
            segments,
            events,
            complete: true,
            history: true,
            limit_bytes: self.capacity,
        })
    }

    fn free_bytes(&mut self, bytes: u64) {
        let live: Vec<(u64, u64, u64)> = self
            .segments
            .iter()
            .flat_map(|s| &s.blocks)
            .filter_map(|b| b.live.map(|id| (id, b.bytes, b.requested)))
            .collect();
        if let Some(&(id, _, _)) = live
            .iter()
            .filter(|(_, _, requested)| *requested == bytes)
            .max_by_key(|(id, _, _)| *id)
        {
            self.release(BlockId(id));
            return;
        }
        let mut newest: Vec<_> = live;
        newest.sort_by_key(|b| std::cmp::Reverse(b.0));
        let mut freed = 0;
        for (id, size, _) in newest {
            if freed >= bytes {
                break;
            }
            self.release(BlockId(id));
            freed += size;
        }
    }

    fn snapshot(&self) -> MemorySnapshot {
        let segments: Vec<SegmentView> = self
            .segments
            .iter()
            .map(|s| SegmentView {
                bytes: s.bytes,
                stream: "0x0".into(),
                blocks: s
                    .blocks
                    .iter()
                    .map(|b| BlockView {
                        bytes: b.bytes,
                        requested_bytes: b.requested,
                        live: b.live.is_some(),
                        allocated_at: b.at.clone(),
                    })
                    .collect(),
            })
            .collect();
        let mut snapshot = MemorySnapshot::from_segments(&segments, self.history);
        snapshot.limit_bytes = self.capacity;
        snapshot
    }
}

/// A traced event on the simulated device's one stream, with no requested size and
/// no allocation site (an allocation adds both).
fn sim_event(action: TraceAction, address: u64, bytes: u64) -> TraceEvent {
    TraceEvent {
        action,
        address,
        bytes,
        requested_bytes: 0,
        stream: "0x0".into(),
        allocated_at: Vec::new(),
    }
}

/// Joins neighbouring free blocks of a segment into one.
fn merge_free(blocks: &mut Vec<SimBlock>) {
    let mut i = 0;
    while i + 1 < blocks.len() {
        if blocks[i].live.is_none() && blocks[i + 1].live.is_none() {
            blocks[i].bytes += blocks[i + 1].bytes;
            blocks.remove(i + 1);
        } else {
            i += 1;
        }
    }
}

#[cfg(test)]
mod allocator_tests {
    use super::*;
    use gpubench_record::memory_snapshot::{parse_failed_request, OomCause};

    #[test]
    fn without_a_capacity_figures_are_exact_and_freed_memory_is_returned() {
        let d = SimulatedDevice::new();
        d.allocate(1000);
        d.allocate(3000);
        d.free(1000);
        let m = d.memory().unwrap();
        assert_eq!((m.allocated_bytes, m.reserved_bytes), (3000, 3000));
        assert_eq!(
            (m.peak_allocated_bytes, m.peak_reserved_bytes),
            (4000, 4000)
        );
        d.reset_memory();
        assert_eq!(d.memory().unwrap().peak_allocated_bytes, 3000);
    }

    #[test]
    fn accumulated_live_blocks_fail_like_cuda_and_the_snapshot_names_them() {
        let d = SimulatedDevice::new();
        d.set_capacity(1 << 30);
        d.record_history(true);
        let mut held = Vec::new();
        let err = loop {
            match d.try_allocate(100 << 20, "cache::insert") {
                Ok(id) => held.push(id),
                Err(e) => break e,
            }
        };
        assert_eq!(held.len(), 10);
        assert!(
            err.starts_with("CUDA out of memory. Tried to allocate 100.00 MiB"),
            "{err}"
        );
        assert!(gpubench_record::failure::is_out_of_memory(&err));
        let mut s = d.snapshot();
        s.failed_request_bytes = parse_failed_request(&err);
        assert_eq!(s.live_blocks, 10);
        assert_eq!(s.allocated_bytes, 1000 << 20);
        assert_eq!(s.cause(), OomCause::LiveMemory);
        assert!(s.largest_blocks_share() >= 0.9);
        assert_eq!(s.largest_blocks[0].allocated_at, vec!["cache::insert"]);
        assert_eq!(d.memory().unwrap().num_ooms, 1);
    }

    #[test]
    fn every_other_block_freed_fragments_and_is_told_apart() {
        let d = SimulatedDevice::new();
        d.set_capacity(1 << 30);
        // 1 GiB of 20 MiB segments, each holding two 10 MiB blocks (well, 10 MiB
        // requests get their own segments): allocate 8 MiB blocks in 20 MiB segments.
        let mut ids = Vec::new();
        while let Ok(id) = d.try_allocate(8 << 20, "") {
            ids.push(id);
        }
        for id in ids.iter().step_by(2) {
            d.release(*id);
        }
        let err = d.try_allocate(200 << 20, "").unwrap_err();
        let mut s = d.snapshot();
        s.failed_request_bytes = parse_failed_request(&err);
        assert!(s.free_reserved_bytes() >= 200 << 20, "{s:?}");
        assert!(s.largest_free_block_bytes < 200 << 20);
        assert_eq!(s.cause(), OomCause::Fragmentation);
        // Live blocks alone would have left room: it is the pieces that failed.
        assert!(s.allocated_bytes + (200 << 20) <= 1 << 30);
    }

    #[test]
    fn freed_blocks_are_reused_and_merged() {
        let d = SimulatedDevice::new();
        d.set_capacity(1 << 30);
        let a = d.try_allocate(4 << 20, "").unwrap();
        let b = d.try_allocate(4 << 20, "").unwrap();
        d.release(a);
        d.release(b);
        let s = d.snapshot();
        assert_eq!((s.segments, s.allocated_bytes), (1, 0));
        assert_eq!(s.largest_free_block_bytes, 20 << 20);
        d.try_allocate(16 << 20, "").unwrap();
        assert_eq!(d.snapshot().segments, 1);
    }
}
