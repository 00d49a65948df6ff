//! The device the engine measures through: syncs, device timers, memory, identity,
//! and what the device did (a profile of its kernels, copies and syncs; a graph of a
//! routine's work to replay).
//!
//! The engine only sees [`DeviceBackend`], so it runs unchanged on libtorch's CUDA
//! devices, on the CPU (where syncs are no-ops and there is no kernel timing), and on
//! a simulated asynchronous device whose work completes after the host call returns
//! (this crate's tests only: it is no part of a bench executable).

use std::time::{Duration, Instant};

use gpubench_analysis::memory_trace::AllocatorTrace;
use gpubench_record::kernels::ActivityKind;
use gpubench_record::measurement::MemoryStats;
use gpubench_record::memory_snapshot::MemorySnapshot;
use gpubench_record::record::DeviceIdentity;

mod cuda_shim;
mod hardware;
#[cfg(test)]
pub mod simulated;
pub mod torch;

pub use hardware::{cpu_model, cuda_device_pci_bus_id};
#[cfg(test)]
pub use simulated::SimulatedDevice;
pub use torch::TorchDevice;

/// Spins rather than sleeps so short waits stay accurate.
pub fn spin_until(deadline: Instant) {
    while Instant::now() < deadline {
        std::hint::spin_loop();
    }
}

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
    /// Resets the peak statistics to what is held now, keeping the cache (which
    /// [`Self::reset_memory`] also frees): cheap enough between two samples. Nothing
    /// where there is no allocator.
    fn reset_memory_peak(&self);
    /// Allocator statistics, or `None` where there is no device allocator (CPU).
    fn memory(&self) -> Option<MemoryStats>;
    /// Queues about `duration` of device work without waiting for it; `false` where
    /// unsupported. Used to detect routines that sync inside.
    fn enqueue_blocker(&self, duration: Duration) -> bool;
    /// Overwrites a buffer larger than the device's last-level cache.
    fn flush_cache(&self);

    /// Starts recording what the device does; `Err` says why it cannot (the CPU has
    /// no kernel timing).
    fn profile_start(&self) -> Result<(), String>;
    /// Stops recording and returns what the device did since [`Self::profile_start`].
    fn profile_stop(&self) -> Result<DeviceProfile, String>;
    /// Makes a side stream current, for a warm-up and then a capture (capture on the
    /// default stream is refused).
    fn capture_enter(&self) -> Result<(), String>;
    /// Starts capturing the work launched from now on into a graph, without running
    /// it.
    fn capture_begin(&self) -> Result<(), String>;
    /// Ends the capture and makes the previous stream current; `Err` says why the
    /// work could not be captured (it synchronised, read back, ...).
    fn capture_end(&self) -> Result<(), String>;
    /// Undoes what a capture that did not end left behind, after
    /// [`Self::capture_end`] returned `Err` (or the routine failed while captured).
    /// libtorch's CUDA graphs leave the CUDA generator in capture mode (the next
    /// random op outside a capture fails: "Offset increment outside graph capture
    /// encountered unexpectedly"), the allocator's private pool open and the
    /// runtime's last error set; in a paired process of `cargo gpubench ab` the
    /// other revision shares all of it. Afterwards the device is as it was before
    /// [`Self::capture_begin`].
    fn capture_abandon(&self);
    /// Replays the captured work `times` times, back to back.
    fn capture_replay(&self, times: u32) -> Result<(), String>;
    /// Frees the capture.
    fn capture_free(&self);
    /// Allocations (and bytes) from the device's allocator since
    /// [`Self::reset_allocation_counts`], where it counts them.
    fn allocation_counts(&self) -> Option<(u64, u64)>;
    /// Starts counting allocations afresh.
    fn reset_allocation_counts(&self);

    /// What the caching allocator holds now (live blocks, reserved segments); `Err`
    /// says why it cannot be read.
    fn memory_snapshot(&self) -> Result<MemorySnapshot, String> {
        Err("this device has no caching allocator to take a snapshot of".into())
    }
    /// Records where each block is allocated from now on, for
    /// [`Self::memory_snapshot`].
    fn record_memory_history(&self) -> Result<(), String> {
        Err("this device records no allocation history".into())
    }
    /// Starts tracing every allocation and free, with where each block is allocated,
    /// for [`Self::memory_trace_stop`].
    fn memory_trace_start(&self) -> Result<(), String> {
        Err("this device's allocator keeps no trace of allocations".into())
    }
    /// Stops the trace and returns the allocator's state now with the events since
    /// [`Self::memory_trace_start`].
    fn memory_trace_stop(&self) -> Result<AllocatorTrace, String> {
        Err("this device's allocator keeps no trace of allocations".into())
    }
    /// Makes the device's libraries allocate what they keep for the whole process
    /// (cuBLAS's workspaces, one per thread that multiplies: the benchmark's and
    /// autograd's) before a paired process's sides open: otherwise the side that
    /// computes first holds them in its memory figures (68 MB of an MLP training
    /// step on an H200), and that side is the base in one process and the head in
    /// the next.
    fn warm_libraries(&self) {}
    /// Caps the allocator at `fraction` of the device's memory; returns the cap in
    /// bytes.
    fn cap_memory(&self, _fraction: f64) -> Result<u64, String> {
        Err("this device's memory cannot be capped".into())
    }
}

/// What a device did over a stretch of calls.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DeviceProfile {
    /// Each kernel, copy and memset: name, kind, launches and their total time (ns).
    pub activities: Vec<(String, ActivityKind, u64, f64)>,
    /// Host–device synchronisations made while recording.
    pub syncs: u64,
}

impl DeviceProfile {
    /// Launches of `kind`.
    pub fn count(&self, kind: ActivityKind) -> u64 {
        self.activities
            .iter()
            .filter(|a| a.1 == kind)
            .map(|a| a.2)
            .sum()
    }

    /// Total time of every activity, ns: the device's busy time.
    pub fn busy_ns(&self) -> f64 {
        self.activities.iter().map(|a| a.3).sum()
    }
}
