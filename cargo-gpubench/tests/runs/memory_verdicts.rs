//! Memory verdicts end to end against a stand-in bench executable (`run --exe`): a
//! planted leak against a baseline from before it (terminal, `-q`, Markdown, JSON,
//! the report, `--gate-on`), unchanged memory, and memory one side lacks; and the
//! allocator's state at a benchmark's peak (`--memory-peak-snapshot`) wherever the
//! run is shown.
#![cfg(unix)]

use std::path::PathBuf;

use crate::support::{
    assert_valid, prepare_record, replay_stand_in, run, run_stand_in, synthetic_record as record,
    Ran,
};
use gpubench_record::testing::RecordBuilder;

const MIB: u64 = 1 << 20;
const TENSOR: u64 = 64 << 10;

struct Bench {
    dir: tempfile::TempDir,
}

impl Bench {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        replay_stand_in(dir.path(), &["mm/64"]);
        Bench { dir }
    }

    /// What the next run measures: `mm/64` on an H200 peaking at `peak` bytes and
    /// holding `held` bytes per call (`None`: no allocator read at all).
    fn measure(&self, memory: Option<(u64, u64)>, seed: u64) {
        let mut r = RecordBuilder::from(record("mm/64", "NVIDIA H200", 1.0, seed));
        if let Some((peak, held)) = memory {
            r = r
                .memory(gpubench_record::testing::memory(
                    peak,
                    peak + 20 * MIB,
                    4 * MIB,
                    peak + 20 * MIB,
                ))
                .memory_growth(500, 4 * MIB, 4 * MIB + 500 * held, 4 * MIB + 1000 * held);
        }
        let r = r.build();
        prepare_record(&self.dir.path().join("bin"), &r, false);
    }

    fn work(&self) -> PathBuf {
        self.dir.path().join("work")
    }

    fn run(&self, args: &[&str]) -> Ran {
        run(run_stand_in(self.dir.path()).args(args))
    }
}

#[test]
fn a_planted_leak_is_a_memory_regression_everywhere_the_run_is_shown() {
    let b = Bench::new();
    b.measure(Some((80 * MIB, 0)), 1);
    b.run(&["--save-baseline", "main"]).expect_code(0);

    // Unchanged: no change, exit 0.
    b.measure(Some((80 * MIB, 0)), 2);
    let ran = b.run(&[]).expect_code(0);
    assert!(ran.stdout.contains("memory"), "{}", ran.stdout);
    assert!(!ran.stdout.contains("holds +"), "{}", ran.stdout);

    // One 64 KiB tensor kept per call: 6 GB at the peak, and growth.
    b.measure(Some((6200 * MIB, TENSOR)), 3);
    let ran = b.run(&[]).expect_code(4);
    assert!(
        ran.stdout
            .contains("mm/64: holds +64.00 KiB per call (allocated after its outputs were dropped"),
        "{}",
        ran.stdout
    );
    assert!(
        ran.stdout
            .contains("mm/64: regressed: peak allocated 80.00 MiB -> 6.05 GiB"),
        "{}",
        ran.stdout
    );
    assert!(
        ran.stdout
            .contains("holds +64.00 KiB per call (the baseline held none"),
        "{}",
        ran.stdout
    );
    assert!(ran.stdout.contains("memory: 1 regressed"), "{}", ran.stdout);
    assert!(
        bench_pages_mention(&b, "memory vs baseline"),
        "the report shows the memory verdict"
    );
    assert!(bench_pages_mention(&b, "holds +64.00 KiB per call"));

    // Only a gate that looks at memory trips on it.
    b.run(&["--gate-on", "time"]).expect_code(0);
    b.run(&["--gate-on", "memory"]).expect_code(4);
    b.run(&["--fail-on", "never"]).expect_code(0);

    let quiet = b.run(&["-q"]).expect_code(4);
    assert!(
        quiet
            .stdout
            .contains("mm/64: memory regressed: peak allocated"),
        "{}",
        quiet.stdout
    );

    let md = b.run(&["--format", "markdown"]).expect_code(4);
    assert!(md.stdout.contains("| Memory |"), "{}", md.stdout);
    assert!(md.stdout.contains("**regressed**: "), "{}", md.stdout);
    assert!(md.stdout.contains("Holds memory per call"), "{}", md.stdout);

    let json = b.run(&["--format", "json"]).expect_code(4);
    let v: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_valid("run-summary.schema.json", &v);
    let entry = &v["benchmarks"][0];
    assert_eq!(entry["summary"]["memory_growth"]["per_call_bytes"], 65536.0);
    assert_eq!(entry["summary"]["memory_growth"]["holds"], true);
    let figures = entry["comparison"]["memory"]["figures"].as_array().unwrap();
    let growth = figures
        .iter()
        .find(|f| f["figure"] == "growth_per_call")
        .unwrap();
    assert_eq!(growth["verdict"], "regressed");
    assert_eq!(growth["current"], 65536.0);
    assert_eq!(growth["basis"], "granularity");
}

