//! Tests of [`super`].

use super::*;
use gpubench_analysis::synthetic::GpuLikeSamples;
use rand::SeedableRng;
use rand_pcg::Pcg64Mcg;

struct World {
    _tmp: tempfile::TempDir,
    places: Places,
}

/// Baselines `main` and `20260102` (named like a run-id prefix), and runs
/// `20260101T…-0`, `20260102T…-0`, `20260102T…-1` with `latest` at the last.
fn world() -> World {
    let tmp = tempfile::tempdir().unwrap();
    let places = Places {
        baselines: BaselineStore::new(tmp.path().join("baselines")),
        out_dir: tmp.path().join("out"),
        cwd: tmp.path().to_path_buf(),
    };
    let mut rng = Pcg64Mcg::seed_from_u64(1);
    let rec = GpuLikeSamples::default().record("mm", "GPU", 10, &mut rng);
    places
        .baselines
        .save("main", std::slice::from_ref(&rec))
        .unwrap();
    places.baselines.save("20260102", &[rec]).unwrap();
    for id in [
        "20260101T000000.000Z-1-0",
        "20260102T000000.000Z-1-0",
        "20260102T000000.000Z-1-1",
    ] {
        let dir = places.out_dir.join(RUNS_DIR).join(id);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(MANIFEST_FILE), "{}").unwrap();
    }
    std::fs::write(places.out_dir.join(LATEST), "20260102T000000.000Z-1-1\n").unwrap();
    World { _tmp: tmp, places }
}

fn run(w: &World, id: &str) -> Resolved {
    Resolved::Run {
        dir: w.places.out_dir.join(RUNS_DIR).join(id),
    }
}

#[test]
fn names_resolve_to_baselines_runs_and_paths() {
    let w = world();
    let p = &w.places;
    let main = Resolved::Baseline {
        store: p.baselines.clone(),
        name: "main".into(),
    };
    assert_eq!(resolve("main", p).unwrap(), main);
    assert_eq!(resolve("baseline:main", p).unwrap(), main);
    assert_eq!(
        resolve("latest", p).unwrap(),
        run(&w, "20260102T000000.000Z-1-1")
    );
    assert_eq!(
        resolve("20260101", p).unwrap(),
        run(&w, "20260101T000000.000Z-1-0")
    );
    assert_eq!(
        resolve("run:20260102T000000.000Z-1-0", p).unwrap(),
        run(&w, "20260102T000000.000Z-1-0")
    );
    assert_eq!(
        resolve("./out/runs/20260101T000000.000Z-1-0", p).unwrap(),
        Resolved::Run {
            dir: p.cwd.join("./out/runs/20260101T000000.000Z-1-0")
        }
    );
    // A directory of baseline files given as a path.
    let by_path = resolve("./baselines/main", p).unwrap();
    let Resolved::Baseline { store, name } = &by_path else {
        panic!("{by_path:?}")
    };
    assert_eq!(name, "main");
    assert_eq!(store.load("main").unwrap().len(), 1);
}

#[test]
fn a_baseline_left_by_a_save_killed_between_its_renames_resolves_as_a_run_reads_it() {
    let w = world();
    let p = &w.places;
    // What atomic_dir's two-rename swap leaves when killed between its renames.
    std::fs::rename(
        p.baselines.root.join("main"),
        p.baselines.root.join(".main.old-383"),
    )
    .unwrap();
    let main = Resolved::Baseline {
        store: p.baselines.clone(),
        name: "main".into(),
    };
    assert_eq!(resolve("main", p).unwrap(), main);
    assert_eq!(resolve("baseline:main", p).unwrap(), main);
    let by_path = resolve("./baselines/main", p).unwrap();
    assert!(
        matches!(&by_path, Resolved::Baseline { name, .. } if name == "main"),
        "{by_path:?}"
    );
    for resolved in [main, by_path] {
        let side = Side::load(&resolved).unwrap();
        assert_eq!(side.records.len(), 1, "{resolved:?}");
    }
}

