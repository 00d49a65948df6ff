//! Memory of each side of a paired process: base and head of one benchmark opened
//! on one simulated device as the `ab` driver opens them (the head from inside the
//! base's `ready`, samples alternated), the head keeping a growing cache. Each
//! side's record holds its own allocated bytes, not the other side's.

use std::cell::RefCell;
use std::ffi::c_void;
use std::rc::Rc;
use std::time::Duration;

use gpubench_analysis::baseline::compare_paired_records;
use gpubench_analysis::compare::Verdict;
use gpubench_analysis::memory::MemoryFigure;
use gpubench_record::measurement::{MeasurementConfig, ProcessPolicy, RunMode};
use gpubench_record::paired::{AbiSample, AbiSide};

use super::oom_tests::case;
use super::*;
use crate::device::simulated::BlockId;
use crate::device::SimulatedDevice;
use crate::paired::Hook;

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;
/// The base's weight: not a whole number of the head's 64 KiB entries.
const BASE_WEIGHT: u64 = 100 * KIB;
const HEAD_WEIGHT: u64 = MIB;
const ENTRY: u64 = 64 * KIB;
const TEMPORARY: u64 = 4 * MIB;

/// The process: the device both sides share, the head to open inside the base's
/// `ready`, and what the driver keeps.
struct Process {
    device: Rc<dyn DeviceBackend>,
    head: Case,
    head_record: Option<RawRecord>,
    base_side: *const AbiSide,
}

fn config() -> MeasurementConfig {
    MeasurementConfig {
        mode: RunMode::Bench,
        warmup_time_s: 0.01,
        measurement_time_s: 0.05,
        sample_target_s: 0.0005,
        min_samples: 2,
        max_samples: 10,
        processes: ProcessPolicy::single(),
        ..MeasurementConfig::quick()
    }
}

/// Opens `case` as a side of the process, as `gpubench_paired_open` does.
fn open(case: &Case, device: &Rc<dyn DeviceBackend>, hook: Hook) -> RawRecord {
    let fingerprint = fingerprint::collect(device.as_ref());
    let telemetry = Err("no telemetry in tests".to_string());
    let host = HostWatch::new(ThreadRequest::from_env(false, None)).unwrap();
    run_case(
        case,
        device,
        &config(),
        &fingerprint,
        Watches {
            gpu: &telemetry,
            host: &host,
        },
        CaseRun {
            process: 2,
            memory_peak: false,
            paired: Some(hook),
        },
    )
}

unsafe extern "C" fn base_ready(user: *mut c_void, side: *const AbiSide) {
    let process = user.cast::<Process>();
    // SAFETY: the test's `Process`, alive for the call; each access is its own.
    let (head, device) = unsafe {
        (*process).base_side = side;
        (
            &(*process).head as *const Case,
            Rc::clone(&(*process).device),
        )
    };
    let hook = Hook {
        ready: head_ready,
        user,
    };
    // SAFETY: `head` lives in `Process`, which nothing moves or drops meanwhile.
    let record = open(unsafe { &*head }, &device, hook);
    // SAFETY: as above.
    unsafe { (*process).head_record = Some(record) };
}

unsafe extern "C" fn head_ready(user: *mut c_void, side: *const AbiSide) {
    // SAFETY: the base's side stays valid while its `ready` lasts, which holds this
    // call; the head's is this call's.
    let (base, head) = unsafe { (&*(*user.cast::<Process>()).base_side, &*side) };
    for s in [head, base] {
        assert!(
            unsafe { (s.warm_up)(s.ctx) } >= 0.0,
            "a side failed its warm-up"
        );
    }
    for _ in 0..6 {
        for s in [base, head, head, base] {
            let mut out = AbiSample::default();
            assert_eq!(
                unsafe { (s.sample)(s.ctx, 4, &mut out) },
                0,
                "a sample failed"
            );
        }
    }
}

/// A call that makes and frees a temporary on `device`.
fn call(device: &SimulatedDevice, at: &str) {
    let t = device.try_allocate(TEMPORARY, at).unwrap();
    device.launch(Duration::from_micros(10));
    device.release(t);
}

