//! Tests of the growth measurement on the simulated device (whose allocator counts
//! bytes) and on the CPU (which has none).

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use gpubench_record::measurement::{
    Measurement, MeasurementConfig, MemoryGrowth, ProcessPolicy, RunMode,
};

use crate::device::{DeviceBackend, SimulatedDevice, TorchDevice};
use crate::engine_tests::measure_on;

const TENSOR: u64 = 64 << 10;

fn config() -> MeasurementConfig {
    MeasurementConfig {
        mode: RunMode::Bench,
        warmup_time_s: 0.02,
        measurement_time_s: 0.1,
        sample_target_s: 0.002,
        min_samples: 5,
        max_samples: 20,
        target_rel_ci: 0.05,
        flush_l2: false,
        processes: ProcessPolicy::single(),
        throttle_threshold: gpubench_record::telemetry::THROTTLE_CLOCK_FRACTION,
        cpu_threads: None,
    }
}

/// A simulated device tensor: its bytes are freed when it is dropped.
struct SimTensor {
    device: Rc<SimulatedDevice>,
    bytes: u64,
}

impl SimTensor {
    fn new(device: &Rc<SimulatedDevice>, bytes: u64) -> Self {
        device.allocate(bytes);
        device.launch(Duration::from_micros(20));
        SimTensor {
            device: Rc::clone(device),
            bytes,
        }
    }
}

impl Drop for SimTensor {
    fn drop(&mut self) {
        self.device.free(self.bytes);
    }
}

fn growth_of(m: &Measurement) -> MemoryGrowth {
    m.memory_growth
        .expect("the simulated device has an allocator")
}

#[test]
fn a_routine_that_keeps_one_tensor_per_call_holds_its_size_per_call() {
    let dev = Rc::new(SimulatedDevice::new());
    let d = Rc::clone(&dev);
    let cache: RefCell<Vec<SimTensor>> = RefCell::new(Vec::new());
    let m = measure_on(dev, config(), move |b| {
        b.iter(|| {
            // The leak: a copy of every output kept in a cache that never evicts.
            cache.borrow_mut().push(SimTensor::new(&d, TENSOR));
            SimTensor::new(&d, TENSOR)
        })
    });
    let g = growth_of(&m);
    assert!(g.calls >= 4, "{g:?}");
    assert_eq!(g.per_call(), TENSOR as f64, "{g:?}");
    assert_eq!(g.second_bytes - g.first_bytes, g.calls * TENSOR);
}

#[test]
fn outputs_dropped_after_each_call_hold_nothing() {
    let dev = Rc::new(SimulatedDevice::new());
    let d = Rc::clone(&dev);
    let m = measure_on(dev, config(), move |b| {
        b.iter(|| SimTensor::new(&d, TENSOR))
    });
    let g = growth_of(&m);
    assert_eq!(g.per_call(), 0.0, "{g:?}");
    // The last output was dropped before each reading.
    assert_eq!(g.start_bytes, 0, "{g:?}");
}

#[test]
fn a_one_time_cache_is_not_a_leak() {
    let dev = Rc::new(SimulatedDevice::new());
    let d = Rc::clone(&dev);
    let cache: RefCell<Option<SimTensor>> = RefCell::new(None);
    let m = measure_on(dev, config(), move |b| {
        b.iter(|| {
            cache
                .borrow_mut()
                .get_or_insert_with(|| SimTensor::new(&d, 16 << 20));
            SimTensor::new(&d, TENSOR)
        })
    });
    let g = growth_of(&m);
    assert_eq!(g.per_call(), 0.0, "{g:?}");
    assert_eq!(g.start_bytes, 16 << 20, "the cache stays: {g:?}");
}

#[test]
fn a_cache_that_fills_in_one_stretch_only_is_not_a_leak() {
    // Filled during the first stretch, then full: the second stretch holds nothing.
    let late = MemoryGrowth {
        calls: 100,
        start_bytes: 1 << 20,
        first_bytes: 9 << 20,
        second_bytes: 9 << 20,
    };
    assert_eq!(late.per_call(), 0.0);
    let leak = MemoryGrowth {
        calls: 100,
        start_bytes: 0,
        first_bytes: 100 * TENSOR,
        second_bytes: 200 * TENSOR,
    };
    assert_eq!(leak.per_call(), TENSOR as f64);
}

#[test]
fn with_setup_inputs_do_not_count_as_held() {
    let dev = Rc::new(SimulatedDevice::new());
    let (d, e) = (Rc::clone(&dev), Rc::clone(&dev));
    let m = measure_on(dev, config(), move |b| {
        b.iter_with_setup(
            || SimTensor::new(&d, TENSOR),
            |input| {
                let out = SimTensor::new(&e, TENSOR);
                drop(input);
                out
            },
        )
    });
    assert_eq!(growth_of(&m).per_call(), 0.0, "{:?}", m.memory_growth);
}

#[test]
fn the_cpu_has_no_allocator_so_growth_is_absent_not_zero() {
    let cpu: Rc<dyn DeviceBackend> = Rc::new(TorchDevice::new(tch::Device::Cpu));
    let m = measure_on(cpu, config(), |b| {
        let x = tch::Tensor::ones([64], (tch::Kind::Float, tch::Device::Cpu));
        b.iter(|| &x + 1.0);
    });
    assert!(m.memory.is_none());
    assert!(m.memory_growth.is_none());
}
