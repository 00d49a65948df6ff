//! Baselines end to end against a stand-in bench executable (`run --exe`): saving,
//! the default `main` comparison, `--fail-on` and exit codes, device mismatches,
//! corrupt files and bad names, the Markdown and JSON summaries, the stored
//! comparison, and `cargo gpubench compare` over what was stored. The stand-in hands
//! back records the test prepares (synthetic GPU-like samples, seeded), so every
//! verdict here is deterministic; `planted_slowdown.rs` does the same with real
//! benchmarks.
#![cfg(unix)]

use std::path::{Path, PathBuf};

use crate::support::{
    cargo_gpubench, latest_run, prepare_record, replay_stand_in, run, run_stand_in,
    synthetic_record as record, Ran, STAND_IN_EXE,
};
use cargo_gpubench::testing::compare::{RunComparison, BASELINE_COPY};
use gpubench_analysis::{BaselineStore, Verdict};
use gpubench_record::failure::FailureKind;
use gpubench_record::id::file_stem_for_id;
use gpubench_record::record::RawRecord;
use gpubench_record::testing::RecordBuilder;

const GPU: &str = "NVIDIA H200";

struct Bench {
    dir: tempfile::TempDir,
}

impl Bench {
    /// A stand-in executable `fake` with benchmarks `mm/64` and `conv` (1 ms each on
    /// an H200) and `panics` (fails).
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        replay_stand_in(dir.path(), &["conv", "mm/64", "panics"]);
        let b = Bench { dir };
        b.measure("mm/64", GPU, 1.0, 1);
        b.measure("conv", GPU, 1.0, 2);
        let failed = RecordBuilder::from(record("panics", GPU, 1.0, 3))
            .failed(FailureKind::Panic, "panicked at benches/fake.rs:9: boom")
            .build();
        b.prepare(&failed, true);
        b
    }

    /// What the next run measures for `id`: the model slowed by `factor` on `device`.
    fn measure(&self, id: &str, device: &str, factor: f64, seed: u64) {
        self.prepare(&record(id, device, factor, seed), false);
    }

    fn prepare(&self, record: &RawRecord, fails: bool) {
        prepare_record(&self.dir.path().join("bin"), record, fails);
    }

    fn work(&self) -> PathBuf {
        self.dir.path().join("work")
    }

    /// Where runs go by default with `--exe`.
    fn out_dir(&self) -> PathBuf {
        self.work().join("target/gpubench")
    }

    /// Where baselines go by default with `--exe`: `./gpubench/baselines`.
    fn baselines(&self) -> BaselineStore {
        BaselineStore::new(self.work().join("gpubench/baselines"))
    }

    /// `cargo-gpubench run --exe <fake> ARGS` in `work/`.
    fn run(&self, args: &[&str]) -> Ran {
        run(run_stand_in(self.dir.path()).args(args))
    }

    /// `cargo-gpubench compare ARGS` in `work/`.
    fn compare(&self, args: &[&str]) -> Ran {
        let mut cmd = cargo_gpubench();
        cmd.current_dir(self.work()).arg("compare").args(args);
        run(&mut cmd)
    }
}

/// The line of `text` that starts with `start`.
fn line<'a>(text: &'a str, start: &str) -> &'a str {
    text.lines()
        .find(|l| l.starts_with(start))
        .unwrap_or_else(|| panic!("no line starting with {start:?} in:\n{text}"))
}

#[test]
fn a_saved_main_baseline_is_compared_by_default_and_a_regression_exits_4() {
    let b = Bench::new();
    let ran = b
        .run(&["--save-baseline", "main", "mm", "conv"])
        .expect_code(0);
    assert!(
        ran.stderr
            .contains("saved baseline `main`: 2 benchmarks in"),
        "{}",
        ran.stderr
    );
    // One small pretty file per benchmark, at ./gpubench/baselines/main/ with --exe.
    let dir = b.work().join("gpubench/baselines/main");
    let mm_file = dir.join(format!("{}.json", file_stem_for_id("mm/64")));
    let saved = std::fs::read_to_string(&mm_file).unwrap();
    assert!(
        saved.starts_with("{\n  \"format_version\": 2,\n  \"id\": \"mm/64\""),
        "{saved}"
    );
    assert!(dir.join("conv.json").is_file());
    // Saving the same measurements again writes the same bytes.
    b.run(&["--save-baseline", "main", "mm", "conv"])
        .expect_code(0);
    assert_eq!(std::fs::read_to_string(&mm_file).unwrap(), saved);

    // Unchanged: compared with `main` by default, said so, and no regression.
    let ran = b.run(&["mm", "conv"]).expect_code(0);
    assert!(
        ran.stderr.contains("comparing with baseline `main`")
            && ran.stderr.contains("--no-baseline skips"),
        "{}",
        ran.stderr
    );
    let header = line(&ran.stdout, "benchmark");
    assert!(header.contains("change vs main"), "{}", ran.stdout);
    assert!(
        line(&ran.stdout, "fake/mm/64 ").contains("no change"),
        "{}",
        ran.stdout
    );
    assert!(
        ran.stdout
            .contains("compared with baseline `main` (the default"),
        "{}",
        ran.stdout
    );
    assert!(
        ran.stdout.contains(
            "no regression (--fail-on regressed --gate-on time,kernel,counters,memory,energy)"
        ),
        "{}",
        ran.stdout
    );

    // 30% slower: regressed, exit 4, and the stored comparison says so.
    b.measure("mm/64", GPU, 1.3, 4);
    let ran = b.run(&["mm", "conv"]).expect_code(4);
    let mm = line(&ran.stdout, "fake/mm/64 ");
    assert!(mm.contains("regressed") && mm.contains("+29.8%"), "{mm}");
    assert!(
        ran.stdout
            .contains("regression found (--fail-on regressed --gate-on time,kernel,counters,memory,energy): fake/mm/64 (time regressed) (exit code 4)"),
        "{}",
        ran.stdout
    );
    let run_dir = latest_run(&b.out_dir());
    let stored = RunComparison::read(&run_dir)
        .unwrap()
        .expect("comparison.json");
    assert!(stored.gate_tripped && stored.baseline.default);
    assert_eq!(
        stored.get("mm/64").unwrap().verdict(),
        Some(Verdict::Regressed)
    );
    assert_eq!(
        stored.get("conv").unwrap().verdict(),
        Some(Verdict::NoChange)
    );
    // The baseline it was judged against travels with the run.
    let copy = BaselineStore::new(&run_dir).load(BASELINE_COPY).unwrap();
    assert_eq!(copy, b.baselines().load("main").unwrap());

    // The gate decides the exit code; the verdict stays.
    let ran = b.run(&["--fail-on", "never", "mm", "conv"]).expect_code(0);
    assert!(line(&ran.stdout, "fake/mm/64 ").contains("regressed"));
    // A noise threshold above the change makes it no regression.
    b.run(&["--noise-threshold", "50%", "mm", "conv"])
        .expect_code(0);
    // --no-baseline skips the comparison altogether.
    let ran = b.run(&["--no-baseline", "mm", "conv"]).expect_code(0);
    assert!(!ran.stdout.contains("change vs"), "{}", ran.stdout);
    assert!(!ran.stderr.contains("comparing with"), "{}", ran.stderr);
    assert!(RunComparison::read(&latest_run(&b.out_dir()))
        .unwrap()
        .is_none());
}

