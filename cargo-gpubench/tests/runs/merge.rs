//! `cargo gpubench merge` end to end with the stand-in bench executable
//! (`support/fake_harness.rs`): a suite run in parts with `--partition` into separate
//! output directories, as the jobs of a CI matrix would, folded into one run and one
//! report; the refusals; and a baseline saved from parts.
#![cfg(unix)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::support::fake_harness::{passed_record, Fake};
use crate::support::{cargo_gpubench, latest_run, manifest, prepare_record, run, Ran};
use cargo_gpubench::testing::store::manifest::{BenchStatus, RunManifest, RunStatus};

/// The stand-in's benchmarks that end on their own: two pass, four fail in
/// different ways.
const SUITE: [&str; 6] = [
    "passes",
    "matmul/64",
    "panics",
    "aborts",
    "exits_2",
    "no_record",
];

/// The arguments of a part run that saves baseline `name` into `./baselines`, without
/// a report.
fn save(name: &str) -> [&str; 5] {
    [
        "--no-report",
        "--baselines-dir",
        "baselines",
        "--save-baseline",
        name,
    ]
}

/// Runs `ids` of the stand-in (part `partition` of them) into `out`; the run's
/// directory, or `None` when the part held no benchmark.
fn run_part(
    fake: &Fake,
    out: &Path,
    partition: Option<&str>,
    ids: &[&str],
    extra: &[&str],
) -> Option<PathBuf> {
    let mut cmd = fake.command();
    cmd.arg("--out-dir").arg(out).args(["--processes", "1"]);
    if let Some(p) = partition {
        cmd.args(["--partition", p]);
    }
    let ran = run(cmd.args(extra).arg("--exact").args(ids));
    assert!(
        matches!(ran.code, Some(0 | 1)),
        "{:?}\n{}",
        ran.code,
        ran.stderr
    );
    (!ran.stderr.contains("holds no benchmark")).then(|| latest_run(out))
}

/// Two disjoint runs in `work/a` (`passes`) and `work/b` (`matmul/64`): their
/// run directories.
fn two_runs(fake: &Fake) -> (PathBuf, PathBuf) {
    let work = fake.dir.path().join("work");
    let run = |dir: &str, id: &str| {
        run_part(fake, &work.join(dir), None, &[id], &["--no-report"]).unwrap()
    };
    (run("a", "passes"), run("b", "matmul/64"))
}

/// `cargo gpubench merge INPUTS --out-dir OUT` in the stand-in's work directory,
/// with baselines in `work/baselines`.
fn merge(fake: &Fake, inputs: &[&str], out: &Path, extra: &[&str]) -> Ran {
    run(cargo_gpubench()
        .current_dir(fake.dir.path().join("work"))
        .arg("merge")
        .args(inputs)
        .arg("--out-dir")
        .arg(out)
        .args(["--baselines-dir", "baselines"])
        .args(extra))
}

/// Each benchmark of a run: `<target>/<id>`, its status and whether it has a record.
fn contents(m: &RunManifest) -> Vec<(String, BenchStatus, bool)> {
    m.benchmarks
        .iter()
        .map(|b| {
            (
                format!("{}/{}", b.target, b.id),
                b.status,
                b.record.is_some(),
            )
        })
        .collect()
}

/// The bytes of every record of the runs in `dirs`, by benchmark id.
fn record_bytes(dirs: &[PathBuf]) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    for dir in dirs {
        for b in manifest(dir).benchmarks {
            if let Some(file) = b.record {
                out.insert(b.id, std::fs::read(dir.join(file)).unwrap());
            }
        }
    }
    out
}

