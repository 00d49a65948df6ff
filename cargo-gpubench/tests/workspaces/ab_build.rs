//! `cargo gpubench ab` on a real two-commit repository: base (the first commit, as a
//! worktree) and head (the working tree) resolved, each bench target built as a
//! loadable library and loaded, each answering its own revision's benchmark ids; the
//! fallback's bench executables of the base; and `ab` itself on the CPU, paired and
//! in separate processes, calling a planted 2× slowdown regressed and the unchanged
//! benchmark not.
//!
//! It builds tch against libtorch into a fresh target directory (minutes), to show
//! that the second revision reuses the first's dependency builds: run it with
//! `source scripts/env.sh` first (`LIBTORCH`, and libtorch on the loader path).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use cargo_gpubench::testing::build::library::{self, fallback, LibraryBuild};
use cargo_gpubench::testing::build::revision::{self, Checkout, Resolution, Resolved, Revision};
use cargo_gpubench::testing::execute::paired::library::PairedLibrary;

use crate::support::{assert_valid, git};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("cargo-gpubench is inside the workspace")
        .to_path_buf()
}

fn cargo() -> PathBuf {
    PathBuf::from(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}

/// The bench file of a revision: `adds` alike in both, `planted` making
/// `planted_adds` additions per call (twice as many in the head: a planted 2×
/// slowdown), and `scales_<suffix>`. It reads a file beside its package through
/// `CARGO_MANIFEST_DIR` and a module beside itself, which a library build must find
/// as the bench target's build does.
fn bench_source(suffix: &str, planted_adds: u32) -> String {
    let leaves_state = suffix == "v2";
    format!(
        r#"mod common;

const PLANTED_ADDS: u32 = {planted_adds};

use gpubench_core::{{gpu_bench, Bencher}};
use tch::{{Kind, Tensor}};

const SCALE: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/scale.txt"));

#[gpu_bench]
fn adds(b: &mut Bencher) {{
    let x = Tensor::ones([ab_fixture::SIZE], (Kind::Float, b.device()));
    b.iter(|| &x + 1.0);
}}

#[gpu_bench]
fn planted(b: &mut Bencher) {{
    let x = Tensor::ones([ab_fixture::SIZE], (Kind::Float, b.device()));
    b.iter(|| (0..PLANTED_ADDS).fold(&x + 0.0, |acc, _| &acc + 1.0));
}}

/// The head leaves process state behind in its set-up; the base's set-up fails when
/// it finds it, as the CUDA generator a failed graph capture leaves in capture mode
/// fails the next `randn`: only when the two share a process with the head first.
#[gpu_bench]
fn poisoned(b: &mut Bencher) {{
    if {leaves_state} {{
        std::env::set_var("AB_FIXTURE_POISON", "1");
    }} else if std::env::var_os("AB_FIXTURE_POISON").is_some() {{
        panic!("state left behind by the other revision");
    }}
    let x = Tensor::ones([ab_fixture::SIZE], (Kind::Float, b.device()));
    b.iter(|| &x - 1.0);
}}

/// The head exits with 75 (the code a paired process once used to say "cannot pair")
/// when asked to.
#[gpu_bench]
fn exits_75(b: &mut Bencher) {{
    if {leaves_state} && std::env::var_os("AB_FIXTURE_EXIT_75").is_some() {{
        std::process::exit(75);
    }}
    let x = Tensor::ones([ab_fixture::SIZE], (Kind::Float, b.device()));
    b.iter(|| &x * 3.0);
}}

#[gpu_bench]
fn scales_{suffix}(b: &mut Bencher) {{
    let x = Tensor::ones([common::size()], (Kind::Float, b.device()));
    let s: f64 = SCALE.trim().parse().unwrap();
    b.iter(|| &x * s);
}}

fn main() {{
    gpubench_core::main()
}}
"#
    )
}

/// A workspace of one package with a lib and one `#[gpu_bench]` target, in a git
/// repository of two commits that differ in one benchmark id and in the work of
/// `planted`; returns the first commit's sha.
fn two_commit_workspace(ws: &Path) -> String {
    let core = repo_root().join("gpubench-core");
    let manifest = format!(
        "[package]\nname = \"ab-fixture\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\
         publish = false\n\n[workspace]\n\n[dependencies]\n\
         gpubench-core = {{ path = {core:?} }}\ntch = \"=0.24.0\"\n\n\
         [[bench]]\nname = \"pair\"\nharness = false\n",
        core = core.display().to_string()
    );
    let files = [
        ("Cargo.toml", manifest),
        ("src/lib.rs", "pub const SIZE: i64 = 64;\n".to_string()),
        (
            // Not `benches/common.rs`, which cargo would take for a bench target.
            "benches/common/mod.rs",
            "pub fn size() -> i64 {\n    32\n}\n".to_string(),
        ),
        ("scale.txt", "2.0\n".to_string()),
        (".gitignore", "/target\n".to_string()),
        ("benches/pair.rs", bench_source("v1", 8)),
    ];
    for (name, text) in &files {
        let path = ws.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    // The repository's lock, so the fixture resolves tch and gpubench-core's
    // dependencies to what this checkout builds with, offline.
    std::fs::copy(repo_root().join("Cargo.lock"), ws.join("Cargo.lock")).unwrap();
    git(ws, &["init", "--quiet", "-b", "main"]);
    git(ws, &["add", "--all"]);
    git(ws, &["commit", "--quiet", "-m", "scales_v1"]);
    let first = git(ws, &["rev-parse", "HEAD"]);
    std::fs::write(ws.join("benches/pair.rs"), bench_source("v2", 16)).unwrap();
    git(ws, &["commit", "--quiet", "--all", "-m", "scales_v2"]);
    first
}

/// Builds `revision`'s libraries as `ab` does, timing it.
fn build_libraries(revision: &Revision, target_dir: &Path) -> (LibraryBuild, f64) {
    let start = Instant::now();
    let plan = library::prepare(&cargo(), revision, &[], &[], target_dir)
        .unwrap_or_else(|e| panic!("{e}"));
    let built = plan
        .build(plan.command(&cargo()))
        .unwrap_or_else(|e| panic!("{e}"));
    (built, start.elapsed().as_secs_f64())
}

fn listed_ids(path: &Path) -> Vec<String> {
    let library = PairedLibrary::load(path).unwrap_or_else(|e| panic!("{e}"));
    let mut ids: Vec<String> = library
        .list()
        .unwrap_or_else(|e| panic!("{e}"))
        .into_iter()
        .map(|b| b.id)
        .collect();
    ids.sort();
    ids
}

#[test]
fn base_and_head_build_as_libraries_that_list_their_own_benchmarks() {
    let _machine = crate::measuring();
    assert!(
        std::env::var_os("LIBTORCH").is_some_and(|v| !v.is_empty()),
        "LIBTORCH is not set: this test builds tch against libtorch and loads it; run \
         `source scripts/env.sh` in the workspace root first"
    );
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().join("ws");
    let first = two_commit_workspace(&ws);
    // Fresh, so the first build pays for tch and the second shows it does not.
    let target_dir = tmp.path().join("target");

    let Ok(Resolution::Compare(resolved)) =
        revision::resolve(&ws, &ws, Some(&first), None, &target_dir)
    else {
        panic!("two revisions to compare")
    };
    let Resolved {
        base,
        head,
        checkouts: _checkouts,
        ..
    } = *resolved;
    assert_eq!(base.checkout, Checkout::Worktree);
    assert_eq!(base.commit.as_deref(), Some(first.as_str()));
    assert_eq!(head.checkout, Checkout::WorkingTree);
    assert!(!head.dirty);

    let (base_built, base_s) = build_libraries(&base, &target_dir);
    let (head_built, head_s) = build_libraries(&head, &target_dir);
    eprintln!("library builds: base {base_s:.1} s (tch included), head {head_s:.1} s");

    for built in [&base_built, &head_built] {
        assert_eq!(built.libraries.len(), 1, "{built:?}");
        assert_eq!(built.libraries[0].package, "ab-fixture");
        assert_eq!(built.libraries[0].target, "pair");
    }
    let (base_lib, head_lib) = (&base_built.libraries[0].path, &head_built.libraries[0].path);
    assert_ne!(
        base_lib, head_lib,
        "each revision has a library file of its own"
    );
    assert!(
        base_lib.starts_with(&target_dir),
        "built into the shared target directory: {}",
        base_lib.display()
    );
    // Both loaded into this one process, as the paired driver loads them.
    assert_eq!(
        listed_ids(base_lib),
        ["adds", "exits_75", "planted", "poisoned", "scales_v1"]
    );
    assert_eq!(
        listed_ids(head_lib),
        ["adds", "exits_75", "planted", "poisoned", "scales_v2"]
    );

    assert!(
        head_s * 4.0 < base_s,
        "the second revision reuses the first's dependency builds: base {base_s:.1} s, \
         head {head_s:.1} s"
    );

    // The fallback: the base's bench executable, as a run builds it, answering the
    // base's benchmarks.
    let start = Instant::now();
    let plan =
        fallback::prepare(&cargo(), &base, &[], &[], &target_dir).unwrap_or_else(|e| panic!("{e}"));
    let built = plan
        .build(plan.command(&cargo()))
        .unwrap_or_else(|e| panic!("{e}"));
    eprintln!(
        "fallback executable build: {:.1} s",
        start.elapsed().as_secs_f64()
    );
    assert_eq!(built.executables.len(), 1);
    let exe = &built.executables[0];
    assert_eq!(exe.target, "pair");
    assert!(exe.path.starts_with(&target_dir));
    let listed = Command::new(&exe.path)
        .args(["--list", "--format", "terse"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&listed.stdout);
    assert!(listed.status.success(), "{stdout}");
    assert!(stdout.contains("scales_v1: benchmark"), "{stdout}");
    assert!(!stdout.contains("scales_v2"), "{stdout}");

    ab_judges_the_planted_slowdown(&ws, &target_dir, &first);
    a_benchmark_that_exits_75_fails_alone(&ws, &target_dir, &first);
}

/// A head benchmark that exits with 75 is that benchmark's failure, recorded against
/// the head, and the `ab` run completes: the code is no signal between the paired
/// process and `ab`.
fn a_benchmark_that_exits_75_fails_alone(ws: &Path, target_dir: &Path, base: &str) {
    let out = Command::new(env!("CARGO_BIN_EXE_cargo-gpubench"))
        .current_dir(ws)
        .env("CARGO_TARGET_DIR", target_dir)
        .env("AB_FIXTURE_EXIT_75", "1")
        .args([
            "gpubench", "ab", "--base", base, "--device", "cpu", "--quick",
        ])
        .args(["--format", "json", "--no-report", "--processes", "2"])
        .args(["--exact", "exits_75", "adds"])
        .output()
        .expect("cargo-gpubench runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let v: serde_json::Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("{e}\n--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}"));
    assert_eq!(
        out.status.code(),
        Some(1),
        "a benchmark failed\n{stderr}\n{v:#}"
    );
    assert_eq!(v["status"], "completed", "{v:#}");
    let status = |id: &str| {
        v["benchmarks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["id"] == id)
            .map(|b| b["status"].clone())
    };
    assert_eq!(status("exits_75"), Some("failed".into()), "{v:#}");
    assert_eq!(
        status("adds"),
        Some("passed".into()),
        "the other benchmark ran: {v:#}"
    );
    let run = PathBuf::from(v["run_dir"].as_str().unwrap());
    let stem = gpubench_record::id::file_stem_for_id("exits_75");
    let base_record =
        gpubench_record::record::RawRecord::read(&run.join("base").join(format!("{stem}.json")))
            .unwrap();
    assert!(
        base_record.passed(),
        "the base passed alone: {base_record:?}"
    );
    let head_record =
        gpubench_record::record::RawRecord::read(&run.join(format!("{stem}.json"))).unwrap();
    let failure = head_record.failure().expect("the head failed");
    assert!(
        failure.message.contains("75"),
        "its exit code is named: {}",
        failure.message
    );
}

/// `cargo gpubench ab` on the CPU against the fixture's first commit: the planted 2×
/// slowdown is regressed, the unchanged benchmark is not, the renamed one is missing
/// evidence (gone) on one side and new on the other; paired in one process, and the
/// same verdicts in separate processes.
fn ab_judges_the_planted_slowdown(ws: &Path, target_dir: &Path, base: &str) {
    let ab = |extra: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_cargo-gpubench"))
            .current_dir(ws)
            .env("CARGO_TARGET_DIR", target_dir)
            .args([
                "gpubench", "ab", "--base", base, "--device", "cpu", "--quick",
            ])
            .args(["--format", "json", "--no-report", "--processes", "5"])
            .args(extra)
            .output()
            .expect("cargo-gpubench runs");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        let v: serde_json::Value = serde_json::from_str(&stdout)
            .unwrap_or_else(|e| panic!("{e}\n--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}"));
        (out.status.code(), v, stderr)
    };
    let verdict = |v: &serde_json::Value, id: &str| -> String {
        let b = v["benchmarks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["id"] == id)
            .unwrap_or_else(|| panic!("no {id} in {v}"));
        b["comparison"]["comparison"]["verdict"]
            .as_str()
            .unwrap_or("none")
            .to_string()
    };
    for (extra, paired) in [(&[][..], true), (&["--separate-processes"][..], false)] {
        let start = Instant::now();
        let (code, v, stderr) = ab(extra);
        eprintln!(
            "ab {extra:?}: exit {code:?} in {:.1} s",
            start.elapsed().as_secs_f64()
        );
        assert_eq!(code, Some(4), "the gate fails\n{stderr}\n{v:#}");
        assert_eq!(v["ab"]["paired"], paired, "{}", v["ab"]);
        assert_valid("run-summary.schema.json", &v);
        if paired {
            assert_eq!(verdict(&v, "planted"), "regressed", "{v:#}");
        } else {
            // Separate processes on a CPU judge host-bound work as a run does: a
            // change beyond 50% and the processes' spread, which a busy CI machine
            // may widen past the 2x; the change itself shows either way.
            assert!(
                ["regressed", "ambiguous"].contains(&verdict(&v, "planted").as_str()),
                "{v:#}"
            );
            let planted = v["benchmarks"]
                .as_array()
                .unwrap()
                .iter()
                .find(|b| b["id"] == "planted")
                .unwrap();
            let change = planted["comparison"]["comparison"]["change"]["point"]
                .as_f64()
                .unwrap();
            assert!(change > 0.3, "head and base are told apart: {change}");
        }
        assert_ne!(verdict(&v, "adds"), "regressed", "{v:#}");
        assert_ne!(verdict(&v, "adds"), "improved", "{v:#}");
        let missing = v["comparison"]["missing"].as_array().unwrap();
        assert!(
            missing
                .iter()
                .any(|m| m["id"] == "scales_v1" && m["kind"] == "gone"),
            "{missing:?}"
        );
        assert!(
            v["comparison"]["set"]["missing_in_baseline"]
                .as_array()
                .unwrap()
                .iter()
                .any(|id| id == "scales_v2"),
            "the head's new benchmark is measured alone and listed as new"
        );
        if paired {
            // The base of `poisoned` fails beside the head once the head opens first
            // (process 2): from then on each side runs alone, and it is judged.
            let poisoned = v["benchmarks"]
                .as_array()
                .unwrap()
                .iter()
                .find(|b| b["id"] == "poisoned")
                .unwrap();
            assert_eq!(poisoned["status"], "passed", "{poisoned:#}");
            assert!(
                ["no_change", "ambiguous"].contains(&verdict(&v, "poisoned").as_str()),
                "poisoned is judged: {poisoned:#}"
            );
            let note = poisoned["comparison"]["comparison"]["note"]
                .as_str()
                .unwrap_or_default();
            assert!(
                note.contains("judged on separate processes")
                    && note.contains("the base")
                    && note.contains("failed beside the head"),
                "{note}"
            );
            assert!(
                stderr.contains("poisoned: the base") && stderr.contains("separate processes"),
                "said once while running: {stderr}"
            );
            assert!(
                !missing.iter().any(|m| m["id"] == "poisoned"),
                "no missing evidence: {missing:?}"
            );
            let run = std::path::PathBuf::from(v["run_dir"].as_str().unwrap());
            let stem = gpubench_record::id::file_stem_for_id("poisoned");
            let base_record = gpubench_record::record::RawRecord::read(
                &run.join("base").join(format!("{stem}.json")),
            )
            .unwrap();
            assert!(
                base_record.passed(),
                "the base passed alone: {base_record:?}"
            );
            let unpaired: Vec<_> = base_record
                .processes
                .iter()
                .filter_map(|r| r.unpaired.as_ref())
                .collect();
            assert_eq!(unpaired.len(), 4, "processes 2 to 5 alone");
            assert_eq!(unpaired[0].failed_process, 2);
            assert_eq!(
                unpaired[0].failed_side,
                Some(gpubench_record::paired::Role::Base)
            );
            assert!(
                unpaired[0]
                    .error
                    .contains("state left behind by the other revision"),
                "the raw error is kept: {}",
                unpaired[0].error
            );
            // Each process gave a paired ratio of the planted benchmark's head over
            // its base: about 2.
            let run = std::path::PathBuf::from(v["run_dir"].as_str().unwrap());
            let path = run.join(format!(
                "{}.json",
                gpubench_record::id::file_stem_for_id("planted")
            ));
            assert_valid(
                "record.schema.json",
                &serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap(),
            );
            let record = gpubench_record::record::RawRecord::read(&path).unwrap();
            let ratios: Vec<f64> = record
                .processes
                .iter()
                .filter_map(|r| r.pairing.as_ref())
                .map(|p| p.log_ratio.exp())
                .collect();
            assert_eq!(ratios.len(), 5, "{ratios:?}");
            assert!(ratios.iter().all(|r| *r > 1.3), "{ratios:?}");
            assert!(
                run.join("base")
                    .join(format!(
                        "{}.json",
                        gpubench_record::id::file_stem_for_id("planted")
                    ))
                    .is_file(),
                "the base's record is kept beside the head's"
            );
        }
    }
}