#[test]
fn a_failed_benchmark_wins_over_a_regression_and_both_are_reported() {
    let b = Bench::new();
    b.run(&["--save-baseline", "main", "mm"]).expect_code(0);
    b.measure("mm/64", GPU, 1.5, 5);
    let ran = b
        .run(&["--format", "markdown", "mm", "panics"])
        .expect_code(1);
    let md = &ran.stdout;
    assert!(md.starts_with("### cargo gpubench: run `"), "{md}");
    assert!(
        md.contains("| `fake/mm/64` | 1.00") && md.contains("| **regressed** |"),
        "{md}"
    );
    assert!(
        md.contains("| `fake/panics` | — | — | — | — | failed |"),
        "{md}"
    );
    assert!(
        md.contains("- `fake/panics` (panic): panicked at benches/fake.rs:9: boom"),
        "{md}"
    );
    assert!(
        md.contains("**New** (not in the baseline): `fake/panics`"),
        "{md}"
    );
    assert!(
        md.contains("**Result: 1 benchmark failed** (exit code 1); a regression was also found: `fake/mm/64` (time regressed) (`--fail-on regressed --gate-on time,kernel,counters,memory,energy`)."),
        "{md}"
    );
}

#[test]
fn comparing_and_saving_in_one_run_compares_with_the_files_as_they_were() {
    let b = Bench::new();
    let dir = b.dir.path().join("elsewhere/baselines");
    let dir_arg = dir.to_str().unwrap();
    b.run(&["--baselines-dir", dir_arg, "--save-baseline", "main", "mm"])
        .expect_code(0);
    assert!(
        !b.work().join("gpubench").exists(),
        "--baselines-dir is where they go"
    );
    b.measure("mm/64", GPU, 1.5, 6);
    let ran = b
        .run(&[
            "--baselines-dir",
            dir_arg,
            "--baseline",
            "main",
            "--save-baseline",
            "main",
            "mm",
        ])
        .expect_code(4);
    assert!(
        line(&ran.stdout, "fake/mm/64 ").contains("regressed"),
        "{}",
        ran.stdout
    );
    assert!(
        ran.stderr.contains("saved baseline `main`"),
        "{}",
        ran.stderr
    );
    // The slower measurement is the baseline now, so measuring it again is no change.
    b.measure("mm/64", GPU, 1.5, 7);
    let ran = b.run(&["--baselines-dir", dir_arg, "mm"]).expect_code(0);
    assert!(
        line(&ran.stdout, "fake/mm/64 ").contains("no change"),
        "{}",
        ran.stdout
    );
    // GPUBENCH_BASELINES_DIR says the same as the option.
    let mut cmd = cargo_gpubench();
    cmd.current_dir(b.work())
        .env("LIBTORCH", b.dir.path().join("libtorch"))
        .env("GPUBENCH_BASELINES_DIR", &dir)
        .args(["run", "--exe"])
        .arg(b.dir.path().join("bin").join(STAND_IN_EXE))
        .args(["--", "mm"]);
    let ran = run(&mut cmd).expect_code(0);
    assert!(
        ran.stderr.contains("comparing with baseline `main`"),
        "{}",
        ran.stderr
    );
}

#[test]
fn a_baseline_from_another_device_is_not_compared_unless_allowed() {
    let b = Bench::new();
    b.measure("mm/64", "NVIDIA A100-SXM4-80GB", 1.0, 8);
    b.run(&["--save-baseline", "main", "mm"]).expect_code(0);
    b.measure("mm/64", GPU, 1.5, 9);

    // Not compared is missing evidence: the gate fails on it...
    let ran = b.run(&["mm"]).expect_code(4);
    let warning =
        "baseline `main` was recorded on `NVIDIA A100-SXM4-80GB` but this run is on `NVIDIA H200`";
    assert!(ran.stderr.contains(warning), "{}", ran.stderr);
    assert!(ran.stdout.contains(warning), "{}", ran.stdout);
    assert!(
        line(&ran.stdout, "fake/mm/64 ").contains("not compared"),
        "{}",
        ran.stdout
    );
    // ...unless it is allowed, or the gate only reports.
    b.run(&["--allow-missing", "not-compared", "mm"])
        .expect_code(0);
    b.run(&["--fail-on", "never", "mm"]).expect_code(0);
    // Asked for, it compares, and says it did.
    let ran = b.run(&["--allow-device-mismatch", "mm"]).expect_code(4);
    assert!(
        line(&ran.stdout, "fake/mm/64 ").contains("regressed"),
        "{}",
        ran.stdout
    );
    assert!(
        ran.stdout.contains("compared across devices"),
        "{}",
        ran.stdout
    );
}