#[test]
fn merging_every_part_gives_the_suite_of_one_run_and_one_report() {
    let fake = Fake::new();
    let work = fake.dir.path().join("work");
    let whole = run_part(&fake, &work.join("whole"), None, &SUITE, &["--no-report"]).unwrap();
    let expected = contents(&manifest(&whole));
    assert_eq!(expected.len(), SUITE.len());
    for scheme in ["count", "hash"] {
        for n in [2, 3, 5] {
            let mut inputs = Vec::new();
            let mut runs = Vec::new();
            let mut empty = Vec::new();
            for k in 1..=n {
                let spec = format!("{scheme}:{k}/{n}");
                let out = format!("./parts-{scheme}-{n}/{k}");
                match run_part(
                    &fake,
                    &work.join(&out),
                    Some(&spec),
                    &SUITE,
                    &["--no-report"],
                ) {
                    Some(dir) => {
                        inputs.push(out);
                        runs.push(dir);
                    }
                    None => empty.push(spec),
                }
            }
            let merged_out = work.join(format!("merged-{scheme}-{n}"));
            let inputs: Vec<&str> = inputs.iter().map(String::as_str).collect();
            // Four benchmarks of the suite fail: exit 1, as one run of it would.
            let ran = merge(&fake, &inputs, &merged_out, &["--format", "json"]).expect_code(1);
            let dir = latest_run(&merged_out);
            let m = manifest(&dir);
            assert_eq!(
                contents(&m),
                expected,
                "{scheme}:K/{n}: the whole suite, once"
            );
            assert_eq!(m.status, RunStatus::Completed);
            assert_eq!(m.partition, None);
            let parts: Vec<Option<&str>> = m
                .merged_from
                .iter()
                .map(|p| p.partition.as_deref())
                .collect();
            let carried: Vec<String> = (1..=n)
                .map(|k| format!("{scheme}:{k}/{n}"))
                .filter(|s| !empty.contains(s))
                .collect();
            assert_eq!(
                parts,
                carried.iter().map(|s| Some(s.as_str())).collect::<Vec<_>>()
            );
            // A part that held no benchmark left no run: it is named as missing.
            for spec in &empty {
                assert!(ran.stderr.contains(spec.as_str()), "{spec}: {}", ran.stderr);
            }
            if empty.is_empty() {
                assert!(!ran.stderr.contains("warning"), "{}", ran.stderr);
            }
            // Records are copied as they are, not rewritten.
            assert_eq!(
                record_bytes(std::slice::from_ref(&dir)),
                record_bytes(&runs)
            );
            // The summary a run prints, of the merged run.
            let doc: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
            assert_eq!(doc["run_id"], m.run_id.as_str());
            assert_eq!(doc["benchmarks"].as_array().unwrap().len(), SUITE.len());
            assert_eq!(
                (doc["passed"].as_u64(), doc["failed"].as_u64()),
                (Some(2), Some(4))
            );
            assert_eq!(doc["exit"]["code"], 1);
            // One report: its index and a page per recorded benchmark.
            let report = merged_out.join("report");
            assert!(report.join("index.html").is_file());
            assert_eq!(
                doc["report"],
                report.join("index.html").display().to_string()
            );
            let pages = std::fs::read_dir(report.join("bench"))
                .unwrap()
                .filter(|e| e.as_ref().unwrap().path().extension() == Some("html".as_ref()))
                .count();
            assert_eq!(pages, expected.iter().filter(|(_, _, r)| *r).count());
            // The report lists every part: its run and its share of the suite.
            let index = std::fs::read_to_string(report.join("index.html"))
                .unwrap()
                .replace("&#x2F;", "/");
            let table = index
                .split("<table id=\"parts\"")
                .nth(1)
                .expect("a table of the parts")
                .split("</table>")
                .next()
                .unwrap();
            for part in &m.merged_from {
                assert!(table.contains(&part.run_id), "{}: {table}", part.run_id);
                let spec = part.partition.as_deref().unwrap();
                assert!(table.contains(spec), "{spec}: {table}");
            }
            // Parts that held no benchmark left no run: the manifest names them.
            assert_eq!(m.gaps.is_empty(), empty.is_empty(), "{:?}", m.gaps);
            for spec in &empty {
                assert!(m.gaps.join(" ").contains(spec.as_str()), "{:?}", m.gaps);
            }
        }
    }
}

