//! Calibration of the verdict rule on synthetic samples with per-process noise, at the
//! numbers of processes `cargo gpubench` runs: how often identical code is called
//! regressed or improved, how often a planted 5% slowdown is caught, the smallest
//! change caught in 95% of comparisons, how often a run's interval holds the next
//! run's figure, and how long summarising and comparing a large run takes. Run with
//! `cargo bench -p gpubench-analysis --bench calibration`; it exits non-zero when a
//! target is missed.
//!
//! Coverage is reported rather than a target. When a benchmark's processes land in one
//! of two modes, a run whose processes all saw one mode has a narrow interval that the
//! next run (which sees both) misses, and when the host drifts between runs the next
//! run moves as a whole; no rule on one run's processes can know either, so the
//! intervals of host-bound work carry a floor (±25%) that covers most of it but not
//! all. Such benchmarks are flagged unstable whenever a run sees both modes, and get
//! no verdict on their eager time below five processes a side.
//!
//! The noise models come from the H200 (`docs/gpu-runs/processes/`): a device-bound
//! bf16 matmul's process medians spread by 1.0% (standard deviation) over 12 processes,
//! and device-bound figures moved by up to ±1.8% between runs; an add of 1M floats and
//! a stream of variable-length requests spread by 13–15% between processes, and their
//! runs drifted by about 15% more, every process of a run alike; causal attention at
//! sequence 128 sat at 17 µs in 9 of 12 processes and at 23–28 µs in 3; and the issue
//! that started this measured modes 1.7× apart in about half the processes. Each side
//! of a comparison is one run: its processes share a run-level shift
//! (`Model::run_sigma`) on top of their own.

use std::process::ExitCode;
use std::time::Instant;

use gpubench_analysis::baseline::{compare_with_baseline, BaselineCompareOptions, BaselineEntry};
use gpubench_analysis::compare::{compare_processes, CompareConfig, Verdict, SPREAD_MULTIPLE};
use gpubench_analysis::processes::ProcessStats;
use gpubench_analysis::processes::{
    Bound, ProcessPolicy as RoundPolicy, RoundDecision, RUN_FLOOR_DEVICE, RUN_FLOOR_HOST,
};
use gpubench_analysis::stats::BootstrapConfig;
use gpubench_analysis::summary::BenchmarkSummary;
use gpubench_analysis::synthetic::{GpuLikeSamples, ProcessShift};
use rand::SeedableRng;
use rand_pcg::Pcg64Mcg;

const TRIALS: u64 = 2000;
const MAX_FALSE_VERDICTS: f64 = 0.01;
const MIN_DETECTION: f64 = 0.95;
const MIN_COVERAGE: f64 = 0.90;
/// Samples per process: a 10 ms sample target and the minimum of 10 samples.
const SAMPLES: usize = 15;

struct Model {
    name: &'static str,
    samples: GpuLikeSamples,
    /// What the benchmark's time rests on, for the round policy and the rule.
    bound: Bound,
    /// Standard deviation of the log of a run-level shift all processes of a run share.
    run_sigma: f64,
}

fn models() -> Vec<Model> {
    let base = GpuLikeSamples::default();
    let model = |name, shift, bound, run_sigma| Model {
        name,
        samples: base.with_shift(shift),
        bound,
        run_sigma,
    };
    vec![
        model("i.i.d. (no shift)", ProcessShift::None, Bound::Device, 0.0),
        model(
            "device-bound, 1% between",
            ProcessShift::LogNormal { sigma: 0.010 },
            Bound::Device,
            0.0,
        ),
        model(
            "device-bound, +0.5% run drift",
            ProcessShift::LogNormal { sigma: 0.0075 },
            Bound::Device,
            0.005,
        ),
        model(
            "launch-bound, 14% between",
            ProcessShift::LogNormal { sigma: 0.14 },
            Bound::Host,
            0.0,
        ),
        model(
            "launch-bound, +15% run drift",
            ProcessShift::LogNormal { sigma: 0.14 },
            Bound::Host,
            0.15,
        ),
        model(
            "launch-bound, 1.5x modes 25%",
            ProcessShift::Modes {
                slow_factor: 1.5,
                slow_share: 0.25,
                sigma: 0.03,
            },
            Bound::Host,
            0.0,
        ),
        model(
            "launch-bound, 1.7x modes 50%",
            ProcessShift::Modes {
                slow_factor: 1.7,
                slow_share: 0.5,
                sigma: 0.02,
            },
            Bound::Host,
            0.0,
        ),
    ]
}

