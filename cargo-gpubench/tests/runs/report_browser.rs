//! The report in a real browser: headless Chromium opens the pages from `file://`,
//! the test reads the DOM after scripts ran, and checks that a screenshot shows a
//! rendered page rather than a blank one.
//!
//! Chromium is found and run by `support::browser`.
//! Set `GPUBENCH_REPORT_KEEP=<dir>` to keep the report and screenshots in `<dir>`.

use std::path::{Path, PathBuf};

use crate::fixtures::*;
pub(crate) use crate::support::browser::{dump_dom, file_url, run_chromium, sel};
use cargo_gpubench::testing::output::html::{render, ReportIndex};

/// Where the report and screenshots go: a kept folder or a temporary one.
pub(crate) struct Workdir {
    pub(crate) path: PathBuf,
    _temp: Option<tempfile::TempDir>,
}

pub(crate) fn workdir(name: &str) -> Workdir {
    match std::env::var_os("GPUBENCH_REPORT_KEEP") {
        Some(dir) => {
            let path = PathBuf::from(dir).join(name);
            std::fs::create_dir_all(&path).unwrap();
            Workdir { path, _temp: None }
        }
        None => {
            let t = tempfile::tempdir().unwrap();
            Workdir {
                path: t.path().to_path_buf(),
                _temp: Some(t),
            }
        }
    }
}

/// Takes a 1280×2000 screenshot and checks it shows a rendered page: many colours
/// and plenty of non-white pixels.
pub(crate) fn screenshot(work: &Path, url: &str, png_path: &Path) {
    let _ = std::fs::remove_file(png_path);
    run_chromium(
        work,
        url,
        &[
            format!("--screenshot={}", png_path.display()),
            "--window-size=1280,2000".to_string(),
        ],
    );
    let decoder =
        png::Decoder::new(std::fs::File::open(png_path).unwrap_or_else(|e| {
            panic!("chromium wrote no screenshot {}: {e}", png_path.display())
        }));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!((info.width, info.height), (1280, 2000));
    let channels = info.color_type.samples();
    assert!(
        channels >= 3,
        "unexpected colour type {:?}",
        info.color_type
    );
    let mut colours = std::collections::HashSet::new();
    let mut non_white = 0usize;
    let pixels = buf[..info.buffer_size()].chunks(channels);
    let total = (info.width * info.height) as usize;
    for px in pixels {
        let rgb = (px[0], px[1], px[2]);
        colours.insert(rgb);
        if rgb.0 < 235 || rgb.1 < 235 || rgb.2 < 235 {
            non_white += 1;
        }
    }
    assert!(
        colours.len() > 200,
        "screenshot {} looks blank: {} colours",
        png_path.display(),
        colours.len()
    );
    let frac = non_white as f64 / total as f64;
    assert!(
        frac > 0.03,
        "screenshot {} is almost all white ({:.1}% non-white)",
        png_path.display(),
        frac * 100.0
    );
}

fn demo_report(work: &Path) -> ReportIndex {
    render(&demo_input(), &work.join("report")).unwrap()
}

#[test]
fn summary_page_loads_from_file_sorts_and_is_not_blank() {
    let work = workdir("summary");
    let index = demo_report(&work.path);
    let url = format!("{}#sort=benchmarks.time.desc", file_url(&index.index));
    let dom = dump_dom(&work.path, &url);

    let table = dom.select(&sel("table#benchmarks")).next().expect("table");
    assert_eq!(
        table.value().attr("data-sortable"),
        Some("ready"),
        "the sorting script did not run"
    );
    assert_eq!(table.value().attr("data-sorted-by"), Some("time.desc"));
    assert!(
        dom.select(&sel("#benchmarks thead th button.sort")).count() == 11,
        "every heading becomes a sort button"
    );
    // Rows are in descending time order, blanks (the failure) last.
    let medians: Vec<Option<f64>> = dom
        .select(&sel("#benchmarks tbody tr"))
        .map(|row| {
            let cell = row.select(&sel("td")).nth(1).unwrap();
            cell.value().attr("data-sort").unwrap().parse().ok()
        })
        .collect();
    assert_eq!(medians.last(), Some(&None), "{medians:?}");
    let known: Vec<f64> = medians.iter().flatten().copied().collect();
    assert!(known.windows(2).all(|w| w[0] >= w[1]), "{known:?}");
    assert_eq!(known.len() + 1, medians.len());

    let text: String = dom.select(&sel("main")).next().unwrap().text().collect();
    for needle in [
        "matmul_bf16/4096",
        HOSTILE_ID,
        FAILED_ID,
        "regressed",
        "improved",
        "no change",
        "ambiguous",
        "failed",
        "How to read this",
    ] {
        assert!(text.contains(needle), "summary lacks {needle:?}");
    }
    // The hostile id is text, not a script: the only script is ours.
    assert_eq!(dom.select(&sel("script")).count(), 1);

    screenshot(
        &work.path,
        &file_url(&index.index),
        &work.path.join("summary.png"),
    );
}

