//! Rendering tests of the HTML report: the pages parse, every link and image exists
//! on disk, user strings stay inert, and failures and comparisons are shown. Just
//! over 600 lines on purpose: every test renders the same fixtures into one report.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::fixtures::*;
use cargo_gpubench::testing::output::html::{render, ReportError, ReportIndex, ReportInput};
use gpubench_record::id::file_stem_for_id;
use gpubench_record::testing::RecordBuilder;
use scraper::{Html, Selector};

fn rendered(input: &ReportInput) -> (tempfile::TempDir, ReportIndex) {
    let dir = tempfile::tempdir().unwrap();
    let index = render(input, &dir.path().join("report")).unwrap();
    (dir, index)
}

fn sel(s: &str) -> Selector {
    Selector::parse(s).unwrap()
}

/// Parses a page, failing on any HTML parse error.
fn parse(path: &Path) -> Html {
    let text = std::fs::read_to_string(path).unwrap();
    let doc = Html::parse_document(&text);
    assert!(
        doc.errors.is_empty(),
        "{} does not parse cleanly: {:?}",
        path.display(),
        doc.errors
    );
    doc
}

fn text_of(doc: &Html, selector: &str) -> String {
    doc.select(&sel(selector))
        .map(|e| e.text().collect::<String>())
        .collect::<Vec<_>>()
        .join("\n")
}

fn html_files(root: &Path) -> Vec<PathBuf> {
    let mut out = vec![root.join("index.html")];
    for e in std::fs::read_dir(root.join("bench")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "html") {
            out.push(p);
        }
    }
    out
}

/// Every `href`/`src`/`data` of a page points at a file that exists (and an id that
/// exists, for fragments); nothing points off the machine.
fn assert_links_resolve(page: &Path) {
    let doc = parse(page);
    let dir = page.parent().unwrap();
    let mut checked = 0;
    for (selector, attr) in [
        ("a[href]", "href"),
        ("link[href]", "href"),
        ("img[src]", "src"),
        ("script[src]", "src"),
        ("object[data]", "data"),
        ("iframe[src]", "src"),
        ("source[src]", "src"),
    ] {
        for el in doc.select(&sel(selector)) {
            let target = el.value().attr(attr).unwrap();
            assert!(
                !target.contains("://") && !target.starts_with("//"),
                "{} refers off the machine: {target}",
                page.display()
            );
            let (file, fragment) = match target.split_once('#') {
                Some((f, frag)) => (f, Some(frag)),
                None => (target, None),
            };
            let file_path = if file.is_empty() {
                page.to_path_buf()
            } else {
                dir.join(file)
            };
            assert!(
                file_path.is_file(),
                "{} links to {target}, which does not exist",
                page.display()
            );
            if let Some(frag) = fragment.filter(|f| !f.is_empty()) {
                let target_doc = parse(&file_path);
                let id_sel = sel(&format!("[id=\"{frag}\"]"));
                assert!(
                    target_doc.select(&id_sel).next().is_some(),
                    "{} links to #{frag}, which {} lacks",
                    page.display(),
                    file_path.display()
                );
            }
            checked += 1;
        }
    }
    assert!(checked > 0, "{} has no links at all", page.display());
}

#[test]
fn every_page_parses_and_every_link_and_image_exists() {
    let input = demo_input();
    let (_dir, index) = rendered(&input);
    assert!(index.index.ends_with("index.html"));
    assert_eq!(index.pages.len(), input.benchmarks.len());
    let root = index.index.parent().unwrap();
    let pages = html_files(root);
    assert_eq!(pages.len(), input.benchmarks.len() + 1);
    for page in &pages {
        assert_links_resolve(page);
    }
    // Everything written is listed, and everything listed exists.
    for f in &index.files {
        assert!(f.is_file(), "{}", f.display());
    }
    let svgs = index
        .files
        .iter()
        .filter(|f| f.extension().is_some_and(|x| x == "svg"))
        .count();
    assert!(
        svgs >= 5 * 6,
        "expected charts for every measured benchmark, got {svgs}"
    );
    assert!(root.join("report.css").is_file());
}

