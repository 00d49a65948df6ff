//! A simulated asynchronous device: work "launched" on it completes after the host
//! call returns, as on a GPU, so the engine's handling of the queue can be tested on
//! any machine. It also records what it ran (named kernels, syncs, allocations) and
//! captures work into a graph to replay, as CUDA graphs do.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use gpubench_analysis::kernels::ActivityKind;
use gpubench_analysis::{DeviceIdentity, MemoryStats};

use super::{DeviceBackend, DeviceProfile, DeviceTimer};

/// The name [`SimulatedDevice::launch`] gives its kernels.
pub const DEFAULT_KERNEL: &str = "simulated_kernel";

#[derive(Debug)]
struct Queue {
    /// When all queued work will have finished.
    busy_until: Instant,
    allocated: u64,
    peak: u64,
    flushes: u64,
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
    /// Whether the profiler has run, and graph replays since it first did.
    profiled: bool,
    replays_after_profiling: u64,
}

/// A device with a single in-order queue, timed with the host clock.
#[derive(Debug)]
pub struct SimulatedDevice {
    queue: Mutex<Queue>,
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
                allocated: 0,
                peak: 0,
                flushes: 0,
                allocations: (0, 0),
                profile: None,
                capturing: None,
                graph: None,
                captures: 0,
                graph_slowdowns: Vec::new(),
                profiled: false,
                replays_after_profiling: 0,
            }),
        }
    }

    fn queue(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue.lock().expect("simulated queue poisoned")
    }

    /// Queues `work` of device time and returns at once, like a kernel launch.
    pub fn launch(&self, work: Duration) {
        self.launch_kernel(DEFAULT_KERNEL, work);
    }

    /// Queues a kernel called `name` taking `work`, like a kernel launch; while
    /// capturing, records it into the graph instead.
    pub fn launch_kernel(&self, name: &str, work: Duration) {
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

    /// Simulates an allocation of `bytes` (for peak-memory and counter tests).
    pub fn allocate(&self, bytes: u64) {
        let mut q = self.queue();
        q.allocated += bytes;
        q.peak = q.peak.max(q.allocated);
        q.allocations.0 += 1;
        q.allocations.1 += bytes;
    }

    /// Simulates freeing `bytes`.
    pub fn free(&self, bytes: u64) {
        let mut q = self.queue();
        q.allocated = q.allocated.saturating_sub(bytes);
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

    /// How many times the cache was flushed (`--flush-l2`).
    pub fn cache_flushes(&self) -> u64 {
        self.queue().flushes
    }

    fn completion_time(&self) -> Instant {
        let q = self.queue();
        q.busy_until.max(Instant::now())
    }
}

/// Spins rather than sleeps so short waits stay accurate.
pub fn spin_until(deadline: Instant) {
    while Instant::now() < deadline {
        std::hint::spin_loop();
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
        let mut q = self.queue();
        q.peak = q.allocated;
    }
    fn memory(&self) -> Option<MemoryStats> {
        let q = self.queue();
        Some(MemoryStats {
            peak_allocated_bytes: q.peak,
            peak_reserved_bytes: q.peak,
            allocated_bytes: q.allocated,
            reserved_bytes: q.allocated,
            alloc_retries: 0,
            num_ooms: 0,
        })
    }
    fn enqueue_blocker(&self, duration: Duration) -> bool {
        self.launch(duration);
        true
    }
    fn flush_cache(&self) {
        self.queue().flushes += 1;
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
        self.queue().capturing = Some(Ok(Vec::new()));
        Ok(())
    }
    fn capture_end(&self) -> Result<(), String> {
        let mut q = self.queue();
        let graph = q.capturing.take().ok_or("no capture was started")??;
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
