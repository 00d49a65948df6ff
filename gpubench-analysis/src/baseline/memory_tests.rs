//! Tests of memory verdicts through baselines: saved and loaded, judged, gated, and
//! missing on a side.

use rand::SeedableRng;
use rand_pcg::Pcg64Mcg;

use super::*;
use crate::compare::Verdict;
use crate::memory::MemoryFigure;
use crate::synthetic::{GpuLikeSamples, ProcessShift};
use gpubench_record::measurement::{MemoryGrowth, MemoryStats};
use gpubench_record::record::RawRecord;

const MIB: u64 = 1 << 20;
const TENSOR: u64 = 64 << 10;

/// Three processes of `id` on an H200 with `peak` bytes allocated at the peak, and
/// `held` bytes kept per call (`None`: growth not measured, as before it was).
fn record(id: &str, peak: u64, held: Option<u64>, seed: u64) -> RawRecord {
    let mut rng = Pcg64Mcg::seed_from_u64(seed);
    let mut r = GpuLikeSamples::default()
        .with_shift(ProcessShift::LogNormal { sigma: 0.005 })
        .record_processes(id, "NVIDIA H200", 3, 30, &mut rng);
    for m in r
        .processes
        .iter_mut()
        .filter_map(|x| x.measurement.as_mut())
    {
        m.memory = Some(MemoryStats {
            peak_allocated_bytes: peak,
            peak_reserved_bytes: peak + 16 * MIB,
            allocated_bytes: 8 * MIB,
            reserved_bytes: peak + 16 * MIB,
            alloc_retries: 0,
            num_ooms: 0,
            reserved_shared: false,
        });
        m.memory_growth = held.map(|b| MemoryGrowth {
            calls: 1000,
            start_bytes: 8 * MIB,
            first_bytes: 8 * MIB + 1000 * b,
            second_bytes: 8 * MIB + 2000 * b,
        });
    }
    r
}

fn judge(current: &RawRecord, baseline: &RawRecord) -> ComparisonSet {
    let entry = BaselineEntry::from_record(baseline).unwrap();
    compare_with_baseline(
        std::slice::from_ref(current),
        &[entry],
        &BaselineCompareOptions::default(),
    )
    .unwrap()
}

#[test]
fn a_planted_leak_regresses_memory_and_trips_the_gate() {
    let set = judge(
        &record("cache", 6200 * MIB, Some(TENSOR), 2),
        &record("cache", 80 * MIB, Some(0), 1),
    );
    let b = &set.comparisons[0];
    assert_eq!(b.verdict_of(Metric::Memory), Some(Verdict::Regressed));
    let Some(m) = b.outcome.judged(Metric::Memory).and_then(Judged::memory) else {
        panic!("{b:?}");
    };
    let growth = m.figure(MemoryFigure::GrowthPerCall).unwrap();
    assert_eq!((growth.baseline, growth.current), (0.0, TENSOR as f64));
    assert!(m.describe().contains("holds +64.00 KiB per call"), "{m:?}");
    assert!(FailOn::Regressed.trips(b, &Gate::of(&[Metric::Memory])));
    assert!(FailOn::Regressed.trips(b, &Gate::default()));
    // A gate that leaves memory out does not trip on it.
    assert!(!FailOn::Regressed.trips(b, &Gate::of(&[Metric::Time])));
    assert!(set.missing(&Gate::of(&[Metric::Memory])).is_empty());
}

#[test]
fn growth_alone_is_a_regression_when_the_peaks_stay() {
    let set = judge(
        &record("cache", 80 * MIB, Some(TENSOR), 2),
        &record("cache", 80 * MIB, Some(0), 1),
    );
    assert_eq!(
        set.comparisons[0].verdict_of(Metric::Memory),
        Some(Verdict::Regressed)
    );
    // And the fix is an improvement.
    let set = judge(
        &record("cache", 80 * MIB, Some(0), 2),
        &record("cache", 80 * MIB, Some(TENSOR), 1),
    );
    assert_eq!(
        set.comparisons[0].verdict_of(Metric::Memory),
        Some(Verdict::Improved)
    );
}

#[test]
fn unchanged_memory_is_no_change() {
    let set = judge(
        &record("mm", 80 * MIB, Some(0), 2),
        &record("mm", 80 * MIB, Some(0), 1),
    );
    assert_eq!(
        set.comparisons[0].verdict_of(Metric::Memory),
        Some(Verdict::NoChange)
    );
}

