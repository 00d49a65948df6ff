//! `cargo gpubench compare BASELINE CURRENT`: judges one stored side (a saved
//! baseline or a stored run) against another, with the statistics, output formats and
//! `--fail-on` gate of a run, without running anything. How the two arguments are
//! resolved is [`crate::store::references`].

use anyhow::{Context, Result};
use serde::Serialize;

use crate::build::discover::places;
use crate::cli::{CompareArgs, Format};
use crate::compare::{Absences, RunComparison};
use crate::console::{self, Console};
use crate::exit_code::Exit;
use crate::output::json::{attach_comparison, ExitVerdict, SUMMARY_FORMAT_VERSION};
use crate::output::markdown::{MarkdownSummary, ReportLink};
use crate::output::terminal::{
    align_cells, comparison_line, count_line, gate_line, render_comparison, render_failures,
    render_process_medians, render_quiet,
};
use crate::output::view::metrics;
use crate::output::view::table::{dash, Cell};
use crate::output::view::SummaryView;
use crate::store::manifest::BenchStatus;
use crate::store::references::SummaryEntry;
use crate::store::references::{self, Side};
use crate::store::Source;
use gpubench_analysis::baseline::Metric;

/// What `--format json` prints for `compare`.
#[derive(Debug, Serialize)]
pub struct CompareSummary<'a> {
    /// [`SUMMARY_FORMAT_VERSION`].
    pub format_version: u32,
    /// The reference side.
    pub baseline: &'a Source,
    /// The judged side.
    pub current: &'a Source,
    /// The judged side's benchmarks, each with its comparison.
    pub benchmarks: &'a [SummaryEntry],
    /// The whole comparison, with verdict counts and ids on one side only.
    pub comparison: &'a RunComparison,
    /// How the command ends.
    pub exit: ExitVerdict,
}

/// Runs `compare`; see [`crate::exit_code`] for the codes.
pub fn run(args: &CompareArgs) -> Result<Exit> {
    let cwd = std::env::current_dir().context("failed to read the current directory")?;
    let places = places(
        args.manifest_path.as_deref(),
        args.out_dir.as_deref(),
        args.baselines_dir.as_deref(),
        &cwd,
    )?;
    let load = |what: &str, text: &str| -> Result<Side> {
        let resolved = references::resolve(text, &places)
            .with_context(|| format!("failed to resolve {what} `{text}`"))?;
        Side::load(&resolved).with_context(|| format!("failed to load {what} `{text}`"))
    };
    let old = load("BASELINE", &args.baseline)?;
    let new = load("CURRENT", &args.current)?;
    for side in [&old, &new] {
        for n in crate::store::baselines::ignored_notes(&side.ignored) {
            crate::console::note(format_args!("{n}"));
        }
    }

    let (entries, unusable) = old.as_baseline();
    let mut absences = match &new.manifest {
        Some(manifest) => Absences::of_run(manifest),
        None => Absences::of_side(&new.source),
    };
    absences.unusable_baseline = unusable
        .into_iter()
        .map(|(id, why)| (id, why.to_string()))
        .collect();
    let comparison = RunComparison::judge_with(
        &new.records,
        &entries,
        old.source.clone(),
        args.verdicts.settings(),
        &absences,
    )
    .with_context(|| {
        format!(
            "failed to compare {} with {}",
            new.source.describe(),
            old.source.describe()
        )
    })?;
    if let Some(msg) = comparison.device_mismatch_message() {
        crate::console::warning(format_args!("{msg}"));
    }
    let mut rows = new.entries.clone();
    attach_comparison(&mut rows, &comparison);
    let failed = rows.iter().any(|e| e.status == BenchStatus::Failed);
    let exit = Exit::of_verdicts(false, failed, comparison.gate_tripped);

    let subject = format!(
        "{} against {}",
        new.source.describe(),
        old.source.describe()
    );
    // Made once, and only when Markdown is written: it reads the baseline's history.
    let markdown = std::cell::OnceCell::new();
    let markdown = || {
        markdown.get_or_init(|| {
            MarkdownSummary {
                subject: &subject,
                // compare writes no report; a URL given still says where one is.
                report: ReportLink::of(args.verdicts.report_url.as_deref(), None),
                entries: &rows,
                comparison: Some(&comparison),
                exit,
            }
            .render_with_drifts()
        })
    };
    match args.format {
        Format::Human => console::print_stdout(&render_human(
            &old,
            &new,
            &rows,
            &comparison,
            exit,
            console::get(),
        )),
        Format::Markdown => print!("{}", markdown()),
        // The judged side's figures, as a run would export them.
        Format::GithubActionBenchmark => print!(
            "{}",
            crate::output::json::pretty_json(&crate::output::exports::github_action_benchmark(
                &rows
            ))
        ),
        Format::Bmf => print!(
            "{}",
            crate::output::json::pretty_json(&crate::output::exports::bmf(&rows))
        ),
        Format::Json => {
            let doc = CompareSummary {
                format_version: SUMMARY_FORMAT_VERSION,
                baseline: &old.source,
                current: &new.source,
                benchmarks: &rows,
                comparison: &comparison,
                exit: exit.into(),
            };
            crate::output::json::print_document(&doc);
        }
    }
    if let Some(path) = &args.verdicts.summary_file {
        crate::output::markdown::write_summary_file(&cwd.join(path), markdown())?;
    }
    Ok(exit)
}

