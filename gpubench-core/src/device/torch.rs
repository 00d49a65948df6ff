//! libtorch devices: the CPU, where every sync is a no-op, and CUDA devices, timed
//! with CUDA events and watched through the caching allocator (via the C++ shim).

use std::cell::RefCell;
use std::time::{Duration, Instant};

use gpubench_analysis::memory_trace::{self, AllocatorTrace};
use gpubench_record::measurement::MemoryStats;
use gpubench_record::memory_snapshot::{self, MemorySnapshot};
use gpubench_record::record::DeviceIdentity;
use tch::{Device, Kind, Tensor};

use super::cuda_shim::{self, Capture};
use super::{DeviceBackend, DeviceProfile, DeviceTimer};
use crate::shim;

/// Whether allocation history is being recorded (once on, for the process).
static HISTORY: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// A libtorch device.
pub struct TorchDevice {
    device: Device,
    /// Square matrices whose product is queued as "blocker" work, with the measured
    /// time of one product.
    blocker: RefCell<Option<(Tensor, f64)>>,
    flush_buffer: RefCell<Option<Tensor>>,
    /// The capture in progress or to replay.
    capture: RefCell<Option<Capture>>,
}

impl TorchDevice {
    /// Wraps a tch device.
    pub fn new(device: Device) -> Self {
        TorchDevice {
            device,
            blocker: RefCell::new(None),
            flush_buffer: RefCell::new(None),
            capture: RefCell::new(None),
        }
    }

    /// Initialises CUDA and its caching allocator, which libtorch does lazily at the
    /// first allocation: capping or recording before it fails with "Allocator not
    /// initialized for device" (PyTorch's Python calls `_lazy_init()` first).
    fn init_allocator(&self) -> Result<(), String> {
        Tensor::f_zeros([1], (Kind::Float, self.device))
            .map(drop)
            .map_err(|e| format!("failed to initialise CUDA on {:?}: {e}", self.device))
    }

    /// The CUDA device index and the CUDA shim, or why not: `unavailable` says
    /// what a device of another kind (named by [`Self::device_kind`]) lacks.
    fn cuda_shim(
        &self,
        unavailable: fn(&str) -> String,
    ) -> Result<(usize, &'static cuda_shim::CudaShim), String> {
        let Some(index) = self.cuda_index() else {
            return Err(unavailable(self.device_kind()));
        };
        Ok((index, cuda_shim::get()?))
    }

    fn device_kind(&self) -> &'static str {
        match self.device {
            Device::Cpu => "cpu",
            Device::Cuda(_) => "cuda",
            _ => "this device",
        }
    }

    fn cuda_index(&self) -> Option<usize> {
        match self.device {
            Device::Cuda(i) => Some(i),
            _ => None,
        }
    }
}

/// Why a device that is not CUDA has no allocator to inspect.
fn no_allocator(device_kind: &str) -> String {
    format!("{device_kind} has no caching allocator")
}

/// Why a device that is not CUDA has no kernel timing.
fn no_kernel_timing(device_kind: &str) -> String {
    format!("no kernel timing on {device_kind}")
}

struct CudaTimer {
    device: usize,
    start: shim::CudaEvent,
    stop: shim::CudaEvent,
}

impl DeviceTimer for CudaTimer {
    fn start(&mut self) {
        if let Err(e) = self.start.record(self.device) {
            panic!("failed to record a CUDA event: {e}");
        }
    }
    fn stop(&mut self) {
        if let Err(e) = self.stop.record(self.device) {
            panic!("failed to record a CUDA event: {e}");
        }
    }
    fn elapsed_ns(&mut self) -> Option<f64> {
        self.start.elapsed_ms(&self.stop).ok().map(|ms| ms * 1e6)
    }
}

