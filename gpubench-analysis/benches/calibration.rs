//! Calibration of the verdict rule on synthetic samples with per-process noise, at the
//! numbers of processes `cargo gpubench` runs: how often identical code is called
//! regressed or improved, how often a planted 5% slowdown is caught, the smallest
//! change caught in 95% of comparisons, how often a run's interval holds the next
//! run's figure, and how long summarising and comparing a large run takes; then the
//! same for the paired rule of `cargo gpubench ab` (below). Run with
//! `cargo bench -p gpubench-analysis --features testing --bench calibration`; it exits
//! non-zero when a target is missed.
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
//! that started this measured modes 1.7× apart in about half the processes. On the CPU
//! device (a 2-core machine beside other engineers' builds, one intra-op thread) a
//! matmul's process medians spread by 3–7% in most runs and 20–30% in some, and its
//! runs moved by 6–10%, every process of a run alike; those runs were contended,
//! which `compare_cpu_processes` never calls regressed or improved, so its
//! "contended" rows catch no slowdown (12 busier runs spanned 4.1×,
//! `docs/cpu-runs/busy-drift.tar.gz`: such work is `ab`'s to judge). On a 2-core
//! machine whose processes were not contended (36 runs of a 256² f32 matmul, one
//! thread, 3 to 6 processes each; `scripts/cpu-drift --judge`) its process medians
//! spread by 2.2% and its runs moved by 1.4% more, every process of a run alike: the
//! quiet CPU model, judged on the CPU's ±10%. Each side
//! of a comparison is one run: its processes share a run-level shift
//! (`Model::run_sigma`) on top of their own.
//!
//! # Paired (`cargo gpubench ab`)
//!
//! `ab` measures base and head in the same process, their samples alternated in
//! balanced blocks, and judges the per-process `ln(head / base)` with
//! `compare_paired`, on the paired noise threshold (±1%) or 1.5 × the ratios' sd,
//! whichever is larger. The model is that figure itself: the true change plus
//! `N(0, sd²)` plus a per-process order bias, one draw per process. Each row gives,
//! on identical code, the verdicts, the share of the "no change" ones that were
//! certain but under the threshold (`certain`) and the median smallest change a
//! comparison could have detected (`detectable`, as the outputs show it); then the
//! shares of a 5%, a 3% and a 1.75% slowdown called regressed, and the smallest
//! slowdown called regressed in 95% (in tenths of a percent), under `ab`'s default
//! policy (5 processes, then another while the change's 90% interval is wider than
//! ±1%, up to 10), under a run's (3..6, ±3%), a fixed 5, and a few changed defaults
//! (other processes, paired noise thresholds of 2%, 0.5%, 0.25% and 0, a smaller
//! spread multiple), so that a target the defaults miss comes with what would meet
//! it. The sources, all on the H200:
//!
//! * host-bound, sd 1.5%: `ab` itself on the add of 1M floats (`launch/add_1m`),
//!   20 runs of 5–8 processes (`docs/gpu-runs/ab/`): the root mean square of the
//!   runs' sd of the per-process ratio (SDPA/128 read 1.0%, the request stream
//!   1.4%). Before `ab` existed, two copies of one tch `cdylib` doing that add,
//!   loaded into one process and alternated in balanced order, read copy B against
//!   copy A at +0.6% (sd 1.1%), and with +350 ns of host work per call +6.4% (sd
//!   1.0%); PyTorch agreed (two code paths alternated: sd 0.7%, a planted ≈ 5% at
//!   +6.8%, sd 1.1%).
//! * host-bound, sd 2.9%: PyTorch's SDPA at sequence 128 with +900 ns per call read
//!   +6.1% (sd 2.9%) in that pilot, the noisiest paired figure measured; `ab` read it
//!   at 1.0%. Kept as the bad case: its false verdicts gate.
//! * device-bound, sd 0.3%: `ab` on the bf16 8192³ matmul, the same 20 runs (4096³
//!   and the MLP step read 0.3% too). Unpaired, large matmuls' process medians spread
//!   by 1.0% and runs moved by up to ±1.8%; paired, both sides share the process's
//!   clocks.
//! * device-bound, sd 0.1% and 0.3%, launch-bound, sd 0.5% and 1%, each "+ order":
//!   the range of paired A/A noise in later `ab` runs (90% intervals over 5
//!   processes within ±0.3% on device-bound work, ±0.3–1.4% on launch-bound; 0
//!   false verdicts in 30 paired time and 30 kernel-time comparisons of unchanged
//!   code), each with what balancing leaves of the order effect (below). The
//!   1.75% slowdown is the MLP training step with a 3% larger batch, which `ab` read
//!   at +1.73% to +1.77% (intervals ±0.02–0.04%) in 4 of 4 runs and, on the ±2% of
//!   separate processes, called no change.
//! * the order effect: an identical 8192² matmul sampled right after a different
//!   kernel read 0.4–1.3% slower, in 6 of 6 processes. In `ab`'s blocks (`x y y x`)
//!   each side has one sample right after the other's and one right after its own, so
//!   the effect weighs on both alike and cancels; the measured models carry none
//!   (what is left of it is inside the measured spreads, which were taken in
//!   balanced order). The "+ order" models carry a quarter of it, 0.1–0.33% drawn
//!   per process and always against the head: a bias more processes do not average
//!   away, which only the noise threshold keeps from a verdict. One row shows the
//!   8192³ model with the head always sampled right after the base, a per-process
//!   bias drawn from 0.4–1.3%, for what balancing buys.
//!
//! The targets: identical code called regressed or improved in ≤ 1%; on launch-bound
//! work, identical code called "no change" (not "ambiguous") in ≥ 80% and a 5%
//! host-side cost called regressed in ≥ 95%; on device-bound work, a 3% and a 1.75%
//! slowdown called regressed in ≥ 95%. The rows of `ab`'s default policy gate the
//! exit code: all of the add's, the 8192³ matmul's and the device-bound "+ order"
//! models' targets; the launch-bound "+ order" models' false verdicts and 5% (their
//! "no change" share is reported: with ratios spread by 1% and 5 processes, the
//! interval's ±0.95% and the order bias reach the 1.5% threshold in about a quarter
//! of comparisons, which are then ambiguous, never a verdict; a sixth process or
//! the old ±2% lifts it past 80%, the latter at the cost of the 1.75% change); only
//! the false verdicts of the SDPA/128 pilot. The pilot's other
//! targets are reported, not gated, because no default short of 20 processes
//! without the spread term reaches them: its threshold grows
//! with the ratios' spread (1.5 × 2.9% ≈ 4.4%), so a 5% change sits at the threshold
//! and is caught in under a third of comparisons under every policy tried up to 10
//! processes; and the 80% is a share of a suite's launch-bound benchmarks, of which
//! it is the noisiest measured. A rate met within two standard errors of chance is
//! flagged, since another seed could turn it.
//!
//! The paired noise threshold (`ab`'s policy): at ±2% (what pairing used before it
//! had its own) the 1.75% slowdown is caught in under 4% of comparisons on every
//! device-bound model; at ±1% in over 99%, with false verdicts in at most 0.42% of
//! comparisons on any model (the SDPA/128 pilot; 0.07% or none on the "+ order"
//! models); at ±0.5% the launch-bound sd 0.5% model is "no change" in 59% and the
//! device-bound sd 0.3% "+ order" one in 62%; at ±0.25% and below the order bias
//! alone is called regressed in 1.1–1.9% of comparisons, at 0 in up to 30%. The
//! `unbalanced` row shows what balancing buys: at ±1% the full order effect is
//! called regressed in 1.3%.

