//! Helpers shared by the integration tests: running the built `cargo-gpubench` and
//! reading what a run stored.
#![allow(dead_code)]

pub mod browser;
#[cfg(unix)]
pub mod fake_harness;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use cargo_gpubench::testing::store::manifest::{ManifestBenchmark, RunManifest, MANIFEST_FILE};
use gpubench_record::id::file_stem_for_id;
use gpubench_record::record::RawRecord;

/// The binary under test, with the test environment's `GPUBENCH_*` variables
/// removed so only what a test sets applies.
pub fn cargo_gpubench() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_cargo-gpubench"));
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("GPUBENCH_") {
            cmd.env_remove(key);
        }
    }
    cmd
}

/// The virtual environment scripts/env.sh installs torch into: `GPUBENCH_VENV`, else
/// the repository's `.venv`.
pub fn project_venv() -> PathBuf {
    std::env::var_os("GPUBENCH_VENV")
        .filter(|v| !v.is_empty())
        .map_or_else(
            || {
                Path::new(env!("CARGO_MANIFEST_DIR"))
                    .parent()
                    .expect("cargo-gpubench is inside the workspace")
                    .join(".venv")
            },
            PathBuf::from,
        )
}

/// What a finished command printed, and its exit code.
pub struct Ran {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Ran {
    pub fn of(output: Output) -> Self {
        Ran {
            code: output.status.code(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    /// Panics with both streams unless the exit code is `code`.
    pub fn expect_code(self, code: i32) -> Self {
        assert_eq!(
            self.code,
            Some(code),
            "unexpected exit code\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.stdout,
            self.stderr
        );
        self
    }
}

/// `--exe=PATH`: one executable, so filters may follow it.
pub fn exe_arg(path: &Path) -> std::ffi::OsString {
    let mut arg = std::ffi::OsString::from("--exe=");
    arg.push(path);
    arg
}

pub fn run(cmd: &mut Command) -> Ran {
    Ran::of(cmd.output().expect("cargo-gpubench runs"))
}

/// The run `<out_dir>/latest` points at.
pub fn latest_run(out_dir: &Path) -> PathBuf {
    let run = cargo_gpubench::testing::store::runs::resolve_latest(out_dir)
        .unwrap_or_else(|| panic!("no latest run in {}", out_dir.display()));
    assert!(run.is_dir(), "{} is not a directory", run.display());
    run
}

pub fn manifest(run: &Path) -> RunManifest {
    RunManifest::read(&run.join(MANIFEST_FILE)).expect("the manifest reads back")
}

/// The manifest entry of `target/id`.
pub fn entry<'a>(m: &'a RunManifest, target: &str, id: &str) -> &'a ManifestBenchmark {
    m.benchmarks
        .iter()
        .find(|b| b.target == target && b.id == id)
        .unwrap_or_else(|| panic!("{target}/{id} is not in the manifest: {m:#?}"))
}

/// The stored record of a manifest entry.
pub fn record(run: &Path, b: &ManifestBenchmark) -> RawRecord {
    let file = b
        .record
        .as_ref()
        .unwrap_or_else(|| panic!("{} has no record", b.id));
    RawRecord::read(&run.join(file)).expect("the record reads back")
}

/// The stand-in bench executable's file name, as cargo names bench executables (the
/// hash is not part of the target).
pub const STAND_IN_EXE: &str = "fake-0123456789abcdef";

/// The replay stand-in: lists the ids in `bin/ids` (none of them ignored); measures
/// one by copying the record [`prepare_record`] prepared for it (noting the thread
/// count `cargo gpubench` gave it in `bin/threads.log`), and exits 101 (the harness's
/// "measured a failure") when a `fails` marker is there.
pub const REPLAY_HARNESS: &str = r#"#!/bin/sh
here=$(dirname "$0")
# The handshake of a gpubench harness, when cargo gpubench lists.
[ -n "$GPUBENCH_HANDSHAKE" ] && echo "gpubench-harness protocol 1"
case " $* " in
*" --list "*)
    case " $* " in
    *" --ignored "*) ;;
    *) cat "$here/ids" ;;
    esac
    exit 0 ;;
