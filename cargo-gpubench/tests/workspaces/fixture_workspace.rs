//! `cargo gpubench` end to end on real fixture workspaces built with tch:
//! `fixtures/basic` (benchmarks that pass, panic, abort and outlive the timeout, and a
//! package without gpubench that must be left alone) and `fixtures/broken` (a bench
//! target that does not compile).
//!
//! These build tch against libtorch, so they need `LIBTORCH` (run
//! `source scripts/env.sh` first); without it they fail and say so. Nested builds use
//! `<workspace>/target/nested`, never the target directory of the `cargo test` running
//! them (cargo holds its lock while tests run), and share tch's release build between
//! the fixtures.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::{cargo_gpubench, entry, latest_run, manifest, record, run};
use cargo_gpubench::testing::store::manifest::{BenchStatus, RunStatus};
use gpubench_record::failure::FailureKind;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("cargo-gpubench is inside the workspace")
        .to_path_buf()
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
        .join("Cargo.toml")
}

/// `cargo gpubench --manifest-path <fixture>` as cargo would run it, building into
/// the shared nested target directory and storing runs in `out_dir`.
fn gpubench(fixture_name: &str, out_dir: &Path) -> Command {
    let libtorch = std::env::var_os("LIBTORCH").filter(|v| !v.is_empty());
    assert!(
        libtorch.is_some(),
        "LIBTORCH is not set: these tests build tch against libtorch; run \
         `source scripts/env.sh` in the workspace root first"
    );
    let mut cmd = cargo_gpubench();
    cmd.arg("gpubench")
        .arg("--manifest-path")
        .arg(fixture(fixture_name))
        .arg("--out-dir")
        .arg(out_dir)
        .env("CARGO_TARGET_DIR", repo_root().join("target/nested"))
        // Measure on the CPU wherever the tests run: the timings are not the point.
        .args(["--device", "cpu", "--quick"]);
    cmd
}