#[test]
fn a_merge_with_a_missing_part_fails_naming_it_unless_allowed_and_keeps_what_it_has() {
    let fake = Fake::new();
    let work = fake.dir.path().join("work");
    // Natural order deals fake/matmul/64, fake/panics, fake/passes to parts 1, 2, 3.
    let ids = ["passes", "matmul/64", "panics"];
    for k in [1, 3] {
        run_part(
            &fake,
            &work.join(format!("p{k}")),
            Some(&format!("count:{k}/3")),
            &ids,
            &["--no-report"],
        )
        .unwrap();
    }
    // The parts by run directory and by output directory; nothing failed in them,
    // yet the merge lacks part 2: exit 1, naming it.
    let p1 = latest_run(&work.join("p1"));
    let ran = merge(
        &fake,
        &[p1.to_str().unwrap(), "./p3"],
        &work.join("merged"),
        &["--no-report"],
    )
    .expect_code(1);
    assert!(
        ran.stderr
            .contains("error: 1 of the 3 parts is missing: count:2/3; the merged run lacks"),
        "{}",
        ran.stderr
    );
    let m = manifest(&latest_run(&work.join("merged")));
    assert_eq!(m.benchmarks.len(), 2);
    assert_eq!(
        m.selection.as_ref().map(|s| s.other_parts.clone()),
        Some(vec!["panics".to_string()]),
        "the missing part's benchmarks are named"
    );
    assert!(!work.join("merged/report").exists(), "--no-report");
    // Allowed, it is a warning and the merge passes.
    let ran = merge(
        &fake,
        &[p1.to_str().unwrap(), "./p3"],
        &work.join("merged-allowed"),
        &["--allow-missing", "not-run"],
    )
    .expect_code(0);
    assert!(
        ran.stderr.contains("warning: 1 of the 3 parts is missing"),
        "{}",
        ran.stderr
    );
    // The manifest keeps the gap, and the report says it at the top.
    let m = manifest(&latest_run(&work.join("merged-allowed")));
    assert_eq!(m.gaps.len(), 1, "{:?}", m.gaps);
    assert!(m.gaps[0].contains("count:2/3"), "{:?}", m.gaps);
    let index = std::fs::read_to_string(work.join("merged-allowed/report/index.html"))
        .unwrap()
        .replace("&#x2F;", "/");
    let callout = index
        .split("id=\"gaps\"")
        .nth(1)
        .expect("a callout naming the missing part")
        .split("</p>")
        .next()
        .unwrap();
    assert!(
        callout.contains("Parts missing") && callout.contains("count:2/3"),
        "{callout}"
    );
}

#[test]
fn against_a_baseline_the_benchmarks_of_a_missing_part_are_missing_evidence() {
    let fake = Fake::new();
    let work = fake.dir.path().join("work");
    // fake/matmul/64 is part 1 of 2, fake/passes part 2.
    let ids = ["passes", "matmul/64"];
    run_part(&fake, &work.join("base"), None, &ids, &save("main")).unwrap();
    run_part(
        &fake,
        &work.join("p1"),
        Some("count:1/2"),
        &ids,
        &["--no-report"],
    )
    .unwrap();
    // Part 1 alone against the whole baseline: `passes` was left to part 2, so a
    // part's own comparison does not count it...
    let ran = run(cargo_gpubench().current_dir(&work).args([
        "compare",
        "main",
        "./p1",
        "--baselines-dir",
        "baselines",
    ]))
    .expect_code(0);
    assert!(!ran.stdout.contains("regression found"), "{}", ran.stdout);
    // ...but a merge without part 2 lacks it: not run, its part missing.
    let ran = merge(
        &fake,
        &["./p1"],
        &work.join("merged"),
        &[
            "--no-report",
            "--allow-missing",
            "not-run",
            "--format",
            "json",
        ],
    )
    .expect_code(0);
    let v: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
    let missing = v["comparison"]["missing"].as_array().unwrap();
    assert_eq!(missing.len(), 1, "{missing:?}");
    assert_eq!(missing[0]["id"], "passes");
    assert_eq!(missing[0]["kind"], "not_run");
    assert!(
        missing[0]["reason"]
            .as_str()
            .unwrap()
            .contains("--partition part is missing from the merge"),
        "{missing:?}"
    );
    let ran = merge(&fake, &["./p1"], &work.join("merged-2"), &["--no-report"]).expect_code(1);
    assert!(ran.stdout.contains("passes (not run)"), "{}", ran.stdout);
}

#[test]
fn overlapping_runs_are_refused_naming_the_benchmark_and_both_runs() {
    let fake = Fake::new();
    let work = fake.dir.path().join("work");
    let a = run_part(&fake, &work.join("a"), None, &["passes", "matmul/64"], &[]).unwrap();
    let b = run_part(&fake, &work.join("b"), None, &["passes"], &[]).unwrap();
    let (a_id, b_id) = (manifest(&a).run_id, manifest(&b).run_id);
    let ran = merge(&fake, &["./a", "./b"], &work.join("merged"), &[]).expect_code(2);
    assert!(
        ran.stderr.contains(&format!(
            "benchmark `fake/passes` is in both run `{a_id}` and run `{b_id}`"
        )),
        "{}",
        ran.stderr
    );
    assert!(ran.stderr.contains("--partition"), "{}", ran.stderr);
    // A refused merge leaves nothing behind, not even the output directory.
    assert!(!work.join("merged").exists());
    // The same run twice.
    let ran = merge(
        &fake,
        &["./a", a.to_str().unwrap()],
        &work.join("merged"),
        &[],
    )
    .expect_code(2);
    assert!(ran.stderr.contains("is given twice"), "{}", ran.stderr);
}

