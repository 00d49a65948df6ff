//! Records for the report tests: a run that covers every verdict, a failure, an
//! eager-versus-compiled comparison and a hostile benchmark id, compared with a
//! baseline through the real comparison code of `gpubench-analysis`.
#![allow(dead_code)]

use cargo_gpubench::testing::output::html::{ReportBenchmark, ReportInput};
use gpubench_analysis::synthetic::SyntheticKernels;
use gpubench_analysis::{compare_with_baseline, BaselineCompareOptions, BaselineEntry};
use gpubench_record::eager_compiled::{
    CallTiming, CompileCost, EagerCompiled, EagerCompiledFlag, OutputAgreement, RequestTiming,
    ShapeAgreement, ShapeCost, SteadyState, VariantInfo, VariantKind,
};
use gpubench_record::estimate::Estimate;
use gpubench_record::failure::{Failure, FailureKind};
use gpubench_record::measurement::{Flag, RunMode, Sample, StopReason, Throughput};
use gpubench_record::record::{DeviceIdentity, Fingerprint, RawRecord};
use gpubench_record::testing::{memory, sample, RecordBuilder};
use rand::SeedableRng;

/// A benchmark id that is also an XSS attempt.
pub const HOSTILE_ID: &str = "<script>alert(1)</script>";
/// A cold-call label that is also an XSS attempt (it lands in an SVG).
pub const HOSTILE_LABEL: &str = "<img src=x onerror=alert(2)>";
/// The failed benchmark.
pub const FAILED_ID: &str = "attention/seq_65536";
/// The eager-versus-compiled benchmark.
pub const COMPARISON_ID: &str = "mlp/eager_vs_compiled";
/// The launch-bound benchmark with kernel time, counters and a kernel table.
pub const KERNELS_ID: &str = "elementwise/tiny";

/// A deterministic generator, so fixtures (and therefore verdicts) never change.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn uniform(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
    pub fn normal(&mut self) -> f64 {
        let u1 = 1.0 - self.uniform();
        let u2 = self.uniform();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }
}

/// How to make a passed record.
#[derive(Clone)]
pub struct Spec {
    pub id: String,
    pub device_name: String,
    /// Steady device time per iteration, ns.
    pub device_ns: f64,
    /// Host-dispatch time as a fraction of device time.
    pub host_ratio: f64,
    /// Relative noise.
    pub noise: f64,
    pub samples: usize,
    /// Relative drift from the first to the last sample.
    pub drift: f64,
    pub seed: u64,
    pub throughput: Option<Throughput>,
    pub flags: Vec<Flag>,
    /// Processes measured.
    pub processes: usize,
    /// Relative spread of the processes' medians.
    pub process_spread: f64,
}

impl Spec {
    pub fn new(id: &str, device_ns: f64, seed: u64) -> Self {
        Spec {
            id: id.into(),
            device_name: "NVIDIA H200".into(),
            device_ns,
            host_ratio: 0.3,
            noise: 0.008,
            samples: 40,
            drift: 0.0,
            seed,
            throughput: None,
            flags: vec![Flag::DeviceBound],
            processes: 3,
            process_spread: 0.004,
        }
    }
    pub fn scaled(&self, factor: f64, seed: u64) -> Self {
        Spec {
            device_ns: self.device_ns * factor,
            seed,
            ..self.clone()
        }
    }
}

pub fn fingerprint(device_name: &str) -> Fingerprint {
    Fingerprint {
        device: DeviceIdentity {
            kind: "cuda".into(),
            index: Some(0),
            name: device_name.into(),
            total_memory_bytes: Some(150_110_011_392),
        },
        cuda_version: Some("12.8".into()),
        cudnn_version: Some("9.10.2".into()),
        libtorch_version: "2.11.0".into(),
        tch_version: "0.24.0".into(),
        gpubench_version: "0.1.0".into(),
        cpu_model: Some("Intel(R) Xeon(R) Platinum 8480+".into()),
        os: "linux x86_64".into(),
        git_commit: Some("3f2a9c81d0e4b6a7c5d2e1f0a9b8c7d6e5f4a3b2".into()),
        timestamp: "2026-11-29T14:02:11Z".into(),
        gpu: None,
    }
}

/// The record of `spec.processes` processes, each shifted as a whole by the process
/// spread.
pub fn record(spec: &Spec) -> RawRecord {
    let mut rng = Rng::new(spec.seed ^ 0x5eed);
    let mut r = one_process(spec, spec.seed, 1.0);
    for k in 1..spec.processes {
        let shift = (spec.process_spread * rng.normal()).exp();
        r.append_processes(one_process(spec, spec.seed + 100 * k as u64, shift))
            .unwrap();
    }
    r
}

