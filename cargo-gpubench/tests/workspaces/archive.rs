//! Archives end to end: `cargo gpubench archive` of the real fixture workspace, then
//! `cargo-gpubench run --archive` from an empty directory with no workspace, against a
//! run of the workspace itself (builds tch, so it needs `LIBTORCH` like
//! `fixture_workspace.rs`); and `run --archive` of an archive holding the shell-script
//! stand-in harness (no libtorch, no build), which pins what a run takes from the
//! archive: its baselines, its git commit, its native libraries and its libtorch
//! version.
#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::{
    cargo_gpubench, entry, latest_run, manifest, prepare_record, record, run, stand_in,
    synthetic_record, STAND_IN_EXE,
};
use cargo_gpubench::testing::archive::pack::{self, Bundle, BundledExecutable};
use cargo_gpubench::testing::archive::{unpack, ArchivedBenchmark};
use cargo_gpubench::testing::build::compile::BenchExecutable;
use cargo_gpubench::testing::store::manifest::{BenchStatus, RunStatus};
use gpubench_analysis::BaselineStore;

// ---- the stand-in harness: no libtorch, no build ----------------------------------

/// Lists two benchmarks; a process logs what it was given (the git commit variable,
/// whether the bundled library is on the loader path) and hands back the record
/// prepared in `$FAKE_RECORDS`.
const STAND_IN: &str = r#"#!/bin/sh
[ -n "$GPUBENCH_HANDSHAKE" ] && echo "gpubench-harness protocol 1"
case " $* " in
*" --list "*)
    case " $* " in
    *" --ignored "*) ;;
    *) echo "passes: benchmark"; echo "matmul/64: benchmark" ;;
    esac
    exit 0 ;;
esac
[ "$1 $2" = "--bench --exact" ] || { echo "unexpected arguments: $*" >&2; exit 64; }
shim=missing
for d in $(echo "$LD_LIBRARY_PATH" | tr : ' '); do
    [ -f "$d/libshim.so" ] && shim=found
done
echo "$3 commit=${GPUBENCH_GIT_COMMIT-unset} shim=$shim" >> "$FAKE_LOG"
cp "$FAKE_RECORDS/records/$(echo "$3" | tr / _)/"*.json "$GPUBENCH_RECORD_DIR/"
"#;

const COMMIT: &str = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";
const DEVICE: &str = "NVIDIA H200";

/// A machine to run an archive on: a fake libtorch of `libtorch_version`, an empty
/// working directory, an empty TMPDIR (to see the extraction go), and the archive
/// of the stand-in, its library and a saved baseline `main`, made elsewhere.
struct Machine {
    dir: tempfile::TempDir,
}

impl Machine {
    fn new(libtorch_version: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let bin = stand_in(root, STAND_IN);
        std::fs::write(
            root.join("libtorch/version.py"),
            format!("__version__ = '{libtorch_version}'\n"),
        )
        .unwrap();
        std::fs::create_dir_all(root.join("tmp")).unwrap();
        let records = root.join("fake");
        for (seed, id) in [(1, "passes"), (2, "matmul/64")] {
            prepare_record(&records, &synthetic_record(id, DEVICE, 1.0, seed), false);
        }

        // What the build machine had.
        let ws = root.join("ws");
        let native = ws.join("target/release/build/shim-1/out");
        std::fs::create_dir_all(&native).unwrap();
        std::fs::write(native.join("libshim.so"), b"").unwrap();
        let store = BaselineStore::for_workspace(&ws);
        store
            .save("main", &[synthetic_record("passes", DEVICE, 1.0, 7)])
            .unwrap();
        let bundle = Bundle {
            executables: vec![BundledExecutable {
                exe: BenchExecutable {
                    package: Some("gpu".into()),
                    target: "suite".into(),
                    path: bin.join(STAND_IN_EXE),
                },
                benchmarks: ["matmul/64", "passes"]
                    .map(|id| ArchivedBenchmark {
                        id: id.into(),
                        ignored: false,
                    })
                    .to_vec(),
            }],
            native_dirs: vec![native],
            baselines: vec![("main".into(), store.dir("main").unwrap())],
            git_commit: Some(COMMIT.into()),
            libtorch_version: Some("2.11.0+cu130".into()),
        };
        pack::write(&bundle, &root.join("benches.tar.gz")).unwrap();
        Machine { dir }
    }