#[test]
fn summary_lists_every_benchmark_with_its_verdict_in_words_and_colour() {
    let (_dir, index) = rendered(&demo_input());
    let doc = parse(&index.index);
    let rows: Vec<_> = doc.select(&sel("#benchmarks tbody tr")).collect();
    let verdict_of = |id: &str| -> (String, String) {
        let row = rows
            .iter()
            .find(|r| {
                r.select(&sel("th a"))
                    .next()
                    .unwrap()
                    .text()
                    .collect::<String>()
                    == id
            })
            .unwrap_or_else(|| panic!("no row for {id}"));
        let badge = row.select(&sel(".badge")).next().unwrap();
        (
            badge.text().collect(),
            badge.value().attr("class").unwrap().to_string(),
        )
    };
    let expect = [
        ("matmul_bf16/4096", "regressed"),
        ("softmax/8192", "improved"),
        ("layernorm/4096", "no change"),
        ("conv2d/resnet_block", "ambiguous"),
        (FAILED_ID, "failed"),
        ("embedding/lookup", "not compared"),
        (HOSTILE_ID, "no baseline"),
    ];
    for (id, word) in expect {
        let (text, class) = verdict_of(id);
        assert_eq!(text, word, "verdict of {id}");
        assert!(
            class.contains("v-"),
            "verdict of {id} has no colour class: {class}"
        );
    }
    assert_eq!(rows.len(), demo_input().benchmarks.len());

    let table = text_of(&doc, "#benchmarks");
    // Change with its interval, host vs device, cold call, throughput with % of peak,
    // memory and the failure reason are all on the summary.
    assert!(table.contains("% to +"), "change interval missing: {table}");
    assert!(
        table.contains("TFLOP/s") && table.contains("of bf16 peak"),
        "{table}"
    );
    assert!(
        table.contains("B/s") && table.contains("29% of memory bandwidth"),
        "{table}"
    );
    assert!(table.contains("1.50 GiB"), "peak memory missing");
    assert!(
        table.contains("out of memory: CUDA out of memory"),
        "{table}"
    );
    assert!(table.contains("a smoke run measures nothing"), "{table}");
    let header = text_of(&doc, "#benchmarks thead");
    for col in [
        "Time",
        "Processes",
        "Change",
        "Host dispatch",
        "Device",
        "Kernel",
        "Cold call",
        "Throughput",
        "Peak memory",
    ] {
        assert!(header.contains(col), "missing column {col}");
    }
    // Sortable: every column has a key and numeric cells a sort value.
    assert_eq!(
        doc.select(&sel("#benchmarks thead th[data-key]")).count(),
        11
    );
    let page = text_of(&doc, "main");
    assert!(page.contains("NVIDIA H200 (cuda:0"), "environment missing");
    assert!(page.contains("libtorch"));
    assert!(page.contains("main"), "baseline name missing");
    assert!(
        page.contains("retired/op"),
        "baseline benchmarks not run are not listed"
    );
    assert!(text_of(&doc, "#how-to-read").contains("Why every time is synced"));
}

