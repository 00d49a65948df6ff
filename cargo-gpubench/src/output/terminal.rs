//! The end-of-run summary laid out for the terminal: a table (with a "change vs
//! baseline" column when the run was compared), the failures, and what the
//! comparison found (`--format json` is [`crate::output::json`], `--format markdown`
//! [`crate::output::markdown`]). Figures come from
//! `gpubench_analysis::summary` and verdicts from [`crate::compare`]; this module
//! only lays them out, coloured and as long as [`Console`] says (`-q`: only the
//! failure and verdict lines; `-v`: each process's median too).

use std::fmt::Write as _;

use gpubench_analysis::baseline::{Metric, Unit};
use gpubench_analysis::summary::BenchmarkSummary;
use gpubench_record::units::format_ns;

use crate::compare::summary::RunSummary;
use crate::compare::RunComparison;
use crate::console::{Console, Tone};
use crate::exit_code::Exit;
use crate::format::plural;
use crate::output::view::notes::{self, held_at_peak_lines, NoteKind};
use crate::output::view::table::{dash, Cell};
use crate::output::view::words::{self, counts_text};
use crate::output::view::{metrics, RowView, SummaryView};
use crate::store::manifest::BenchStatus;
use crate::store::references::SummaryEntry;
use crate::store::Source;

/// Lines of a failure message shown under the table.
const DETAIL_LINES: usize = 12;

impl RunSummary {
    /// The terminal table, the failures in detail, a closing line, and what the
    /// comparison with the baseline found; with `-q` only [`render_quiet`]'s lines and
    /// the closing ones.
    pub(crate) fn render_human(&self, console: Console) -> String {
        let mut closing = count_line(&self.benchmarks);
        if self.not_run > 0 {
            let _ = write!(closing, ", {} not run (interrupted)", self.not_run);
        }
        let _ = writeln!(
            closing,
            " in {}; records in {}",
            format_ns(self.elapsed_s * 1e9),
            self.run_dir
        );
        let exit = self.exit_code();
        let view = SummaryView::build(&self.benchmarks, self.comparison.as_ref());
        if console.quiet() {
            let mut out = render_quiet(&view, console);
            out.push_str(&closing);
            if let Some(c) = &self.comparison {
                out.push_str(&comparison_line(c));
                out.push_str(&gate_line(c, &self.benchmarks, exit, console));
            }
            return out;
        }
        let mut out = render_table(&view, console);
        if console.verbose() {
            out.push_str(&render_process_medians(&self.benchmarks));
        }
        out.push_str(&render_failures(&self.benchmarks, console));
        out.push_str(&render_memory_peaks(&self.benchmarks));
        out.push('\n');
        out.push_str(&closing);
        if let Some(ab) = &self.ab {
            let _ = writeln!(out, "{}, {}", ab.subject(), ab.how());
        }
        out.push_str(&render_comparison(&view, exit, console));
        out
    }
}

/// What `-q` shows of the benchmarks: a line for each that failed, and for each with
/// a regressed or improved verdict (on any metric), e.g. `suite/mm: time regressed
/// +50.0% [+49.2%, +50.8%]`; nothing for the others.
pub(crate) fn render_quiet(view: &SummaryView, console: Console) -> String {
    let mut out = String::new();
    for (i, e) in view.entries.iter().enumerate() {
        if e.status == BenchStatus::Failed {
            let why = match e.summary.as_ref().and_then(|s| s.outcome.failure.as_ref()) {
                Some(_) => format!(" ({})", view.figures[i].status.text),
                None => String::new(),
            };
            let failed = console.paint(Some(Tone::Failed), "failed");
            let _ = writeln!(out, "{}: {failed}{why}", e.name);
            continue;
        }
        let Some(row) = view.rows.get(i) else {
            continue;
        };
        // A line names each metric that moved for certain, e.g. `time regressed
        // +50.0% [+49.2%, +50.8%]`, `memory regressed: holds ...`.
        let parts: Vec<String> = row
            .verdicts
            .iter()
            .filter(|m| m.changed())
            .map(|m| {
                let mut part = format!("{} {}", m.label(), console.paint(m.tone(), &m.words));
                if let Some(detail) = &m.detail {
                    let _ = write!(part, ": {detail}");
                }
                if let Some(change) = &m.change {
                    let _ = write!(part, " {change}");
                }
                part
            })
            .collect();
        if !parts.is_empty() {
            let _ = writeln!(out, "{}: {}", e.name, parts.join("; "));
        }
    }
    out
}