#[test]
fn corrupt_newer_and_missing_baselines_stop_the_run_before_it_starts() {
    let b = Bench::new();
    b.run(&["--save-baseline", "main", "mm", "conv"])
        .expect_code(0);
    let file = b.work().join("gpubench/baselines/main/conv.json");
    let good = std::fs::read_to_string(&file).unwrap();
    let runs_before = std::fs::read_dir(b.out_dir().join("runs")).unwrap().count();

    std::fs::write(&file, &good[..good.len() / 3]).unwrap();
    let ran = b.run(&["mm"]).expect_code(2);
    assert!(
        ran.stderr
            .contains("failed to load baseline `main` to compare with")
            && ran
                .stderr
                .contains(&format!("failed to parse baseline file {}", file.display())),
        "{}",
        ran.stderr
    );
    assert!(ran.stderr.contains("--no-baseline skips"), "{}", ran.stderr);
    assert!(!ran.stderr.contains("panicked"), "{}", ran.stderr);

    std::fs::write(
        &file,
        good.replacen("\"format_version\": 2", "\"format_version\": 9", 1),
    )
    .unwrap();
    let ran = b.run(&["mm"]).expect_code(2);
    assert!(
        ran.stderr.contains(&format!(
            "baseline file {} has format_version 9",
            file.display()
        )) && ran.stderr.contains("upgrade cargo-gpubench"),
        "{}",
        ran.stderr
    );
    // Nothing ran for either.
    assert_eq!(
        std::fs::read_dir(b.out_dir().join("runs")).unwrap().count(),
        runs_before
    );
    // --no-baseline gets past it.
    b.run(&["--no-baseline", "mm"]).expect_code(0);

    let ran = b.run(&["--baseline", "nightly", "mm"]).expect_code(2);
    assert!(
        ran.stderr.contains("baseline `nightly` not found")
            && ran.stderr.contains("(saved baselines: main)"),
        "{}",
        ran.stderr
    );
    for bad in ["../escape", ".hidden", "a b"] {
        let ran = b.run(&["--save-baseline", bad, "mm"]).expect_code(2);
        assert!(
            ran.stderr
                .contains("a baseline name is 1 to 64 ASCII letters"),
            "{bad}: {}",
            ran.stderr
        );
    }
    assert!(!b.work().join("gpubench/escape").exists());

    // A baseline that cannot be written is a setup error, after the summary.
    let blocked = b.work().join("not-a-dir");
    std::fs::write(&blocked, "").unwrap();
    let ran = b
        .run(&[
            "--baselines-dir",
            blocked.to_str().unwrap(),
            "--save-baseline",
            "main",
            "mm",
        ])
        .expect_code(5);
    assert!(
        line(&ran.stdout, "fake/mm/64 ").ends_with("passed (device-bound)"),
        "{}",
        ran.stdout
    );
    assert!(
        ran.stderr
            .contains("error: failed to save baseline `main`: failed to create baseline directory"),
        "{}",
        ran.stderr
    );
}

#[test]
fn a_file_where_the_baseline_goes_is_refused_before_anything_runs_and_left_alone() {
    let b = Bench::new();
    let root = b.work().join("gpubench/baselines");
    std::fs::create_dir_all(&root).unwrap();
    let names = || -> Vec<String> {
        let mut n: Vec<String> = std::fs::read_dir(&root)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        n.sort();
        n
    };
    // Before: "Not a directory", exit 5, the baseline saved anyway and the file
    // moved to `.main.new-PID`.
    let main = root.join("main");
    std::fs::write(&main, "my notes").unwrap();
    let ran = b.run(&["--save-baseline", "main", "mm"]).expect_code(2);
    assert!(
        ran.stderr.contains(&format!(
            "error: failed to save baseline `main` (checked before any benchmark runs): {} is not a directory, so nothing can be saved into it: move it out of the way, or pick another name",
            main.display()
        )),
        "{}",
        ran.stderr
    );
    assert_eq!(std::fs::read_to_string(&main).unwrap(), "my notes");
    assert_eq!(names(), ["main"]);
    assert!(!b.out_dir().join("runs").exists(), "nothing ran");

    // A file an older version moved aside blocks the save, named.
    std::fs::rename(&main, root.join(".main.new-383")).unwrap();
    let ran = b.run(&["--save-baseline", "main", "mm"]).expect_code(2);
    assert!(
        ran.stderr.contains(&format!(
            "{} is in the way: it is not a directory",
            root.join(".main.new-383").display()
        )) && ran.stderr.contains("move it out of the way"),
        "{}",
        ran.stderr
    );
    assert_eq!(names(), [".main.new-383"]);
    assert!(!b.out_dir().join("runs").exists(), "nothing ran");

    // Moved out of the way, the save goes through.
    std::fs::remove_file(root.join(".main.new-383")).unwrap();
    b.run(&["--save-baseline", "main", "mm"]).expect_code(0);
    assert_eq!(names(), ["main"]);
}

#[test]
fn compare_reads_a_baseline_left_by_a_save_killed_between_its_renames() {
    let b = Bench::new();
    b.run(&["--save-baseline", "main", "mm", "conv"])
        .expect_code(0);
    let root = b.work().join("gpubench/baselines");
    // What the two-rename swap leaves when killed between its renames.
    std::fs::rename(root.join("main"), root.join(".main.old-383")).unwrap();
    // A run finds it...
    let ran = b.run(&["mm", "conv"]).expect_code(0);
    assert!(
        ran.stderr
            .contains("comparing with baseline `main` (2 benchmarks"),
        "{}",
        ran.stderr
    );
    // ...and so do compare, by name, by kind and by path.
    for reference in ["main", "baseline:main", "./gpubench/baselines/main"] {
        let ran = b.compare(&[reference, "latest"]).expect_code(0);
        assert!(
            line(&ran.stdout, "fake/mm/64 ").ends_with("no change"),
            "{reference}: {}",
            ran.stdout
        );
    }
}

