//! Tests of saved baselines: the file format, the store, comparisons and the gate,
//! in one file (just over 600 lines) because they share the record builders.

use super::judge::not_compared;
use super::*;
use crate::compare::Verdict;
use crate::processes::{Bound, EstimateBasis};
use crate::record_analysis::RecordAnalysis;
use crate::synthetic::{GpuLikeSamples, ProcessShift, SyntheticKernels};
use gpubench_record::failure::Failure;
use gpubench_record::failure::FailureKind;
use gpubench_record::id::file_stem_for_id;
use gpubench_record::kernels::Counter;
use gpubench_record::measurement::MeasurementConfig;
use gpubench_record::measurement::Throughput;
use gpubench_record::measurement::TimeKind;
use gpubench_record::record::RawRecord;
use rand::SeedableRng;
use rand_pcg::Pcg64Mcg;

const H200: &str = "NVIDIA H200";

fn records(ids: &[&str], slowdown: f64, seed: u64) -> Vec<RawRecord> {
    let mut rng = Pcg64Mcg::seed_from_u64(seed);
    let model = GpuLikeSamples::default()
        .with_shift(ProcessShift::LogNormal { sigma: 0.005 })
        .scaled(slowdown);
    ids.iter()
        .map(|id| model.record_processes(id, H200, 3, 30, &mut rng))
        .collect()
}

fn store() -> (tempfile::TempDir, BaselineStore) {
    let tmp = tempfile::tempdir().unwrap();
    let store = BaselineStore::for_workspace(tmp.path());
    (tmp, store)
}

#[test]
fn save_then_load_round_trips_and_is_byte_stable() {
    let (_tmp, store) = store();
    let recs = records(&["matmul/4096", "conv", "attn/bf16"], 1.0, 1);
    let report = store.save("main", &recs).unwrap();
    assert_eq!(report.written.len(), 3);
    assert!(report.skipped.is_empty());
    let file = report
        .dir
        .join(format!("{}.json", file_stem_for_id("matmul/4096")));
    assert_eq!(report.written[0], file);
    assert!(file.starts_with(store.root.join("main")));
    assert!(store.root.ends_with("gpubench/baselines"));

    let loaded = store.load("main").unwrap();
    let ids: Vec<&str> = loaded.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids, ["attn/bf16", "conv", "matmul/4096"]);
    let entry = loaded.iter().find(|e| e.id == "matmul/4096").unwrap();
    assert_eq!(entry, &BaselineEntry::from_record(&recs[0]).unwrap());
    assert_eq!(entry.fingerprint, recs[0].fingerprint);
    assert_eq!(entry.processes.len(), 3);
    assert_eq!(entry.processes[0].wall_ns.len(), 30);
    assert_eq!(entry.estimates.primary, TimeKind::Device);
    assert_eq!(entry.estimates.basis, EstimateBasis::Processes);
    assert_eq!(entry.config.as_ref(), Some(&recs[0].config));

    // Re-saving what was loaded reproduces the file byte for byte.
    let before = std::fs::read_to_string(&file).unwrap();
    assert_eq!(entry.to_json_pretty(), before);
    assert!(before.contains("\"format_version\": 2,"), "{before}");
    assert_eq!(store.list().unwrap(), ["main"]);
}

#[test]
fn saved_times_have_six_significant_digits() {
    assert_eq!(round_significant(1_234_567.891), 1_234_570.0);
    assert_eq!(round_significant(0.000_123_456_78), 0.000_123_457);
    assert_eq!(round_significant(0.0), 0.0);
    let mut recs = records(&["a"], 1.0, 2);
    recs[0].processes[0].measurement.as_mut().unwrap().samples[0].wall_ns = 10.0 * 1_234_567.891;
    let text = BaselineEntry::from_record(&recs[0])
        .unwrap()
        .to_json_pretty();
    assert!(text.contains("\n        1234570.0,\n"), "{text}");
}

#[test]
fn save_keeps_other_files_and_skips_failed_records() {
    let (_tmp, store) = store();
    store.save("main", &records(&["a", "b"], 1.0, 3)).unwrap();
    let dir = store.dir("main").unwrap();
    let old_b = std::fs::read_to_string(dir.join("b.json")).unwrap();
    std::fs::write(dir.join("notes.txt"), "keep me").unwrap();

    let mut now = records(&["a", "b"], 1.1, 4);
    now[1].processes[1].measurement = None;
    now[1].processes[1].failure = Some(Failure::new(FailureKind::Crash, "signal 11"));
    let report = store.save("main", &now[..]).unwrap();
    assert_eq!(report.written, [dir.join("a.json")]);
    assert_eq!(report.skipped, [("b".to_string(), NotSaved::Failed)]);
    assert_eq!(report.kept, ["b"], "b's previous file is kept");
    assert_eq!(std::fs::read_to_string(dir.join("b.json")).unwrap(), old_b);
    assert!(dir.join("notes.txt").exists());
    // A failed benchmark that was never saved has no previous file to keep.
    let mut fresh = records(&["c"], 1.0, 5);
    fresh[0].processes[0].measurement = None;
    fresh[0].processes[0].failure = Some(Failure::new(FailureKind::Crash, "signal 11"));
    let report = store.save("main", &fresh).unwrap();
    assert!(report.kept.is_empty() && report.written.is_empty());
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(names.is_empty(), "temporary files left: {names:?}");
}

#[test]
fn bad_names_are_refused_with_what_a_valid_name_is() {
    let (tmp, store) = store();
    let long = "x".repeat(65);
    for name in [
        "", "..", ".hidden", "a/b", "a\\b", "../x", "a b", "ü", &long,
    ] {
        let err = store.save(name, &records(&["a"], 1.0, 5)).unwrap_err();
        assert!(
            matches!(err, BaselineError::InvalidName { .. }),
            "{name}: {err}"
        );
        let msg = err.to_string();
        assert!(
            msg.contains("a baseline name is 1 to 64 ASCII letters"),
            "{msg}"
        );
        assert!(store.load(name).is_err());
    }
    // Nothing escaped the store.
    assert!(!tmp.path().join("x").exists() && !tmp.path().join("gpubench").exists());
    for name in ["main", "pr-123", "v0.2", "a_b", "x..y"] {
        validate_name(name).unwrap();
    }
    let msg = validate_name("a/b").unwrap_err().to_string();
    assert!(msg.starts_with("invalid baseline name \"a/b\": it contains a path separator"));
}