/// With `-v`, under the table: each process's median of every benchmark, in the
/// order the processes ran, so a reader sees what the interval and the spread rest
/// on.
pub(crate) fn render_process_medians(entries: &[SummaryEntry]) -> String {
    let lines: Vec<String> = entries
        .iter()
        .filter_map(|e| {
            let p = e.summary.as_ref()?.primary()?;
            let medians: Vec<String> = p.processes.medians.iter().map(|m| format_ns(*m)).collect();
            (!medians.is_empty()).then(|| format!("  {}: {}\n", e.name, medians.join(", ")))
        })
        .collect();
    if lines.is_empty() {
        return String::new();
    }
    format!(
        "\nprocesses (the median of each, in the order they ran):\n{}",
        lines.concat()
    )
}

/// The failed benchmarks in detail (empty when none failed).
pub(crate) fn render_failures(entries: &[SummaryEntry], console: Console) -> String {
    let mut out = String::new();
    let failures: Vec<&SummaryEntry> = entries
        .iter()
        .filter(|b| b.status == BenchStatus::Failed)
        .collect();
    if !failures.is_empty() {
        let _ = writeln!(out, "\n{}", console.paint(Some(Tone::Failed), "failures:"));
        for b in failures {
            let Some(f) = b.summary.as_ref().and_then(|s| s.outcome.failure.as_ref()) else {
                continue;
            };
            let _ = writeln!(out, "\n  {} ({})", b.name, f.kind.label());
            for line in excerpt(&f.message, DETAIL_LINES) {
                let _ = writeln!(out, "    {line}");
            }
            if let Some(snapshot) = &f.memory_snapshot {
                let _ = writeln!(out, "    what held memory:");
                for line in snapshot.report_lines() {
                    let _ = writeln!(out, "      {line}");
                }
            }
        }
    }
    out
}

/// What held memory at each benchmark's peak (`--memory-peak-snapshot`), or why it
/// could not be read; empty when no benchmark asked for it.
pub(crate) fn render_memory_peaks(entries: &[SummaryEntry]) -> String {
    let mut out = String::new();
    for b in entries {
        let Some(s) = b.summary.as_ref() else {
            continue;
        };
        let Some(lines) = held_at_peak_lines(s) else {
            continue;
        };
        if out.is_empty() {
            out.push_str("\nwhat held memory at the peak:\n");
        }
        let _ = writeln!(out, "\n  {}", b.name);
        for line in lines {
            let _ = writeln!(out, "    {line}");
        }
    }
    out
}

/// `compared with baseline `main`: 1 regressed, 2 no change`: the comparison's
/// counts.
pub(crate) fn comparison_line(c: &RunComparison) -> String {
    let how = if c.baseline.default {
        " (the default when it is saved: --baseline NAME picks another, --no-baseline skips)"
    } else {
        ""
    };
    format!(
        "compared with {}{how}: {}\n",
        c.baseline.describe(),
        counts_text(c)
    )
}

