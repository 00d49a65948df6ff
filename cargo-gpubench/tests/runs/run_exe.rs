//! `cargo-gpubench run --exe` against a stand-in bench executable
//! (`support/fake_harness.rs`: a shell script that speaks the harness protocol and
//! behaves per benchmark id: passes, panics, aborts, hangs, exits oddly). Needs no
//! libtorch and no build, so it pins the runner's behaviour on any Unix machine;
//! `fixture_workspace.rs` does the same with real bench targets. One file over 600
//! lines on purpose: cargo builds each test file as a binary, and these scenarios
//! share helpers of their own.
#![cfg(unix)]

use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::support::fake_harness::{passed_record, Fake};
use crate::support::{cargo_gpubench, entry, exe_arg, latest_run, manifest, record, run, schema};
use cargo_gpubench::testing::store::manifest::{BenchStatus, RunStatus};
use gpubench_record::failure::FailureKind;
use gpubench_record::id::file_stem_for_id;
use gpubench_record::measurement::ProcessPolicy;

/// Waits up to `limit` for `cond`.
fn wait_for(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    cond()
}

#[test]
#[cfg(target_os = "linux")]
fn a_killed_run_leaves_no_benchmark_behind_and_is_marked_incomplete() {
    let fake = Fake::new();
    // A run that finishes first: `latest` keeps naming it after the killed one.
    run(fake.command().args(["--quick", "--exact", "passes"])).expect_code(0);
    let finished = latest_run(&fake.out_dir());
    let pid_file = |name: &str| fake.dir.path().join("bin").join(name);
    let mut child = fake
        .command()
        .args(["--quick", "--timeout", "60", "--exact", "sleeps"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    assert!(
        wait_for(Duration::from_secs(20), || pid_file("sleeps.pid").exists()
            && pid_file("harness.pid").exists()),
        "the benchmark did not start"
    );
    let read = |name: &str| -> i32 {
        std::fs::read_to_string(pid_file(name))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    };
    let (harness, grandchild) = (read("harness.pid"), read("sleeps.pid"));
    assert!(pid_alive(harness) && pid_alive(grandchild));
    child.kill().unwrap(); // SIGKILL: no handler of cargo gpubench runs.
    child.wait().unwrap();
    assert!(
        wait_for(Duration::from_secs(5), || !pid_alive(harness)
            && !pid_alive(grandchild)),
        "the benchmark (pid {harness}) or its child (pid {grandchild}) outlived cargo gpubench"
    );

    // compare and report say the run is incomplete; `latest` never pointed at it.
    let run_dir = std::fs::read_dir(fake.out_dir().join("runs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name() != finished.file_name())
        .unwrap();
    let m = manifest(&run_dir);
    assert_eq!(m.state(), RunStatus::Incomplete);
    let id = |p: &std::path::Path| p.file_name().unwrap().to_string_lossy().into_owned();
    let in_work = || {
        let mut cmd = cargo_gpubench();
        cmd.current_dir(fake.dir.path().join("work"));
        cmd
    };
    let ran = run(in_work().arg("report").arg(&run_dir));
    assert!(
        ran.stderr
            .contains("is incomplete: its cargo gpubench died before the end"),
        "{}",
        ran.stderr
    );
    // `latest` still names the run that finished, and whoever judges it hears of
    // the newer one that did not.
    let newer = format!(
        "warning: the newest run `{}` is incomplete: its cargo gpubench died before the end \
         (killed?); `latest` is the last run that finished: `{}`",
        id(&run_dir),
        id(&finished)
    );
    let ran = run(in_work().args(["report", "latest"])).expect_code(0);
    assert!(ran.stderr.contains(&newer), "{}", ran.stderr);
    let ran = run(in_work().arg("compare").arg(&finished).arg("latest")).expect_code(0);
    assert!(ran.stderr.contains(&newer), "{}", ran.stderr);
    assert!(
        ran.stdout
            .starts_with(&format!("comparing run `{}`", id(&finished))),
        "{}",
        ran.stdout
    );

    // The next run in the same output directory marks it so for good.
    let ran = run(fake.command().args(["--quick", "--exact", "passes"]));
    assert!(
        ran.stderr.contains("did not finish (its cargo gpubench died before the end; 0 of 1 benchmarks finished): marked incomplete"),
        "{}",
        ran.stderr
    );
    let m = manifest(&run_dir);
    assert_eq!((m.status, m.pid), (RunStatus::Incomplete, None));
    // Once a newer run finishes, `latest` is the newest run again: no warning.
    let ran = run(in_work().args(["report", "latest"])).expect_code(0);
    assert!(!ran.stderr.contains("warning"), "{}", ran.stderr);
}

/// Lists `first` and `second` and hands back the records prepared for them; with
/// `BLOCK_SECOND` set, `second` first puts a directory where cargo gpubench stores
/// its record, so storing it fails with an I/O error.
const BLOCKING_HARNESS: &str = r#"#!/bin/sh
here=$(dirname "$0")
[ -n "$GPUBENCH_HANDSHAKE" ] && echo "gpubench-harness protocol 1"
case " $* " in
*" --list "*)
    case " $* " in
    *" --ignored "*) ;;
    *) echo "first: benchmark"; echo "second: benchmark" ;;
    esac
    exit 0 ;;
esac
[ "$1 $2" = "--bench --exact" ] || { echo "unexpected arguments: $*" >&2; exit 64; }
# The record directory is <run>/.incoming/<slot>.
[ "$3" = second ] && [ -n "$BLOCK_SECOND" ] && mkdir -p "$GPUBENCH_RECORD_DIR/../../second.json/in-the-way"
cp "$here/records/$3/"*.json "$GPUBENCH_RECORD_DIR/"
"#;

#[test]
fn a_run_stopped_by_an_error_says_so_in_its_manifest_and_later() {
    let dir = tempfile::tempdir().unwrap();
    let bin = crate::support::stand_in(dir.path(), BLOCKING_HARNESS);
    for id in ["first", "second"] {
        crate::support::prepare_record(&bin, &passed_record(id), false);
    }
    let work = dir.path().join("work");
    let out_dir = work.join("target/gpubench");
    let gpubench = |args: &[&str]| {
        let mut cmd = cargo_gpubench();
        cmd.current_dir(&work)
            .env("LIBTORCH", dir.path().join("libtorch"))
            .args(args);
        cmd
    };
    let exe = exe_arg(&bin.join(crate::support::STAND_IN_EXE));
    run(gpubench(&["run", "--quick"]).arg(&exe)).expect_code(0);
    let finished = latest_run(&out_dir);

    let ran = run(gpubench(&["run", "--quick"])
        .arg(&exe)
        .env("BLOCK_SECOND", "1"))
    .expect_code(5);
    assert!(
        ran.stderr.contains("error: failed to write ") && ran.stderr.contains("second.json"),
        "{}",
        ran.stderr
    );
    let stopped = std::fs::read_dir(out_dir.join("runs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name() != finished.file_name())
        .unwrap();
    // The manifest says what stopped it, and keeps what finished.
    let m = manifest(&stopped);
    assert_eq!((m.status, m.pid), (RunStatus::Incomplete, None));
    let error = m.error.clone().expect("the error is recorded");
    assert!(
        error.starts_with("failed to write ") && error.contains("second.json"),
        "{error}"
    );
    assert_eq!(entry(&m, "fake", "first").status, BenchStatus::Passed);
    assert!(!stopped.join(".incoming").exists());

    // Read later, it was stopped by that error, not killed.
    let ran = run(gpubench(&["report"]).arg(&stopped)).expect_code(0);
    assert!(
        ran.stderr.contains(&format!(
            "warning: run `{}` is incomplete: it was stopped by an error: {error}; 1 of its 2 benchmarks finished",
            m.run_id
        )),
        "{}",
        ran.stderr
    );
    assert!(!ran.stderr.contains("killed"), "{}", ran.stderr);
    let ran = run(&mut gpubench(&["report", "latest"])).expect_code(0);
    assert!(
        ran.stderr.contains(&format!(
            "warning: the newest run `{}` is incomplete: it was stopped by an error: {error}; `latest` is the last run that finished: `{}`",
            m.run_id,
            finished.file_name().unwrap().to_string_lossy()
        )),
        "{}",
        ran.stderr
    );
    // The next run leaves it as it is: it did not die.
    std::fs::remove_dir_all(stopped.join("second.json")).unwrap();
    let ran = run(gpubench(&["run", "--quick"]).arg(&exe)).expect_code(0);
    assert!(!ran.stderr.contains("did not finish"), "{}", ran.stderr);
    assert_eq!(manifest(&stopped).error.as_deref(), Some(error.as_str()));
}

fn pid_alive(pid: i32) -> bool {
    // A killed process may stay a zombie where nothing reaps orphans.
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z') || rest.starts_with('X')),
        // Without /proc, signal 0 probes existence.
        // SAFETY: signal 0 sends nothing.
        Err(_) => unsafe { libc::kill(pid, 0) == 0 },
    }
}

#[test]
fn every_outcome_becomes_a_record_and_the_run_exits_1() {
    let fake = Fake::new();
    let started = Instant::now();
    let ran = run(fake
        .command()
        .args(["--timeout", "2"])
        .env("GPUBENCH_QUICK", "1"))
    .expect_code(1);
    // The hanging benchmark was cut at its timeout, not waited for.
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );

    let run_dir = latest_run(&fake.out_dir());
    let m = manifest(&run_dir);
    assert_eq!(m.status, RunStatus::Completed);
    assert!(m.finished_at.is_some());
    assert!(m.quick);
    assert_eq!(m.executables.len(), 1);
    assert_eq!(m.executables[0].target, "fake");
    let ids: Vec<&str> = m.benchmarks.iter().map(|b| b.id.as_str()).collect();
    // Sorted, and the ignored benchmark left out.
    assert_eq!(
        ids,
        [
            "aborts",
            "exits_2",
            "matmul/64",
            "no_record",
            "panics",
            "passes",
            "sleeps"
        ]
    );

    for id in ["passes", "matmul/64"] {
        let b = entry(&m, "fake", id);
        assert_eq!(b.status, BenchStatus::Passed, "{id}");
        assert_eq!(b.processes, 3, "{id}: --quick runs 3 processes");
        // The three processes' records, one process after the other, with the run's
        // process policy where each harness could only name its own process.
        let mut expected = passed_record(id);
        expected.append_processes(passed_record(id)).unwrap();
        expected.append_processes(passed_record(id)).unwrap();
        assert_eq!(expected.config.processes, ProcessPolicy::single());
        expected.config.processes = ProcessPolicy::fixed(3);
        assert_eq!(record(&run_dir, b), expected, "{id} is stored as written");
    }
    assert_eq!(
        entry(&m, "fake", "matmul/64").record.as_deref(),
        Some(format!("{}.json", file_stem_for_id("matmul/64")).as_str())
    );

    let failure = |id: &str| {
        let b = entry(&m, "fake", id);
        assert_eq!(b.status, BenchStatus::Failed, "{id}");
        let r = record(&run_dir, b);
        assert_eq!(r.id, id);
        let f = r.failure().cloned().expect("a failed record has a failure");
        assert_eq!(b.failure_kind, Some(f.kind));
        f
    };
    let f = failure("panics");
    assert_eq!(
        (f.kind, f.message.as_str()),
        (FailureKind::Panic, "panicked at benches/suite.rs:3: boom")
    );
    let f = failure("aborts");
    assert_eq!(f.kind, FailureKind::Crash);
    assert!(
        f.message.contains("SIGABRT") && f.message.contains("fake: about to abort"),
        "{}",
        f.message
    );
    let f = failure("sleeps");
    assert_eq!(f.kind, FailureKind::Timeout);
    assert!(f.message.contains("timed out after 2 s"), "{}", f.message);
    let f = failure("exits_2");
    assert_eq!(f.kind, FailureKind::ExitCode);
    assert!(
        f.message.contains("exited with code 2") && f.message.contains("--frobnicate"),
        "{}",
        f.message
    );
    let f = failure("no_record");
    assert_eq!(f.kind, FailureKind::ExitCode);
    assert!(
        f.message.contains("without writing a record"),
        "{}",
        f.message
    );

    // The hanging benchmark's own child went down with it.
    let pid: i32 = std::fs::read_to_string(fake.dir.path().join("bin/sleeps.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        !pid_alive(pid),
        "the timed-out benchmark's child {pid} survived"
    );

    // Options reach the harness as arguments; the subcommand's variables do not leak.
    let calls = fake.calls();
    // Process 1 of every benchmark runs before process 2 of any; a failed benchmark gets
    // no further process.
    let processes: Vec<(&str, &str)> = calls
        .lines()
        .filter_map(|l| Some((l.split(' ').next()?, l.rsplit_once("process=")?.1)))
        .collect();
    let first_process_2 = processes.iter().position(|(_, r)| *r == "2").unwrap();
    assert!(
        processes[..first_process_2].iter().all(|(_, r)| *r == "1"),
        "{calls}"
    );
    assert_eq!(processes[..first_process_2].len(), 7, "{calls}");
    for id in ["passes", "matmul/64"] {
        let of: Vec<&str> = processes
            .iter()
            .filter(|(i, _)| *i == id)
            .map(|(_, r)| *r)
            .collect();
        assert_eq!(of, ["1", "2", "3"], "{id}: {calls}");
    }
    assert_eq!(
        processes.iter().filter(|(i, _)| *i == "panics").count(),
        1,
        "{calls}"
    );
    let passes = calls.lines().find(|l| l.starts_with("passes ")).unwrap();
    assert!(
        passes.contains("--quick") && passes.contains("quick_env=unset"),
        "{passes}"
    );
    assert!(!calls.contains("--ignored"), "{calls}");
    // Without a baseline no process is given a thread count: each takes the
    // harness's default, which the host's load does not move.
    let threads: Vec<&str> = calls
        .lines()
        .filter_map(|l| l.split_once(" baseline_threads=")?.1.split(' ').next())
        .collect();
    assert_eq!(threads.len(), processes.len(), "{calls}");
    assert!(threads.iter().all(|t| *t == "unset"), "{calls}");

    // The summary table: one row per benchmark with its status.
    let row = |name: &str| {
        ran.stdout
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no row for {name}:\n{}", ran.stdout))
            .to_string()
    };
    let passes = row("fake/passes ");
    assert!(
        passes.contains("10.0") && passes.contains(" µs ["),
        "{passes}"
    );
    assert!(row("fake/passes ").ends_with("passed"));
    assert!(row("fake/aborts ").contains("crash: killed by signal 6 (SIGABRT)"));
    assert!(row("fake/sleeps ").contains("timeout: timed out after 2 s"));
    assert!(row("fake/panics ").contains("panic: panicked at benches/suite.rs:3: boom"));
    assert!(
        ran.stdout.contains("7 benchmarks: 2 passed, 5 failed"),
        "{}",
        ran.stdout
    );
    assert!(ran
        .stdout
        .contains(&run_dir.file_name().unwrap().to_string_lossy().into_owned()));
    // Progress lines on stderr (not a terminal: no bar).
    assert!(
        ran.stderr.contains("passed [6/")
            && ran.stderr.contains("] fake/passes process 1")
            && ran.stderr.contains("passed [11/11] fake/passes process 3"),
        "{}",
        ran.stderr
    );
    assert!(!run_dir.join(".incoming").exists());
}

#[test]
fn list_prints_sorted_names_and_marks_ignored_ones() {
    let fake = Fake::new();
    let ran = run(fake.command().arg("--list")).expect_code(0);
    insta::assert_snapshot!(ran.stdout, @r"
    fake/aborts
    fake/exits_2
    fake/matmul/64
    fake/no_record
    fake/panics
    fake/passes
    fake/sleeps
    fake/slow_ignored (ignored)
    ");
    // Listing runs nothing and stores nothing.
    assert_eq!(fake.calls(), "");
    assert!(!fake.out_dir().exists());
    let ran = run(fake.command().args(["--list", "--ignored"])).expect_code(0);
    assert_eq!(ran.stdout, "fake/slow_ignored (ignored)\n");
    let ran = run(fake
        .command()
        .args(["--list", "--format", "json", "matmul"]))
    .expect_code(0);
    let v: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
    assert_eq!(v[0]["name"], "fake/matmul/64");
    assert_eq!(v[0]["ignored"], false);

    // A filter that matches nothing fails as a run of it does: 2, with its words.
    let ran = run(fake.command().arg("no_such_bench")).expect_code(2);
    let refused = "error: no benchmark to run: no benchmark matches the filter `no_such_bench` (8 listed; see --list)";
    assert!(ran.stderr.contains(refused), "{}", ran.stderr);
    for format in ["human", "json"] {
        let ran = run(fake
            .command()
            .args(["--list", "--format", format, "no_such_bench"]))
        .expect_code(2);
        assert!(ran.stderr.contains(refused), "{format}: {}", ran.stderr);
        if format == "json" {
            // A program reading stdout gets the error as a document.
            let doc: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
            assert_eq!(doc["error"]["exit"], "usage", "{doc}");
        } else {
            assert_eq!(ran.stdout, "", "{format}");
        }
    }
    let ran = run(fake.command().args(["--list", "--ignored", "passes"])).expect_code(2);
    assert!(
        ran.stderr
            .contains("none of the matching benchmarks is marked ignored"),
        "{}",
        ran.stderr
    );

    // Two targets with the same ids list both, with the warning a run would refuse
    // them with.
    let other = fake.dir.path().join("bin/other");
    std::fs::copy(fake.exe(), &other).unwrap();
    let ran = run(fake
        .command()
        .arg(exe_arg(&other))
        .args(["--list", "passes"]))
    .expect_code(0);
    assert_eq!(ran.stdout, "fake/passes\nother/passes\n");
    assert!(
        ran.stderr.contains("warning:") && ran.stderr.contains("`passes`"),
        "{}",
        ran.stderr
    );
}

#[test]
fn filters_select_and_ignored_benchmarks_run_only_when_asked() {
    let fake = Fake::new();
    let ran = run(fake.command().args(["--exact", "passes"])).expect_code(0);
    assert!(
        ran.stdout.contains("1 benchmark: 1 passed, 0 failed"),
        "{}",
        ran.stdout
    );
    assert_eq!(manifest(&latest_run(&fake.out_dir())).benchmarks.len(), 1);

    // `--ignored` runs the ignored one, and tells the harness so.
    run(fake.command().arg("--ignored")).expect_code(0);
    let m = manifest(&latest_run(&fake.out_dir()));
    let ids: Vec<&str> = m.benchmarks.iter().map(|b| b.id.as_str()).collect();
    assert_eq!(ids, ["slow_ignored"]);
    assert!(
        fake.calls().contains(
            "slow_ignored args=[--bench --exact slow_ignored --ignored --measurement-time"
        ),
        "{}",
        fake.calls()
    );

    let ran = run(fake.command().arg("nothing_matches")).expect_code(2);
    assert!(
        ran.stderr
            .contains("no benchmark matches the filter `nothing_matches`"),
        "{}",
        ran.stderr
    );
    let ran = run(fake.command().arg("slow_ignored")).expect_code(2);
    assert!(ran.stderr.contains("--include-ignored"), "{}", ran.stderr);
}

#[test]
fn json_format_prints_one_document() {
    let fake = Fake::new();
    let ran = run(fake
        .command()
        .args(["--format", "json", "passes", "panics"]))
    .expect_code(1);
    let v: serde_json::Value = serde_json::from_str(&ran.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}", ran.stdout));
    assert_eq!(
        (v["passed"].as_u64(), v["failed"].as_u64()),
        (Some(1), Some(1))
    );
    assert_eq!(v["status"], "completed");
    let panics = &v["benchmarks"][0];
    assert_eq!(panics["name"], "fake/panics");
    assert_eq!(panics["summary"]["failure"]["kind"], "panic");
    let passes = &v["benchmarks"][1];
    let time = passes["summary"]["wall"]["estimate"]["point"]
        .as_f64()
        .unwrap();
    assert!((time - 10_045.0).abs() < 10.0, "{time}");
}

#[test]
fn history_exports_carry_the_figures_of_the_benchmarks_that_ran() {
    let fake = Fake::new();
    let ran = run(fake
        .command()
        .args(["--format", "github-action-benchmark", "passes", "panics"]))
    .expect_code(1);
    let v: serde_json::Value = serde_json::from_str(&ran.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}", ran.stdout));
    let items = v
        .as_array()
        .expect("github-action-benchmark takes an array");
    assert_eq!(items.len(), 1, "the failed benchmark has no figure: {v}");
    assert_eq!(items[0]["name"], "fake/passes");
    assert_eq!(items[0]["unit"], "ns");
    let value = items[0]["value"].as_f64().unwrap();
    assert!((value - 10_045.0).abs() < 10.0, "{value}");

    let fake = Fake::new();
    let ran = run(fake.command().args(["--format", "bmf", "passes"])).expect_code(0);
    let v: serde_json::Value = serde_json::from_str(&ran.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}", ran.stdout));
    let latency = &v["fake/passes"]["latency"];
    assert!(
        (latency["value"].as_f64().unwrap() - 10_045.0).abs() < 10.0,
        "{v}"
    );
    assert!(latency["lower_value"].as_f64().unwrap() <= latency["value"].as_f64().unwrap());
}

fn assert_valid(v: &jsonschema::Validator, doc: &serde_json::Value, what: &str) {
    let errors: Vec<String> = v
        .iter_errors(doc)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{what} does not match its schema:\n{}",
        errors.join("\n")
    );
}

#[test]
fn the_json_summary_and_the_records_match_their_schemas() {
    let summary_schema = schema("run-summary.schema.json");
    let record_schema = schema("record.schema.json");
    let fake = Fake::new();
    let ran = run(fake
        .command()
        .args(["--format", "json", "passes", "panics", "matmul/64"]))
    .expect_code(1);
    let doc: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
    assert_valid(&summary_schema, &doc, "the --format json summary");
    let run_dir = std::path::PathBuf::from(doc["run_dir"].as_str().unwrap());
    let mut records = 0;
    for b in doc["benchmarks"].as_array().unwrap() {
        let Some(file) = b["record"].as_str() else {
            continue;
        };
        let record: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(run_dir.join(file)).unwrap()).unwrap();
        assert_valid(&record_schema, &record, file);
        records += 1;
    }
    assert_eq!(records, 3);
    // The schemas can fail: a newer record format and a summary without its exit.
    let mut newer = doc.clone();
    newer.as_object_mut().unwrap().remove("exit");
    assert!(!summary_schema.is_valid(&newer));
    let file = doc["benchmarks"][0]["record"].as_str().unwrap();
    let mut record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join(file)).unwrap()).unwrap();
    record["format_version"] = 3.into();
    assert!(!record_schema.is_valid(&record));
}

