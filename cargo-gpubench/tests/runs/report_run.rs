//! The HTML report as a run writes it, against a stand-in bench executable (`run
//! --exe`): every benchmark is on it, a comparison with the baseline shows its
//! verdicts, `--format json` names it, `--no-report` skips it, a report that cannot be
//! written is an error that keeps the records, and `cargo gpubench report` renders a
//! stored run again (and opens it, or says it cannot).
#![cfg(unix)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::support::{
    cargo_gpubench, latest_run, manifest, prepare_record, replay_stand_in, run, run_stand_in,
    synthetic_record, Ran,
};
use cargo_gpubench::testing::store::manifest::BenchStatus;
use gpubench_record::failure::FailureKind;
use gpubench_record::record::RawRecord;
use gpubench_record::testing::RecordBuilder;
use scraper::{Html, Selector};

const GPU: &str = "NVIDIA H200";
/// Every benchmark of the stand-in; `panics` fails.
const IDS: [&str; 3] = ["conv", "mm/64", "panics"];

struct Bench {
    dir: tempfile::TempDir,
}

impl Bench {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        replay_stand_in(dir.path(), &IDS);
        let b = Bench { dir };
        b.measure("mm/64", 1.0, 1);
        b.measure("conv", 1.0, 2);
        let failed = RecordBuilder::from(record("panics", 1.0, 3))
            .failed(FailureKind::Panic, "panicked at x.rs:9: boom")
            .build();
        b.prepare(&failed, true);
        b
    }

    /// What the next run measures for `id`: the model slowed by `factor`.
    fn measure(&self, id: &str, factor: f64, seed: u64) {
        self.prepare(&record(id, factor, seed), false);
    }

    fn prepare(&self, record: &RawRecord, fails: bool) {
        prepare_record(&self.dir.path().join("bin"), record, fails);
    }

    fn work(&self) -> PathBuf {
        self.dir.path().join("work")
    }

    /// The report's summary page with `--exe`: `./target/gpubench/report/index.html`.
    fn index(&self) -> PathBuf {
        self.work().join("target/gpubench/report/index.html")
    }

    /// `cargo-gpubench run --exe=<fake> ARGS` in `work/`.
    fn run(&self, args: &[&str]) -> Ran {
        run(run_stand_in(self.dir.path()).args(args))
    }

    /// `cargo-gpubench report ARGS` in `work/`, with `PATH` set to `path`.
    fn report(&self, args: &[&str], path: &Path) -> Ran {
        let mut cmd = cargo_gpubench();
        cmd.current_dir(self.work())
            .env("PATH", path)
            .args(["report", "--out-dir", "target/gpubench"])
            .args(["--baselines-dir", "gpubench/baselines"])
            .args(args);
        run(&mut cmd)
    }
}

fn record(id: &str, factor: f64, seed: u64) -> RawRecord {
    synthetic_record(id, GPU, factor, seed)
}

/// Each benchmark row of the summary page: its id and its verdict badge's word. A
/// row names its benchmark `<target>/<id>` as the terminal does (the stand-in's
/// target is `fake`).
fn rows(index: &Path) -> Vec<(String, String)> {
    let doc = Html::parse_document(&std::fs::read_to_string(index).unwrap());
    let row = Selector::parse("#benchmarks tbody tr").unwrap();
    let id = Selector::parse("th a").unwrap();
    let badge = Selector::parse(".badge").unwrap();
    doc.select(&row)
        .map(|r| {
            let text = |s: &Selector| {
                r.select(s)
                    .next()
                    .map(|e| e.text().collect::<String>())
                    .unwrap_or_default()
            };
            let name = text(&id);
            let id = name
                .strip_prefix("fake/")
                .unwrap_or_else(|| panic!("{name:?} is not named <target>/<id>"));
            (id.to_string(), text(&badge))
        })
        .collect()
}

fn ids(index: &Path) -> Vec<String> {
    let mut ids: Vec<String> = rows(index).into_iter().map(|(id, _)| id).collect();
    ids.sort();
    ids
}

