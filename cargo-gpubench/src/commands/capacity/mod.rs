//! `cargo gpubench capacity`: finds the largest size of each capacity benchmark that
//! fits in device memory (the search of `gpubench_analysis::capacity`), each probe in
//! a fresh process ([`search`]), under the lock of `<out-dir>/capacity/`; stores (also
//! what an interrupted search finished), shows and charts ([`report`]) and compares
//! the results with a capacity baseline ([`baseline`]).

mod baseline;
mod report;
mod search;
#[cfg(test)]
mod tests;

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, Result};
use gpubench_analysis::capacity::{CapacityFinding, CapacityResult, CapacityVerdict, SearchEnd};
use gpubench_record::id::file_stem_for_id;

use crate::cli::{CapacityArgs, Format};
use crate::commands::prepare::prepare_benchmarks;
use crate::console;
use crate::execute::process::ChildEnv;
use crate::exit_code::Exit;
use crate::exit_code::UsageError;
use crate::output::json::print_document;
use crate::store::runs::RunStore;
use search::{Listed, Searched};

/// Runs the capacity search of every selected capacity benchmark.
pub(crate) fn run(args: &CapacityArgs) -> Result<Exit> {
    let stop = crate::execute::process::interrupt_flag()?;
    check_options(args)?;
    let Some((prepared, libtorch)) = prepare_benchmarks(&args.sources(), &stop)? else {
        return Ok(Exit::Interrupted);
    };
    let env = crate::execute::process::for_benchmarks(
        &libtorch,
        &prepared.native_paths,
        &prepared.target_dir,
        &crate::cli::option_env_vars(),
    );
    let out = prepared.out_dir.join("capacity");
    // Held until the end: a second search on this output directory would remove
    // this one's probe records and overwrite its results.
    let _lock = RunStore::open(&out).context("failed to start the capacity search")?;
    let mut listed = Vec::new();
    for exe in &prepared.executables {
        listed.extend(search::list_capacity(
            &exe.path,
            &env,
            args.process.timeout,
            &stop,
        )?);
    }
    let filters = &args.filters;
    listed.retain(|l| filters.is_empty() || filters.iter().any(|f| l.name.contains(f.as_str())));
    if listed.is_empty() {
        return Err(UsageError(
            "no capacity benchmark matches: declare one with #[gpu_bench(capacity = \"batch\", args = [256])] \
             (the FILTERs match its name)"
                .into(),
        )
        .into());
    }
    let baselines = baseline::capacity_baselines_dir(
        args.baselines.baselines_dir.as_deref(),
        &prepared.workspace_root,
    );

    let searches = search_all(&listed, args, &env, &out, &stop)?;
    // Whole searches: compared and saved as a baseline.
    let finished: Vec<&CapacityResult> = searches
        .results
        .iter()
        .filter(|r| !matches!(r.end, SearchEnd::Interrupted | SearchEnd::Failed))
        .collect();
    // Compared with the baseline before a save overwrites it.
    let (findings, missing) = baseline::judge(args.baselines.wanted(), &baselines, &finished)?;
    match &args.baselines.save_baseline {
        Some(name) if searches.interrupted => console::warning(format_args!(
            "capacity baseline `{name}` not saved: the search was interrupted (the results \
             that finished are in {})",
            out.display()
        )),
        Some(name) => baseline::save(name, &baselines, &finished, listed.len())?,
        None => {}
    }
    std::fs::write(
        out.join("index.html"),
        report::html_page(&searches.results, &searches.charts, &findings, &missing),
    )
    .context("failed to write the capacity report")?;
    print_results(args.output.format, &searches, &findings, &missing, &out);

    let unfit = searches
        .results
        .iter()
        .any(|r| r.end == SearchEnd::NothingFits || r.probes.iter().any(|p| p.failure.is_some()));
    Ok(Exit::of_verdicts(
        searches.interrupted,
        unfit || !searches.failed.is_empty(),
        findings
            .iter()
            .any(|f| f.verdict == CapacityVerdict::Regressed),
    ))
}