/// The terminal output: both sides, a compact table, failures and the comparison;
/// with `-q` only the failure and verdict lines and the closing ones, with `-v` each
/// process's median of CURRENT too.
fn render_human(
    old: &Side,
    new: &Side,
    rows: &[SummaryEntry],
    comparison: &RunComparison,
    exit: Exit,
    console: Console,
) -> String {
    let view = SummaryView::build(rows, Some(comparison));
    if console.quiet() {
        let mut out = render_quiet(&view, console);
        out.push_str(&format!("{}\n", count_line(rows)));
        out.push_str(&comparison_line(comparison));
        out.push_str(&gate_line(comparison, rows, exit, console));
        return out;
    }
    let mut out = format!(
        "comparing {} ({}) with {} ({}) as the baseline\n\n",
        new.source.describe(),
        new.source.path,
        old.source.describe(),
        old.source.path
    );
    let header = vec![
        "benchmark".to_string(),
        "baseline median".to_string(),
        "current median".to_string(),
        format!(
            "change [{:.0}% CI]",
            comparison.settings.config.confidence * 100.0
        ),
        "verdict".to_string(),
    ];
    let table: Vec<Vec<Cell>> = view
        .compared_rows()
        .map(|(e, row)| {
            let time = comparison
                .get(&e.id)
                .and_then(|b| metrics::time(&b.outcome));
            let fmt = gpubench_record::units::format_ns;
            let current = time.map(|c| c.current_estimate).or_else(|| {
                e.summary
                    .as_ref()
                    .and_then(|s| s.primary())
                    .map(|p| p.estimate.point)
            });
            // The time verdict's plain label: the change column holds the figures.
            let word = match row.verdict(Metric::Time) {
                Some(m) => Cell::toned(m.verdict.label().to_string(), m.tone()),
                None => row.word.clone(),
            };
            vec![
                e.name.clone().into(),
                time.map_or_else(dash, |c| fmt(c.baseline_estimate)).into(),
                current.map_or_else(dash, fmt).into(),
                row.verdict(Metric::Time)
                    .and_then(|m| m.change.clone())
                    .unwrap_or_else(dash)
                    .into(),
                word,
            ]
        })
        .collect();
    out.push_str(&align_cells(&header, &table, console));
    if console.verbose() {
        out.push_str(&render_process_medians(rows));
    }
    out.push_str(&render_failures(rows, console));
    out.push_str(&format!("\n{}\n", count_line(rows)));
    out.push_str(&render_comparison(&view, exit, console));
    out
}