#[test]
fn ambiguous_and_missing_names_say_what_exists_and_how_to_choose() {
    let w = world();
    let p = &w.places;
    // Both a baseline and the prefix of two runs.
    let err = resolve("20260102", p).unwrap_err().to_string();
    assert!(
        err.starts_with("`20260102` is ambiguous: it is the baseline"),
        "{err}"
    );
    assert!(
        err.contains("write `baseline:20260102` or `run:20260102`"),
        "{err}"
    );
    assert_eq!(
        resolve("baseline:20260102", p).unwrap(),
        Resolved::Baseline {
            store: p.baselines.clone(),
            name: "20260102".into()
        }
    );
    let err = resolve("run:20260102", p).unwrap_err().to_string();
    assert!(
        err.contains(
            "2 run ids start with it (20260102T000000.000Z-1-0, 20260102T000000.000Z-1-1)"
        ) && err.contains("give more of the run id"),
        "{err}"
    );

    let err = resolve("nope", p).unwrap_err().to_string();
    assert!(
        err.starts_with("`nope` is neither a saved baseline nor a stored run"),
        "{err}"
    );
    assert!(err.contains("saved baselines: 20260102, main"), "{err}");
    assert!(
        err.contains("newest runs: 20260102T000000.000Z-1-1"),
        "{err}"
    );
    let err = resolve("./no/such/dir", p).unwrap_err().to_string();
    assert!(err.contains("does not exist"), "{err}");
    let err = resolve("baseline:.hidden", p).unwrap_err();
    assert!(
        matches!(
            err,
            ReferenceError::Baseline(BaselineError::InvalidName { .. })
        ),
        "{err}"
    );
    let err = resolve("baseline:../no-such-dir", p)
        .unwrap_err()
        .to_string();
    assert!(err.contains("no-such-dir does not exist"), "{err}");
    let err = resolve("baseline:a b", p).unwrap_err().to_string();
    assert!(
        err.contains("a baseline name is 1 to 64 ASCII letters"),
        "{err}"
    );

    std::fs::remove_file(p.out_dir.join(LATEST)).unwrap();
    let err = resolve("latest", p).unwrap_err().to_string();
    assert!(err.starts_with("there is no latest run"), "{err}");
}

#[test]
fn a_baseline_round_trips_through_its_rebuilt_records() {
    let mut rng = Pcg64Mcg::seed_from_u64(2);
    let rec = GpuLikeSamples::default().record("mm/64", "GPU", 12, &mut rng);
    let entry = BaselineEntry::from_record(&rec).unwrap();
    let back = record_of_entry(&entry);
    assert_eq!(BaselineEntry::from_record(&back).unwrap(), entry);
    assert_eq!(
        (back.name.as_str(), back.arg.as_deref()),
        ("mm", Some("64"))
    );
}

#[test]
fn a_baseline_keeps_its_work_per_call_and_memory_clock_through_its_rebuilt_records() {
    use gpubench_record::measurement::Throughput;
    let mut rng = Pcg64Mcg::seed_from_u64(4);
    let rec = GpuLikeSamples::default().record("copy/4GB", "NVIDIA H200", 12, &mut rng);
    let mut entry = BaselineEntry::from_record(&rec).unwrap();
    assert_eq!(entry.throughput, Some(Throughput::Flops(1e9)));
    entry.throughput = Some(Throughput::Bytes(4e9));
    entry.processes[0].memory_clock_mhz = Some(3201);
    let back = record_of_entry(&entry);
    // Comparing two stored sides judges their shares of peak at the memory clock.
    assert_eq!(BaselineEntry::from_record(&back).unwrap(), entry);
    let summary = gpubench_analysis::BenchmarkSummary::from_record(&back);
    let peak = summary.peak.unwrap();
    assert_eq!(peak.measured_clock_mhz, Some(3201.0));
    assert!(peak.unscaled.is_none(), "{peak:?}");
}

#[test]
fn a_baseline_keeps_its_memory_through_its_rebuilt_records() {
    use gpubench_record::testing::{memory, RecordBuilder};
    let mut rng = Pcg64Mcg::seed_from_u64(3);
    let rec = RecordBuilder::from(GpuLikeSamples::default().record("mm/64", "GPU", 12, &mut rng))
        .memory(memory(80 << 20, 96 << 20, 4 << 20, 96 << 20))
        .memory_growth(
            100,
            4 << 20,
            (4 << 20) + 100 * 65536,
            (4 << 20) + 200 * 65536,
        )
        .build();
    let entry = BaselineEntry::from_record(&rec).unwrap();
    assert!(entry.memory().is_some());
    let back = record_of_entry(&entry);
    // Comparing two stored sides (`compare suite1 suite2`) judges their memory.
    assert_eq!(BaselineEntry::from_record(&back).unwrap(), entry);
    let m = back.first_measurement().unwrap();
    assert_eq!(m.memory.unwrap().peak_allocated_bytes, 80 << 20);
    assert_eq!(m.memory_growth.unwrap().per_call(), 65536.0);
}
