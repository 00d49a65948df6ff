//! The HTML report of a run on the CPU, as a newcomer without a GPU first sees it:
//! the run's processes and settings in readable words, intervals whose bounds each
//! have their unit, benchmarks named `<target>/<id>` as the terminal names them, one
//! sentence that device time is host time instead of GPU charts and words, and a
//! warm-up chart whose steady-state line is the steady state of the process it shows.

use std::path::{Path, PathBuf};

use crate::fixtures::{record, Spec};
use cargo_gpubench::testing::output::html::run_report::{render_run, StoredRun};
use cargo_gpubench::testing::output::html::{render, ReportIndex, ReportInput};
use cargo_gpubench::testing::store::manifest::BenchStatus;
use cargo_gpubench::testing::store::references::SummaryEntry;
use gpubench_record::measurement::{ProcessPolicy, TimeKind};
use gpubench_record::record::RawRecord;
use gpubench_record::testing::RecordBuilder;
use scraper::{Html, Selector};

/// A record of a CPU run: `shifts.len()` processes of about `per_call_ns`, each
/// process's samples scaled by its shift; no device timer, no memory statistics, no
/// kernels, host dispatch just under wall time, as the harness records on a CPU.
fn cpu_record(id: &str, per_call_ns: f64, shifts: &[f64]) -> RawRecord {
    let mut spec = Spec::new(id, per_call_ns, 7);
    spec.processes = shifts.len();
    spec.process_spread = 0.0;
    spec.flags.clear();
    let mut r = RecordBuilder::from(record(&spec))
        .cpu("AMD EPYC 7B13")
        .device_timer(false)
        .kernel_unavailable("no kernel timing on cpu")
        .sync_cost(30.0)
        .build();
    r.fingerprint.cuda_version = None;
    r.fingerprint.cudnn_version = None;
    for (process, shift) in r.processes.iter_mut().zip(shifts) {
        let m = process.measurement.as_mut().unwrap();
        m.memory = None;
        for s in &mut m.samples {
            s.wall_ns *= shift;
            s.device_ns = None;
            s.host_ns = s.wall_ns * 0.999;
        }
        for w in &mut m.warmup {
            w.wall_ns *= shift;
        }
        for c in &mut m.cold {
            c.device_ns = None;
            c.host_ns = c.wall_ns * 0.999;
        }
        for n in &mut m.naive {
            n.naive_ns_per_iter = n.synced_ns_per_iter * 0.999;
        }
    }
    r
}

fn rendered(input: &ReportInput) -> (tempfile::TempDir, ReportIndex) {
    let dir = tempfile::tempdir().unwrap();
    let index = render(input, &dir.path().join("report")).unwrap();
    (dir, index)
}

fn page(path: &Path) -> Html {
    Html::parse_document(&std::fs::read_to_string(path).unwrap())
}