use std::process::ExitCode;
use std::time::Instant;

use gpubench_analysis::baseline::{compare_with_baseline, BaselineCompareOptions, BaselineEntry};
use gpubench_analysis::compare::{
    compare_cpu_processes, compare_processes, CompareConfig, Contention, Verdict, SPREAD_MULTIPLE,
};
use gpubench_analysis::processes::{
    Bound, ProcessDecision, RUN_FLOOR_CPU, RUN_FLOOR_DEVICE, RUN_FLOOR_HOST,
};
use gpubench_analysis::processes::{DecideProcesses, ProcessStats};
use gpubench_analysis::stats::BootstrapConfig;
use gpubench_analysis::summary::BenchmarkSummary;
use gpubench_analysis::synthetic::{GpuLikeSamples, ProcessShift};
use gpubench_record::measurement::ProcessPolicy;
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
    /// What the benchmark's time rests on, for the process policy and the rule.
    bound: Bound,
    /// Standard deviation of the log of a run-level shift all processes of a run share.
    run_sigma: f64,
    /// Work on the CPU device whose processes ran on a host that could not serve
    /// their threads: judged by `compare_cpu_processes` as contended.
    contended: bool,
}

fn models() -> Vec<Model> {
    let base = GpuLikeSamples::default();
    let model = |name, shift, bound, run_sigma| Model {
        name,
        samples: base.with_shift(shift),
        bound,
        run_sigma,
        contended: false,
    };
    let contended = |name, sigma, run_sigma| Model {
        contended: true,
        ..model(
            name,
            ProcessShift::LogNormal { sigma },
            Bound::Cpu,
            run_sigma,
        )
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
        model(
            "CPU, quiet, 2.2% +1.4% drift",
            ProcessShift::LogNormal { sigma: 0.022 },
            Bound::Cpu,
            0.014,
        ),
        model(
            "CPU, quiet, 3% +3% drift",
            ProcessShift::LogNormal { sigma: 0.03 },
            Bound::Cpu,
            0.03,
        ),
        contended("CPU, contended, 5% +10% drift", 0.05, 0.10),
        contended("CPU, contended, 25% +10% drift", 0.25, 0.10),
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
                    ProcessDecision::Another => {}
                    ProcessDecision::Done => return groups,
                }
            }
        }
    }
}

