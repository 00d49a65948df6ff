//! `cargo gpubench ab` in the README's layout: a `cargo new` package (no
//! `[workspace]`) beside a clone of this repository, reaching gpubench-core by
//! `path = "../cargo-gpubench/gpubench-core"`, its target directory inside another
//! cargo workspace (this one's `target/nested`, shared with the README's test so tch
//! is built once). On a history of three commits (before the benchmarks, the
//! benchmarks, a planted 2× slowdown read from a file by relative path):
//!
//! * the base's worktree resolves the relative dependency, each revision reads its
//!   own file and names its own commit, the 2× is regressed;
//! * a finished, a failed and an interrupted `ab` leave no worktree and nothing under
//!   `gpubench/ab/`;
//! * a base without benchmarks makes every benchmark new; the same code on both sides
//!   is nothing to compare;
//! * two `ab`s at once in one project each measure the code they built.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::{assert_valid, git};
use gpubench_record::id::file_stem_for_id;
use gpubench_record::measurement::Flag;
use gpubench_record::record::RawRecord;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("cargo-gpubench is inside the workspace")
        .to_path_buf()
}

/// The bench file: `planted` makes as many matrix products per call as `adds.txt`
/// beside the package says, read by relative path at run time; `traced` writes `VERSION`
/// into `$AB_TRACE` (after waiting for `$AB_TRACE/go` when `$AB_TRACE_HOLD` is set),
/// so a test sees which code each process ran.
fn bench_source(version: &str) -> String {
    format!(
        r#"use gpubench_core::{{gpu_bench, Bencher}};
use tch::{{Kind, Tensor}};

const VERSION: &str = "{version}";

#[gpu_bench]
fn planted(b: &mut Bencher) {{
    let adds: u32 = std::fs::read_to_string("adds.txt")
        .expect("adds.txt in the directory the revision runs in")
        .trim()
        .parse()
        .unwrap();
    if let Some(dir) = std::env::var_os("AB_TRACE").map(std::path::PathBuf::from) {{
        let n = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        std::fs::write(dir.join(format!("{{VERSION}}-{{n}}")), format!("{{VERSION}} read {{adds}}"))
            .unwrap();
    }}
    // Matrix products, so the work, not the dispatch or the allocator, takes the
    // time: twice as many are twice as long.
    let x = Tensor::ones([192, 192], (Kind::Float, b.device()));
    let w = Tensor::eye(192, (Kind::Float, b.device()));
    b.iter(|| (0..adds).fold(x.shallow_clone(), |acc, _| acc.matmul(&w)));
}}

#[gpu_bench]
fn traced(b: &mut Bencher) {{
    if let Some(dir) = std::env::var_os("AB_TRACE").map(std::path::PathBuf::from) {{
        if std::env::var_os("AB_TRACE_HOLD").is_some() {{
            let start = std::time::Instant::now();
            while !dir.join("go").exists() && start.elapsed().as_secs() < 600 {{
                std::thread::sleep(std::time::Duration::from_millis(100));
            }}
        }}
        let n = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        std::fs::write(dir.join(format!("{{VERSION}}-{{}}-{{n}}", std::process::id())), VERSION)
            .unwrap();
    }}
    let x = Tensor::ones([64], (Kind::Float, b.device()));
    b.iter(|| &x * 2.0);
}}

fn main() {{
    gpubench_core::main()
}}
"#
    )
}