#[test]
fn json_and_the_summary_file_carry_the_comparison_and_the_exit_verdict() {
    let b = Bench::new();
    b.run(&["--save-baseline", "main", "mm", "conv"])
        .expect_code(0);
    b.measure("mm/64", GPU, 1.3, 10);
    let ran = b
        .run(&[
            "--format",
            "json",
            "--summary-file",
            "ci/summary.md",
            "mm",
            "conv",
        ])
        .expect_code(4);
    let v: serde_json::Value = serde_json::from_str(&ran.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}", ran.stdout));
    assert_eq!(v["exit"]["code"], 4);
    assert_eq!(v["exit"]["verdict"], "regression_found");
    assert_eq!(v["comparison"]["baseline"]["name"], "main");
    assert_eq!(v["comparison"]["counts"]["regressed"], 1);
    assert_eq!(v["comparison"]["counts"]["no_change"], 1);
    assert_eq!(v["comparison"]["settings"]["fail_on"], "regressed");
    assert_eq!(
        v["comparison"]["settings"]["config"]["noise_threshold"],
        0.02
    );
    let mm = v["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["id"] == "mm/64")
        .unwrap();
    assert_eq!(mm["comparison"]["status"], "compared");
    assert_eq!(mm["comparison"]["comparison"]["verdict"], "regressed");
    assert!(
        mm["summary"]["device"]["estimate"]["point"]
            .as_f64()
            .unwrap()
            > 1.2e6
    );
    assert_eq!(mm["summary"]["device"]["processes"]["count"], 3);
    assert_eq!(mm["comparison"]["comparison"]["current_processes"], 3);
    assert!(v["run_id"].as_str().is_some());

    let md = std::fs::read_to_string(b.work().join("ci/summary.md")).unwrap();
    assert!(
        md.contains("| `fake/mm/64` |") && md.contains("**regressed**"),
        "{md}"
    );
    assert!(
        md.contains("**Result: regression found** (exit code 4)"),
        "{md}"
    );
}

#[test]
fn compare_judges_stored_baselines_and_runs_by_name() {
    let b = Bench::new();
    b.run(&["--save-baseline", "main", "mm", "conv"])
        .expect_code(0);
    let first = latest_run(&b.out_dir());
    b.measure("mm/64", GPU, 1.3, 11);
    b.run(&["--no-baseline", "--save-baseline", "pr-7", "mm", "conv"])
        .expect_code(0);
    let second = latest_run(&b.out_dir());
    let id = |p: &Path| p.file_name().unwrap().to_string_lossy().into_owned();

    // Two baselines: deterministic, so pinned.
    let ran = b
        .compare(&["main", "pr-7", "--format", "markdown"])
        .expect_code(4);
    insta::assert_snapshot!(ran.stdout, @"
    ### cargo gpubench: baseline `pr-7` against baseline `main`

    **Device:** NVIDIA H200 (`cuda:0`) · **Baseline:** `main` (NVIDIA H200) · **Gate:** `--fail-on regressed --gate-on time,kernel,counters,memory,energy`, significance 0.05, noise threshold ±2% (host-bound ±50%)

    | Benchmark | Baseline | Current | Change [90% CI] | Processes (pooled spread) | Verdict |
    | :-- | --: | --: | --: | --: | :-- |
    | `conv` | 1.003 ms | 1.003 ms | +0.0% [+0.0%, +0.0%] | 3 vs 3 (±0.0%) | no change |
    | `mm/64` | 1.002 ms | 1.301 ms | +29.8% [+29.8%, +29.8%] | 3 vs 3 (±0.0%) | **regressed** |

    **Verdicts:** 1 regressed, 1 no change.

    **Result: regression found** (exit code 4): `mm/64` (time regressed) (`--fail-on regressed --gate-on time,kernel,counters,memory,energy`).
    ");

    // A run against a baseline, by `latest`, by id and by path.
    let ran = b.compare(&["main", "latest"]).expect_code(4);
    assert!(
        ran.stdout
            .starts_with(&format!("comparing run `{}`", id(&second))),
        "{}",
        ran.stdout
    );
    assert!(
        line(&ran.stdout, "fake/mm/64 ").ends_with("regressed"),
        "{}",
        ran.stdout
    );
    assert!(
        line(&ran.stdout, "fake/conv ").ends_with("no change"),
        "{}",
        ran.stdout
    );
    b.compare(&[&format!("run:{}", id(&first)), &id(&second)])
        .expect_code(4);
    b.compare(&[
        first.to_str().unwrap(),
        second.to_str().unwrap(),
        "--fail-on",
        "never",
    ])
    .expect_code(0);
    // Judged the other way round, it is an improvement.
    let ran = b.compare(&["pr-7", "main"]).expect_code(0);
    assert!(
        line(&ran.stdout, "mm/64 ").ends_with("improved"),
        "{}",
        ran.stdout
    );

    // A baseline named like a run id's start is ambiguous; the prefixes pick one.
    let prefix = &id(&second)[..8];
    BaselineStore::new(b.work().join("gpubench/baselines"))
        .save(prefix, &[record("mm/64", GPU, 1.0, 12)])
        .unwrap();
    let ran = b.compare(&["main", prefix]).expect_code(2);
    assert!(
        ran.stderr.contains(&format!("`{prefix}` is ambiguous"))
            && ran
                .stderr
                .contains(&format!("write `baseline:{prefix}` or `run:{prefix}`")),
        "{}",
        ran.stderr
    );
    // That baseline lacks `conv`, and says nothing of why: missing evidence, which
    // fails the gate until it is allowed.
    let ran = b
        .compare(&["main", &format!("baseline:{prefix}")])
        .expect_code(4);
    assert!(
        line(&ran.stdout, "missing evidence (--fail-on").contains("conv (gone)"),
        "{}",
        ran.stdout
    );
    b.compare(&[
        "main",
        &format!("baseline:{prefix}"),
        "--allow-missing",
        "gone",
    ])
    .expect_code(0);
    let ran = b.compare(&["main", "nope"]).expect_code(2);
    assert!(
        ran.stderr
            .contains("`nope` is neither a saved baseline nor a stored run")
            && ran.stderr.contains("saved baselines:")
            && ran.stderr.contains(&id(&second)),
        "{}",
        ran.stderr
    );

    // JSON for programs.
    let ran = b
        .compare(&["main", "pr-7", "--format", "json"])
        .expect_code(4);
    let v: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
    assert_eq!(v["baseline"]["kind"], "baseline");
    assert_eq!(v["current"]["name"], "pr-7");
    assert_eq!(v["comparison"]["counts"]["regressed"], 1);
    assert_eq!(v["exit"]["verdict"], "regression_found");

    // A corrupt file on either side is an error naming it.
    let file = b.work().join("gpubench/baselines/pr-7/conv.json");
    std::fs::write(&file, "{\"format_version\": 1, \"id\": ").unwrap();
    let ran = b.compare(&["main", "pr-7"]).expect_code(2);
    assert!(
        ran.stderr.contains(&file.display().to_string()),
        "{}",
        ran.stderr
    );
}

/// `mm/64` with kernel time and counters, as a build with kernel timing records it.
fn with_kernels(seed: u64) -> RawRecord {
    use rand::SeedableRng;
    let mut r = record("mm/64", GPU, 1.0, seed);
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(seed);
    gpubench_analysis::synthetic::SyntheticKernels::one("gemm_kernel", 900_000.0)
        .attach(&mut r, &mut rng);
    r
}

/// `mm/64` as a build without kernel timing records it: the harness says why.
fn without_kernels(seed: u64) -> RawRecord {
    RecordBuilder::from(with_kernels(seed))
        .kernel_unavailable(
            "kernel timing was not built in: no CUDA runtime headers found (install them: \
             `cargo gpubench setup`)",
        )
        .build()
}

#[test]
fn a_baseline_benchmark_the_run_lacks_fails_the_gate_unless_filtered_out_or_allowed() {
    let b = Bench::new();
    b.run(&["--save-baseline", "main", "mm", "conv"])
        .expect_code(0);
    // Each file names its bench target, so a benchmark gone from the code keeps its
    // name.
    let conv_file = b.baselines().dir("main").unwrap().join("conv.json");
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&conv_file).unwrap()).unwrap();
    assert_eq!(saved["target"], "fake", "{saved}");
    // Left out by a filter: nothing was asked of it.
    let ran = b.run(&["mm"]).expect_code(0);
    assert!(!ran.stdout.contains("missing"), "{}", ran.stdout);

    // With --exe the user chose the executables: a baseline benchmark none of them
    // lists may belong to another, so it is not selected either.
    std::fs::write(
        b.dir.path().join("bin/ids"),
        "mm/64: benchmark\npanics: benchmark\n",
    )
    .unwrap();
    let ran = b.run(&["mm"]).expect_code(0);
    assert!(
        line(&ran.stdout, "  in the baseline, not selected here").contains("fake/conv"),
        "{}",
        ran.stdout
    );
    // A run that listed every bench target (a workspace's, an archive's) and has no
    // `conv`: gone from the suite (removed or renamed), missing evidence naming the
    // file to delete when that was on purpose.
    let dir = latest_run(&b.out_dir());
    let mut m = crate::support::manifest(&dir);
    let selection = m.selection.as_mut().expect("a run keeps its selection");
    assert!(!selection.all_targets, "--exe chose the targets");
    selection.all_targets = true;
    std::fs::write(dir.join("manifest.json"), m.to_json_pretty()).unwrap();
    let path = dir.to_str().unwrap();
    let ran = b.compare(&["main", path]).expect_code(4);
    let gate = line(&ran.stdout, "missing evidence (--fail-on");
    assert!(gate.contains("fake/conv (gone)"), "{}", ran.stdout);
    let ran_md = b
        .compare(&["main", path, "--format", "markdown"])
        .expect_code(4);
    assert!(
        ran_md.stdout.contains("`fake/conv`: gone"),
        "{}",
        ran_md.stdout
    );
    let ran_json = b
        .compare(&["main", path, "--format", "json"])
        .expect_code(4);
    let v: serde_json::Value = serde_json::from_str(&ran_json.stdout).unwrap();
    assert_eq!(v["comparison"]["baseline_targets"]["conv"], "fake", "{v}");
    assert!(
        ran.stdout.contains(&format!(
            "if on purpose, delete {} from the baseline",
            conv_file.display()
        )),
        "the fix names the file: {}",
        ran.stdout
    );
    b.compare(&["main", path, "--allow-missing", "gone"])
        .expect_code(0);
    b.compare(&["main", path, "--allow-missing", "all"])
        .expect_code(0);
    b.compare(&["main", path, "--allow-missing", "not-run"])
        .expect_code(4);
    b.compare(&["main", path, "--fail-on", "never"])
        .expect_code(0);
    // Deleting the file on purpose is the other way to pass.
    std::fs::remove_file(&conv_file).unwrap();
    b.compare(&["main", path]).expect_code(0);
}