/// Energy, the power cap, % of peak and the L2 regimes, which a CPU run lacks, as
/// the harness and the summary write them, match the schemas too (and a wrong one
/// does not).
#[test]
fn energy_power_cap_and_peak_match_their_schemas() {
    use gpubench_analysis::energy::EnergySummary;
    use gpubench_analysis::peaks::PeakShare;
    use gpubench_analysis::summary::PowerCapped;
    use gpubench_record::cache::L2State;
    use gpubench_record::energy::{EnergyMeasurement, EnergyWindow};
    use gpubench_record::measurement::Throughput;

    let summary_schema = schema("run-summary.schema.json");
    let record_schema = schema("record.schema.json");
    let fake = Fake::new();
    let ran = run(fake.command().args(["--format", "json", "passes"])).expect_code(0);
    let mut doc: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
    let run_dir = std::path::PathBuf::from(doc["run_dir"].as_str().unwrap());
    let file = doc["benchmarks"][0]["record"].as_str().unwrap().to_string();
    let mut record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join(file)).unwrap()).unwrap();

    let window = EnergyWindow {
        calls: 250,
        synced_s: 0.36,
        counted_s: 0.3,
        steps: 3,
        energy_j: 210.0,
    };
    let energy = EnergyMeasurement {
        windows: vec![window; 3],
        idle_w: Some(83.0),
        idle_unavailable: None,
    };
    let m = &mut record["rounds"][0]["measurement"];
    m["energy"] = serde_json::to_value(&energy).unwrap();
    m["l2"] = serde_json::to_value(L2State::Flushed).unwrap();
    m["samples"][0]["clock"] = serde_json::json!({"sm_mhz": 1707, "power_capped": true});
    m["kernel"] =
        serde_json::json!({"method": "graph_replay", "samples_ns": [1.0], "l2": "flushed"});
    assert_valid(&record_schema, &record, "a record with energy");
    let mut wrong = record.clone();
    wrong["rounds"][0]["measurement"]["l2"] = "lukewarm".into();
    assert!(!record_schema.is_valid(&wrong));

    let mut typed = gpubench_record::testing::measurement(1e6);
    typed.energy = Some(energy);
    let s = &mut doc["benchmarks"][0]["summary"];
    s["energy"] = serde_json::to_value(EnergySummary::of([&typed]).unwrap()).unwrap();
    s["power_capped"] = serde_json::to_value(PowerCapped {
        share: 0.97,
        samples: 40,
        power_limit_w: Some(700.0),
    })
    .unwrap();
    s["energy_unavailable"] = "no GPU telemetry, so no energy counter".into();
    let peak = PeakShare::of(
        "NVIDIA H200",
        Throughput::Flops(2.0 * 8192f64.powi(3)),
        1.395e6,
        Some("bf16"),
        Some(1707.0),
        None,
    );
    s["peak"] = serde_json::to_value(peak.unwrap()).unwrap();
    assert_valid(&summary_schema, &doc, "a summary with energy");
    let mut wrong = doc.clone();
    wrong["benchmarks"][0]["summary"]["power_capped"]["share"] = "97%".into();
    assert!(!summary_schema.is_valid(&wrong));
}

