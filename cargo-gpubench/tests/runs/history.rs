//! `cargo gpubench history` over a git repository of committed baselines made from
//! the H200 records in `docs/gpu-runs/` (`history_fixture`): a +5% step at commit 8
//! found there, a +1%/commit drift over the last 10 commits flagged, a flat series
//! without change points, a counter's step at its exact commit; a version 1 file, a
//! corrupt and a newer file among the versions; code-only commits left out; the
//! JSON against its schema, the tables and the HTML page.
#![cfg(unix)]

use std::path::Path;

use crate::history_fixture::{file_of, records, rng, write_repo, FixtureCommit, Noise};
use crate::support::{cargo_gpubench, schema};
use cargo_gpubench::store::history::{self, HistoryQuery, HistoryReport, IdFilter};
use gpubench_analysis::history::{HistoryOptions, SeriesMetric, TimeKindKey};
use gpubench_record::id::file_stem_for_id;
use gpubench_record::kernels::Counter;

const BASELINE_DIR: &str = "gpubench/baselines/main";
/// Versions of the baseline (commits 1 to 15).
const VERSIONS: usize = 15;
/// The commit (1-based) whose baseline has the +5% step.
const STEP_AT: usize = 8;
/// What the step's commit subject adds to `baseline 8`.
const HOSTILE: &str = "\u{1b}[31m<script>@here [x](h://e)";
/// The commit from which `add_1m` launches two kernels per call instead of one.
const COUNTER_STEP_AT: usize = 11;

/// Builds the fixture in `dir` (module docs).
fn fixture(dir: &Path) {
    fixture_seeded(dir, 2026);
}

/// [`fixture`] with the processes drawn by `seed`.
fn fixture_seeded(dir: &Path, seed: u64) {
    let matmul = Noise::of(&records(
        "processes/validation.tar.gz",
        "matmul_f32_8192-5ae7b95e.json",
    ));
    // `add_same*` launches one kernel per call, `add_extra*` two: real counts.
    let all_add = records("kernels/kernel-validation.tar.gz", "add_1m.json");
    // (`add_more*` allocates more per call: left out, so only the kernels change.)
    let per_call = |r: &gpubench_record::record::RawRecord| {
        r.counters().map(|c| {
            (
                c.kernels / c.calls,
                c.allocated_bytes.unwrap_or(0) / c.calls,
            )
        })
    };
    let two: Vec<_> = all_add
        .iter()
        .filter(|r| per_call(r).is_some_and(|c| c.0 == 2))
        .cloned()
        .collect();
    let bytes = per_call(&two[0]).unwrap().1;
    let one: Vec<_> = all_add
        .iter()
        .filter(|r| per_call(r) == Some((1, bytes)))
        .cloned()
        .collect();
    let (add_one, add_two) = (Noise::of(&one), Noise::of(&two));
    let mut rng = rng(seed);
    let mut commits = Vec::new();
    for k in 1..=VERSIONS {
        let step = if k >= STEP_AT { 1.05 } else { 1.0 };
        let drift = 1.01f64.powi(k.saturating_sub(5) as i32);
        let mut files = vec![
            file_of(&matmul.entry("fixture/step", step, &mut rng)),
            file_of(&matmul.entry("fixture/drift", drift, &mut rng)),
            file_of(&matmul.entry("fixture/flat", 1.0, &mut rng)),
        ];
        let add = if k >= COUNTER_STEP_AT {
            &add_two
        } else {
            &add_one
        };
        files.push(file_of(&add.entry("launch/add_1m", 1.0, &mut rng)));
        if k == 1 {
            // The flat benchmark's first version as format version 1 wrote it.
            let entry = matmul.entry("fixture/flat", 1.0, &mut rng);
            let v1 = serde_json::json!({
                "format_version": 1,
                "id": entry.id,
                "fingerprint": entry.fingerprint,
                "samples": entry.processes[0],
            });
            files[2].1 = serde_json::to_vec_pretty(&v1).unwrap();
        }
        // A tool's file beside the baselines is left alone.
        files.push((
            "notes.json".into(),
            b"{\"owner\": \"perf team\"}\n".to_vec(),
        ));
        if k == 12 {
            files.push((
                "broken.json".into(),
                b"{\"format_version\": 2, \"id\": \"x\"".to_vec(),
            ));
        }
        if k == 13 {
            let mut newer = file_of(&matmul.entry("fixture/newer", 1.0, &mut rng));
            let text = String::from_utf8(newer.1).unwrap();
            newer.1 = text
                .replacen("\"format_version\": 2", "\"format_version\": 99", 1)
                .into_bytes();
            files.push(newer);
        }
        // The step's commit has a subject nobody should see rendered: HTML, a
        // mention, a link and a terminal escape sequence.
        let subject = if k == STEP_AT {
            format!("baseline {k} {HOSTILE}")
        } else {
            format!("baseline {k}")
        };
        commits.push(FixtureCommit {
            subject,
            files: Some(files),
        });
        if k == 4 || k == 9 {
            commits.push(FixtureCommit {
                subject: format!("code only after {k}"),
                files: None,
            });
        }
    }
    write_repo(dir, BASELINE_DIR, &commits);
}

