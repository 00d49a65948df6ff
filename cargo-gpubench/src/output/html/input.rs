//! What a report is made from: the run's benchmarks with their records, summaries
//! and comparison with the baseline, and what rendering returns or fails with.

use std::collections::BTreeMap;
use std::path::PathBuf;

use gpubench_analysis::baseline::{BaselineEntry, ComparisonOutcome, ComparisonSet};
use gpubench_analysis::BenchmarkSummary;
use gpubench_record::kernels::{Counters, KernelStat};
use gpubench_record::measurement::TimeKind;
use gpubench_record::record::{Fingerprint, RawRecord};
use thiserror::Error;

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
    /// Ids the baseline has that this run did not run (without a judged comparison
    /// to say why; see `missing` and `not_selected`).
    pub missing_in_current: Vec<String>,
    /// The evidence the comparison lacks, each line with whether the gate let it pass.
    pub missing: Vec<MissingLine>,
    /// Baseline benchmarks this run left out on purpose (filters, other parts).
    pub not_selected: Vec<String>,
    /// Benchmarks of this run that never ran (it was interrupted or stopped before
    /// them): the report is incomplete and says so.
    pub not_run: Vec<String>,
    /// The runs a merged run folded into one (none for a run that measured its
    /// benchmarks itself), and what it lacks of them.
    pub parts: Vec<PartLine>,
    /// What a merged run lacks, each in words (parts cut short, missing or lost).
    pub gaps: Vec<String>,
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

    /// Attaches what `comparison` says is missing and what the run left out; the
    /// baseline ids the run lacks are then told apart by those two.
    pub fn with_missing(mut self, comparison: &crate::compare::RunComparison) -> Self {
        self.missing = comparison
            .missing_with_allowance()
            .into_iter()
            .map(|(m, allowed)| MissingLine {
                id: m.id.clone(),
                what: m.what(),
                reason: m.reason.clone(),
                allowed,
            })
            .collect();
        self.not_selected = comparison.not_selected.clone();
        self.missing_in_current.clear();
        self
    }
}

/// One piece of missing evidence as the report lists it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct MissingLine {
    /// The benchmark id.
    pub id: String,
    /// `not run`, `kernel time missing`, ...
    pub what: String,
    /// Why, with the fix where there is one.
    pub reason: String,
    /// Whether `--allow-missing` (or `--fail-on never`) let it pass.
    pub allowed: bool,
}

/// One benchmark of the run, with its comparison against the baseline when there was
/// one.
#[derive(Debug, Clone)]
pub struct ReportBenchmark {
    /// The record the harness wrote (passed or failed).
    pub record: RawRecord,
    /// The name the terminal shows, `<target>/<id>`; the record's id when the bench
    /// target is not known.
    pub name: Option<String>,
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
    /// The link from its page to its trend on the history page
    /// ([`super::history::link_for`]), when that page shows it.
    pub history: Option<String>,
}

impl ReportBenchmark {
    /// A benchmark without a baseline comparison or explicit dtype.
    pub fn new(record: RawRecord) -> Self {
        ReportBenchmark {
            record,
            name: None,
            summary: None,
            baseline: None,
            dtype: None,
            history: None,
        }
    }

    /// Its name as the report shows it: `<target>/<id>`, or the id alone when the
    /// bench target is not known.
    pub fn name(&self) -> &str {
        self.name.as_deref().unwrap_or(&self.record.id)
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

/// One run a merged run folded in, as its report lists it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct PartLine {
    /// Its run id.
    pub run_id: String,
    /// Its `--partition`, or empty when it ran every benchmark.
    pub partition: String,
    /// The device it ran on and the models measured, e.g. `cuda:0 (NVIDIA H200)`.
    pub device: String,
    /// Its state when merged (`completed`, `incomplete`, ...).
    pub status: String,
    /// How many benchmarks it selected.
    pub benchmarks: usize,
}