/// A clone of this repository's HEAD at `dir` (made, or brought to HEAD): what the
/// README's user has beside their package. Its own files, not this working tree's,
/// which others may be changing while the test builds.
fn clone_of_this_repository(dir: &Path) {
    let head = git(&repo_root(), &["rev-parse", "HEAD"]);
    if !dir.join(".git").exists() {
        let _ = std::fs::remove_dir_all(dir);
        let out = Command::new("git")
            .args(["clone", "--quiet", "--shared", "--no-checkout"])
            .arg(repo_root())
            .arg(dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    git(
        dir,
        &[
            "fetch",
            "--quiet",
            &repo_root().display().to_string(),
            &head,
        ],
    );
    git(dir, &["checkout", "--quiet", "--force", "--detach", &head]);
}

/// The layout and its history; returns `(package dir, [c0, c1, c2])`: c0 before
/// the benchmarks, c1 (main) with them, c2 (feature, checked out) planting 2×.
/// The clone stays between runs (its crates' builds are reused); the package is
/// made anew.
fn readme_layout(tmp: &Path) -> (PathBuf, [String; 3]) {
    clone_of_this_repository(&tmp.join("cargo-gpubench"));
    let ws = tmp.join("my-kernels");
    let _ = std::fs::remove_dir_all(&ws);
    for entry in std::fs::read_dir(tmp).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with("trace-") || name.starts_with("out-") || name.ends_with(".log") {
            let _ = std::fs::remove_dir_all(entry.path());
            let _ = std::fs::remove_file(entry.path());
        }
    }
    std::fs::create_dir_all(ws.join("src")).unwrap();
    std::fs::write(ws.join("src/lib.rs"), "").unwrap();
    let package = "[package]\nname = \"my-kernels\"\nversion = \"0.1.0\"\nedition = \"2021\"\n";
    std::fs::write(ws.join("Cargo.toml"), package).unwrap();
    std::fs::write(ws.join(".gitignore"), "/target\n").unwrap();
    // The clone's lock, so tch and gpubench-core's dependencies resolve to what it
    // builds with, offline.
    std::fs::copy(tmp.join("cargo-gpubench/Cargo.lock"), ws.join("Cargo.lock")).unwrap();
    git(&ws, &["init", "--quiet", "-b", "main"]);
    git(&ws, &["add", "--all"]);
    git(&ws, &["commit", "--quiet", "-m", "cargo new"]);
    let c0 = git(&ws, &["rev-parse", "HEAD"]);

    std::fs::write(
        ws.join("Cargo.toml"),
        format!(
            "{package}\n[dev-dependencies]\n\
             gpubench-core = {{ path = \"../cargo-gpubench/gpubench-core\" }}\n\
             tch = \"=0.24.0\"\n\n[[bench]]\nname = \"kernels\"\nharness = false\n"
        ),
    )
    .unwrap();
    std::fs::create_dir_all(ws.join("benches")).unwrap();
    std::fs::write(ws.join("benches/kernels.rs"), bench_source("base")).unwrap();
    std::fs::write(ws.join("adds.txt"), "8\n").unwrap();
    git(&ws, &["add", "--all"]);
    git(&ws, &["commit", "--quiet", "-m", "benchmarks"]);
    let c1 = git(&ws, &["rev-parse", "HEAD"]);

    git(&ws, &["checkout", "--quiet", "-b", "feature"]);
    std::fs::write(ws.join("benches/kernels.rs"), bench_source("h1")).unwrap();
    std::fs::write(ws.join("adds.txt"), "16\n").unwrap();
    git(
        &ws,
        &["commit", "--quiet", "--all", "-m", "twice the additions"],
    );
    let c2 = git(&ws, &["rev-parse", "HEAD"]);
    (ws, [c0, c1, c2])
}

fn target_dir() -> PathBuf {
    repo_root().join("target/nested")
}

/// `cargo gpubench ab` in `ws` on the CPU, quick, as JSON, with `args`.
fn ab(ws: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_cargo-gpubench"));
    cmd.current_dir(ws)
        .env("CARGO_TARGET_DIR", target_dir())
        .env_remove("AB_TRACE")
        .env_remove("AB_TRACE_HOLD")
        // One intra-op thread: on a small machine that other builds share, two
        // threads make one sample run on one core and the next on two.
        .env("OMP_NUM_THREADS", "1")
        .args(["gpubench", "ab", "--device", "cpu", "--quick"])
        .args(["--format", "json", "--no-report"])
        .args(args);
    cmd
}

/// Runs `cmd`: exit code, stdout as JSON (`Null` when it is none), stderr.
fn finish(cmd: &mut Command) -> (Option<i32>, serde_json::Value, String) {
    let out = cmd.output().expect("cargo-gpubench runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let v = serde_json::from_str(&stdout).unwrap_or(serde_json::Value::Null);
    (out.status.code(), v, stderr)
}

/// What an `ab` may leave: nothing, once it ended.
fn assert_nothing_left(ws: &Path, when: &str) {
    let listed = git(ws, &["worktree", "list", "--porcelain"]);
    assert_eq!(
        listed.matches("worktree ").count(),
        1,
        "{when}: only the main working tree: {listed}"
    );
    let ab_dir = target_dir().join("gpubench/ab");
    let left: Vec<_> = std::fs::read_dir(&ab_dir)
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(
        left.is_empty(),
        "{when}: {} holds {left:?}",
        ab_dir.display()
    );
    let beside: Vec<_> = std::fs::read_dir(ws.parent().unwrap())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("gpubench-ab"))
        .collect();
    assert!(beside.is_empty(), "{when}: worktrees beside: {beside:?}");
    // Nor the libraries cargo built for it, one set per base, which the next `ab`
    // builds anew.
    let release = target_dir().join("release");
    let built: Vec<_> = [release.clone(), release.join("deps")]
        .iter()
        .flat_map(|d| std::fs::read_dir(d).unwrap().flatten())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("libgpubench_ab_") && n.ends_with(".so"))
        .collect();
    assert!(built.is_empty(), "{when}: {built:?}");
}