#[test]
fn corrupt_truncated_and_newer_files_are_errors_naming_the_file() {
    let (_tmp, store) = store();
    store.save("main", &records(&["a", "b"], 1.0, 6)).unwrap();
    let dir = store.dir("main").unwrap();
    let good = std::fs::read_to_string(dir.join("a.json")).unwrap();
    let file = dir.join("a.json");
    let name = file.display().to_string();

    let newer = good.replacen("\"format_version\": 2", "\"format_version\": 3", 1);
    let cases: Vec<(&str, String)> = vec![
        ("truncated", good[..good.len() / 2].to_string()),
        ("empty", String::new()),
        ("not json", "<html>".into()),
        ("newer", newer),
        ("wrong type", good.replacen("\"id\": \"a\"", "\"id\": 7", 1)),
        (
            "uneven samples",
            good.replacen("\"host_ns\": [\n", "\"host_ns\": [\n        1.0,\n", 1),
        ),
    ];
    for (what, text) in cases {
        std::fs::write(&file, &text).unwrap();
        let err = store.load("main").unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains(&name), "{what}: {msg}");
        if what == "newer" {
            assert!(
                matches!(err, BaselineError::TooNew { found: 3, .. }),
                "{msg}"
            );
            assert!(msg.contains("upgrade"), "{msg}");
        }
    }
    std::fs::write(&file, good.replacen("\"id\": \"a\"", "\"id\": \"b\"", 1)).unwrap();
    let err = store.load("main").unwrap_err();
    assert!(matches!(err, BaselineError::DuplicateId { .. }), "{err}");
}

#[test]
fn json_objects_that_are_not_baseline_files_are_ignored_and_named() {
    let (_tmp, store) = store();
    store.save("main", &records(&["a"], 1.0, 7)).unwrap();
    let dir = store.dir("main").unwrap();
    std::fs::write(dir.join("settings.json"), r#"{"theme": "dark"}"#).unwrap();
    let loaded = store.load_noting("main").unwrap();
    assert_eq!(loaded.entries.len(), 1);
    assert_eq!(loaded.ignored, [dir.join("settings.json")]);
    assert_eq!(store.load("main").unwrap(), loaded.entries);
}

#[test]
fn a_json_entry_that_is_no_baseline_object_is_an_error_naming_it() {
    /// Makes the entry at a path.
    type Make = Box<dyn Fn(&std::path::Path)>;
    let cases: Vec<(&str, Make, &str)> = vec![
        (
            "null.json",
            Box::new(|p| std::fs::write(p, "null").unwrap()),
            "holds JSON `null`",
        ),
        (
            "list.json",
            Box::new(|p| std::fs::write(p, "[1, 2]").unwrap()),
            "holds a JSON array",
        ),
        (
            "dir.json",
            Box::new(|p| std::fs::create_dir(p).unwrap()),
            "is a directory",
        ),
        #[cfg(unix)]
        (
            "loop.json",
            Box::new(|p| std::os::unix::fs::symlink(p, p).unwrap()),
            "cannot be opened",
        ),
        #[cfg(unix)]
        (
            "dangling.json",
            Box::new(|p| std::os::unix::fs::symlink(p.with_extension("gone"), p).unwrap()),
            "cannot be opened",
        ),
    ];
    for (file, make, says) in cases {
        let (_tmp, store) = store();
        store.save("main", &records(&["a"], 1.0, 7)).unwrap();
        let path = store.dir("main").unwrap().join(file);
        make(&path);
        let err = store.load("main").unwrap_err();
        let text = err.to_string();
        assert!(
            matches!(err, BaselineError::Invalid { .. }),
            "{file}: {text}"
        );
        assert!(
            text.contains(&path.display().to_string()) && text.contains(says),
            "{file}: {text}"
        );
    }
}

#[test]
#[cfg(unix)]
fn saved_files_are_readable_by_everyone() {
    use std::os::unix::fs::PermissionsExt;
    let (_tmp, store) = store();
    let report = store.save("main", &records(&["a"], 1.0, 8)).unwrap();
    let mode = std::fs::metadata(&report.written[0])
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o044, 0o044, "{mode:o}");
}

#[test]
fn missing_baseline_and_empty_store() {
    let (_tmp, store) = store();
    assert!(store.list().unwrap().is_empty());
    let err = store.load("main").unwrap_err();
    assert!(matches!(err, BaselineError::NotFound { .. }));
    assert!(
        err.to_string().starts_with("baseline `main` not found"),
        "{err}"
    );
}

#[test]
fn a_file_in_the_way_of_a_save_is_refused_naming_it_before_writing() {
    let (_tmp, store) = store();
    std::fs::create_dir_all(&store.root).unwrap();
    let main = store.root.join("main");
    std::fs::write(&main, "a file of mine").unwrap();
    for err in [
        store.check_save("main").unwrap_err(),
        store.save("main", &records(&["a"], 1.0, 9)).unwrap_err(),
    ] {
        assert!(matches!(err, BaselineError::Blocked(_)), "{err:?}");
        assert!(
            err.to_string()
                .starts_with(&format!("{} is not a directory", main.display())),
            "{err}"
        );
    }
    assert_eq!(std::fs::read_to_string(&main).unwrap(), "a file of mine");
    assert_eq!(std::fs::read_dir(&store.root).unwrap().count(), 1);

    std::fs::remove_file(&main).unwrap();
    let leftover = store.root.join(".main.new-383");
    std::fs::write(&leftover, "a file of mine").unwrap();
    let err = store.save("main", &records(&["a"], 1.0, 9)).unwrap_err();
    assert!(
        err.to_string()
            .starts_with(&format!("{} is in the way", leftover.display())),
        "{err}"
    );
    assert!(!main.exists());
    // Another name is not in its way.
    store.save("pr-1", &records(&["a"], 1.0, 9)).unwrap();
}

#[test]
fn a_baseline_left_by_an_interrupted_swap_is_listed_and_loads() {
    let (_tmp, store) = store();
    store.save("main", &records(&["a"], 1.0, 10)).unwrap();
    // A save killed between its two renames.
    std::fs::rename(store.root.join("main"), store.root.join(".main.old-77")).unwrap();
    assert_eq!(store.list().unwrap(), ["main"]);
    assert_eq!(store.load("main").unwrap().len(), 1);
}

#[test]
fn duplicate_ids_in_one_save_are_refused_before_writing() {
    let (_tmp, store) = store();
    let recs = records(&["a", "a"], 1.0, 7);
    let err = store.save("main", &recs).unwrap_err();
    assert!(
        matches!(err, BaselineError::DuplicateRecord { .. }),
        "{err}"
    );
    assert!(!store.root.join("main").exists());
}