#[test]
fn hostile_ids_args_and_labels_render_inert() {
    let (_dir, index) = rendered(&demo_input());
    let root = index.index.parent().unwrap();
    for page in html_files(root) {
        let raw = std::fs::read_to_string(&page).unwrap();
        assert!(
            !raw.contains(HOSTILE_ID),
            "{} embeds the id raw",
            page.display()
        );
        assert!(
            !raw.contains("<b>"),
            "{} embeds markup from a message",
            page.display()
        );
        assert!(
            !raw.contains("<img src=x"),
            "{} embeds a label raw",
            page.display()
        );
        let doc = parse(&page);
        let scripts = doc.select(&sel("script")).count();
        let expected = usize::from(page.ends_with("index.html"));
        assert_eq!(
            scripts,
            expected,
            "{} runs unexpected scripts",
            page.display()
        );
        for el in doc.select(&sel("*")) {
            for (name, _) in el.value().attrs() {
                assert!(
                    !name.starts_with("on"),
                    "{}: attribute {name}",
                    page.display()
                );
            }
        }
    }
    // The id still reads as text, where people look for it.
    let doc = parse(&index.index);
    assert!(doc
        .select(&sel("#benchmarks th a"))
        .any(|a| a.text().collect::<String>() == HOSTILE_ID));
    let page = &index.pages[HOSTILE_ID];
    assert!(page.ends_with(format!("{}.html", file_stem_for_id(HOSTILE_ID))));
    let doc = parse(page);
    assert_eq!(
        text_of(&doc, "h1.bench-id")
            .trim_end()
            .trim_end_matches("no baseline")
            .trim(),
        HOSTILE_ID
    );
    assert!(text_of(&doc, "title").starts_with(HOSTILE_ID));
    // Chart text (a cold-call label) is escaped inside the SVG too.
    let dir = page.with_extension("");
    let mut saw_label = false;
    for e in std::fs::read_dir(dir).unwrap() {
        let svg = std::fs::read_to_string(e.unwrap().path()).unwrap();
        assert!(!svg.contains("<script") && !svg.contains("<img"), "{svg}");
        saw_label |= svg.contains("&lt;img src=x onerror=alert(2)&gt;");
    }
    assert!(
        saw_label,
        "the hostile cold-call label should be drawn, escaped"
    );
    assert!(text_of(&doc, "main").contains(HOSTILE_LABEL));
}

#[test]
fn failed_benchmark_page_shows_kind_message_and_memory() {
    let (_dir, index) = rendered(&demo_input());
    let doc = parse(&index.pages[FAILED_ID]);
    let failure = text_of(&doc, "section.failure");
    assert!(failure.contains("Failed: out of memory"), "{failure}");
    assert!(failure.contains("Tried to allocate 64.00 GiB"));
    assert!(
        failure.contains("<b>not bold</b> & reserved"),
        "message must show verbatim"
    );
    assert!(
        failure.contains("while running attention at seq_len=65536"),
        "whole message shown: {failure}"
    );
    assert!(
        failure.contains("121.00 GiB"),
        "memory at failure: {failure}"
    );
    assert_eq!(
        doc.select(&sel("img")).count(),
        0,
        "a failed benchmark has no charts"
    );
    assert!(text_of(&doc, ".bench-id .badge").contains("failed"));
}

#[test]
fn benchmark_page_shows_distribution_timeline_warmup_cold_and_host_vs_device() {
    let (_dir, index) = rendered(&demo_input());
    let page = &index.pages["matmul_bf16/4096"];
    let doc = parse(page);
    let srcs: Vec<String> = doc
        .select(&sel("figure.chart img"))
        .map(|i| i.value().attr("src").unwrap().to_string())
        .collect();
    for chart in ["distribution", "timeline", "host-device", "warmup", "cold"] {
        assert!(
            srcs.iter().any(|s| s.ends_with(&format!("/{chart}.svg"))),
            "{chart} missing from {srcs:?}"
        );
    }
    let dist = std::fs::read_to_string(page.parent().unwrap().join(&srcs[0])).unwrap();
    assert!(
        dist.contains("baseline (3 processes)") && dist.contains("this run (3 processes)"),
        "legend"
    );
    let main = text_of(&doc, "main");
    for needle in [
        "change vs baseline",
        "95% interval",
        "device-bound",
        "Host dispatch vs device",
        "first call",
        "× steady state",
        "What an unsynchronised timer would have said",
        "TFLOP/s",
        "of bf16 peak",
        "peak reserved",
    ] {
        assert!(main.contains(needle), "page lacks {needle:?}");
    }
    // Alt text on every chart.
    for img in doc.select(&sel("img")) {
        assert!(!img.value().attr("alt").unwrap_or("").is_empty());
    }
}