fn record(run: &Path, side: Option<&str>, id: &str) -> RawRecord {
    let file = format!("{}.json", file_stem_for_id(id));
    let path = match side {
        Some(s) => run.join(s).join(file),
        None => run.join(file),
    };
    RawRecord::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn benchmark<'a>(v: &'a serde_json::Value, id: &str) -> &'a serde_json::Value {
    v["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["id"] == id)
        .unwrap_or_else(|| panic!("no {id} in {v:#}"))
}

#[test]
fn ab_in_the_readme_layout_builds_judges_and_leaves_nothing_behind() {
    let _machine = crate::measuring();
    assert!(
        std::env::var_os("LIBTORCH").is_some_and(|v| !v.is_empty()),
        "LIBTORCH is not set: run `source scripts/env.sh` in the workspace root first"
    );
    // Outside any cargo workspace (this repository's target directory is inside
    // one), and the same place every time, so the clone's crates build once.
    let tmp = std::env::temp_dir().join("gpubench-ab-readme-layout");
    std::fs::create_dir_all(&tmp).unwrap();
    let (ws, [c0, c1, c2]) = readme_layout(&tmp);

    // The merge-base with main (c1) against the working tree (c2).
    let start = Instant::now();
    let read = tmp.join("trace-read");
    std::fs::create_dir_all(&read).unwrap();
    let (code, v, stderr) =
        finish(ab(&ws, &["--processes", "5", "--exact", "planted"]).env("AB_TRACE", &read));
    eprintln!(
        "ab: exit {code:?} in {:.1} s",
        start.elapsed().as_secs_f64()
    );
    assert_valid("run-summary.schema.json", &v);
    assert_eq!(v["ab"]["paired"], true, "{stderr}\n{}", v["ab"]);
    // Each revision read its own adds.txt, by relative path, in every process.
    let mut said = traced_versions(&read);
    said.dedup();
    assert_eq!(said, ["base read 8", "h1 read 16"], "{stderr}");
    let run = PathBuf::from(v["run_dir"].as_str().unwrap());
    let head = record(&run, None, "planted");
    let contended = head.processes.iter().any(|r| {
        r.measurement
            .as_ref()
            .is_some_and(|m| m.flags.contains(&Flag::Contended))
    });
    let verdict = &benchmark(&v, "planted")["comparison"]["comparison"]["verdict"];
    if contended && verdict == "ambiguous" {
        // The host was oversubscribed (other builds on a small machine) and the
        // records say so: the paired ratios then spread too far for a verdict, and
        // `ab` says ambiguous rather than guess.
        eprintln!("contended: the 2x is ambiguous here, not regressed\n{stderr}");
    } else {
        assert_eq!(code, Some(4), "the gate fails on the 2x\n{stderr}\n{v:#}");
        assert_eq!(verdict, "regressed", "{v:#}");
    }
    // Each revision names its own commit and the library it loaded.
    assert_eq!(v["ab"]["base"]["commit"], c1.as_str());
    assert_eq!(v["ab"]["head"]["commit"], c2.as_str());
    let digest = |side: &str| v["ab"][side]["libraries"][0]["sha256"].clone();
    assert!(
        digest("base").as_str().is_some_and(|d| d.len() == 64),
        "{}",
        v["ab"]
    );
    assert_ne!(digest("base"), digest("head"));
    let base = record(&run, Some("base"), "planted");
    assert_eq!(base.fingerprint.git_commit.as_deref(), Some(c1.as_str()));
    assert_eq!(head.fingerprint.git_commit.as_deref(), Some(c2.as_str()));
    // The head is slower in every process.
    let ratios: Vec<f64> = head
        .processes
        .iter()
        .filter_map(|r| r.pairing.as_ref())
        .map(|p| p.log_ratio.exp())
        .collect();
    assert!(
        ratios.len() == 5 && ratios.iter().all(|r| *r > 1.1),
        "{ratios:?}"
    );
    assert_nothing_left(&ws, "a finished ab");
    report_in_a_browser_labels_each_side_with_its_commit(&ws, &run, &c1, &c2);

    // A failed `ab` (no benchmark matched, after building): nothing left either.
    let (code, _, stderr) = finish(&mut ab(&ws, &["--exact", "no_such_benchmark"]));
    assert_eq!(code, Some(2), "{stderr}");
    assert_nothing_left(&ws, "a failed ab");

    // The same code on both sides: nothing to compare, and that passes.
    let (code, _, stderr) = finish(&mut ab(&ws, &["--base", "HEAD"]));
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("nothing to compare"), "{stderr}");
    assert_nothing_left(&ws, "an ab with nothing to compare");

    // A base from before the benchmarks: every benchmark of the head is new.
    let (code, v, stderr) = finish(&mut ab(&ws, &["--base", &c0, "--exact", "planted"]));
    assert_eq!(code, Some(0), "new benchmarks pass\n{stderr}\n{v:#}");
    assert!(
        stderr.contains("every benchmark of the head is new"),
        "{stderr}"
    );
    assert_eq!(benchmark(&v, "planted")["status"], "passed", "{v:#}");
    assert!(
        v["comparison"]["set"]["missing_in_baseline"]
            .as_array()
            .unwrap()
            .iter()
            .any(|id| id == "planted"),
        "{v:#}"
    );
    assert_nothing_left(&ws, "an ab against a base without benchmarks");

    two_abs_at_once_each_measure_the_code_they_built(&ws, &tmp);
    an_interrupted_ab_leaves_nothing_behind(&ws, &tmp);
}