impl DeviceBackend for TorchDevice {
    fn identity(&self) -> DeviceIdentity {
        match self.cuda_index() {
            Some(i) => DeviceIdentity {
                kind: "cuda".into(),
                index: Some(i as u32),
                name: super::hardware::cuda_device_name(i)
                    .unwrap_or_else(|| "unknown CUDA device".into()),
                total_memory_bytes: shim::memory_info(i).ok().map(|(_, total)| total),
            },
            None => DeviceIdentity {
                kind: "cpu".into(),
                index: None,
                name: super::hardware::cpu_model().unwrap_or_else(|| "unknown CPU".into()),
                total_memory_bytes: None,
            },
        }
    }

    fn tch_device(&self) -> Device {
        self.device
    }

    fn is_async(&self) -> bool {
        self.cuda_index().is_some()
    }

    fn synchronize(&self) {
        if let Some(i) = self.cuda_index() {
            if let Err(e) = shim::cuda_synchronize(i) {
                panic!("failed to synchronize cuda:{i}: {e}");
            }
        }
    }

    fn timer(&self) -> Option<Box<dyn DeviceTimer + '_>> {
        let device = self.cuda_index()?;
        let start = shim::CudaEvent::new().ok()?;
        let stop = shim::CudaEvent::new().ok()?;
        Some(Box::new(CudaTimer {
            device,
            start,
            stop,
        }))
    }

    fn reset_memory(&self) {
        if let Some(i) = self.cuda_index() {
            self.synchronize();
            let _ = shim::memory_empty_cache();
            let _ = shim::memory_reset_peak(i);
        }
    }

    fn warm_libraries(&self) {
        if !self.device.is_cuda() {
            return;
        }
        // A linear layer's forward and backward in each precision a benchmark may
        // multiply in: cuBLAS and cuBLASLt make their handles and workspaces for this
        // thread and for autograd's. A failure here is the benchmark's to meet.
        let device = self.device;
        let _ = std::panic::catch_unwind(|| {
            for kind in [Kind::Float, Kind::BFloat16, Kind::Half] {
                let w = Tensor::ones([16, 16], (kind, device)).set_requires_grad(true);
                let x = Tensor::ones([16, 16], (kind, device));
                let b = Tensor::zeros([16], (kind, device));
                x.linear(&w, Some(&b)).sum(Kind::Float).backward();
            }
        });
        self.synchronize();
    }

    fn reset_memory_peak(&self) {
        if let Some(i) = self.cuda_index() {
            let _ = shim::memory_reset_peak(i);
        }
    }

    fn memory(&self) -> Option<MemoryStats> {
        shim::memory_stats(self.cuda_index()?).ok()
    }

    fn memory_snapshot(&self) -> Result<MemorySnapshot, String> {
        let (index, cuda) = self.cuda_shim(no_allocator)?;
        let text = cuda.memory_snapshot(index)?;
        let segments = memory_snapshot::parse_shim_snapshot(&text)?;
        let history = HISTORY.load(std::sync::atomic::Ordering::Relaxed);
        let mut snapshot = MemorySnapshot::from_segments(&segments, history);
        snapshot.limit_bytes = shim::memory_info(index).ok().map(|(_, total)| total);
        Ok(snapshot)
    }

    fn record_memory_history(&self) -> Result<(), String> {
        let (_, cuda) = self.cuda_shim(no_allocator)?;
        self.init_allocator()?;
        cuda.memory_record_history()?;
        HISTORY.store(true, std::sync::atomic::Ordering::Relaxed);
        Ok(())
    }

    fn memory_trace_start(&self) -> Result<(), String> {
        let (_, cuda) = self.cuda_shim(no_allocator)?;
        self.init_allocator()?;
        cuda.memory_trace_start()
    }

    fn memory_trace_stop(&self) -> Result<AllocatorTrace, String> {
        let (index, cuda) = self.cuda_shim(no_allocator)?;
        let history = HISTORY.load(std::sync::atomic::Ordering::Relaxed);
        let text = cuda.memory_trace_stop(index, history)?;
        let mut trace = memory_trace::parse_shim_trace(&text)?;
        trace.history = true;
        trace.limit_bytes = shim::memory_info(index).ok().map(|(_, total)| total);
        Ok(trace)
    }

    fn cap_memory(&self, fraction: f64) -> Result<u64, String> {
        let (index, cuda) = self.cuda_shim(no_allocator)?;
        self.init_allocator()?;
        cuda.memory_set_fraction(index, fraction)?;
        let (_, total) = shim::memory_info(index)?;
        Ok((fraction * total as f64) as u64)
    }

    fn enqueue_blocker(&self, duration: Duration) -> bool {
        if !self.is_async() {
            return false;
        }
        let mut slot = self.blocker.borrow_mut();
        if slot.is_none() {
            let m = Tensor::randn([2048, 2048], (Kind::Float, self.device));
            let _ = m.matmul(&m);
            self.synchronize();
            let t0 = Instant::now();
            for _ in 0..4 {
                let _ = m.matmul(&m);
            }
            self.synchronize();
            let one = t0.elapsed().as_secs_f64() / 4.0;
            *slot = Some((m, one.max(1e-6)));
        }
        let (m, one) = slot.as_ref().expect("blocker initialised above");
        let n = (duration.as_secs_f64() / one).ceil().max(1.0) as usize;
        let mut acc = m.matmul(m);
        for _ in 1..n {
            acc = m.matmul(m);
        }
        drop(acc);
        true
    }

    fn flush_cache(&self) {
        let mut slot = self.flush_buffer.borrow_mut();
        // 256 MiB: larger than any current GPU's L2 (H200: 60 MB) or a CPU's LLC.
        let buf = slot
            .get_or_insert_with(|| Tensor::zeros([64 * 1024 * 1024], (Kind::Float, self.device)));
        let _ = buf.fill_(1.0);
    }

    fn profile_start(&self) -> Result<(), String> {
        let (_, shim) = self.cuda_shim(no_kernel_timing)?;
        shim.profile_start()
    }

    fn profile_stop(&self) -> Result<DeviceProfile, String> {
        let (_, shim) = self.cuda_shim(no_kernel_timing)?;
        shim.profile_stop()
    }

    fn capture_enter(&self) -> Result<(), String> {
        let (index, shim) = self.cuda_shim(no_kernel_timing)?;
        let capture = shim.capture_enter(index)?;
        if let Some(old) = self.capture.replace(Some(capture)) {
            shim.capture_free(old);
        }
        Ok(())
    }

    fn capture_begin(&self) -> Result<(), String> {
        let (_, shim) = self.cuda_shim(no_kernel_timing)?;
        let c = self.capture.borrow();
        shim.capture_begin(c.as_ref().ok_or("no side stream was entered")?)
    }

    fn capture_end(&self) -> Result<(), String> {
        let (_, shim) = self.cuda_shim(no_kernel_timing)?;
        let c = self.capture.borrow();
        shim.capture_end(c.as_ref().ok_or("no capture was started")?)
    }

    fn capture_replay(&self, times: u32) -> Result<(), String> {
        let (_, shim) = self.cuda_shim(no_kernel_timing)?;
        let c = self.capture.borrow();
        shim.capture_replay(c.as_ref().ok_or("nothing was captured")?, times)
    }

    fn capture_abandon(&self) {
        if let (Ok((_, shim)), Some(c)) = (
            self.cuda_shim(no_kernel_timing),
            self.capture.borrow().as_ref(),
        ) {
            shim.capture_abandon(c);
        }
    }

    fn capture_free(&self) {
        if let (Ok((_, shim)), Some(c)) = (self.cuda_shim(no_kernel_timing), self.capture.take()) {
            shim.capture_free(c);
        }
    }

    fn allocation_counts(&self) -> Option<(u64, u64)> {
        shim::allocation_counts(self.cuda_index()?).ok()
    }

    fn reset_allocation_counts(&self) {
        if let Some(i) = self.cuda_index() {
            let _ = shim::memory_reset_accumulated(i);
        }
    }
}