#[test]
fn a_benchmark_a_killed_run_never_reached_is_not_run_and_fails_compare() {
    let b = Bench::new();
    b.run(&["--save-baseline", "main", "mm", "conv"])
        .expect_code(0);
    b.run(&["--no-baseline", "mm", "conv"]).expect_code(0);
    // As a run killed after `mm/64` leaves it: still marked running, by a process
    // that is gone, `conv` never reached.
    let dir = latest_run(&b.out_dir());
    let mut m = crate::support::manifest(&dir);
    m.status = cargo_gpubench::testing::store::manifest::RunStatus::Running;
    m.pid = Some(u32::MAX - 1);
    m.finished_at = None;
    let conv = m.benchmarks.iter_mut().find(|x| x.id == "conv").unwrap();
    conv.status = cargo_gpubench::testing::store::manifest::BenchStatus::Pending;
    conv.record = None;
    std::fs::write(dir.join("manifest.json"), m.to_json_pretty()).unwrap();
    let path = dir.to_str().unwrap();

    let ran = b.compare(&["main", path]).expect_code(4);
    assert!(
        line(&ran.stdout, "missing evidence (--fail-on").contains("conv (not run)"),
        "{}",
        ran.stdout
    );
    assert!(ran.stdout.contains("killed?"), "{}", ran.stdout);
    b.compare(&["main", path, "--allow-missing", "not-run"])
        .expect_code(0);
    let ran = b
        .compare(&["main", path, "--format", "json"])
        .expect_code(4);
    let v: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
    assert_eq!(v["comparison"]["missing"][0]["id"], "conv");
    assert_eq!(v["comparison"]["missing"][0]["kind"], "not_run");
}