fn report(dir: &Path) -> HistoryReport {
    let read = history::read(&HistoryQuery {
        repo_dir: dir.to_path_buf(),
        baseline_dir: BASELINE_DIR.into(),
        rev: "HEAD".into(),
        since: None,
        max_commits: None,
    })
    .expect("the fixture's history reads");
    history::analyse(
        "main",
        read,
        &IdFilter::default(),
        &HistoryOptions::default(),
    )
}

fn series<'a>(
    r: &'a HistoryReport,
    id: &str,
    metric: SeriesMetric,
) -> &'a cargo_gpubench::store::history::SeriesHistory {
    let b = r
        .benchmarks
        .iter()
        .find(|b| b.id == id)
        .unwrap_or_else(|| panic!("{id} not in the history"));
    b.series
        .iter()
        .find(|s| s.metric == metric)
        .unwrap_or_else(|| panic!("{id} has no {metric:?}: {:?}", b.series))
}

const DEVICE_TIME: SeriesMetric = SeriesMetric::Time(TimeKindKey::Device);

#[test]
fn history_finds_steps_drifts_and_exact_changes_in_real_noise() {
    let tmp = tempfile::tempdir().unwrap();
    fixture(tmp.path());
    let r = report(tmp.path());

    // Every version of the baseline, none of the code-only commits, oldest first.
    assert_eq!(r.commits.len(), VERSIONS);
    let subjects: Vec<&str> = r.commits.iter().map(|c| c.subject.as_str()).collect();
    assert_eq!(subjects[0], "baseline 1");
    assert_eq!(subjects[VERSIONS - 1], "baseline 15");
    assert!(!subjects.iter().any(|s| s.starts_with("code only")));

    // The +5% step at commit 8.
    let step = series(&r, "fixture/step", DEVICE_TIME);
    assert_eq!(step.points.len(), VERSIONS);
    assert_eq!(step.change_points.len(), 1, "{:#?}", step.change_points);
    let c = &step.change_points[0];
    let at = c.version + 1;
    assert!(
        at.abs_diff(STEP_AT) <= 1,
        "step found at commit {at}, planted at {STEP_AT}"
    );
    assert!(
        c.commit.subject.starts_with(&format!("baseline {at}")),
        "{}",
        c.commit.subject
    );
    assert!(
        (c.change.change - 0.05).abs() < 0.015,
        "size {}",
        c.change.change
    );
    assert!(c.change.change_lower > 0.02 && c.change.change_upper < 0.08);
    assert!(step.flagged_drift().is_none(), "a step is no drift");

    // The +1%/commit drift over the last 10 commits.
    let drift = series(&r, "fixture/drift", DEVICE_TIME);
    let d = drift.flagged_drift().expect("the drift is flagged");
    assert_eq!(d.drift.points, 10);
    assert_eq!(d.from_commit.subject, "baseline 6");
    assert!((d.drift.per_commit - 0.01).abs() < 0.004, "{:?}", d.drift);
    assert!(d.drift.per_commit_lower > 0.0);

    // Flat: nothing, though its first version is a format version 1 file.
    let flat = series(&r, "fixture/flat", DEVICE_TIME);
    assert_eq!(flat.points.len(), VERSIONS, "the version 1 file loads");
    assert_eq!(flat.points[0].version, 0);
    assert!(flat.change_points.is_empty(), "{:#?}", flat.change_points);
    assert!(flat.flagged_drift().is_none());

    // The counter's step at its exact commit, and nowhere else.
    let b = r
        .benchmarks
        .iter()
        .find(|b| b.id == "launch/add_1m")
        .unwrap();
    let changed: Vec<&str> = b.changed_counts().map(|s| s.label.as_str()).collect();
    assert_eq!(changed, vec!["kernels per call"]);
    let kernels = series(&r, "launch/add_1m", SeriesMetric::Counter(Counter::Kernels));
    assert!(kernels.exact);
    assert_eq!(kernels.change_points.len(), 1);
    let k = &kernels.change_points[0];
    assert_eq!(k.version + 1, COUNTER_STEP_AT);
    assert_eq!((k.change.before, k.change.after), (1.0, 2.0));
    // Kernel time is measured, and steps there too (two kernels take longer).
    let kt = series(&r, "launch/add_1m", SeriesMetric::Kernel);
    assert_eq!(kt.points.len(), VERSIONS);
    let last = kt.latest_change().expect("the kernel time step is found");
    assert!(last.version + 1 >= COUNTER_STEP_AT - 1 && last.version < COUNTER_STEP_AT + 1);

    // What could not be read is named with its commit and why; the rest of those
    // versions still count.
    let why = |path: &str| {
        r.unreadable
            .iter()
            .find(|u| u.path.ends_with(path))
            .unwrap_or_else(|| panic!("{path} not named: {:#?}", r.unreadable))
    };
    let broken = why("broken.json");
    assert_eq!(broken.commit.subject, "baseline 12");
    assert!(
        broken.reason.contains("failed to parse"),
        "{}",
        broken.reason
    );
    let newer = why(&format!("{}.json", file_stem_for_id("fixture/newer")));
    assert_eq!(newer.commit.subject, "baseline 13");
    assert!(newer.reason.contains("newer"), "{}", newer.reason);
    assert_eq!(r.unreadable.len(), 2, "{:#?}", r.unreadable);
    assert!(!r
        .benchmarks
        .iter()
        .any(|b| b.id == "fixture/newer" || b.id == "x"));
}