#[test]
fn comparing_a_run_with_a_baseline() {
    let base: Vec<BaselineEntry> = records(&["same", "slower", "gone"], 1.0, 8)
        .iter()
        .map(|r| BaselineEntry::from_record(r).unwrap())
        .collect();
    let mut now = records(&["same"], 1.0, 9);
    now.extend(records(&["slower"], 1.2, 10));
    now.extend(records(&["new", "broke"], 1.0, 11));
    let mut base = base;
    base.push(BaselineEntry::from_record(&now[3]).unwrap());
    now[3].processes[0].measurement = None;
    now[3].processes[0].failure =
        Some(Failure::new(FailureKind::OutOfMemory, "CUDA out of memory"));

    let set = compare_with_baseline(&now, &base, &BaselineCompareOptions::default()).unwrap();
    assert_eq!(set.missing_in_baseline, ["new"]);
    assert_eq!(set.missing_in_current, ["gone"]);
    let verdicts: Vec<(&str, Option<Verdict>)> = set
        .comparisons
        .iter()
        .map(|c| (c.id.as_str(), c.verdict()))
        .collect();
    assert_eq!(
        verdicts,
        [
            ("same", Some(Verdict::NoChange)),
            ("slower", Some(Verdict::Regressed)),
            ("broke", None)
        ]
    );
    assert!(matches!(
        &set.comparisons[1].outcome,
        ComparisonOutcome::Compared {
            kind: TimeKind::Device,
            ..
        }
    ));
    assert!(matches!(
        &set.comparisons[2].outcome,
        ComparisonOutcome::Failed { .. }
    ));
    let c = set.counts();
    assert_eq!((c.no_change, c.regressed, c.failed), (1, 1, 1));
    assert!(FailOn::Regressed.should_fail(&set, &Gate::default()));
    assert!(FailOn::Ambiguous.should_fail(&set, &Gate::default()));
    assert!(!FailOn::Never.should_fail(&set, &Gate::default()));
    // Gated on counters alone, which these records do not have, no verdict trips:
    // the counters are missing evidence instead, on both sides, which a gate that
    // names them sees (and the default gate does not).
    assert!(!FailOn::Regressed.should_fail(&set, &Gate::of(&[Metric::Counters])));
    let gaps = set.missing(&Gate::of(&[Metric::Counters]));
    assert_eq!(
        gaps.iter()
            .map(|m| (m.id.as_str(), m.metric))
            .collect::<Vec<_>>(),
        [
            ("same", Some(Metric::Counters)),
            ("slower", Some(Metric::Counters))
        ]
    );
    assert!(set.missing(&Gate::default()).is_empty());

    let json = serde_json::to_value(&set).unwrap();
    assert_eq!(json["comparisons"][1]["outcome"]["status"], "compared");
    assert_eq!(
        json["comparisons"][1]["outcome"]["comparison"]["verdict"],
        "regressed"
    );
    let back: ComparisonSet = serde_json::from_value(json).unwrap();
    assert_eq!(back, set);
}

/// A launch-bound record: host dispatch in two modes 1.7× apart between processes
/// (as on the H200), the GPU's own work from `kernels`.
fn launch_bound(id: &str, kernels: &SyntheticKernels, processes: usize, seed: u64) -> RawRecord {
    let mut rng = Pcg64Mcg::seed_from_u64(seed);
    let host = GpuLikeSamples {
        base_ns: 8_000.0,
        ..GpuLikeSamples::default()
    }
    .with_shift(ProcessShift::Modes {
        slow_factor: 1.7,
        slow_share: 0.4,
        sigma: 0.03,
    });
    let mut r = host.record_processes(id, H200, processes, 30, &mut rng);
    for m in r
        .processes
        .iter_mut()
        .filter_map(|x| x.measurement.as_mut())
    {
        m.flags.clear();
    }
    kernels.attach(&mut r, &mut rng);
    r
}

#[test]
fn a_metric_measured_on_one_side_only_is_missing_evidence_naming_why() {
    let add = SyntheticKernels::one("vectorized_elementwise_kernel<add>", 2_290.0);
    let with_kernels = launch_bound("add", &add, 5, 1);
    // The judged side was built without kernel timing (no CUDA headers): its
    // harness says so in every measurement.
    let mut without = launch_bound("add", &add, 5, 2);
    for m in without
        .processes
        .iter_mut()
        .filter_map(|r| r.measurement.as_mut())
    {
        m.kernel = None;
        m.kernel_unavailable = Some(
            "kernel timing was not built in: no CUDA headers (run `cargo gpubench setup`)".into(),
        );
    }
    let judge = |now: &RawRecord, base: &RawRecord| {
        compare_with_baseline(
            std::slice::from_ref(now),
            &[BaselineEntry::from_record(base).unwrap()],
            &BaselineCompareOptions::default(),
        )
        .unwrap()
    };

    let set = judge(&without, &with_kernels);
    // No verdict on kernel time or counters trips...
    let gate = Gate::of(&[Metric::Kernel, Metric::Counters]);
    assert!(!FailOn::Regressed.should_fail(&set, &gate));
    // ...but the gate sees both gaps, with the harness's reason and its fix.
    let missing = set.missing(&gate);
    let what: Vec<String> = missing.iter().map(Missing::what).collect();
    assert_eq!(what, ["kernel time missing", "counters missing"]);
    assert!(
        missing[0]
            .reason
            .starts_with("this run has no kernel time: kernel timing was not built in")
            && missing[0].reason.contains("cargo gpubench setup"),
        "{}",
        missing[0].reason
    );
    assert!(missing
        .iter()
        .all(|m| FailOn::Regressed.trips_on_missing(m, &AllowMissing::default())));
    assert!(
        missing
            .iter()
            .all(|m| !FailOn::Regressed
                .trips_on_missing(m, &AllowMissing::of(&[MissingKind::Metric])))
    );
    // The default gate sees them too: one side has the metric.
    assert_eq!(set.missing(&Gate::default()).len(), 2);
    // A gate on time alone does not ask for them.
    assert!(set.missing(&Gate::of(&[Metric::Time])).is_empty());

    // The other way round: a baseline saved without kernel timing.
    let set = judge(&with_kernels, &without);
    let missing = set.missing(&Gate::default());
    assert_eq!(missing.len(), 2);
    assert!(
        missing[0]
            .reason
            .starts_with("the baseline has no kernel time")
            && missing[0].reason.contains("save the baseline again"),
        "{}",
        missing[0].reason
    );

    // Neither side: only a gate that names the metric asks for it.
    let set = judge(&without, &without);
    assert!(set.missing(&Gate::default()).is_empty());
    let named = set.missing(&Gate::of(&[Metric::Kernel]));
    assert_eq!(named.len(), 1);
    assert!(named[0]
        .reason
        .starts_with("neither side measured kernel time"));
}