#[test]
fn a_gated_metric_one_side_lacks_is_missing_evidence_with_the_fix() {
    let b = Bench::new();
    b.prepare(&with_kernels(31), false);
    b.run(&["--save-baseline", "main", "mm"]).expect_code(0);

    // A CI machine whose gpubench-core was built without the CUDA headers: no
    // kernel time, no counters; the gate would rest on nothing.
    b.prepare(&without_kernels(32), false);
    let ran = b
        .run(&["--gate-on", "kernel,counters", "mm"])
        .expect_code(4);
    let gate = line(&ran.stdout, "missing evidence (--fail-on");
    assert!(
        gate.contains("kernel time missing") && gate.contains("counters missing"),
        "{}",
        ran.stdout
    );
    assert!(
        ran.stdout.contains("kernel timing was not built in")
            && ran.stdout.contains("cargo gpubench setup"),
        "the reason and its fix: {}",
        ran.stdout
    );
    let report = std::fs::read_to_string(b.out_dir().join("report/index.html")).unwrap();
    assert!(
        report.contains("Missing evidence") && report.contains("kernel time missing"),
        "the report lists it"
    );
    let ran = b
        .run(&["--gate-on", "kernel,counters", "--format", "markdown", "mm"])
        .expect_code(4);
    assert!(
        ran.stdout.contains("**Missing evidence**")
            && ran
                .stdout
                .contains("**Result: missing evidence** (exit code 4)"),
        "{}",
        ran.stdout
    );
    // The default gate sees the gap too; a gate on time alone does not ask for it;
    // the allowance lets it pass.
    b.run(&["mm"]).expect_code(4);
    b.run(&["--gate-on", "time", "mm"]).expect_code(0);
    b.run(&[
        "--gate-on",
        "kernel,counters",
        "--allow-missing",
        "metric",
        "mm",
    ])
    .expect_code(0);

    // Neither side measured kernel time: the default gate looks at what is there,
    // a gate that names kernel time asks for it. (Saving does not compare.)
    b.run(&["--save-baseline", "main", "mm"]).expect_code(0);
    b.run(&["mm"]).expect_code(0);
    let ran = b.run(&["--gate-on", "kernel", "mm"]).expect_code(4);
    assert!(
        ran.stdout.contains("neither side measured kernel time"),
        "{}",
        ran.stdout
    );
}

#[test]
fn compare_resolves_output_directories_and_refuses_one_with_nothing_to_compare() {
    let b = Bench::new();
    b.run(&["--save-baseline", "main", "mm", "conv"])
        .expect_code(0);
    b.measure("mm/64", GPU, 1.3, 41);
    let out = b.work().join("ci-artifact");
    b.run(&[
        "--no-baseline",
        "--out-dir",
        out.to_str().unwrap(),
        "mm",
        "conv",
    ])
    .expect_code(0);
    // An output directory stands for its latest run, as in `merge`.
    let ran = b.compare(&["main", "./ci-artifact"]).expect_code(4);
    assert!(
        line(&ran.stdout, "fake/mm/64 ").ends_with("regressed"),
        "{}",
        ran.stdout
    );
    // A directory with no run, no latest and no baseline file is an error naming
    // what it expected; so is an empty baseline.
    std::fs::create_dir_all(b.work().join("empty")).unwrap();
    std::fs::write(b.work().join("empty/notes.txt"), "not a result").unwrap();
    for side in [["main", "./empty"], ["./empty", "main"]] {
        let ran = b.compare(&side).expect_code(2);
        assert!(
            ran.stderr.contains("holds nothing to compare")
                && ran.stderr.contains("manifest.json")
                && ran.stderr.contains("latest"),
            "{}",
            ran.stderr
        );
    }
}