/// What the comparison found, under the table: the baseline and the counts, what
/// was not compared and why, benchmarks on one side only, and the gate; empty
/// without a comparison.
pub(crate) fn render_comparison(view: &SummaryView, exit: Exit, console: Console) -> String {
    let Some(c) = view.comparison else {
        return String::new();
    };
    let mut out = comparison_line(c);
    if let Some(note) = words::detectable_note(c) {
        let _ = writeln!(out, "  could detect: {note}");
    }
    if let Some(gpu) = words::gpu_counts_text(c) {
        let _ = writeln!(out, "  on the GPU's own work: {gpu}");
    }
    if let Some(msg) = c.device_mismatch_message() {
        let _ = writeln!(out, "  warning: {msg}");
    }
    for n in view.notes_where(|k| matches!(k, NoteKind::CrossDevice { .. })) {
        if let NoteKind::CrossDevice { baseline, current } = &n.kind {
            let _ = writeln!(
                out,
                "  compared across devices (--allow-device-mismatch): {} ran on `{baseline}` in the baseline, on `{current}` now",
                n.benchmarks.join(", ")
            );
        }
    }
    for n in view.notes_of(&NoteKind::OtherSettings) {
        let _ = writeln!(
            out,
            "  compared across settings (--allow-settings-mismatch): {} was measured with {}",
            n.benchmarks.join(", "),
            n.text
        );
    }
    for n in view.notes_of(&NoteKind::OtherClocks) {
        let _ = writeln!(
            out,
            "  compared at other clocks: {}: {}",
            n.benchmarks.join(", "),
            n.text
        );
    }
    for n in view.notes_of(&NoteKind::NotCompared) {
        let _ = writeln!(
            out,
            "  not compared: {} ({})",
            n.benchmarks.join(", "),
            n.text
        );
    }
    for n in view.notes_of(&NoteKind::Ambiguous) {
        let verb = if n.benchmarks.len() == 1 { "is" } else { "are" };
        let _ = writeln!(
            out,
            "  {} {verb} ambiguous: {}",
            n.benchmarks.join(", "),
            n.text
        );
    }
    for n in view.notes_of(&NoteKind::New) {
        let _ = writeln!(
            out,
            "  new, not in the baseline: {}",
            n.benchmarks.join(", ")
        );
    }
    let missing = view.notes_where(|k| matches!(k, NoteKind::Missing { .. }));
    if !missing.is_empty() {
        let _ = writeln!(
            out,
            "  missing evidence (a gate cannot pass on what was not measured; --allow-missing \
             not-run|gone|not-compared|metric lets a kind pass):"
        );
        for n in missing {
            let allowed = n.kind == NoteKind::Missing { allowed: true };
            let _ = writeln!(
                out,
                "    {}: {}{}",
                n.benchmarks.join(", "),
                n.text,
                if allowed { " [allowed]" } else { "" }
            );
        }
    }
    for n in view.notes_of(&NoteKind::NotSelected) {
        let _ = writeln!(
            out,
            "  in the baseline, not selected here: {}",
            listed(&n.benchmarks, LISTED_NOT_SELECTED)
        );
    }
    out.push_str(&gate_line(c, view.entries, exit, console));
    out
}

/// `regression found (--fail-on …): suite/mm (time regressed) (exit code 4)`, in
/// bold red, or `no regression (…)` in green.
pub(crate) fn gate_line(
    c: &RunComparison,
    entries: &[SummaryEntry],
    exit: Exit,
    console: Console,
) -> String {
    let name_of = |id: &str| c.name_of(id, entries);
    let fail_on = c.settings.fail_on;
    let gate = c.settings.gate;
    if c.gate_tripped {
        let tripping: Vec<String> = words::tripping_reasons(c)
            .into_iter()
            .map(|(id, why)| format!("{} ({why})", name_of(id)))
            .collect();
        let found = console.paint(Some(Tone::Failed), words::trip_headline(c));
        format!(
            "{found} (--fail-on {fail_on} --gate-on {gate}): {}{}
",
            tripping.join(", "),
            if exit == Exit::RegressionFound {
                " (exit code 4)".to_string()
            } else {
                format!(
                    " (exit code {}: a failed benchmark wins over a regression)",
                    exit.code()
                )
            }
        )
    } else if exit == Exit::Interrupted {
        // What ran found nothing, but what did not run has no verdict at all.
        let not_run = entries
            .iter()
            .filter(|e| matches!(e.status, BenchStatus::Interrupted | BenchStatus::Pending))
            .count();
        let stopped = console.paint(Some(Tone::NotRun), "interrupted");
        format!(
            "{stopped}: no regression among the benchmarks that ran, no verdict on the \
             {not_run} that did not (--fail-on {fail_on} --gate-on {gate}) (exit code 130)\n"
        )
    } else {
        let none = console.paint(Some(Tone::Improved), "no regression");
        format!("{none} (--fail-on {fail_on} --gate-on {gate})\n")
    }
}