#[test]
fn memory_round_trips_through_a_saved_baseline_and_old_files_load_without_it() {
    let tmp = tempfile::tempdir().unwrap();
    let store = BaselineStore::for_workspace(tmp.path());
    let rec = record("mm", 80 * MIB, Some(TENSOR), 1);
    store.save("main", std::slice::from_ref(&rec)).unwrap();
    let loaded = store.load("main").unwrap();
    let memory = loaded[0].memory().expect("every process kept its memory");
    assert_eq!(memory.len(), 3);
    assert_eq!(memory[0].peak_allocated_bytes, 80 * MIB);
    assert_eq!(memory[0].growth.unwrap().per_call(), TENSOR as f64);
    // A file from before memory verdicts has no `memory` in its processes.
    let mut old = BaselineEntry::from_record(&rec).unwrap();
    for p in &mut old.processes {
        p.memory = None;
    }
    let text = old.to_json_pretty();
    assert!(!text.contains("\"memory\""));
    let back = BaselineEntry::from_json(&text, "old.json").unwrap();
    assert!(back.memory().is_none());
}

#[test]
fn shared_reserved_bytes_of_a_paired_side_survive_a_saved_baseline() {
    let tmp = tempfile::tempdir().unwrap();
    let store = BaselineStore::for_workspace(tmp.path());
    let mut rec = record("mm", 80 * MIB, Some(0), 1);
    for m in rec
        .processes
        .iter_mut()
        .filter_map(|x| x.measurement.as_mut())
    {
        if let Some(s) = m.memory.as_mut() {
            s.reserved_shared = true;
        }
    }
    store.save("ab", std::slice::from_ref(&rec)).unwrap();
    let loaded = store.load("ab").unwrap();
    let memory = loaded[0].memory().unwrap();
    assert!(memory.iter().all(|p| p.reserved_shared));
    // Judged against it, peak reserved is left out, saying why.
    let set = compare_with_baseline(
        std::slice::from_ref(&record("mm", 80 * MIB, Some(0), 2)),
        &loaded,
        &BaselineCompareOptions::default(),
    )
    .unwrap();
    let Some(m) = set.comparisons[0]
        .outcome
        .judged(Metric::Memory)
        .and_then(Judged::memory)
    else {
        panic!("{set:?}");
    };
    assert!(m.figure(MemoryFigure::PeakReserved).is_none());
    assert_eq!(m.left_out.len(), 1);
    // A plain process's file says nothing of it.
    let plain = BaselineEntry::from_record(&record("mm", 80 * MIB, Some(0), 1)).unwrap();
    assert!(!plain.to_json_pretty().contains("reserved_shared"));
}

#[test]
fn memory_one_side_lacks_is_missing_evidence() {
    // This run on a device without an allocator to read (the CPU's case).
    let mut cpu_like = record("mm", 80 * MIB, Some(0), 2);
    for m in cpu_like
        .processes
        .iter_mut()
        .filter_map(|x| x.measurement.as_mut())
    {
        m.memory = None;
        m.memory_growth = None;
    }
    let set = judge(&cpu_like, &record("mm", 80 * MIB, Some(0), 1));
    assert_eq!(set.comparisons[0].verdict_of(Metric::Memory), None);
    let gaps = set.missing(&Gate::default());
    assert_eq!(gaps.len(), 1, "{gaps:?}");
    assert_eq!(gaps[0].metric, Some(Metric::Memory));
    assert_eq!(gaps[0].what(), "memory missing");
    assert!(
        gaps[0].reason.contains("no allocator"),
        "{}",
        gaps[0].reason
    );

    // Neither side has it: a gap only for a gate that names memory.
    let set = judge(&cpu_like, &cpu_like);
    assert!(set
        .missing(&Gate::default())
        .iter()
        .all(|m| m.metric != Some(Metric::Memory)));
    assert!(set
        .missing(&Gate::of(&[Metric::Memory]))
        .iter()
        .any(|m| m.metric == Some(Metric::Memory)));
}

#[test]
fn a_baseline_from_before_growth_judges_the_peaks_and_says_growth_is_missing() {
    let set = judge(
        &record("mm", 80 * MIB, Some(0), 2),
        &record("mm", 80 * MIB, None, 1),
    );
    let b = &set.comparisons[0];
    assert_eq!(b.verdict_of(Metric::Memory), Some(Verdict::NoChange));
    let gaps = set.missing(&Gate::of(&[Metric::Memory]));
    assert_eq!(gaps.len(), 1, "{gaps:?}");
    assert!(gaps[0].reason.contains("no growth per call"), "{gaps:?}");
}