#[test]
fn kernel_time_and_counters_judge_what_host_timing_cannot() {
    let add = SyntheticKernels::one("vectorized_elementwise_kernel<add>", 2_290.0);
    let base = BaselineEntry::from_record(&launch_bound("add", &add, 5, 1)).unwrap();
    assert_eq!(base.bound, Some(Bound::Host));
    assert_eq!(base.kernels.len(), 1);
    assert_eq!(base.counters.unwrap().per_call(Counter::Kernels), Some(1.0));
    assert!(base
        .processes
        .iter()
        .all(|p| p.kernel_ns.as_ref().unwrap().len() == 10));
    let judge = |now: &RawRecord| {
        compare_with_baseline(
            std::slice::from_ref(now),
            std::slice::from_ref(&base),
            &BaselineCompareOptions::default(),
        )
        .unwrap()
        .comparisons
        .remove(0)
    };

    // The same work in new processes: nothing changed on any metric.
    let same = judge(&launch_bound("add", &add, 5, 2));
    assert_eq!(same.verdict_of(Metric::Kernel), Some(Verdict::NoChange));
    assert_eq!(same.verdict_of(Metric::Counters), Some(Verdict::NoChange));
    assert!(!FailOn::Regressed.trips(&same, &Gate::default()));

    // 10% more elements: plain in kernel time, lost in host timing.
    let slower = judge(&launch_bound("add", &add.scaled(1.1), 5, 3));
    assert_eq!(slower.verdict_of(Metric::Kernel), Some(Verdict::Regressed));
    assert_ne!(slower.verdict_of(Metric::Time), Some(Verdict::Regressed));
    assert_eq!(slower.verdict_of(Metric::Counters), Some(Verdict::NoChange));
    assert!(FailOn::Regressed.trips(&slower, &Gate::default()));
    assert!(!FailOn::Regressed.trips(&slower, &Gate::of(&[Metric::Time, Metric::Counters])));
    let ComparisonOutcome::Compared { kernel_changes, .. } = &slower.outcome else {
        panic!("{slower:?}");
    };
    assert_eq!(kernel_changes.len(), 1);
    assert!(
        kernel_changes[0].describe().ends_with("+10%"),
        "{kernel_changes:?}"
    );

    // One more kernel per call: an exact counter change, and the kernel named.
    let extra = judge(&launch_bound(
        "add",
        &add.with_kernel("fill_kernel", 1_000.0),
        5,
        4,
    ));
    assert_eq!(extra.verdict_of(Metric::Counters), Some(Verdict::Regressed));
    let counters = extra
        .outcome
        .judged(Metric::Counters)
        .and_then(Judged::counted)
        .expect("both sides counted");
    let kernel_changes = extra.outcome.kernel_changes();
    assert_eq!(counters[0].describe(), "+1 kernel per call");
    assert_eq!(kernel_changes[0].describe(), "new kernel `fill_kernel`");
    assert!(FailOn::Regressed.trips(&extra, &Gate::of(&[Metric::Counters])));

    // A run without kernel time (another machine, the CPU) has no kernel verdict,
    // and a gate on kernel time alone does not trip on it.
    let mut plain = launch_bound("add", &add, 5, 5);
    for m in plain
        .processes
        .iter_mut()
        .filter_map(|x| x.measurement.as_mut())
    {
        m.kernel = None;
    }
    let plain = judge(&plain);
    assert_eq!(plain.verdict_of(Metric::Kernel), None);
    assert_eq!(plain.verdict_of(Metric::Counters), None);
    assert!(!FailOn::Ambiguous.trips(&plain, &Gate::of(&[Metric::Kernel])));
}

#[test]
fn kernel_data_round_trips_through_a_saved_baseline() {
    let (_tmp, store) = store();
    let add = SyntheticKernels::one("add_kernel", 2_000.0);
    let rec = launch_bound("add", &add, 3, 6);
    store.save("main", std::slice::from_ref(&rec)).unwrap();
    let loaded = store.load("main").unwrap();
    assert_eq!(loaded[0], BaselineEntry::from_record(&rec).unwrap());
    assert_eq!(loaded[0].kernels[0].name, "add_kernel");
    assert_eq!(
        loaded[0].groups(TimeKind::Kernel),
        rec.groups(TimeKind::Kernel)
            .into_iter()
            .map(|g| g.into_iter().map(round_significant).collect::<Vec<_>>())
            .collect::<Vec<_>>()
    );
}

#[test]
fn settings_that_move_figures_are_not_compared_unless_allowed() {
    let base: Vec<BaselineEntry> = records(&["a", "b"], 1.0, 30)
        .iter()
        .map(|r| BaselineEntry::from_record(r).unwrap())
        .collect();
    let mut now = records(&["a", "b"], 1.0, 31);
    // `a` measured with --quick's shorter samples and warm-up; `b` with a longer
    // measurement time and more samples, which only narrow its interval.
    now[0].config = MeasurementConfig {
        processes: now[0].config.processes,
        ..MeasurementConfig::quick()
    };
    now[1].config.measurement_time_s = 20.0;
    now[1].config.max_samples = 500;
    let set = compare_with_baseline(&now, &base, &BaselineCompareOptions::default()).unwrap();
    let ComparisonOutcome::NotCompared { reason } = &set.comparisons[0].outcome else {
        panic!("{:?}", set.comparisons[0]);
    };
    assert!(
        reason.starts_with(
            "measured with other settings (samples of 5.000 ms here, 10.00 ms in the baseline; \
             a warm-up of 200.0 ms here, 1.000 s in the baseline)"
        ),
        "{reason}"
    );
    assert!(reason.contains("--allow-settings-mismatch"), "{reason}");
    assert_eq!(set.comparisons[1].verdict(), Some(Verdict::NoChange));
    let missing = set.missing(&Gate::default());
    assert_eq!(missing.len(), 1, "{missing:?}");
    assert_eq!(missing[0].kind, MissingKind::NotCompared);
    assert!(FailOn::Regressed.trips_on_missing(&missing[0], &AllowMissing::default()));

    let allow = BaselineCompareOptions {
        allow_settings_mismatch: true,
        ..Default::default()
    };
    let set = compare_with_baseline(&now, &base, &allow).unwrap();
    assert!(set.comparisons[0].verdict().is_some());
    assert_eq!(set.other_settings.len(), 1);
    assert_eq!(set.other_settings[0].id, "a");
    assert_eq!(set.other_settings[0].differences.len(), 2);

    // Another throttle threshold keeps or drops other samples: it moves the figures.
    let standard = records(&["a"], 1.0, 32);
    let mut other = records(&["a"], 1.0, 33);
    other[0].config.throttle_threshold = 0.5;
    assert_eq!(
        other[0]
            .config
            .differences_that_move_figures(&standard[0].config),
        ["--throttle-threshold 0.5 here, 0.75 in the baseline"]
    );
}

#[test]
fn a_baseline_from_another_device_is_refused_unless_allowed() {
    let mut rng = Pcg64Mcg::seed_from_u64(12);
    let model = GpuLikeSamples::default();
    let base =
        [
            BaselineEntry::from_record(&model.record_processes(
                "mm",
                "NVIDIA A100",
                3,
                30,
                &mut rng,
            ))
            .unwrap(),
        ];
    let now = [model.record_processes("mm", H200, 3, 30, &mut rng)];
    let err = compare_with_baseline(&now, &base, &BaselineCompareOptions::default()).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("`NVIDIA A100`") && msg.contains("`NVIDIA H200`"),
        "{msg}"
    );
    let allow = BaselineCompareOptions {
        allow_device_mismatch: true,
        ..Default::default()
    };
    let set = compare_with_baseline(&now, &base, &allow).unwrap();
    assert_eq!(set.cross_device.len(), 1);
    assert!(set.comparisons[0].verdict().is_some());
}

#[test]
fn wall_time_is_compared_when_one_side_lacks_device_events() {
    let mut now = records(&["a"], 1.0, 13);
    let base = [BaselineEntry::from_record(&records(&["a"], 1.0, 14)[0]).unwrap()];
    for s in &mut now[0].processes[0].measurement.as_mut().unwrap().samples {
        s.device_ns = None;
    }
    let set = compare_with_baseline(&now, &base, &BaselineCompareOptions::default()).unwrap();
    assert!(matches!(
        &set.comparisons[0].outcome,
        ComparisonOutcome::Compared {
            kind: TimeKind::Wall,
            ..
        }
    ));
}

