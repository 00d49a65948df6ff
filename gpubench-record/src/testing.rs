//! Records to test with, for this crate's tests and (with the `testing` feature) as a
//! dev-dependency of the crates that read records; not part of the contract.

mod builder;
pub use builder::{memory, sample, RecordBuilder, MEASURED_AT};

use crate::eager_compiled::*;
use crate::measurement::*;
use crate::record::*;

/// A fingerprint of an H200 with CUDA 13.0 and libtorch 2.11.0.
pub fn fingerprint() -> Fingerprint {
    Fingerprint {
        device: DeviceIdentity {
            kind: "cuda".into(),
            index: Some(0),
            name: "NVIDIA H200".into(),
            total_memory_bytes: Some(150_000_000_000),
        },
        cuda_version: Some("13.0".into()),
        cudnn_version: None,
        libtorch_version: "2.11.0".into(),
        tch_version: "0.24.0".into(),
        gpubench_version: "0.1.0".into(),
        cpu_model: Some("x86".into()),
        os: "linux x86_64".into(),
        git_commit: None,
        timestamp: "2026-11-29T00:00:00Z".into(),
        gpu: None,
    }
}

/// A converged, device-bound measurement of one sample of 4 calls whose device
/// time is `device_ns`, with one cold call, memory and a throughput.
pub fn measurement(device_ns: f64) -> Measurement {
    Measurement {
        sync_cost_ns: 5000.0,
        cold: vec![ColdCall {
            label: "first call".into(),
            wall_ns: 1e8,
            host_ns: 9e7,
            device_ns: None,
        }],
        warmup: vec![WarmupPoint {
            iters: 1,
            wall_ns: 2e6,
        }],
        throughput: Some(Throughput::Flops(1.37e11)),
        memory: Some(MemoryStats {
            peak_allocated_bytes: 1 << 30,
            peak_reserved_bytes: 1 << 31,
            allocated_bytes: 0,
            reserved_bytes: 1 << 31,
            alloc_retries: 0,
            num_ooms: 0,
            reserved_shared: false,
        }),
        flags: vec![Flag::DeviceBound],
        device_timer: true,
        ..Measurement::of_samples(vec![Sample {
            iters: 4,
            wall_ns: 4e6,
            host_ns: 1e5,
            device_ns: Some(device_ns),
            clock: None,
        }])
    }
}

/// A record of one process of `matmul/4096` measured as [`measurement`] with 3.9 ms.
pub fn sample_record() -> RawRecord {
    let mut process = ProcessRecord::first("2026-11-29T00:00:00Z".into());
    process.measurement = Some(measurement(3.9e6));
    RawRecord::new(
        "matmul/4096",
        "matmul",
        Some("4096".into()),
        fingerprint(),
        MeasurementConfig {
            max_samples: 100,
            ..MeasurementConfig::standard()
        },
        process,
    )
}

/// An eager-versus-compiled result of a traced model, with its flags, rows and costs.
pub fn sample_comparison() -> EagerCompiled {
    let timing = CallTiming {
        wall_ns: 2e6,
        host_ns: 1e5,
        device_ns: Some(1.9e6),
    };
    EagerCompiled {
        eager: VariantInfo::new("eager", VariantKind::Eager),
        compiled: VariantInfo {
            build_ns: Some(8e7),
            metadata: [("AOTI_DEVICE_KEY".to_string(), "cuda".to_string())].into(),
            exported_input_shapes: Some(vec![vec![Some(1), None, Some(256)]]),
            ..VariantInfo::new("aoti dynamic", VariantKind::AotiPackage)
        },
        device_timer: true,
        requests: vec![RequestTiming {
            index: 0,
            shape: "[1, 37, 256] f32".into(),
            cold: true,
            eager: timing,
            compiled: Some(timing),
        }],
        shape_costs: vec![],
        agreement: vec![ShapeAgreement {
            shape: "[1, 37, 256] f32".into(),
            requests: vec![0],
            agrees: false,
            mismatch: Some(
                "compiled returned [1, 8, 256] where eager returned [1, 37, 256]".into(),
            ),
            outputs: vec![],
            eager_repeat_max_abs_diff: 0.0,
            eager_repeat_identical: true,
            eager_repeat_agrees: true,
        }],
        steady: None,
        compile_cost: None,
        flags: vec![
            EagerCompiledFlag::OutputsDisagree { shapes: 1, of: 1 },
            EagerCompiledFlag::NotWorthCompiling {
                break_even_calls: None,
                expected_calls: 13,
            },
        ],
    }
}