fn one_process(spec: &Spec, seed: u64, shift: f64) -> RawRecord {
    let mut rng = Rng::new(seed);
    let iters = ((1e7 / spec.device_ns).ceil() as u64).max(1);
    let n = spec.samples;
    let samples: Vec<Sample> = (0..n)
        .map(|i| {
            let drift = 1.0 + spec.drift * i as f64 / n.max(2) as f64;
            let mut x = spec.device_ns * shift * drift * (spec.noise * rng.normal()).exp();
            if rng.uniform() < 0.03 {
                x *= 1.3;
            }
            let device = x * iters as f64;
            let host = device * spec.host_ratio * (0.02 * rng.normal()).exp();
            let wall = device.max(host) * 1.015 + 8_000.0;
            sample(iters, wall, host, Some(device))
        })
        .collect();
    let warmup = (0..8).map(|i| {
        let k = 1u64 << i.min(4);
        let wall = spec.device_ns * k as f64 * (1.0 + 12.0 * (-(i as f64) * 1.1).exp());
        (k, wall)
    });
    let mut r = RecordBuilder::passed(&spec.id)
        .fingerprint(fingerprint(&spec.device_name))
        .sync_cost(9_800.0)
        .cold(
            "first call",
            spec.device_ns * 180.0 + 2.5e8,
            spec.device_ns * 150.0 + 2.4e8,
            Some(spec.device_ns * 3.0),
        )
        .cold(
            "new shape [8, 4096]",
            spec.device_ns * 9.0,
            spec.device_ns * 4.0,
            None,
        )
        .warmup(warmup)
        .samples(samples)
        .naive(20, spec.device_ns * spec.host_ratio, spec.device_ns * 1.01)
        .memory(memory(3 << 29, 2 << 30, 0, 2 << 30))
        .flags(&spec.flags)
        .device_timer(true);
    if let Some(throughput) = spec.throughput {
        r = r.throughput(throughput);
    }
    r.build()
}

pub fn failed(id: &str) -> RawRecord {
    // The message set directly, not capped by `Failure::new`, so it is exactly this.
    let mut failure = Failure::new(FailureKind::OutOfMemory, "");
    failure.message = "CUDA out of memory. Tried to allocate 64.00 GiB (GPU 0; 139.81 GiB total \
                       capacity; 121.40 GiB already allocated; <b>not bold</b> & reserved)\n\
                       while running attention at seq_len=65536"
        .into();
    let mut at_failure = memory(121 << 30, 130 << 30, 121 << 30, 130 << 30);
    at_failure.alloc_retries = 2;
    at_failure.num_ooms = 1;
    failure.memory_at_failure = Some(at_failure);
    RecordBuilder::from(one_process(&Spec::new(id, 1e6, 99), 99, 1.0))
        .failure(failure)
        .build()
}

/// The run: (current spec, baseline factor) pairs plus the special cases.
fn specs() -> Vec<(Spec, Option<f64>)> {
    let mut matmul = Spec::new("matmul_bf16/4096", 165_000.0, 1);
    matmul.throughput = Some(Throughput::Flops(2.0 * 4096f64.powi(3)));
    matmul.drift = 0.02;
    let mut softmax = Spec::new("softmax/8192", 48_000.0, 2);
    softmax.throughput = Some(Throughput::Bytes(2.0 * 4096.0 * 4096.0 * 2.0));
    let layernorm = Spec::new("layernorm/4096", 22_000.0, 3);
    let mut noisy = Spec::new("conv2d/resnet_block", 1.2e6, 4);
    noisy.noise = 0.09;
    noisy.samples = 12;
    noisy.process_spread = 0.05;
    noisy.flags = vec![Flag::Unstable];
    let mut tiny = Spec::new(KERNELS_ID, 6_000.0, 5);
    tiny.host_ratio = 1.6;
    tiny.flags = vec![Flag::LaunchBound];
    let mut mlp = Spec::new(COMPARISON_ID, 950_000.0, 6);
    mlp.flags = vec![];
    let hostile = Spec::new(HOSTILE_ID, 80_000.0, 7);
    vec![
        (matmul, Some(1.0 / 1.08)),
        (softmax, Some(1.0 / 0.86)),
        (layernorm, Some(1.0)),
        (noisy, Some(0.98)),
        (tiny, Some(1.0)),
        (mlp, Some(1.0)),
        (hostile, None),
    ]
}