#[test]
fn a_baseline_entry_that_is_no_baseline_file_stops_the_run_naming_it() {
    let b = Bench::new();
    b.run(&["--save-baseline", "main", "mm", "conv"])
        .expect_code(0);
    let dir = b.baselines().dir("main").unwrap();
    // Unrelated JSON is noted and left alone.
    std::fs::write(dir.join("tool-settings.json"), r#"{"theme": "dark"}"#).unwrap();
    let ran = b.run(&["mm", "conv"]).expect_code(0);
    assert!(
        ran.stderr
            .contains("tool-settings.json is not a baseline file"),
        "{}",
        ran.stderr
    );
    let ran = b.compare(&["main", "latest"]).expect_code(0);
    assert!(
        ran.stderr
            .contains("tool-settings.json is not a baseline file"),
        "{}",
        ran.stderr
    );
    // A `.json` that is a directory, or holds `null`, is a benchmark's evidence gone:
    // an error naming it, before anything runs.
    for (name, make) in [
        (format!("{}.json", file_stem_for_id("mm/64")), "dir"),
        ("conv.json".to_string(), "null"),
    ] {
        let path = dir.join(name);
        let saved = std::fs::read(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        if make == "dir" {
            std::fs::create_dir(&path).unwrap();
        } else {
            std::fs::write(&path, "null").unwrap();
        }
        for ran in [
            b.run(&["mm", "conv"]),
            b.compare(&["main", "latest"]),
            b.run(&["--fail-on", "ambiguous", "mm", "conv"]),
        ] {
            let ran = ran.expect_code(2);
            assert!(
                ran.stderr.contains(&path.display().to_string()),
                "{}",
                ran.stderr
            );
        }
        if make == "dir" {
            std::fs::remove_dir(&path).unwrap();
        } else {
            std::fs::remove_file(&path).unwrap();
        }
        std::fs::write(&path, saved).unwrap();
    }
}

/// A record of `id` on the CPU device as the harness writes one: synced wall time
/// only, `threads` intra-op threads, and at both host readings `others` runnable
/// threads of other work on a 2-core host; the model slowed by `factor`.
fn cpu_record(id: &str, factor: f64, others: u32, threads: u32) -> RawRecord {
    use gpubench_record::host::{HostCpus, HostReading, HostTelemetry, ThreadSource};
    let mut r = RecordBuilder::from(record(id, "AMD EPYC", factor, 40))
        .cpu("AMD EPYC")
        .flags(&[])
        .device_timer(false)
        .build();
    r.config.cpu_threads = Some(threads);
    let reading = HostReading {
        others_runnable: others,
        load_average: Some(4.2),
    };
    for process in &mut r.processes {
        let m = process.measurement.as_mut().unwrap();
        for s in &mut m.samples {
            s.device_ns = None;
            s.host_ns = s.wall_ns;
        }
        process.host = Some(HostTelemetry {
            cpus: HostCpus {
                online: 2,
                available: 2,
            },
            intra_op_threads: threads,
            threads_from: ThreadSource::FreeCores,
            working_threads: threads,
            start: reading,
            end: reading,
        });
        process.flag_contended();
    }
    r
}

#[test]
fn a_cpu_benchmark_on_a_busy_host_is_flagged_contended_and_never_regressed() {
    let b = Bench::new();
    b.prepare(&cpu_record("mm/64", 1.0, 3, 1), false);
    // The default three processes a side, on a host that three other threads keep
    // busy: flagged, with the thread count, and saved.
    let ran = b
        .run(&["--save-baseline", "main", "--exact", "mm/64"])
        .expect_code(0);
    let row = line(&ran.stdout, "fake/mm/64 ");
    assert!(row.contains("contended"), "{row}");
    assert!(
        ran.stdout.contains(
            "fake/mm/64: contended in 3 of 3 processes: the host's 2 CPUs were \
             oversubscribed: 3 runnable threads of other work beside this benchmark's 1"
        ),
        "{}",
        ran.stdout
    );
    assert!(
        ran.stdout
            .contains("on the CPU: 1 intra-op thread (the cores the host had free)"),
        "{}",
        ran.stdout
    );
    let saved = b.baselines().load("main").unwrap();
    assert!(saved[0].contended, "{:?}", saved[0]);

    // A 2x change on a contended host is no verdict: the wait for a core can make as
    // much, and the summary names ab, which judges both revisions under one load ...
    b.prepare(&cpu_record("mm/64", 2.0, 3, 1), false);
    let ran = b.run(&["--exact", "mm/64"]).expect_code(0);
    assert!(
        line(&ran.stdout, "fake/mm/64 ").contains("ambiguous")
            && ran
                .stdout
                .contains("fake/mm/64 is ambiguous: the processes of both sides waited for a core")
            && ran.stdout.contains("cargo gpubench ab"),
        "{}",
        ran.stdout
    );
    // ... unchanged code, 20% slower as the load grew, does not ...
    b.prepare(&cpu_record("mm/64", 1.2, 4, 1), false);
    let ran = b.run(&["--exact", "mm/64"]).expect_code(0);
    assert!(
        !line(&ran.stdout, "fake/mm/64 ").contains("regressed"),
        "{}",
        ran.stdout
    );
    // ... and a run on another number of intra-op threads is not compared, saying
    // how to measure as the baseline did.
    b.prepare(&cpu_record("mm/64", 0.5, 0, 2), false);
    let ran = b.run(&["--exact", "mm/64"]).expect_code(4);
    assert!(
        ran.stdout
            .contains("2 intra-op threads here, 1 intra-op thread in the baseline")
            && ran.stdout.contains("GPUBENCH_CPU_THREADS=1"),
        "{}",
        ran.stdout
    );
    assert!(
        !line(&ran.stdout, "fake/mm/64 ").contains("contended"),
        "{}",
        ran.stdout
    );
}

/// The thread counts `cargo gpubench` gave the stand-in's processes so far, one per
/// process, and forgets them.
fn threads_given(b: &Bench) -> Vec<String> {
    let log = b.dir.path().join("bin/threads.log");
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let _ = std::fs::remove_file(&log);
    text.lines()
        .filter_map(|l| Some(l.split_once(" baseline_threads=")?.1.to_string()))
        .collect()
}

#[test]
fn saving_a_baseline_neither_compares_nor_gates_unless_a_baseline_is_named() {
    let b = Bench::new();
    b.prepare(&cpu_record("mm/64", 1.0, 0, 1), false);
    b.run(&["--save-baseline", "main", "--exact", "mm/64"])
        .expect_code(0);
    // A planted 2x slowdown, saved over `main`: a plain save, exit 0, no verdict.
    b.prepare(&cpu_record("mm/64", 2.0, 0, 1), false);
    let ran = b
        .run(&["--save-baseline", "main", "--exact", "mm/64"])
        .expect_code(0);
    assert!(
        !ran.stderr.contains("comparing with") && !ran.stdout.contains("regressed"),
        "{}\n{}",
        ran.stdout,
        ran.stderr
    );
    assert!(
        ran.stderr.contains("saved baseline `main`"),
        "{}",
        ran.stderr
    );
    // Named with --baseline, the save compares first and says that it gates.
    b.prepare(&cpu_record("mm/64", 4.0, 0, 1), false);
    let ran = b
        .run(&[
            "--baseline",
            "main",
            "--save-baseline",
            "main",
            "--exact",
            "mm/64",
        ])
        .expect_code(4);
    assert!(
        ran.stderr.contains(
            "comparing with baseline `main` before saving `main`: its verdicts gate this run"
        ),
        "{}",
        ran.stderr
    );
}

#[test]
fn cpu_work_measures_on_its_baselines_threads_and_a_count_that_must_differ_is_said_once() {
    let b = Bench::new();
    // Two CPU benchmarks, saved on 1 intra-op thread; no baseline yet, so the
    // processes take the harness's default.
    b.prepare(&cpu_record("mm/64", 1.0, 0, 1), false);
    b.prepare(&cpu_record("conv", 1.0, 0, 1), false);
    b.run(&["--save-baseline", "main", "mm", "conv"])
        .expect_code(0);
    assert!(threads_given(&b).iter().all(|t| t == "unset"));
    // Saving over it again, and comparing with it: every process gets its count.
    b.run(&["--save-baseline", "main", "mm", "conv"])
        .expect_code(0);
    let given = threads_given(&b);
    assert!(
        !given.is_empty() && given.iter().all(|t| t == "1"),
        "{given:?}"
    );
    b.run(&["mm", "conv"]).expect_code(0);
    let given = threads_given(&b);
    assert!(
        !given.is_empty() && given.iter().all(|t| t == "1"),
        "{given:?}"
    );

    // The user's own count differs: one note before the run, one line for the two
    // benchmarks not compared, one for their missing evidence.
    b.prepare(&cpu_record("mm/64", 1.0, 0, 2), false);
    b.prepare(&cpu_record("conv", 1.0, 0, 2), false);
    let ran = run(run_stand_in(b.dir.path())
        .env("GPUBENCH_CPU_THREADS", "2")
        .args(["mm", "conv"]))
    .expect_code(4);
    assert!(threads_given(&b).iter().all(|t| t == "unset"));
    let note = "GPUBENCH_CPU_THREADS=2 measures CPU work on 2 intra-op threads, the baseline \
                `main` on 1 intra-op thread";
    assert_eq!(ran.stderr.matches(note).count(), 1, "{}", ran.stderr);
    let reason = "2 intra-op threads here, 1 intra-op thread in the baseline";
    assert_eq!(
        ran.stdout.matches(reason).count(),
        2,
        "said once where not compared and once in the missing evidence:\n{}",
        ran.stdout
    );
    assert!(
        ran.stdout
            .contains("  not compared: fake/conv, fake/mm/64 (measured with other settings"),
        "{}",
        ran.stdout
    );

    // The Markdown summary says it once per list too.
    let ran = run(run_stand_in(b.dir.path())
        .env("GPUBENCH_CPU_THREADS", "2")
        .args(["--format", "markdown", "mm", "conv"]))
    .expect_code(4);
    assert_eq!(ran.stdout.matches(reason).count(), 2, "{}", ran.stdout);
    assert!(
        ran.stdout
            .contains("`fake/conv`, `fake/mm/64`: measured with other settings"),
        "{}",
        ran.stdout
    );
    threads_given(&b);

    // A count beyond the CPUs is refused before anything runs, naming the variable.
    let ran = run(run_stand_in(b.dir.path())
        .env("GPUBENCH_CPU_THREADS", "99999")
        .args(["mm", "conv"]))
    .expect_code(2);
    assert!(
        ran.stderr
            .contains("GPUBENCH_CPU_THREADS=99999 asks for more intra-op threads"),
        "{}",
        ran.stderr
    );
    assert!(threads_given(&b).is_empty());
}

/// `mm/64` as the stand-in hands it back, with the H200 matmul's energy `factor`
/// times over planted in it.
fn with_energy(factor: f64, seed: u64) -> RawRecord {
    use rand::SeedableRng;
    let mut r = record("mm/64", GPU, 1.0, seed);
    gpubench_analysis::synthetic::SyntheticEnergy::h200_matmul()
        .scaled(factor)
        .plant(&mut r, &mut rand_pcg::Pcg64Mcg::seed_from_u64(seed));
    r
}

#[test]
fn energy_is_judged_and_gated_by_default_and_gate_on_energy_names_it() {
    let b = Bench::new();
    b.prepare(&with_energy(1.0, 31), false);
    b.run(&["--save-baseline", "main", "mm", "conv"])
        .expect_code(0);
    // 10% more energy per call, the time as it was.
    b.prepare(&with_energy(1.1, 32), false);
    b.run(&["--no-baseline", "--save-baseline", "pr", "mm", "conv"])
        .expect_code(0);

    let ran = b.compare(&["main", "pr"]).expect_code(4);
    assert!(ran.stdout.contains("energy change"), "{}", ran.stdout);
    let mm = line(&ran.stdout, "mm/64 ");
    assert!(
        mm.contains(" J, +") && mm.contains("regressed"),
        "{}",
        ran.stdout
    );
    assert!(
        ran.stdout.contains("mm/64 (energy regressed)"),
        "{}",
        ran.stdout
    );
    // A gate without energy passes; one on energy alone trips.
    b.compare(&["main", "pr", "--gate-on", "time"])
        .expect_code(0);
    let ran = b
        .compare(&[
            "main",
            "pr",
            "--gate-on",
            "energy",
            "--allow-missing",
            "metric",
        ])
        .expect_code(4);
    assert!(
        ran.stdout.contains("mm/64 (energy regressed)"),
        "{}",
        ran.stdout
    );
    // A threshold past the change makes it no change.
    b.compare(&["main", "pr", "--energy-noise-threshold", "0.2"])
        .expect_code(0);

    // `conv` has no energy on either side (as on the CPU): the default gate passes
    // on it, a gate that names energy lacks the evidence.
    b.run(&["--no-baseline", "--save-baseline", "c1", "conv"])
        .expect_code(0);
    b.run(&["--no-baseline", "--save-baseline", "c2", "conv"])
        .expect_code(0);
    b.compare(&["c1", "c2"]).expect_code(0);
    let ran = b
        .compare(&["c1", "c2", "--gate-on", "time,energy"])
        .expect_code(4);
    assert!(
        ran.stdout.contains("neither side measured energy"),
        "{}",
        ran.stdout
    );
}
