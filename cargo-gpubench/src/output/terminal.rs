//! The end-of-run summary laid out for the terminal: a table (with a "change vs
//! baseline" column when the run was compared), the failures, and what the
//! comparison found (`--format json` is [`crate::output::json`], `--format markdown`
//! [`crate::output::markdown`]). Figures come from
//! `gpubench_analysis::summary` and verdicts from [`crate::compare`]; this module
//! only lays them out.

use std::fmt::Write as _;

use gpubench_analysis::baseline::ComparisonOutcome;
use gpubench_analysis::kernels::{count_text, Counter};
use gpubench_analysis::summary::BenchmarkSummary;
use gpubench_analysis::units::{format_bytes, format_ns};

use crate::compare::{
    change_text, counters_text, gpu_changes, kernel_comparison, outcome_word, RunComparison,
};
use crate::exit_code::Exit;
use crate::format::{figure, plural, shorten, spread_percent};
use crate::output::json::{RunSummary, SummaryEntry};
use crate::store::manifest::BenchStatus;

/// Characters of a failure's first line shown in the table's status column.
const REASON_CHARS: usize = 60;
/// Lines of a failure message shown under the table.
const DETAIL_LINES: usize = 12;

impl RunSummary {
    /// The terminal table, the failures in detail, a closing line, and what the
    /// comparison with the baseline found.
    pub fn render_human(&self) -> String {
        let mut out = render_table(&self.benchmarks, self.comparison.as_ref());
        out.push_str(&render_failures(&self.benchmarks));
        let mut closing = format!("\n{}", count_line(&self.benchmarks));
        if self.not_run > 0 {
            let _ = write!(closing, ", {} not run (interrupted)", self.not_run);
        }
        let _ = writeln!(
            closing,
            " in {}; records in {}",
            format_ns(self.elapsed_s * 1e9),
            self.run_dir
        );
        out.push_str(&closing);
        if let Some(c) = &self.comparison {
            out.push_str(&render_comparison(c, &self.benchmarks, self.exit_code()));
        }
        out
    }
}

/// The failed benchmarks in detail (empty when none failed).
pub fn render_failures(entries: &[SummaryEntry]) -> String {
    let mut out = String::new();
    let failures: Vec<&SummaryEntry> = entries
        .iter()
        .filter(|b| b.status == BenchStatus::Failed)
        .collect();
    if !failures.is_empty() {
        out.push_str("\nfailures:\n");
        for b in failures {
            let Some(f) = b.summary.as_ref().and_then(|s| s.failure.as_ref()) else {
                continue;
            };
            let _ = writeln!(out, "\n  {} ({})", b.name, f.kind.label());
            for line in excerpt(&f.message, DETAIL_LINES) {
                let _ = writeln!(out, "    {line}");
            }
        }
    }
    out
}

