//! The matmul of `matmul.rs` as a criterion bench, timed with gpubench-core's
//! `DeviceTime` (CUDA events around the calls, bracketed by syncs) on a GPU and
//! `SyncedWallTime` on the CPU: what a criterion user gets by changing one line of
//! their config. Criterion's default wall clock would stop when the last matmul was
//! queued, not when it ran.
//!
//! ```sh
//! cargo bench -p gpubench-examples --bench criterion_matmul
//! ```

use criterion::measurement::Measurement;
use criterion::Criterion;
use gpubench_core::criterion::{DeviceTime, SyncedWallTime};
use tch::{Device, Kind, Tensor};

/// The square matmuls, f32 and bf16, `n` × `n`.
fn matmuls<M: Measurement + 'static>(c: &mut Criterion<M>, device: Device) {
    // The sizes of matmul.rs: large on a GPU, a sixteenth on the CPU.
    let n: i64 = if device.is_cuda() { 4096 } else { 256 };
    for (name, kind) in [("matmul_f32", Kind::Float), ("matmul_bf16", Kind::BFloat16)] {
        let x = Tensor::randn([n, n], (kind, device));
        let y = Tensor::randn([n, n], (kind, device));
        c.bench_function(&format!("{name}/{n}"), |b| b.iter(|| x.matmul(&y)));
    }
}

fn main() {
    gpubench_core::cuda_loader::ensure_loaded();
    let device = if tch::Cuda::is_available() {
        Device::Cuda(0)
    } else {
        Device::Cpu
    };
    match DeviceTime::new(device) {
        Ok(m) => matmuls(
            &mut Criterion::default()
                .with_measurement(m)
                .configure_from_args(),
            device,
        ),
        // The CPU has no device events: synced wall time is its truth.
        Err(_) => matmuls(
            &mut Criterion::default()
                .with_measurement(SyncedWallTime::new(device))
                .configure_from_args(),
            device,
        ),
    }
    Criterion::default().configure_from_args().final_summary();
}