#[test]
fn fail_on_modes() {
    use Verdict::*;
    let table = [
        (FailOn::Regressed, [false, true, false, false]),
        (FailOn::Ambiguous, [false, true, false, true]),
        (FailOn::Never, [false, false, false, false]),
    ];
    for (mode, expected) in table {
        let got = [Improved, Regressed, NoChange, Ambiguous].map(|v| mode.fails(v));
        assert_eq!(got, expected, "{mode}");
        assert_eq!(mode.as_str().parse::<FailOn>().unwrap(), mode);
    }
    assert_eq!(FailOn::default(), FailOn::Regressed);
    let err = "sometimes".parse::<FailOn>().unwrap_err().to_string();
    assert!(err.contains("`regressed`, `ambiguous` or `never`"), "{err}");

    let not_compared = ComparisonSet {
        comparisons: vec![BenchmarkComparison {
            id: "x".into(),
            outcome: not_compared("a smoke run measures nothing"),
        }],
        missing_in_baseline: vec![],
        missing_in_current: vec![],
        cross_device: vec![],
        other_settings: vec![],
        other_clocks: vec![],
    };
    // A benchmark not compared has no verdict to trip on: it is missing evidence,
    // which fails every gate but `never` unless allowed.
    assert!(!FailOn::Ambiguous.should_fail(&not_compared, &Gate::default()));
    let missing = not_compared.missing(&Gate::default());
    assert_eq!(missing.len(), 1);
    let allow = AllowMissing::of(&[MissingKind::NotCompared]);
    for mode in [FailOn::Regressed, FailOn::Ambiguous] {
        assert!(mode.trips_on_missing(&missing[0], &AllowMissing::default()));
        assert!(!mode.trips_on_missing(&missing[0], &allow));
    }
    assert!(!FailOn::Never.trips_on_missing(&missing[0], &AllowMissing::default()));
}

#[test]
fn a_version_1_file_reads_as_one_process_and_compares_as_ambiguous() {
    let (_tmp, store) = store();
    let recs = records(&["mm"], 1.0, 15);
    let dir = store.root.join("old");
    std::fs::create_dir_all(&dir).unwrap();
    let m = recs[0].first_measurement().unwrap();
    let v1 = serde_json::json!({
        "format_version": 1,
        "id": "mm",
        "fingerprint": recs[0].fingerprint,
        "samples": {
            "wall_ns": m.wall_per_iter(),
            "host_ns": m.host_per_iter(),
            "device_ns": m.device_per_iter(),
        },
        "estimates": {"primary": "device", "median_ns": {"point": 1.0, "lower": 1.0, "upper": 1.0, "confidence": 0.95}, "mean_ns": {"point": 1.0, "lower": 1.0, "upper": 1.0, "confidence": 0.95}},
    });
    std::fs::write(dir.join("mm.json"), v1.to_string()).unwrap();
    let loaded = store.load("old").unwrap();
    assert_eq!(loaded[0].processes.len(), 1);
    assert_eq!(loaded[0].estimates.basis, EstimateBasis::OneProcess);
    assert!(loaded[0].config.is_none());
    let set = compare_with_baseline(&recs, &loaded, &BaselineCompareOptions::default()).unwrap();
    match &set.comparisons[0].outcome {
        ComparisonOutcome::Compared { comparison, .. } => {
            assert_eq!(comparison.verdict, Verdict::Ambiguous);
            assert!(comparison
                .note
                .as_ref()
                .unwrap()
                .contains("the baseline has 1 process"));
        }
        other => panic!("{other:?}"),
    }
}

/// Sets the SM clock read with every sample of every process of `r`.
fn clock_at(r: &mut RawRecord, sm_mhz: u32) {
    for m in r
        .processes
        .iter_mut()
        .filter_map(|x| x.measurement.as_mut())
    {
        for s in &mut m.samples {
            s.clock = Some(gpubench_record::measurement::SampleClock {
                sm_mhz,
                temperature_c: Some(60),
                throttled: false,
                power_capped: false,
                power_w: None,
            });
        }
    }
}

#[test]
fn two_sides_at_clearly_different_clocks_are_noted() {
    let mut base_recs = records(&["a", "b", "c"], 1.0, 40);
    for r in &mut base_recs {
        clock_at(r, 1980);
    }
    let base: Vec<BaselineEntry> = base_recs
        .iter()
        .map(|r| BaselineEntry::from_record(r).unwrap())
        .collect();
    assert_eq!(base[0].mean_sm_clock_mhz(), Some(1980.0));
    let json = base[0].to_json_pretty();
    let back = BaselineEntry::from_json(&json, "a.json").unwrap();
    assert_eq!(back, base[0]);
    let mut now = records(&["a", "b", "c"], 1.0, 41);
    clock_at(&mut now[0], 1410);
    clock_at(&mut now[1], 1950);
    let set = compare_with_baseline(&now, &base, &BaselineCompareOptions::default()).unwrap();
    // `a` ran 29% slower clocks; `b` within 5%; `c` was not read: no note.
    assert_eq!(set.other_clocks.len(), 1, "{:?}", set.other_clocks);
    assert_eq!(set.other_clocks[0].id, "a");
    assert_eq!(
        set.other_clocks[0].describe(),
        "the GPU ran at 1410 MHz here, 1980 MHz in the baseline (mean SM clock)"
    );
    assert!(set.comparisons[0].verdict().is_some());
}

/// Records of the CPU device as the harness writes them: synced wall time only (the
/// host returns when the work is done), no flags, one intra-op thread; the
/// processes' medians spread by `sigma`.
fn cpu_records(ids: &[&str], slowdown: f64, sigma: f64, seed: u64) -> Vec<RawRecord> {
    let mut rng = Pcg64Mcg::seed_from_u64(seed);
    let model = GpuLikeSamples::default()
        .with_shift(ProcessShift::LogNormal { sigma })
        .scaled(slowdown);
    ids.iter()
        .map(|id| {
            let mut r = model.record_processes(id, "AMD EPYC", 3, 30, &mut rng);
            r.fingerprint.device.kind = "cpu".into();
            r.fingerprint.device.index = None;
            r.config.cpu_threads = Some(1);
            for process in &mut r.processes {
                let m = process.measurement.as_mut().unwrap();
                m.flags.clear();
                m.device_timer = false;
                for s in &mut m.samples {
                    s.device_ns = None;
                    s.host_ns = s.wall_ns;
                }
            }
            r
        })
        .collect()
}

#[test]
fn cpu_work_gets_a_verdict_from_three_processes_a_side() {
    let base = cpu_records(&["mm"], 1.0, 0.03, 40);
    assert_eq!(base[0].bound(), Bound::Cpu);
    let entries = [BaselineEntry::from_record(&base[0]).unwrap()];
    assert_eq!(entries[0].bound, Some(Bound::Cpu));
    let judge = |now: &[RawRecord], entries: &[BaselineEntry]| {
        compare_with_baseline(now, entries, &BaselineCompareOptions::default()).unwrap()
    };
    // A planted 2x slowdown trips the default gate ...
    let slower = judge(&cpu_records(&["mm"], 2.0, 0.03, 41), &entries);
    assert_eq!(slower.comparisons[0].verdict(), Some(Verdict::Regressed));
    assert_eq!(slower.counts().regressed, 1);
    // ... and the same code in new processes does not.
    for seed in 42..52 {
        let same = judge(&cpu_records(&["mm"], 1.0, 0.03, seed), &entries);
        let v = same.comparisons[0].verdict().unwrap();
        assert!(
            !matches!(v, Verdict::Regressed | Verdict::Improved),
            "seed {seed}: {same:?}"
        );
    }
    // A baseline saved on the CPU before the CPU device was its own case said
    // `host`: it is judged by the CPU's rule all the same.
    let mut old = entries.clone();
    old[0].bound = Some(Bound::Host);
    assert_eq!(old[0].effective_bound(), Some(Bound::Cpu));
    let slower = judge(&cpu_records(&["mm"], 2.0, 0.03, 41), &old);
    assert_eq!(slower.comparisons[0].verdict(), Some(Verdict::Regressed));
}