/// What the comparison found, under the table: the baseline and the counts, what
/// was not compared and why, benchmarks on one side only, and the gate.
pub fn render_comparison(c: &RunComparison, entries: &[SummaryEntry], exit: Exit) -> String {
    let mut out = String::new();
    let how = if c.baseline.default {
        " (the default when it is saved: --baseline NAME picks another, --no-baseline skips)"
    } else {
        ""
    };
    let _ = writeln!(
        out,
        "compared with {}{how}: {}",
        c.baseline.describe(),
        c.counts_text()
    );
    if let Some(gpu) = c.gpu_counts_text() {
        let _ = writeln!(out, "  on the GPU's own work: {gpu}");
    }
    if let Some(msg) = c.device_mismatch_message() {
        let _ = writeln!(out, "  warning: {msg}");
    }
    for x in &c.set.cross_device {
        let _ = writeln!(
            out,
            "  compared across devices (--allow-device-mismatch): {} ran on `{}` in the baseline, on `{}` now",
            x.id, x.baseline_device, x.current_device
        );
    }
    for x in &c.set.other_settings {
        let _ = writeln!(
            out,
            "  compared across settings (--allow-settings-mismatch): {} was measured with {}",
            x.id,
            x.differences.join("; ")
        );
    }
    for (id, note) in crate::output::gpu_notes::clock_lines(&c.set.other_clocks) {
        let _ = writeln!(out, "  compared at other clocks: {id}: {note}");
    }
    let name_of = |id: &str| {
        entries
            .iter()
            .find(|e| e.id == id)
            .map_or_else(|| id.to_string(), |e| e.name.clone())
    };
    let not_compared: Vec<String> = c
        .not_compared()
        .into_iter()
        .map(|(id, reason)| format!("{} ({reason})", name_of(id)))
        .collect();
    if !not_compared.is_empty() {
        let _ = writeln!(out, "  not compared: {}", not_compared.join(", "));
    }
    for (id, note) in c.notes() {
        let _ = writeln!(out, "  {} is ambiguous: {note}", name_of(id));
    }
    if !c.set.missing_in_baseline.is_empty() {
        let names: Vec<String> = c
            .set
            .missing_in_baseline
            .iter()
            .map(|id| name_of(id))
            .collect();
        let _ = writeln!(out, "  new, not in the baseline: {}", names.join(", "));
    }
    if !c.set.missing_in_current.is_empty() {
        let _ = writeln!(
            out,
            "  in the baseline but not run: {}",
            c.set.missing_in_current.join(", ")
        );
    }
    let fail_on = c.settings.fail_on;
    let gate = c.settings.gate;
    if c.gate_tripped {
        let tripping: Vec<String> = c
            .tripping_reasons()
            .into_iter()
            .map(|(id, why)| format!("{} ({why})", name_of(id)))
            .collect();
        let _ = writeln!(
            out,
            "regression found (--fail-on {fail_on} --gate-on {gate}): {}{}",
            tripping.join(", "),
            if exit == Exit::RegressionFound {
                " (exit code 4)".to_string()
            } else {
                format!(
                    " (exit code {}: a failed benchmark wins over a regression)",
                    exit.code()
                )
            }
        );
    } else {
        let _ = writeln!(out, "no regression (--fail-on {fail_on} --gate-on {gate})");
    }
    out
}

/// The change column's cell: `+12.3% [+10.1%, +14.6%] regressed`, `new`, ...
fn change_cell(e: &SummaryEntry, comparison: &RunComparison) -> String {
    match comparison.get(&e.id).map(|b| &b.outcome) {
        Some(o @ ComparisonOutcome::Compared { comparison: c, .. }) => {
            format!("{} {}", change_text(&c.change), outcome_word(o))
        }
        // The status column says how it failed.
        Some(ComparisonOutcome::Failed { .. }) => "—".to_string(),
        Some(o @ ComparisonOutcome::NotCompared { .. }) => outcome_word(o).to_string(),
        None if comparison.is_new(&e.id) => "new".to_string(),
        None => "—".to_string(),
    }
}