/// The command end to end: JSON against its schema, --max-commits, FILTER, the
/// tables, the page.
#[test]
fn history_command_prints_json_tables_and_the_page() {
    let tmp = tempfile::tempdir().unwrap();
    fixture(tmp.path());
    let run = |args: &[&str]| {
        let out = cargo_gpubench()
            .current_dir(tmp.path())
            .args([
                "gpubench",
                "history",
                "--baselines-dir",
                "gpubench/baselines",
                "--out-dir",
                "out",
            ])
            .args(args)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };

    let (code, json, err) = run(&["--format", "json"]);
    assert_eq!(code, Some(0), "{err}");
    let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    let validator = schema("history.schema.json");
    let errors: Vec<String> = validator
        .iter_errors(&doc)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "history JSON vs schema:\n{}",
        errors.join("\n")
    );
    assert_eq!(doc["commits"].as_array().unwrap().len(), VERSIONS);
    assert!(
        err.contains("not read: gpubench/baselines/main/broken.json"),
        "{err}"
    );

    let (code, json, _) = run(&["--format", "json", "--max-commits", "5", "step"]);
    assert_eq!(code, Some(0));
    let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(doc["commits"].as_array().unwrap().len(), 5);
    assert_eq!(doc["commits"][0]["subject"], "baseline 11");
    let ids: Vec<&str> = doc["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, vec!["fixture/step"]);

    let (code, human, _) = run(&[]);
    assert_eq!(code, Some(0));
    let drift_row = human
        .lines()
        .find(|l| l.starts_with("fixture/drift"))
        .unwrap();
    assert!(drift_row.contains("over the last 10 commits"), "{human}");
    assert!(
        human.contains("launch/add_1m: kernels per call 1 → 2 at "),
        "{human}"
    );
    let (_, markdown, _) = run(&["--format", "markdown"]);
    assert!(markdown.contains("| fixture/step |"), "{markdown}");
    assert!(markdown.contains("+5."), "{markdown}");
    // The step's commit subject, escaped as every Markdown summary escapes text.
    assert!(markdown.contains("\\<script\\>"), "{markdown}");
    for raw in ["<script>", "@here", "[x](h", "\u{1b}"] {
        assert!(!markdown.contains(raw), "{raw:?} got through: {markdown}");
    }

    let page = std::fs::read_to_string(tmp.path().join("out/history/index.html")).unwrap();
    let stem = file_stem_for_id("fixture/step");
    assert!(
        page.contains(&format!("id=\"{stem}\"")),
        "one section per benchmark"
    );
    let svg = std::fs::read_to_string(
        tmp.path()
            .join(format!("out/history/{stem}-device-time.svg")),
    )
    .unwrap();
    assert!(
        svg.contains("change point"),
        "the step is marked on the chart"
    );

    // A run's report links each benchmark the page shows to its chart.
    let out = tmp.path().join("out");
    let link = cargo_gpubench::output::html::history::link_for(&out, "fixture/step", 1);
    assert_eq!(link, Some(format!("../../history/index.html#{stem}")));
    assert_eq!(
        cargo_gpubench::output::html::history::link_for(&out, "other", 1),
        None
    );

    let (code, _, err) = run(&["nothing-matches"]);
    assert_eq!(code, Some(2));
    assert!(
        err.contains("no benchmark of baseline `main` matches `nothing-matches`"),
        "{err}"
    );
    let (code, _, err) = run(&["--rev", "no-such-branch"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("--rev no-such-branch"), "{err}");
    let (code, _, err) = run(&["--baseline", "pr-1"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("no committed version"), "{err}");
}

/// The acceptance over other draws of the real processes: the step within a commit of
/// where it was planted, the drift flagged, the flat series quiet, in every one.
#[test]
fn history_holds_over_other_draws_of_the_noise() {
    for seed in 1..=8 {
        let tmp = tempfile::tempdir().unwrap();
        fixture_seeded(tmp.path(), seed);
        let r = report(tmp.path());
        let step = series(&r, "fixture/step", DEVICE_TIME);
        let at: Vec<usize> = step.change_points.iter().map(|c| c.version + 1).collect();
        assert!(
            at.len() == 1 && at[0].abs_diff(STEP_AT) <= 1,
            "seed {seed}: steps at {at:?}"
        );
        assert!(
            series(&r, "fixture/drift", DEVICE_TIME)
                .flagged_drift()
                .is_some(),
            "seed {seed}: drift not flagged"
        );
        let flat = series(&r, "fixture/flat", DEVICE_TIME);
        assert!(
            flat.change_points.is_empty() && flat.flagged_drift().is_none(),
            "seed {seed}: {:?}",
            flat.change_points
        );
    }
}

/// The pull-request summary says when a head figure continues the drift the
/// baseline's history shows, and is silent on one that does not.
#[test]
fn the_summary_names_a_head_figure_that_continues_a_drift() {
    let tmp = tempfile::tempdir().unwrap();
    fixture(tmp.path());
    let matmul = Noise::of(&records(
        "processes/validation.tar.gz",
        "matmul_f32_8192-5ae7b95e.json",
    ));
    let head = tmp.path().join("head");
    std::fs::create_dir_all(&head).unwrap();
    let mut rng = rng(99);
    // main's latest is at 1.01^10; the head goes on to 1.01^13 (+3%).
    for (id, level) in [("fixture/drift", 1.01f64.powi(13)), ("fixture/flat", 1.0)] {
        let (name, bytes) = file_of(&matmul.entry(id, level, &mut rng));
        std::fs::write(head.join(name), bytes).unwrap();
    }
    let out = cargo_gpubench()
        .current_dir(tmp.path())
        .args([
            "gpubench",
            "compare",
            "main",
            "./head",
            "--baselines-dir",
            "gpubench/baselines",
            "--out-dir",
            "out",
            "--format",
            "markdown",
            "--fail-on",
            "never",
        ])
        .output()
        .unwrap();
    let markdown = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let notes: Vec<&str> = markdown
        .lines()
        .skip_while(|l| !l.starts_with("**Continuing drifts**"))
        .filter(|l| l.starts_with("- "))
        .collect();
    assert_eq!(notes.len(), 1, "{markdown}");
    assert!(
        notes[0].starts_with("- `fixture/drift`: device time +"),
        "{}",
        notes[0]
    );
    assert!(
        notes[0].contains("continues a drift on main"),
        "{}",
        notes[0]
    );
    assert!(
        notes[0].contains("over its last 10 commits"),
        "{}",
        notes[0]
    );
}
