//! Helpers shared by the `compare_*` tests: a small MLP, fast measurement settings,
//! a CPU spin and a retry for timing assertions on a noisy machine.

#![allow(dead_code)]

use std::time::{Duration, Instant};

use gpubench_core::__private::device::TorchDevice;
use gpubench_core::__private::eager_compiled::EagerCompiledOutcome;
use gpubench_core::__private::engine::EngineOptions;
use gpubench_core::eager_compiled::EagerVsCompiled;
use gpubench_record::measurement::{MeasurementConfig, ProcessPolicy, RunMode};
use tch::nn::{self, Module};
use tch::{Device, Kind, Tensor};

static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Held for a whole test: libtorch's CPU thread pool shared by tests running in
/// parallel makes every op wait for the others' (tens of milliseconds on two cores),
/// and timing tests spin. One test at a time, and one libtorch thread: on a loaded
/// machine an op split over threads waits a whole scheduler slice for a preempted
/// one, which blurs single-call timings far more than the planted effects allow.
pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    let guard = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    tch::set_num_threads(1);
    guard
}

/// Short bounds: the planted effects are large.
pub fn fast_config() -> MeasurementConfig {
    MeasurementConfig {
        mode: RunMode::Bench,
        warmup_time_s: 0.05,
        measurement_time_s: 0.4,
        sample_target_s: 0.005,
        min_samples: 5,
        max_samples: 60,
        target_rel_ci: 0.02,
        flush_l2: false,
        processes: ProcessPolicy::single(),
        throttle_threshold: gpubench_record::telemetry::THROTTLE_CLOCK_FRACTION,
        cpu_threads: None,
    }
}

/// One call per benchmark, as `cargo test --benches` runs them.
pub fn smoke_config() -> MeasurementConfig {
    MeasurementConfig {
        mode: RunMode::Smoke,
        ..fast_config()
    }
}

/// A three-layer MLP with frozen parameters.
pub struct Mlp {
    pub vs: nn::VarStore,
    pub net: nn::Sequential,
}

impl Mlp {
    pub fn new(input: i64, width: i64) -> Self {
        tch::manual_seed(7);
        let mut vs = nn::VarStore::new(Device::Cpu);
        let root = vs.root();
        let net = nn::seq()
            .add(nn::linear(&root / "l1", input, width, Default::default()))
            .add_fn(|x| x.relu())
            .add(nn::linear(&root / "l2", width, width, Default::default()))
            .add_fn(|x| x.gelu("none"))
            .add(nn::linear(&root / "l3", width, 10, Default::default()));
        vs.freeze();
        Mlp { vs, net }
    }

    pub fn forward(&self, xs: &[Tensor]) -> Tensor {
        self.net.forward(&xs[0])
    }
}

/// Inputs of `batch` rows of `features`.
pub fn input(batch: i64, features: i64) -> Tensor {
    Tensor::randn([batch, features], (Kind::Float, Device::Cpu))
}

/// Busy-waits: a sleep could return late on a loaded machine and blur the effect.
pub fn spin(d: Duration) {
    let until = Instant::now() + d;
    while Instant::now() < until {
        std::hint::spin_loop();
    }
}

/// Runs `comparison` on the CPU.
pub fn run_on_cpu(
    comparison: EagerVsCompiled<'_>,
    config: &MeasurementConfig,
) -> EagerCompiledOutcome {
    let device = TorchDevice::new(Device::Cpu);
    comparison
        .run(&device, config, &EngineOptions::default())
        .expect("the comparison starts")
}

/// Timing assertions on a shared machine: other processes can only make a run
/// noisier, so a check that holds in one of three attempts shows the code is right.
pub fn in_one_of_three(mut attempt: impl FnMut() -> Result<(), String>) {
    let mut errors = Vec::new();
    for _ in 0..3 {
        match attempt() {
            Ok(()) => return,
            Err(e) => errors.push(e),
        }
    }
    panic!("failed in all three attempts:\n{}", errors.join("\n"));
}