/// The table: one row per benchmark, columns aligned; with a comparison, a
/// `change vs NAME` column after the time, and kernel-time and counter columns when
/// either side measured them. Kernel columns appear only when some benchmark has
/// kernel figures; otherwise a line says why there are none.
pub fn render_table(entries: &[SummaryEntry], comparison: Option<&RunComparison>) -> String {
    let confidence = entries
        .iter()
        .filter_map(|e| e.summary.as_ref()?.primary())
        .map(|p| p.estimate.confidence)
        .next()
        .unwrap_or(0.95);
    let kernel_columns = entries
        .iter()
        .filter_map(|e| e.summary.as_ref())
        .any(|s| s.kernel.is_some() || s.counters.is_some());
    let mut header = vec![
        "benchmark".to_string(),
        format!("time [{:.0}% interval]", confidence * 100.0),
        "processes".into(),
        "host/iter".into(),
        "device/iter".into(),
    ];
    if kernel_columns {
        header.extend(["kernel/iter".into(), "kernels".into(), "launch".into()]);
    }
    header.extend([
        "cold call".into(),
        "throughput".into(),
        "peak mem".into(),
        "status".into(),
    ]);
    let mut rows: Vec<Vec<String>> = entries.iter().map(|e| row(e, kernel_columns)).collect();
    if let Some(c) = comparison {
        let outcomes: Vec<Option<&ComparisonOutcome>> = entries
            .iter()
            .map(|e| c.get(&e.id).map(|b| &b.outcome))
            .collect();
        let mut at = 2;
        header.insert(at, format!("change vs {}", c.baseline.name));
        for (r, e) in rows.iter_mut().zip(entries) {
            r.insert(at, change_cell(e, c));
        }
        if outcomes
            .iter()
            .flatten()
            .any(|o| kernel_comparison(o).is_some())
        {
            at += 1;
            header.insert(at, "kernel change".into());
            for (r, o) in rows.iter_mut().zip(&outcomes) {
                r.insert(at, o.and_then(kernel_change_cell).unwrap_or_else(dash));
            }
        }
        if outcomes
            .iter()
            .flatten()
            .any(|o| counters_text(o).is_some())
        {
            at += 1;
            header.insert(at, "counters".into());
            for (r, o) in rows.iter_mut().zip(&outcomes) {
                r.insert(at, o.and_then(counters_text).unwrap_or_else(dash));
            }
        }
    }
    let mut out = align(&header, &rows);
    out.push_str(&render_process_notes(entries));
    out.push_str(&render_eager_compiled(entries));
    out.push_str(&crate::output::gpu_notes::render_terminal(
        entries
            .iter()
            .filter_map(|e| Some((e.name.as_str(), e.summary.as_ref()?))),
    ));
    out.push_str(&render_kernel_notes(entries, comparison));
    out
}

/// `+10.2% [+9.1%, +11.3%] regressed`: the kernel-time change and its verdict.
fn kernel_change_cell(outcome: &ComparisonOutcome) -> Option<String> {
    let k = kernel_comparison(outcome)?;
    Some(format!("{} {}", change_text(&k.change), k.verdict.label()))
}

fn dash() -> String {
    "—".to_string()
}

/// Lines under the table on kernel time: why there is none, which benchmarks could
/// not be captured in a CUDA graph, whose counts differ between processes, and what
/// the GPU did differently from the baseline.
pub fn render_kernel_notes(entries: &[SummaryEntry], comparison: Option<&RunComparison>) -> String {
    let mut out = String::new();
    let measured: Vec<(&SummaryEntry, &BenchmarkSummary)> = entries
        .iter()
        .filter_map(|e| Some((e, e.summary.as_ref().filter(|s| s.primary().is_some())?)))
        .collect();
    let missing: Vec<&str> = measured
        .iter()
        .filter(|(_, s)| s.kernel.is_none())
        .filter_map(|(_, s)| s.kernel_unavailable.as_deref())
        .collect();
    if !missing.is_empty()
        && missing.len() == measured.len()
        && missing.iter().all(|m| *m == missing[0])
    {
        let _ = writeln!(
            out,
            "
kernel time: not measured ({})",
            missing[0]
        );
    } else {
        for (e, s) in &measured {
            if let (None, Some(why)) = (&s.kernel, &s.kernel_unavailable) {
                let _ = writeln!(out, "  {}: no kernel time ({why})", e.name);
            }
        }
    }
    for (e, s) in &measured {
        if let Some(why) = &s.not_capturable {
            let _ = writeln!(
                out,
                "  {}: not capturable in a CUDA graph ({why}); kernel time from the profiler",
                e.name
            );
        }
        if s.counters_vary {
            let _ = writeln!(
                out,
                "  {}: processes counted different work per call; the counters are the first's",
                e.name
            );
        }
    }
    if let Some(c) = comparison {
        let changes: Vec<String> = entries
            .iter()
            .filter_map(|e| {
                let words = gpu_changes(&c.get(&e.id)?.outcome);
                (!words.is_empty()).then(|| format!("  {}: {}", e.name, words.join("; ")))
            })
            .collect();
        if !changes.is_empty() {
            let _ = writeln!(
                out,
                "
what the GPU did differently from {}:",
                c.baseline.describe()
            );
            for line in changes {
                let _ = writeln!(out, "{line}");
            }
        }
    }
    out
}

