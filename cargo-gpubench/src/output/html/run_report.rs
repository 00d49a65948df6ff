//! The HTML report of a stored run, in `<out-dir>/report/`: built from the run's
//! records and, when the run was compared with a baseline, from the comparison stored
//! with it and the copy of the baseline it was judged against. A run renders it when
//! it ends and `cargo gpubench report` renders it again ([`crate::commands::report`]);
//! both go through [`render_run`], so they show the same thing. The pages themselves
//! are [`crate::output::html`].

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use gpubench_analysis::BaselineStore;
use gpubench_record::record::RawRecord;

use super::input::{PartLine, ReportIndex, ReportInput};
use crate::compare::{RunComparison, BASELINE_COPY};
use crate::store::manifest::{BenchStatus, MergedPart, RunManifest, MANIFEST_FILE};
use crate::store::references::SummaryEntry;

/// The report's directory inside the output directory.
pub const REPORT_DIR: &str = "report";

/// Where the report of runs stored in `out_dir` goes.
pub fn report_dir(out_dir: &Path) -> PathBuf {
    out_dir.join(REPORT_DIR)
}

/// A stored run, as the report needs it.
#[derive(Debug, Clone, Copy)]
pub struct StoredRun<'a> {
    /// Its id.
    pub id: &'a str,
    /// Its directory (`runs/<id>/`), holding `comparison.json` when it was compared.
    pub dir: &'a Path,
    /// Its records, in run order.
    pub records: &'a [RawRecord],
    /// Its benchmarks as the summary showed them; their figures are reused so the
    /// report shows exactly what the terminal did.
    pub entries: &'a [SummaryEntry],
}

/// Renders the report of `run` into `report_dir`, replacing the report there in one
/// step: it is rendered beside it and swapped in, so a reader never sees half of one
/// and two renders (a run ending while `cargo gpubench report` runs) wait for each
/// other instead of mixing their pages.
pub fn render_run(run: StoredRun<'_>, report_dir: &Path) -> Result<ReportIndex> {
    let mut input = input(run)?;
    if let Some(shown) = report_dir.parent().and_then(super::history::ShownIds::read) {
        for b in &mut input.benchmarks {
            b.history = shown.link(&b.record.id, 1);
        }
    }
    let index = gpubench_analysis::atomic_dir::rebuild(report_dir, |staged| {
        super::render(&input, staged)
            .map(|index| (index, staged.to_path_buf()))
            .map_err(anyhow::Error::from)
    })
    .with_context(|| {
        format!(
            "failed to render the HTML report in {}",
            report_dir.display()
        )
    })?;
    let (index, staged) = index;
    let moved = |p: PathBuf| match p.strip_prefix(&staged) {
        Ok(rest) => report_dir.join(rest),
        Err(_) => p,
    };
    Ok(ReportIndex {
        index: moved(index.index),
        pages: index
            .pages
            .into_iter()
            .map(|(id, page)| (id, moved(page)))
            .collect(),
        files: index.files.into_iter().map(moved).collect(),
    })
}

/// What the report of `run` shows.
fn input(run: StoredRun<'_>) -> Result<ReportInput> {
    let mut input = ReportInput::new(format!("gpubench run {}", run.id), run.records.to_vec());
    input.generated_at = Some(chrono::Utc::now().format("%Y-%m-%d %H:%M UTC").to_string());
    for bench in &mut input.benchmarks {
        let entry = run.entries.iter().find(|e| e.id == bench.record.id);
        bench.summary = entry.and_then(|e| e.summary.clone());
        bench.name = entry.map(|e| e.name.clone());
    }
    // A merged run lists its parts and what it lacks of them (a directory rendered
    // without a manifest, as tests make, has none).
    let manifest_file = run.dir.join(MANIFEST_FILE);
    if manifest_file.is_file() {
        let manifest = RunManifest::read(&manifest_file)
            .with_context(|| format!("failed to read the manifest of run `{}`", run.id))?;
        input.parts = manifest.merged_from.iter().map(part_line).collect();
        input.gaps = manifest.gaps;
    }
    input.not_run = run
        .entries
        .iter()
        .filter(|e| matches!(e.status, BenchStatus::Interrupted | BenchStatus::Pending))
        .map(|e| e.name.clone())
        .collect();
    let comparison = RunComparison::read(run.dir)
        .with_context(|| format!("failed to read the comparison of run `{}`", run.id))?;
    let Some(comparison) = comparison else {
        return Ok(input);
    };
    let entries = BaselineStore::new(run.dir)
        .load(BASELINE_COPY)
        .with_context(|| {
            format!(
                "failed to load the copy of {} stored with run `{}`",
                comparison.baseline.describe(),
                run.id
            )
        })?;
    let mut input = input
        .with_baseline(&comparison.baseline.name, &entries, &comparison.set)
        .with_missing(&comparison);
    // Named as the terminal names them, where the run knows their bench target.
    let name_of = |id: &str| comparison.name_of(id, run.entries);
    for m in &mut input.missing {
        m.id = name_of(&m.id);
    }
    for id in input
        .not_selected
        .iter_mut()
        .chain(input.missing_in_current.iter_mut())
    {
        *id = name_of(id);
    }
    Ok(input)
}

/// How the report lists `part`, one run a merged run folded in.
fn part_line(part: &MergedPart) -> PartLine {
    let device = match part.device_models.as_slice() {
        [] => part.device.clone(),
        models => format!("{} ({})", part.device, models.join(", ")),
    };
    PartLine {
        run_id: part.run_id.clone(),
        partition: part.partition.clone().unwrap_or_default(),
        device,
        status: serde_json::to_value(part.status)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default(),
        benchmarks: part.benchmarks,
    }
}
