//! `cargo gpubench slurm` against a real Slurm: `scripts/slurm-local` starts Debian's
//! slurmctld, slurmd and munged on this machine (installing slurm-wlm and munge when
//! missing, as root) with 4 GPUs modelled as gres, and stops them by pid when the
//! test ends, passed or not. The suite is a stand-in harness in an archive (no
//! libtorch, no build): 8 benchmarks whose records are prepared, so the test judges
//! the scheduling, the merge and the gate, not timings.
//!
//! `ab` over 2 tasks builds a two-commit package's bench targets as libraries
//! (with tch, into the nested target directory the workspace tests share) and
//! measures them on the CPU.
//!
//! Ignored by default (they need root or an installed Slurm, and take minutes):
//! `.ci/run` runs them with `--ignored`.
#![cfg(unix)]

#[path = "../support/mod.rs"]
mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use cargo_gpubench::testing::archive::pack::{self, Bundle, BundledExecutable};
use cargo_gpubench::testing::archive::ArchivedBenchmark;
use cargo_gpubench::testing::build::compile::BenchExecutable;
use cargo_gpubench::testing::store::manifest::RunStatus;
use gpubench_analysis::baseline::ComparisonOutcome;
use gpubench_analysis::BaselineStore;
use gpubench_record::record::RawRecord;
use support::{
    cargo_gpubench, latest_run, manifest, prepare_record, run, stand_in, Ran, STAND_IN_EXE,
};

const DEVICE: &str = "NVIDIA H200";
const IDS: [&str; 8] = [
    "op/1", "op/2", "op/3", "op/4", "op/5", "op/6", "op/7", "op/8",
];

/// Lists [`IDS`]; a benchmark process notes which task ran it and the GPUs it saw,
/// waits `$FAKE_SLEEP` seconds (so the tasks overlap, and a task can be cancelled
/// while it measures) and hands back the record prepared in `$FAKE_RECORDS`.
const STAND_IN: &str = r#"#!/bin/sh
[ -n "$GPUBENCH_HANDSHAKE" ] && echo "gpubench-harness protocol 1"
case " $* " in
*" --list "*)
    case " $* " in
    *" --ignored "*) ;;
    *) for i in 1 2 3 4 5 6 7 8; do echo "op/$i: benchmark"; done ;;
    esac
    exit 0 ;;
esac
[ "$1 $2" = "--bench --exact" ] || { echo "unexpected arguments: $*" >&2; exit 64; }
echo "$3 task=${SLURM_ARRAY_JOB_ID-none}_${SLURM_ARRAY_TASK_ID-none} cvd=${CUDA_VISIBLE_DEVICES-unset}" >> "$FAKE_LOG"
sleep "${FAKE_SLEEP:-0}"
cp "$FAKE_RECORDS/records/$(echo "$3" | tr / _)/"*.json "$GPUBENCH_RECORD_DIR/"
"#;

/// A record of `id` of 5 processes (enough for a verdict on each side), `factor`
/// times slower, seeded by `seed`.
fn synthetic_record(id: &str, factor: f64, seed: u64) -> RawRecord {
    use rand::SeedableRng;
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(seed);
    gpubench_analysis::synthetic::GpuLikeSamples::default()
        .scaled(factor)
        .record_processes(id, DEVICE, 5, 30, &mut rng)
}

/// The local Slurm, stopped by its daemons' pids when dropped.
struct Slurm {
    state: PathBuf,
}

impl Slurm {
    /// A Slurm whose daemons listen on `ports` (each test its own, as tests run at
    /// once).
    fn start(state: &Path, ports: (u16, u16)) -> Slurm {
        let out = Command::new(script())
            .arg("start")
            .arg(state)
            .env("SLURM_LOCAL_CTLD_PORT", ports.0.to_string())
            .env("SLURM_LOCAL_D_PORT", ports.1.to_string())
            .output()
            .expect("scripts/slurm-local runs");
        // Stopped even when starting failed halfway.
        let slurm = Slurm {
            state: state.to_path_buf(),
        };
        assert!(
            out.status.success(),
            "scripts/slurm-local start failed:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        slurm
    }

    fn conf(&self) -> PathBuf {
        self.state.join("slurm.conf")
    }
}

impl Drop for Slurm {
    fn drop(&mut self) {
        let _ = Command::new(script()).arg("stop").arg(&self.state).status();
    }
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/slurm-local")
}

/// The machine: a fake libtorch, the archive of the stand-in with a baseline `main`
/// of every benchmark, and record sets to hand back.
struct Suite {
    // Before `dir`: fields drop in order, and the daemons' pids are in `dir`.
    slurm: Slurm,
    dir: tempfile::TempDir,
}

impl Suite {
    fn path(&self, p: &str) -> PathBuf {
        self.dir.path().join(p)
    }

