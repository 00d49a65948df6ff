//! `cargo gpubench compare BASELINE CURRENT`: judges one stored side (a saved
//! baseline or a stored run) against another, with the statistics, output formats and
//! `--fail-on` gate of a run, without running anything. How the two arguments are
//! resolved is [`crate::store::references`].

use anyhow::{Context, Result};
use serde::Serialize;

use crate::build::discover::places;
use crate::cli::{CompareArgs, Format};
use crate::compare::summary::{attach_comparison, ExitVerdict, SUMMARY_FORMAT_VERSION};
use crate::compare::{Absences, RunComparison};
use crate::console;
use crate::exit_code::Exit;
use crate::output::markdown::{MarkdownSummary, ReportLink};
use crate::output::terminal::render_sides;
use crate::output::view::SummaryView;
use crate::store::manifest::BenchStatus;
use crate::store::references::SummaryEntry;
use crate::store::references::{self, Side};
use crate::store::Source;

/// What `--format json` prints for `compare`.
#[derive(Debug, Serialize)]
pub(crate) struct CompareSummary<'a> {
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
pub(crate) fn run(args: &CompareArgs) -> Result<Exit> {
    let cwd = std::env::current_dir().context("failed to read the current directory")?;
    let places = places(
        args.store.manifest_path.as_deref(),
        args.store.out_dir.as_deref(),
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
    match args.store.format {
        Format::Human => console::print_stdout(&render_sides(
            &old.source,
            &new.source,
            &SummaryView::build(&rows, Some(&comparison)),
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
