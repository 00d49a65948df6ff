//! `cargo gpubench history` over 200 commits × 100 benchmarks, against its target of
//! 5 s: a repository whose every commit saves all 100 benchmarks (three processes
//! each, drawn from the H200 processes of the 17 benchmarks in
//! `docs/gpu-runs/processes/validation.tar.gz`), then the whole command as a user runs
//! it: git read, every file parsed, every series analysed, the table printed and the
//! history page drawn. Run with `cargo bench -p cargo-gpubench --bench history`; it
//! exits non-zero when the target is missed. `cargo test --all-targets` runs it without
//! `--bench` and unoptimised: then it is a smoke test over a small repository (the
//! command succeeds, the page is drawn), with no time target.

#[path = "../tests/history_fixture/mod.rs"]
mod history_fixture;

use std::process::Command;
use std::time::{Duration, Instant};

use history_fixture::{file_of, records, rng, write_repo, FixtureCommit, Noise};

const COMMITS: usize = 200;
const BENCHMARKS: usize = 100;
const TARGET: Duration = Duration::from_secs(5);

/// The repository's size and the timed runs: the benchmark's under `cargo bench`, a
/// small one under `cargo test`.
fn shape() -> (usize, usize, usize) {
    if std::env::args().any(|a| a == "--bench") {
        (COMMITS, BENCHMARKS, 3)
    } else {
        (12, 10, 1)
    }
}

fn main() {
    let (n_commits, n_benchmarks, runs) = shape();
    let measuring = runs > 1;
    let noise: Vec<Noise> = [
        "add_1m.json",
        "matmul_bf16_1024-65af41a9.json",
        "matmul_bf16_4096-b6c1f9d5.json",
        "matmul_bf16_8192-00e1772e.json",
        "matmul_f32_1024-35259459.json",
        "matmul_f32_4096-86392605.json",
        "matmul_f32_8192-5ae7b95e.json",
        "mlp_forward_batch_1024-6811cb61.json",
        "mlp_forward_batch_16384-724f5c9a.json",
        "mlp_forward_batch_256-0a4c283f.json",
        "mlp_forward_batch_4096-b952ec7d.json",
        "mlp_training_step.json",
        "request_stream.json",
        "scalar_readback.json",
        "sdpa_128-28aa07ff.json",
        "sdpa_512-150217f6.json",
    ]
    .iter()
    .map(|suffix| Noise::of(&records("processes/validation.tar.gz", suffix)))
    .collect();

    let tmp = tempfile::tempdir().expect("a temporary directory");
    let made = Instant::now();
    let mut rng = rng(7);
    let mut bytes = 0usize;
    let commits: Vec<FixtureCommit> = (0..n_commits)
        .map(|c| {
            let files: Vec<(String, Vec<u8>)> = (0..n_benchmarks)
                .map(|b| {
                    // Every tenth benchmark steps by 5% halfway.
                    let level = if b % 10 == 0 && c >= n_commits / 2 {
                        1.05
                    } else {
                        1.0
                    };
                    let id = format!("suite/bench_{b:03}");
                    file_of(&noise[b % noise.len()].entry(&id, level, &mut rng))
                })
                .collect();
            bytes += files.iter().map(|f| f.1.len()).sum::<usize>();
            FixtureCommit {
                subject: format!("change {c}"),
                files: Some(files),
            }
        })
        .collect();
    write_repo(tmp.path(), "gpubench/baselines/main", &commits);
    eprintln!(
        "fixture: {n_commits} commits × {n_benchmarks} benchmarks, {:.0} MB of baseline files, made in {:.1} s",
        bytes as f64 / 1e6,
        made.elapsed().as_secs_f64()
    );

    // Where the time goes, through the library: git and parsing, the analysis, the page.
    {
        use cargo_gpubench::testing::store::history::{self, HistoryQuery, IdFilter};
        let start = Instant::now();
        let read = history::read(&HistoryQuery {
            repo_dir: tmp.path().to_path_buf(),
            baseline_dir: "gpubench/baselines/main".into(),
            rev: "HEAD".into(),
            since: None,
            max_commits: None,
        })
        .expect("the history reads");
        let t_read = start.elapsed();
        let start = Instant::now();
        let report = history::analyse(
            "main",
            read,
            &IdFilter::default(),
            &gpubench_analysis::history::HistoryOptions::default(),
        );
        let t_analyse = start.elapsed();
        let start = Instant::now();
        cargo_gpubench::testing::output::html::history::write(&report, &tmp.path().join("page"))
            .expect("the page is written");
        let t_page = start.elapsed();
        eprintln!(
            "phases: git read and parse {:.2} s, analysis {:.2} s, page {:.2} s",
            t_read.as_secs_f64(),
            t_analyse.as_secs_f64(),
            t_page.as_secs_f64()
        );
    }

    let exe = env!("CARGO_BIN_EXE_cargo-gpubench");
    let mut times = Vec::new();
    for _ in 0..runs {
        let start = Instant::now();
        let out = Command::new(exe)
            .current_dir(tmp.path())
            .args([
                "gpubench",
                "history",
                "--baselines-dir",
                "gpubench/baselines",
                "--out-dir",
                "out",
            ])
            .output()
            .expect("cargo-gpubench runs");
        let took = start.elapsed();
        assert!(
            out.status.success(),
            "history failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        let steps = stdout
            .lines()
            .filter(|l| l.contains("device time: +") || l.contains("wall time: +"))
            .count();
        eprintln!(
            "history: {:.2} s ({} rows with a step)",
            took.as_secs_f64(),
            steps
        );
        times.push(took);
    }
    if std::env::var_os("GPUBENCH_HISTORY_BENCH_KEEP").is_some() {
        eprintln!("fixture kept in {}", tmp.keep().display());
    }
    if !measuring {
        println!(
            "history: smoke run over {n_commits} commits × {n_benchmarks} benchmarks passed; \
             time it with `cargo bench -p cargo-gpubench --bench history`"
        );
        return;
    }
    times.sort();
    let median = times[times.len() / 2];
    println!(
        "history over {COMMITS} commits × {BENCHMARKS} benchmarks: median {:.2} s, max {:.2} s (target ≤ {} s)",
        median.as_secs_f64(),
        times[times.len() - 1].as_secs_f64(),
        TARGET.as_secs()
    );
    if median > TARGET {
        eprintln!("target missed");
        std::process::exit(1);
    }
}