fn text(doc: &Html, selector: &str) -> String {
    let sel = Selector::parse(selector).unwrap();
    doc.select(&sel)
        .map(|e| e.text().collect::<String>())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The value of the row labelled `key` of the page's measurement options.
fn option(doc: &Html, key: &str) -> String {
    let row = Selector::parse("table.pairs tr").unwrap();
    let th = Selector::parse("th").unwrap();
    let td = Selector::parse("td").unwrap();
    doc.select(&row)
        .find(|r| {
            r.select(&th)
                .next()
                .is_some_and(|h| h.text().collect::<String>() == key)
        })
        .and_then(|r| r.select(&td).next())
        .map(|d| d.text().collect())
        .unwrap_or_else(|| panic!("no option {key}"))
}

/// The key fact labelled `label`: its value and its detail.
fn key_fact(doc: &Html, label: &str) -> (String, String) {
    let fact = Selector::parse(".fact").unwrap();
    let dt = Selector::parse("dt").unwrap();
    let value = Selector::parse(".fact-value").unwrap();
    let sub = Selector::parse(".sub").unwrap();
    let f = doc
        .select(&fact)
        .find(|f| {
            f.select(&dt)
                .next()
                .is_some_and(|d| d.text().collect::<String>() == label)
        })
        .unwrap_or_else(|| panic!("no fact {label}"));
    let of = |s: &Selector| {
        f.select(s)
            .next()
            .map(|e| e.text().collect())
            .unwrap_or_default()
    };
    (of(&value), of(&sub))
}

/// Where the charts of benchmark `id` are.
fn chart_dir(index: &ReportIndex, id: &str) -> PathBuf {
    index
        .index
        .parent()
        .unwrap()
        .join("bench")
        .join(gpubench_record::id::file_stem_for_id(id))
}

/// `201.3 µs` → 201300.0.
fn duration_ns(text: &str) -> f64 {
    let (number, unit) = text.trim().split_once(' ').unwrap();
    let scale = match unit {
        "ns" => 1.0,
        "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        other => panic!("unit {other:?} in {text:?}"),
    };
    number.parse::<f64>().unwrap() * scale
}

#[test]
fn the_options_show_the_runs_processes_rounded_bounds_and_singular_words() {
    // What a harness used to write: its own single process, for a run of three.
    let mut old = cpu_record("launch/add_1m", 150_000.0, &[1.0, 1.01, 0.99]);
    old.config.measurement_time_s = 5.0 / 3.0;
    assert_eq!(old.config.processes, ProcessPolicy::single());
    // What a run writes now: its policy, here 3 to 6, of which 4 ran; samples of one
    // call each (a routine slower than the sample time).
    let mut adaptive = cpu_record("mlp/step", 2e7, &[1.0, 1.01, 0.99, 1.0]);
    adaptive.config.processes = ProcessPolicy::standard();
    adaptive.config.measurement_time_s = 5.0 / 3.0;
    for process in &mut adaptive.processes {
        let m = process.measurement.as_mut().unwrap();
        for s in &mut m.samples {
            s.wall_ns /= s.iters as f64;
            s.host_ns /= s.iters as f64;
            s.iters = 1;
        }
    }
    let (_dir, index) = rendered(&ReportInput::new("cpu", vec![old, adaptive]));

    let old = page(&index.pages["launch/add_1m"]);
    assert_eq!(option(&old, "processes"), "3");
    assert_eq!(option(&old, "measurement bound"), "1.667 s");
    assert_eq!(key_fact(&old, "processes").0, "3");

    let adaptive = page(&index.pages["mlp/step"]);
    let processes = option(&adaptive, "processes");
    assert!(processes.starts_with("4 (3 to 6: "), "{processes}");
    assert_eq!(
        option(&adaptive, "measurement bound"),
        "1.667 s per process (5.000 s over 3 processes)"
    );
    assert_eq!(option(&adaptive, "warm-up bound"), "1.000 s");
    let (samples, each) = key_fact(&adaptive, "samples");
    assert_eq!(samples, "160");
    assert_eq!(each, "1 iteration each");
    let main = text(&adaptive, "main");
    assert!(!main.contains("1.6666"), "an unrounded bound: {main}");
}

#[test]
fn an_interval_across_a_unit_boundary_gives_each_bound_its_own_unit() {
    // Processes around 1 ms: the interval runs from below 1 ms to above it.
    let r = cpu_record("sweep/1024", 1e6, &[0.96, 1.0, 1.04]);
    let (_dir, index) = rendered(&ReportInput::new("cpu", vec![r]));
    let doc = page(&index.pages["sweep/1024"]);
    let (_, detail) = key_fact(&doc, "time");
    let interval = detail
        .split("next run ")
        .nth(1)
        .and_then(|d| d.split(';').next())
        .unwrap_or_else(|| panic!("no interval in {detail:?}"));
    let (lo, hi) = interval.split_once(" – ").expect(interval);
    assert!(lo.ends_with(" µs") && hi.ends_with(" ms"), "{interval}");
    assert!(duration_ns(lo) < 1e6 && duration_ns(hi) > 1e6, "{interval}");
    let summary = page(&index.index);
    let cell = text(&summary, "#benchmarks tbody td .sub");
    assert!(cell.contains(interval), "the summary shows {cell:?}");
}

#[test]
fn benchmarks_are_named_by_target_and_id_as_the_terminal_names_them() {
    let records = vec![
        cpu_record("add_1m", 150_000.0, &[1.0, 1.01, 0.99]),
        cpu_record("matmul_f32/256", 4e5, &[1.0, 1.01, 0.99]),
    ];
    let entries: Vec<SummaryEntry> = [("launch", &records[0]), ("matmul", &records[1])]
        .into_iter()
        .map(|(target, r)| SummaryEntry {
            name: format!("{target}/{}", r.id),
            target: target.into(),
            id: r.id.clone(),
            status: BenchStatus::Passed,
            record: None,
            summary: None,
            comparison: None,
        })
        .collect();
    let run_dir = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let index = render_run(
        StoredRun {
            id: "20260101T000000.000Z-1-0",
            dir: run_dir.path(),
            records: &records,
            entries: &entries,
        },
        &out.path().join("report"),
    )
    .unwrap();
    let summary = page(&index.index);
    let names: Vec<String> = {
        let sel = Selector::parse("#benchmarks tbody th a").unwrap();
        summary.select(&sel).map(|a| a.text().collect()).collect()
    };
    assert_eq!(names, ["launch/add_1m", "matmul/matmul_f32/256"]);
    let add = page(&index.pages["add_1m"]);
    assert_eq!(
        text(&add, "h1 .bench-id, h1.bench-id").trim(),
        "launch/add_1m no baseline"
    );
    assert!(
        text(&add, "title").starts_with("launch/add_1m · "),
        "{}",
        text(&add, "title")
    );
    assert!(text(&add, "nav.crumbs").contains("launch/add_1m"));
}

#[test]
fn a_cpu_run_says_once_that_device_time_is_host_time_and_shows_no_gpu_words_or_charts() {
    let r = cpu_record("launch/add_1m", 150_000.0, &[1.0, 1.01, 0.99]);
    let (_dir, index) = rendered(&ReportInput::new("cpu", vec![r]));
    let doc = page(&index.pages["launch/add_1m"]);
    let main = text(&doc, "main");
    assert_eq!(
        main.matches("device time is host time").count(),
        1,
        "{main}"
    );
    for gpu_only in [
        "GPU",
        "Host dispatch vs device",
        "unsynchronised",
        "sync cost",
        "Kernel time",
        "Returned to host",
        "device peak",
    ] {
        assert!(
            !main.contains(gpu_only),
            "{gpu_only:?} on a CPU page: {main}"
        );
    }
    let charts = chart_dir(&index, "launch/add_1m");
    let drawn: Vec<String> = std::fs::read_dir(&charts)
        .unwrap_or_else(|e| panic!("{}: {e}", charts.display()))
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(!drawn.iter().any(|f| f == "host-device.svg"), "{drawn:?}");
    assert!(drawn.iter().any(|f| f == "warmup.svg"), "{drawn:?}");
    let img = Selector::parse("img").unwrap();
    assert!(doc.select(&img).all(|i| i
        .value()
        .attr("src")
        .is_some_and(|s| !s.contains("host-device"))));
    assert_eq!(option(&doc, "cache flushed"), "no: calls run back to back");

    let summary = page(&index.index);
    let all = text(&summary, "main");
    assert!(
        !all.contains("GPU"),
        "GPU words on a CPU run's summary: {all}"
    );
    let head = text(&summary, "#benchmarks thead");
    assert!(
        !head.contains("Host dispatch") && !head.contains("Device"),
        "{head}"
    );
    assert!(all.contains("device time is host time"), "{all}");
}

#[test]
fn the_warm_up_chart_leads_to_the_steady_state_of_its_own_process() {
    // The first process (whose warm-up the chart shows) ran 4× faster than the two
    // after it, as a contended CPU does: the estimate over processes is far above
    // everything that process did.
    let r = cpu_record("launch/add_1m", 200_000.0, &[1.0, 4.0, 4.0]);
    let first = r.first_measurement().unwrap().per_iter(TimeKind::Wall);
    let (lo, hi) = first
        .iter()
        .fold((f64::INFINITY, 0.0f64), |(l, h), &x| (l.min(x), h.max(x)));
    let (_dir, index) = rendered(&ReportInput::new("cpu", vec![r]));
    let svg =
        std::fs::read_to_string(chart_dir(&index, "launch/add_1m").join("warmup.svg")).unwrap();
    let label = svg
        .split('>')
        .filter_map(|s| s.split('<').next())
        .find_map(|t| t.trim().strip_prefix("steady state: "))
        .unwrap_or_else(|| panic!("no steady-state label in {svg}"));
    let line = duration_ns(label);
    assert!(
        (lo..=hi).contains(&line),
        "the line at {label} is outside the first process's samples ({lo} – {hi} ns)"
    );
    let doc = page(&index.pages["launch/add_1m"]);
    let estimate = duration_ns(&key_fact(&doc, "time").0);
    assert!(
        estimate > 2.0 * hi,
        "the fixture lost its point: {estimate}"
    );
}