#[test]
fn runs_of_different_gpu_models_are_never_pooled() {
    let fake = Fake::new();
    let work = fake.dir.path().join("work");
    let bin = fake.dir.path().join("bin");
    let mut runs = Vec::new();
    for (name, model) in [("h200", "NVIDIA H200"), ("a100", "NVIDIA A100-SXM4-80GB")] {
        let mut r = passed_record("passes");
        r.fingerprint.device.name = model.to_string();
        prepare_record(&bin, &r, false);
        runs.push(run_part(&fake, &work.join(name), None, &["passes"], &["--no-report"]).unwrap());
    }
    let ids: Vec<String> = runs.iter().map(|r| manifest(r).run_id).collect();
    let ran = merge(&fake, &["./h200", "./a100"], &work.join("merged"), &[]).expect_code(2);
    for needle in [
        "/passes` was measured on NVIDIA H200 in run `".to_string(),
        format!("NVIDIA A100-SXM4-80GB in run `{}`", ids[1]),
        "never pooled".to_string(),
        format!("cargo gpubench compare run:{} run:{}", ids[0], ids[1]),
    ] {
        assert!(
            ran.stderr.contains(&needle),
            "{needle:?} not in:\n{}",
            ran.stderr
        );
    }
}

#[test]
fn a_run_still_being_written_is_refused() {
    let fake = Fake::new();
    let work = fake.dir.path().join("work");
    let (_, b) = two_runs(&fake);
    // As a run writes it while it runs: running, by a live process (this test's).
    let path = b.join("manifest.json");
    let mut m = manifest(&b);
    m.status = RunStatus::Running;
    m.pid = Some(std::process::id());
    std::fs::write(&path, m.to_json_pretty()).unwrap();
    let ran = merge(&fake, &["./a", "./b"], &work.join("merged"), &[]).expect_code(2);
    assert!(
        ran.stderr.contains(&format!(
            "run `{}` ({}) is still being written",
            m.run_id,
            b.display()
        )),
        "{}",
        ran.stderr
    );
}

#[test]
fn a_merged_run_is_judged_against_the_baseline_and_gates_like_a_run() {
    let fake = Fake::new();
    let work = fake.dir.path().join("work");
    let store = work.join("target/gpubench");
    let ids = ["passes", "matmul/64"];
    let part = |out: &str, partition: Option<&str>, extra: &[&str]| {
        let mut cmd = fake.command();
        cmd.arg("--out-dir")
            .arg(work.join(out))
            .args(["--processes", "5", "--no-report"]);
        if let Some(p) = partition {
            cmd.args(["--partition", p]);
        }
        run(cmd.args(extra).arg("--exact").args(ids)).expect_code(0);
    };
    part(
        "base",
        None,
        &["--save-baseline", "main", "--baselines-dir", "baselines"],
    );
    // From now on matmul/64 takes twice as long.
    let mut slow = passed_record("matmul/64");
    for s in &mut slow.processes[0].measurement.as_mut().unwrap().samples {
        s.wall_ns *= 2.0;
        s.host_ns *= 2.0;
    }
    prepare_record(fake.exe().parent().unwrap(), &slow, false);
    part("p1", Some("count:1/2"), &["--no-baseline"]);
    part("p2", Some("count:2/2"), &["--no-baseline"]);

    // Compared with `main` (the default), the regression gates the merge: exit 4.
    let ran = merge(
        &fake,
        &["./p1", "./p2"],
        &store,
        &["--fail-on", "regressed"],
    )
    .expect_code(4);
    assert!(
        ran.stderr.contains("comparing with baseline `main`"),
        "{}",
        ran.stderr
    );
    assert!(ran.stdout.contains("regressed"), "{}", ran.stdout);
    let merged = latest_run(&store);
    assert!(
        merged.join("comparison.json").is_file(),
        "the comparison is stored with the merged run"
    );
    let index = std::fs::read_to_string(store.join("report/index.html")).unwrap();
    assert!(index.contains("regressed"), "the report shows the verdicts");
    // Without a baseline there is nothing to gate on.
    merge(
        &fake,
        &["./p1", "./p2"],
        &work.join("again"),
        &["--no-baseline"],
    )
    .expect_code(0);
    // A baseline that is not saved stops the merge before it writes anything.
    let ran = merge(
        &fake,
        &["./p1", "./p2"],
        &work.join("none"),
        &["--baseline", "nope"],
    )
    .expect_code(2);
    assert!(ran.stderr.contains("nope"), "{}", ran.stderr);
    assert!(!work.join("none/runs").exists(), "nothing written");
}