/// The clock the paced replays of `--flush-l2` read, in the record's kernel section
/// and summed in the summary, as the schemas describe them.
#[test]
fn the_kernel_replays_clock_matches_its_schemas() {
    use gpubench_analysis::summary::KernelClock;
    use gpubench_record::cache::L2State;
    use gpubench_record::kernels::{KernelMeasurement, KernelMethod, ReplayClock};

    let summary_schema = schema("run-summary.schema.json");
    let record_schema = schema("record.schema.json");
    let fake = Fake::new();
    let ran = run(fake.command().args(["--format", "json", "passes"])).expect_code(0);
    let mut doc: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
    let run_dir = std::path::PathBuf::from(doc["run_dir"].as_str().unwrap());
    let file = doc["benchmarks"][0]["record"].as_str().unwrap().to_string();
    let mut record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join(file)).unwrap()).unwrap();

    let kernel = KernelMeasurement {
        method: KernelMethod::GraphReplay,
        not_capturable: None,
        samples_ns: vec![1.4e6],
        kernels: Vec::new(),
        counters: None,
        l2: Some(L2State::Flushed),
        clock: Some(ReplayClock {
            reads: 68,
            sm_mhz_mean: 1975.5,
            sm_mhz_min: 1950,
            sm_mhz_max: 1980,
            power_capped: 0,
            throttled: 0,
        }),
    };
    record["rounds"][0]["measurement"]["kernel"] = serde_json::to_value(&kernel).unwrap();
    assert_valid(&record_schema, &record, "a record with the replays' clock");
    let mut wrong = record.clone();
    wrong["rounds"][0]["measurement"]["kernel"]["clock"]["reads"] = 0.into();
    assert!(!record_schema.is_valid(&wrong));

    doc["benchmarks"][0]["summary"]["kernel_clock"] = serde_json::to_value(KernelClock {
        reads: 204,
        sm_clock_mhz: 1975.5,
        power_capped_share: 0.0,
    })
    .unwrap();
    assert_valid(&summary_schema, &doc, "a summary with the replays' clock");
    let mut wrong = doc.clone();
    wrong["benchmarks"][0]["summary"]["kernel_clock"]["power_capped_share"] = 2.into();
    assert!(!summary_schema.is_valid(&wrong));
}