/// A bounded cache (64 KiB kept per call until 3.5 GiB are held, then the oldest
/// dropped): every process of the run had filled it before its second stretch of
/// calls, so the median holds nothing per call; the peak says it all, and every
/// output names it with its size.
#[test]
fn a_bounded_cache_is_named_with_its_size_in_the_terminal_and_the_report() {
    let b = Bench::new();
    b.measure(Some((196 << 10, 0)), 1);
    b.run(&["--save-baseline", "main"]).expect_code(0);
    let mut r = RecordBuilder::from(record("mm/64", "NVIDIA H200", 1.0, 2));
    let peak = 3584 * MIB;
    r = r
        .memory(gpubench_record::testing::memory(
            peak,
            peak + 20 * MIB,
            peak,
            peak + 20 * MIB,
        ))
        // Grew by 64 KiB a call in the first stretch, then no more: full.
        .memory_growth(500, peak, peak + 500 * TENSOR, peak + 500 * TENSOR);
    prepare_record(&b.dir.path().join("bin"), &r.build(), false);
    let ran = b.run(&[]).expect_code(4);
    assert!(
        ran.stdout.contains("a bounded cache"),
        "the terminal names it: {}",
        ran.stdout
    );
    assert!(
        bench_pages_mention(&b, "a bounded cache"),
        "the report's benchmark page names it"
    );
    let json = b.run(&["--format", "json"]).expect_code(4);
    let v: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_valid("run-summary.schema.json", &v);
    let memory = &v["benchmarks"][0]["comparison"]["memory"];
    assert!(
        memory["bounded_cache"]["size_bytes"].as_f64().unwrap() > 3e9,
        "{memory:#}"
    );
}

/// Whether a page of the report under `report/` says `words`.
fn bench_pages_mention(b: &Bench, words: &str) -> bool {
    fn walk(dir: &std::path::Path, words: &str) -> bool {
        std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .any(|e| {
                let p = e.path();
                if p.is_dir() {
                    walk(&p, words)
                } else {
                    std::fs::read_to_string(&p).is_ok_and(|t| t.contains(words))
                }
            })
    }
    walk(&b.work().join("target/gpubench/report"), words)
}

#[test]
fn memory_one_side_lacks_is_missing_evidence() {
    let b = Bench::new();
    b.measure(Some((80 * MIB, 0)), 1);
    b.run(&["--save-baseline", "main"]).expect_code(0);
    // A run that read no allocator (the CPU's case) against a baseline that did.
    b.measure(None, 2);
    let ran = b.run(&[]).expect_code(4);
    assert!(ran.stdout.contains("memory missing"), "{}", ran.stdout);
    assert!(
        ran.stdout.contains("no allocator to read"),
        "{}",
        ran.stdout
    );
    b.run(&["--gate-on", "time"]).expect_code(0);
    b.run(&["--allow-missing", "metric"]).expect_code(0);
}

/// The record a harness writes with `--memory-peak-snapshot`: its `memory_peak` found
/// by the harness's own replay (`memory_trace::at_peak`) of a call that allocates a
/// 64 MiB activation and a 32 MiB temporary beside a 256 MiB weight and frees both.
#[test]
fn the_snapshot_at_the_peak_shows_in_the_terminal_markdown_json_and_report() {
    use gpubench_analysis::memory_trace::{
        at_peak, AllocatorTrace, TraceAction, TraceEvent, TracedBlock, TracedSegment,
    };
    let event = |action, address, bytes: u64, at: &str| TraceEvent {
        action,
        address,
        bytes,
        requested_bytes: bytes,
        stream: "0x0".into(),
        allocated_at: if at.is_empty() {
            Vec::new()
        } else {
            vec![at.to_string()]
        },
    };
    let trace = AllocatorTrace {
        segments: vec![TracedSegment {
            address: 0,
            bytes: 512 * MIB,
            stream: "0x0".into(),
            live: vec![TracedBlock {
                address: 0,
                bytes: 256 * MIB,
                requested_bytes: 256 * MIB,
                allocated_at: Vec::new(),
            }],
        }],
        events: vec![
            event(TraceAction::Alloc, 256 * MIB, 64 * MIB, "model::forward"),
            event(TraceAction::Alloc, 320 * MIB, 32 * MIB, "model::scratch"),
            event(TraceAction::Free, 320 * MIB, 32 * MIB, ""),
            event(TraceAction::Free, 256 * MIB, 64 * MIB, ""),
        ],
        complete: true,
        history: true,
        limit_bytes: Some(8 << 30),
    };
    let b = Bench::new();
    let mut r = record("mm/64", "NVIDIA H200", 1.0, 1);
    for m in r
        .processes
        .iter_mut()
        .filter_map(|x| x.measurement.as_mut())
    {
        m.memory_peak = Some(at_peak(&trace, 1));
    }
    prepare_record(&b.dir.path().join("bin"), &r, false);

    let ran = b.run(&[]).expect_code(0);
    assert!(
        ran.stdout.contains("what held memory at the peak:"),
        "{}",
        ran.stdout
    );
    assert!(
        ran.stdout
            .contains("352.00 MiB allocated in 3 live blocks, 512.00 MiB reserved in 1 segment"),
        "{}",
        ran.stdout
    );
    assert!(
        ran.stdout
            .contains("64.00 MiB  stream 0x0  at model::forward"),
        "{}",
        ran.stdout
    );
    let md = b.run(&["--format", "markdown"]).expect_code(0);
    assert!(
        md.stdout.contains("What held memory at the peak"),
        "{}",
        md.stdout
    );
    assert!(
        md.stdout.contains("largest block 256.00 MiB"),
        "{}",
        md.stdout
    );
    let json = b.run(&["--format", "json"]).expect_code(0);
    let v: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_valid("run-summary.schema.json", &v);
    let record_file = std::fs::read_dir(b.work().join("target/gpubench/runs"))
        .unwrap()
        .flatten()
        .flat_map(|run| {
            std::fs::read_dir(run.path())
                .into_iter()
                .flatten()
                .flatten()
        })
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("mm"))
        })
        .expect("the run's record");
    let rec: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&record_file).unwrap()).unwrap();
    assert_valid("record.schema.json", &rec);
    assert_eq!(
        rec["rounds"][0]["measurement"]["memory_peak"]["snapshot"]["allocated_bytes"],
        352 * MIB
    );
    assert!(bench_pages_mention(&b, "What held memory at the peak"));
    assert!(bench_pages_mention(&b, "at model::scratch"));
}