#[test]
fn a_copy_marked_running_from_another_machine_merges_as_incomplete() {
    let fake = Fake::new();
    let work = fake.dir.path().join("work");
    let (_, b) = two_runs(&fake);
    // The artifact of a job killed on a GPU machine: still marked running there, by
    // a pid that happens to be alive here.
    let mut m = manifest(&b);
    m.status = RunStatus::Running;
    m.pid = Some(std::process::id());
    m.host = Some("a-gpu-runner-that-is-not-this-machine".into());
    std::fs::write(b.join("manifest.json"), m.to_json_pretty()).unwrap();
    // A part cut short fails the merge, naming it...
    let ran = merge(&fake, &["./a", "./b"], &work.join("merged"), &[]).expect_code(1);
    assert!(
        ran.stderr.contains(&m.run_id)
            && ran.stderr.contains("error: ")
            && ran.stderr.contains("incomplete"),
        "{}",
        ran.stderr
    );
    let merged = manifest(&latest_run(&work.join("merged")));
    assert_eq!(merged.status, RunStatus::Incomplete);
    assert!(merged.host.is_some(), "the merged run names its machine");
    // ...unless it is allowed.
    merge(
        &fake,
        &["./a", "./b"],
        &work.join("merged-allowed"),
        &["--allow-missing", "not-run"],
    )
    .expect_code(0);
}

#[test]
fn a_failed_merge_leaves_no_run_behind() {
    let fake = Fake::new();
    let work = fake.dir.path().join("work");
    let (a, b) = two_runs(&fake);
    // A record the manifest lists is gone (a half-downloaded artifact).
    let gone = manifest(&b).benchmarks[0].record.clone().unwrap();
    std::fs::remove_file(b.join(&gone)).unwrap();
    let out = work.join("merged");
    let ran = merge(&fake, &["./a", "./b"], &out, &[]);
    assert_ne!(ran.code, Some(0), "{}", ran.stderr);
    assert!(ran.stderr.contains(&gone), "{}", ran.stderr);
    let left: Vec<_> = std::fs::read_dir(out.join("runs"))
        .map(|d| d.filter_map(Result::ok).map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "a half-merged run stayed: {left:?}");
    assert!(manifest(&a).merged_from.is_empty(), "inputs untouched");
}

#[test]
fn compare_judges_the_merged_run_as_latest() {
    let fake = Fake::new();
    let work = fake.dir.path().join("work");
    let ids = ["passes", "matmul/64"];
    let store = work.join("target/gpubench");
    run_part(&fake, &store, None, &ids, &save("main")).unwrap();
    // One part stored in the output directory the merge writes to (named by
    // `latest`), one elsewhere.
    run_part(&fake, &store, Some("count:1/2"), &ids, &["--no-report"]).unwrap();
    run_part(
        &fake,
        &work.join("other"),
        Some("count:2/2"),
        &ids,
        &["--no-report"],
    )
    .unwrap();
    let ran = merge(&fake, &["latest", "./other"], &store, &[]).expect_code(0);
    let merged = manifest(&latest_run(&store));
    assert_eq!(merged.merged_from.len(), 2);
    assert!(ran.stdout.contains("matmul/64"), "{}", ran.stdout);
    let ran = run(cargo_gpubench()
        .current_dir(&work)
        .args(["compare", "main", "latest", "--fail-on", "regressed"])
        .args([
            "--baselines-dir",
            "baselines",
            "--out-dir",
            "target/gpubench",
        ]))
    .expect_code(0);
    assert!(
        ran.stdout
            .contains(&format!("comparing run `{}`", merged.run_id)),
        "{}",
        ran.stdout
    );
    assert!(
        ran.stdout.contains("passes") && ran.stdout.contains("matmul/64"),
        "{}",
        ran.stdout
    );
}

