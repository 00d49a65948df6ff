use super::*;
use crate::store::manifest::{BenchStatus, LibraryDigest};

/// A completed run `run_id` that measured `ids` (all passed) on `model`.
fn part(run_id: &str, partition: Option<&str>, ids: &[&str], model: Option<&str>) -> Part {
    let benchmarks: Vec<ManifestBenchmark> = ids
        .iter()
        .map(|id| ManifestBenchmark {
            id: id.to_string(),
            target: "suite".into(),
            package: Some("gpu".into()),
            status: BenchStatus::Passed,
            failure_kind: None,
            record: Some(format!("{}.json", id.replace('/', "_"))),
            duration_s: Some(1.0),
            processes: 3,
            device: None,
        })
        .collect();
    Part {
        dir: PathBuf::from(format!("/artifacts/{run_id}")),
        models: match model {
            Some(m) => ids
                .iter()
                .map(|id| (id.to_string(), m.to_string()))
                .collect(),
            None => BTreeMap::new(),
        },
        manifest: RunManifest {
            format_version: MANIFEST_FORMAT_VERSION,
            run_id: run_id.into(),
            started_at: format!("2026-01-0{}T00:00:00.000Z", run_id.len() % 9 + 1),
            finished_at: Some("2026-01-09T00:00:00.000Z".into()),
            status: RunStatus::Completed,
            error: None,
            pid: None,
            command_line: vec!["cargo-gpubench".into()],
            device: "cuda".into(),
            quick: false,
            flush_l2: false,
            processes: gpubench_record::measurement::ProcessPolicy::standard(),
            partition: partition.map(str::to_string),
            ab: None,
            selection: None,
            timeout_s: 300.0,
            libtorch_lib: "/venv/torch/lib".into(),
            executables: vec![ManifestExecutable {
                package: Some("gpu".into()),
                target: "suite".into(),
                path: "/t/suite-0123".into(),
            }],
            benchmarks,
            merged_from: Vec::new(),
            gaps: Vec::new(),
            archive: None,
            host: None,
        },
    }
}

const H200: Option<&str> = Some("NVIDIA H200");

#[test]
fn disjoint_parts_merge_into_the_suite_in_run_order_listing_the_parts() {
    let parts = [
        part("a", Some("count:1/2"), &["mlp/1024", "add"], H200),
        part("b", Some("count:2/2"), &["mlp/256", "matmul"], H200),
    ];
    let planned = plan(&parts).unwrap();
    assert_eq!(planned.status, RunStatus::Completed);
    assert!(planned.warnings.is_empty(), "{:?}", planned.warnings);
    assert!(planned.gaps.is_empty(), "{:?}", planned.gaps);
    assert!(planned.notes.is_empty(), "{:?}", planned.notes);
    let m = manifest(
        &parts,
        &planned,
        "merged",
        "2026-02-01T00:00:00.000Z",
        vec![],
    );
    let ids: Vec<&str> = m.benchmarks.iter().map(|b| b.id.as_str()).collect();
    // The order of one unpartitioned run: natural, so a sweep reads by size.
    assert_eq!(ids, ["add", "matmul", "mlp/256", "mlp/1024"]);
    assert_eq!(
        m.benchmarks[2].record,
        Some(RunDir::record_file("mlp/256")),
        "named as a run names it"
    );
    assert_eq!(m.status, RunStatus::Completed);
    assert_eq!(m.partition, None);
    assert_eq!(m.executables.len(), 1, "the same executable once");
    assert_eq!(m.finished_at.as_deref(), Some("2026-02-01T00:00:00.000Z"));
    let listed: Vec<(&str, Option<&str>)> = m
        .merged_from
        .iter()
        .map(|p| (p.run_id.as_str(), p.partition.as_deref()))
        .collect();
    assert_eq!(listed, [("a", Some("count:1/2")), ("b", Some("count:2/2"))]);
    assert_eq!(m.merged_from[0].device_models, ["NVIDIA H200"]);
    assert_eq!(m.merged_from[1].benchmarks, 2);
    // Read back, an older manifest (no `merged_from`) and a merged one both read.
    let text = m.to_json_pretty();
    let back: RunManifest = serde_json::from_str(&text).unwrap();
    assert_eq!(back, m);
    let old = parts[0].manifest.to_json_pretty();
    assert!(!old.contains("merged_from"), "{old}");
    assert!(serde_json::from_str::<RunManifest>(&old).is_ok());
}

#[test]
fn one_benchmark_on_two_device_models_is_never_pooled() {
    let parts = [
        part("a", None, &["matmul"], H200),
        part("b", None, &["matmul", "add"], Some("NVIDIA A100")),
    ];
    let err = plan(&parts).unwrap_err().to_string();
    for needle in [
        "`suite/matmul`",
        "NVIDIA H200 in run `a`",
        "NVIDIA A100 in run `b`",
        "never pooled",
        "compare run:a run:b --allow-device-mismatch",
    ] {
        assert!(err.contains(needle), "{needle:?} not in: {err}");
    }
}