#[test]
fn cpu_work_measured_with_other_intra_op_threads_is_not_compared() {
    let base = cpu_records(&["mm"], 1.0, 0.01, 60);
    let entries = [BaselineEntry::from_record(&base[0]).unwrap()];
    let mut now = cpu_records(&["mm"], 0.5, 0.01, 61);
    now[0].config.cpu_threads = Some(2);
    let set = compare_with_baseline(&now, &entries, &BaselineCompareOptions::default()).unwrap();
    let ComparisonOutcome::NotCompared { reason } = &set.comparisons[0].outcome else {
        panic!("{:?}", set.comparisons[0]);
    };
    assert!(
        reason.contains(
            "2 intra-op threads here, 1 intra-op thread in the baseline, which \
             GPUBENCH_CPU_THREADS=1 matches"
        ),
        "{reason}"
    );
    assert_eq!(set.missing(&Gate::default()).len(), 1);
    // A baseline from before the count was kept is compared.
    let mut older = entries.clone();
    older[0].config.as_mut().unwrap().cpu_threads = None;
    let set = compare_with_baseline(&now, &older, &BaselineCompareOptions::default()).unwrap();
    assert_eq!(set.comparisons[0].verdict(), Some(Verdict::Improved));
}

/// Marks every process of `r` as run beside `others` runnable threads of other work
/// on a 2-core host, with one intra-op thread.
fn beside(r: &mut RawRecord, others: u32) {
    use gpubench_record::host::{HostCpus, HostReading, HostTelemetry, ThreadSource};
    let reading = HostReading {
        others_runnable: others,
        load_average: Some(3.0),
    };
    for process in &mut r.processes {
        process.host = Some(HostTelemetry {
            cpus: HostCpus {
                online: 2,
                available: 2,
            },
            intra_op_threads: 1,
            threads_from: ThreadSource::FreeCores,
            working_threads: 1,
            start: reading,
            end: reading,
        });
    }
}

#[test]
fn cpu_work_on_a_contended_host_is_never_regressed_or_improved() {
    let mut base = cpu_records(&["mm"], 1.0, 0.03, 70);
    beside(&mut base[0], 3);
    assert!(base[0].contended());
    // Its interval allows for the load's drift between runs.
    assert_eq!(base[0].run_floor(), crate::processes::RUN_FLOOR_HOST);
    let entries = [BaselineEntry::from_record(&base[0]).unwrap()];
    assert!(entries[0].contended);
    let text = entries[0].to_json_pretty();
    assert!(text.contains("\"contended\": true"), "{text}");
    let judge = |now: &[RawRecord], entries: &[BaselineEntry]| {
        let set = compare_with_baseline(now, entries, &BaselineCompareOptions::default()).unwrap();
        let ComparisonOutcome::Compared { comparison, .. } = &set.comparisons[0].outcome else {
            panic!("{set:?}");
        };
        comparison.clone()
    };
    // A quiet run of the same code 25% faster (the load went away) against the
    // contended baseline: not an improvement worth a verdict.
    let quiet = cpu_records(&["mm"], 0.75, 0.03, 71);
    assert!(!quiet[0].contended());
    let c = judge(&quiet, &entries);
    assert!(c.contended, "{c:?}");
    assert_ne!(c.verdict, Verdict::Improved, "{c:?}");
    // Nor is a planted 2x slowdown in a contended run: the wait for a core, which
    // follows the other work, can make as much; the note says to judge it with ab.
    let mut slower = cpu_records(&["mm"], 2.0, 0.03, 72);
    beside(&mut slower[0], 2);
    let c = judge(&slower, &entries);
    assert_eq!(c.verdict, Verdict::Ambiguous, "{c:?}");
    assert!(c.note.unwrap().contains("cargo gpubench ab"));
    // Two quiet sides are judged on their spread: 25% is a change there.
    let quiet_base = [BaselineEntry::from_record(&cpu_records(&["mm"], 1.0, 0.03, 73)[0]).unwrap()];
    assert!(!quiet_base[0].contended);
    let c = judge(&quiet, &quiet_base);
    assert!(!c.contended);
    assert_eq!(c.verdict, Verdict::Improved, "{c:?}");
}