#[test]
fn partitions_split_the_selection_and_runs_record_their_part() {
    let mut ran_ids = Vec::new();
    let mut listed_ids = Vec::new();
    for k in 1..=2 {
        let fake = Fake::new();
        let part = format!("hash:{k}/2");
        let selection = ["--exact", "passes", "matmul/64", "panics"];
        // `--list` with a partition lists that part alone, as nextest does.
        let listed = run(fake
            .command()
            .args(["--list", "--partition", &part])
            .args(selection))
        .expect_code(0);
        let listed: Vec<String> = listed.stdout.lines().map(str::to_string).collect();
        assert!(
            listed.len() < 3,
            "{part} lists the whole selection: {listed:?}"
        );
        let ran = run(fake.command().args(["--partition", &part]).args(selection));
        // The part that holds `panics` fails (1), the other passes (0).
        assert!(
            matches!(ran.code, Some(0 | 1)),
            "{:?}\n{}",
            ran.code,
            ran.stderr
        );
        assert!(
            ran.stderr.contains(&format!("partition {part}: ")),
            "{}",
            ran.stderr
        );
        let m = manifest(&latest_run(&fake.out_dir()));
        assert_eq!(m.partition.as_deref(), Some(part.as_str()));
        let mut measured: Vec<String> = m
            .benchmarks
            .iter()
            .map(|b| format!("fake/{}", b.id))
            .collect();
        measured.sort();
        assert_eq!(
            listed, measured,
            "{part}: the list is what the part measures"
        );
        ran_ids.extend(m.benchmarks.iter().map(|b| b.id.clone()));
        listed_ids.extend(listed);
    }
    ran_ids.sort();
    assert_eq!(
        ran_ids,
        ["matmul/64", "panics", "passes"],
        "each ran exactly once"
    );
    listed_ids.sort();
    assert_eq!(listed_ids, ["fake/matmul/64", "fake/panics", "fake/passes"]);
}