/// Current records, the baseline's entries, in the run's order.
pub fn run_and_baseline() -> (Vec<RawRecord>, Vec<BaselineEntry>) {
    let mut current = Vec::new();
    let mut baseline = Vec::new();
    for (spec, factor) in specs() {
        let mut r = record(&spec);
        if spec.id == HOSTILE_ID {
            r.arg = Some("<b>arg</b>".into());
            let m = r.processes[0].measurement.as_mut().unwrap();
            m.cold[1].label = HOSTILE_LABEL.into();
        }
        if spec.id == COMPARISON_ID {
            r.processes[0].eager_compiled = Some(eager_vs_compiled());
        }
        // The launch-bound benchmark measured its kernels: now one more per call and
        // its add 12% slower than in the baseline.
        let kernels = (spec.id == KERNELS_ID).then(|| {
            SyntheticKernels::one("vectorized_elementwise_kernel<add>", 2_300.0)
                .with_kernel("elementwise_kernel<mul>", 1_100.0)
        });
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(spec.seed);
        if let Some(k) = &kernels {
            let now = SyntheticKernels {
                kernels: vec![
                    (k.kernels[0].0.clone(), k.kernels[0].1 * 1.12),
                    k.kernels[1].clone(),
                ],
                model: k.model.scaled(1.08),
                ..k.clone()
            }
            .with_kernel("fill_kernel<float>", 700.0);
            now.attach(&mut r, &mut rng);
        }
        current.push(r);
        if let Some(f) = factor {
            let mut b = record(&spec.scaled(f, spec.seed + 1000));
            if let Some(k) = &kernels {
                k.attach(&mut b, &mut rng);
            }
            baseline.push(BaselineEntry::from_record(&b).unwrap());
        }
    }
    // Failed now, measured in the baseline.
    current.insert(3, failed(FAILED_ID));
    baseline.push(BaselineEntry::from_record(&record(&Spec::new(FAILED_ID, 2e6, 8))).unwrap());
    // A smoke run cannot be compared.
    let mut smoke = one_process(&Spec::new("embedding/lookup", 30_000.0, 9), 9, 1.0);
    smoke.config.mode = RunMode::Smoke;
    let m = smoke.processes[0].measurement.as_mut().unwrap();
    m.samples.truncate(1);
    m.stop_reason = StopReason::Smoke;
    baseline.push(
        BaselineEntry::from_record(&record(&Spec::new("embedding/lookup", 30_000.0, 10))).unwrap(),
    );
    current.push(smoke);
    // In the baseline only.
    baseline.push(BaselineEntry::from_record(&record(&Spec::new("retired/op", 1e5, 11))).unwrap());
    (current, baseline)
}

/// The demo run compared with baseline `main`.
pub fn demo_input() -> ReportInput {
    let (current, entries) = run_and_baseline();
    let set = compare_with_baseline(&current, &entries, &BaselineCompareOptions::default())
        .expect("same device on both sides");
    let mut input =
        ReportInput::new("examples workspace", current).with_baseline("main", &entries, &set);
    input.generated_at = Some("2026-11-29 14:05 UTC".into());
    input
}

/// `n` passed benchmarks compared with a baseline, for timing the renderer.
pub fn large_input(n: usize) -> ReportInput {
    let mut current = Vec::with_capacity(n);
    let mut entries = Vec::with_capacity(n);
    for i in 0..n {
        let mut spec = Spec::new(
            &format!("op_{:03}/size_{}", i, 1 << (i % 12)),
            20_000.0 + 5_000.0 * (i % 40) as f64,
            i as u64,
        );
        spec.samples = 100;
        spec.throughput = Some(Throughput::Flops(1e10));
        current.push(record(&spec));
        let factor = [1.0, 0.95, 1.06][i % 3];
        entries.push(
            BaselineEntry::from_record(&record(&spec.scaled(factor, i as u64 + 7000))).unwrap(),
        );
    }
    let set =
        compare_with_baseline(&current, &entries, &BaselineCompareOptions::default()).unwrap();
    ReportInput::new("200 benchmarks", current).with_baseline("main", &entries, &set)
}

/// The same run without a baseline.
pub fn unbaselined_input() -> ReportInput {
    let (current, _) = run_and_baseline();
    ReportInput {
        benchmarks: current.into_iter().map(ReportBenchmark::new).collect(),
        ..ReportInput::new("no baseline", Vec::new())
    }
}