/// One side of a comparison: processes drawn one at a time until `policy` stops.
fn draw_side(model: &Model, factor: f64, policy: &Sizing, rng: &mut Pcg64Mcg) -> Vec<Vec<f64>> {
    // One run: every process shares its shift.
    let run = (model.run_sigma * standard_normal(rng)).exp();
    let samples = model.samples.scaled(factor * run);
    match policy {
        Sizing::Fixed(n) => samples.draw_processes(*n, SAMPLES, rng),
        Sizing::Policy(p) => {
            let mut groups: Vec<Vec<f64>> = Vec::new();
            loop {
                groups.extend(samples.draw_processes(1, SAMPLES, rng));
                let stats = ProcessStats::from_groups(&groups);
                match p.decide(
                    groups.len() as u32,
                    &stats,
                    model.bound == Bound::Host,
                    false,
                ) {
                    RoundDecision::Another => {}
                    RoundDecision::Done => return groups,
                }
            }
        }
    }
}

enum Sizing {
    Fixed(usize),
    Policy(RoundPolicy),
}

impl Sizing {
    fn label(&self) -> String {
        match self {
            Sizing::Fixed(n) => format!("{n}"),
            Sizing::Policy(_) => "policy".to_string(),
        }
    }
}

/// Verdict shares (regressed, no change, ambiguous, improved) of `TRIALS`
/// comparisons of the model against itself scaled by `factor`, and the mean number of
/// processes per side.
fn rates(
    model: &Model,
    factor: f64,
    sizing: &Sizing,
    cfg: &CompareConfig,
    seed: u64,
) -> ([f64; 4], f64) {
    let mut rng = Pcg64Mcg::seed_from_u64(seed);
    let mut counts = [0usize; 4];
    let mut processes = 0usize;
    for _ in 0..TRIALS {
        let a = draw_side(model, 1.0, sizing, &mut rng);
        let b = draw_side(model, factor, sizing, &mut rng);
        processes += a.len() + b.len();
        let verdict = compare_processes(&a, &b, model.bound, cfg)
            .expect("synthetic samples are valid")
            .verdict;
        counts[match verdict {
            Verdict::Regressed => 0,
            Verdict::NoChange => 1,
            Verdict::Ambiguous => 2,
            Verdict::Improved => 3,
        }] += 1;
    }
    (
        counts.map(|c| c as f64 / TRIALS as f64),
        processes as f64 / (2 * TRIALS) as f64,
    )
}