    fn path(&self, p: &str) -> PathBuf {
        self.dir.path().join(p)
    }

    /// `cargo-gpubench run --archive benches.tar.gz` in the empty `work/`.
    fn command(&self) -> Command {
        let mut cmd = cargo_gpubench();
        cmd.current_dir(self.path("work"))
            .env("LIBTORCH", self.path("libtorch"))
            .env("TMPDIR", self.path("tmp"))
            .env("FAKE_LOG", self.path("calls.log"))
            .env("FAKE_RECORDS", self.path("fake"))
            .env("CARGO", "/nonexistent/cargo")
            .args(["run", "--archive"])
            .arg(self.path("benches.tar.gz"));
        cmd
    }
}

#[test]
fn a_run_from_an_archive_takes_its_executables_libraries_baselines_and_commit() {
    let _machine = crate::sharing();
    let m = Machine::new("2.11.0+cpu");
    let ran = run(m.command().args(["--processes", "1"])).expect_code(0);
    assert!(
        ran.stderr.contains("note: archive ") && ran.stderr.contains("running with 2.11.0+cpu"),
        "a libtorch of the same release for another device is noted: {}",
        ran.stderr
    );
    assert!(
        ran.stderr.contains("comparing with baseline `main`"),
        "the archive's baseline is the default one: {}",
        ran.stderr
    );

    // Stored under ./target/gpubench of the working directory, as with --exe.
    let run_dir = latest_run(&m.path("work/target/gpubench"));
    let manifest = manifest(&run_dir);
    assert_eq!(manifest.status, RunStatus::Completed);
    let from = manifest
        .archive
        .as_ref()
        .expect("the manifest names the archive");
    assert_eq!(Path::new(&from.path), m.path("benches.tar.gz"));
    assert_eq!(from.git_commit.as_deref(), Some(COMMIT));
    assert_eq!(from.libtorch_version.as_deref(), Some("2.11.0+cu130"));
    // The executables by their place in the archive, not the removed copy.
    let paths: Vec<&str> = manifest
        .executables
        .iter()
        .map(|e| e.path.as_str())
        .collect();
    assert!(
        !paths.is_empty() && paths.iter().all(|p| p.starts_with("bin/")),
        "{paths:?}"
    );
    for id in ["passes", "matmul/64"] {
        let b = entry(&manifest, "suite", id);
        assert_eq!(b.status, BenchStatus::Passed, "{id}");
        assert_eq!(b.package.as_deref(), Some("gpu"), "{id}");
    }
    assert!(
        run_dir.join("comparison.json").is_file(),
        "compared with the bundled baseline"
    );

    let calls = std::fs::read_to_string(m.path("calls.log")).unwrap();
    assert_eq!(
        calls.lines().count(),
        2,
        "one process of each benchmark: {calls}"
    );
    for line in calls.lines() {
        assert!(
            line.contains(&format!("commit={COMMIT}")) && line.contains("shim=found"),
            "the archive's commit and bundled library reach the harness: {line}"
        );
    }
    assert_eq!(
        std::fs::read_dir(m.path("tmp")).unwrap().count(),
        0,
        "the extracted archive is removed after the run"
    );
}

#[test]
fn list_partition_and_bench_work_on_an_archive() {
    let _machine = crate::sharing();
    let m = Machine::new("2.11.0+cu130");
    let ran = run(m.command().arg("--list")).expect_code(0);
    assert_eq!(ran.stdout, "suite/matmul/64\nsuite/passes\n");
    assert!(!ran.stderr.contains("note: archive"), "{}", ran.stderr);

    let ran = run(m.command().args(["--list", "--bench", "other"])).expect_code(2);
    assert!(
        ran.stderr
            .contains("has no bench target other (it has: suite)"),
        "{}",
        ran.stderr
    );

    let ran = run(m
        .command()
        .args(["--processes", "1", "--partition", "count:1/2"]))
    .expect_code(0);
    assert!(
        ran.stderr.contains("1 of the 2 selected benchmarks"),
        "{}",
        ran.stderr
    );
    let got = manifest(&latest_run(&m.path("work/target/gpubench")));
    assert_eq!(got.benchmarks.len(), 1);
    assert_eq!(got.partition.as_deref(), Some("count:1/2"));
}