/// Benchmarks named in the line of those not selected; the rest are counted.
const LISTED_NOT_SELECTED: usize = 10;

/// `a, b, c and 4 more`: the first `shown` of `ids`.
fn listed(ids: &[String], shown: usize) -> String {
    let mut text = ids
        .iter()
        .take(shown)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if ids.len() > shown {
        text.push_str(&format!(" and {} more", ids.len() - shown));
    }
    text
}

/// The change column's cell: `+12.3% [+10.1%, +14.6%] regressed`, `+0.6% [+0.5%,
/// +0.7%] no change (certain, under ±1%)`, `not compared`, `new`; a dash where the
/// status column says why there is none (failed, not run).
fn change_cell(row: &RowView) -> Cell {
    match row.verdict(Metric::Time) {
        Some(m) => Cell::toned(m.cell(), m.tone()),
        // Not compared or new: what the status column cannot say.
        None if matches!(row.word.tone, Some(Tone::Ambiguous | Tone::New)) => row.word.clone(),
        None => dash().into(),
    }
}

/// Lines under the terminal table naming throttled or contended benchmarks (empty
/// when none was).
pub(crate) fn render_conditions(view: &SummaryView) -> String {
    let noted = view.notes_where(|k| matches!(k, NoteKind::Conditions { .. }));
    if noted.is_empty() {
        return String::new();
    }
    let mut out = format!("\n{}:\n", notes::conditions_heading(noted.iter().copied()));
    for n in noted {
        let _ = writeln!(out, "  {}: {}", n.benchmarks.join(", "), n.text);
    }
    out
}

/// Lines under the terminal table on each benchmark's power cap, % of peak and
/// energy per call (empty when none has these figures).
fn render_power(view: &SummaryView) -> String {
    let noted = view.notes_of(&NoteKind::PowerAndPeak);
    if noted.is_empty() {
        return String::new();
    }
    let mut out = format!("\n{}:\n", notes::POWER_HEADING);
    for n in noted {
        let _ = writeln!(out, "  {}: {}", n.benchmarks.join(", "), n.text);
    }
    out
}

/// The table: one row per benchmark, columns aligned; with a comparison, a
/// `change vs NAME` column after the time, and kernel-time and counter columns when
/// either side measured them. Kernel columns appear only when some benchmark has
/// kernel figures; otherwise a line says why there are none.
pub(crate) fn render_table(view: &SummaryView, console: Console) -> String {
    let entries = view.entries;
    let confidence = entries
        .iter()
        .filter_map(|e| e.summary.as_ref()?.primary())
        .map(|p| p.estimate.confidence)
        .next()
        .unwrap_or(0.95);
    let kernel_columns = entries
        .iter()
        .filter_map(|e| e.summary.as_ref())
        .any(|s| s.timing.kernel.is_some() || s.counters.counts.is_some());
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
    let mut rows: Vec<Vec<Cell>> = entries
        .iter()
        .zip(&view.figures)
        .map(|(e, f)| {
            let mut cells: Vec<Cell> = [&e.name, &f.time, &f.processes, &f.host, &f.device]
                .into_iter()
                .cloned()
                .map(Cell::from)
                .collect();
            if kernel_columns {
                let kernels = f.kernels.clone().unwrap_or_else(dash);
                cells.extend([f.kernel.clone(), kernels, f.launch.clone()].map(Cell::from));
            }
            cells.extend([&f.cold, &f.throughput, &f.memory].map(|x| Cell::from(x.clone())));
            cells.push(f.status.clone());
            cells
        })
        .collect();
    if let Some(c) = view.comparison {
        let mut at = 2;
        header.insert(at, format!("change vs {}", c.baseline.name));
        for (r, v) in rows.iter_mut().zip(&view.rows) {
            r.insert(at, change_cell(v));
        }
        // `ab` shows what each verdict could have seen (the line under the table
        // says what the figure is).
        if c.is_ab() {
            at += 1;
            header.insert(at, "could detect".into());
            for (r, v) in rows.iter_mut().zip(&view.rows) {
                r.insert(at, v.could_detect.clone().unwrap_or_else(dash).into());
            }
        }
        for &metric in &view.metric_columns {
            at += 1;
            header.insert(at, metric_header(metric).into());
            for (r, v) in rows.iter_mut().zip(&view.rows) {
                let cell = match v.verdict(metric) {
                    // The memory column says the verdict; the lines under the table
                    // say what changed.
                    Some(m) if m.metric == Metric::Memory => Cell::toned(m.words.clone(), m.tone()),
                    Some(m) => Cell::toned(m.cell(), m.tone()),
                    None => dash().into(),
                };
                r.insert(at, cell);
            }
        }
    }
    let mut out = align_cells(&header, &rows, console);
    out.push_str(&render_process_notes(view));
    out.push_str(&render_eager_compiled(view));
    out.push_str(&render_conditions(view));
    out.push_str(&render_power(view));
    out.push_str(&render_kernel_notes(view));
    out.push_str(&render_memory_notes(view));
    out.push_str(&notes::cpu_threads_line(
        entries
            .iter()
            .filter_map(|e| Some((e.name.as_str(), e.summary.as_ref()?))),
    ));
    out
}