/// `4 ±1.2%`: how many processes measured the benchmark and the spread between them
/// (the standard deviation of their medians, relative); `1` for one process.
pub fn processes_cell(s: &BenchmarkSummary) -> String {
    match s.primary() {
        Some(p) => match p.processes.between {
            Some(b) => format!("{} ±{}", p.processes.count, spread_percent(b)),
            None => p.processes.count.to_string(),
        },
        None => "—".to_string(),
    }
}

/// Lines under the table for benchmarks whose processes disagree: the range of their
/// medians, or the two modes they fall into.
pub fn render_process_notes(entries: &[SummaryEntry]) -> String {
    let mut out = String::new();
    for e in entries {
        let Some(note) = e.summary.as_ref().and_then(process_note) else {
            continue;
        };
        let _ = writeln!(out, "  {}: {note}", e.name);
    }
    if !out.is_empty() {
        out.insert_str(
            0,
            "
unstable across processes (each process is a fresh start; the interval covers them):
",
        );
    }
    out
}

/// What the processes of an unstable benchmark did: `processes in 2 modes: 5.40 µs
/// (3), 9.30 µs (2)`, or `process medians 7.30 µs to 11.9 µs`.
pub fn process_note(s: &BenchmarkSummary) -> Option<String> {
    let p = s.primary()?;
    if !p.processes.unstable {
        return None;
    }
    Some(match p.processes.modes {
        Some([low, high]) => format!(
            "processes in 2 modes: {} ({} process{}) and {} ({})",
            format_ns(low.centre),
            low.processes,
            if low.processes == 1 { "" } else { "es" },
            format_ns(high.centre),
            high.processes
        ),
        None => {
            let lo = p
                .processes
                .medians
                .iter()
                .copied()
                .fold(f64::INFINITY, f64::min);
            let hi = p
                .processes
                .medians
                .iter()
                .copied()
                .fold(f64::NEG_INFINITY, f64::max);
            format!(
                "process medians from {} to {} over {} processes",
                format_ns(lo),
                format_ns(hi),
                p.processes.count
            )
        }
    })
}