#[test]
fn an_archive_needs_the_libtorch_release_it_was_built_against() {
    let _machine = crate::sharing();
    let m = Machine::new("2.9.1+cu128");
    let ran = run(&mut m.command()).expect_code(5);
    assert!(
        ran.stderr
            .contains("was built against libtorch 2.11.0+cu130")
            && ran.stderr.contains("the libtorch here is 2.9.1+cu128")
            && ran.stderr.contains("pip install torch==2.11.0"),
        "{}",
        ran.stderr
    );
    assert!(!m.path("calls.log").exists(), "nothing ran");
    assert!(!m.path("work/target").exists(), "no run was stored");
    assert_eq!(std::fs::read_dir(m.path("tmp")).unwrap().count(), 0);
}

#[test]
fn a_file_that_is_not_an_archive_or_is_missing_is_a_usage_error() {
    let _machine = crate::sharing();
    let m = Machine::new("2.11.0");
    let notes = m.path("notes.txt");
    std::fs::write(&notes, "not an archive").unwrap();
    let mut cmd = cargo_gpubench();
    cmd.current_dir(m.path("work"))
        .env("LIBTORCH", m.path("libtorch"))
        .args(["run", "--archive"])
        .arg(&notes);
    let ran = run(&mut cmd).expect_code(2);
    assert!(
        ran.stderr
            .contains(&format!("{} is not a gpubench archive", notes.display())),
        "{}",
        ran.stderr
    );

    let mut cmd = cargo_gpubench();
    cmd.current_dir(m.path("work"))
        .args(["run", "--archive", "nowhere.tar.gz"]);
    let ran = run(&mut cmd).expect_code(2);
    assert!(
        ran.stderr.contains("archive nowhere.tar.gz does not exist"),
        "{}",
        ran.stderr
    );

    let mut cmd = cargo_gpubench();
    cmd.args(["run", "--archive", "a.tar.gz", "--exe", "x"]);
    let ran = run(&mut cmd).expect_code(2);
    assert!(ran.stderr.contains("cannot be used with"), "{}", ran.stderr);
}

#[test]
fn an_archive_cut_short_is_damaged_input_wherever_it_is_cut() {
    let _machine = crate::sharing();
    let m = Machine::new("2.11.0");
    let whole = std::fs::read(m.path("benches.tar.gz")).unwrap();
    // Cut anywhere past its start, as a copy that did not finish leaves it; an
    // entry's data cut short used to read as a directory that cannot be written (5).
    for tenths in 3..10 {
        let keep = whole.len() * tenths / 10;
        std::fs::write(m.path("benches.tar.gz"), &whole[..keep]).unwrap();
        let ran = run(&mut m.command()).expect_code(2);
        assert!(
            ran.stderr.contains(&format!(
                "archive {} is damaged (",
                m.path("benches.tar.gz").display()
            )) && ran.stderr.contains("copy it again or make it again"),
            "cut at {keep} of {}: {}",
            whole.len(),
            ran.stderr
        );
        assert!(!m.path("calls.log").exists(), "nothing ran");
    }
}

// ---- the fixture workspace: real bench targets built with tch ---------------------

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("cargo-gpubench is inside the workspace")
        .to_path_buf()
}

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/basic/Cargo.toml")
}

fn require_libtorch() {
    assert!(
        std::env::var_os("LIBTORCH").is_some_and(|v| !v.is_empty()),
        "LIBTORCH is not set: this test builds tch against libtorch; run \
         `source scripts/env.sh` in the workspace root first"
    );
}

/// The options both runs share: on the CPU, quick, two processes, two benchmarks.
const RUN_OPTIONS: [&str; 8] = [
    "--device",
    "cpu",
    "--quick",
    "--processes",
    "2",
    "--exact",
    "suite/passes",
    "suite/sized/16",
];