#[test]
fn a_baseline_saved_from_partial_runs_is_the_whole_suites() {
    let fake = Fake::new();
    let work = fake.dir.path().join("work");
    let ids = ["passes", "matmul/64", "panics"];
    let whole = save("whole");
    run_part(&fake, &work.join("whole"), None, &ids, &whole).unwrap();
    // Each part saves into the same baseline, leaving the others' files alone.
    let per_part = save("per-part");
    for k in 1..=3 {
        let part = format!("count:{k}/3");
        run_part(
            &fake,
            &work.join(format!("p{k}")),
            Some(&part),
            &ids,
            &per_part,
        )
        .unwrap();
    }
    // Or the parts are merged, and the merged run saved.
    let ran = merge(
        &fake,
        &["./p1", "./p2", "./p3"],
        &work.join("merged"),
        &["--no-report", "--save-baseline", "merged"],
    )
    .expect_code(1);
    assert!(
        ran.stderr.contains("saved baseline `merged`: 2 benchmarks"),
        "{}",
        ran.stderr
    );
    let files = |name: &str| -> BTreeMap<String, Vec<u8>> {
        std::fs::read_dir(work.join("baselines").join(name))
            .unwrap()
            .map(|e| {
                let p = e.unwrap().path();
                (
                    p.file_name().unwrap().to_string_lossy().into_owned(),
                    std::fs::read(&p).unwrap(),
                )
            })
            .collect()
    };
    let whole = files("whole");
    assert_eq!(
        whole.len(),
        2,
        "the benchmarks that passed: {:?}",
        whole.keys()
    );
    assert_eq!(files("per-part"), whole);
    assert_eq!(files("merged"), whole);
}

#[test]
fn a_run_whose_manifest_lists_a_benchmark_twice_is_refused_not_counted_twice() {
    let fake = Fake::new();
    let work = fake.dir.path().join("work");
    let store = work.join("target/gpubench");
    let dir = run_part(&fake, &store, None, &["passes", "matmul/64"], &save("main")).unwrap();
    let mut m = manifest(&dir);
    let repeated = m.benchmarks[0].clone();
    m.benchmarks.push(repeated.clone());
    std::fs::write(dir.join("manifest.json"), m.to_json_pretty()).unwrap();
    let ran = run(cargo_gpubench()
        .current_dir(&work)
        .args(["compare", "main", "latest"])
        .args([
            "--baselines-dir",
            "baselines",
            "--out-dir",
            "target/gpubench",
        ]))
    .expect_code(2);
    assert!(
        ran.stderr.contains(&format!(
            "lists benchmark `{}` 2 times, but a run measures each benchmark once",
            repeated.id
        )) && ran.stderr.contains("manifest.json"),
        "{}",
        ran.stderr
    );
}

#[test]
fn an_ab_run_is_refused_before_anything_is_written() {
    use cargo_gpubench::testing::store::manifest::{ManifestAb, ManifestRevision};
    let fake = Fake::new();
    let work = fake.dir.path().join("work");
    let (a, b) = two_runs(&fake);
    // `b` as `ab` stores it: the head's records, with the revisions in its manifest.
    let mut m = manifest(&b);
    let revision = |label: &str| ManifestRevision {
        label: label.into(),
        commit: Some(format!("{label}0000")),
        dirty: false,
        libraries: Vec::new(),
    };
    m.ab = Some(ManifestAb {
        base: revision("1a2b3c4d"),
        head: revision("5e6f7a8b"),
        paired: true,
        unpaired_reason: None,
    });
    std::fs::write(b.join("manifest.json"), m.to_json_pretty()).unwrap();
    let out = work.join("merged");
    let ran = merge(&fake, &["./a", "./b"], &out, &[]).expect_code(2);
    assert!(
        ran.stderr.contains(&format!(
            "run `{}` is an `ab` run (head (5e6f7a8b) against base (1a2b3c4d))",
            m.run_id
        )) && ran
            .stderr
            .contains(&format!("run `{}` is a plain run", manifest(&a).run_id)),
        "{}",
        ran.stderr
    );
    assert!(!out.join("runs").exists(), "nothing is written");
}