#[test]
fn kernel_time_counters_and_the_kernel_diff_render_on_the_page_and_the_summary() {
    let (_dir, index) = rendered(&demo_input());
    let doc = parse(&index.pages[KERNELS_ID]);
    // Its time is host-bound: the page says which threshold judged it.
    let main = text_of(&doc, "main");
    assert!(
        main.contains("threshold ±50.0% (host-bound work's, --host-noise-threshold)"),
        "{main}"
    );
    let section = text_of(&doc, "section[aria-labelledby=gpu-h]");
    for needle in [
        "What the GPU did per call",
        "kernel time",
        "launch overhead",
        "kernel time vs baseline",
        "counters vs baseline",
        "+1 kernel per call",
        "CUDA-graph replay",
    ] {
        assert!(section.contains(needle), "lacks {needle:?}: {section}");
    }
    let rows: Vec<Vec<String>> = doc
        .select(&sel("table.kernels tbody tr"))
        .map(|tr| {
            tr.select(&sel("th, td"))
                .map(|c| c.text().collect::<String>())
                .collect()
        })
        .collect();
    let row = |name: &str| {
        rows.iter()
            .find(|r| r[0] == name)
            .unwrap_or_else(|| panic!("{name}: {rows:?}"))
    };
    assert_eq!(row("vectorized_elementwise_kernel<add>")[6], "+12.0%");
    assert_eq!(row("elementwise_kernel<mul>")[6], "");
    assert_eq!(row("fill_kernel<float>")[6], "new");
    let new = doc
        .select(&sel("table.kernels td.worse"))
        .map(|c| c.text().collect::<String>())
        .collect::<Vec<_>>();
    assert_eq!(new, ["+12.0%", "new"]);
    // The summary shows kernel time with its verdict, and the badge says regressed
    // though host timing alone could not tell.
    let summary = parse(&index.index);
    let tiny = summary
        .select(&sel("#benchmarks tbody tr"))
        .find(|tr| tr.text().collect::<String>().contains(KERNELS_ID))
        .unwrap();
    let text: String = tiny.text().collect();
    assert!(text.contains("regressed"), "{text}");
    assert!(text.contains("+1 kernel per call"), "{text}");
    // Pages without kernel figures have no such section.
    let matmul = parse(&index.pages["matmul_bf16/4096"]);
    assert!(text_of(&matmul, "section[aria-labelledby=gpu-h]").is_empty());
}

#[test]
fn eager_vs_compiled_comparison_renders_on_its_page_and_the_scorecard() {
    let (_dir, index) = rendered(&demo_input());
    let summary = parse(&index.index);
    let card = text_of(&summary, "#scorecard");
    assert!(card.contains(COMPARISON_ID));
    assert!(
        card.contains("1.37×") && card.contains("1.31× to 1.43×"),
        "{card}"
    );
    assert!(card.contains("1 of 5 shapes disagree"), "{card}");
    assert!(
        card.contains("re-specialises per shape (4 of 4 new shapes)"),
        "{card}"
    );
    assert!(card.contains("outputs disagree at 1 of 5 shapes"), "{card}");

    let page = &index.pages[COMPARISON_ID];
    let doc = parse(page);
    let section = text_of(&doc, "section.comparison");
    for needle in [
        "speedup",
        "TorchScript trace",
        "compiling costs",
        "pays off after",
        "8367 calls",
        "Cold cost per shape",
        "Every request (16)",
    ] {
        assert!(
            section.contains(needle),
            "comparison lacks {needle:?}: {section}"
        );
    }
    assert_eq!(doc.select(&sel("table.agreement tbody tr")).count(), 5);
    assert_eq!(doc.select(&sel("table.agreement tr.disagrees")).count(), 1);
    assert_eq!(doc.select(&sel("table.agreement td.bad")).count(), 1);
    let chart = page.with_extension("").join("comparison.svg");
    let svg = std::fs::read_to_string(chart).unwrap();
    assert!(svg.contains("eager") && svg.contains("traced"));
    assert!(svg.contains("cold call"), "cold calls are marked");
}