fn verdict(index: &Path, id: &str) -> String {
    rows(index)
        .into_iter()
        .find(|(i, _)| i == id)
        .unwrap_or_else(|| panic!("{id} is not on {}", index.display()))
        .1
}

#[test]
fn a_run_writes_the_report_and_report_renders_it_again() {
    let b = Bench::new();
    // A failed benchmark still gets its row, and the run still exits 1 for it.
    let ran = b.run(&[]).expect_code(1);
    let index = b.index();
    assert!(
        ran.stderr
            .trim_end()
            .ends_with(&format!("report: {}", index.display())),
        "the report's path ends the run:\n{}",
        ran.stderr
    );
    assert_eq!(ids(&index), IDS);
    assert_eq!(verdict(&index, "panics"), "failed");

    // --format json names it instead.
    let ran = b.run(&["--format", "json", "mm", "conv"]).expect_code(0);
    let doc: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
    assert_eq!(doc["report"], index.display().to_string());
    assert!(!ran.stderr.contains("report: "), "{}", ran.stderr);
    // Each run replaces the report: the benchmark it did not run is gone.
    assert_eq!(ids(&index), ["conv", "mm/64"]);
    let latest = latest_run(&b.work().join("target/gpubench"));

    // `report` renders the latest run again, from what was stored.
    std::fs::remove_dir_all(index.parent().unwrap()).unwrap();
    let ran = b.report(&[], Path::new("")).expect_code(0);
    assert_eq!(ran.stdout, format!("report: {}\n", index.display()));
    assert_eq!(ids(&index), ["conv", "mm/64"]);
    // Any run reference works; the first run is named by the start of its id.
    let first = std::fs::read_dir(b.work().join("target/gpubench/runs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| *p != latest)
        .unwrap();
    let first_id = first.file_name().unwrap().to_str().unwrap().to_string();
    b.report(&[&first_id[..first_id.len() - 2]], Path::new(""))
        .expect_code(0);
    assert_eq!(ids(&index), IDS);
    let ran = b.report(&["nosuchrun"], Path::new("")).expect_code(2);
    assert!(
        ran.stderr.contains("failed to resolve RUN `nosuchrun`"),
        "{}",
        ran.stderr
    );

    // --no-report leaves the report of the last run that wrote one.
    let ran = b.run(&["--no-report", "mm"]).expect_code(0);
    assert!(!ran.stderr.contains("report: "), "{}", ran.stderr);
    assert_eq!(ids(&index), IDS);
}

#[test]
fn a_run_compared_with_a_baseline_shows_the_verdict_in_the_report() {
    let b = Bench::new();
    b.run(&["--save-baseline", "main", "mm", "conv"])
        .expect_code(0);
    b.measure("mm/64", 1.5, 11);
    b.measure("conv", 1.0, 12);
    b.run(&["mm", "conv"]).expect_code(4);
    let index = b.index();
    assert_eq!(verdict(&index, "mm/64"), "regressed");
    assert_eq!(verdict(&index, "conv"), "no change");
    let html = std::fs::read_to_string(&index).unwrap();
    assert!(html.contains("main"), "the baseline is named");

    // Saving over `main` later does not change what the stored run was judged
    // against: `report` uses the copy kept with the run.
    b.run(&["--no-baseline", "--save-baseline", "main", "mm", "conv"])
        .expect_code(0);
    assert_eq!(verdict(&index, "mm/64"), "no baseline");
    let previous = std::fs::read_dir(b.work().join("target/gpubench/runs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("comparison.json").is_file())
        .collect::<Vec<_>>();
    assert_eq!(previous.len(), 1);
    b.report(&[previous[0].to_str().unwrap()], Path::new(""))
        .expect_code(0);
    assert_eq!(verdict(&index, "mm/64"), "regressed");

    // A baseline is not a run.
    let ran = b.report(&["baseline:main"], Path::new("")).expect_code(2);
    assert!(ran.stderr.contains("not a stored run"), "{}", ran.stderr);
}

#[test]
fn the_report_and_the_baseline_show_the_processes_of_the_run_not_the_harness() {
    let b = Bench::new();
    // The stand-in's record says what a harness knows: one process, its own.
    b.run(&[
        "--processes",
        "3",
        "--save-baseline",
        "main",
        "--exact",
        "mm/64",
    ])
    .expect_code(0);
    let run_dir = latest_run(&b.work().join("target/gpubench"));
    let m = manifest(&run_dir);
    let r = crate::support::record(&run_dir, &m.benchmarks[0]);
    assert_eq!(r.processes.len(), 3);
    assert_eq!(
        r.config.processes,
        gpubench_record::measurement::ProcessPolicy::fixed(3)
    );
    let saved = gpubench_analysis::BaselineStore::new(b.work().join("gpubench/baselines"))
        .load("main")
        .unwrap();
    let config = saved[0]
        .config
        .as_ref()
        .expect("the baseline keeps the settings");
    assert_eq!(
        config.processes,
        gpubench_record::measurement::ProcessPolicy::fixed(3)
    );

    let page = b.index().parent().unwrap().join(format!(
        "bench/{}.html",
        gpubench_record::id::file_stem_for_id("mm/64")
    ));
    let doc = Html::parse_document(&std::fs::read_to_string(page).unwrap());
    let rows = Selector::parse("table.pairs tr").unwrap();
    let processes: Vec<String> = doc
        .select(&rows)
        .map(|r| r.text().collect::<String>())
        .filter(|t| t.starts_with("processes"))
        .collect();
    assert_eq!(processes, ["processes3"]);
}

#[test]
fn a_report_that_cannot_be_written_keeps_the_records_and_exits_5() {
    let b = Bench::new();
    let report_dir = b.work().join("target/gpubench/report");
    std::fs::create_dir_all(report_dir.parent().unwrap()).unwrap();
    std::fs::write(&report_dir, "in the way").unwrap();

    let ran = b.run(&["mm", "conv"]).expect_code(5);
    assert!(
        ran.stderr.contains(&format!(
            "error: failed to render the HTML report in {}",
            report_dir.display()
        )),
        "{}",
        ran.stderr
    );
    assert!(
        ran.stderr.contains("the records are kept in"),
        "{}",
        ran.stderr
    );
    assert!(
        ran.stdout.contains("2 benchmarks: 2 passed"),
        "{}",
        ran.stdout
    );
    let m = manifest(&latest_run(&b.work().join("target/gpubench")));
    assert!(m.benchmarks.iter().all(|e| e.status == BenchStatus::Passed));

    // JSON readers see why and the exit code.
    let ran = b.run(&["--format", "json", "mm"]).expect_code(5);
    let doc: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
    assert!(doc["report_error"]
        .as_str()
        .unwrap()
        .starts_with("failed to render the HTML report"));
    assert_eq!(doc["exit"]["code"], 5);

    // A failed benchmark's verdict wins over the report.
    b.run(&["panics"]).expect_code(1);
}

#[test]
fn report_open_uses_the_opener_and_never_fails_without_one() {
    let b = Bench::new();
    b.run(&["mm"]).expect_code(0);
    let index = b.index();

    let bin = b.dir.path().join("opener");
    std::fs::create_dir_all(&bin).unwrap();
    let log = b.dir.path().join("opened");
    for name in ["xdg-open", "open"] {
        let script = bin.join(name);
        std::fs::write(
            &script,
            format!("#!/bin/sh\necho \"$1\" > '{}'\n", log.display()),
        )
        .unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    b.report(&["--open"], &bin).expect_code(0);
    assert_eq!(
        std::fs::read_to_string(&log).unwrap().trim_end(),
        index.display().to_string()
    );

    let empty = b.dir.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let ran = b.report(&["--open"], &empty).expect_code(0);
    assert_eq!(ran.stdout, format!("report: {}\n", index.display()));
    assert!(ran.stderr.contains("no opener found"), "{}", ran.stderr);
}
