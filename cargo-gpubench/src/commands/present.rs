//! What a command that stores a run (a run, `ab`, `merge`) does once the run is
//! stored and judged ([`show_run`]): renders its HTML report, saves its baseline,
//! prints its summary in the chosen format, writes `--summary-file`, and says where
//! the report went.

use std::path::{Path, PathBuf};

use anyhow::Result;
use gpubench_record::record::RawRecord;

use crate::cli::Format;
use crate::compare::summary::RunSummary;
use crate::console;
use crate::exit_code::Exit;
use crate::output::exports;
use crate::output::html::run_report::{self, StoredRun};
use crate::output::json::pretty_json;
use crate::output::markdown::{write_summary_file, MarkdownSummary, ReportLink};
use crate::store::baselines::SavedBaseline;

/// Says which baseline a command compares with, and names the files beside it that
/// are not baseline files.
pub(crate) fn announce_baseline(baseline: &crate::store::baselines::LoadedBaseline) {
    let (line, notes) = baseline.announcement();
    console::status(format_args!("{line}"));
    for n in notes {
        console::note(format_args!("{n}"));
    }
}

/// Renders the HTML report of the run stored in `run_dir` into `report_dir`; a
/// failure is returned as its message, so the command still saves its baseline and
/// prints its summary.
pub(crate) fn render_report(
    run_dir: &Path,
    records: &[RawRecord],
    summary: &RunSummary,
    report_dir: &Path,
) -> Result<PathBuf, String> {
    let stored = StoredRun {
        id: &summary.run_id,
        dir: run_dir,
        records,
        entries: &summary.benchmarks,
    };
    run_report::render_run(stored, report_dir)
        .map(|index| index.index)
        .map_err(|e| crate::error::message(&e))
}

/// Prints `summary` on stdout in `format` and writes its Markdown to `summary_file`.
pub(crate) fn print_summary(
    summary: &RunSummary,
    format: Format,
    summary_file: Option<&Path>,
) -> Result<()> {
    let subject = match &summary.ab {
        Some(ab) => format!(
            "{}, {} (run `{}`)",
            ab.subject(),
            ab.how_short(),
            summary.run_id
        ),
        None => format!("run `{}`", summary.run_id),
    };
    // Made once, and only when Markdown is written: it reads the baseline's history.
    let markdown = std::cell::OnceCell::new();
    let markdown = || {
        markdown.get_or_init(|| {
            MarkdownSummary {
                subject: &subject,
                report: ReportLink::of(summary.report_url.as_deref(), summary.report.as_deref()),
                entries: &summary.benchmarks,
                comparison: summary.comparison.as_ref(),
                exit: summary.exit_code(),
            }
            .render_with_drifts()
        })
    };
    match format {
        Format::Human => console::print_stdout(&summary.render_human(console::get())),
        Format::Json => crate::output::json::print_document(summary),
        Format::Markdown => print!("{}", markdown()),
        Format::GithubActionBenchmark => print!(
            "{}",
            pretty_json(&exports::github_action_benchmark(&summary.benchmarks))
        ),
        Format::Bmf => print!("{}", pretty_json(&exports::bmf(&summary.benchmarks))),
    }
    if let Some(path) = summary_file {
        write_summary_file(path, markdown())?;
    }
    Ok(())
}

/// Says on stderr where the report was written, or why it was not and how to render
/// it again.
pub(crate) fn announce_report(summary: &RunSummary, format: Format) {
    match (&summary.report, &summary.report_error) {
        (Some(index), _) if format != Format::Json && !console::get().quiet() => {
            eprintln!("report: {index}")
        }
        (_, Some(error)) => eprintln!(
            "error: {error} (the records are kept in {}; `cargo gpubench report {}` \
             renders it again)",
            summary.run_dir, summary.run_id
        ),
        _ => {}
    }
}

/// Shows a run stored in `run_dir` and judged: renders its HTML report into
/// `report_dir` (`None`: `--no-report`), saves its baseline (`save`), prints its
/// summary in `format` (and its Markdown to `summary_file`) and says where the report
/// went. The summary is printed even when saving fails, so the run is not lost from
/// view; the error then decides the exit code.
pub(crate) fn show_run(
    mut summary: RunSummary,
    run_dir: &Path,
    records: &[RawRecord],
    report_dir: Option<&Path>,
    save: impl FnOnce() -> Result<Option<SavedBaseline>>,
    format: Format,
    summary_file: Option<&Path>,
) -> Result<Exit> {
    if let Some(dir) = report_dir {
        let report = render_report(run_dir, records, &summary, dir);
        summary = summary.with_report(report);
    }
    let saved = save();
    if let Ok(s) = &saved {
        summary.saved_baseline = s.clone();
    }
    print_summary(&summary, format, summary_file)?;
    announce_report(&summary, format);
    saved?;
    Ok(summary.exit_code())
}