esac
[ "$1 $2" = "--bench --exact" ] || { echo "unexpected arguments: $*" >&2; exit 64; }
echo "$3 baseline_threads=${GPUBENCH_BASELINE_CPU_THREADS-unset}" >> "$here/threads.log"
d="$here/records/$(echo "$3" | tr / _)"
cp "$d"/*.json "$GPUBENCH_RECORD_DIR/" || exit 3
[ -f "$d/fails" ] && exit 101
exit 0
"#;

/// Sets up `dir` for a stand-in bench executable: `bin/<STAND_IN_EXE>` holding
/// `script`, a fake libtorch in `libtorch/`, and an empty `work/`. Returns `bin/`.
#[cfg(unix)]
pub fn stand_in(dir: &Path, script: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let exe = bin.join(STAND_IN_EXE);
    std::fs::write(&exe, script).unwrap();
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    let lib = dir.join("libtorch/lib");
    std::fs::create_dir_all(&lib).unwrap();
    std::fs::write(lib.join("libtorch_cpu.so"), b"").unwrap();
    std::fs::create_dir_all(dir.join("work")).unwrap();
    bin
}

/// A [`stand_in`] running [`REPLAY_HARNESS`] that lists `ids`. Returns `bin/`.
#[cfg(unix)]
pub fn replay_stand_in(dir: &Path, ids: &[&str]) -> PathBuf {
    let bin = stand_in(dir, REPLAY_HARNESS);
    let listing: String = ids.iter().map(|id| format!("{id}: benchmark\n")).collect();
    std::fs::write(bin.join("ids"), listing).unwrap();
    bin
}

/// `cargo-gpubench run --exe=<the stand-in of dir>` in `work/`, with the fake
/// libtorch; arguments to add follow.
#[cfg(unix)]
pub fn run_stand_in(dir: &Path) -> Command {
    let mut cmd = cargo_gpubench();
    cmd.current_dir(dir.join("work"))
        .env("LIBTORCH", dir.join("libtorch"))
        .arg("run")
        .arg(exe_arg(&dir.join("bin").join(STAND_IN_EXE)));
    cmd
}

/// Prepares `record` for the stand-in in `bin` to hand back, in
/// `records/<id with / as _>/`; with a `fails` marker (it then exits 101) when
/// `fails`.
pub fn prepare_record(bin: &Path, record: &RawRecord, fails: bool) {
    let d = bin.join("records").join(record.id.replace('/', "_"));
    std::fs::create_dir_all(&d).unwrap();
    let file = d.join(format!("{}.json", file_stem_for_id(&record.id)));
    std::fs::write(file, record.to_json_pretty()).unwrap();
    if fails {
        std::fs::write(d.join("fails"), "").unwrap();
    }
}

/// A synthetic GPU-like record of `id` on `device` (30 samples), slowed by `factor`,
/// seeded by `seed`.
pub fn synthetic_record(id: &str, device: &str, factor: f64, seed: u64) -> RawRecord {
    use rand::SeedableRng;
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(seed);
    gpubench_analysis::synthetic::GpuLikeSamples::default()
        .scaled(factor)
        .record(id, device, 30, &mut rng)
}

/// The schema `name` of `docs/schema/` (`record.schema.json`,
/// `run-summary.schema.json`, …).
pub fn schema(name: &str) -> jsonschema::Validator {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../docs/schema")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap();
    jsonschema::validator_for(&serde_json::from_str(&text).unwrap())
        .unwrap_or_else(|e| panic!("{} is not a schema: {e}", path.display()))
}

/// Checks `doc` against the schema `name` of `docs/schema/`, naming every place it
/// departs.
pub fn assert_valid(name: &str, doc: &serde_json::Value) {
    let errors: Vec<String> = schema(name)
        .iter_errors(doc)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{doc} does not match {name}:\n{}",
        errors.join("\n")
    );
}

/// `git -C dir ARGS` as a test's own committer (no signing, no `GIT_DIR` of the
/// caller's), which must succeed: its trimmed stdout.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args([
            "-c",
            "user.name=gpubench test",
            "-c",
            "user.email=test@example.com",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}