#[test]
fn a_run_without_baseline_says_so() {
    let (_dir, index) = rendered(&unbaselined_input());
    let doc = parse(&index.index);
    assert!(text_of(&doc, ".hero").contains("without a baseline"));
    let badges: BTreeSet<String> = doc
        .select(&sel("#benchmarks .badge"))
        .map(|b| b.text().collect())
        .collect();
    assert_eq!(
        badges,
        BTreeSet::from(["failed".to_string(), "no baseline".to_string()])
    );
}

#[test]
fn a_figure_whose_processes_disagree_wildly_shows_their_range_not_an_interval() {
    let mut spec = Spec::new("launch/add", 8_000.0, 21);
    spec.process_spread = 2.0;
    let r = record(&spec);
    let stats = gpubench_analysis::BenchmarkSummary::from_record(&r);
    let medians = &stats.primary().unwrap().processes.medians;
    let range = format!(
        "too noisy for an interval; processes {}",
        cargo_gpubench::testing::format::duration_range(medians).unwrap()
    );
    let (_dir, index) = rendered(&ReportInput::new("noisy", vec![r]));
    let summary = text_of(&parse(&index.index), "#benchmarks");
    assert!(summary.contains(&range), "{range}: {summary}");
    let page = text_of(&parse(&index.pages["launch/add"]), "main");
    assert!(page.contains(&range), "{range}: {page}");
    assert!(!page.contains("interval for the next run"), "{page}");
}

#[test]
fn a_run_on_several_gpus_of_one_model_names_them_all() {
    let mut input = unbaselined_input();
    input.benchmarks[0].record.fingerprint.device.index = Some(1);
    let (_dir, index) = rendered(&input);
    let doc = parse(&index.index);
    let page = text_of(&doc, "main");
    assert!(page.contains("NVIDIA H200 (cuda:0, cuda:1)"), "{page}");
    assert!(!page.contains("different devices"), "one model: {page}");
}

#[test]
fn rendering_again_replaces_the_previous_report() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("report");
    let first = render(&demo_input(), &out).unwrap();
    let mut smaller = demo_input();
    smaller.benchmarks.retain(|b| b.record.id != FAILED_ID);
    let second = render(&smaller, &out).unwrap();
    assert!(!second.pages.contains_key(FAILED_ID));
    assert!(!first.pages[FAILED_ID].exists(), "stale page left behind");
    // A folder that is not a report is never cleared.
    let foreign = dir.path().join("foreign");
    std::fs::create_dir_all(foreign.join("bench")).unwrap();
    std::fs::write(foreign.join("bench/keep.txt"), "mine").unwrap();
    render(&smaller, &foreign).unwrap();
    assert!(foreign.join("bench/keep.txt").is_file());
}

#[test]
fn duplicate_ids_are_refused() {
    let mut input = demo_input();
    let again = input.benchmarks[0].clone();
    input.benchmarks.push(again);
    let dir = tempfile::tempdir().unwrap();
    let err = render(&input, dir.path()).unwrap_err();
    assert!(matches!(err, ReportError::DuplicateId(_)));
    assert!(err.to_string().contains("matmul_bf16/4096"));
}

#[test]
fn unknown_devices_get_no_percentage_of_peak() {
    let mut input = demo_input();
    for b in &mut input.benchmarks {
        b.record.fingerprint.device.name = "NVIDIA GeForce RTX 9999".into();
    }
    let (_dir, index) = rendered(&input);
    let doc = parse(&index.index);
    assert!(!text_of(&doc, "#benchmarks").contains("% of"));
    assert!(text_of(&doc, "#benchmarks").contains("TFLOP/s"));
}

