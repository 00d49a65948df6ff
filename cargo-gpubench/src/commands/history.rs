//! `cargo gpubench history [FILTER]`: every committed version of a baseline read from
//! git ([`crate::store::history`]), each benchmark's series analysed
//! ([`gpubench_analysis::history`]), printed as a table, Markdown or JSON, and drawn
//! on the history page ([`crate::output::html::history`]).

use anyhow::{Context, Result};
use clap::ValueEnum;
use gpubench_analysis::history::HistoryOptions;

use crate::build::discover::places;
use crate::cli::{Format, HistoryArgs};
use crate::console;
use crate::exit_code::Exit;
use crate::exit_code::UsageError;
use crate::store::baselines::DEFAULT_BASELINE;
use crate::store::history::{self, HistoryQuery, IdFilter};

/// Runs `history`; see [`crate::cli::HISTORY_HELP`] for the codes.
pub(crate) fn run(args: &HistoryArgs) -> Result<Exit> {
    if matches!(
        args.store.format,
        Format::GithubActionBenchmark | Format::Bmf
    ) {
        return Err(UsageError(format!(
            "`history` prints --format human, json or markdown, not {}: the export formats \
             hold one run's figures (a run or `compare` writes them)",
            args.store
                .format
                .to_possible_value()
                .expect("every format has a name")
                .get_name()
        ))
        .into());
    }
    let cwd = std::env::current_dir().context("failed to read the current directory")?;
    let places = places(
        args.store.manifest_path.as_deref(),
        args.store.out_dir.as_deref(),
        args.baselines_dir.as_deref(),
        &cwd,
    )?;
    let name = args.baseline.as_deref().unwrap_or(DEFAULT_BASELINE);
    let dir = places.baselines.dir(name)?;
    let query = HistoryQuery {
        repo_dir: history::existing_ancestor(&dir),
        baseline_dir: dir.clone(),
        rev: args.rev.clone(),
        since: args.since.clone(),
        max_commits: args.max_commits.map(|n| n as usize),
    };
    let read = history::read(&query)
        .with_context(|| format!("failed to read the history of baseline `{name}`"))?;
    if read.versions.is_empty() {
        return Err(UsageError(format!(
            "baseline `{name}` has no committed version along the first-parent history of {}{}: \
             nothing under {} was committed there; save it (--save-baseline {name}) and commit it",
            args.rev,
            args.since
                .as_deref()
                .map(|s| format!(" since {s}"))
                .unwrap_or_default(),
            read.path
        ))
        .into());
    }
    let options = options(args);
    let filter = IdFilter {
        patterns: args.filters.clone(),
        exact: args.exact,
    };
    let report = history::analyse(name, read, &filter, &options);
    if report.benchmarks.is_empty() {
        return Err(UsageError(format!(
            "no benchmark of baseline `{name}` matches {}: its history holds none by that id",
            args.filters
                .iter()
                .map(|f| format!("`{f}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ))
        .into());
    }
    for u in &report.unreadable {
        console::warning(format_args!(
            "not read: {} at {} ({}): {}",
            u.path, u.commit.short, u.commit.subject, u.reason
        ));
    }
    if !args.no_report {
        let page = crate::output::html::history::write(
            &report,
            &places.out_dir.join(crate::output::html::HISTORY_DIR),
        )?;
        console::note(format_args!("history page: {}", page.display()));
    }
    let markdown = std::cell::OnceCell::new();
    let markdown = || markdown.get_or_init(|| crate::output::history::render_markdown(&report));
    match args.store.format {
        Format::Json => crate::output::json::print_document(&report),
        Format::Markdown => print!("{}", markdown()),
        _ => console::print_stdout(&crate::output::history::render_human(
            &report,
            console::get(),
        )),
    }
    if let Some(path) = &args.summary_file {
        crate::output::markdown::write_summary_file(&cwd.join(path), markdown())?;
    }
    Ok(Exit::Success)
}

/// The analysis settings the options ask for.
fn options(args: &HistoryArgs) -> HistoryOptions {
    HistoryOptions {
        min_change: args.min_change,
        cpu_min_change: args.cpu_min_change,
        energy_min_change: args.energy_min_change,
        drift_window: args.drift_window as usize,
        ..HistoryOptions::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};

    fn options_of(argv: &[&str]) -> HistoryOptions {
        let cli = Cli::parse_from_cargo(["cargo-gpubench", "history"].iter().chain(argv).copied())
            .unwrap();
        match &cli.command {
            Some(Command::History(args)) => options(args),
            other => panic!("not history: {other:?}"),
        }
    }

    #[test]
    fn the_floors_of_energy_and_the_cpu_are_options() {
        let default = options_of(&[]);
        assert_eq!(default, HistoryOptions::default());
        let set = options_of(&["--energy-min-change", "20%", "--cpu-min-change", "0.15"]);
        assert_eq!(
            (set.energy_min_change, set.cpu_min_change, set.min_change),
            (0.2, 0.15, default.min_change)
        );
    }
}