/// The `ab` run's report, rendered by `cargo gpubench report` and read in headless
/// Chromium: the summary labels the base with the base's commit (not the head's),
/// the benchmark page names the head's, and every link of the summary resolves.
fn report_in_a_browser_labels_each_side_with_its_commit(
    ws: &Path,
    run: &Path,
    base: &str,
    head: &str,
) {
    use crate::support::browser::{dump_dom, file_url, sel};
    let out = Command::new(env!("CARGO_BIN_EXE_cargo-gpubench"))
        .current_dir(ws)
        .env("CARGO_TARGET_DIR", target_dir())
        .args(["gpubench", "report"])
        .arg(run)
        .output()
        .expect("cargo-gpubench runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The report of a run goes to its output directory's `report/` (runs/<id>/..).
    let report = run.parent().unwrap().parent().unwrap().join("report");
    let index = report.join("index.html");
    let dom = dump_dom(ws, &file_url(&index));
    let recorded_on: String = dom
        .select(&sel("tr"))
        .find(|tr| {
            tr.select(&sel("th"))
                .next()
                .is_some_and(|th| th.text().collect::<String>().trim() == "recorded on")
        })
        .expect("the summary says where the base was recorded")
        .text()
        .collect();
    assert!(
        recorded_on.contains(&format!("commit {}", &base[..12])),
        "the base is labelled with its own commit {base}: {recorded_on}"
    );
    assert!(
        !recorded_on.contains(&head[..12]),
        "the head's commit {head} labels nothing of the base: {recorded_on}"
    );
    let mut pages = 0;
    for a in dom.select(&sel("a[href]")) {
        let href = a.value().attr("href").unwrap();
        if href.starts_with("http") || href.starts_with('#') {
            continue;
        }
        let target = report.join(href.split('#').next().unwrap());
        assert!(target.is_file(), "the summary's link {href} resolves");
        if href.contains("planted") {
            let page = dump_dom(ws, &file_url(&target));
            let page_text: String = page.select(&sel("main")).next().unwrap().text().collect();
            assert!(
                page_text.contains(head),
                "the head's page names {head}: {page_text}"
            );
            pages += 1;
        }
    }
    assert!(pages > 0, "the summary links the benchmark's page");
}

/// Starts `cmd` with its stderr to `log`.
fn spawn_logged(cmd: &mut Command, log: &Path) -> Child {
    cmd.stdout(Stdio::piped())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .expect("cargo-gpubench starts")
}

/// Waits until `log` says `what`, or panics after `limit`.
fn wait_for(log: &Path, what: &str, limit: Duration) {
    let start = Instant::now();
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if text.contains(what) {
            return;
        }
        assert!(
            start.elapsed() < limit,
            "{} never said {what:?}:\n{text}",
            log.display()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The versions of the code the processes of a traced `ab` ran, sorted.
fn traced_versions(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name() != "go")
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .collect();
    v.sort();
    v
}

/// The first `ab` measures while a second, started on a changed working tree,
/// builds the head's library to the same file and measures it: each of the first's
/// head processes still ran the code the first built.
fn two_abs_at_once_each_measure_the_code_they_built(ws: &Path, tmp: &Path) {
    let (t1, t2) = (tmp.join("trace-1"), tmp.join("trace-2"));
    std::fs::create_dir_all(&t1).unwrap();
    std::fs::create_dir_all(&t2).unwrap();
    let log = tmp.join("first.log");
    let out1 = tmp.join("out-1");
    let first = spawn_logged(
        ab(
            ws,
            &["--processes", "3", "--exact", "traced", "--timeout", "900"],
        )
        .arg("--out-dir")
        .arg(&out1)
        .env("AB_TRACE", &t1)
        .env("AB_TRACE_HOLD", "1"),
        &log,
    );
    // Its first process waits for `go` inside the benchmark: it is measuring.
    wait_for(&log, "measuring 1 benchmark", Duration::from_secs(900));

    std::fs::write(ws.join("benches/kernels.rs"), bench_source("h2")).unwrap();
    let out2 = tmp.join("out-2");
    let (code, second, stderr) = finish(
        ab(ws, &["--processes", "3", "--exact", "traced"])
            .arg("--out-dir")
            .arg(&out2)
            .env("AB_TRACE", &t2),
    );
    assert_eq!(code, Some(0), "{stderr}\n{second:#}");
    std::fs::write(t1.join("go"), "").unwrap();
    let out = first.wait_with_output().unwrap();
    let stderr1 = std::fs::read_to_string(&log).unwrap();
    let v1: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}\n{stderr1}"));
    assert_eq!(out.status.code(), Some(0), "{stderr1}\n{v1:#}");

    // `--processes 3`: three paired processes each, one call of each side in each.
    let processes = |v: &serde_json::Value| {
        assert_eq!(benchmark(v, "traced")["status"], "passed", "{v:#}");
        3
    };
    let expect = |head: &str, n: u64| {
        let mut e: Vec<String> = (0..n)
            .flat_map(|_| ["base".to_string(), head.to_string()])
            .collect();
        e.sort();
        e
    };
    assert_eq!(
        traced_versions(&t1),
        expect("h1", processes(&v1)),
        "every process of the first `ab` ran the code it built"
    );
    assert_eq!(traced_versions(&t2), expect("h2", processes(&second)));
    let head_digest = |v: &serde_json::Value| v["ab"]["head"]["libraries"][0]["sha256"].clone();
    assert_ne!(head_digest(&v1), head_digest(&second), "each names its own");
    std::fs::write(ws.join("benches/kernels.rs"), bench_source("h1")).unwrap();
    assert_nothing_left(ws, "two abs at once");
}

/// Ctrl-C while the benchmarks run: `ab` ends as interrupted and its worktree goes.
fn an_interrupted_ab_leaves_nothing_behind(ws: &Path, tmp: &Path) {
    let trace = tmp.join("trace-3");
    std::fs::create_dir_all(&trace).unwrap();
    let log = tmp.join("interrupted.log");
    let child = spawn_logged(
        ab(
            ws,
            &["--processes", "3", "--exact", "traced", "--timeout", "900"],
        )
        .env("AB_TRACE", &trace)
        .env("AB_TRACE_HOLD", "1"),
        &log,
    );
    wait_for(&log, "measuring 1 benchmark", Duration::from_secs(900));
    // The worktree is there while it runs.
    assert_eq!(
        git(ws, &["worktree", "list", "--porcelain"])
            .matches("worktree ")
            .count(),
        2
    );
    // SAFETY: a signal to the child this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    let stderr = std::fs::read_to_string(&log).unwrap();
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert_nothing_left(ws, "an interrupted ab");
}
