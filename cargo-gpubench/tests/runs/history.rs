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
use cargo_gpubench::testing::store::history::{self, HistoryQuery, HistoryReport, IdFilter};
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
) -> &'a cargo_gpubench::testing::store::history::SeriesHistory {
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
        svg.contains("stroke-dasharray") || svg.matches("<line").count() > 1,
        "the step is marked on the chart"
    );
    assert!(
        page.contains("change point +5."),
        "the chart's key names the step"
    );

    // A run's report links each benchmark the page shows to its chart.
    let out = tmp.path().join("out");
    let link = cargo_gpubench::testing::output::html::history::link_for(&out, "fixture/step", 1);
    assert_eq!(link, Some(format!("../../history/index.html#{stem}")));
    assert_eq!(
        cargo_gpubench::testing::output::html::history::link_for(&out, "other", 1),
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

/// Real CPU runs for the CPU fixture (`docs/cpu-runs/history-steps.tar.gz`): nine
/// baselines' worth of runs of the examples on a shared 2-core machine beside other
/// builds (most processes flagged contended), `history-steps/<k>-step/` holding
/// `matmul_f32/256` (from the fourth on with `GPUBENCH_EXAMPLE_SLOWDOWN=1.3`: 30% more
/// matmul work for real), `history-steps/<k>-flat/` `mlp_training_step` and
/// `matmul_f32/64`, unchanged throughout; the fifth and eighth measured with
/// `GPUBENCH_CPU_THREADS=2`, the others with 1, as `scripts/history-cpu-runs` makes them.
const CPU_RUNS: &str = "history-steps.tar.gz";
/// Baselines in the CPU fixture.
const CPU_VERSIONS: usize = 9;
/// The baseline (1-based) from which `matmul_f32/256` does 30% more work.
const CPU_STEP_AT: usize = 4;
/// The baselines measured with two intra-op threads.
const TWO_THREADS: [usize; 2] = [5, 8];
/// The benchmark with the step, and those left alone.
const CPU_STEPPED: &str = "matmul_f32/256";
const CPU_UNCHANGED: [&str; 2] = ["mlp_training_step", "matmul_f32/64"];

/// A repository whose `main` commits the CPU runs as nine versions of the baseline,
/// a code-only commit between the third and the fourth (the step's), and
/// `matmul_f32/64` left out of the last version (gone from the baseline).
fn cpu_fixture(dir: &Path) {
    let runs = crate::history_fixture::records_in("docs/cpu-runs", CPU_RUNS, ".json");
    let mut commits = Vec::new();
    for k in 1..=CPU_VERSIONS {
        let prefix = format!("history-steps/{k}-");
        let mut files: Vec<(String, Vec<u8>)> = runs
            .iter()
            .filter(|(path, _)| path.starts_with(&prefix))
            .map(|(_, r)| gpubench_analysis::BaselineEntry::from_record(r).expect("saves"))
            .filter(|e| !(k == CPU_VERSIONS && e.id == "matmul_f32/64"))
            .map(|e| file_of(&e))
            .collect();
        files.sort();
        assert_eq!(
            files.len(),
            if k == CPU_VERSIONS { 2 } else { 3 },
            "baseline {k}"
        );
        commits.push(FixtureCommit {
            subject: format!("baseline {k}"),
            files: Some(files),
        });
        if k == CPU_STEP_AT - 1 {
            commits.push(FixtureCommit {
                subject: "code: the matmul does more work".into(),
                files: None,
            });
        }
    }
    write_repo(dir, BASELINE_DIR, &commits);
}

const WALL_TIME: SeriesMetric = SeriesMetric::Time(TimeKindKey::Wall);

/// The history: noisy CPU baselines, mixed thread counts, a 30% step at the
/// fourth. The step is found at its commit and attributed to the range that holds the
/// code change; the thread counts make series of their own, not steps; the unchanged
/// benchmarks show neither a step nor a drift; the gone one has no latest figure.
#[test]
fn history_finds_a_step_in_noisy_cpu_baselines_with_mixed_threads() {
    let tmp = tempfile::tempdir().unwrap();
    cpu_fixture(tmp.path());
    let r = report(tmp.path());
    assert_eq!(r.commits.len(), CPU_VERSIONS);

    let b = r.benchmarks.iter().find(|b| b.id == CPU_STEPPED).unwrap();
    let times: Vec<_> = b.series.iter().filter(|s| s.metric == WALL_TIME).collect();
    assert_eq!(times.len(), 2, "one series per thread count: {times:#?}");
    let one = b.time().expect("a time series");
    assert_eq!(one.settings.cpu_threads, Some(1));
    assert!(one.settings_differ.is_empty());
    let versions: Vec<usize> = one.points.iter().map(|p| p.version + 1).collect();
    assert_eq!(versions, vec![1, 2, 3, 4, 6, 7, 9]);
    let two = times
        .iter()
        .find(|s| s.settings.cpu_threads == Some(2))
        .unwrap();
    assert_eq!(two.settings_differ, vec!["2 intra-op threads".to_string()]);
    assert_eq!(two.label, "wall time (2 intra-op threads)");
    let versions: Vec<usize> = two.points.iter().map(|p| p.version + 1).collect();
    assert_eq!(versions, TWO_THREADS.to_vec());

    // Every process ran beside other work, which moved the time itself by up to 2x
    // between versions: judged on the host's threshold as `compare` judges it, it
    // shows no step; the fastest samples, which waiting for a core cannot lower,
    // show the step.
    assert!(one.threshold >= 0.5, "{}", one.threshold);
    let fastest = b.fastest().expect("CPU work has its fastest samples");
    let one = fastest;
    assert_eq!(one.change_points.len(), 1, "{:#?}", one.change_points);
    let c = &one.change_points[0];
    assert_eq!(c.commit.subject, format!("baseline {CPU_STEP_AT}"));
    assert_eq!(c.since.subject, format!("baseline {}", CPU_STEP_AT - 1));
    assert_eq!(c.versions_between, 0);
    assert!(
        c.change.change > 0.15 && c.change.change < 0.5,
        "size {}",
        c.change.change
    );
    assert!(c.change.change_lower > one.threshold, "{c:?}");
    // The range holds the code-only commit, which `git log` lists.
    let log = crate::history_fixture::git(
        tmp.path(),
        &[
            "log",
            "--format=%s",
            &format!("{}..{}", c.since.id, c.commit.id),
        ],
    );
    assert_eq!(
        log.lines().collect::<Vec<_>>(),
        vec!["baseline 4", "code: the matmul does more work"]
    );
    assert!(one.flagged_drift().is_none(), "a step is no drift");

    for id in CPU_UNCHANGED {
        let b = r.benchmarks.iter().find(|b| b.id == id).unwrap();
        for s in b.series.iter().filter(|s| !s.exact) {
            assert!(
                s.change_points.is_empty(),
                "{id} {}: {:#?}",
                s.label,
                s.change_points
            );
            assert!(
                s.flagged_drift().is_none(),
                "{id} {}: {:?}",
                s.label,
                s.drift
            );
        }
    }
    let gone = r
        .benchmarks
        .iter()
        .find(|b| b.id == "matmul_f32/64")
        .unwrap();
    assert_eq!(
        gone.gone_at.as_ref().map(|c| c.subject.as_str()),
        Some("baseline 9")
    );
    assert!(r
        .benchmarks
        .iter()
        .filter(|b| b.id != "matmul_f32/64")
        .all(|b| b.gone_at.is_none()));
}

/// The CPU fixture through the command: the tables name the step's commit and range,
/// say no drift of the unchanged benchmarks, keep the two-thread series apart, and
/// give the gone benchmark no latest figure.
#[test]
fn history_tables_of_the_cpu_fixture() {
    let tmp = tempfile::tempdir().unwrap();
    cpu_fixture(tmp.path());
    let run = |format: &str| {
        let out = cargo_gpubench()
            .current_dir(tmp.path())
            .args([
                "gpubench",
                "history",
                "--baselines-dir",
                "gpubench/baselines",
            ])
            .args(["--out-dir", "out", "--format", format])
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let markdown = run("markdown");
    let row = |id: &str| {
        markdown
            .lines()
            .find(|l| l.starts_with(&format!("| {} |", id.replace('_', "\\_"))))
            .unwrap_or_else(|| panic!("no row of {id}: {markdown}"))
            .to_string()
    };
    let stepped = row(CPU_STEPPED);
    assert!(
        stepped.contains("| fastest samples: +"),
        "the step of the fastest samples: {stepped}"
    );
    assert!(stepped.contains("(baseline 4), in "), "{stepped}");
    for id in CPU_UNCHANGED {
        let r = row(id);
        assert!(!r.contains("over the last"), "a drift on {id}: {r}");
        assert!(r.ends_with("| — | — |"), "{r}");
    }
    let gone = row("matmul_f32/64");
    assert!(gone.contains("gone (not in the baseline since "), "{gone}");
    assert!(
        !gone.contains(" µs"),
        "a gone benchmark has no latest figure: {gone}"
    );
    assert!(
        markdown.contains("- matmul\\_f32/256: wall time (2 intra-op threads), 2 versions"),
        "{markdown}"
    );
    let json: serde_json::Value = serde_json::from_str(&run("json")).unwrap();
    let validator = schema("history.schema.json");
    let errors: Vec<String> = validator
        .iter_errors(&json)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

/// The history page of the CPU fixture in headless Chromium, and the way to it from
/// a run's report: the report's index links to the page; the page names every
/// version's commit (id, date, subject) as `git log` does, keys each chart under it
/// (naming the step with its version, commit and range), and cuts the two-thread
/// series' huge interval at the chart's edge with a mark.
#[test]
fn history_page_in_a_browser_names_each_commit_and_is_linked_from_the_report() {
    use crate::report_browser::{dump_dom, file_url, screenshot, sel, workdir};
    let work = workdir("history");
    let repo = work.path.join("repo");
    let _ = std::fs::remove_dir_all(&repo);
    cpu_fixture(&repo);
    let gpubench = |args: &[&str]| {
        let out = cargo_gpubench()
            .current_dir(&repo)
            .arg("gpubench")
            .args(args)
            .args(["--baselines-dir", "gpubench/baselines", "--out-dir", "out"])
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    gpubench(&["history"]);
    // The last version's run of the stepped benchmark, stored as a run stores it, and
    // its report rendered beside the history page.
    let run_files: Vec<(String, Vec<u8>)> =
        crate::history_fixture::files_in("docs/cpu-runs", CPU_RUNS)
            .into_iter()
            .filter(|(path, _)| {
                path.starts_with(&format!("history-steps/{CPU_VERSIONS}-step/runs/"))
            })
            .collect();
    let mut run_id = String::new();
    for (path, bytes) in &run_files {
        let rest = path.split("/runs/").nth(1).unwrap();
        run_id = rest.split('/').next().unwrap().to_string();
        let dest = repo.join("out/runs").join(rest);
        std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
        std::fs::write(dest, bytes).unwrap();
    }
    assert!(run_files.len() >= 2, "a record and its manifest");
    gpubench(&["report", &run_id]);

    let index = repo.join("out/report/index.html");
    let dom = dump_dom(&work.path, &file_url(&index));
    let link = dom
        .select(&sel("a#history-link"))
        .next()
        .expect("the report's index links to the history page");
    let href = link.value().attr("href").unwrap();
    let page = index.parent().unwrap().join(href);
    assert_eq!(
        page.canonicalize().unwrap(),
        repo.join("out/history/index.html").canonicalize().unwrap()
    );

    let dom = dump_dom(&work.path, &file_url(&page));
    let log = crate::history_fixture::git(
        &repo,
        &["log", "--reverse", "--format=%H %cs %s", "--", BASELINE_DIR],
    );
    let rows: Vec<Vec<String>> = dom
        .select(&sel("#commit-table tbody tr"))
        .map(|tr| {
            tr.select(&sel("td"))
                .map(|td| td.text().collect::<String>())
                .collect()
        })
        .collect();
    assert_eq!(rows.len(), CPU_VERSIONS);
    for (k, (row, line)) in rows.iter().zip(log.lines()).enumerate() {
        let mut parts = line.splitn(3, ' ');
        let (id, date, subject) = (
            parts.next().unwrap(),
            parts.next().unwrap(),
            parts.next().unwrap(),
        );
        assert_eq!(row[0], (k + 1).to_string());
        assert!(
            id.starts_with(&row[1]) && row[1].len() == 10,
            "{row:?} vs {line}"
        );
        assert_eq!(row[2], date);
        assert_eq!(row[3], subject);
    }
    let section = dom
        .select(&sel(&format!("section#{}", file_stem_for_id(CPU_STEPPED))))
        .next()
        .expect("the stepped benchmark's section");
    let keys: Vec<String> = section
        .select(&sel("ul.chart-key li"))
        .map(|li| li.text().collect())
        .collect();
    let step_commit = &rows[CPU_STEP_AT - 1][1];
    let since = &rows[CPU_STEP_AT - 2][1];
    assert!(
        keys.iter().any(|k| k.starts_with("change point +")
            && k.contains(&format!(
                "at version {CPU_STEP_AT} ({step_commit}), in {since}..{step_commit}"
            ))),
        "{keys:?}"
    );
    let changes: String = section
        .select(&sel("table.data"))
        .next()
        .unwrap()
        .text()
        .collect();
    assert!(changes.contains("baseline 4") && changes.contains(&format!("{since}..{step_commit}")));
    // `matmul_f32/64`'s fastest samples: one version's interval (±14%) many times
    // the others' (under ±2%) would flatten them into a line; it is cut at the
    // chart's edge and marked with its ends, and the point is drawn as a ring.
    let small = dom
        .select(&sel(&format!(
            "section#{}",
            file_stem_for_id("matmul_f32/64")
        )))
        .next()
        .expect("matmul_f32/64's section");
    let figure = small
        .select(&sel("figure.chart"))
        .find(|f| {
            f.select(&sel("figcaption")).next().is_some_and(|c| {
                c.text()
                    .collect::<String>()
                    .starts_with("fastest samples (1 intra-op thread)")
            })
        })
        .expect("the one-thread chart of the fastest samples");
    let caption: String = figure
        .select(&sel("figcaption"))
        .next()
        .unwrap()
        .text()
        .collect();
    assert!(
        caption.contains("2 intervals reach beyond the chart, cut at its edge")
            && caption.contains("1 point (rings) too noisy"),
        "{caption}"
    );
    let src = figure
        .select(&sel("img"))
        .next()
        .unwrap()
        .value()
        .attr("src")
        .unwrap();
    let svg = std::fs::read_to_string(page.parent().unwrap().join(src)).unwrap();
    assert!(
        svg.contains("↑ 8.0") && svg.contains("↓ 6.1"),
        "the cut ends are named"
    );
    // The key is HTML under the chart: the SVG draws no legend box over the points
    // (its only rectangle is the background).
    for img in dom.select(&sel("figure.chart img")) {
        let svg = std::fs::read_to_string(
            page.parent()
                .unwrap()
                .join(img.value().attr("src").unwrap()),
        )
        .unwrap();
        assert_eq!(
            svg.matches("<rect").count(),
            1,
            "a legend box in {:?}",
            img.value().attr("src")
        );
    }
    screenshot(&work.path, &file_url(&page), &work.path.join("history.png"));
}

/// A bf16 matmul's baseline entry on an H200 (three processes of synthetic samples,
/// 1 GFLOP per call declared), with `joules` per call measured in every process
/// (three windows each, 1% apart), or saved without energy when `None`.
fn energy_entry(
    joules: Option<f64>,
    rng: &mut rand_pcg::Pcg64,
) -> gpubench_analysis::BaselineEntry {
    use gpubench_record::energy::{EnergyMeasurement, EnergyWindow};
    let mut r = gpubench_analysis::synthetic::GpuLikeSamples::default().record_processes(
        "mm_bf16",
        "NVIDIA H200",
        3,
        20,
        rng,
    );
    for (p, process) in r.processes.iter_mut().enumerate() {
        process.measurement.as_mut().unwrap().energy = joules.map(|j| EnergyMeasurement {
            windows: (0..3)
                .map(|w| EnergyWindow {
                    calls: 800,
                    synced_s: 1.0,
                    counted_s: 0.9,
                    steps: 9,
                    energy_j: j
                        * (1.0 + 0.004 * (p as f64 - 1.0) + 0.01 * (w as f64 - 1.0))
                        * 800.0
                        * 0.9,
                })
                .collect(),
            idle_w: Some(83.0),
            idle_unavailable: None,
        });
    }
    gpubench_analysis::BaselineEntry::from_record(&r).unwrap()
}

/// Twelve versions of a matmul's baseline: 1.16 J per call, 10% more from version 8
/// on, versions 3 and 4 saved without energy; the JSON keeps the gap as missing
/// points (never a zero) and the step at its commit, the tables show the latest
/// energy and share of peak (and `—` for the benchmark that never measured energy),
/// the page draws energy with its line broken over the gap.
#[test]
fn history_follows_energy_and_the_share_of_peak_and_keeps_gaps() {
    let tmp = tempfile::tempdir().unwrap();
    let mut rng = rng(7);
    let commits: Vec<FixtureCommit> = (1..=12)
        .map(|k| {
            let joules = match k {
                3 | 4 => None,
                k if k >= 8 => Some(1.276),
                _ => Some(1.16),
            };
            let mut files = vec![file_of(&energy_entry(joules, &mut rng))];
            let mut cpu_like = energy_entry(None, &mut rng);
            cpu_like.id = "no_energy".into();
            files.push(file_of(&cpu_like));
            FixtureCommit {
                subject: format!("baseline {k}"),
                files: Some(files),
            }
        })
        .collect();
    write_repo(tmp.path(), BASELINE_DIR, &commits);
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
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let doc: serde_json::Value = serde_json::from_str(&run(&["--format", "json"])).unwrap();
    let errors: Vec<String> = schema("history.schema.json")
        .iter_errors(&doc)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{}", errors.join("\n"));
    let series = |id: &str, metric: &str| -> Option<serde_json::Value> {
        doc["benchmarks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["id"] == id)?["series"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["metric"] == metric)
            .cloned()
    };
    let energy = series("mm_bf16", "energy").expect("an energy series");
    let versions: Vec<u64> = energy["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["version"].as_u64().unwrap())
        .collect();
    assert_eq!(versions, vec![0, 1, 4, 5, 6, 7, 8, 9, 10, 11]);
    assert!(energy["points"]
        .as_array()
        .unwrap()
        .iter()
        .all(|p| p["value"].as_f64().unwrap() > 1.0));
    let steps = energy["change_points"].as_array().unwrap();
    assert_eq!(steps.len(), 1, "{steps:?}");
    assert_eq!(steps[0]["version"], 7);
    assert_eq!(steps[0]["commit"]["subject"], "baseline 8");
    assert!(series("mm_bf16", "peak_share").is_some());
    assert!(series("no_energy", "energy").is_none());

    let human = run(&[]);
    assert!(
        human.contains("energy per call and share of peak"),
        "{human}"
    );
    let row = |text: &str, id: &str| -> String {
        text.lines()
            .rfind(|l| l.contains(id))
            .unwrap_or_else(|| panic!("no {id} row: {text}"))
            .to_string()
    };
    let mm = row(&human, "mm_bf16");
    assert!(mm.contains("1.28 J ["), "{mm}");
    assert!(mm.contains("energy per call: +10."), "{mm}");
    assert!(row(&human, "no_energy").contains('—'), "{human}");
    let markdown = run(&["--format", "markdown"]);
    assert!(
        markdown.contains("| benchmark | energy per call | share of peak |"),
        "{markdown}"
    );
    // Markdown escapes the id's underscore.
    assert!(
        row(&markdown, "| mm\\_bf16 |").contains("1.28 J"),
        "{markdown}"
    );

    let page = std::fs::read_to_string(tmp.path().join("out/history/index.html")).unwrap();
    let chart = format!("{}-energy-per-call.svg", file_stem_for_id("mm_bf16"));
    assert!(page.contains(&chart), "{page}");
    assert!(page.contains("the line breaks where versions were saved without the figure"));
    let svg = std::fs::read_to_string(tmp.path().join("out/history").join(&chart)).unwrap();
    assert!(svg.contains("energy per call (J)"), "{svg:.300}");
}
