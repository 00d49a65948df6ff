//! `cargo gpubench doctor` on the machine the tests run on: it reports the libtorch
//! it finds and, on a machine without an NVIDIA driver, says it is a CPU-only
//! machine (no problem, unless `--device cuda` asks for a GPU: then exit 5 as its
//! `--help` documents); with a driver it lists the GPUs.

use std::path::Path;

use crate::support::{cargo_gpubench, Ran};

/// The project's libtorch, which `scripts/test` and CI install into `.venv`.
fn libtorch_dir() -> Option<String> {
    std::env::var("LIBTORCH").ok().filter(|v| !v.is_empty())
}

#[test]
fn doctor_reports_libtorch_and_the_gpu_or_its_absence() {
    let mut cmd = cargo_gpubench();
    cmd.arg("gpubench").arg("doctor");
    let Some(libtorch) = libtorch_dir() else {
        panic!("LIBTORCH is not set: source scripts/env.sh (scripts/test does)");
    };
    cmd.env("LIBTORCH", &libtorch);
    let ran = Ran::of(cmd.output().expect("cargo-gpubench runs"));
    let out = &ran.stdout;
    assert!(ran.stderr.is_empty(), "{}", ran.stderr);
    let libtorch_line = out
        .lines()
        .find(|l| l.contains("libtorch"))
        .unwrap_or_else(|| panic!("no libtorch line:\n{out}"));
    assert!(libtorch_line.contains("2.11.0"), "{out}");
    assert!(
        libtorch_line.contains(&Path::new(&libtorch).join("lib").display().to_string()),
        "{out}"
    );
    let has_driver = Path::new("/proc/driver/nvidia").exists();
    if has_driver {
        assert!(out.contains("NVIDIA "), "{out}");
    } else {
        assert!(out.contains("a CPU-only machine"), "{out}");
        // Only the host (a busy test machine) can be a problem here.
        for line in out.lines().filter(|l| l.starts_with("PROBLEM")) {
            assert!(line.contains(" host "), "{out}");
        }
        let mut gpu = cargo_gpubench();
        gpu.args(["gpubench", "doctor", "--device", "cuda"])
            .env("LIBTORCH", &libtorch);
        let asked = Ran::of(gpu.output().expect("cargo-gpubench runs"));
        assert!(asked.stdout.contains("PROBLEM cuda"), "{}", asked.stdout);
        assert!(
            asked.stdout.contains("why and what to do"),
            "{}",
            asked.stdout
        );
        assert_eq!(asked.code, Some(5), "{}", asked.stdout);
    }
    assert!(out.contains("host"), "{out}");
    match ran.code {
        Some(0) => assert!(out.contains("nothing found that would make results unreliable")),
        Some(5) => assert!(out.contains("problem(s) that would make results unreliable")),
        other => panic!("doctor exited {other:?}: {out}"),
    }
}

#[test]
fn doctor_help_documents_its_exit_codes() {
    let ran = Ran::of(
        cargo_gpubench()
            .args(["gpubench", "doctor", "--help"])
            .output()
            .unwrap(),
    );
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    assert!(ran.stdout.contains("Exit codes:"), "{}", ran.stdout);
    assert!(
        ran.stdout.contains("  5    a problem was found"),
        "{}",
        ran.stdout
    );
    assert!(ran.stdout.contains("persistence mode"), "{}", ran.stdout);
}
