//! Measurements for criterion (the `criterion` feature): a criterion bench of GPU
//! work times the work, not the queue. Criterion's own wall clock stops when the last
//! call returns to the host, which on an asynchronous device is when the work was
//! queued; these close every timed region with a device sync.
//!
//! * [`SyncedWallTime`]: wall time from a device sync before the calls to one after
//!   them (what `cargo gpubench` calls synced wall time).
//! * [`DeviceTime`]: the device's own time between two events recorded around the
//!   calls (CUDA events on a GPU), each region also bracketed by syncs.
//!
//! ```no_run
//! use criterion::{criterion_group, criterion_main, Criterion};
//! use gpubench_core::criterion::DeviceTime;
//!
//! fn bench(c: &mut Criterion<DeviceTime>) {
//!     let x = tch::Tensor::randn([4096, 4096], (tch::Kind::Float, tch::Device::Cuda(0)));
//!     c.bench_function("matmul", |b| b.iter(|| x.matmul(&x)));
//! }
//!
//! criterion_group! {
//!     name = benches;
//!     config = Criterion::default().with_measurement(DeviceTime::new(tch::Device::Cuda(0)).unwrap());
//!     targets = bench
//! }
//! criterion_main!(benches);
//! ```
//!
//! Both keep their device for the rest of the process (criterion wants a `'static`
//! measurement); make one per device, not one per benchmark.

use std::cell::RefCell;
use std::time::Instant;

use ::criterion::measurement::{Measurement, ValueFormatter, WallTime};

use crate::device::{DeviceBackend, DeviceTimer, TorchDevice};

/// What every measurement here shares of criterion's [`Measurement`]: its values are
/// nanoseconds (`f64`), shown as criterion's wall time shows them.
macro_rules! nanoseconds {
    () => {
        fn add(&self, a: &f64, b: &f64) -> f64 {
            a + b
        }
        fn zero(&self) -> f64 {
            0.0
        }
        fn to_f64(&self, value: &f64) -> f64 {
            *value
        }
        fn formatter(&self) -> &dyn ValueFormatter {
            self.wall.formatter()
        }
    };
}

/// A device that lives for the rest of the process.
fn leak(device: tch::Device) -> &'static dyn DeviceBackend {
    crate::cuda_loader::ensure_loaded();
    Box::leak(Box::new(TorchDevice::new(device)))
}

/// Synced wall time of the calls on a device, in nanoseconds: `sync; t0; calls;
/// sync; t1`. Works on any device, the CPU too.
///
/// ```no_run
/// use criterion::{criterion_group, criterion_main, Criterion};
/// use gpubench_core::criterion::SyncedWallTime;
///
/// fn bench(c: &mut Criterion<SyncedWallTime>) {
///     let x = tch::Tensor::randn([1024, 1024], (tch::Kind::Float, tch::Device::Cpu));
///     c.bench_function("matmul", |b| b.iter(|| x.matmul(&x)));
///     // Or time a region of your own, e.g. in `iter_custom`:
///     let wall = SyncedWallTime::new(tch::Device::Cpu);
///     let ns = wall.time(|| drop(x.matmul(&x)));
///     assert!(ns > 0.0);
/// }
///
/// criterion_group! {
///     name = benches;
///     config = Criterion::default().with_measurement(SyncedWallTime::new(tch::Device::Cpu));
///     targets = bench
/// }
/// criterion_main!(benches);
/// ```
pub struct SyncedWallTime {
    device: &'static dyn DeviceBackend,
    wall: WallTime,
}

impl SyncedWallTime {
    /// Synced wall time on `device` (any device; on the CPU it is plain wall time).
    pub fn new(device: tch::Device) -> Self {
        Self::on(leak(device))
    }

    /// Synced wall time on `device`, e.g. the simulated device of a test.
    fn on(device: &'static dyn DeviceBackend) -> Self {
        SyncedWallTime {
            device,
            wall: WallTime,
        }
    }

    /// The synced wall time of `calls`, ns: for `iter_custom`.
    pub fn time(&self, calls: impl FnOnce()) -> f64 {
        let t0 = self.start();
        calls();
        self.end(t0)
    }
}

impl Measurement for SyncedWallTime {
    type Intermediate = Instant;
    type Value = f64;

    fn start(&self) -> Instant {
        self.device.synchronize();
        Instant::now()
    }
    fn end(&self, t0: Instant) -> f64 {
        self.device.synchronize();
        t0.elapsed().as_nanos() as f64
    }
    nanoseconds!();
}

/// The device's own time for the calls, in nanoseconds, from two device events
/// recorded around them (CUDA events on a GPU). The CPU has no such events:
/// [`DeviceTime::new`] says so.
///
/// ```no_run
/// use gpubench_core::criterion::DeviceTime;
///
/// let device = tch::Device::Cuda(0);
/// let timer = DeviceTime::new(device).expect("a CUDA device");
/// let x = tch::Tensor::randn([4096, 4096], (tch::Kind::Float, device));
/// let ns = timer.time(|| drop(x.matmul(&x)));
/// println!("{ns} ns on the device");
/// assert!(DeviceTime::new(tch::Device::Cpu).is_err());
/// ```
pub struct DeviceTime {
    device: &'static dyn DeviceBackend,
    /// The pair of events: criterion times one region at a time.
    timer: RefCell<Box<dyn DeviceTimer>>,
    wall: WallTime,
}

impl DeviceTime {
    /// Device time on `device`; an error on a device without a timer (the CPU) or
    /// when its events cannot be made.
    pub fn new(device: tch::Device) -> Result<Self, String> {
        Self::on(leak(device))
    }

    /// Device time on `device`, e.g. the simulated device of a test.
    fn on(device: &'static dyn DeviceBackend) -> Result<Self, String> {
        let timer = device.timer().ok_or_else(|| {
            format!(
                "{:?} has no device timer: use SyncedWallTime there",
                device.tch_device()
            )
        })?;
        Ok(DeviceTime {
            device,
            timer: RefCell::new(timer),
            wall: WallTime,
        })
    }

    /// The device time of `calls`, ns: for `iter_custom`.
    pub fn time(&self, calls: impl FnOnce()) -> f64 {
        self.start();
        calls();
        self.end(())
    }
}

impl Measurement for DeviceTime {
    type Intermediate = ();
    type Value = f64;

    fn start(&self) {
        self.device.synchronize();
        self.timer.borrow_mut().start();
    }
    fn end(&self, (): ()) -> f64 {
        let mut timer = self.timer.borrow_mut();
        timer.stop();
        self.device.synchronize();
        timer
            .elapsed_ns()
            .expect("the device recorded both events and was synchronised")
    }
    nanoseconds!();
}

#[cfg(test)]
mod tests;
