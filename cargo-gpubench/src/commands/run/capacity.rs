//! `cargo gpubench capacity`: finds the largest size of each capacity benchmark that
//! fits in device memory (the search of `gpubench_analysis::capacity`), each probe in
//! a fresh process, under the lock of `<out-dir>/capacity/`; stores (also what an
//! interrupted search finished), shows, charts and compares the results.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, Result};
use gpubench_analysis::capacity::{
    self, CapacityFinding, CapacityProbe, CapacityResult, CapacityVerdict, Next, SearchEnd,
    SearchOptions,
};
use gpubench_record::id::file_stem_for_id;
use gpubench_record::protocol::RECORD_DIR_VAR;
use gpubench_record::record::RawRecord;
use gpubench_record::units::format_bytes;

use super::prepare::prepare_benchmarks;
use crate::cli::{CapacityArgs, Format};
use crate::console;
use crate::execute::process::{self, ChildEnv, Ending};
use crate::execute::runner::{ending_words, with_stderr};
use crate::exit_code::Exit;
use crate::exit_code::UsageError;
use crate::output::json::{pretty_json, print_document};
use crate::store::baselines::{Wanted, DEFAULT_BASELINE};
use crate::store::runs::RunStore;

/// A capacity benchmark of one executable, as `--list-capacity` prints it.
#[derive(Debug, Clone, PartialEq)]
struct Listed {
    exe: PathBuf,
    name: String,
    unit: String,
    start: u64,
}

/// Runs the capacity search of every selected capacity benchmark.
pub fn run(args: &CapacityArgs) -> Result<Exit> {
    let stop = crate::execute::process::interrupt_flag()?;
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
        listed.extend(list_capacity(&exe.path, &env, args.process.timeout, &stop)?);
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
    let baselines = capacity_baselines_dir(
        args.baselines.baselines_dir.as_deref(),
        &prepared.workspace_root,
    );

    let mut results = Vec::new();
    // Each result's chart, drawn once for its file and the page.
    let mut charts = Vec::new();
    let mut failed = Vec::new();
    let mut interrupted = false;
    for bench in &listed {
        if stop.load(Ordering::SeqCst) {
            interrupted = true;
            break;
        }
        let Searched { result: r, error } = search(bench, args, &env, &out, &stop);
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
            failed.push((bench.name.clone(), e));
            if r.probes.is_empty() {
                continue;
            }
        }
        // Saved as soon as it ends, so a later search's failure loses nothing.
        let stem = file_stem_for_id(&r.name);
        write_json(&out.join(format!("{stem}.json")), &r)?;
        let chart = chart_svg(&r);
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
        interrupted = r.end == SearchEnd::Interrupted;
        results.push(r);
        charts.push(chart);
        if interrupted {
            break;
        }
    }
    // Each search removed its own probe directory; their parent goes once empty.
    let _ = std::fs::remove_dir(out.join("probes"));
    // Whole searches: compared and saved as a baseline.
    let finished: Vec<&CapacityResult> = results
        .iter()
        .filter(|r| !matches!(r.end, SearchEnd::Interrupted | SearchEnd::Failed))
        .collect();

    // Compared with the baseline before a save overwrites it.
    let mut findings = Vec::new();
    let mut missing = Vec::new();
    let wanted = match args.baselines.wanted() {
        Wanted::None => None,
        Wanted::Default => Some((DEFAULT_BASELINE.to_string(), false)),
        Wanted::Named(name) => Some((name, true)),
    };
    if let Some((name, explicit)) = wanted {
        let dir = baselines.join(&name);
        if dir.is_dir() || explicit {
            for r in &finished {
                let file = dir.join(format!("{}.json", file_stem_for_id(&r.name)));
                match read_result(&file) {
                    Ok(Some(base)) => findings.push(capacity::compare(&base, r)),
                    Ok(None) => missing.push(format!(
                        "{}: the capacity baseline `{name}` has no {}",
                        r.name,
                        file.display()
                    )),
                    Err(e) => return Err(e),
                }
            }
        }
    }
    match &args.baselines.save_baseline {
        Some(name) if interrupted => console::warning(format_args!(
            "capacity baseline `{name}` not saved: the search was interrupted (the results \
             that finished are in {})",
            out.display()
        )),
        Some(name) => {
            let dir = baselines.join(name);
            let mut saved = 0;
            for r in &finished {
                if r.end == SearchEnd::NothingFits {
                    console::warning(format_args!(
                        "{} not saved in the capacity baseline `{name}`: nothing fits",
                        r.name
                    ));
                    continue;
                }
                std::fs::create_dir_all(&dir)
                    .with_context(|| format!("failed to create {}", dir.display()))?;
                write_json(&dir.join(format!("{}.json", file_stem_for_id(&r.name))), r)?;
                saved += 1;
            }
            if saved > 0 {
                console::status(format_args!(
                    "saved capacity baseline `{name}` in {} ({saved} of {} searches)",
                    dir.display(),
                    listed.len()
                ));
            } else {
                console::warning(format_args!(
                    "capacity baseline `{name}` not saved: no search finished with a size that fits"
                ));
            }
        }
        None => {}
    }
    std::fs::write(
        out.join("index.html"),
        html_page(&results, &charts, &findings, &missing),
    )
    .context("failed to write the capacity report")?;

    match args.output.format {
        Format::Json => {
            print_document(&json_document(&results, &findings, &missing, &failed));
        }
        Format::Markdown => print!("{}", markdown(&results, &findings, &missing)),
        _ => {
            for r in &results {
                for line in r.report_lines() {
                    println!("{line}");
                }
            }
            for f in &findings {
                println!(
                    "capacity {}: {} ({})",
                    f.name,
                    verdict_word(f.verdict),
                    f.reason
                );
            }
            for m in &missing {
                println!("capacity missing: {m}");
            }
            println!("report: {}", out.join("index.html").display());
        }
    }
    let unfit = results
        .iter()
        .any(|r| r.end == SearchEnd::NothingFits || r.probes.iter().any(|p| p.failure.is_some()));
    Ok(Exit::of_verdicts(
        interrupted,
        unfit || !failed.is_empty(),
        findings
            .iter()
            .any(|f| f.verdict == CapacityVerdict::Regressed),
    ))
}

