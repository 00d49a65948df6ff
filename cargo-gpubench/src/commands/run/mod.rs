//! `cargo gpubench [run]` from start to end: discover, build, list, select, load the
//! baseline, run, store, compare, render the HTML report, save the baseline,
//! summarise. This is the edge where the typed errors of the other modules get their
//! context.

use std::ffi::OsString;

use anyhow::{Context, Result};

use crate::cli::{Format, ProcessDefaults, RunArgs};
use crate::execute::devices;
use crate::execute::select::{self, Benchmark, Filter, Ignored};
use crate::exit_code::Exit;
use crate::format::plural;
use crate::output::html::run_report::{self};
use crate::store::baselines::{self};
use crate::store::manifest::Selection;
use crate::store::runs::RunStore;
use gpubench_record::protocol::GIT_COMMIT_VAR;

mod cpu_threads;
mod session;

use crate::commands::prepare::prepare_benchmarks;
use session::{Baselines, Session};

/// Runs benchmarks as `args` say; `command_line` is recorded in the run's manifest.
pub(crate) fn run(args: &RunArgs, command_line: &[OsString]) -> Result<Exit> {
    let stop = crate::execute::process::interrupt_flag()?;
    // Checked together before anything is built or started, by the harness's own
    // rules: settings it would refuse fail here once, not in every process.
    let opts = args
        .measure
        .run_options(&args.process, ProcessDefaults::run())
        .context("failed to check the measurement options")?;
    let user_threads = cpu_threads::UserThreads::from_env()?;

    let Some((prepared, libtorch)) = prepare_benchmarks(&args.sources(), &stop)? else {
        return Ok(Exit::Interrupted);
    };
    let mut env = crate::execute::process::for_benchmarks(
        &libtorch,
        &prepared.native_paths,
        &prepared.target_dir,
        &crate::cli::option_env_vars(),
    );
    if let Some(from) = &prepared.archive {
        // The records are of the commit the archive was built from (none: empty), not
        // of whatever repository the run happens to be in.
        let commit = from
            .extracted
            .manifest
            .git_commit
            .clone()
            .unwrap_or_default();
        env.set.push((GIT_COMMIT_VAR.into(), commit.into()));
    }

    // Listed for the device they will run on: their arguments may depend on it. The
    // GPUs of `--devices` are of one model; `all` is the harness's default device.
    let list_device = match &args.spread.devices {
        Some(devices::DeviceList::Listed(labels)) => labels.first().map(String::as_str),
        _ => args.process.device.as_deref(),
    };
    let Some((all, harnesses)) = crate::execute::listing::list_all(
        &prepared.executables,
        list_device,
        &env,
        args.process.timeout,
        &stop,
    )?
    else {
        return Ok(Exit::Interrupted);
    };

    let filter = args.select.filter();
    if args.list {
        // A filter that matches nothing fails as a run of it would (2), so a script
        // that lists first learns the same as one that runs.
        if !all.iter().any(|b| listed(b, &filter)) {
            return Err(select::explain_empty(&all, &filter).into());
        }
        let shown: Vec<Benchmark> = match args.spread.partition {
            // As nextest does: the part a run with this `--partition` measures.
            Some(p) => {
                let selected = select::select(&all, &filter);
                let part = p.split(&selected);
                crate::console::status(format_args!(
                    "partition {p}: {} of the {} selected benchmarks",
                    part.len(),
                    selected.len()
                ));
                part
            }
            None => all.iter().filter(|b| listed(b, &filter)).cloned().collect(),
        };
        print_list(shown, args.output.format);
        // A run of these would be refused: say so now, not at run time.
        let shown: Vec<Benchmark> = all
            .iter()
            .filter(|b| filter.matches_name(b))
            .cloned()
            .collect();
        if let Err(e) = select::check_unique_ids(&shown) {
            crate::console::warning(format_args!("{e}"));
        }
        return Ok(Exit::Success);
    }

    let selected = select::select(&all, &filter);
    if selected.is_empty() {
        return Err(select::explain_empty(&all, &filter).into());
    }
    select::check_unique_ids(&selected)?;
    let mut selection = Selection {
        all_targets: args.prebuilt.exes.is_empty()
            && args.targets.packages.is_empty()
            && args.targets.benches.is_empty(),
        filtered_out: all
            .iter()
            .filter(|b| !filter.selects(b))
            .map(|b| b.id.clone())
            .collect(),
        other_parts: Vec::new(),
    };
    selection.filtered_out.sort();
    let selected = match args.spread.partition {
        None => selected,
        Some(p) => {
            let part = p.split(&selected);
            crate::console::status(format_args!(
                "partition {p}: {} of the {} selected benchmarks",
                part.len(),
                selected.len()
            ));
            if part.is_empty() {
                crate::console::status(format_args!(
                    "partition {p} holds no benchmark: nothing to run"
                ));
                return Ok(Exit::Success);
            }
            selection.other_parts = selected
                .iter()
                .filter(|b| !part.iter().any(|x| x.id == b.id))
                .map(|b| b.id.clone())
                .collect();
            selection.other_parts.sort();
            part
        }
    };
    if let Some(device) = args.process.device.as_deref() {
        let asked = format!("--device {device}");
        devices::check(
            &selected[0].exe,
            device,
            &asked,
            &env,
            args.process.timeout,
            &stop,
        )?;
    }
    let devices = match &args.spread.devices {
        Some(list) => {
            let found =
                devices::resolve(list, &selected[0].exe, &env, args.process.timeout, &stop)?;
            let named: Vec<String> = found
                .iter()
                .map(|d| format!("{} ({})", d.label, d.model))
                .collect();
            crate::console::status(format_args!(
                "measuring on {} device{} at once: {}",
                found.len(),
                plural(found.len()),
                named.join(", ")
            ));
            found
        }
        None => Vec::new(),
    };

    // Loaded before anything runs: a missing or corrupt baseline stops the run before
    // it spends time, and a run that saves over it is compared with it as it was.
    let cwd = std::env::current_dir().context("failed to read the current directory")?;
    let baseline_store = baselines::store(
        args.baselines.baselines_dir.as_deref(),
        &prepared.workspace_root,
        &cwd,
    );
    // From an archive, the baselines it bundles are compared with (a saved one goes to
    // the usual place: it must outlive the extracted archive).
    let compare_store = match &prepared.archive {
        Some(from) if args.baselines.baselines_dir.is_none() => {
            gpubench_analysis::BaselineStore::new(from.extracted.baselines_root())
        }
        _ => baseline_store.clone(),
    };
    // `--save-baseline` saves: it compares (and so gates) only with a baseline named
    // by `--baseline`, never with `main` by default (`BaselineArgs::wanted`).
    let save_as = args.baselines.save_baseline.as_deref();
    let baseline = baselines::load_for_run(&args.baselines.wanted(), &compare_store)?;
    if let Some(b) = &baseline {
        crate::commands::present::announce_baseline(b);
    }
    if let Some(name) = save_as {
        baselines::check_save(&baseline_store, name)?;
        if let Some(b) = &baseline {
            crate::console::status(format_args!(
                "comparing with {} before saving `{name}`: its verdicts gate this run",
                b.source.describe()
            ));
        }
    }
    // CPU work measures on the threads of the baseline it compares with (or saves
    // over, so consecutive saves keep one count), whatever the host has free now.
    let threads = match (&baseline, save_as) {
        (Some(b), _) => cpu_threads::for_run(
            &b.source.name,
            cpu_threads::baseline_count(&b.entries),
            user_threads,
        ),
        (None, Some(name)) => {
            let over = [name, baselines::DEFAULT_BASELINE]
                .into_iter()
                .find_map(|n| Some((n, baseline_store.load(n).ok()?)));
            match over {
                Some((n, entries)) => {
                    cpu_threads::for_run(n, cpu_threads::baseline_count(&entries), user_threads)
                }
                None => cpu_threads::RunThreads::default(),
            }
        }
        (None, None) => cpu_threads::RunThreads::default(),
    };
    if let Some((var, value)) = threads.env() {
        env.set.push((var.into(), value.into()));
    }
    if let Some(note) = &threads.note {
        crate::console::note(format_args!("{note}"));
    }

    let store = match prepared.store {
        Some(store) => store,
        None => RunStore::open(&prepared.out_dir)?,
    };
    for note in store.mark_incomplete_runs()? {
        crate::console::note(format_args!("{note}"));
    }
    // A benchmark gets processes beyond its floor only while its processes have taken
    // less than twice its warm-up and measurement time.
    let budget = 2 * opts.time_per_benchmark;
    let session = Session {
        store: &store,
        opts: &opts,
        budget,
        env: &env,
        stop: &stop,
        format: args.output.format,
        devices,
        partition: args.spread.partition,
        selection,
        baselines: Baselines {
            store: &baseline_store,
            compare: baseline.as_ref(),
            save_as: args.baselines.save_baseline.as_deref(),
            settings: args.verdicts.settings(),
        },
        summary_file: args.verdicts.summary_file.as_ref().map(|p| cwd.join(p)),
        report_url: args.verdicts.report_url.clone(),
        report_dir: (!args.no_report).then(|| run_report::report_dir(store.dir())),
        archive: prepared
            .archive
            .as_ref()
            .map(|a| (a.describe(), a.extracted.dir.clone())),
    };
    crate::console::status(format_args!(
        "running {} benchmark{} (libtorch: {}, from {})",
        selected.len(),
        plural(selected.len()),
        libtorch.lib_dir.display(),
        libtorch.source
    ));
    session.run_all(&selected, &harnesses, &libtorch, command_line)
}

/// Whether `--list` shows `b`: its name matches, and with `--ignored` it is marked
/// ignored (without, ignored ones are shown marked).
fn listed(b: &Benchmark, filter: &Filter) -> bool {
    filter.matches_name(b) && (filter.ignored != Ignored::Only || b.ignored)
}

fn print_list(mut shown: Vec<Benchmark>, format: Format) {
    select::sort(&mut shown);
    match format {
        Format::Human | Format::Markdown | Format::GithubActionBenchmark | Format::Bmf => {
            for b in shown {
                let mark = if b.ignored { " (ignored)" } else { "" };
                println!("{}{mark}", b.qualified());
            }
        }
        Format::Json => {
            let items: Vec<serde_json::Value> = shown
                .iter()
                .map(|b| {
                    serde_json::json!({
                        "name": b.qualified(),
                        "package": b.package,
                        "target": b.target,
                        "id": b.id,
                        "ignored": b.ignored,
                        "executable": b.exe.display().to_string(),
                    })
                })
                .collect();
            println!(
                "{}",
                serde_json::to_string_pretty(&items).expect("lists always serialise")
            );
        }
    }
}
