//! A simulated asynchronous device: work "launched" on it completes after the host
//! call returns, as on a GPU, so the engine's handling of the queue can be tested on
//! any machine.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use gpubench_analysis::{DeviceIdentity, MemoryStats};

use super::{DeviceBackend, DeviceTimer};

#[derive(Debug)]
struct Queue {
    /// When all queued work will have finished.
    busy_until: Instant,
    allocated: u64,
    peak: u64,
    flushes: u64,
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
            }),
        }
    }

    /// Queues `work` of device time and returns at once, like a kernel launch.
    pub fn launch(&self, work: Duration) {
        let now = Instant::now();
        let mut q = self.queue.lock().expect("simulated queue poisoned");
        q.busy_until = q.busy_until.max(now) + work;
    }

    /// Blocks until the queue drains, like `.item()` or a copy to the host.
    pub fn wait_idle(&self) {
        let until = self
            .queue
            .lock()
            .expect("simulated queue poisoned")
            .busy_until;
        spin_until(until);
    }

    /// Simulates an allocation of `bytes` (for peak-memory tests).
    pub fn allocate(&self, bytes: u64) {
        let mut q = self.queue.lock().expect("simulated queue poisoned");
        q.allocated += bytes;
        q.peak = q.peak.max(q.allocated);
    }

    /// Simulates freeing `bytes`.
    pub fn free(&self, bytes: u64) {
        let mut q = self.queue.lock().expect("simulated queue poisoned");
        q.allocated = q.allocated.saturating_sub(bytes);
    }

    /// How many times the cache was flushed (`--flush-l2`).
    pub fn cache_flushes(&self) -> u64 {
        self.queue.lock().expect("simulated queue poisoned").flushes
    }

    fn completion_time(&self) -> Instant {
        let q = self.queue.lock().expect("simulated queue poisoned");
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
        let mut q = self.queue.lock().expect("simulated queue poisoned");
        q.peak = q.allocated;
    }
    fn memory(&self) -> Option<MemoryStats> {
        let q = self.queue.lock().expect("simulated queue poisoned");
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
        self.queue.lock().expect("simulated queue poisoned").flushes += 1;
    }
}