fn verdict_word(v: CapacityVerdict) -> &'static str {
    match v {
        CapacityVerdict::Regressed => "regressed",
        CapacityVerdict::Improved => "improved",
        CapacityVerdict::NoChange => "no change",
        CapacityVerdict::NotComparable => "not comparable",
    }
}

/// `<baselines-dir>/../capacity`: beside the baselines, not inside one, so a
/// baseline's reader never meets a file it does not know. A relative
/// `--baselines-dir` stays relative (the current directory is `""`), so messages
/// name it as it was given.
fn capacity_baselines_dir(baselines_dir: Option<&Path>, workspace_root: &Path) -> PathBuf {
    crate::store::baselines::store(baselines_dir, workspace_root, Path::new(""))
        .root
        .parent()
        .map_or_else(|| PathBuf::from("capacity"), |p| p.join("capacity"))
}

/// The `--format json` document (`docs/schema/capacity.schema.json`): every search,
/// the verdicts against the baseline, what it lacked, and the searches that failed.
fn json_document(
    results: &[CapacityResult],
    findings: &[capacity::CapacityFinding],
    missing: &[String],
    failed: &[(String, String)],
) -> serde_json::Value {
    serde_json::json!({
        "results": results,
        "findings": findings,
        "missing": missing,
        "failed": failed.iter().map(|(n, e)| serde_json::json!({"name": n, "error": e})).collect::<Vec<_>>(),
    })
}

fn write_json(path: &Path, r: &CapacityResult) -> Result<()> {
    std::fs::write(path, pretty_json(r))
        .with_context(|| format!("failed to write {}", path.display()))
}