    /// Records of every benchmark in `name/`, `slow` times slower for `slowed`.
    fn records(&self, name: &str, slowed: &[&str], slow: f64) {
        for (seed, id) in IDS.iter().enumerate() {
            let factor = if slowed.contains(id) { slow } else { 1.0 };
            prepare_record(
                &self.path(name),
                &synthetic_record(id, factor, 100 + seed as u64),
                false,
            );
        }
    }

    /// `cargo-gpubench slurm ARGS` with the stand-in's records `records`, its log
    /// `log` and `sleep` seconds per benchmark; the tasks inherit the environment.
    fn slurm(&self, records: &str, log: &str, sleep: f64) -> Command {
        let mut cmd = cargo_gpubench();
        cmd.current_dir(self.path("work"))
            .env("SLURM_CONF", self.slurm.conf())
            .env("GPUBENCH_SLURM_POLL_S", "0.5")
            .env("LIBTORCH", self.path("libtorch"))
            .env("TMPDIR", self.path("tmp"))
            .env("FAKE_RECORDS", self.path(records))
            .env("FAKE_LOG", self.path(log))
            .env("FAKE_SLEEP", sleep.to_string())
            .env("CARGO", "/nonexistent/cargo")
            .arg("slurm");
        cmd
    }

    /// `slurm run --parts N --dir <name> --archive … ARGS -- --processes 1`.
    fn submit(&self, name: &str, parts: u32, records: &str, sleep: f64, args: &[&str]) -> Command {
        let mut cmd = self.slurm(records, &format!("{name}.log"), sleep);
        cmd.args(["run", "--parts", &parts.to_string(), "--dir"])
            .arg(self.path(name))
            .arg("--archive")
            .arg(self.path("benches.tar.gz"))
            .arg(format!(
                "--merge-arg=--summary-file={}",
                self.path(&format!("{name}.md")).display()
            ))
            .args(args)
            .args(["--", "--processes", "1"]);
        cmd
    }

    /// The benchmark processes of `name` by id: the task and GPUs each saw.
    fn calls(&self, name: &str) -> BTreeMap<String, Vec<(String, String)>> {
        let text = std::fs::read_to_string(self.path(&format!("{name}.log"))).unwrap_or_default();
        let mut calls: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
        for line in text.lines() {
            let mut words = line.split_whitespace();
            let id = words.next().unwrap().to_string();
            let task = words
                .next()
                .unwrap()
                .trim_start_matches("task=")
                .to_string();
            let cvd = words.next().unwrap().trim_start_matches("cvd=").to_string();
            calls.entry(id).or_default().push((task, cvd));
        }
        calls
    }
}

fn suite() -> Suite {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let slurm = Slurm::start(&root.join("slurm"), (16817, 16818));
    let bin = stand_in(root, STAND_IN);
    std::fs::write(
        root.join("libtorch/version.py"),
        "__version__ = '2.11.0+cpu'\n",
    )
    .unwrap();
    std::fs::create_dir_all(root.join("tmp")).unwrap();
    let ws = root.join("ws");
    let store = BaselineStore::for_workspace(&ws);
    let baseline: Vec<_> = IDS
        .iter()
        .enumerate()
        .map(|(seed, id)| synthetic_record(id, 1.0, seed as u64))
        .collect();
    store.save("main", &baseline).unwrap();
    let bundle = Bundle {
        executables: vec![BundledExecutable {
            exe: BenchExecutable {
                package: Some("gpu".into()),
                target: "suite".into(),
                path: bin.join(STAND_IN_EXE),
            },
            benchmarks: IDS
                .map(|id| ArchivedBenchmark {
                    id: id.into(),
                    ignored: false,
                })
                .to_vec(),
        }],
        native_dirs: vec![],
        baselines: vec![("main".into(), store.dir("main").unwrap())],
        git_commit: None,
        libtorch_version: Some("2.11.0+cpu".into()),
    };
    pack::write(&bundle, &root.join("benches.tar.gz")).unwrap();
    let suite = Suite { slurm, dir };
    suite.records("same", &[], 1.0);
    suite.records("slower", &["op/6"], 2.0);
    suite
}

fn task_files(dir: &Path) -> Vec<BTreeMap<String, String>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir.join("tasks"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "started"))
        .collect();
    files.sort();
    files
        .iter()
        .map(|p| {
            std::fs::read_to_string(p)
                .unwrap()
                .lines()
                .filter_map(|l| l.split_once('='))
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        })
        .collect()
}

