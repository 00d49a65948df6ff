//! The end-of-run summary: a table for the terminal (with a "change vs baseline"
//! column when the run was compared), or one JSON document with `--format json`
//! (`--format markdown` is [`crate::markdown`]). Figures come from
//! `gpubench_analysis::summary` and verdicts from [`crate::comparison`]; this module
//! only lays them out.

use std::fmt::Write as _;

use gpubench_analysis::baseline::ComparisonOutcome;
use gpubench_analysis::kernels::{count_text, Counter};
use gpubench_analysis::summary::BenchmarkSummary;
use gpubench_analysis::units::{format_bytes, format_ns};
use serde::Serialize;

use crate::baselines::SavedBaseline;
use crate::comparison::{
    change_text, counters_text, gpu_changes, kernel_comparison, outcome_word, plural, RunComparison,
};
use crate::exit::Exit;
use crate::manifest::{BenchStatus, RunStatus};

/// Characters of a failure's first line shown in the table's status column.
const REASON_CHARS: usize = 60;
/// Lines of a failure message shown under the table.
const DETAIL_LINES: usize = 12;

/// One benchmark of the run, as the summary shows it.
#[derive(Debug, Clone, Serialize)]
pub struct SummaryEntry {
    /// `<target>/<id>`.
    pub name: String,
    /// The bench target.
    pub target: String,
    /// The benchmark id.
    pub id: String,
    /// Where it is.
    pub status: BenchStatus,
    /// Its record, relative to the run directory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub record: Option<String>,
    /// The figures, when it ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<BenchmarkSummary>,
    /// Its comparison with the baseline, when the baseline has it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comparison: Option<ComparisonOutcome>,
}

/// How an invocation ends, for JSON readers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ExitVerdict {
    /// The process exit code.
    pub code: u8,
    /// What it means, e.g. `regression_found`.
    pub verdict: &'static str,
}

impl From<Exit> for ExitVerdict {
    fn from(exit: Exit) -> Self {
        ExitVerdict {
            code: exit.code(),
            verdict: exit.word(),
        }
    }
}

/// Fills each entry's comparison from `comparison`.
pub fn attach_comparison(entries: &mut [SummaryEntry], comparison: &RunComparison) {
    for e in entries {
        e.comparison = comparison.get(&e.id).map(|c| c.outcome.clone());
    }
}

/// The whole run, as `--format json` prints it.
#[derive(Debug, Clone, Serialize)]
pub struct RunSummary {
    /// The run id.
    pub run_id: String,
    /// The run directory.
    pub run_dir: String,
    /// Completed or interrupted.
    pub status: RunStatus,
    /// Benchmarks that passed.
    pub passed: usize,
    /// Benchmarks that failed.
    pub failed: usize,
    /// Benchmarks stopped or never started because of Ctrl-C.
    pub not_run: usize,
    /// Wall time of the whole run, seconds.
    pub elapsed_s: f64,
    /// Every selected benchmark, in run order.
    pub benchmarks: Vec<SummaryEntry>,
    /// The comparison with the baseline (with its verdict counts), when there was one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comparison: Option<RunComparison>,
    /// The baseline this run saved, with `--save-baseline`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub saved_baseline: Option<SavedBaseline>,
    /// The HTML report's summary page (`<out-dir>/report/index.html`), when written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub report: Option<String>,
    /// Why the HTML report could not be written (the run then exits 5 unless a
    /// verdict already fails it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub report_error: Option<String>,
    /// How the run ends: the exit code and its meaning.
    pub exit: ExitVerdict,
}

impl RunSummary {
    /// Builds the summary, counting statuses.
    pub fn new(
        run_id: String,
        run_dir: String,
        status: RunStatus,
        elapsed_s: f64,
        benchmarks: Vec<SummaryEntry>,
    ) -> Self {
        let count = |s: BenchStatus| benchmarks.iter().filter(|b| b.status == s).count();
        let passed = count(BenchStatus::Passed);
        let failed = count(BenchStatus::Failed);
        let mut summary = RunSummary {
            run_id,
            run_dir,
            status,
            passed,
            failed,
            not_run: benchmarks.len() - passed - failed,
            elapsed_s,
            benchmarks,
            comparison: None,
            saved_baseline: None,
            report: None,
            report_error: None,
            exit: Exit::Success.into(),
        };
        summary.exit = summary.exit_code().into();
        summary
    }

