//! The HTML report: a self-contained folder (pages, SVG charts, CSS) that opens from
//! `file://` without a network.
//!
//! Reports only present. Statistics come from `gpubench_analysis`; verdicts and change
//! intervals are computed by the comparison step and handed in through
//! [`BaselineComparison`]. The folder written by [`render`] looks like:
//!
//! ```text
//! out_dir/index.html                   summary of every benchmark
//! out_dir/report.css                   the stylesheet
//! out_dir/bench/<stem>.html            one page per benchmark
//! out_dir/bench/<stem>/<chart>.svg     that page's charts
//! ```
//!
//! where `<stem>` is [`gpubench_record::id::file_stem_for_id`] of the benchmark id.

mod charts;
mod eager_compiled;
mod facts;
mod gpu;
pub mod history;
mod input;

mod kernels;
mod parallel;
use gpubench_analysis::peaks;
pub mod run_report;
mod templates;
mod view;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub use input::{BaselineComparison, ReportBenchmark, ReportError, ReportIndex, ReportInput};
pub use peaks::{device_peaks, DevicePeaks};

/// The history page's directory inside the output directory
/// ([`history`]: `cargo gpubench history`).
pub const HISTORY_DIR: &str = "history";

/// File in `out_dir` that marks the folder as a gpubench report, so a re-render may
/// clear the pages it wrote before without touching anything else.
const MARKER_FILE: &str = ".gpubench-report";

/// Writes the report for `input` into `out_dir` (created when missing) and returns
/// what it wrote. Pages of benchmarks from an earlier report in the same folder are
/// removed, so every page in `out_dir/bench/` belongs to this run.
pub fn render(input: &ReportInput, out_dir: &Path) -> Result<ReportIndex, ReportError> {
    let mut seen = std::collections::HashSet::new();
    for b in &input.benchmarks {
        if !seen.insert(b.record.id.as_str()) {
            return Err(ReportError::DuplicateId(b.record.id.clone()));
        }
    }

    let bench_dir = out_dir.join("bench");
    create_dir(out_dir)?;
    if out_dir.join(MARKER_FILE).is_file() && bench_dir.is_dir() {
        std::fs::remove_dir_all(&bench_dir).map_err(io_error(&bench_dir))?;
    }
    create_dir(&bench_dir)?;

    let mut writer = Writer::default();
    writer.write(&out_dir.join(MARKER_FILE), b"written by cargo gpubench\n")?;
    writer.write(&out_dir.join("report.css"), templates::CSS.as_bytes())?;

    let engine = templates::engine()?;
    let views = view::build_all(input);

    // Charts and pages are drawn and written on every core.
    let written = parallel::map(&views.benchmarks, |bench| {
        write_benchmark(&engine, &views.summary, bench, &bench_dir)
    });
    let mut pages = BTreeMap::new();
    for result in written {
        let (id, page, files) = result?;
        writer.files.extend(files);
        pages.insert(id, page);
    }

    let index = out_dir.join("index.html");
    let html = templates::render_index(&engine, &views.summary)?;
    writer.write(&index, html.as_bytes())?;

    Ok(ReportIndex {
        index,
        pages,
        files: writer.files,
    })
}

/// Draws and writes one benchmark's charts and page; returns its id, its page and
/// every file written.
fn write_benchmark(
    engine: &tera::Tera,
    summary: &view::SummaryView,
    bench: &view::BenchmarkView,
    bench_dir: &Path,
) -> Result<(String, PathBuf, Vec<PathBuf>), ReportError> {
    let mut writer = Writer::default();
    let chart_dir = bench_dir.join(&bench.stem);
    if !bench.charts.is_empty() {
        create_dir(&chart_dir)?;
    }
    for chart in bench.charts.iter() {
        let svg = chart.draw().map_err(|message| ReportError::Chart {
            id: bench.id.clone(),
            chart: chart.file.clone(),
            message,
        })?;
        writer.write(&chart_dir.join(&chart.file), svg.as_bytes())?;
    }
    let html = templates::render_page(engine, summary, bench)?;
    let page = bench_dir.join(format!("{}.html", bench.stem));
    writer.write(&page, html.as_bytes())?;
    Ok((bench.id.clone(), page, writer.files))
}

fn create_dir(path: &Path) -> Result<(), ReportError> {
    std::fs::create_dir_all(path).map_err(io_error(path))
}

/// Turns an I/O error on `path` into a [`ReportError::Io`].
fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> ReportError + '_ {
    move |source| ReportError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Writes files and remembers which.
#[derive(Default)]
struct Writer {
    files: Vec<PathBuf>,
}

impl Writer {
    fn write(&mut self, path: &Path, bytes: &[u8]) -> Result<(), ReportError> {
        std::fs::write(path, bytes).map_err(io_error(path))?;
        self.files.push(path.to_path_buf());
        Ok(())
    }
}
