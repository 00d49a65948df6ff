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
//! where `<stem>` is [`gpubench_analysis::file_stem_for_id`] of the benchmark id.

mod charts;
mod comparison;
mod format;
mod gpu;
mod kernels;
mod parallel;
mod peaks;
mod templates;
mod view;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use gpubench_analysis::baseline::{BaselineEntry, ComparisonOutcome, ComparisonSet};
use gpubench_analysis::kernels::{Counters, KernelStat};
use gpubench_analysis::{BenchmarkSummary, Fingerprint, RawRecord, TimeKind};
use thiserror::Error;

pub use peaks::{device_peaks, DevicePeaks};

/// Everything one report shows.
#[derive(Debug, Clone, Default)]
pub struct ReportInput {
    /// Page title, e.g. the workspace name; `cargo gpubench report` when empty.
    pub title: String,
    /// Name of the baseline compared against, e.g. `main`; `None` when the run was not
    /// compared.
    pub baseline_name: Option<String>,
    /// Where and with what the baseline was recorded, when known.
    pub baseline_fingerprint: Option<Fingerprint>,
    /// Ids the baseline has that this run did not run.
    pub missing_in_current: Vec<String>,
    /// When the report was generated (any human-readable form, e.g. RFC 3339).
    pub generated_at: Option<String>,
    /// The benchmarks, in the order the summary lists them before any sorting.
    pub benchmarks: Vec<ReportBenchmark>,
}

impl ReportInput {
    /// A report of `records`, not compared with a baseline.
    pub fn new(title: impl Into<String>, records: Vec<RawRecord>) -> Self {
        ReportInput {
            title: title.into(),
            benchmarks: records.into_iter().map(ReportBenchmark::new).collect(),
            ..ReportInput::default()
        }
    }

    /// Attaches the comparison of this run with baseline `name`: `entries` are the
    /// baseline's files (for their samples and fingerprint) and `set` what
    /// [`gpubench_analysis::compare_with_baseline`] made of them.
    pub fn with_baseline(
        mut self,
        name: impl Into<String>,
        entries: &[BaselineEntry],
        set: &ComparisonSet,
    ) -> Self {
        self.baseline_name = Some(name.into());
        self.baseline_fingerprint = entries.first().map(|e| e.fingerprint.clone());
        self.missing_in_current = set.missing_in_current.clone();
        for bench in &mut self.benchmarks {
            let id = bench.record.id.as_str();
            let Some(c) = set.comparisons.iter().find(|c| c.id == id) else {
                continue;
            };
            let entry = entries.iter().find(|e| e.id == id);
            let mut comparison = BaselineComparison::new(c.outcome.clone(), entry);
            if let Some(x) = set.cross_device.iter().find(|x| x.id == id) {
                comparison.note = Some(format!(
                    "Compared across devices: the baseline ran on {}, this run on {}.",
                    x.baseline_device, x.current_device
                ));
            }
            bench.baseline = Some(comparison);
        }
        self
    }
}

/// One benchmark of the run, with its comparison against the baseline when there was
/// one.
#[derive(Debug, Clone)]
pub struct ReportBenchmark {
    /// The record the harness wrote (passed or failed).
    pub record: RawRecord,
    /// Its figures; computed from `record` while rendering when `None` (pass one to
    /// show exactly the figures the terminal showed).
    pub summary: Option<BenchmarkSummary>,
    /// The comparison against the baseline; `None` when the baseline has no record of
    /// this benchmark or no baseline was used.
    pub baseline: Option<BaselineComparison>,
    /// Element type of the work (`bf16`, `fp16`, `tf32`, `fp32`, `fp64`, `fp8`), used
    /// to pick the device peak for "% of peak". When `None` it is read from the id
    /// (`matmul_bf16/4096` → `bf16`); when neither says, no percentage is shown.
    pub dtype: Option<String>,
}

impl ReportBenchmark {
    /// A benchmark without a baseline comparison or explicit dtype.
    pub fn new(record: RawRecord) -> Self {
        ReportBenchmark {
            record,
            summary: None,
            baseline: None,
            dtype: None,
        }
    }
}

/// A benchmark's comparison with its baseline record.
#[derive(Debug, Clone)]
pub struct BaselineComparison {
    /// What the comparison made of it: compared (verdict, change interval), failed
    /// or not compared (with the reason).
    pub outcome: ComparisonOutcome,
    /// The baseline's per-iteration times of the compared timer, ns, one group per
    /// process, for the distribution chart; empty when unknown.
    pub baseline_processes_ns: Vec<Vec<f64>>,
    /// A sentence for the reader, e.g. that the devices differ.
    pub note: Option<String>,
    /// The baseline's kernels of one call, for the kernel table; empty when unknown.
    pub baseline_kernels: Vec<KernelStat>,
    /// The baseline's counts per call, when it counted.
    pub baseline_counters: Option<Counters>,
}

impl BaselineComparison {
    /// The comparison with the samples of `entry` (the baseline's file) that the
    /// outcome compared.
    pub fn new(outcome: ComparisonOutcome, entry: Option<&BaselineEntry>) -> Self {
        let kind = match &outcome {
            ComparisonOutcome::Compared { kind, .. } => *kind,
            _ => entry.map(|e| e.primary_kind()).unwrap_or(TimeKind::Wall),
        };
        let baseline_processes_ns = entry
            .map(|e| e.groups(kind))
            .unwrap_or_default()
            .into_iter()
            .filter(|g| !g.is_empty())
            .collect();
        BaselineComparison {
            outcome,
            baseline_processes_ns,
            note: None,
            baseline_kernels: entry.map(|e| e.kernels.clone()).unwrap_or_default(),
            baseline_counters: entry.and_then(|e| e.counters),
        }
    }

    /// The timer compared, when compared.
    pub fn kind(&self) -> Option<TimeKind> {
        match &self.outcome {
            ComparisonOutcome::Compared { kind, .. } => Some(*kind),
            _ => None,
        }
    }
}

/// What [`render`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportIndex {
    /// The summary page, `out_dir/index.html`: what to open.
    pub index: PathBuf,
    /// Each benchmark id with its page.
    pub pages: BTreeMap<String, PathBuf>,
    /// Every file written (pages, charts, stylesheet).
    pub files: Vec<PathBuf>,
}

/// Errors writing a report.
#[derive(Debug, Error)]
pub enum ReportError {
    /// A file or folder could not be written.
    #[error("failed to write {path}: {source}")]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A template failed to render (a bug in gpubench, not in the input).
    #[error("failed to render template {name}: {message}")]
    Template {
        /// The template.
        name: String,
        /// The cause, with tera's chain of sources.
        message: String,
    },
    /// A chart failed to draw.
    #[error("failed to draw chart {chart} for {id}: {message}")]
    Chart {
        /// The benchmark id.
        id: String,
        /// The chart.
        chart: String,
        /// The cause.
        message: String,
    },
    /// Two benchmarks share an id, so their pages would overwrite each other.
    #[error("failed to render report: benchmark id {0:?} appears more than once")]
    DuplicateId(String),
}

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
