//! One side of a paired process (`cargo gpubench ab`): what a benchmark's `b.iter…`
//! hands the driver, which takes the side's samples alternating with the other
//! side's. The C entry points through which the driver opens a side are the
//! harness's ([`crate::export_paired`]); the contract, and how the driver uses it,
//! is [`gpubench_record::paired`].

use std::any::Any;
use std::ffi::c_void;
use std::panic::{self, AssertUnwindSafe};

use gpubench_analysis::telemetry::EnergyCounter;
use gpubench_record::energy::EnergyWindow;
use gpubench_record::measurement::{Measurement, Sample, StopReason, WarmupPoint};
use gpubench_record::paired::{
    AbiEnergyWindow, AbiSample, AbiSide, ReadyFn, ENERGY_WINDOW_FAILED, ENERGY_WINDOW_NONE,
    ENERGY_WINDOW_TAKEN,
};

use crate::engine::{Begun, EnergyPace, Engine, EngineOptions, OwnMemory, Taken, Workload};

/// Where a paired process's driver waits for a side.
#[derive(Clone, Copy)]
pub(crate) struct Hook {
    pub(crate) ready: ReadyFn,
    pub(crate) user: *mut c_void,
}

/// A side while the driver uses it, behind [`AbiSide::ctx`].
struct Side<'e, 'd, 'w> {
    engine: &'e Engine<'d>,
    workload: &'w mut dyn Workload,
    begun: Option<Begun>,
    warmup: Vec<WarmupPoint>,
    samples: Vec<Sample>,
    /// The energy windows the driver asked for, when it asked for any: those taken,
    /// and why the last one asked for was not.
    energy: Option<EnergyWindows>,
    /// A panic of the benchmark's code inside a call from the driver, resumed in the
    /// benchmark's own frame once the driver is done (it must not cross the C ABI).
    panic: Option<Box<dyn Any + Send>>,
}

/// The energy windows a side took for the driver, alternated with the other side's.
struct EnergyWindows {
    /// The energy counter, opened at the first window; `Err` says why there is none.
    counter: Result<Box<dyn EnergyCounter>, String>,
    /// The pace of the calls, from the samples taken before the first window.
    pace: EnergyPace,
    /// The windows taken, in time order.
    taken: Vec<EnergyWindow>,
    /// Why a window asked for was not taken.
    refused: Option<String>,
}

impl Side<'_, '_, '_> {
    /// Runs `f` unless an earlier call panicked, keeping a panic for later.
    fn guarded<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> Option<T> {
        if self.panic.is_some() {
            return None;
        }
        match panic::catch_unwind(AssertUnwindSafe(|| f(self))) {
            Ok(v) => Some(v),
            Err(p) => {
                self.panic = Some(p);
                None
            }
        }
    }
}

