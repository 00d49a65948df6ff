//! After `cargo gpubench setup` in a new workspace, plain `cargo bench` builds and
//! runs its benchmarks with no environment set, and `cargo gpubench` then builds
//! with the same environment: it compiles no torch-sys, tch or gpubench-core again.
//!
//! It builds tch against libtorch into a fresh target directory (minutes): run it
//! with `source scripts/env.sh` first (`LIBTORCH` names the libtorch that setup is
//! given; the commands under test run without it).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("cargo-gpubench is inside the workspace")
        .to_path_buf()
}

/// A new workspace of one package whose one bench target is a gpubench harness.
fn new_workspace(ws: &Path) {
    let core = repo_root().join("gpubench-core");
    let manifest = format!(
        "[package]\nname = \"first-hour\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\
         publish = false\n\n[workspace]\n\n[lib]\nbench = false\n\n[dev-dependencies]\n\
         gpubench-core = {{ path = {core:?} }}\ntch = \"=0.24.0\"\n\n\
         [[bench]]\nname = \"ops\"\nharness = false\n",
        core = core.display().to_string()
    );
    let bench = r#"use gpubench_core::{gpu_bench, Bencher};
use tch::{Kind, Tensor};

#[gpu_bench]
fn add(b: &mut Bencher) {
    let x = Tensor::ones([256], (Kind::Float, b.device()));
    b.iter(|| &x + 1.0);
}

gpubench_core::main!();
"#;
    std::fs::create_dir_all(ws.join("benches")).unwrap();
    std::fs::create_dir_all(ws.join("src")).unwrap();
    std::fs::write(ws.join("src/lib.rs"), "").unwrap();
    std::fs::write(ws.join("Cargo.toml"), manifest).unwrap();
    std::fs::write(ws.join("benches/ops.rs"), bench).unwrap();
    // The repository's lock, so tch and gpubench-core's dependencies resolve to what
    // this checkout builds with, offline.
    std::fs::copy(repo_root().join("Cargo.lock"), ws.join("Cargo.lock")).unwrap();
}

/// `cmd` in `ws` with none of the environment a user would not have set: no
/// libtorch variables, no loader path, no GPUBENCH_* but an empty cache (so no
/// `setup` environment of this machine is found), its own target directory.
fn as_a_new_user(mut cmd: Command, ws: &Path, tmp: &Path) -> Command {
    for (key, _) in std::env::vars_os() {
        let k = key.to_string_lossy();
        if k.starts_with("LIBTORCH") || k.starts_with("GPUBENCH_") || k == "LD_LIBRARY_PATH" {
            cmd.env_remove(&key);
        }
    }
    cmd.current_dir(ws)
        .env("GPUBENCH_CACHE_DIR", tmp.join("cache"))
        .env("CARGO_TARGET_DIR", tmp.join("target"))
        // Not a Python environment's torch either: setup is given the libtorch.
        .env("PATH", std::env::join_paths(cargo_path()).unwrap());
    cmd
}

/// PATH with cargo's directory and the system's, without a Python environment.
fn cargo_path() -> Vec<PathBuf> {
    let cargo = PathBuf::from(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    let mut path: Vec<PathBuf> = cargo.parent().map(Path::to_path_buf).into_iter().collect();
    path.extend(["/usr/local/bin", "/usr/bin", "/bin"].map(PathBuf::from));
    path
}

fn ran(what: &str, out: Output) -> (String, String) {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "{what}: {}\n--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}",
        out.status
    );
    (stdout, stderr)
}

#[test]
fn after_setup_plain_cargo_bench_runs_and_cargo_gpubench_rebuilds_no_torch_sys() {
    let _machine = crate::sharing();
    let libtorch = std::env::var_os("LIBTORCH")
        .filter(|v| !v.is_empty())
        .expect(
            "LIBTORCH is not set: this test gives setup the libtorch to use; run `source \
             scripts/env.sh` in the workspace root first",
        );
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().join("ws");
    new_workspace(&ws);

    let mut setup = Command::new(env!("CARGO_BIN_EXE_cargo-gpubench"));
    setup
        .args(["gpubench", "setup", "--libtorch"])
        .arg(&libtorch);
    let (_, stderr) = ran(
        "cargo gpubench setup",
        as_a_new_user(setup, &ws, tmp.path()).output().unwrap(),
    );
    assert!(stderr.contains(".cargo/config.toml"), "{stderr}");
    let config = std::fs::read_to_string(ws.join(".cargo/config.toml")).unwrap();
    assert!(
        config.contains(&*libtorch.to_string_lossy()),
        "the config names the libtorch: {config}"
    );

    let cargo = PathBuf::from(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    let mut bench = Command::new(&cargo);
    bench.args(["bench", "--", "--quick"]);
    let (stdout, stderr) = ran(
        "plain cargo bench",
        as_a_new_user(bench, &ws, tmp.path()).output().unwrap(),
    );
    assert!(
        stderr.contains("Compiling torch-sys"),
        "the first build builds torch-sys: {stderr}"
    );
    assert!(
        stdout.contains("add") || stderr.contains("add"),
        "the benchmark ran:\n{stdout}\n{stderr}"
    );

    let mut gpubench = Command::new(env!("CARGO_BIN_EXE_cargo-gpubench"));
    gpubench.args(["gpubench", "--quick", "--device", "cpu", "--no-report"]);
    let (_, stderr) = ran(
        "cargo gpubench",
        as_a_new_user(gpubench, &ws, tmp.path()).output().unwrap(),
    );
    for krate in ["torch-sys", "tch", "gpubench-core"] {
        assert!(
            !stderr.contains(&format!("Compiling {krate} ")),
            "cargo gpubench rebuilt {krate} after plain cargo bench:\n{stderr}"
        );
    }
    assert!(
        stderr.contains(".cargo/config.toml"),
        "the run says where its libtorch came from: {stderr}"
    );
}
