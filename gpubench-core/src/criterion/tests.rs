//! The `criterion` feature's measurements in a real criterion bench of asynchronous
//! work on the simulated device: criterion's own wall clock sees the enqueue time,
//! `DeviceTime` and `SyncedWallTime` the work.

use std::path::Path;
use std::sync::MutexGuard;
use std::time::Duration;

use ::criterion::measurement::Measurement;
use ::criterion::Criterion;

use super::{DeviceTime, SyncedWallTime};
use crate::device::SimulatedDevice;

/// Device work of one call.
const WORK: Duration = Duration::from_micros(300);

fn simulated() -> &'static SimulatedDevice {
    Box::leak(Box::new(SimulatedDevice::new()))
}

/// The timing tests of this crate run one at a time: a spin of the simulated device
/// that another test's spin delays reads long.
fn serial() -> MutexGuard<'static, ()> {
    crate::engine_tests::SERIAL
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

/// Criterion's mean per call of a bench of `WORK`-long asynchronous launches, ns.
fn mean_per_call<M: Measurement + 'static>(
    c: Criterion<M>,
    dev: &'static SimulatedDevice,
    out: &Path,
    id: &str,
) -> f64 {
    let mut c = c
        .output_directory(out)
        .sample_size(10)
        .warm_up_time(Duration::from_millis(100))
        .measurement_time(Duration::from_millis(400))
        .without_plots();
    c.bench_function(id, |b| b.iter(|| dev.launch(WORK)));
    let path = out.join(id).join("new").join("estimates.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("criterion wrote no {}: {e}", path.display()));
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    json["mean"]["point_estimate"].as_f64().unwrap()
}

#[test]
fn device_time_sees_the_work_where_criterions_wall_clock_sees_the_queue() {
    let _serial = serial();
    let out = tempfile::tempdir().unwrap();
    let work = WORK.as_nanos() as f64;

    let dev = simulated();
    let device = mean_per_call(
        Criterion::default().with_measurement(DeviceTime::on(dev).unwrap()),
        dev,
        out.path(),
        "device",
    );
    let dev = simulated();
    let synced = mean_per_call(
        Criterion::default().with_measurement(SyncedWallTime::on(dev)),
        dev,
        out.path(),
        "synced",
    );
    let dev = simulated();
    let queued = mean_per_call(Criterion::default(), dev, out.path(), "wall");

    assert!(
        (device / work - 1.0).abs() < 0.05,
        "device time {device} ns per call for {work} ns of work"
    );
    // Synced wall time adds the sync and the host's loop, never less than the work.
    assert!(
        synced >= 0.98 * work && synced < 1.5 * work,
        "synced wall time {synced} ns per call for {work} ns of work"
    );
    // Criterion's wall clock stops when the launches return: the queue's time.
    assert!(
        queued < 0.1 * work,
        "criterion's wall clock saw {queued} ns per call: it should see the queue"
    );
}

#[test]
fn iter_custom_brackets_the_calls_it_is_given() {
    let _serial = serial();
    let dev = simulated();
    let m = DeviceTime::on(dev).unwrap();
    let ns = m.time(|| {
        for _ in 0..5 {
            dev.launch(WORK);
        }
    });
    let work = 5.0 * WORK.as_nanos() as f64;
    assert!(
        (ns / work - 1.0).abs() < 0.05,
        "{ns} ns for {work} ns of work"
    );
    let wall = SyncedWallTime::on(dev).time(|| dev.launch(WORK));
    assert!(wall >= 0.98 * WORK.as_nanos() as f64, "{wall} ns");
}

#[test]
fn the_cpu_has_no_device_timer_and_says_what_to_use() {
    let err = DeviceTime::new(tch::Device::Cpu)
        .err()
        .expect("no timer on the CPU");
    assert!(err.contains("SyncedWallTime"), "{err}");
}