/// A saved result; `Ok(None)` when there is no file.
fn read_result(path: &Path) -> Result<Option<CapacityResult>> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("failed to read {}", path.display())),
    };
    let r: CapacityResult = serde_json::from_str(&text)
        .with_context(|| format!("failed to parse the capacity result {}", path.display()))?;
    if r.version > capacity::CAPACITY_FORMAT_VERSION {
        return Err(UsageError(format!(
            "{} is of capacity format {}, newer than this cargo-gpubench reads ({}): upgrade cargo-gpubench",
            path.display(),
            r.version,
            capacity::CAPACITY_FORMAT_VERSION
        ))
        .into());
    }
    Ok(Some(r))
}

/// `<exe> --list-capacity`: `name unit start` per line. An executable that refuses
/// the flag is not a gpubench harness of this version and holds none.
fn list_capacity(
    exe: &Path,
    env: &ChildEnv,
    timeout: std::time::Duration,
    stop: &AtomicBool,
) -> Result<Vec<Listed>> {
    let mut cmd = Command::new(exe);
    cmd.arg("--list-capacity");
    env.apply(&mut cmd);
    let finished = process::run(cmd, timeout, stop, 1 << 16)
        .with_context(|| format!("failed to run {}", exe.display()))?;
    match finished.ending {
        Ending::Exited(0) => {}
        Ending::Exited(2)
            if finished.stderr_tail.contains("error:")
                && finished.stderr_tail.contains("capacity benchmark") =>
        {
            return Err(UsageError(finished.stderr_tail.trim().to_string()).into());
        }
        _ => {
            console::note(format_args!(
                "skipped {}: it does not list capacity benchmarks (--list-capacity)",
                exe.display()
            ));
            return Ok(Vec::new());
        }
    }
    Ok(parse_list(&finished.stdout_tail, exe))
}

fn parse_list(stdout: &str, exe: &Path) -> Vec<Listed> {
    stdout
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let (name, unit, start) = (w.next()?, w.next()?, w.next()?.parse().ok()?);
            Some(Listed {
                exe: exe.to_path_buf(),
                name: name.to_string(),
                unit: unit.to_string(),
                start,
            })
        })
        .collect()
}

/// One benchmark's search: its result, and why it stopped early when it could not
/// go on (a probe that could not start, a device without memory figures; its `end`
/// is then `failed` and its probes those that finished before).
struct Searched {
    result: CapacityResult,
    error: Option<String>,
}