/// The demo run with the matmul's samples read with the board's power, the last
/// quarter of them power-capped at the 700 W limit.
fn demo_report_with_power(work: &Path) -> ReportIndex {
    let mut input = demo_input();
    let b = input
        .benchmarks
        .iter_mut()
        .find(|b| b.record.id == "matmul_bf16/4096")
        .expect("the demo has the matmul");
    b.record.fingerprint.gpu = Some(gpubench_record::telemetry::GpuState {
        power_limit_w: Some(700.0),
        ..Default::default()
    });
    for m in b
        .record
        .processes
        .iter_mut()
        .filter_map(|p| p.measurement.as_mut())
    {
        let n = m.samples.len();
        for (i, s) in m.samples.iter_mut().enumerate() {
            let capped = 4 * i >= 3 * n;
            s.clock = Some(gpubench_record::measurement::SampleClock {
                sm_mhz: if capped { 1707 } else { 1980 },
                temperature_c: Some(60),
                throttled: false,
                power_capped: capped,
                power_w: Some(if capped {
                    702.0
                } else {
                    610.0 + (i % 7) as f64
                }),
            });
        }
    }
    b.summary = None;
    render(&input, &work.join("report")).unwrap()
}

#[test]
fn benchmark_pages_load_from_file_with_their_charts() {
    let work = workdir("benchmark");
    let index = demo_report_with_power(&work.path);
    for id in ["matmul_bf16/4096", COMPARISON_ID, FAILED_ID] {
        let page = &index.pages[id];
        let dom = dump_dom(&work.path, &file_url(page));
        let h1: String = dom.select(&sel("h1")).next().unwrap().text().collect();
        assert!(h1.contains(id), "{h1}");
        let stem = page.file_stem().unwrap().to_string_lossy().into_owned();
        for img in dom.select(&sel("img")) {
            let src = img.value().attr("src").unwrap();
            assert!(src.starts_with(&format!("{stem}/")), "{src}");
            assert!(page.parent().unwrap().join(src).is_file(), "{src}");
        }
        let shot = work.path.join(format!("{stem}.png"));
        screenshot(&work.path, &file_url(page), &shot);
    }
    // The power chart beside the clock chart: Chromium loads its SVG and finds a
    // point for every sample with a power reading.
    let matmul = &index.pages["matmul_bf16/4096"];
    let dom = dump_dom(&work.path, &file_url(matmul));
    let srcs: Vec<&str> = dom
        .select(&sel("img"))
        .filter_map(|i| i.value().attr("src"))
        .collect();
    let at = |name: &str| srcs.iter().position(|s| s.ends_with(name));
    let (clock, power) = (at("/gpu-clock.svg"), at("/gpu-power.svg"));
    assert!(
        clock.is_some() && power == clock.map(|c| c + 1),
        "the power chart follows the clock chart: {srcs:?}"
    );
    let svg_path = matmul.parent().unwrap().join(srcs[power.unwrap()]);
    let svg = run_chromium(
        &work.path,
        &file_url(&svg_path),
        &["--dump-dom".to_string()],
    );
    let drawn = scraper::Html::parse_document(&svg);
    let circles = drawn.select(&sel("circle")).count();
    let samples: usize = index_samples(&demo_input(), "matmul_bf16/4096");
    assert!(
        circles >= samples,
        "{circles} points drawn for {samples} samples: {svg:.400}"
    );
    assert!(svg.contains("power limit (700 W)"), "{svg:.400}");
    let text: String = dom.select(&sel("main")).next().unwrap().text().collect();
    assert!(text.contains("samples ran power-capped"), "{text}");
    // A page without power says why in one line.
    let other = dump_dom(&work.path, &file_url(&index.pages[COMPARISON_ID]));
    let text: String = other.select(&sel("main")).next().unwrap().text().collect();
    assert!(text.contains("No power chart"), "{text}");
    let failed = dump_dom(&work.path, &file_url(&index.pages[FAILED_ID]));
    let text: String = failed.select(&sel("main")).next().unwrap().text().collect();
    assert!(text.contains("Failed: out of memory"));
}

/// The samples of benchmark `id` in `input`, over its processes.
fn index_samples(input: &cargo_gpubench::testing::output::html::ReportInput, id: &str) -> usize {
    input
        .benchmarks
        .iter()
        .find(|b| b.record.id == id)
        .map(|b| b.record.measurements().map(|m| m.samples.len()).sum())
        .unwrap_or(0)
}