/// Discovery reads only metadata, so it runs without libtorch.
#[test]
fn discovery_finds_the_bench_targets_of_gpubench_packages_only() {
    let _machine = crate::sharing();
    let cargo = PathBuf::from(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    let ws = cargo_gpubench::testing::build::discover::discover(
        &cargo,
        Some(&fixture("basic")),
        &[],
        &[],
    )
    .expect("the fixture's metadata reads");
    let names: Vec<String> = ws
        .targets
        .iter()
        .map(|t| format!("{}/{}", t.package, t.name))
        .collect();
    assert_eq!(
        names,
        [
            "gpubench-fixture-basic/beside",
            "gpubench-fixture-basic/crashes",
            "gpubench-fixture-basic/suite"
        ]
    );
    assert_eq!(ws.root, fixture("basic").parent().unwrap());
    let err = cargo_gpubench::testing::build::discover::discover(
        &cargo,
        Some(&fixture("basic")),
        &["gpubench-fixture-plain".into()],
        &[],
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("does not depend on gpubench-core"),
        "{err}"
    );
}

#[test]
fn list_shows_the_gpubench_benchmarks_of_the_workspace_only() {
    let _machine = crate::sharing();
    let out = tempfile::tempdir().unwrap();
    let ran = run(gpubench("basic", out.path()).arg("--list")).expect_code(0);
    // The criterion bench in the same package answers `--list` without the
    // handshake: skipped with a note, its benchmark not listed.
    assert!(
        ran.stderr
            .contains("note: skipped beside: not a gpubench harness"),
        "{}",
        ran.stderr
    );
    insta::assert_snapshot!(ran.stdout, @r"
    crashes/aborts
    crashes/sleeps
    suite/ignored_one (ignored)
    suite/panics
    suite/passes
    suite/sized/16
    suite/sized/64
    ");
}

#[test]
fn a_run_records_passes_panics_crashes_and_timeouts_and_exits_1() {
    let _machine = crate::sharing();
    let out = tempfile::tempdir().unwrap();
    let ran = run(gpubench("basic", out.path()).args(["--timeout", "20", "--processes", "2"]))
        .expect_code(1);

    let run_dir = latest_run(out.path());
    let m = manifest(&run_dir);
    assert_eq!(m.status, RunStatus::Completed);
    assert_eq!(m.device, "cpu");
    let mut targets: Vec<&str> = m.executables.iter().map(|e| e.target.as_str()).collect();
    targets.sort();
    assert_eq!(
        targets,
        ["crashes", "suite"],
        "the plain package is not built, the criterion bench not run"
    );
    assert!(
        ran.stderr
            .contains("note: skipped beside: not a gpubench harness"),
        "{}",
        ran.stderr
    );
    assert_eq!(m.benchmarks.len(), 6, "the ignored benchmark does not run");

    for id in ["passes", "sized/16", "sized/64"] {
        let b = entry(&m, "suite", id);
        assert_eq!(b.status, BenchStatus::Passed, "{id}");
        let r = record(&run_dir, b);
        assert_eq!(r.processes.len(), 2, "{id}: --processes 2");
        assert_eq!(b.processes, 2, "{id}");
        let measurement = r
            .first_measurement()
            .expect("a passed record has a measurement");
        assert!(!measurement.samples.is_empty(), "{id}");
        assert_eq!(r.fingerprint.device.kind, "cpu");
    }
    let failure = |target: &str, id: &str| {
        let b = entry(&m, target, id);
        assert_eq!(b.status, BenchStatus::Failed, "{target}/{id}");
        let r = record(&run_dir, b);
        assert_eq!(
            r.processes.len(),
            1,
            "a failed process ends the benchmark's processes"
        );
        r.failure().cloned().expect("a failed record has a failure")
    };
    let f = failure("suite", "panics");
    assert_eq!(f.kind, FailureKind::Panic);
    assert!(
        f.message.contains("fixture benchmark panicked on purpose"),
        "{}",
        f.message
    );
    let f = failure("crashes", "aborts");
    assert_eq!(f.kind, FailureKind::Crash);
    assert!(f.message.contains("SIGABRT"), "{}", f.message);
    assert!(
        f.message.contains("fixture: about to abort"),
        "{}",
        f.message
    );
    let f = failure("crashes", "sleeps");
    assert_eq!(f.kind, FailureKind::Timeout);
    assert!(f.message.contains("timed out after 20 s"), "{}", f.message);

    let row = |name: &str| {
        ran.stdout
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no row for {name}:\n{}", ran.stdout))
            .to_string()
    };
    assert!(row("suite/passes ").contains("  passed"), "{}", ran.stdout);
    assert!(row("suite/panics ").contains("panic: "), "{}", ran.stdout);
    assert!(row("crashes/aborts ").contains("crash: killed by signal 6 (SIGABRT)"));
    assert!(row("crashes/sleeps ").contains("timeout: timed out after 20 s"));
    assert!(
        ran.stdout.contains("6 benchmarks: 3 passed, 3 failed"),
        "{}",
        ran.stdout
    );
}

#[test]
fn an_exact_filter_runs_one_benchmark_that_passes() {
    let _machine = crate::sharing();
    let out = tempfile::tempdir().unwrap();
    let ran = run(gpubench("basic", out.path()).args(["--exact", "suite/sized/16"])).expect_code(0);
    assert!(
        ran.stdout.contains("1 benchmark: 1 passed, 0 failed"),
        "{}",
        ran.stdout
    );
    let m = manifest(&latest_run(out.path()));
    assert_eq!(m.benchmarks.len(), 1);
    assert_eq!(m.benchmarks[0].id, "sized/16");
}

#[test]
fn a_bench_target_that_does_not_compile_exits_3_with_the_compiler_error() {
    let _machine = crate::sharing();
    let out = tempfile::tempdir().unwrap();
    let ran = run(&mut gpubench("broken", out.path())).expect_code(3);
    assert!(ran.stderr.contains("mismatched types"), "{}", ran.stderr);
    assert!(
        ran.stderr.contains("failed to build bench targets"),
        "{}",
        ran.stderr
    );
    assert!(!out.path().join("latest").exists());
}