/// A TorchScript trace against eager over a stream of 16 requests at 5 shapes: 1.37×
/// faster in steady state, re-specialising at every new shape, and disagreeing at one.
pub fn eager_vs_compiled() -> EagerCompiled {
    let shapes = [
        "[1, 128] f32",
        "[1, 128] f32",
        "[4, 128] f32",
        "[4, 128] f32",
        "[4, 128] f32",
        "[16, 128] f32",
        "[1, 128] f32",
        "[16, 128] f32",
        "[64, 128] f32",
        "[64, 128] f32",
        "[4, 128] f32",
        "[64, 128] f32",
        "[1, 256] f32",
        "[1, 256] f32",
        "[16, 128] f32",
        "[64, 128] f32",
    ];
    let mut rng = Rng::new(42);
    let mut seen: Vec<&str> = Vec::new();
    let call = |ns: f64| CallTiming {
        wall_ns: ns * 1.02,
        host_ns: ns * 0.25,
        device_ns: Some(ns),
    };
    let requests: Vec<RequestTiming> = shapes
        .iter()
        .enumerate()
        .map(|(i, &shape)| {
            let cold = !seen.contains(&shape);
            if cold {
                seen.push(shape);
            }
            let rows: f64 = shape[1..].split(',').next().unwrap().parse().unwrap();
            let base = 0.9e6 + rows * 0.02e6;
            let eager = base * (1.0 + 0.02 * rng.normal()) * if cold { 6.0 } else { 1.0 };
            let compiled =
                base * 0.72 * (1.0 + 0.02 * rng.normal()) * if cold { 140.0 } else { 1.0 };
            RequestTiming {
                index: i,
                shape: shape.into(),
                cold,
                eager: call(eager),
                compiled: Some(call(compiled)),
            }
        })
        .collect();
    let agreement = seen
        .iter()
        .map(|&shape| {
            let ok = shape != "[1, 256] f32";
            ShapeAgreement {
                shape: shape.into(),
                requests: requests
                    .iter()
                    .filter(|r| r.shape == shape)
                    .map(|r| r.index)
                    .collect(),
                agrees: ok,
                mismatch: None,
                outputs: vec![OutputAgreement {
                    index: 0,
                    eager_shape: vec![1, 128],
                    compiled_shape: vec![1, 128],
                    eager_dtype: "f32".into(),
                    compiled_dtype: "f32".into(),
                    max_abs_diff: Some(if ok { 3.1e-7 } else { 0.012 }),
                    max_rel_diff: Some(if ok { 2.2e-6 } else { 0.04 }),
                    rtol: 1e-5,
                    atol: 1e-6,
                    allclose: ok,
                    eager_non_finite: 0,
                    compiled_non_finite: 0,
                    non_finite_mismatch: 0,
                    reference: None,
                }],
                eager_repeat_max_abs_diff: 0.0,
                eager_repeat_identical: true,
                eager_repeat_agrees: true,
            }
        })
        .collect();
    let shape_costs = seen
        .iter()
        .map(|&shape| {
            let at: Vec<&RequestTiming> = requests.iter().filter(|r| r.shape == shape).collect();
            let warm = |f: &dyn Fn(&RequestTiming) -> f64| {
                at.iter().skip(1).map(|r| f(r)).sum::<f64>() / (at.len() - 1).max(1) as f64
            };
            ShapeCost {
                shape: shape.into(),
                requests: at.len(),
                warm_calls: 5,
                eager_cold_ns: at[0].eager.primary_ns(),
                eager_warm_ns: warm(&|r| r.eager.primary_ns()),
                compiled_cold_ns: at[0].compiled.map(|c| c.primary_ns()),
                compiled_warm_ns: Some(warm(&|r| r.compiled.unwrap().primary_ns())),
                respecialised: true,
            }
        })
        .collect();
    let steady = |ns: f64, rng: &mut Rng| {
        let wall = ns * 10.2 * (1.0 + 0.01 * rng.normal());
        let device = ns * 10.0 * (1.0 + 0.01 * rng.normal());
        sample(10, wall, ns * 2.5, Some(device))
    };
    let eager_samples: Vec<Sample> = (0..30).map(|_| steady(1.1e6, &mut rng)).collect();
    let compiled_samples: Vec<Sample> = (0..30).map(|_| steady(0.8e6, &mut rng)).collect();
    EagerCompiled {
        eager: VariantInfo::new("eager", VariantKind::Eager),
        compiled: VariantInfo {
            build_ns: Some(1.9e9),
            ..VariantInfo::new("traced", VariantKind::TorchscriptTrace)
        },
        device_timer: true,
        requests,
        shape_costs,
        agreement,
        steady: Some(SteadyState {
            passes_per_sample: 10,
            requests: 16,
            eager: eager_samples,
            compiled: compiled_samples,
            speedup: Estimate {
                point: 1.37,
                lower: 1.31,
                upper: 1.43,
                confidence: 0.95,
            },
            eager_ns_per_call: 1.1e6,
            compiled_ns_per_call: 0.8e6,
            stop_reason: StopReason::Converged,
        }),
        compile_cost: Some(CompileCost {
            build_ns: 1.9e9,
            first_call_excess_ns: 1.2e8,
            new_shape_excess_ns: 4.9e8,
            total_ns: 2.51e9,
            saving_ns_per_call: 3.0e5,
            break_even_calls: Some(8367),
            expected_calls: 16,
        }),
        flags: vec![
            EagerCompiledFlag::OutputsDisagree { shapes: 1, of: 5 },
            EagerCompiledFlag::RespecialisesPerShape { shapes: 4, of: 4 },
            EagerCompiledFlag::NotWorthCompiling {
                break_even_calls: Some(8367),
                expected_calls: 16,
            },
        ],
    }
}