#[test]
fn one_benchmark_in_two_runs_of_one_model_is_refused_saying_merge_is_for_parts() {
    let parts = [
        part("a", Some("hash:1/2"), &["add"], H200),
        part("b", Some("hash:1/2"), &["matmul", "add"], H200),
    ];
    let err = plan(&parts).unwrap_err().to_string();
    assert!(
        err.contains("`suite/add` is in both run `a` and run `b` (both on NVIDIA H200)"),
        "{err}"
    );
    assert!(err.contains("--partition"), "{err}");
    // Unknown models (CPU records) are refused alike, without naming a model.
    let parts = [
        part("a", None, &["add"], None),
        part("b", None, &["add"], None),
    ];
    let err = plan(&parts).unwrap_err().to_string();
    assert!(err.contains("in both run `a` and run `b`: merge"), "{err}");
    // A benchmark that did not run in one input still counts: the inputs overlap.
    let mut a = part("a", None, &["add"], None);
    a.manifest.benchmarks[0].status = BenchStatus::Pending;
    a.manifest.benchmarks[0].record = None;
    assert!(plan(&[a, part("b", None, &["add"], None)]).is_err());
}

#[test]
fn a_run_still_being_written_or_given_twice_is_refused() {
    let mut a = part("a", None, &["add"], None);
    a.manifest.status = RunStatus::Running;
    a.manifest.pid = Some(std::process::id());
    let err = plan(&[a, part("b", None, &["mul"], None)])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("run `a` (/artifacts/a) is still being written")
            && err.contains(&format!("(pid {})", std::process::id())),
        "{err}"
    );
    let mut again = part("a", None, &["add"], None);
    again.dir = PathBuf::from("/elsewhere/a");
    let err = plan(&[part("a", None, &["add"], None), again])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("run `a` is given twice (/artifacts/a and /elsewhere/a)"),
        "{err}"
    );
}

#[test]
fn a_part_not_complete_makes_the_merged_run_say_so_naming_it() {
    let mut b = part("b", Some("count:2/2"), &["mul", "sub"], None);
    b.manifest.status = RunStatus::Interrupted;
    b.manifest.benchmarks[1].status = BenchStatus::Interrupted;
    b.manifest.benchmarks[1].record = None;
    let parts = [part("a", Some("count:1/2"), &["add"], None), b];
    let planned = plan(&parts).unwrap();
    assert_eq!(planned.status, RunStatus::Interrupted);
    assert_eq!(
        planned.gaps,
        [
            "run `b` (part count:2/2) was interrupted (Ctrl-C or SIGTERM); 1 of its 2 \
          benchmarks did not run, and the merged run is marked interrupted"
        ]
    );
    let m = manifest(&parts, &planned, "m", "2026-02-01T00:00:00.000Z", vec![]);
    let sub = m.benchmarks.iter().find(|b| b.id == "sub").unwrap();
    assert_eq!(
        (sub.status, sub.record.as_deref()),
        (BenchStatus::Interrupted, None)
    );
    assert_eq!(m.merged_from[1].status, RunStatus::Interrupted);
    assert_eq!(unsaveable(m.status), Some("an input was interrupted"));

    // A run whose cargo gpubench died: incomplete, and its note names the part.
    let mut c = part("c", None, &["mul"], None);
    c.manifest.status = RunStatus::Incomplete;
    let parts = [part("a", None, &["add"], None), c];
    let planned = plan(&parts).unwrap();
    assert_eq!(planned.status, RunStatus::Incomplete);
    assert!(
        planned.gaps[0].starts_with("run `c` is incomplete"),
        "{:?}",
        planned.gaps
    );
    let m = manifest(&parts, &planned, "m", "2026-02-01T00:00:00.000Z", vec![]);
    let note = m.incomplete_note().unwrap();
    assert!(
        note.contains("merged from runs of which `c` did not finish"),
        "{note}"
    );
}

#[test]
fn missing_parts_are_named_and_mixed_splits_are_warned_about() {
    let parts = [
        part("a", Some("hash:1/4"), &["add"], None),
        part("c", Some("hash:3/4"), &["mul"], None),
    ];
    let planned = plan(&parts).unwrap();
    assert_eq!(
        planned.status,
        RunStatus::Completed,
        "a missing part is a gap, not a status"
    );
    assert_eq!(planned.gaps.len(), 1, "{:?}", planned.gaps);
    assert!(
        planned.gaps[0].starts_with("2 of the 4 parts are missing: hash:2/4, hash:4/4;"),
        "{}",
        planned.gaps[0]
    );

    let parts = [
        part("a", Some("hash:1/2"), &["add"], None),
        part("b", Some("count:2/3"), &["mul"], None),
        part("c", None, &["sub"], None),
    ];
    let w = plan(&parts).unwrap().gaps;
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].contains(
            "split in different ways (run `a`: hash:1/2, run `b`: count:2/3, run `c`: not split)"
        ),
        "{}",
        w[0]
    );
    // Runs that were not split at all: nothing to say.
    let parts = [
        part("a", None, &["add"], None),
        part("b", None, &["mul"], None),
    ];
    assert!(plan(&parts).unwrap().gaps.is_empty());
}

