//! The device the engine measures through: syncs, device timers, memory, identity.
//!
//! The engine only sees [`DeviceBackend`], so it runs unchanged on libtorch's CUDA
//! devices, on the CPU (where syncs are no-ops), and on a simulated asynchronous
//! device whose work completes after the host call returns (for tests).

use std::time::Duration;

use gpubench_analysis::{DeviceIdentity, MemoryStats};

pub mod simulated;
pub mod torch;

pub use simulated::SimulatedDevice;
pub use torch::TorchDevice;

/// A pair of device-side timestamps around a region of queued work.
pub trait DeviceTimer {
    /// Marks the start (enqueued on the device's stream).
    fn start(&mut self);
    /// Marks the end (enqueued on the device's stream).
    fn stop(&mut self);
    /// Device time between the marks in ns; call after a sync.
    fn elapsed_ns(&mut self) -> Option<f64>;
}

/// What the measurement engine needs from a device.
pub trait DeviceBackend {
    /// Model name, index and memory size.
    fn identity(&self) -> DeviceIdentity;
    /// The tch device benchmarks should put tensors on.
    fn tch_device(&self) -> tch::Device;
    /// Whether host calls return before the device finishes (CUDA: yes; CPU: no).
    fn is_async(&self) -> bool;
    /// Blocks until all queued work has finished.
    fn synchronize(&self);
    /// A device timer (CUDA events), or `None` where the device has none.
    fn timer(&self) -> Option<Box<dyn DeviceTimer + '_>>;
    /// Frees cached memory and resets peak statistics before a benchmark.
    fn reset_memory(&self);
    /// Allocator statistics, or `None` where there is no device allocator (CPU).
    fn memory(&self) -> Option<MemoryStats>;
    /// Queues about `duration` of device work without waiting for it; `false` where
    /// unsupported. Used to detect routines that sync inside.
    fn enqueue_blocker(&self, duration: Duration) -> bool;
    /// Overwrites a buffer larger than the device's last-level cache.
    fn flush_cache(&self);
}