/// Refuses search options that cannot work, before anything is built.
fn check_options(args: &CapacityArgs) -> Result<()> {
    if !(args.resolution > 0.0 && args.resolution < 1.0) {
        return Err(UsageError(format!(
            "--resolution must be strictly between 0 and 1, got {}",
            args.resolution
        ))
        .into());
    }
    if args.max_probes < 2 {
        return Err(UsageError("--max-probes must be at least 2".into()).into());
    }
    if args.repeats == 0 {
        return Err(UsageError("--repeats must be at least 1".into()).into());
    }
    Ok(())
}

/// What the searches of a capacity run ended with.
struct Searches {
    /// Every search that probed something, in order.
    results: Vec<CapacityResult>,
    /// Each result's chart, drawn once for its file and the page.
    charts: Vec<String>,
    /// The searches an error stopped: `(name, error)`.
    failed: Vec<(String, String)>,
    /// Whether Ctrl-C stopped them.
    interrupted: bool,
}

/// Searches `listed` one after another, each result and chart saved in `out` as
/// soon as it ends, until all are done or Ctrl-C stops them.
fn search_all(
    listed: &[Listed],
    args: &CapacityArgs,
    env: &ChildEnv,
    out: &Path,
    stop: &AtomicBool,
) -> Result<Searches> {
    let mut searches = Searches {
        results: Vec::new(),
        charts: Vec::new(),
        failed: Vec::new(),
        interrupted: false,
    };
    for bench in listed {
        if stop.load(Ordering::SeqCst) {
            searches.interrupted = true;
            break;
        }
        let Searched { result: r, error } = search::search(bench, args, env, out, stop);
        if let Some(e) = error {
            console::warning(format_args!(
                "capacity search of {} failed: {e}{}",
                bench.name,
                if r.probes.is_empty() {
                    String::new()
                } else {
                    format!(" (the {} probes before it are saved)", r.probes.len())
                }
            ));
            searches.failed.push((bench.name.clone(), e));
            if r.probes.is_empty() {
                continue;
            }
        }
        // Saved as soon as it ends, so a later search's failure loses nothing.
        let stem = file_stem_for_id(&r.name);
        baseline::write_json(&out.join(format!("{stem}.json")), &r)?;
        let chart = report::chart_svg(&r);
        std::fs::write(out.join(format!("{stem}.svg")), &chart)
            .with_context(|| format!("failed to write the chart of {}", r.name))?;
        if r.end == SearchEnd::NothingFits {
            console::warning(format_args!(
                "capacity search of {} failed: no {} fits, not even 1: the benchmark \
                 needs more memory than the device{} gives it (exit code 1)",
                r.name,
                r.unit,
                if args.memory_fraction.is_some() {
                    " under --memory-fraction"
                } else {
                    ""
                }
            ));
        }
        searches.interrupted = r.end == SearchEnd::Interrupted;
        searches.results.push(r);
        searches.charts.push(chart);
        if searches.interrupted {
            break;
        }
    }
    // Each search removed its own probe directory; their parent goes once empty.
    let _ = std::fs::remove_dir(out.join("probes"));
    Ok(searches)
}

/// Prints the results on stdout in `format`.
fn print_results(
    format: Format,
    searches: &Searches,
    findings: &[CapacityFinding],
    missing: &[String],
    out: &Path,
) {
    let results = &searches.results;
    match format {
        Format::Json => print_document(&report::json_document(
            results,
            findings,
            missing,
            &searches.failed,
        )),
        Format::Markdown => print!("{}", report::markdown(results, findings, missing)),
        _ => {
            for r in results {
                for line in r.report_lines() {
                    println!("{line}");
                }
            }
            for f in findings {
                println!(
                    "capacity {}: {} ({})",
                    f.name,
                    report::verdict_word(f.verdict),
                    f.reason
                );
            }
            for m in missing {
                println!("capacity missing: {m}");
            }
            println!("report: {}", out.join("index.html").display());
        }
    }
}