#[test]
fn a_stored_comparison_keeps_one_field_per_metric_and_reads_back_as_it_was() {
    let add = SyntheticKernels::one("vectorized_elementwise_kernel<add>", 2_290.0);
    let base = BaselineEntry::from_record(&launch_bound("add", &add, 5, 1)).unwrap();
    let extra = launch_bound("add", &add.with_kernel("fill_kernel", 1_000.0), 5, 4);
    let set = compare_with_baseline(
        std::slice::from_ref(&extra),
        std::slice::from_ref(&base),
        &BaselineCompareOptions::default(),
    )
    .unwrap();
    let json = serde_json::to_string_pretty(&set).unwrap();
    // The fields of a compared benchmark, in the order files have always had them.
    let at = |key: &str| {
        json.find(&format!("\"{key}\":"))
            .unwrap_or_else(|| panic!("no {key} in {json}"))
    };
    let order = [
        "status",
        "kind",
        "comparison",
        "kernel",
        "counters",
        "kernel_changes",
        "missing_metrics",
    ];
    assert!(
        order.windows(2).all(|w| at(w[0]) < at(w[1])),
        "{order:?} in {json}"
    );
    let back: ComparisonSet = serde_json::from_str(&json).unwrap();
    assert_eq!(back, set);
    assert_eq!(serde_json::to_string_pretty(&back).unwrap(), json);
    // One stored before kernel time, counters and gaps were judged reads as time alone.
    let mut older: serde_json::Value = serde_json::from_str(&json).unwrap();
    let outcome = older["comparisons"][0]["outcome"].as_object_mut().unwrap();
    for key in ["kernel", "counters", "kernel_changes", "missing_metrics"] {
        outcome.remove(key).unwrap();
    }
    let older: ComparisonSet = serde_json::from_value(older).unwrap();
    let (was, now) = (&older.comparisons[0], &set.comparisons[0]);
    assert_eq!(was.outcome.time(), now.outcome.time());
    assert!(Metric::besides_time().all(|m| was.metric(m).is_none()));
    assert!(was.outcome.kernel_changes().is_empty());
    // A gate's flags, one per metric judged by default, as settings have stored them.
    assert_eq!(
        serde_json::to_string(&Gate::default()).unwrap(),
        r#"{"time":true,"kernel":true,"counters":true,"memory":true,"energy":true,"explicit":false}"#
    );
    let old: Gate =
        serde_json::from_str(r#"{"time":true,"kernel":false,"counters":true}"#).unwrap();
    let named = Gate {
        metrics: MetricSet::of(&[Metric::Time, Metric::Counters]),
        explicit: false,
    };
    assert_eq!(old, named);
}

#[test]
fn host_time_is_judged_and_gated_only_when_a_gate_names_it() {
    // Device-bound work whose host dispatch got 3x slower: the device still sets
    // the time, so only host time sees it.
    // Five processes a side, as host-bound time needs.
    let five = |seed| {
        GpuLikeSamples::default()
            .with_shift(ProcessShift::LogNormal { sigma: 0.005 })
            .record_processes("a", H200, 5, 30, &mut Pcg64Mcg::seed_from_u64(seed))
    };
    let mut now = [five(22)];
    for m in now[0]
        .processes
        .iter_mut()
        .filter_map(|x| x.measurement.as_mut())
    {
        for s in &mut m.samples {
            s.host_ns *= 3.0;
        }
    }
    let base = [BaselineEntry::from_record(&five(21)).unwrap()];
    // By default host time is not judged: the outcome and its JSON are as before.
    let set = compare_with_baseline(&now, &base, &BaselineCompareOptions::default()).unwrap();
    let b = &set.comparisons[0];
    assert_eq!(b.verdict(), Some(Verdict::NoChange));
    assert!(b.metric(Metric::Host).is_none());
    assert!(!serde_json::to_string(&set).unwrap().contains("\"host\""));
    assert!(!FailOn::Regressed.should_fail(&set, &Gate::default()));
    assert!(!serde_json::to_string(&Gate::default())
        .unwrap()
        .contains("host"));

    // A gate on it has it judged, on the host noise threshold (±50%).
    let gate = Gate::of(&[Metric::Time, Metric::Host]);
    let options = BaselineCompareOptions {
        gated: gate.metrics,
        ..BaselineCompareOptions::default()
    };
    let set = compare_with_baseline(&now, &base, &options).unwrap();
    let b = &set.comparisons[0];
    assert_eq!(
        b.verdict_of(Metric::Host),
        Some(Verdict::Regressed),
        "{b:?}"
    );
    let host = b
        .outcome
        .judged(Metric::Host)
        .and_then(Judged::timed)
        .unwrap();
    assert!((host.change.point - 2.0).abs() < 0.1, "{host:?}");
    assert!((host.noise_threshold - 0.5).abs() < 1e-12, "{host:?}");
    assert!(FailOn::Regressed.trips(b, &gate));
    // ...and only a gate that names it trips on it.
    assert!(!FailOn::Regressed.trips(b, &Gate::default()));
    assert!(!FailOn::Regressed.trips(b, &Gate::of(&[Metric::Time])));
    // Stored and read back, and the gate keeps its flag.
    let json = serde_json::to_string_pretty(&set).unwrap();
    assert!(json.contains("\"host\": {"), "{json}");
    assert_eq!(serde_json::from_str::<ComparisonSet>(&json).unwrap(), set);
    let stored = serde_json::to_string(&gate).unwrap();
    assert_eq!(
        stored,
        r#"{"time":true,"kernel":false,"counters":false,"memory":false,"host":true,"energy":false,"explicit":true}"#
    );
    assert_eq!(serde_json::from_str::<Gate>(&stored).unwrap(), gate);
}

/// Three processes of a bf16 matmul on an H200 whose every sample read `sm_mhz`
/// after it ran, with the work per call `throughput`.
fn at_clock(seed: u64, sm_mhz: u32, throughput: Option<Throughput>) -> RawRecord {
    let mut r = GpuLikeSamples::default()
        .with_shift(ProcessShift::LogNormal { sigma: 0.005 })
        .record_processes(
            "matmul_bf16/8192",
            H200,
            3,
            30,
            &mut Pcg64Mcg::seed_from_u64(seed),
        );
    crate::synthetic::set_clock_and_work(&mut r, sm_mhz, throughput);
    r
}

/// The comparison of `now` with a baseline saved from `was`, judged under `gate`.
fn peak_judged(was: &RawRecord, now: RawRecord, gate: Gate) -> ComparisonSet {
    let options = BaselineCompareOptions {
        gated: gate.metrics,
        ..BaselineCompareOptions::default()
    };
    let base = [BaselineEntry::from_record(was).unwrap()];
    compare_with_baseline(&[now], &base, &options).unwrap()
}

const MATMUL: Option<Throughput> = Some(Throughput::Flops(2.0 * 8192.0 * 8192.0 * 8192.0));

#[test]
fn the_same_time_at_a_higher_clock_is_a_drop_in_share_of_peak_and_regressed() {
    // The head's calls take as long as the base's, but its GPU ran at 1800 MHz where
    // the base's ran at 1500: it did less per clock, which time alone cannot see.
    let was = at_clock(31, 1500, MATMUL);
    let now = at_clock(32, 1800, MATMUL);
    let gate = Gate::of(&[Metric::Time, Metric::Peak]);
    let set = peak_judged(&was, now.clone(), gate);
    let b = &set.comparisons[0];
    assert_eq!(b.verdict(), Some(Verdict::NoChange), "{b:?}");
    assert_eq!(
        b.verdict_of(Metric::Peak),
        Some(Verdict::Regressed),
        "{b:?}"
    );
    let share = b
        .outcome
        .judged(Metric::Peak)
        .and_then(Judged::timed)
        .unwrap();
    // The change is the share's: 1500 / 1800 − 1 = −16.7%, less the time's own drift.
    assert!(
        (share.change.point - (1500.0 / 1800.0 - 1.0)).abs() < 0.01,
        "{share:?}"
    );
    assert!(share.change.upper < 0.0, "{share:?}");
    assert!(
        share.baseline_estimate > share.current_estimate,
        "{share:?}"
    );
    // A typical value is a share at the clock, by hand from the sample model's time.
    let by_hand = MATMUL.unwrap().rate(share_time(&was)) / (989.4e12 * 1500.0 / 1830.0);
    assert!(
        (share.baseline_estimate / by_hand - 1.0).abs() < 0.01,
        "{} vs {by_hand}",
        share.baseline_estimate
    );
    // The gate that names it trips on it; the default one never judges it.
    assert!(FailOn::Regressed.trips(b, &gate));
    assert!(!FailOn::Regressed.trips(b, &Gate::default()));
    assert!(!FailOn::Regressed.trips(b, &Gate::of(&[Metric::Time])));
    let plain = peak_judged(&was, now, Gate::default());
    assert!(plain.comparisons[0].metric(Metric::Peak).is_none());
    assert!(!serde_json::to_string(&plain).unwrap().contains("\"peak\""));

    // The reverse, the same time at a lower clock, is a rise: improved.
    let set = peak_judged(
        &at_clock(33, 1800, MATMUL),
        at_clock(34, 1500, MATMUL),
        gate,
    );
    assert_eq!(
        set.comparisons[0].verdict_of(Metric::Peak),
        Some(Verdict::Improved)
    );
}

/// The geometric mean of a record's process medians of device time, ns.
fn share_time(r: &RawRecord) -> f64 {
    let medians: Vec<f64> = r
        .groups(TimeKind::Device)
        .iter()
        .map(|g| crate::stats::median(g).ln())
        .collect();
    (medians.iter().sum::<f64>() / medians.len() as f64).exp()
}

#[test]
fn an_equal_share_of_peak_is_no_change() {
    let gate = Gate::of(&[Metric::Peak]);
    let set = peak_judged(
        &at_clock(41, 1707, MATMUL),
        at_clock(42, 1707, MATMUL),
        gate,
    );
    let b = &set.comparisons[0];
    assert_eq!(b.verdict_of(Metric::Peak), Some(Verdict::NoChange), "{b:?}");
    assert!(!FailOn::Regressed.trips(b, &gate));
    assert!(set.missing(&gate).is_empty());
}

#[test]
fn without_flops_bytes_a_known_device_or_a_clock_the_share_of_peak_is_a_gap() {
    let gate = Gate::of(&[Metric::Time, Metric::Peak]);
    let gap = |was: RawRecord, now: RawRecord| {
        let set = peak_judged(&was, now, gate);
        let v = set.comparisons[0].metric(Metric::Peak).cloned().unwrap();
        assert!(v.judged.is_none(), "{v:?}");
        let missing = set.missing(&gate);
        assert_eq!(missing.len(), 1, "{missing:?}");
        assert_eq!(missing[0].metric, Some(Metric::Peak));
        assert!(FailOn::Regressed.trips_on_missing(&missing[0], &AllowMissing::default()));
        v.gap.unwrap()
    };
    // No FLOPs declared on either side: a gap only a gate naming it counts.
    let g = gap(at_clock(51, 1700, None), at_clock(52, 1700, None));
    assert_eq!(g.missing_on, MissingOn::Both);
    assert!(
        g.reason.contains("declares no FLOPs or bytes"),
        "{}",
        g.reason
    );
    assert!(!g.gated(false) && g.gated(true));
    // Elements have no peak.
    let elements = Some(Throughput::Elements(1e6));
    let g = gap(at_clock(53, 1700, elements), at_clock(54, 1700, elements));
    assert!(g.reason.contains("elements"), "{}", g.reason);
    // A baseline saved without the work per call (an older gpubench).
    let g = gap(at_clock(55, 1700, None), at_clock(56, 1700, MATMUL));
    assert_eq!(g.missing_on, MissingOn::Baseline);
    assert!(g.reason.contains("save the baseline again"), "{}", g.reason);
    // A device the table lacks.
    let mut was = at_clock(57, 1700, MATMUL);
    let mut now = at_clock(58, 1700, MATMUL);
    for r in [&mut was, &mut now] {
        r.fingerprint.device.name = "NVIDIA GeForce RTX 4090".into();
    }
    let g = gap(was, now);
    assert_eq!(g.missing_on, MissingOn::Both);
    assert!(g.reason.contains("not in the peak table"), "{}", g.reason);
    // No clock read on this run's side.
    let mut now = at_clock(59, 1700, MATMUL);
    for m in now
        .processes
        .iter_mut()
        .filter_map(|x| x.measurement.as_mut())
    {
        for s in &mut m.samples {
            s.clock = None;
        }
    }
    let g = gap(at_clock(60, 1700, MATMUL), now);
    assert_eq!(g.missing_on, MissingOn::Current);
    assert!(g.reason.contains("SM clock was not read"), "{}", g.reason);
}

#[test]
fn a_bytes_share_of_peak_is_put_at_each_process_memory_clock() {
    use gpubench_record::telemetry::{ClockReading, ProcessTelemetry, TelemetryReading};
    let copy = Some(Throughput::Bytes(4e9));
    let with_memory_clock = |seed, mhz: Option<u32>| {
        let mut r = at_clock(seed, 1980, copy);
        r.id = "copy/4GB".into();
        for p in &mut r.processes {
            let reading = TelemetryReading {
                clock: ClockReading {
                    sm_clock_mhz: 1980,
                    temperature_c: None,
                    slowdown: vec![],
                    power_w: None,
                },
                memory_clock_mhz: mhz,
                power_limit_w: None,
                processes: vec![],
            };
            p.telemetry = Some(ProcessTelemetry {
                start: reading.clone(),
                end: reading,
                max_temperature_c: None,
                other_processes: vec![],
            });
        }
        r
    };
    let gate = Gate::of(&[Metric::Peak]);
    // The baseline's memory ran at full speed, this run's at half: the same time
    // is twice the share of the bandwidth at that clock.
    let was = with_memory_clock(61, Some(3201));
    let entry = BaselineEntry::from_record(&was).unwrap();
    assert_eq!(entry.processes[0].memory_clock_mhz, Some(3201));
    assert_eq!(entry.throughput, copy);
    let set = peak_judged(&was, with_memory_clock(62, Some(1600)), gate);
    let share = set.comparisons[0]
        .outcome
        .judged(Metric::Peak)
        .and_then(Judged::timed)
        .unwrap();
    assert_eq!(share.verdict, Verdict::Improved);
    assert!(
        (share.change.point - (3201.0 / 1600.0 - 1.0)).abs() < 0.03,
        "{share:?}"
    );
    // No memory clock read: a gap that says so.
    let set = peak_judged(&was, with_memory_clock(63, None), gate);
    let gap = set.comparisons[0]
        .metric(Metric::Peak)
        .unwrap()
        .gap
        .clone()
        .unwrap();
    assert!(
        gap.reason.contains("memory clock was not read"),
        "{}",
        gap.reason
    );
}

#[test]
fn a_share_of_peak_verdict_and_the_baseline_it_rests_on_read_back_as_they_were() {
    let gate = Gate::of(&[Metric::Time, Metric::Peak]);
    let was = at_clock(71, 1500, MATMUL);
    let set = peak_judged(&was, at_clock(72, 1800, MATMUL), gate);
    let json = serde_json::to_string_pretty(&set).unwrap();
    assert!(json.contains("\"peak\": {"), "{json}");
    assert_eq!(serde_json::from_str::<ComparisonSet>(&json).unwrap(), set);
    // A gap reads back too.
    let set = peak_judged(&at_clock(73, 1500, None), at_clock(74, 1500, None), gate);
    let json = serde_json::to_string_pretty(&set).unwrap();
    assert!(json.contains("\"metric\": \"peak\""), "{json}");
    assert_eq!(serde_json::from_str::<ComparisonSet>(&json).unwrap(), set);
    // The stored gate keeps its flag.
    let stored = serde_json::to_string(&gate).unwrap();
    assert_eq!(
        stored,
        r#"{"time":true,"kernel":false,"counters":false,"memory":false,"energy":false,"peak":true,"explicit":true}"#
    );
    assert_eq!(serde_json::from_str::<Gate>(&stored).unwrap(), gate);
    // The baseline file keeps the work per call, and saves again byte for byte.
    let entry = BaselineEntry::from_record(&was).unwrap();
    let text = entry.to_json_pretty();
    assert!(text.contains("\"throughput\""), "{text}");
    let read = BaselineEntry::from_json(&text, "mm.json").unwrap();
    assert_eq!(read, entry);
    assert_eq!(read.to_json_pretty(), text);
}