fn tasks_json(run: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(run.join("slurm-tasks.json")).unwrap()).unwrap()
}

#[test]
#[ignore = "starts a real Slurm (root, or slurm-wlm and munge installed): .ci/run runs it"]
fn a_suite_over_a_slurm_array_merges_into_one_run_and_one_gate() {
    let s = suite();

    // Four tasks, one GPU each, every benchmark measured exactly once.
    let clock = Instant::now();
    let ran = run(&mut s.submit("four", 4, "same", 1.0, &["--wait"])).expect_code(0);
    let four = clock.elapsed();
    let calls = s.calls("four");
    assert_eq!(
        calls.keys().map(String::as_str).collect::<Vec<_>>(),
        IDS,
        "{}",
        ran.stderr
    );
    for (id, c) in &calls {
        assert_eq!(c.len(), 1, "{id} measured once: {c:?}");
    }
    let tasks = task_files(&s.path("four"));
    assert_eq!(tasks.len(), 4, "{tasks:?}");
    let gpus: BTreeSet<&str> = tasks
        .iter()
        .map(|t| t["cuda_visible_devices"].as_str())
        .collect();
    assert_eq!(
        gpus,
        BTreeSet::from(["0", "1", "2", "3"]),
        "each task its own GPU"
    );
    // The benchmark processes saw their task's GPUs.
    for c in calls.values() {
        let (task, cvd) = &c[0];
        let mine = tasks.iter().find(|t| &t["job"] == task).unwrap();
        assert_eq!(&mine["cuda_visible_devices"], cvd, "{task}");
    }
    let merged = latest_run(&s.path("four/merged"));
    let m = manifest(&merged);
    assert_eq!(m.status, RunStatus::Completed);
    assert_eq!(m.benchmarks.len(), 8);
    let parts: BTreeSet<String> = m
        .merged_from
        .iter()
        .filter_map(|p| p.partition.clone())
        .collect();
    assert_eq!(
        parts,
        (1..=4)
            .map(|k| format!("count:{k}/4"))
            .collect::<BTreeSet<_>>()
    );
    let table = tasks_json(&merged);
    let outcomes: Vec<&str> = table["parts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(outcomes, ["merged"; 4], "{table}");
    // The report lists the four parts.
    let index = std::fs::read_to_string(s.path("four/merged/report/index.html"))
        .unwrap()
        .replace("&#x2F;", "/");
    for k in 1..=4 {
        assert!(
            index.contains(&format!("<code>count:{k}/4</code>")),
            "part {k} in the report's table of parts"
        );
    }
    let summary = std::fs::read_to_string(s.path("four.md")).unwrap();
    for id in IDS {
        assert!(summary.contains(id), "{id} in the summary:\n{summary}");
    }
    for k in 1..=4 {
        assert!(
            summary.contains(&format!("| `count:{k}/4` |")),
            "part {k} in the summary's table of parts:\n{summary}"
        );
    }
    for k in 1..=4 {
        assert!(
            ran.stderr.contains(&format!("part {k}/4:")),
            "{}",
            ran.stderr
        );
    }

    // The same suite as one task, for the figures.
    let clock = Instant::now();
    run(&mut s.submit("one", 1, "same", 1.0, &["--wait"])).expect_code(0);
    let one = clock.elapsed();
    eprintln!(
        "wall time with 1 s per benchmark, 8 benchmarks: 4 tasks {:.1} s, 1 task {:.1} s",
        four.as_secs_f64(),
        one.as_secs_f64()
    );

    // A planted 2x slowdown fails the gate.
    let ran = run(&mut s.submit("slower", 4, "slower", 0.0, &["--wait"])).expect_code(4);
    assert!(ran.stderr.contains("op/6"), "{}", ran.stderr);

    // A task cancelled while it measures: the merged run is incomplete and the gate
    // fails naming the task; resubmitting the part completes it.
    let ran = run(&mut s.submit("cancel", 4, "same", 3.0, &[])).expect_code(0);
    let job =
        cargo_gpubench::testing::commands::slurm::layout::Job::read(&s.path("cancel")).unwrap();
    let array = job.attempts[0].array_job.clone();
    let started = s.path(&format!("cancel/tasks/part-3.job-{array}.started"));
    let deadline = Instant::now() + Duration::from_secs(60);
    while !started.is_file() {
        assert!(
            Instant::now() < deadline,
            "task 3 never started: {}",
            ran.stderr
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    std::thread::sleep(Duration::from_secs(1));
    let status = Command::new("scancel")
        .env("SLURM_CONF", s.slurm.conf())
        .arg(format!("{array}_3"))
        .status()
        .unwrap();
    assert!(status.success());
    let ran: Ran = run(s
        .slurm("same", "cancel.log", 3.0)
        .arg("follow")
        .arg(s.path("cancel")))
    .expect_code(1);
    assert!(
        ran.stderr
            .contains(&format!("Slurm task {array}_3 ended CANCELLED")),
        "the gate names the task and its state:\n{}",
        ran.stderr
    );
    let merged = latest_run(&s.path("cancel/merged"));
    let m = manifest(&merged);
    assert_eq!(m.status, RunStatus::Incomplete);
    assert_eq!(m.benchmarks.len(), 6, "parts 1, 2 and 4");
    let table = tasks_json(&merged);
    assert_eq!(table["parts"][2]["outcome"], "lost", "{table}");
    assert_eq!(table["parts"][2]["state"], "CANCELLED", "{table}");
    let summary = std::fs::read_to_string(s.path("cancel.md")).unwrap();
    assert!(
        summary.contains(&format!("| `count:3/4` | `{array}_3` | CANCELLED"))
            && summary.contains(&format!("Slurm task {array}_3 ended CANCELLED")),
        "{summary}"
    );

    let ran = run(s
        .slurm("same", "cancel.log", 0.0)
        .arg("resubmit")
        .arg(s.path("cancel"))
        .arg("--wait"))
    .expect_code(0);
    let merged = latest_run(&s.path("cancel/merged"));
    let m = manifest(&merged);
    assert_eq!(m.status, RunStatus::Completed, "{}", ran.stderr);
    assert_eq!(m.benchmarks.len(), 8);
    // The cancelled attempt's run is kept beside the new one.
    let runs = std::fs::read_dir(s.path("cancel/parts/3/runs"))
        .unwrap()
        .count();
    assert_eq!(runs, 2, "both attempts of part 3 are kept");
}

#[test]
fn the_local_slurm_script_is_shellcheck_clean() {
    let out = Command::new("shellcheck")
        .arg(script())
        .output()
        .expect("shellcheck runs (Debian: apt-get install shellcheck; scripts/test does)");
    assert!(
        out.status.success(),
        "shellcheck scripts/slurm-local:\n{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("cargo-gpubench is inside the workspace")
        .to_path_buf()
}

/// The bench file of a revision: `planted` makes `products` matrix products per
/// call (8 times as many in the head: on a small machine other work shares, the
/// CPU's processes spread by tens of percent, which a 2x can drown in), the others
/// alike in both.
fn ab_bench_source(products: u32) -> String {
    format!(
        r#"use gpubench_core::{{gpu_bench, Bencher}};
use tch::{{Kind, Tensor}};

#[gpu_bench]
fn planted(b: &mut Bencher) {{
    let x = Tensor::ones([160, 160], (Kind::Float, b.device()));
    let w = Tensor::eye(160, (Kind::Float, b.device()));
    b.iter(|| (0..{products}).fold(x.shallow_clone(), |acc, _| acc.matmul(&w)));
}}

#[gpu_bench]
fn adds(b: &mut Bencher) {{
    let x = Tensor::ones([4096], (Kind::Float, b.device()));
    b.iter(|| &x + 1.0);
}}

#[gpu_bench]
fn muls(b: &mut Bencher) {{
    let x = Tensor::ones([4096], (Kind::Float, b.device()));
    b.iter(|| &x * 2.0);
}}

fn main() {{
    gpubench_core::main()
}}
"#
    )
}

#[test]
#[ignore = "starts a real Slurm and builds tch bench libraries: .ci/run runs it"]
fn ab_over_a_slurm_array_merges_into_one_paired_run_and_one_gate() {
    let tmp = tempfile::tempdir().unwrap();
    let slurm = Slurm::start(&tmp.path().join("slurm"), (16827, 16828));
    let ws = tmp.path().join("kernels");
    std::fs::create_dir_all(ws.join("benches")).unwrap();
    std::fs::write(
        ws.join("Cargo.toml"),
        format!(
            "[package]\nname = \"kernels\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
             [dev-dependencies]\ngpubench-core = {{ path = \"{}\" }}\ntch = \"=0.24.0\"\n\n\
             [[bench]]\nname = \"ops\"\nharness = false\n\n[workspace]\n",
            repo_root().join("gpubench-core").display()
        ),
    )
    .unwrap();
    std::fs::create_dir_all(ws.join("src")).unwrap();
    std::fs::write(ws.join("src/lib.rs"), "").unwrap();
    // This repository's lock, so tch and gpubench-core's dependencies resolve
    // offline to what is built.
    std::fs::copy(repo_root().join("Cargo.lock"), ws.join("Cargo.lock")).unwrap();
    std::fs::write(ws.join(".gitignore"), "/target\n").unwrap();
    std::fs::write(ws.join("benches/ops.rs"), ab_bench_source(3)).unwrap();
    support::git(&ws, &["init", "--quiet", "-b", "main"]);
    support::git(&ws, &["add", "--all"]);
    support::git(&ws, &["commit", "--quiet", "-m", "benchmarks"]);
    let base = support::git(&ws, &["rev-parse", "HEAD"]);
    std::fs::write(ws.join("benches/ops.rs"), ab_bench_source(24)).unwrap();
    support::git(
        &ws,
        &["commit", "--quiet", "--all", "-m", "twice the products"],
    );

    // The target directory the workspace tests share, where tch is built once.
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("target"))
        .join("nested");
    let dir = tmp.path().join("ab");
    let summary = tmp.path().join("ab.md");
    let ran = run(cargo_gpubench()
        .current_dir(&ws)
        .env("SLURM_CONF", slurm.conf())
        .env("GPUBENCH_SLURM_POLL_S", "1")
        .env("CARGO_TARGET_DIR", &target)
        .env("OMP_NUM_THREADS", "1")
        .args(["slurm", "ab", "--base", &base, "--parts", "2", "--dir"])
        .arg(&dir)
        .arg(format!("--merge-arg=--summary-file={}", summary.display()))
        // On a small machine other work shares, the CPU's processes may spread so
        // widely that a change is called ambiguous rather than regressed: either trips.
        .arg("--merge-arg=--fail-on=ambiguous")
        .args(["--wait", "--", "--device", "cpu", "--quick"]));
    assert_eq!(
        ran.code,
        Some(4),
        "the planted 8x fails the merged gate\n{}\n{}",
        ran.stdout,
        ran.stderr
    );
    let merged = latest_run(&dir.join("merged"));
    let m = manifest(&merged);
    assert_eq!(m.status, RunStatus::Completed);
    let ab = m.ab.as_ref().expect("the merged run is an ab run");
    assert_eq!(ab.base.commit.as_deref(), Some(base.as_str()));
    assert!(ab.paired, "{ab:?}");
    let parts: BTreeSet<String> = m
        .merged_from
        .iter()
        .filter_map(|p| p.partition.clone())
        .collect();
    assert_eq!(
        parts,
        BTreeSet::from(["count:1/2".into(), "count:2/2".into()])
    );
    let ids: BTreeSet<&str> = m.benchmarks.iter().map(|b| b.id.as_str()).collect();
    assert_eq!(ids, BTreeSet::from(["adds", "muls", "planted"]));
    for b in &m.benchmarks {
        let file = b.record.as_ref().unwrap();
        assert!(
            merged.join("base").join(file).is_file(),
            "{}'s base record",
            b.id
        );
    }
    let c = cargo_gpubench::testing::compare::RunComparison::read(&merged)
        .unwrap()
        .expect("the merged run is judged");
    assert!(c.is_ab());
    assert!(c.tripping().contains(&"planted"), "{}", ran.stderr);
    // The paired ratios of both parts' processes see the 8x.
    let ComparisonOutcome::Compared { comparison, .. } = &c.get("planted").unwrap().outcome else {
        panic!("planted is judged: {}", ran.stderr);
    };
    assert!(
        comparison.change.lower > 1.0,
        "the planted 8x is a change of about +700%: {:?}\n{}",
        comparison.change,
        ran.stderr
    );
    let gpus: BTreeSet<String> = task_files(&dir)
        .iter()
        .map(|t| t["cuda_visible_devices"].clone())
        .collect();
    assert_eq!(gpus.len(), 2, "each task its own GPU: {gpus:?}");
    let text = std::fs::read_to_string(&summary).unwrap();
    assert!(text.contains("| `count:2/2` |"), "{text}");
}