/// The smallest slowdown (of 1%, 2%, … 100%) called regressed in ≥ 95% of
/// comparisons.
fn smallest_detected(
    model: &Model,
    sizing: &Sizing,
    cfg: &CompareConfig,
    seed: u64,
) -> Option<f64> {
    let caught = |pct: u32| {
        let (r, _) = rates(
            model,
            1.0 + pct as f64 / 100.0,
            sizing,
            cfg,
            seed ^ u64::from(pct),
        );
        r[0] >= MIN_DETECTION
    };
    // Detection grows with the change; bisect over whole percents.
    let (mut lo, mut hi) = (0u32, 100u32);
    if !caught(hi) {
        return None;
    }
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        if caught(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Some(hi as f64 / 100.0)
}

/// The share of pairs of runs in which the second run's estimate lies inside the
/// first run's interval.
fn coverage(model: &Model, sizing: &Sizing, seed: u64) -> f64 {
    let mut rng = Pcg64Mcg::seed_from_u64(seed);
    let mut inside = 0;
    for _ in 0..TRIALS {
        let a = draw_side(model, 1.0, sizing, &mut rng);
        let b = draw_side(model, 1.0, sizing, &mut rng);
        let cfg = BootstrapConfig::default();
        let floor = model.bound.run_floor();
        let (ea, _) = ProcessStats::from_groups(&a)
            .estimate(&a[0], cfg, floor)
            .unwrap();
        let (eb, _) = ProcessStats::from_groups(&b)
            .estimate(&b[0], cfg, floor)
            .unwrap();
        if ea.contains(eb.point) {
            inside += 1;
        }
    }
    inside as f64 / TRIALS as f64
}

/// A standard normal draw (Box–Muller).
fn standard_normal(rng: &mut Pcg64Mcg) -> f64 {
    use rand::Rng;
    let u1 = 1.0 - rng.gen::<f64>();
    let u2 = rng.gen::<f64>();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

fn pct(x: f64) -> String {
    format!("{:5.1}%", 100.0 * x)
}

fn main() -> ExitCode {
    // `cargo test --all-targets` runs bench targets without `--bench`, unoptimised:
    // the calibration is a measurement to run on purpose, not a test.
    if !std::env::args().any(|a| a == "--bench") {
        println!(
            "calibration: skipped; run `cargo bench -p gpubench-analysis --bench calibration`"
        );
        return ExitCode::SUCCESS;
    }
    let explore = std::env::args().any(|a| a == "--explore");
    let cfg = CompareConfig::default();
    let policy = RoundPolicy::standard();
    println!(
        "calibration: {TRIALS} comparisons per row, {SAMPLES} samples per process (1% noise, \
         2% of samples 1.3-2x slower) plus each model's shift between processes"
    );
    println!(
        "rule: {:.0}% interval of the change, one-sided significance {}, threshold the larger \
         of {}% and {} x the spread between processes",
        cfg.confidence * 100.0,
        cfg.significance,
        cfg.noise_threshold * 100.0,
        cfg.spread_multiple,
    );
    println!(
        "policy: {} processes; device-bound ones up to {} while the interval is wider than \
         ±{}%. Host-bound: noise threshold at least {}%; interval floors ±{}% (device), \
         ±{}% (host)",
        policy.min,
        policy.max,
        policy.target_rel_ci * 100.0,
        cfg.host_noise_threshold * 100.0,
        RUN_FLOOR_DEVICE * 100.0,
        RUN_FLOOR_HOST * 100.0,
    );
    println!();
    println!(
        "{:<30} {:>13} {:>6} | {:>9} {:>9} | {:>10} | {:>9} {:>8}",
        "noise model",
        "processes",
        "mean",
        "false reg",
        "false imp",
        "5% caught",
        "min found",
        "coverage"
    );
    let mut ok = true;
    let started = Instant::now();
    // The policy's rows are the targets; fixed numbers of processes show what each
    // costs and buys.
    let sizings = [
        Sizing::Policy(policy),
        Sizing::Fixed(3),
        Sizing::Fixed(4),
        Sizing::Fixed(5),
    ];
    let multiples: &[f64] = if explore {
        &[1.0, SPREAD_MULTIPLE, 2.0]
    } else {
        &[SPREAD_MULTIPLE]
    };
    for &multiple in multiples {
        let cfg = CompareConfig {
            spread_multiple: multiple,
            ..cfg
        };
        if explore {
            println!("-- spread multiple {multiple}");
        }
        for (m, model) in models().iter().enumerate() {
            for (k, sizing) in sizings.iter().enumerate() {
                let seed = (m as u64) << 16 | (k as u64) << 8;
                let (same, mean_n) = rates(model, 1.0, sizing, &cfg, seed);
                let (slow, _) = rates(model, 1.05, sizing, &cfg, seed | 1);
                let found = smallest_detected(model, sizing, &cfg, seed | 2);
                let cover = coverage(model, sizing, seed | 3);
                let policy_row = matches!(sizing, Sizing::Policy(_));
                let false_ok = same[0] + same[3] <= MAX_FALSE_VERDICTS;
                let detect_ok = model.bound == Bound::Host || slow[0] >= MIN_DETECTION;
                let pass = false_ok && detect_ok;
                if policy_row && multiple == SPREAD_MULTIPLE {
                    ok &= pass;
                }
                println!(
                    "{:<30} {:>13} {:>6.1} | {:>9} {:>9} | {:>10} | {:>9} {:>8}  {}",
                    model.name,
                    sizing.label(),
                    mean_n,
                    pct(same[0]),
                    pct(same[3]),
                    pct(slow[0]),
                    found.map_or("> 100%".to_string(), |f| format!("{:.0}%", f * 100.0)),
                    pct(cover),
                    match (policy_row, pass, cover >= MIN_COVERAGE) {
                        (false, _, _) => "",
                        (true, true, true) => "ok",
                        // Coverage is reported, not a target: see the module docs.
                        (true, true, false) => "ok (coverage below 90%: see the docs)",
                        (true, false, _) => "MISSED TARGET",
                    }
                );
            }
        }
    }
    println!(
        "targets (policy rows): identical → regressed or improved ≤ {}; device-bound 5% \
         slower → regressed ≥ {}. Reported: the smallest slowdown caught in 95% of \
         comparisons, and the share of runs whose figure lies inside another run's interval \
         (aim {}) ({:.1} s)",
        pct(MAX_FALSE_VERDICTS).trim(),
        pct(MIN_DETECTION).trim(),
        pct(MIN_COVERAGE).trim(),
        started.elapsed().as_secs_f64()
    );

    // Throughput of the analysis: 500 benchmarks of 5 processes of 10 samples.
    let model = GpuLikeSamples::default().with_shift(ProcessShift::LogNormal { sigma: 0.01 });
    let mut rng = Pcg64Mcg::seed_from_u64(500);
    let ids: Vec<String> = (0..500)
        .map(|i| format!("bench_{}/{}", i / 10, i % 10))
        .collect();
    let baseline: Vec<BaselineEntry> = ids
        .iter()
        .map(|id| {
            BaselineEntry::from_record(&model.record_processes(
                id,
                "Synthetic GPU",
                5,
                10,
                &mut rng,
            ))
            .expect("synthetic records are measured")
        })
        .collect();
    let current: Vec<_> = ids
        .iter()
        .map(|id| model.record_processes(id, "Synthetic GPU", 5, 10, &mut rng))
        .collect();
    let t0 = Instant::now();
    let summaries: Vec<BenchmarkSummary> =
        current.iter().map(BenchmarkSummary::from_record).collect();
    let t_summary = t0.elapsed();
    let t1 = Instant::now();
    let set = compare_with_baseline(&current, &baseline, &BaselineCompareOptions::default())
        .expect("same device");
    let t_compare = t1.elapsed();
    let counts = set.counts();
    println!();
    println!(
        "500 benchmarks x 5 processes x 10 samples: summaries {:.2} s, comparisons {:.2} s, \
         total {:.2} s ({} summaries; {} no change, {} ambiguous, {} regressed, {} improved)",
        t_summary.as_secs_f64(),
        t_compare.as_secs_f64(),
        (t_summary + t_compare).as_secs_f64(),
        summaries.len(),
        counts.no_change,
        counts.ambiguous,
        counts.regressed,
        counts.improved,
    );
    if ok {
        ExitCode::SUCCESS
    } else {
        eprintln!("calibration: a target was missed");
        ExitCode::FAILURE
    }
}