/// Rows under a header, columns aligned with two spaces between them.
pub fn align(header: &[String], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (w, cell) in widths.iter_mut().zip(r) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for r in std::iter::once(header).chain(rows.iter().map(Vec::as_slice)) {
        let mut line = String::new();
        for (i, (cell, w)) in r.iter().zip(&widths).enumerate() {
            if i > 0 {
                line.push_str("  ");
            }
            line.push_str(cell);
            if i + 1 < r.len() {
                line.extend(std::iter::repeat_n(' ', w - cell.chars().count()));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// The passed/failed counts of `entries`, e.g. `3 benchmarks: 2 passed, 1 failed`.
pub fn count_line(entries: &[SummaryEntry]) -> String {
    let passed = entries
        .iter()
        .filter(|e| e.status == BenchStatus::Passed)
        .count();
    let failed = entries
        .iter()
        .filter(|e| e.status == BenchStatus::Failed)
        .count();
    format!(
        "{} benchmark{}: {passed} passed, {failed} failed",
        entries.len(),
        plural(entries.len())
    )
}

fn row(e: &SummaryEntry, kernel_columns: bool) -> Vec<String> {
    let s = e.summary.as_ref();
    let time = s
        .and_then(BenchmarkSummary::primary)
        .map(|p| figure(&p.estimate, &p.processes.medians))
        .unwrap_or_else(dash);
    let processes = s.map(processes_cell).unwrap_or_else(dash);
    let host = s
        .and_then(|s| s.host.as_ref())
        .map(|h| format_ns(h.estimate.point))
        .unwrap_or_else(dash);
    let device = s
        .and_then(|s| s.device.as_ref())
        .map(|d| format_ns(d.estimate.point))
        .unwrap_or_else(dash);
    let cold = s
        .and_then(|s| s.cold.first())
        .map(|c| format_ns(c.wall_ns))
        .unwrap_or_else(dash);
    let throughput = s
        .and_then(|s| s.throughput.as_ref())
        .map(|t| t.rate.clone())
        .unwrap_or_else(dash);
    let memory = s
        .and_then(|s| s.memory)
        .map(|m| format_bytes(m.peak_allocated_bytes))
        .unwrap_or_else(dash);
    let mut cells = vec![e.name.clone(), time, processes, host, device];
    if kernel_columns {
        cells.extend(kernel_cells(s));
    }
    cells.extend([cold, throughput, memory, status_cell(e)]);
    cells
}

/// Lines under the table for benchmarks that compare eager with compiled.
pub fn render_eager_compiled(entries: &[SummaryEntry]) -> String {
    let lines: Vec<String> = entries
        .iter()
        .filter_map(|e| {
            let c = e.summary.as_ref()?.eager_compiled.as_ref()?;
            Some(format!(
                "  {}: {}\n",
                e.name,
                crate::output::eager_compiled::line(c)
            ))
        })
        .collect();
    if lines.is_empty() {
        return String::new();
    }
    format!("\neager versus compiled:\n{}", lines.concat())
}

/// `kernel/iter`, `kernels` and `launch`: kernel time per call, kernels launched per
/// call, and the share of device time outside the kernels (`1 − kernel/device`).
pub fn kernel_cells(s: Option<&BenchmarkSummary>) -> [String; 3] {
    let kernel = s
        .and_then(|s| s.kernel.as_ref())
        .map(|k| format_ns(k.estimate.point))
        .unwrap_or_else(dash);
    let kernels = s
        .and_then(|s| s.counters)
        .and_then(|c| c.per_call(Counter::Kernels))
        .map(count_text)
        .unwrap_or_else(dash);
    let launch = s
        .and_then(|s| s.launch_overhead)
        .map(|x| format!("{:.0}%", x * 100.0))
        .unwrap_or_else(dash);
    [kernel, kernels, launch]
}

fn status_cell(e: &SummaryEntry) -> String {
    match e.status {
        BenchStatus::Passed => {
            let flags: Vec<&str> = e
                .summary
                .iter()
                .flat_map(|s| s.flags.iter().map(|f| f.label()))
                .collect();
            if flags.is_empty() {
                "passed".into()
            } else {
                format!("passed ({})", flags.join(", "))
            }
        }
        BenchStatus::Failed => match e.summary.as_ref().and_then(|s| s.failure.as_ref()) {
            Some(f) => {
                let first = f.message.lines().next().unwrap_or("").trim();
                format!("{}: {}", f.kind.label(), shorten(first, REASON_CHARS))
            }
            None => "failed".into(),
        },
        BenchStatus::Interrupted => "interrupted".into(),
        BenchStatus::Pending => "not run".into(),
    }
}

/// At most `max` lines of `message`: the first two and the last ones, which is where
/// a headline and the end of a quoted stderr are.
fn excerpt(message: &str, max: usize) -> Vec<String> {
    let lines: Vec<&str> = message.lines().collect();
    if lines.len() <= max {
        return lines.iter().map(|l| l.to_string()).collect();
    }
    let tail = max - 3;
    let mut out: Vec<String> = lines[..2].iter().map(|l| l.to_string()).collect();
    out.push(format!("… ({} lines)", lines.len() - 2 - tail));
    out.extend(lines[lines.len() - tail..].iter().map(|l| l.to_string()));
    out
}

#[cfg(test)]
mod tests;