/// The terminal's header of a metric's change column.
fn metric_header(metric: Metric) -> &'static str {
    metric.spec().column
}

/// Lines under the table on kernel time: why there is none, which benchmarks could
/// not be captured in a CUDA graph, whose counts differ between processes, and what
/// the GPU did differently from the baseline.
pub(crate) fn render_kernel_notes(view: &SummaryView) -> String {
    let entries = view.entries;
    let mut out = String::new();
    let measured: Vec<(&SummaryEntry, &BenchmarkSummary)> = entries
        .iter()
        .filter_map(|e| Some((e, e.summary.as_ref().filter(|s| s.primary().is_some())?)))
        .collect();
    let missing: Vec<&str> = measured
        .iter()
        .filter(|(_, s)| s.timing.kernel.is_none())
        .filter_map(|(_, s)| s.kernels.unavailable.as_deref())
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
            if let (None, Some(why)) = (&s.timing.kernel, &s.kernels.unavailable) {
                let _ = writeln!(out, "  {}: no kernel time ({why})", e.name);
            }
        }
    }
    for (e, s) in &measured {
        if let Some(why) = &s.kernels.not_capturable {
            let _ = writeln!(
                out,
                "  {}: not capturable in a CUDA graph ({why}); kernel time from the profiler",
                e.name
            );
        }
        if s.counters.vary {
            let _ = writeln!(
                out,
                "  {}: processes counted different work per call; the counters are the first's",
                e.name
            );
        }
    }
    if let Some(c) = view.comparison {
        let changes: Vec<String> = view
            .notes_of(&NoteKind::GpuChanges)
            .into_iter()
            .map(|n| format!("  {}: {}", n.benchmarks.join(", "), n.text))
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

/// Lines under the table on memory: each benchmark that holds memory per call, with
/// the figure, and each whose memory changed against the baseline, figure by figure
/// with the tolerance it went beyond.
pub(crate) fn render_memory_notes(view: &SummaryView) -> String {
    let mut out = String::new();
    for n in view.notes_of(&NoteKind::HoldsMemory) {
        let _ = writeln!(out, "  {}: {}", n.benchmarks.join(", "), n.text);
    }
    if let Some(c) = view.comparison {
        let changed = view.notes_of(&NoteKind::MemoryChanged);
        if !changed.is_empty() {
            let _ = writeln!(out, "\nmemory against {}:", c.baseline.describe());
            for n in changed {
                let _ = writeln!(out, "  {}: {}", n.benchmarks.join(", "), n.text);
            }
        }
    }
    out
}

/// Lines under the table for benchmarks whose processes disagree: the range of their
/// medians, or the two modes they fall into.
pub(crate) fn render_process_notes(view: &SummaryView) -> String {
    let mut out = String::new();
    for n in view.notes_of(&NoteKind::Unstable) {
        let _ = writeln!(out, "  {}: {}", n.benchmarks.join(", "), n.text);
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

/// Rows of cells under a header, columns aligned with two spaces between them, each
/// cell painted in its tone. Widths count the characters a reader sees: colour codes
/// go around the text, the padding after it.
pub(crate) fn align_cells(header: &[String], rows: &[Vec<Cell>], console: Console) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (w, cell) in widths.iter_mut().zip(r) {
            *w = (*w).max(cell.text.chars().count());
        }
    }
    let header: Vec<Cell> = header.iter().cloned().map(Cell::from).collect();
    let mut out = String::new();
    for r in std::iter::once(header.as_slice()).chain(rows.iter().map(Vec::as_slice)) {
        let mut line = String::new();
        for (i, (cell, w)) in r.iter().zip(&widths).enumerate() {
            if i > 0 {
                line.push_str("  ");
            }
            line.push_str(&console.paint(cell.tone, &cell.text));
            if i + 1 < r.len() {
                line.extend(std::iter::repeat_n(' ', w - cell.text.chars().count()));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// The passed/failed counts of `entries`, e.g. `3 benchmarks: 2 passed, 1 failed`.
pub(crate) fn count_line(entries: &[SummaryEntry]) -> String {
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

/// Lines under the table for benchmarks that compare eager with compiled.
pub(crate) fn render_eager_compiled(view: &SummaryView) -> String {
    let lines: Vec<String> = view
        .notes_of(&NoteKind::EagerCompiled)
        .into_iter()
        .map(|n| format!("  {}: {}\n", n.benchmarks.join(", "), n.text))
        .collect();
    if lines.is_empty() {
        return String::new();
    }
    format!("\neager versus compiled:\n{}", lines.concat())
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

/// What `compare` prints: both sides, a compact table, failures and the comparison;
/// with `-q` only the failure and verdict lines and the closing ones, with `-v` each
/// process's median of CURRENT too.
pub(crate) fn render_sides(
    old: &Source,
    new: &Source,
    view: &SummaryView,
    exit: Exit,
    console: Console,
) -> String {
    let rows = view.entries;
    let Some(comparison) = view.comparison else {
        return render_table(view, console);
    };
    if console.quiet() {
        let mut out = render_quiet(view, console);
        out.push_str(&format!("{}\n", count_line(rows)));
        out.push_str(&comparison_line(comparison));
        out.push_str(&gate_line(comparison, rows, exit, console));
        return out;
    }
    let mut out = format!(
        "comparing {} ({}) with {} ({}) as the baseline\n\n",
        new.describe(),
        new.path,
        old.describe(),
        old.path
    );
    // Energy has no figure elsewhere in this table, so its column shows the
    // baseline's and the change to this side's, with its verdict.
    let energy: Vec<Metric> = view
        .metric_columns
        .iter()
        .copied()
        .filter(|m| m.spec().unit == Unit::Joules)
        .collect();
    let mut header = vec![
        "benchmark".to_string(),
        "baseline median".to_string(),
        "current median".to_string(),
        format!(
            "change [{:.0}% CI]",
            comparison.settings.config.confidence * 100.0
        ),
        "verdict".to_string(),
    ];
    header.extend(energy.iter().map(|m| m.spec().column.to_string()));
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
            let mut cells = vec![
                e.name.clone().into(),
                time.map_or_else(dash, |c| fmt(c.baseline_estimate)).into(),
                current.map_or_else(dash, fmt).into(),
                row.verdict(Metric::Time)
                    .and_then(|m| m.change.clone())
                    .unwrap_or_else(dash)
                    .into(),
                word,
            ];
            cells.extend(energy.iter().map(|&m| match row.verdict(m) {
                Some(v) => Cell::toned(v.cell(), v.tone()),
                None => dash().into(),
            }));
            cells
        })
        .collect();
    out.push_str(&align_cells(&header, &table, console));
    if console.verbose() {
        out.push_str(&render_process_medians(rows));
    }
    out.push_str(&render_failures(rows, console));
    out.push_str(&format!("\n{}\n", count_line(rows)));
    out.push_str(&render_comparison(view, exit, console));
    out
}

#[cfg(test)]
mod tests;