/// The search of one benchmark: its probes to its end, to Ctrl-C, or to an error that
/// stops it (the result's `end` says which). A probe that crashed or hung is that
/// size's failure, and the search goes on.
fn search(
    bench: &Listed,
    args: &CapacityArgs,
    env: &ChildEnv,
    out: &Path,
    stop: &AtomicBool,
) -> Searched {
    let mut options = SearchOptions {
        start: bench.start,
        max_probes: args.max_probes,
        resolution: args.resolution,
        limit_bytes: None,
        repeats: args.repeats,
    };
    let probe_dir = out.join("probes").join(file_stem_for_id(&bench.name));
    let mut probes: Vec<CapacityProbe> = Vec::new();
    let mut device = String::new();
    console::status(format_args!(
        "capacity {}: searching the largest {} that fits, from {} (at most {} probes; \
         {} at the boundary)",
        bench.name, bench.unit, bench.start, args.max_probes, args.repeats
    ));
    let mut error = None;
    let end = loop {
        let size = match capacity::next_probe(&probes, &options) {
            Next::Probe(size) => size,
            Next::Done(end) => break end,
        };
        let _ = std::fs::remove_dir_all(&probe_dir);
        if let Err(e) = std::fs::create_dir_all(&probe_dir) {
            error = Some(format!("failed to create {}: {e}", probe_dir.display()));
            break SearchEnd::Failed;
        }
        let mut cmd = Command::new(&bench.exe);
        cmd.args([
            "--exact",
            &bench.name,
            "--include-ignored",
            "--capacity-probe",
            &size.to_string(),
        ]);
        if let Some(d) = &args.process.device {
            cmd.args(["--device", d]);
        }
        if let Some(f) = args.memory_fraction {
            cmd.args(["--memory-fraction", &f.to_string()]);
        }
        env.apply(&mut cmd);
        cmd.env(RECORD_DIR_VAR, &probe_dir);
        console::detail(format_args!("probe: {}", process::shell_line(&cmd)));
        let finished = match process::run(cmd, args.process.timeout, stop, process::TAIL_BYTES) {
            Ok(f) => f,
            Err(e) => {
                error = Some(format!("failed to start the probe at {size}: {e}"));
                break SearchEnd::Failed;
            }
        };
        if finished.ending == Ending::Interrupted {
            break SearchEnd::Interrupted;
        }
        let id = format!("{}/{size}", bench.name);
        let path = probe_dir.join(format!("{}.json", file_stem_for_id(&id)));
        let seconds = finished.elapsed.as_secs_f64();
        // Whatever a killed process left behind is not a result.
        let record = match finished.ending {
            Ending::TimedOut => Err(format!(
                "timed out after {} s and was killed",
                args.process.timeout.as_secs_f64()
            )),
            ending if !path.exists() => {
                Err(format!("{} without writing a record", ending_words(ending)))
            }
            ending => RawRecord::read(&path).map_err(|e| {
                format!(
                    "{} but its record could not be read: {e}",
                    ending_words(ending)
                )
            }),
        };
        let probe = match record {
            Ok(record) => {
                if device.is_empty() {
                    device = record.fingerprint.device.label();
                    let total = record.fingerprint.device.total_memory_bytes;
                    options.limit_bytes =
                        total.map(|t| (args.memory_fraction.unwrap_or(1.0) * t as f64) as u64);
                }
                match CapacityProbe::from_record(size, &record, seconds) {
                    Ok(p) => p,
                    Err(e) => {
                        error = Some(e);
                        break SearchEnd::Failed;
                    }
                }
            }
            Err(why) => CapacityProbe::failed(
                size,
                seconds,
                Some(with_stderr(&why, &finished.stderr_tail)),
            ),
        };
        console::status(format_args!(
            "capacity {}: probe {} at {} {size}: {} ({seconds:.1} s)",
            bench.name,
            probes.len() + 1,
            bench.unit,
            match (probe.peak_allocated_bytes, &probe.failure) {
                (Some(p), _) => format!("fits, peak {} allocated", format_bytes(p)),
                (None, None) => "out of memory".to_string(),
                (None, Some(why)) => format!(
                    "failed, counted as not fitting: {}",
                    why.lines().next().unwrap_or_default()
                ),
            },
        ));
        probes.push(probe);
        if stop.load(Ordering::SeqCst) {
            break SearchEnd::Interrupted;
        }
    };
    let _ = std::fs::remove_dir_all(&probe_dir);
    if device.is_empty() {
        device = "unknown (no probe wrote a record)".to_string();
    }
    Searched {
        result: CapacityResult::new(
            &bench.name,
            &bench.unit,
            &device,
            &options,
            args.memory_fraction,
            probes,
            end,
        ),
        error,
    }
}