#[test]
fn a_second_run_on_a_locked_output_dir_fails_naming_the_lock() {
    let fake = Fake::new();
    let held = cargo_gpubench::testing::store::runs::RunStore::open(&fake.out_dir()).unwrap();
    let ran = run(fake.command().arg("passes")).expect_code(5);
    let lock = fake.out_dir().join("lock");
    assert!(
        ran.stderr.contains(&lock.display().to_string()),
        "{}",
        ran.stderr
    );
    assert!(
        ran.stderr.contains("another cargo gpubench run"),
        "{}",
        ran.stderr
    );
    drop(held);
    run(fake.command().arg("passes")).expect_code(0);
}

#[test]
fn ctrl_c_kills_the_running_benchmark_and_keeps_what_finished() {
    let fake = Fake::new();
    run(fake.command().args(["--save-baseline", "main", "passes"])).expect_code(0);
    let child = fake
        .command()
        .args(["--timeout", "60", "--baseline", "main", "passes", "sleeps"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid_file = fake.dir.path().join("bin/sleeps.pid");
    let deadline = Instant::now() + Duration::from_secs(20);
    while !pid_file.exists() {
        assert!(
            Instant::now() < deadline,
            "the sleeping benchmark never started"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let sent = Instant::now();
    // SAFETY: sends SIGINT to the child this test spawned.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let output = child.wait_with_output().unwrap();
    assert!(sent.elapsed() < Duration::from_secs(10));
    let ran = crate::support::Ran::of(output).expect_code(130);

    let run_dir = latest_run(&fake.out_dir());
    let m = manifest(&run_dir);
    assert_eq!(m.status, RunStatus::Interrupted);
    let passes = entry(&m, "fake", "passes");
    assert_eq!(passes.status, BenchStatus::Passed);
    let mut expected = passed_record("passes");
    expected.config.processes = ProcessPolicy::standard();
    assert_eq!(record(&run_dir, passes), expected);
    let sleeps = entry(&m, "fake", "sleeps");
    assert_eq!(sleeps.status, BenchStatus::Interrupted);
    assert!(sleeps.record.is_none());
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        !pid_alive(pid),
        "the interrupted benchmark's child {pid} survived"
    );
    assert!(
        ran.stdout
            .contains("1 passed, 0 failed, 1 not run (interrupted)"),
        "{}",
        ran.stdout
    );
    // What did not run has no verdict: the gate line says so, never a plain "no
    // regression", and the report is marked incomplete, naming what did not run.
    assert!(
        ran.stdout.contains("interrupted: no regression among the benchmarks that ran, no verdict on the 1 that did not"),
        "{}",
        ran.stdout
    );
    assert!(!ran.stdout.contains("\nno regression ("), "{}", ran.stdout);
    let index = std::fs::read_to_string(fake.out_dir().join("report/index.html")).unwrap();
    let incomplete = index
        .split("id=\"incomplete\"")
        .nth(1)
        .and_then(|rest| rest.split("</p>").next())
        .unwrap_or_else(|| panic!("no incomplete marker in the report: {index}"));
    assert!(
        incomplete.contains("sleeps") && !incomplete.contains("passes"),
        "{incomplete}"
    );
}

#[test]
fn missing_libtorch_is_a_setup_error_that_says_how_to_install_it() {
    let fake = Fake::new();
    let empty = fake.dir.path().join("empty-path");
    std::fs::create_dir_all(&empty).unwrap();
    let ran = run(fake
        .command()
        .env_remove("LIBTORCH")
        .env_remove("LD_LIBRARY_PATH")
        // No python3 to ask, no .venv in the working directory, nothing set up.
        .env("PATH", &empty)
        .env("GPUBENCH_CACHE_DIR", &empty))
    .expect_code(5);
    assert!(
        ran.stderr.contains("failed to find libtorch"),
        "{}",
        ran.stderr
    );
    assert!(
        ran.stderr.contains("Run `cargo gpubench setup`"),
        "{}",
        ran.stderr
    );
    assert!(
        ran.stderr.contains("pip install torch==2.11.0"),
        "{}",
        ran.stderr
    );
}

#[test]
fn usage_mistakes_exit_2_and_help_documents_exit_codes() {
    let fake = Fake::new();
    let ran = run(cargo_gpubench().args(["run", "--exe", "/no/such/bench"])).expect_code(2);
    assert!(
        ran.stderr.contains("/no/such/bench does not exist"),
        "{}",
        ran.stderr
    );
    run(fake.command().args(["--device", "tpu"])).expect_code(2);
    // A device that is not there stops the run once, before any benchmark runs.
    let ran = run(fake.command().args(["--device", "cuda:7", "--quick"])).expect_code(2);
    assert!(
        ran.stderr.contains(
            "--device cuda:7 is not available here: CUDA device 7 is not available: this machine has 0 CUDA devices"
        ),
        "{}",
        ran.stderr
    );
    assert_eq!(fake.calls(), "--check-device cuda:7\n", "nothing ran");
    // Measurement settings the harness would refuse fail once, here, before any
    // process starts (they failed in every benchmark's process: exit 1).
    for (args, said) in [
        (
            &["--min-samples", "50", "--max-samples", "10"][..],
            "error: failed to check the measurement options: --max-samples (10) is below --min-samples (50): raise --max-samples or lower --min-samples",
        ),
        (
            &["--max-samples", "8"],
            "--max-samples (8) is below --min-samples (10, the default)",
        ),
        (
            &["--warm-up-time", "0"],
            "--warm-up-time (GPUBENCH_WARM_UP_TIME) must be a positive number of seconds, got 0",
        ),
        (
            &["--min-samples", "1"],
            "--min-samples (GPUBENCH_MIN_SAMPLES) must be at least 2",
        ),
    ] {
        let ran = run(fake.command().args(args)).expect_code(2);
        assert!(ran.stderr.contains(said), "{args:?}: {}", ran.stderr);
        assert_eq!(fake.calls(), "--check-device cuda:7\n", "{args:?}: nothing ran");
    }
    let ran = run(fake.command().env("GPUBENCH_MIN_SAMPLES", "50").args([
        "--quick",
        "--max-samples",
        "20",
    ]))
    .expect_code(2);
    assert!(
        ran.stderr
            .contains("--max-samples (20) is below --min-samples (50)"),
        "{}",
        ran.stderr
    );
    // --quick's fewest is 5: 8 is above it.
    run(fake.command().args([
        "--quick",
        "--processes",
        "1",
        "--max-samples",
        "8",
        "--exact",
        "passes",
    ]))
    .expect_code(0);
    assert!(
        fake.calls()
            .contains("passes args=[--bench --exact passes --quick")
            && fake.calls().contains("--max-samples 8"),
        "{}",
        fake.calls()
    );

    // A --manifest-path that names no file is a usage error naming it, for every
    // command that takes one (it was cargo metadata's failure: 5).
    let missing = fake.dir.path().join("no/such/Cargo.toml");
    for command in [
        &["run"][..],
        &["archive", "-o", "a.tar.gz"],
        &["compare", "main", "latest"],
    ] {
        let ran = run(cargo_gpubench()
            .current_dir(fake.dir.path())
            .args(command)
            .arg("--manifest-path")
            .arg(&missing))
        .expect_code(2);
        assert!(
            ran.stderr.contains(&format!(
                "--manifest-path {} does not exist: pass the path of the workspace's Cargo.toml",
                missing.display()
            )),
            "{command:?}: {}",
            ran.stderr
        );
    }
    let ran = run(cargo_gpubench()
        .args(["run", "--manifest-path"])
        .arg(fake.dir.path()))
    .expect_code(2);
    assert!(
        ran.stderr.contains(&format!(
            "--manifest-path {} is not a file",
            fake.dir.path().display()
        )),
        "{}",
        ran.stderr
    );
    let ran = run(cargo_gpubench().args(["gpubench", "--help"])).expect_code(0);
    assert!(ran.stdout.contains("Exit codes:"), "{}", ran.stdout);
    assert!(
        ran.stdout.contains("Usage: cargo gpubench"),
        "{}",
        ran.stdout
    );
}