/// [`AbiSide::warm_up`].
unsafe extern "C" fn warm_up(ctx: *mut c_void) -> f64 {
    // SAFETY: `ctx` is the `Side` of `measure`, alive while the driver holds it.
    let side = unsafe { &mut *ctx.cast::<Side<'_, '_, '_>>() };
    let engine = side.engine;
    let _own = engine.own_memory().map(OwnMemory::active);
    side.guarded(|s| {
        let begun = s.engine.begin(s.workload);
        let (warmup, estimate) = s.engine.warm_up(s.workload);
        s.begun = Some(begun);
        s.warmup = warmup;
        estimate
    })
    .unwrap_or(-1.0)
}

/// [`AbiSide::sample`].
unsafe extern "C" fn sample(ctx: *mut c_void, iters: u64, out: *mut AbiSample) -> i32 {
    // SAFETY: as in `warm_up`; `out` points at the driver's sample.
    let side = unsafe { &mut *ctx.cast::<Side<'_, '_, '_>>() };
    if side.begun.is_none() {
        return 1;
    }
    let engine = side.engine;
    let _own = engine.own_memory().map(OwnMemory::active);
    let taken = side.guarded(|s| {
        let sample = s.engine.steady_sample(s.workload, iters.max(1));
        s.samples.push(sample.clone());
        sample
    });
    match taken {
        Some(s) => {
            // SAFETY: the driver passes a valid, writable sample.
            unsafe {
                *out = AbiSample {
                    wall_ns: s.wall_ns,
                    host_ns: s.host_ns,
                    device_ns: s.device_ns.unwrap_or(f64::NAN),
                }
            };
            0
        }
        None => 1,
    }
}

/// [`AbiSide::energy_window`].
unsafe extern "C" fn energy_window(ctx: *mut c_void, steps: u32, out: *mut AbiEnergyWindow) -> i32 {
    // SAFETY: as in `warm_up`; `out` points at the driver's window.
    let side = unsafe { &mut *ctx.cast::<Side<'_, '_, '_>>() };
    if side.begun.is_none() || side.samples.is_empty() {
        return ENERGY_WINDOW_FAILED;
    }
    let engine = side.engine;
    let _own = engine.own_memory().map(OwnMemory::active);
    let answer = side.guarded(|s| {
        let energy = s.energy.get_or_insert_with(|| EnergyWindows {
            counter: s.engine.energy_counter(),
            pace: EnergyPace::of(&s.samples),
            taken: Vec::new(),
            refused: None,
        });
        let window = match &mut energy.counter {
            Ok(counter) => s
                .engine
                .energy_window(counter.as_mut(), s.workload, &energy.pace, steps)
                .and_then(|w| w),
            Err(why) => Err(why.clone()),
        };
        match window {
            Ok(w) => {
                energy.taken.push(w);
                Ok(w)
            }
            Err(why) => {
                energy.refused = Some(why.clone());
                Err(why)
            }
        }
    });
    let (code, abi) = match answer {
        Some(Ok(w)) => (ENERGY_WINDOW_TAKEN, AbiEnergyWindow::of(&w)),
        Some(Err(why)) => (ENERGY_WINDOW_NONE, AbiEnergyWindow::none(&why)),
        None => return ENERGY_WINDOW_FAILED,
    };
    // SAFETY: the driver passes a valid, writable window.
    unsafe { *out = abi };
    code
}

/// Hands `workload` to the driver through `hook` and, once it is done, finishes the
/// measurement around the samples it took; a panic of the benchmark's code during
/// the driver's calls is resumed here. `Err` says why nothing was measured (the
/// driver took no sample: the other side failed first).
pub(crate) fn measure(
    engine: &Engine<'_>,
    workload: &mut dyn Workload,
    options: &EngineOptions,
    hook: Hook,
) -> Result<Measurement, String> {
    let mut side = Side {
        engine,
        workload,
        begun: None,
        warmup: Vec::new(),
        samples: Vec::new(),
        energy: None,
        panic: None,
    };
    let abi = AbiSide {
        ctx: (&mut side as *mut Side<'_, '_, '_>).cast(),
        warm_up,
        sample,
        energy_window,
    };
    // While the driver holds this side, the other side runs: what is allocated then
    // is not this side's, save in the calls the driver makes of it.
    if let Some(own) = engine.own_memory() {
        own.leave();
    }
    // SAFETY: the driver's callback, given to `open` with its `user` pointer; `abi`
    // and `side` outlive the call.
    unsafe { (hook.ready)(hook.user, &abi) };
    if let Some(own) = engine.own_memory() {
        own.enter();
    }
    if let Some(p) = side.panic.take() {
        panic::resume_unwind(p);
    }
    let Some(begun) = side.begun.take() else {
        return Err(
            "not measured: the paired process stopped before this side's \
                    warm-up (the other side failed first)"
                .to_string(),
        );
    };
    if side.samples.is_empty() {
        return Err(
            "not measured: the paired process took no sample of this side (the \
                    other side failed first)"
                .to_string(),
        );
    }
    // Windows the driver took stand for the side's energy; without any, the reason
    // the last one gave (none, when it asked for none: then measured alone here).
    let energy = side.energy.take().map(|e| {
        if e.taken.is_empty() {
            Err(e.refused.unwrap_or_else(|| "no energy window".into()))
        } else {
            Ok(engine.energy_of(e.taken))
        }
    });
    let taken = Taken {
        warmup: std::mem::take(&mut side.warmup),
        samples: std::mem::take(&mut side.samples),
        stop_reason: StopReason::Paired,
        energy,
    };
    Ok(engine.finish(side.workload, options, begun, taken))
}

#[cfg(test)]
mod tests {
    use std::rc::Rc;

    use gpubench_record::measurement::{MeasurementConfig, ProcessPolicy, RunMode};

    use gpubench_analysis::sampling::{Side, BLOCK};

    use super::*;
    use crate::device::{DeviceBackend, TorchDevice};
    use crate::Bencher;

    /// What the stand-in driver saw and does.
    struct Driver {
        samples: usize,
        taken: Vec<AbiSample>,
        estimate: f64,
    }

    unsafe extern "C" fn drive(user: *mut c_void, side: *const AbiSide) {
        // SAFETY: the test's `Driver` and the side, valid for the call.
        let (driver, side) = unsafe { (&mut *user.cast::<Driver>(), &*side) };
        driver.estimate = unsafe { (side.warm_up)(side.ctx) };
        for _ in 0..driver.samples {
            let mut out = AbiSample::default();
            if unsafe { (side.sample)(side.ctx, 4, &mut out) } != 0 {
                break;
            }
            driver.taken.push(out);
        }
    }

    fn bencher(driver: &mut Driver) -> Bencher {
        let cpu: Rc<dyn DeviceBackend> = Rc::new(TorchDevice::new(tch::Device::Cpu));
        let config = MeasurementConfig {
            mode: RunMode::Bench,
            warmup_time_s: 0.02,
            measurement_time_s: 0.1,
            sample_target_s: 0.001,
            min_samples: 2,
            max_samples: 10,
            processes: ProcessPolicy::single(),
            ..MeasurementConfig::quick()
        };
        let mut b = Bencher::new("paired", cpu, config);
        b.paired = Some(Hook {
            ready: drive,
            user: (driver as *mut Driver).cast(),
        });
        b
    }

    #[test]
    fn the_driver_takes_the_samples_and_the_side_finishes_around_them() {
        let mut driver = Driver {
            samples: 6,
            taken: Vec::new(),
            estimate: 0.0,
        };
        let mut b = bencher(&mut driver);
        let x = tch::Tensor::ones([64], (tch::Kind::Float, tch::Device::Cpu));
        b.iter(|| &x + &x);
        let m = b.measurement.take().expect("measured");
        assert_eq!(m.stop_reason, StopReason::Paired);
        assert_eq!(m.samples.len(), 6, "exactly the driver's samples");
        assert!(m.samples.iter().all(|s| s.iters == 4));
        assert_eq!(m.cold.len(), 1, "the cold call was made in the warm-up");
        assert!(!m.warmup.is_empty());
        assert!(driver.estimate > 0.0);
        assert_eq!(driver.taken.len(), 6);
        assert!(driver
            .taken
            .iter()
            .all(|s| s.wall_ns > 0.0 && s.device_ns.is_nan()));
        assert_eq!(
            driver.taken[0].wall_ns, m.samples[0].wall_ns,
            "the driver saw what the record keeps"
        );
    }

    #[test]
    fn a_driver_that_takes_nothing_leaves_the_side_unmeasured_saying_why() {
        let mut driver = Driver {
            samples: 0,
            taken: Vec::new(),
            estimate: 0.0,
        };
        let mut b = bencher(&mut driver);
        b.iter(|| 1 + 1);
        assert!(b.measurement.is_none());
        assert!(b
            .not_measured
            .as_deref()
            .is_some_and(|w| w.contains("took no sample")));
    }

    /// Two sides of one paired process on one simulated device, opened as the
    /// driver opens them: the inner side from inside the outer side's `ready`.
    struct Nest {
        inner: Option<Bencher>,
        inner_routine: Option<Box<dyn FnMut()>>,
        outer_side: *const AbiSide,
        pairs: usize,
        /// Blocks of energy windows after the samples (outer, inner, inner, outer):
        /// each block's joules per call, the outer side's first.
        energy_blocks: usize,
        energy: Vec<[(Side, f64); 4]>,
        /// Why an energy window was not taken.
        no_energy: Option<String>,
    }

    impl Nest {
        /// Four pairs of samples, then `energy_blocks` blocks of energy windows.
        fn new(energy_blocks: usize) -> Self {
            Nest {
                inner: None,
                inner_routine: None,
                outer_side: std::ptr::null(),
                pairs: 4,
                energy_blocks,
                energy: Vec::new(),
                no_energy: None,
            }
        }
    }

    unsafe extern "C" fn outer_ready(user: *mut c_void, side: *const AbiSide) {
        let nest = user.cast::<Nest>();
        // SAFETY: the test's `Nest`, alive for the call; no reference is held across
        // the inner side's own use of it.
        let (mut inner, routine) = unsafe {
            (*nest).outer_side = side;
            (
                (*nest).inner.take().expect("an inner side"),
                (*nest).inner_routine.take().expect("an inner routine"),
            )
        };
        inner.iter(routine);
        // SAFETY: as above.
        unsafe { (*nest).inner = Some(inner) };
    }

    unsafe extern "C" fn inner_ready(user: *mut c_void, side: *const AbiSide) {
        let nest = user.cast::<Nest>();
        // SAFETY: both sides are alive while this call lasts.
        let (outer, inner, pairs) = unsafe { (&*(*nest).outer_side, &*side, (*nest).pairs) };
        for s in [inner, outer] {
            assert!(
                unsafe { (s.warm_up)(s.ctx) } >= 0.0,
                "a side failed its warm-up"
            );
        }
        for _ in 0..pairs {
            for s in [outer, inner, inner, outer] {
                let mut out = AbiSample::default();
                assert_eq!(
                    unsafe { (s.sample)(s.ctx, 2, &mut out) },
                    0,
                    "a sample failed"
                );
            }
        }
        let blocks = unsafe { (*nest).energy_blocks };
        for _ in 0..blocks {
            let mut block = [(Side::First, 0.0); 4];
            for (slot, side) in block.iter_mut().zip(BLOCK) {
                let s = if side == Side::First { outer } else { inner };
                let mut out = AbiEnergyWindow::default();
                match unsafe { (s.energy_window)(s.ctx, 3, &mut out) } {
                    ENERGY_WINDOW_TAKEN => *slot = (side, out.window().joules_per_call()),
                    code => {
                        assert_eq!(code, ENERGY_WINDOW_NONE, "an energy window failed");
                        // SAFETY: as above.
                        unsafe { (*nest).no_energy = Some(out.reason()) };
                        return;
                    }
                }
            }
            // SAFETY: as above.
            unsafe { (*nest).energy.push(block) };
        }
    }

    fn sim_config() -> MeasurementConfig {
        MeasurementConfig {
            mode: RunMode::Bench,
            warmup_time_s: 0.01,
            measurement_time_s: 0.05,
            sample_target_s: 0.001,
            min_samples: 2,
            max_samples: 10,
            processes: ProcessPolicy::single(),
            ..MeasurementConfig::quick()
        }
    }

    #[test]
    fn a_side_whose_capture_fails_leaves_the_other_side_intact() {
        let _serial = crate::engine_tests::SERIAL
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let device = Rc::new(crate::device::SimulatedDevice::new());
        let shared: Rc<dyn DeviceBackend> = device.clone();
        let mut nest = Nest::new(0);
        let user: *mut c_void = (&mut nest as *mut Nest).cast();
        // The inner side, finished first, reads a value back in every call (as a
        // training step that logs `loss.item()` does): its capture fails.
        let mut inner = Bencher::new("reads_back", Rc::clone(&shared), sim_config());
        inner.paired = Some(Hook {
            ready: inner_ready,
            user,
        });
        let d = Rc::clone(&device);
        nest.inner = Some(inner);
        nest.inner_routine = Some(Box::new(move || {
            d.launch_kernel("reduce", std::time::Duration::from_micros(50));
            d.wait_idle();
        }));
        // The outer side draws random numbers in every call, as `randn` does: a
        // generator left in capture mode would fail it.
        let mut outer = Bencher::new("draws", Rc::clone(&shared), sim_config());
        outer.paired = Some(Hook {
            ready: outer_ready,
            user,
        });
        let d = Rc::clone(&device);
        outer.iter(|| d.launch_random(std::time::Duration::from_micros(50)));

        let outer_m = outer
            .measurement
            .take()
            .expect("the outer side was measured");
        let inner_m = nest
            .inner
            .as_mut()
            .and_then(|b| b.measurement.take())
            .expect("the inner side was measured");
        assert_eq!(outer_m.samples.len(), 8, "{:?}", outer.not_measured);
        assert_eq!(inner_m.samples.len(), 8);
        let inner_k = inner_m.kernel.as_ref().expect("inner kernel time");
        assert_eq!(
            inner_k.method,
            gpubench_record::kernels::KernelMethod::Profiler
        );
        assert!(inner_k
            .not_capturable
            .as_deref()
            .is_some_and(|w| w.contains("synchronised")));
        assert_eq!(
            inner_k
                .counters
                .and_then(|c| c.per_call(gpubench_record::kernels::Counter::Syncs)),
            Some(1.0)
        );
        let outer_k = outer_m.kernel.as_ref().unwrap_or_else(|| {
            panic!(
                "the outer side lost its kernel time: {:?}",
                outer_m.kernel_unavailable
            )
        });
        assert_eq!(
            outer_k.method,
            gpubench_record::kernels::KernelMethod::GraphReplay,
            "the outer side's routine is captured as on its own"
        );
        assert_eq!(
            outer_k
                .counters
                .and_then(|c| c.per_call(gpubench_record::kernels::Counter::Syncs)),
            Some(0.0)
        );
    }

    #[test]
    fn a_panic_in_the_routine_during_a_sample_is_resumed_in_the_benchmark() {
        let mut driver = Driver {
            samples: 50,
            taken: Vec::new(),
            estimate: 0.0,
        };
        let mut b = bencher(&mut driver);
        let calls = std::cell::Cell::new(0u64);
        let caught = std::panic::catch_unwind(AssertUnwindSafe(|| {
            b.iter(|| {
                calls.set(calls.get() + 1);
                assert!(calls.get() < 200, "boom at call 200");
            })
        }));
        assert!(caught.is_err(), "the benchmark's own frame sees the panic");
        assert!(driver.taken.len() < 50, "the driver stopped at the failure");
    }

    /// The simulated device's energy counter as a GPU's telemetry.
    struct SimulatedBoard(Rc<crate::device::SimulatedDevice>);

    impl crate::telemetry::TelemetrySource for SimulatedBoard {
        fn state(&self) -> gpubench_record::telemetry::GpuState {
            gpubench_record::telemetry::GpuState::default()
        }
        fn read(&self) -> Result<gpubench_record::telemetry::TelemetryReading, String> {
            Err("no full readings on the simulated board".into())
        }
        fn read_clock(&self) -> Result<gpubench_record::telemetry::ClockReading, String> {
            Err("no clock on the simulated board".into())
        }
        fn energy_counter(
            &self,
        ) -> Result<Box<dyn gpubench_analysis::telemetry::EnergyCounter>, String> {
            Ok(Box::new(self.0.energy_counter()))
        }
    }

    /// Base (outer, 200 µs a call) and head (inner, 220 µs: a tenth more work) on one
    /// simulated device, their energy windows alternated as the driver does: the
    /// ratio of joules per call reads ln 1.1, and each record keeps its own windows.
    #[test]
    fn alternated_energy_windows_read_a_tenth_more_work_as_ln_1_1() {
        crate::engine_tests::in_one_of_three(energy_of_a_tenth_more_work);
    }

    fn energy_of_a_tenth_more_work() -> Result<(), String> {
        let _serial = crate::engine_tests::SERIAL
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let device = Rc::new(crate::device::SimulatedDevice::new());
        let shared: Rc<dyn DeviceBackend> = device.clone();
        let telemetry =
            crate::telemetry::Telemetry::new(Rc::new(SimulatedBoard(Rc::clone(&device))));
        let mut nest = Nest::new(2);
        let user: *mut c_void = (&mut nest as *mut Nest).cast();
        let mut inner = Bencher::new("head", Rc::clone(&shared), sim_config());
        inner.telemetry(Some(telemetry.clone()));
        inner.paired = Some(Hook {
            ready: inner_ready,
            user,
        });
        let d = Rc::clone(&device);
        nest.inner = Some(inner);
        nest.inner_routine = Some(Box::new(move || {
            d.launch(std::time::Duration::from_micros(220))
        }));
        let mut outer = Bencher::new("base", Rc::clone(&shared), sim_config());
        outer.telemetry(Some(telemetry));
        outer.paired = Some(Hook {
            ready: outer_ready,
            user,
        });
        let d = Rc::clone(&device);
        outer.iter(|| d.launch(std::time::Duration::from_micros(200)));

        assert_eq!(nest.no_energy, None);
        assert_eq!(nest.energy.len(), 2);
        let ratios: Vec<f64> = nest
            .energy
            .iter()
            .map(|b| gpubench_analysis::sampling::mean_ratio(b, Side::Second).ln())
            .collect();
        let ratio = gpubench_analysis::stats::median(&ratios);
        let base_m = outer.measurement.take().expect("the base was measured");
        let head_m = nest
            .inner
            .as_mut()
            .and_then(|b| b.measurement.take())
            .expect("the head was measured");
        for m in [&base_m, &head_m] {
            let e = m.energy.as_ref().expect("the side kept its windows");
            assert_eq!(e.windows.len(), 4, "the driver's windows, none of its own");
            assert!(e.idle_w.is_some());
        }
        if (ratio - 1.1f64.ln()).abs() > 0.02 {
            return Err(format!("energy ratio {ratio:.4} (block ratios {ratios:?})"));
        }
        Ok(())
    }

    #[test]
    fn on_the_cpu_an_energy_window_answers_none_with_the_reason() {
        let mut driver = Driver {
            samples: 3,
            taken: Vec::new(),
            estimate: 0.0,
        };
        let mut b = bencher(&mut driver);
        b.paired = Some(Hook {
            ready: drive_with_energy,
            user: (&mut driver as *mut Driver).cast(),
        });
        b.iter(|| 1 + 1);
        let m = b.measurement.take().expect("measured");
        assert_eq!(driver.taken.len(), 3);
        assert!(m.energy.is_none());
        assert!(
            m.energy_unavailable
                .as_deref()
                .is_some_and(|w| w.contains("no GPU telemetry")),
            "{:?}",
            m.energy_unavailable
        );
    }

    unsafe extern "C" fn drive_with_energy(user: *mut c_void, side: *const AbiSide) {
        unsafe { drive(user, side) };
        // SAFETY: the side, valid for the call.
        let side = unsafe { &*side };
        let mut out = AbiEnergyWindow::default();
        let code = unsafe { (side.energy_window)(side.ctx, 3, &mut out) };
        assert_eq!(code, ENERGY_WINDOW_NONE);
        assert!(
            out.reason().contains("no GPU telemetry"),
            "{}",
            out.reason()
        );
    }
}