#[test]
fn each_side_of_a_paired_process_records_its_own_memory() {
    let _serial = crate::engine_tests::SERIAL
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    install_panic_hook();
    let sim = Rc::new(SimulatedDevice::new());
    // A fresh process: the allocator reads nothing until the base, opened first,
    // allocates its weight.
    sim.set_lazy_allocator(true);
    // And a library that keeps a workspace from the first kernel on, as cuBLAS does:
    // the head, warmed first, would hold it.
    sim.set_workspace(32 * MIB);
    let device: Rc<dyn DeviceBackend> = sim.clone();
    let d = Rc::clone(&sim);
    let base = case("cache", move |b| {
        let weight = d.try_allocate(BASE_WEIGHT, "base::weight").unwrap();
        let d2 = Rc::clone(&d);
        b.iter(move || call(&d2, "base::call"));
        d.release(weight);
    });
    // The head keeps every call's 64 KiB entry, in a cache that outlives the call
    // (and the benchmark: it stays resident while the base finishes).
    let entries: Rc<RefCell<Vec<BlockId>>> = Rc::default();
    let d = Rc::clone(&sim);
    let kept = Rc::clone(&entries);
    let head = case("cache", move |b| {
        let weight = d.try_allocate(HEAD_WEIGHT, "head::weight").unwrap();
        let (d2, kept) = (Rc::clone(&d), Rc::clone(&kept));
        b.iter(move || {
            kept.borrow_mut()
                .push(d2.try_allocate(ENTRY, "head::cache").unwrap());
            call(&d2, "head::call");
        });
        d.release(weight);
    });
    let mut process = Process {
        device: Rc::clone(&device),
        head,
        head_record: None,
        base_side: std::ptr::null(),
    };
    let user: *mut c_void = (&mut process as *mut Process).cast();
    let base_record = open(
        &base,
        &device,
        Hook {
            ready: base_ready,
            user,
        },
    );
    let head_record = process.head_record.take().expect("the head was opened");
    let base_m = base_record.first_measurement().expect("the base passed");
    let head_m = head_record.first_measurement().expect("the head passed");
    assert_eq!(base_m.samples.len(), 12);
    assert!(entries.borrow().len() > 24, "the head kept its entries");

    // The base's peak: its weight and one temporary, not the head's weight and
    // cache, resident through every sample of the base after the first.
    let base_mem = base_m
        .memory
        .expect("the simulated device has an allocator");
    assert_eq!(base_mem.peak_allocated_bytes, BASE_WEIGHT + TEMPORARY);
    assert!(base_mem.reserved_shared);
    assert!(
        base_mem.peak_reserved_bytes > base_mem.peak_allocated_bytes + HEAD_WEIGHT,
        "reserved bytes are the process's: {base_mem:?}"
    );
    let base_growth = base_m.memory_growth.expect("growth measured");
    assert_eq!(base_growth.per_call(), 0.0);
    assert_eq!(base_growth.start_bytes, BASE_WEIGHT);

    // The head's: its weight, its cache and one temporary, not the base's weight.
    let head_growth = head_m.memory_growth.expect("growth measured");
    assert_eq!(head_growth.per_call(), ENTRY as f64);
    assert_eq!((head_growth.start_bytes - HEAD_WEIGHT) % ENTRY, 0);
    let head_mem = head_m.memory.expect("an allocator");
    assert_eq!(
        head_mem.peak_allocated_bytes,
        head_growth.start_bytes + TEMPORARY
    );
    // Not the library's workspace, which the head's warm-up (the first compute in
    // the process) would have made had the process not warmed the libraries first.
    let kept = entries.borrow().len() as u64;
    assert!(
        head_mem.peak_allocated_bytes <= HEAD_WEIGHT + kept * ENTRY + TEMPORARY,
        "the head holds the workspace: {head_mem:?}"
    );

    // Judged as `ab` judges them: the head's cache is a regression; the reserved
    // bytes, both sides', are left out.
    let set = compare_paired_records(&[base_record], &[head_record], &Default::default())
        .expect("comparable");
    let b = &set.comparisons[0];
    assert_eq!(
        b.verdict_of(gpubench_analysis::baseline::Metric::Memory),
        Some(Verdict::Regressed)
    );
    let Some(memory) = b
        .outcome
        .judged(gpubench_analysis::baseline::Metric::Memory)
        .and_then(gpubench_analysis::baseline::Judged::memory)
    else {
        panic!("{b:?}");
    };
    assert!(memory.figure(MemoryFigure::PeakReserved).is_none());
    assert_eq!(memory.left_out[0].figure, MemoryFigure::PeakReserved);
    for id in entries.borrow_mut().drain(..) {
        sim.release(id);
    }
}