fn markdown(
    results: &[CapacityResult],
    findings: &[CapacityFinding],
    missing: &[String],
) -> String {
    let mut s = String::from(
        "## Capacity\n\n| benchmark | largest that fits | first out of memory | per item | fixed | headroom | probes | vs baseline |\n|---|---:|---:|---:|---:|---:|---:|---|\n",
    );
    for r in results {
        let f = findings.iter().find(|f| f.name == r.name);
        let _ = writeln!(
            s,
            "| `{}` | {} {} | {} | {} | {} | {} | {} | {} |",
            r.name,
            r.unit,
            r.max_size,
            r.first_failing.map_or("–".into(), |h| h.to_string()),
            r.fit.map_or("–".into(), |f| format_bytes(
                f.per_item_bytes.max(0.0).round() as u64
            )),
            r.fit
                .map_or("–".into(), |f| format_bytes(f.fixed_bytes.max(0.0) as u64)),
            r.headroom_bytes.map_or("–".into(), format_bytes),
            r.probes.len(),
            f.map_or("–".into(), |f| format!(
                "{}: {}",
                verdict_word(f.verdict),
                f.reason
            )),
        );
    }
    // What the table has no column for: flaky sizes, probes that crashed or hung,
    // a search that was interrupted or found nothing fitting.
    for r in results {
        let lines = r.report_lines();
        let notes: Vec<&str> = lines
            .iter()
            .skip(1)
            .filter(|l| l.starts_with("  flaky") || l.starts_with("  the probe at"))
            .map(|l| l.trim())
            .collect();
        let end = match r.end {
            SearchEnd::Interrupted => Some("the search was interrupted"),
            SearchEnd::NothingFits => Some("nothing fits, not even 1"),
            SearchEnd::Failed => Some("the search stopped on an error"),
            SearchEnd::Converged | SearchEnd::OutOfProbes => None,
        };
        if notes.is_empty() && end.is_none() {
            continue;
        }
        let _ = writeln!(s, "\n`{}`:", r.name);
        for note in end.into_iter().chain(notes) {
            let _ = writeln!(s, "* {note}");
        }
    }
    for m in missing {
        let _ = writeln!(s, "\nmissing: {m}");
    }
    s
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A page of every result: its lines, finding and chart (`charts`, one per result).
fn html_page(
    results: &[CapacityResult],
    charts: &[String],
    findings: &[CapacityFinding],
    missing: &[String],
) -> String {
    let mut s = String::from(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>gpubench capacity</title>\
         <style>body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto}pre{background:#f4f4f4;padding:.5rem}</style>\
         </head><body><h1>Capacity</h1>",
    );
    for (r, chart) in results.iter().zip(charts) {
        let _ = write!(s, "<h2 id=\"{0}\">{0}</h2><pre>", escape(&r.name));
        for line in r.report_lines() {
            let _ = writeln!(s, "{}", escape(&line));
        }
        s.push_str("</pre>");
        if let Some(f) = findings.iter().find(|f| f.name == r.name) {
            let _ = write!(
                s,
                "<p>Against the baseline: <b>{}</b>: {}</p>",
                verdict_word(f.verdict),
                escape(&f.reason)
            );
        }
        s.push_str(chart);
    }
    for m in missing {
        let _ = write!(s, "<p>Missing: {}</p>", escape(m));
    }
    s.push_str("</body></html>\n");
    s
}

/// Peak allocated memory against size: the fitting probes, the fit line, and the
/// limit (failing probes marked on it).
fn chart_svg(r: &CapacityResult) -> String {
    let (w, h, pad) = (640.0, 360.0, 56.0);
    let max_x = r.probes.iter().map(|p| p.size).max().unwrap_or(1).max(1) as f64 * 1.05;
    let max_y = r
        .probes
        .iter()
        .filter_map(|p| p.peak_allocated_bytes)
        .max()
        .unwrap_or(1)
        .max(r.limit_bytes.unwrap_or(0))
        .max(1) as f64
        * 1.1;
    let x = |v: f64| pad + v / max_x * (w - 2.0 * pad);
    let y = |v: f64| h - pad - v / max_y * (h - 2.0 * pad);
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" font-family=\"sans-serif\" font-size=\"12\">\
         <rect width=\"{w}\" height=\"{h}\" fill=\"white\"/>\
         <line x1=\"{pad}\" y1=\"{0}\" x2=\"{1}\" y2=\"{0}\" stroke=\"black\"/><line x1=\"{pad}\" y1=\"{pad}\" x2=\"{pad}\" y2=\"{0}\" stroke=\"black\"/>\
         <text x=\"{2}\" y=\"{3}\" text-anchor=\"middle\">{4}</text><text x=\"12\" y=\"{pad}\">peak allocated ({5} at top)</text>",
        h - pad,
        w - pad,
        w / 2.0,
        h - 16.0,
        escape(&r.unit),
        format_bytes(max_y as u64),
    );
    if let Some(limit) = r.limit_bytes {
        let _ = write!(
            s,
            "<line x1=\"{pad}\" y1=\"{0}\" x2=\"{1}\" y2=\"{0}\" stroke=\"#c00\" stroke-dasharray=\"4 3\"/><text x=\"{2}\" y=\"{3}\" fill=\"#c00\">limit {4}</text>",
            y(limit as f64),
            w - pad,
            pad + 4.0,
            y(limit as f64) - 4.0,
            format_bytes(limit)
        );
    }
    if let Some(f) = r.fit {
        let _ = write!(
            s,
            "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#06c\"/>",
            x(0.0),
            y(f.at(0.0)),
            x(max_x),
            y(f.at(max_x))
        );
    }
    for p in &r.probes {
        match p.peak_allocated_bytes {
            Some(b) => {
                let _ = write!(s, "<circle cx=\"{}\" cy=\"{}\" r=\"4\" fill=\"#06c\"><title>{} {}: {}</title></circle>", x(p.size as f64), y(b as f64), escape(&r.unit), p.size, format_bytes(b));
            }
            None => {
                let cy = y(r.limit_bytes.unwrap_or(max_y as u64) as f64);
                let why = p
                    .failure
                    .as_deref()
                    .map_or("out of memory", |f| f.lines().next().unwrap_or_default());
                let _ = write!(s, "<text x=\"{}\" y=\"{}\" fill=\"#c00\" text-anchor=\"middle\">✕<title>{} {}: {}</title></text>", x(p.size as f64), cy + 4.0, escape(&r.unit), p.size, escape(why));
            }
        }
    }
    let _ = write!(
        s,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
        w - pad,
        h - pad + 16.0,
        max_x as u64
    );
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpubench_analysis::capacity::SearchEnd;

    fn result() -> CapacityResult {
        let probes = vec![
            CapacityProbe {
                size: 64,
                fits: true,
                peak_allocated_bytes: Some(100 << 20),
                peak_reserved_bytes: Some(102 << 20),
                seconds: 1.0,
                failure: None,
            },
            CapacityProbe {
                size: 128,
                fits: true,
                peak_allocated_bytes: Some(164 << 20),
                peak_reserved_bytes: Some(166 << 20),
                seconds: 1.0,
                failure: None,
            },
            CapacityProbe {
                size: 256,
                fits: false,
                peak_allocated_bytes: None,
                peak_reserved_bytes: None,
                seconds: 1.0,
                failure: None,
            },
        ];
        let o = SearchOptions {
            start: 64,
            max_probes: 10,
            resolution: 0.01,
            limit_bytes: Some(200 << 20),
            repeats: 1,
        };
        CapacityResult::new(
            "mlp",
            "batch",
            "cuda:0 H200",
            &o,
            Some(0.05),
            probes,
            SearchEnd::OutOfProbes,
        )
    }

    /// [`result`]'s search with a crashed probe at 192 and batch 128 flaky, stopped by
    /// Ctrl-C.
    fn faulty_result() -> CapacityResult {
        let mut probes = result().probes;
        probes.push(CapacityProbe::failed(
            192,
            0.5,
            Some("crashed: SIGABRT".into()),
        ));
        probes.push(probes[1].clone());
        probes.push(CapacityProbe::failed(128, 0.5, None));
        // Once the limit is flaky, a size fits only on three probes.
        probes.extend([probes[0].clone(), probes[0].clone()]);
        let o = SearchOptions {
            start: 64,
            max_probes: 10,
            resolution: 0.01,
            limit_bytes: Some(200 << 20),
            repeats: 3,
        };
        CapacityResult::new(
            "mlp",
            "batch",
            "cuda:0 H200",
            &o,
            None,
            probes,
            SearchEnd::Interrupted,
        )
    }

    #[test]
    fn the_listing_parses_and_skips_other_lines() {
        let l = parse_list("mlp batch 256\nnoise\nlm tokens x\n", Path::new("/x"));
        assert_eq!(l.len(), 1);
        assert_eq!(
            (l[0].name.as_str(), l[0].unit.as_str(), l[0].start),
            ("mlp", "batch", 256)
        );
    }

    #[test]
    fn chart_page_and_markdown_show_the_probes_fit_and_limit() {
        let r = result();
        let svg = chart_svg(&r);
        assert_eq!(svg.matches("<circle").count(), 2);
        assert!(svg.contains("out of memory") && svg.contains("limit 200.00 MiB"));
        let md = markdown(std::slice::from_ref(&r), &[], &["x: missing".into()]);
        assert!(
            md.contains("| `mlp` | batch 128 | 256 | 1.00 MiB |"),
            "{md}"
        );
        assert!(md.contains("missing: x"));
        let page = html_page(&[r], &[svg], &[], &[]);
        assert!(page.contains("largest batch that fits: 128"));
        // What the table has no column for is said under it.
        let faults = faulty_result();
        let md = markdown(std::slice::from_ref(&faults), &[], &[]);
        assert!(
            md.contains(
                "`mlp`:\n* the search was interrupted\n\
                 * the probe at batch 192 failed, counted as not fitting: crashed: SIGABRT\n"
            ),
            "{md}"
        );
        let svg = chart_svg(&faults);
        assert!(svg.contains("batch 192: crashed: SIGABRT"), "{svg}");
        let page = html_page(&[faults], &[svg], &[], &[]);
        assert!(
            page.contains("interrupted before the search ended; so far largest batch that fits: 64 (fitted on all 3 probes); batch 128 flaky: fitted on 2 of 3 probes, ran out of memory on 1 of 3 probes"),
            "{page}"
        );
    }

    /// A saved result and the `--format json` document, as the command writes them,
    /// against `docs/schema/capacity.schema.json`.
    #[test]
    fn saved_results_and_the_json_document_match_the_schema() {
        let path =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/schema/capacity.schema.json");
        let schema: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let schema = jsonschema::validator_for(&schema).expect("a schema");
        let check = |doc: &serde_json::Value| {
            let errors: Vec<String> = schema
                .iter_errors(doc)
                .map(|e| format!("{e} at {}", e.instance_path()))
                .collect();
            assert!(errors.is_empty(), "{doc}:\n{}", errors.join("\n"));
        };
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("mlp.json");
        let r = result();
        assert!(r.fit.is_some() && r.first_failing.is_some());
        write_json(&file, &r).unwrap();
        check(&serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap());
        let smaller = CapacityResult {
            max_size: 64,
            ..r.clone()
        };
        let finding = capacity::compare(&r, &smaller);
        let doc = json_document(
            std::slice::from_ref(&r),
            &[finding],
            &["x: the capacity baseline `main` has no x.json".into()],
            &[("y".into(), "failed to build".into())],
        );
        check(&doc);
        let faults = faulty_result();
        assert_eq!(
            (
                faults.flaky_sizes.as_slice(),
                faults.first_failing,
                faults.max_size
            ),
            (&[128][..], Some(128), 64)
        );
        write_json(&file, &faults).unwrap();
        let saved: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        check(&saved);
        assert_eq!(saved["probes"][3]["failure"], "crashed: SIGABRT");
        assert_eq!(saved["end"], "interrupted");
        // The schema holds: a result of another version, or a probe without its size,
        // does not pass.
        let mut bad = serde_json::to_value(&r).unwrap();
        bad["version"] = 2.into();
        assert!(!schema.is_valid(&bad));
        let mut bad = serde_json::to_value(&r).unwrap();
        bad["probes"][0].as_object_mut().unwrap().remove("size");
        assert!(!schema.is_valid(&bad));
        let mut bad = saved.clone();
        bad["flaky_sizes"][0] = "128".into();
        assert!(!schema.is_valid(&bad));
        let mut bad = saved;
        bad["end"] = "stopped".into();
        assert!(!schema.is_valid(&bad));
    }

    #[test]
    fn saved_results_round_trip_and_newer_formats_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mlp.json");
        assert!(read_result(&path).unwrap().is_none());
        let r = result();
        write_json(&path, &r).unwrap();
        assert_eq!(read_result(&path).unwrap().unwrap(), r);
        let newer = CapacityResult { version: 99, ..r };
        write_json(&path, &newer).unwrap();
        assert!(read_result(&path)
            .unwrap_err()
            .to_string()
            .contains("upgrade"));
        assert_eq!(
            capacity_baselines_dir(None, Path::new("/w")),
            PathBuf::from("/w/gpubench/capacity")
        );
    }
}