#[test]
fn mixed_settings_are_warned_about_and_several_models_noted() {
    let mut b = part("b", None, &["mul"], Some("NVIDIA A100"));
    b.manifest.quick = true;
    let parts = [part("a", None, &["add"], H200), b];
    let planned = plan(&parts).unwrap();
    assert_eq!(planned.warnings.len(), 1, "{:?}", planned.warnings);
    assert!(
        planned.warnings[0].contains("(--quick in run `b`, not in run `a`)"),
        "{}",
        planned.warnings[0]
    );
    assert_eq!(planned.notes.len(), 1);
    assert!(
        planned.notes[0].contains("NVIDIA A100 (run `b`), NVIDIA H200 (run `a`)"),
        "{}",
        planned.notes[0]
    );
    let m = manifest(&parts, &planned, "m", "2026-02-01T00:00:00.000Z", vec![]);
    assert!(
        m.quick,
        "a merged run with a quick part is in part a quick run"
    );
}

/// `part` as an `ab` run of `head` against `base` (commits).
fn ab_part(run_id: &str, ids: &[&str], base: &str, head: &str) -> Part {
    let revision = |commit: &str| ManifestRevision {
        label: commit.to_string(),
        commit: Some(commit.to_string()),
        dirty: false,
        libraries: Vec::new(),
    };
    let mut p = part(run_id, None, ids, H200);
    p.manifest.ab = Some(ManifestAb {
        base: revision(base),
        head: revision(head),
        paired: true,
        unpaired_reason: None,
    });
    p
}

#[test]
fn the_parts_of_one_ab_merge_into_one_ab_run() {
    let mut parts = [
        ab_part("x", &["add", "sub"], "base0001", "head0001"),
        ab_part("y", &["mul"], "base0001", "head0001"),
    ];
    parts[0].manifest.partition = Some("count:1/2".into());
    parts[1].manifest.partition = Some("count:2/2".into());
    let plan = plan(&parts).expect("parts of one ab merge");
    assert!(plan.gaps.is_empty(), "{:?}", plan.gaps);
    let m = manifest(&parts, &plan, "merged", "2026-01-01T00:00:00Z", vec![]);
    assert_eq!(m.ab, parts[0].manifest.ab, "the merged run is the same ab");
    assert_eq!(m.benchmarks.len(), 3);
    assert_eq!(m.merged_from.len(), 2);
}

#[test]
fn ab_runs_are_refused_naming_the_run_the_reason_and_what_to_do() {
    let refusal = |parts: &[Part]| match plan(parts) {
        Err(e @ MergeError::AbRun { .. }) => e.to_string(),
        other => panic!("not refused as an ab run: {other:?}"),
    };
    // With an ab run of another base: named, with the other base.
    let e = refusal(&[
        ab_part("x", &["add"], "base0001", "head0001"),
        ab_part("y", &["mul"], "base0002", "head0001"),
    ]);
    assert!(
        e.contains("run `x` is an `ab` run (head (head0001) against base (base0001))")
            && e.contains(
                "run `y` judged head (head0001) against base (base0002) with another base"
            )
            && e.contains("cargo gpubench report run:ID"),
        "{e}"
    );
    // Of the same commits but other builds (a dirty tree built twice), or measured
    // another way: refused too.
    let mut other_build = ab_part("y", &["mul"], "base0001", "head0001");
    other_build.manifest.ab.as_mut().unwrap().head.libraries = vec![LibraryDigest {
        package: "p".into(),
        target: "ops".into(),
        sha256: "ab12".into(),
    }];
    let e = refusal(&[ab_part("x", &["add"], "base0001", "head0001"), other_build]);
    assert!(e.contains("with another head"), "{e}");
    let mut unpaired = ab_part("y", &["mul"], "base0001", "head0001");
    unpaired.manifest.ab.as_mut().unwrap().paired = false;
    let e = refusal(&[ab_part("x", &["add"], "base0001", "head0001"), unpaired]);
    assert!(
        e.contains("paired in one process, run `y` in separate processes"),
        "{e}"
    );
    // With a plain run, in either order: named, and the way out is to leave it out.
    for parts in [
        [
            ab_part("x", &["add"], "base0001", "head0001"),
            part("p", None, &["mul"], H200),
        ],
        [
            part("p", None, &["mul"], H200),
            ab_part("x", &["add"], "base0001", "head0001"),
        ],
    ] {
        let e = refusal(&parts);
        assert!(
            e.contains("run `x` is an `ab` run")
                && e.contains("run `p` is a plain run")
                && e.contains("Leave the `ab` run out"),
            "{e}"
        );
    }
}