enum Sizing {
    Fixed(usize),
    Policy(ProcessPolicy),
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
        let compared = match model.bound {
            Bound::Cpu => compare_cpu_processes(&a, &b, Contention::both(model.contended), cfg),
            bound => compare_processes(&a, &b, bound, cfg),
        };
        let verdict = compared.expect("synthetic samples are valid").verdict;
        counts[verdict_index(verdict)] += 1;
    }
    (
        counts.map(|c| c as f64 / TRIALS as f64),
        processes as f64 / (2 * TRIALS) as f64,
    )
}

/// The slot of `verdict` in the rate arrays: regressed, no change, ambiguous, improved.
fn verdict_index(verdict: Verdict) -> usize {
    match verdict {
        Verdict::Regressed => 0,
        Verdict::NoChange => 1,
        Verdict::Ambiguous => 2,
        Verdict::Improved => 3,
    }
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
        let floor = if model.contended {
            RUN_FLOOR_HOST
        } else {
            model.bound.run_floor()
        };
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

/// `cargo gpubench ab`: the paired rule ([`compare_paired`]) on per-process log ratios,
/// under the process policy `ab` runs; the module docs of the bench name the sources.
mod paired {
    use gpubench_analysis::compare::{compare_paired, CompareConfig, Comparison};
    use gpubench_analysis::processes::Bound;
    use gpubench_record::measurement::ProcessPolicy;
    use rand::{Rng, SeedableRng};
    use rand_pcg::Pcg64Mcg;

    use super::{pct, standard_normal, verdict_index, MAX_FALSE_VERDICTS, MIN_DETECTION};

    /// Comparisons per row. A paired comparison costs microseconds, and the standard
    /// policy's false-verdict rates lie near the 1% target, where 2000 comparisons
    /// would leave ±0.2% of chance in them (±0.1% here).
    const TRIALS: u64 = 10_000;
    /// Least share of identical launch-bound code that `ab` must call "no change".
    const MIN_NO_CHANGE_HOST: f64 = 0.80;
    /// The slowdown of launch-bound work that must be caught: the host-side cost
    /// planted on the H200 (+350 ns on an add of 1M floats, about 5%).
    const HOST_CHANGE: f64 = 0.05;
    /// The slowdown of device-bound work that must be caught.
    const DEVICE_CHANGE: f64 = 0.03;
    /// The smaller slowdown of device-bound work that must be caught: an MLP training
    /// step with a 3% larger batch read +1.73% to +1.77% in 4 of 4 `ab` runs on the
    /// H200, which a ±2% threshold called no change.
    const DEVICE_SMALL_CHANGE: f64 = 0.0175;
    /// An identical 8192² matmul sampled right after a different kernel read 0.4–1.3%
    /// slower, in 6 of 6 processes on the H200.
    const ORDER_EFFECT: (f64, f64) = (0.004, 0.013);
    /// What balanced blocks leave of [`ORDER_EFFECT`], taken as a quarter of it and
    /// always against the head: a per-process bias that more processes do not average
    /// away, so only the noise threshold keeps it from a verdict.
    const ORDER_RESIDUAL: (f64, f64) = (ORDER_EFFECT.0 / 4.0, ORDER_EFFECT.1 / 4.0);

    /// Which of a model's targets decide the exit code.
    #[derive(Clone, Copy, PartialEq)]
    enum Gate {
        /// All of them: the spread was measured, on the work the target names.
        All,
        /// Only false verdicts, which must be rare on any benchmark; the others are
        /// reported (see the bench's module docs for why).
        FalseVerdicts,
        /// False verdicts and the change to catch; the share of identical code
        /// called "no change" rather than "ambiguous" is reported (see the bench's
        /// module docs for why).
        Verdicts,
        /// The model has no targets: it shows what a design choice buys.
        NoTargets,
    }

    /// A paired noise model: a process's `ln(head / base)` is the true change plus
    /// `N(0, sd²)`, plus a per-process order bias.
    #[derive(Clone, Copy)]
    struct Model {
        name: &'static str,
        /// The name in the summary lines.
        short: &'static str,
        /// What the benchmark's time rests on: which targets apply.
        bound: Bound,
        /// Standard deviation of a process's log ratio across processes.
        sd: f64,
        gate: Gate,
        /// The range a process's order bias is drawn from, uniformly: none where the
        /// measured spread holds it; [`ORDER_RESIDUAL`] for what balanced blocks
        /// (`x y y x`) leave of it, each side having one sample after the other's and
        /// one after its own in every block; [`ORDER_EFFECT`] with the head always
        /// sampled right after the base's kernel (blocks not balanced).
        order: (f64, f64),
    }

    impl Model {
        /// One process's `ln(head / base)` when the true log change is `log_change`.
        fn draw(&self, log_change: f64, rng: &mut Pcg64Mcg) -> f64 {
            let (lo, hi) = self.order;
            let bias = if hi > 0.0 {
                lo + (hi - lo) * rng.gen::<f64>()
            } else {
                0.0
            };
            log_change + bias + self.sd * standard_normal(rng)
        }
    }

    fn models() -> Vec<Model> {
        let device = Model {
            name: "device-bound, sd 0.3% (matmul 8192³)",
            short: "matmul 8192³",
            bound: Bound::Device,
            sd: 0.0033,
            gate: Gate::All,
            order: (0.0, 0.0),
        };
        // The ranges of paired A/A noise on the H200, with what balancing leaves of
        // the order effect.
        let residual = |name, short, bound, sd| Model {
            name,
            short,
            bound,
            sd,
            gate: match bound {
                Bound::Host => Gate::Verdicts,
                _ => Gate::All,
            },
            order: ORDER_RESIDUAL,
        };
        vec![
            Model {
                name: "host-bound, sd 1.5% (add)",
                short: "add",
                bound: Bound::Host,
                sd: 0.0153,
                gate: Gate::All,
                order: (0.0, 0.0),
            },
            Model {
                name: "host-bound, sd 2.9% (SDPA/128, pilot)",
                short: "SDPA/128 (pilot)",
                bound: Bound::Host,
                sd: 0.029,
                gate: Gate::FalseVerdicts,
                ..device
            },
            device,
            Model {
                name: "  the same, order unbalanced",
                short: "unbalanced",
                gate: Gate::NoTargets,
                order: ORDER_EFFECT,
                ..device
            },
            residual(
                "device-bound, sd 0.1% + order",
                "device 0.1%",
                Bound::Device,
                0.001,
            ),
            residual(
                "device-bound, sd 0.3% + order",
                "device 0.3%",
                Bound::Device,
                0.003,
            ),
            residual(
                "launch-bound, sd 0.5% + order",
                "launch 0.5%",
                Bound::Host,
                0.005,
            ),
            residual(
                "launch-bound, sd 1% + order",
                "launch 1%",
                Bound::Host,
                0.01,
            ),
        ]
    }

    /// One way to run `ab`: the rule's settings and the policy of processes.
    struct Setting {
        label: &'static str,
        cfg: CompareConfig,
        policy: ProcessPolicy,
    }

    /// `ab`'s default first ([`ProcessPolicy::paired`], whose rows gate), then the
    /// standard policy of a run and a fixed 5 for comparison, then changed defaults,
    /// to show what would meet a target the defaults miss.
    fn settings() -> (Vec<Setting>, Vec<Setting>) {
        let cfg = CompareConfig::default();
        let setting = |label, cfg, policy| Setting { label, cfg, policy };
        let range = |min, max, target_rel_ci| ProcessPolicy {
            min,
            max,
            target_rel_ci,
        };
        let paired = |paired_noise_threshold| CompareConfig {
            paired_noise_threshold,
            ..cfg
        };
        let spread = |spread_multiple| CompareConfig {
            spread_multiple,
            ..cfg
        };
        let standard = ProcessPolicy::standard();
        (
            vec![
                setting("ab: 5..10 ±1%", cfg, ProcessPolicy::paired()),
                setting("run's 3..6 ±3%", cfg, standard),
                setting("fixed 5", cfg, ProcessPolicy::fixed(5)),
            ],
            vec![
                setting("fixed 6", cfg, ProcessPolicy::fixed(6)),
                setting("5..8 ±1%", cfg, range(5, 8, 0.01)),
                setting("5..12 ±1%", cfg, range(5, 12, 0.01)),
                setting("3..6 ±1%", cfg, range(3, 6, 0.01)),
                setting("paired 2% (old)", paired(0.02), ProcessPolicy::paired()),
                setting("paired 0.5%", paired(0.005), ProcessPolicy::paired()),
                setting("paired 0.25%", paired(0.0025), ProcessPolicy::paired()),
                setting("paired 0%", paired(0.0), ProcessPolicy::paired()),
                setting("spread x0.5, 16", spread(0.5), ProcessPolicy::fixed(16)),
                setting("spread x0, 20", spread(0.0), ProcessPolicy::fixed(20)),
            ],
        )
    }

    /// One `ab` comparison: processes added one at a time as `ab` adds them (always up
    /// to `policy.min`, then while the paired change's interval is wider than
    /// `±policy.target_rel_ci` and `policy.max` is not reached). Returns the
    /// comparison and the number of processes.
    fn trial(
        model: &Model,
        log_change: f64,
        setting: &Setting,
        rng: &mut Pcg64Mcg,
    ) -> (Comparison, usize) {
        let policy = &setting.policy;
        let mut ratios = Vec::new();
        loop {
            ratios.push(model.draw(log_change, rng));
            if ratios.len() < policy.min as usize {
                continue;
            }
            let c = compare_paired(&ratios, 1.0, log_change.exp(), &setting.cfg)
                .expect("synthetic ratios are finite");
            let half_width = (c.change.upper - c.change.lower) / 2.0;
            if ratios.len() >= policy.max as usize || half_width <= policy.target_rel_ci {
                let n = ratios.len();
                return (c, n);
            }
        }
    }

    /// What `TRIALS` `ab` comparisons whose head is `factor` × the base found.
    struct Rates {
        /// Verdict shares: regressed, no change, ambiguous, improved.
        shares: [f64; 4],
        /// The mean number of processes.
        mean_n: f64,
        /// The median of the smallest change each comparison could have detected
        /// ([`Comparison::detectable`]).
        detectable: f64,
        /// The share of no-change verdicts whose change was certain but under the
        /// threshold ([`Comparison::certain_under_threshold`]).
        certain_under: f64,
    }

    fn rates(model: &Model, factor: f64, setting: &Setting, seed: u64) -> Rates {
        let mut rng = Pcg64Mcg::seed_from_u64(seed);
        let mut counts = [0usize; 4];
        let mut processes = 0;
        let mut detectable = Vec::new();
        let mut certain_under = 0usize;
        for _ in 0..TRIALS {
            let (c, n) = trial(model, factor.ln(), setting, &mut rng);
            processes += n;
            counts[verdict_index(c.verdict)] += 1;
            detectable.extend(c.detectable);
            certain_under += usize::from(c.certain_under_threshold);
        }
        detectable.sort_by(f64::total_cmp);
        Rates {
            shares: counts.map(|c| c as f64 / TRIALS as f64),
            mean_n: processes as f64 / TRIALS as f64,
            detectable: detectable
                .get(detectable.len() / 2)
                .copied()
                .unwrap_or(f64::NAN),
            certain_under: certain_under as f64 / counts[1].max(1) as f64,
        }
    }

    /// The smallest slowdown, in tenths of a percent up to 100%, that `ab` calls
    /// regressed in ≥ 95% of comparisons: paired changes worth finding are a few
    /// percent, finer than the unpaired table's whole-percent steps.
    fn smallest_detected(model: &Model, setting: &Setting, seed: u64) -> Option<f64> {
        let caught = |tenths: u32| {
            let factor = 1.0 + f64::from(tenths) / 1000.0;
            let r = rates(model, factor, setting, seed ^ u64::from(tenths) << 4);
            r.shares[0] >= MIN_DETECTION
        };
        // Detection grows with the change; bisect.
        let (mut lo, mut hi) = (0u32, 1000u32);
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
        Some(f64::from(hi) / 1000.0)
    }

    /// What one setting found for one model.
    struct Row {
        /// Verdict shares on identical code.
        same: [f64; 4],
        /// Mean processes on identical code.
        mean_n: f64,
        /// The median smallest change detectable, and the share of no-change
        /// verdicts that were certain but under the threshold, on identical code.
        detectable: f64,
        certain_under: f64,
        /// Shares of a 5%, a 3% and a 1.75% slowdown called regressed.
        caught_5: f64,
        caught_3: f64,
        caught_small: f64,
        /// Smallest slowdown caught in ≥ 95%.
        found: Option<f64>,
    }

    impl Row {
        fn measure(model: &Model, setting: &Setting, seed: u64) -> Self {
            let same = rates(model, 1.0, setting, seed);
            let slow_5 = rates(model, 1.0 + HOST_CHANGE, setting, seed | 1);
            let slow_3 = rates(model, 1.0 + DEVICE_CHANGE, setting, seed | 2);
            let slow_small = rates(model, 1.0 + DEVICE_SMALL_CHANGE, setting, seed | 4);
            Row {
                same: same.shares,
                mean_n: same.mean_n,
                detectable: same.detectable,
                certain_under: same.certain_under,
                caught_5: slow_5.shares[0],
                caught_3: slow_3.shares[0],
                caught_small: slow_small.shares[0],
                found: smallest_detected(model, setting, seed | 3),
            }
        }

        /// The targets of `model`'s kind of work, as this row meets them.
        fn checks(&self, model: &Model) -> Vec<Check> {
            if model.gate == Gate::NoTargets {
                return Vec::new();
            }
            let gates = model.gate == Gate::All;
            let caught_gates = gates || model.gate == Gate::Verdicts;
            let mut checks = vec![Check::at_most(
                "false",
                self.same[0] + self.same[3],
                MAX_FALSE_VERDICTS,
                model.gate != Gate::NoTargets,
            )];
            match model.bound {
                Bound::Host => {
                    checks.push(Check::at_least(
                        "no change",
                        self.same[1],
                        MIN_NO_CHANGE_HOST,
                        gates,
                    ));
                    checks.push(Check::at_least(
                        "5% caught",
                        self.caught_5,
                        MIN_DETECTION,
                        caught_gates,
                    ));
                }
                // No paired model runs on the CPU device; its work would be judged as
                // device-bound work is.
                Bound::Device | Bound::Cpu => {
                    checks.push(Check::at_least(
                        "3% caught",
                        self.caught_3,
                        MIN_DETECTION,
                        caught_gates,
                    ));
                    checks.push(Check::at_least(
                        "1.75% caught",
                        self.caught_small,
                        MIN_DETECTION,
                        caught_gates,
                    ));
                }
            }
            checks
        }
    }

    /// One target, as a row meets it.
    struct Check {
        /// `what got <op> target`, for the status.
        words: String,
        /// Whether a miss on a gating row fails the bench.
        gates: bool,
        met: bool,
        /// Whether the rate lies within two standard errors of chance of the target,
        /// so that another seed could turn a pass into a miss or back.
        near: bool,
    }

    impl Check {
        fn new(what: &str, got: f64, target: f64, gates: bool, met: bool) -> Self {
            let op = match (met, got < target) {
                (true, true) => "≤",
                (true, false) => "≥",
                (false, true) => "<",
                (false, false) => ">",
            };
            let se = (target * (1.0 - target) / TRIALS as f64).sqrt();
            Check {
                words: format!("{what} {} {op} {}", rate(got), rate(target)),
                gates,
                met,
                near: (got - target).abs() < 2.0 * se,
            }
        }

        fn at_most(what: &str, got: f64, target: f64, gates: bool) -> Self {
            Self::new(what, got, target, gates, got <= target)
        }

        fn at_least(what: &str, got: f64, target: f64, gates: bool) -> Self {
            Self::new(what, got, target, gates, got >= target)
        }
    }

    /// A share in percent, with two decimals where it is small (false verdicts).
    fn rate(x: f64) -> String {
        if x < 0.1 {
            format!("{:.2}%", 100.0 * x)
        } else {
            format!("{:.1}%", 100.0 * x)
        }
    }

    /// The words of `checks`, joined.
    fn words<'a>(checks: impl IntoIterator<Item = &'a Check>) -> String {
        checks
            .into_iter()
            .map(|c| c.words.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// A row's status: the targets missed (on the gating rows, whether they gate) and
    /// the ones met only within chance. Empty for a model without targets.
    fn status(checks: &[Check], gating: bool) -> String {
        if checks.is_empty() {
            return String::new();
        }
        let missed =
            |keep: &dyn Fn(&Check) -> bool| words(checks.iter().filter(|c| !c.met && keep(c)));
        let mut parts = Vec::new();
        if gating {
            let (hard, soft) = (missed(&|c| c.gates), missed(&|c| !c.gates));
            if !hard.is_empty() {
                parts.push(format!("MISSED TARGET: {hard}"));
            }
            if !soft.is_empty() {
                parts.push(format!("missed, not gated: {soft}"));
            }
        } else {
            let all = missed(&|_| true);
            if !all.is_empty() {
                parts.push(format!("missed: {all}"));
            }
        }
        let near = words(checks.iter().filter(|c| c.met && c.near));
        if !near.is_empty() {
            parts.push(format!("met within chance: {near}"));
        }
        if parts.is_empty() {
            "ok".to_string()
        } else {
            parts.join("; ")
        }
    }

    /// Prints the paired table and what it means for `ab`'s defaults; returns whether
    /// every gating target was met.
    pub fn calibrate() -> bool {
        let cfg = CompareConfig::default();
        let standard = ProcessPolicy::paired();
        println!(
            "ab (paired): {TRIALS} comparisons per row; a process's ln(head/base) is the true \
             change + N(0, sd²); verdict by compare_paired: {:.0}% interval, threshold the \
             larger of {}% (the paired noise threshold) and {} x the sd of the ratios. \
             Processes: ab's default is {}..{}, another while the change's interval is wider \
             than ±{}%; or a fixed number. On identical code, `certain` is the share of no \
             change verdicts that were certain but under the threshold and `detectable` the \
             median smallest change the comparison could have detected",
            cfg.confidence * 100.0,
            cfg.paired_noise_threshold * 100.0,
            cfg.spread_multiple,
            standard.min,
            standard.max,
            standard.target_rel_ci * 100.0,
        );
        let header = |first: &str| {
            println!();
            println!(
                "{:<32} {:>15} {:>5} | {:>9} {:>9} {:>9} {:>7} {:>10} | {:>9} {:>9} {:>9} | {:>9}",
                first,
                "processes",
                "mean",
                "false reg",
                "false imp",
                "no change",
                "certain",
                "detectable",
                "5% caught",
                "3% caught",
                "1.75%",
                "min found"
            )
        };
        let (defaults, what_ifs) = settings();
        let models = models();
        let mut ok = true;
        let mut default_misses = Vec::new();
        // Per setting, the models whose every target it meets.
        let mut meeting = Vec::new();
        for (k, setting) in defaults.iter().chain(&what_ifs).enumerate() {
            let what_if = k >= defaults.len();
            if k == 0 {
                header("default rule");
            } else if k == defaults.len() {
                header("changed defaults (what if)");
            }
            // The first row is what `ab` runs unless told otherwise.
            let gating = k == 0;
            let mut met = Vec::new();
            for (m, model) in models.iter().enumerate() {
                if what_if && model.gate == Gate::NoTargets {
                    continue;
                }
                let seed = 1 << 40 | (k as u64) << 24 | (m as u64) << 16;
                let row = Row::measure(model, setting, seed);
                let checks = row.checks(model);
                if gating {
                    ok &= checks.iter().all(|c| c.met || !c.gates);
                    let missed = words(checks.iter().filter(|c| !c.met));
                    if !missed.is_empty() {
                        default_misses.push(format!("{}: {missed}", model.short));
                    }
                }
                if !checks.is_empty() && checks.iter().all(|c| c.met) {
                    met.push(model.short);
                }
                println!(
                    "{:<32} {:>15} {:>5.1} | {:>9} {:>9} {:>9} {:>7} {:>10} | {:>9} {:>9} {:>9} | {:>9}  {}",
                    model.name,
                    setting.label,
                    row.mean_n,
                    rate(row.same[0]),
                    rate(row.same[3]),
                    pct(row.same[1]),
                    pct(row.certain_under),
                    format!("±{:.2}%", row.detectable * 100.0),
                    pct(row.caught_5),
                    pct(row.caught_3),
                    pct(row.caught_small),
                    row.found
                        .map_or("> 100%".to_string(), |f| format!("{:.1}%", f * 100.0)),
                    status(&checks, gating),
                );
            }
            meeting.push((setting.label, met));
        }
        println!();
        println!(
            "targets: identical → regressed or improved ≤ {}; launch-bound: identical → no \
             change ≥ {}, {:.0}% slower → regressed ≥ {}; device-bound: {:.0}% and {:.2}% \
             slower → regressed ≥ {}. Gated (exit code), on ab's default rows: all of the \
             add's, the matmul's and the device-bound + order models'; the launch-bound + \
             order models' but their no-change share; the SDPA/128 pilot's false verdicts",
            rate(MAX_FALSE_VERDICTS),
            rate(MIN_NO_CHANGE_HOST),
            HOST_CHANGE * 100.0,
            rate(MIN_DETECTION),
            DEVICE_CHANGE * 100.0,
            DEVICE_SMALL_CHANGE * 100.0,
            rate(MIN_DETECTION),
        );
        if default_misses.is_empty() {
            println!("ab's defaults meet every target");
        } else {
            println!("ab's defaults MISS: {}", default_misses.join("; "));
        }
        println!("every target met, per setting:");
        for (label, met) in &meeting {
            let met = if met.is_empty() {
                "none".to_string()
            } else {
                met.join(", ")
            };
            println!("  {label:>15}: {met}");
        }
        ok
    }
}

fn main() -> ExitCode {
    // `cargo test --all-targets` runs bench targets without `--bench`, unoptimised:
    // the calibration is a measurement to run on purpose, not a test.
    if !std::env::args().any(|a| a == "--bench") {
        println!(
            "calibration: skipped; run `cargo bench -p gpubench-analysis --features testing --bench calibration`"
        );
        return ExitCode::SUCCESS;
    }
    let explore = std::env::args().any(|a| a == "--explore");
    let cfg = CompareConfig::default();
    let policy = ProcessPolicy::standard();
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
         ±{}%. Noise threshold at least {}% host-bound (and contended CPU), {}% CPU; \
         interval floors ±{}% (device), ±{}% (CPU), ±{}% (host)",
        policy.min,
        policy.max,
        policy.target_rel_ci * 100.0,
        cfg.host_noise_threshold * 100.0,
        cfg.cpu_noise_threshold * 100.0,
        RUN_FLOOR_DEVICE * 100.0,
        RUN_FLOOR_CPU * 100.0,
        RUN_FLOOR_HOST * 100.0,
    );
    println!();
    println!(
        "{:<30} {:>13} {:>6} | {:>9} {:>9} | {:>10} {:>10} | {:>9} {:>8}",
        "noise model",
        "processes",
        "mean",
        "false reg",
        "false imp",
        "5% caught",
        "2x caught",
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
                let (doubled, _) = rates(model, 2.0, sizing, &cfg, seed | 4);
                let found = smallest_detected(model, sizing, &cfg, seed | 2);
                let cover = coverage(model, sizing, seed | 3);
                let policy_row = matches!(sizing, Sizing::Policy(_));
                let false_ok = same[0] + same[3] <= MAX_FALSE_VERDICTS;
                // Host-bound and contended work have no detection target: their
                // threshold is the host's ±50%, set by what moves between runs.
                let detect_ok = match model.bound {
                    Bound::Host => true,
                    Bound::Cpu if model.contended => true,
                    Bound::Device => slow[0] >= MIN_DETECTION,
                    Bound::Cpu => doubled[0] >= MIN_DETECTION,
                };
                let pass = false_ok && detect_ok;
                if policy_row && multiple == SPREAD_MULTIPLE {
                    ok &= pass;
                }
                println!(
                    "{:<30} {:>13} {:>6.1} | {:>9} {:>9} | {:>10} {:>10} | {:>9} {:>8}  {}",
                    model.name,
                    sizing.label(),
                    mean_n,
                    pct(same[0]),
                    pct(same[3]),
                    pct(slow[0]),
                    pct(doubled[0]),
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
         slower → regressed ≥ {}; on a quiet CPU 2x slower → regressed ≥ {}. Reported: \
         the smallest slowdown caught in 95% of comparisons, and the share of runs whose \
         figure lies inside another run's interval (aim {}) ({:.1} s)",
        pct(MAX_FALSE_VERDICTS).trim(),
        pct(MIN_DETECTION).trim(),
        pct(MIN_DETECTION).trim(),
        pct(MIN_COVERAGE).trim(),
        started.elapsed().as_secs_f64()
    );

    println!();
    ok &= paired::calibrate();

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