#[test]
fn an_empty_run_renders_a_summary_that_says_so() {
    let (_dir, index) = rendered(&ReportInput::new("", Vec::new()));
    let doc = parse(&index.index);
    assert!(index.pages.is_empty());
    assert!(text_of(&doc, ".hero").contains("0 benchmarks"));
    assert!(text_of(&doc, "title").contains("cargo gpubench report"));
    assert_links_resolve(&index.index);
}

#[test]
fn a_cpu_run_without_device_timer_shows_wall_time_and_no_device_column() {
    let mut r = RecordBuilder::from(record(&Spec::new("cpu/matmul_f32", 2e6, 12)))
        .cpu("AMD EPYC 7B13")
        .device_timer(false)
        .flags(&[])
        .throughput(gpubench_record::measurement::Throughput::Flops(1e9))
        .kernel_unavailable("no kernel timing on cpu")
        .build();
    for m in r
        .processes
        .iter_mut()
        .filter_map(|x| x.measurement.as_mut())
    {
        m.memory = None;
        for s in &mut m.samples {
            s.device_ns = None;
            s.host_ns = s.wall_ns * 0.999;
        }
    }
    let (_dir, index) = rendered(&ReportInput::new("cpu", vec![r]));
    let doc = parse(&index.index);
    let row = text_of(&doc, "#benchmarks tbody tr");
    assert!(row.contains("GFLOP/s") && !row.contains("% of"), "{row}");
    // Device time is host time on a CPU: neither has a column of its own.
    let head = text_of(&doc, "#benchmarks thead");
    assert!(
        !head.contains("Device") && !head.contains("Host dispatch"),
        "{head}"
    );
    let page = parse(&index.pages["cpu/matmul_f32"]);
    let main = text_of(&page, "main");
    assert!(main.contains("synced wall time"), "{main}");
    // The CPU has no kernels: no section says what it did not measure.
    assert!(!main.contains("Kernel time"), "{main}");
    // Host and wall time agree on a CPU: no bottleneck sentence about a device.
    assert!(
        !text_of(&page, ".callout").contains("-bound"),
        "{}",
        text_of(&page, ".callout")
    );
    assert_links_resolve(&index.pages["cpu/matmul_f32"]);
}

/// The demo report's records (kernel tables, counters, eager versus compiled, a
/// failure) and their summaries match `docs/schema/`.
#[test]
fn demo_records_and_summaries_match_the_schemas() {
    let load = |name: &str| {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../docs/schema")
            .join(name);
        let schema: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        jsonschema::validator_for(&schema).unwrap()
    };
    let records = load("record.schema.json");
    let summaries = load("run-summary.schema.json");
    let input = crate::fixtures::demo_input();
    let mut entries = Vec::new();
    let mut with_eager_compiled = 0;
    for b in &input.benchmarks {
        let record = serde_json::to_value(&b.record).unwrap();
        let errors: Vec<String> = records
            .iter_errors(&record)
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "{}: {errors:?}", b.record.id);
        let summary = gpubench_analysis::BenchmarkSummary::from_record(&b.record);
        with_eager_compiled += usize::from(summary.eager_compiled.is_some());
        entries.push(serde_json::json!({
            "name": format!("examples/{}", b.record.id),
            "target": "examples",
            "id": b.record.id,
            "status": if b.record.passed() { "passed" } else { "failed" },
            "summary": summary,
        }));
    }
    assert!(
        with_eager_compiled > 0,
        "the demo has an eager/compiled benchmark"
    );
    let doc = serde_json::json!({
        "format_version": 1, "run_id": "20261129T140500.000Z-1-0", "run_dir": "runs/x", "status": "completed",
        "passed": 0, "failed": 0, "not_run": 0, "elapsed_s": 1.0,
        "benchmarks": entries, "exit": {"code": 0, "verdict": "success"},
    });
    let errors: Vec<String> = summaries
        .iter_errors(&doc)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
}