    /// The summary with the run's comparison attached.
    pub fn with_comparison(mut self, comparison: RunComparison) -> Self {
        attach_comparison(&mut self.benchmarks, &comparison);
        self.comparison = Some(comparison);
        self.exit = self.exit_code().into();
        self
    }

    /// The summary with where the HTML report was written, or why it was not.
    pub fn with_report(mut self, report: Result<std::path::PathBuf, String>) -> Self {
        match report {
            Ok(index) => self.report = Some(index.display().to_string()),
            Err(error) => self.report_error = Some(error),
        }
        self.exit = self.exit_code().into();
        self
    }

    /// How the run ends; see [`Exit::of_verdicts`] for the precedence. A report that
    /// could not be written is a setup error (5) when no verdict fails the run.
    pub fn exit_code(&self) -> Exit {
        let verdict = Exit::of_verdicts(
            self.status == RunStatus::Interrupted,
            self.failed > 0,
            self.comparison.as_ref().is_some_and(|c| c.gate_tripped),
        );
        if verdict == Exit::Success && self.report_error.is_some() {
            Exit::Setup
        } else {
            verdict
        }
    }

    /// Pretty JSON with a trailing newline.
    pub fn to_json_pretty(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("summaries always serialise");
        s.push('\n');
        s
    }

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
    for (id, note) in crate::gpu_notes::clock_lines(&c.set.other_clocks) {
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
    out.push_str(&crate::gpu_notes::render_terminal(
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

/// A relative spread in percent with two significant digits: `1.2%`, `14%`.
pub fn spread_percent(x: f64) -> String {
    let p = x * 100.0;
    if p >= 10.0 {
        format!("{p:.0}%")
    } else {
        format!("{p:.1}%")
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
        .map(|p| interval(p.estimate.point, p.estimate.lower, p.estimate.upper))
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

/// `16.12 ms [16.05, 16.20]`: bounds drop the unit when it is the point's.
pub fn interval(point: f64, lower: f64, upper: f64) -> String {
    let p = format_ns(point);
    let unit = p.rsplit_once(' ').map(|(_, u)| u).unwrap_or("");
    let bound = |x: f64| {
        let b = format_ns(x);
        match b.rsplit_once(' ') {
            Some((num, u)) if u == unit => num.to_string(),
            _ => b,
        }
    };
    format!("{p} [{}, {}]", bound(lower), bound(upper))
}

/// `s` cut to `max` characters, with `…` when cut.
pub fn shorten(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let cut: String = s.chars().take(max - 1).collect();
    format!("{cut}…")
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
mod tests {
    use super::*;
    use gpubench_analysis::{
        ColdCall, DeviceIdentity, Failure, FailureKind, Fingerprint, Flag, Measurement,
        MeasurementConfig, MemoryStats, RawRecord, Round, Sample, StopReason, Throughput,
        RECORD_FORMAT_VERSION,
    };

    /// Three processes at 1.611, 1.621 and 1.601 ms of device time per call.
    fn passed_record() -> RawRecord {
        let mut r = one_process_record();
        for shift in [0.1e6, -0.1e6] {
            let mut later = one_process_record();
            for s in &mut later.rounds[0].measurement.as_mut().unwrap().samples {
                s.device_ns = s.device_ns.map(|d| d + shift);
                s.wall_ns += shift;
            }
            r.append_rounds(later).unwrap();
        }
        r
    }

    fn one_process_record() -> RawRecord {
        let samples = (0..20)
            .map(|i| Sample {
                iters: 10,
                wall_ns: 16.2e6 + i as f64 * 1e3,
                host_ns: 4.9e6,
                device_ns: Some(16.1e6 + i as f64 * 1e3),
                clock: None,
            })
            .collect();
        RawRecord {
            format_version: RECORD_FORMAT_VERSION,
            id: "matmul/4096".into(),
            name: "matmul".into(),
            arg: Some("4096".into()),
            fingerprint: Fingerprint {
                device: DeviceIdentity {
                    kind: "cuda".into(),
                    index: Some(0),
                    name: "NVIDIA H200".into(),
                    total_memory_bytes: None,
                },
                ..Fingerprint::unknown("cuda:0", "t".into())
            },
            config: MeasurementConfig::standard(),
            rounds: vec![Round {
                round: 1,
                started_at: "2026-01-01T00:00:00Z".into(),
                measurement: Some(Measurement {
                    sync_cost_ns: 1e4,
                    cold: vec![ColdCall {
                        label: "first call".into(),
                        wall_ns: 132e6,
                        host_ns: 1e6,
                        device_ns: None,
                    }],
                    warmup: vec![],
                    samples,
                    naive: vec![],
                    throughput: Some(Throughput::Flops(2.0 * 4096f64.powi(3) / 10.0)),
                    memory: Some(MemoryStats {
                        peak_allocated_bytes: 3 << 29,
                        peak_reserved_bytes: 2 << 30,
                        allocated_bytes: 0,
                        reserved_bytes: 0,
                        alloc_retries: 0,
                        num_ooms: 0,
                    }),
                    stop_reason: StopReason::Converged,
                    flags: vec![Flag::DeviceBound],
                    device_timer: true,
                    kernel: None,
                    kernel_unavailable: None,
                }),
                failure: None,
                eager_compiled: None,
                telemetry: None,
                telemetry_unavailable: None,
            }],
        }
    }

    fn entry(record: &RawRecord, status: BenchStatus) -> SummaryEntry {
        SummaryEntry {
            name: format!("suite/{}", record.id),
            target: "suite".into(),
            id: record.id.clone(),
            status,
            record: Some(format!("{}.json", record.id)),
            summary: Some(BenchmarkSummary::from_record(record)),
            comparison: None,
        }
    }

    fn failed_record() -> RawRecord {
        let mut r = passed_record();
        r.id = "boom".into();
        r.rounds[0].measurement = None;
        r.rounds[0].failure = Some(Failure::new(
            FailureKind::Crash,
            "killed by signal 6 (SIGABRT)\nstderr ends with:\nabort() called",
        ));
        r
    }

    #[test]
    fn kernel_columns_verdicts_and_gpu_changes_in_the_terminal() {
        use crate::comparison::{Source, SourceKind, VerdictSettings};
        use gpubench_analysis::baseline::Gate;
        use gpubench_analysis::synthetic::SyntheticKernels;
        use gpubench_analysis::{BaselineEntry, CompareConfig, FailOn};
        use rand::SeedableRng;

        let gemm = SyntheticKernels::one("sm90_gemm", 1.2e6);
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(1);
        let mut was = passed_record();
        gemm.attach(&mut was, &mut rng);
        let mut now = passed_record();
        gemm.with_kernel("copy_kernel", 1e4)
            .attach(&mut now, &mut rng);
        let base = BaselineEntry::from_record(&was).unwrap();
        let c = RunComparison::judge(
            std::slice::from_ref(&now),
            std::slice::from_ref(&base),
            Source {
                kind: SourceKind::Baseline,
                name: "main".into(),
                path: "b".into(),
                default: false,
                device: None,
            },
            VerdictSettings {
                config: CompareConfig::default(),
                fail_on: FailOn::Regressed,
                allow_device_mismatch: false,
                gate: Gate::default(),
                allow_settings_mismatch: false,
            },
        )
        .unwrap();
        let entries = vec![entry(&now, BenchStatus::Passed)];
        let text = render_table(&entries, Some(&c));
        let lines: Vec<&str> = text.lines().collect();
        for column in [
            "kernel change",
            "counters",
            "kernel/iter",
            "kernels",
            "launch",
        ] {
            assert!(lines[0].contains(column), "{column}: {text}");
        }
        // Two kernels per call, 1.21 ms of kernel time against 1.61 ms of device time.
        let cells: Vec<&str> = lines[1]
            .split("  ")
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .collect();
        let at = cells
            .iter()
            .position(|c| c.starts_with("1.2") && c.ends_with(" ms"));
        let at = at.unwrap_or_else(|| panic!("no kernel time: {text}"));
        assert_eq!(&cells[at + 1..at + 3], ["2", "25%"], "{text}");
        assert!(cells.contains(&"+1 kernel per call"), "{text}");
        assert!(
            text.contains("what the GPU did differently from baseline `main`:\n  suite/matmul/4096: +1 kernel per call; new kernel `copy_kernel`"),
            "{text}"
        );
        let closing = render_comparison(&c, &entries, Exit::RegressionFound);
        assert!(
            closing.contains(
                "  on the GPU's own work: kernel time: 1 no change; counters: 1 regressed"
            ),
            "{closing}"
        );
        assert!(
            closing.contains("regression found (--fail-on regressed --gate-on time,kernel,counters): suite/matmul/4096 (counters: +1 kernel per call) (exit code 4)"),
            "{closing}"
        );

        // A run without kernel figures has no kernel columns and says why once.
        let mut cpu = passed_record();
        for m in cpu.rounds.iter_mut().filter_map(|x| x.measurement.as_mut()) {
            m.kernel_unavailable = Some("no kernel timing on cpu".into());
        }
        let text = render_table(&[entry(&cpu, BenchStatus::Passed)], None);
        assert!(!text.lines().next().unwrap().contains("kernel"), "{text}");
        assert!(
            text.contains("\nkernel time: not measured (no kernel timing on cpu)\n"),
            "{text}"
        );
    }

    #[test]
    fn table_shows_figures_and_failures() {
        let entries = vec![
            entry(&passed_record(), BenchStatus::Passed),
            entry(&failed_record(), BenchStatus::Failed),
            SummaryEntry {
                name: "suite/later".into(),
                target: "suite".into(),
                id: "later".into(),
                status: BenchStatus::Pending,
                record: None,
                summary: None,
                comparison: None,
            },
        ];
        let s = RunSummary::new(
            "r1".into(),
            "/t/runs/r1".into(),
            RunStatus::Interrupted,
            2.5,
            entries,
        );
        assert_eq!((s.passed, s.failed, s.not_run), (1, 1, 1));
        let text = s.render_human();
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[0].starts_with("benchmark") && lines[0].contains("time [95% interval]"),
            "{text}"
        );
        let matmul = lines[1];
        // Device time is primary: ~1.61 ms per iteration, with its interval over the
        // three processes and their spread (0.62%).
        assert!(matmul.contains("1.611 ms [1.576, 1.646]"), "{matmul}");
        assert!(matmul.contains("  3 ±0.6%  "), "{matmul}");
        assert!(matmul.contains("490.0 µs"), "host/iter: {matmul}");
        assert!(matmul.contains("132.0 ms"), "cold call: {matmul}");
        assert!(matmul.contains("TFLOP/s"), "{matmul}");
        assert!(matmul.contains("1.50 GiB"), "{matmul}");
        assert!(matmul.ends_with("passed (device-bound)"), "{matmul}");
        assert!(
            lines[2].ends_with("crash: killed by signal 6 (SIGABRT)"),
            "{text}"
        );
        assert!(lines[3].ends_with("not run"), "{text}");
        assert!(
            text.contains("\n  suite/boom (crash)\n    killed by signal 6"),
            "{text}"
        );
        assert!(text.contains("    abort() called"), "{text}");
        assert!(
            text.contains("3 benchmarks: 1 passed, 1 failed, 1 not run (interrupted) in 2.500 s; records in /t/runs/r1"),
            "{text}"
        );
        // Columns line up: every row's status starts where the header's does.
        let col = lines[0].find("status").unwrap();
        assert_eq!(
            lines[1].char_indices().nth(col).map(|(_, c)| c),
            Some('p'),
            "{text}"
        );
    }

    #[test]
    fn json_carries_the_figures() {
        let s = RunSummary::new(
            "r1".into(),
            "/d".into(),
            RunStatus::Completed,
            1.0,
            vec![entry(&passed_record(), BenchStatus::Passed)],
        );
        let v: serde_json::Value = serde_json::from_str(&s.to_json_pretty()).unwrap();
        assert_eq!(v["passed"], 1);
        assert_eq!(v["benchmarks"][0]["status"], "passed");
        assert_eq!(v["benchmarks"][0]["summary"]["primary_kind"], "device");
        let device = &v["benchmarks"][0]["summary"]["device"];
        assert!(device["estimate"]["point"].as_f64().unwrap() > 1e6);
        assert_eq!(device["basis"], "processes");
        assert_eq!(device["processes"]["count"], 3);
        assert_eq!(device["processes"]["medians"].as_array().unwrap().len(), 3);
    }

    #[test]
    fn intervals_share_the_points_unit() {
        assert_eq!(
            interval(16.12e6, 16.05e6, 16.2e6),
            "16.12 ms [16.05, 16.20]"
        );
        assert_eq!(
            interval(1.001e6, 999.0e3, 1.01e6),
            "1.001 ms [999.0 µs, 1.010]"
        );
    }

    #[test]
    fn long_messages_are_excerpted() {
        let msg: String = (0..40).map(|i| format!("line {i}\n")).collect();
        let e = excerpt(&msg, 12);
        assert_eq!(e.len(), 12);
        assert_eq!(e[0], "line 0");
        assert_eq!(e.last().unwrap(), "line 39");
        assert!(e[2].contains("29 lines"), "{e:?}");
    }
}
