//! `cargo gpubench [run]` from start to end: discover, build, list, select, load the
//! baseline, run, store, compare, render the HTML report, save the baseline,
//! summarise. This is the edge where the typed errors of the other modules get their
//! context.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use anyhow::{Context, Result};

use crate::build::compile::BenchExecutable;
use crate::build::libtorch::{self, Libtorch};
use crate::cli::{Format, RunArgs};
use crate::compare::VerdictSettings;
use crate::execute::process::ChildEnv;
use crate::execute::runner::RunOptions;
use crate::execute::select::{self, Benchmark, Filter, Ignored};
use crate::execute::{devices, listing};
use crate::exit_code::Exit;
use crate::format::plural;
use crate::output::html::run_report::{self};
use crate::store::baselines::{self};
use crate::store::manifest::Selection;
use crate::store::runs::RunStore;
use gpubench_analysis::protocol::{FREE_CORES_VAR, GIT_COMMIT_VAR, RECORD_DIR_VAR, ROUND_VAR};

mod prepare;
mod session;

pub(super) use prepare::{build_targets, cargo, discover_targets, hand_libtorch_to_the_build};
use prepare::{prepare_archive, prepare_executables, prepare_workspace};
use session::{Baselines, Session};

/// Runs benchmarks as `args` say; `command_line` is recorded in the run's manifest.
pub fn run(args: &RunArgs, command_line: &[OsString]) -> Result<Exit> {
    let stop = interrupt_flag()?;
    // Checked together before anything is built or started, by the harness's own
    // rules: settings it would refuse fail here once, not in every process.
    let defaults = args.process.defaults();
    args.process
        .measure
        .settings()
        .apply(defaults.clone())
        .context("failed to check the measurement options")?;

    let prepared = if let Some(file) = &args.archive {
        Some(prepare_archive(file, args)?)
    } else if args.exes.is_empty() {
        prepare_workspace(args, &stop)?
    } else {
        Some(prepare_executables(args)?)
    };
    let Some(prepared) = prepared else {
        return Ok(Exit::Interrupted);
    };

    // Found before the build when it was handed to it; else searched now, with the
    // build scripts' library paths too.
    let libtorch = match prepared.libtorch.clone() {
        Some(found) => found,
        None => libtorch::locate(&libtorch::Search::from_env(
            vec![prepared.workspace_root.clone()],
            prepared.native_paths.clone(),
        ))
        .context("failed to set up benchmark processes")?,
    };
    let mut env = child_env(&libtorch, &prepared.native_paths, &prepared.target_dir);
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
    let list_device = match &args.devices {
        Some(devices::DeviceList::Listed(labels)) => labels.first().map(String::as_str),
        _ => args.process.device.as_deref(),
    };
    let Some((all, harnesses)) = list_benchmarks(
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
        let shown: Vec<Benchmark> = match args.partition {
            // As nextest does: the part a run with this `--partition` measures.
            Some(p) => {
                let selected = select::select(&all, &filter);
                let part = p.split(&selected);
                crate::output::console::status(format_args!(
                    "partition {p}: {} of the {} selected benchmarks",
                    part.len(),
                    selected.len()
                ));
                part
            }
            None => all.iter().filter(|b| listed(b, &filter)).cloned().collect(),
        };
        print_list(shown, args.format);
        // A run of these would be refused: say so now, not at run time.
        let shown: Vec<Benchmark> = all
            .iter()
            .filter(|b| filter.matches_name(b))
            .cloned()
            .collect();
        if let Err(e) = select::check_unique_ids(&shown) {
            crate::output::console::warning(format_args!("{e}"));
        }
        return Ok(Exit::Success);
    }

    let selected = select::select(&all, &filter);
    if selected.is_empty() {
        return Err(select::explain_empty(&all, &filter).into());
    }
    select::check_unique_ids(&selected)?;
    let mut selection = Selection {
        all_targets: args.exes.is_empty()
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
    let selected = match args.partition {
        None => selected,
        Some(p) => {
            let part = p.split(&selected);
            crate::output::console::status(format_args!(
                "partition {p}: {} of the {} selected benchmarks",
                part.len(),
                selected.len()
            ));
            if part.is_empty() {
                crate::output::console::status(format_args!(
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
    let devices = match &args.devices {
        Some(list) => {
            let found =
                devices::resolve(list, &selected[0].exe, &env, args.process.timeout, &stop)?;
            let named: Vec<String> = found
                .iter()
                .map(|d| format!("{} ({})", d.label, d.model))
                .collect();
            crate::output::console::status(format_args!(
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
    let baseline = baselines::load_for_run(&args.baselines, &compare_store)?;
    if let Some(b) = &baseline {
        crate::commands::present::announce_baseline(b);
    }
    if let Some(name) = args.baselines.save_baseline.as_deref() {
        baselines::check_save(&baseline_store, name)?;
    }

    let store = match prepared.store {
        Some(store) => store,
        None => RunStore::open(&prepared.out_dir)?,
    };
    for note in store.mark_incomplete_runs()? {
        crate::output::console::note(format_args!("{note}"));
    }
    let processes = args.process.process_policy();
    let measurement_time = args
        .process
        .measure
        .measurement_time
        .unwrap_or(defaults.measurement_time_s);
    let warmup_time = args
        .process
        .measure
        .warm_up_time
        .unwrap_or(defaults.warmup_time_s);
    let opts = RunOptions {
        device: args.process.device.clone(),
        quick: args.process.quick,
        flush_l2: args.process.flush_l2,
        timeout: args.process.timeout,
        processes,
        measurement_time_s: RunOptions::split_measurement_time(measurement_time, &processes),
        measure: args.process.measure.clone(),
    };
    // A benchmark gets rounds beyond its floor only while its processes have taken
    // less than twice its warm-up and measurement time.
    let budget = std::time::Duration::from_secs_f64(2.0 * (warmup_time + measurement_time));
    let session = Session {
        store: &store,
        opts: &opts,
        budget,
        env: &env,
        stop: &stop,
        format: args.format,
        devices,
        partition: args.partition,
        selection,
        baselines: Baselines {
            store: &baseline_store,
            compare: baseline.as_ref(),
            save_as: args.baselines.save_baseline.as_deref(),
            settings: VerdictSettings::from_args(&args.verdicts),
        },
        summary_file: args.verdicts.summary_file.as_ref().map(|p| cwd.join(p)),
        report_url: args.verdicts.report_url.clone(),
        report_dir: (!args.no_report).then(|| run_report::report_dir(store.dir())),
        archive: prepared
            .archive
            .as_ref()
            .map(|a| (a.describe(), a.extracted.dir.clone())),
    };
    crate::output::console::status(format_args!(
        "running {} benchmark{} (libtorch: {}, from {})",
        selected.len(),
        plural(selected.len()),
        libtorch.lib_dir.display(),
        libtorch.source
    ));
    session.run_all(&selected, &harnesses, &libtorch, command_line)
}

/// Lists the benchmarks of `executables` for `device` (see [`listing::list`]),
/// skipping (with a note) those that are not gpubench harnesses. Returns the
/// benchmarks and the harnesses; `None` when interrupted.
pub(super) fn list_benchmarks(
    executables: &[BenchExecutable],
    device: Option<&str>,
    env: &ChildEnv,
    timeout: std::time::Duration,
    stop: &AtomicBool,
) -> Result<Option<(Vec<Benchmark>, Vec<BenchExecutable>)>> {
    let mut all = Vec::new();
    let mut harnesses = Vec::new();
    for exe in executables {
        let listed = match listing::list(&exe.path, device, env, timeout, stop)? {
            listing::Listing::Gpubench(listed) => listed,
            listing::Listing::NotGpubench => {
                crate::output::console::note(format_args!(
                    "skipped {}: not a gpubench harness (no handshake on --list; a criterion or libtest bench beside gpubench ones is left to `cargo bench`)",
                    exe.target
                ));
                continue;
            }
        };
        harnesses.push(exe.clone());
        all.extend(listed.into_iter().map(|b| Benchmark {
            package: exe.package.clone(),
            target: exe.target.clone(),
            exe: exe.path.clone(),
            id: b.id,
            ignored: b.ignored,
        }));
        if stop.load(Ordering::SeqCst) {
            return Ok(None);
        }
    }
    Ok(Some((all, harnesses)))
}

/// The environment of benchmark processes: libtorch (and build-script libraries in
/// the target directory) on the loader path; the subcommand's own `GPUBENCH_*`
/// options removed, since they reach the harness as arguments; and the cores the host
/// has free now, so every process of the run gives libtorch as many intra-op threads
/// on the CPU device (unless `GPUBENCH_CPU_THREADS` or `OMP_NUM_THREADS` choose).
pub(super) fn child_env(
    libtorch: &Libtorch,
    native_paths: &[PathBuf],
    target_dir: &Path,
) -> ChildEnv {
    let mut dirs = vec![libtorch.lib_dir.clone()];
    dirs.extend(
        native_paths
            .iter()
            .filter(|p| p.starts_with(target_dir))
            .cloned(),
    );
    let var = libtorch::loader_path_var();
    let existing = std::env::var_os(var);
    let mut remove: Vec<OsString> = crate::cli::option_env_vars()
        .into_iter()
        .map(OsString::from)
        .collect();
    remove.push(RECORD_DIR_VAR.into());
    remove.push(ROUND_VAR.into());
    ChildEnv {
        set: vec![
            (
                var.into(),
                libtorch::prepend_paths(&dirs, existing.as_deref()),
            ),
            (
                FREE_CORES_VAR.into(),
                gpubench_analysis::host::free_cores_now().to_string().into(),
            ),
        ],
        remove,
    }
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

/// The flag Ctrl-C (and SIGTERM) raises: the running benchmark is killed, finished
/// records are kept. A second Ctrl-C exits at once.
pub(super) fn interrupt_flag() -> Result<Arc<AtomicBool>> {
    static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();
    if let Some(flag) = FLAG.get() {
        return Ok(flag.clone());
    }
    let flag = Arc::new(AtomicBool::new(false));
    let handler_flag = flag.clone();
    ctrlc::set_handler(move || {
        if handler_flag.swap(true, Ordering::SeqCst) {
            std::process::exit(i32::from(Exit::Interrupted.code()));
        }
        eprintln!("gpubench: interrupted; stopping the running benchmark and saving what finished (Ctrl-C again to quit at once)");
    })
    .context("failed to install the Ctrl-C handler")?;
    Ok(FLAG.get_or_init(|| flag).clone())
}