#[test]
fn an_archive_runs_from_an_empty_directory_like_the_workspace() {
    let _machine = crate::sharing();
    require_libtorch();
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("benches.tar.gz");
    // Built into the nested target directory the fixture tests share.
    let nested = repo_root().join("target/nested");
    let ran = run(cargo_gpubench()
        .env("CARGO_TARGET_DIR", &nested)
        .args(["gpubench", "archive", "--manifest-path"])
        .arg(fixture())
        .arg("-o")
        .arg(&file))
    .expect_code(0);
    assert!(
        ran.stderr
            .contains("note: skipped beside: not a gpubench harness"),
        "{}",
        ran.stderr
    );
    assert!(
        ran.stderr.contains("archived 2 executables (7 benchmarks)"),
        "{}",
        ran.stderr
    );

    let peek = tmp.path().join("peek");
    std::fs::create_dir_all(&peek).unwrap();
    let archived = unpack::extract(&file, &peek).unwrap().manifest;
    let names: Vec<String> = archived
        .executables
        .iter()
        .flat_map(|e| {
            assert_eq!(e.package, "gpubench-fixture-basic");
            e.benchmarks.iter().map(move |b| {
                let mark = if b.ignored { " (ignored)" } else { "" };
                format!("{}/{}{mark}", e.target, b.id)
            })
        })
        .collect();
    assert_eq!(
        names,
        [
            "crashes/aborts",
            "crashes/sleeps",
            "suite/ignored_one (ignored)",
            "suite/panics",
            "suite/passes",
            "suite/sized/16",
            "suite/sized/64",
        ]
    );
    assert!(
        archived
            .libtorch_version
            .as_deref()
            .is_some_and(|v| v.starts_with("2.11.0")),
        "{:?}",
        archived.libtorch_version
    );
    let head = Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(repo_root())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    assert_eq!(archived.git_commit, head);

    // The workspace's own run.
    let ws_out = tmp.path().join("ws-out");
    // Both runs give libtorch the same intra-op threads, whatever the host has free
    // when each starts: otherwise their configs differ by design.
    run(cargo_gpubench()
        .env("CARGO_TARGET_DIR", &nested)
        .env("GPUBENCH_CPU_THREADS", "1")
        .args(["gpubench", "--manifest-path"])
        .arg(fixture())
        .arg("--out-dir")
        .arg(&ws_out)
        .args(RUN_OPTIONS))
    .expect_code(0);

    // The archive's, from an empty directory, with no cargo and no sources.
    let empty = tmp.path().join("elsewhere");
    std::fs::create_dir_all(&empty).unwrap();
    let from_archive = || {
        let mut cmd = cargo_gpubench();
        cmd.current_dir(&empty)
            .env("CARGO", "/nonexistent/cargo")
            .env("GPUBENCH_CPU_THREADS", "1")
            .arg("run")
            .arg("--archive")
            .arg(&file);
        cmd
    };
    let listed = run(from_archive().arg("--list")).expect_code(0);
    assert_eq!(
        listed.stdout,
        "crashes/aborts\ncrashes/sleeps\nsuite/ignored_one (ignored)\nsuite/panics\n\
         suite/passes\nsuite/sized/16\nsuite/sized/64\n"
    );
    let ran = run(from_archive().args(RUN_OPTIONS)).expect_code(0);
    assert!(!ran.stderr.contains("Compiling"), "{}", ran.stderr);

    let ws_run = latest_run(&ws_out);
    let ar_run = latest_run(&empty.join("target/gpubench"));
    let (ws, ar) = (manifest(&ws_run), manifest(&ar_run));
    assert!(ws.archive.is_none());
    assert_eq!(
        ar.archive.as_ref().map(|a| a.git_commit.clone()),
        Some(archived.git_commit.clone())
    );
    let key = |m: &cargo_gpubench::testing::store::manifest::RunManifest| {
        m.benchmarks
            .iter()
            .map(|b| (b.package.clone(), b.target.clone(), b.id.clone(), b.status))
            .collect::<Vec<_>>()
    };
    assert_eq!(key(&ar), key(&ws));
    for b in &ws.benchmarks {
        let (w, a) = (
            record(&ws_run, b),
            record(&ar_run, entry(&ar, &b.target, &b.id)),
        );
        assert_eq!((&a.id, &a.name, &a.arg), (&w.id, &w.name, &w.arg));
        assert_eq!(a.processes.len(), 2, "{}", b.id);
        assert_eq!(a.config, w.config, "{}", b.id);
        assert_eq!(a.config.cpu_threads, Some(1), "{}", b.id);
        assert_eq!(a.fingerprint.device.kind, "cpu");
        assert_eq!(
            a.fingerprint.libtorch_version,
            w.fingerprint.libtorch_version
        );
        assert_eq!(a.fingerprint.git_commit, archived.git_commit, "{}", b.id);
        assert_eq!(
            a.fingerprint.git_commit, w.fingerprint.git_commit,
            "{}",
            b.id
        );
    }
}
