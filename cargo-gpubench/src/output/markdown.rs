//! The Markdown summary (`--format markdown`, `--summary-file`): a short header with
//! the device and the baseline, one table row per benchmark (baseline median, current
//! median, change with its interval, verdict word), then failures, benchmarks on one
//! side only, and the result with its exit code. Made for a pull-request comment: no
//! emoji, no HTML, and everything a benchmark name or a message holds is escaped.

use anyhow::Context;
use std::fmt::Write as _;

use gpubench_analysis::baseline::ComparisonOutcome;
use gpubench_analysis::kernels::Counter;
use gpubench_analysis::units::format_ns;
use gpubench_analysis::{BenchmarkSummary, Verdict};

use crate::compare::{
    change_text, counter_changes, counters_text, gpu_changes, kernel_comparison, outcome_word,
    RunComparison,
};
use crate::exit_code::Exit;
use crate::format::{figure, plain_percent, plural, shorten, spread_percent};
use crate::output::json::SummaryEntry;
use crate::output::terminal::{kernel_cells, process_note, processes_cell};
use crate::store::manifest::BenchStatus;
use crate::store::SourceKind;

/// Characters of a failure's first line quoted.
const REASON_CHARS: usize = 120;

/// What a Markdown summary shows.
#[derive(Debug, Clone, Copy)]
pub struct MarkdownSummary<'a> {
    /// What is summarised, already formatted, e.g. ``run `2026…` ``.
    pub subject: &'a str,
    /// The benchmarks, in order.
    pub entries: &'a [SummaryEntry],
    /// The comparison with the baseline, when there was one.
    pub comparison: Option<&'a RunComparison>,
    /// How the invocation ends.
    pub exit: Exit,
}

impl MarkdownSummary<'_> {
    /// The Markdown text, ending with a newline.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "### cargo gpubench: {}\n", self.subject);
        out.push_str(&self.header_line());
        out.push_str("\n\n");
        match self.comparison {
            Some(c) => self.compared_table(&mut out, c),
            None => self.plain_table(&mut out),
        }
        self.unstable(&mut out);
        self.eager_compiled(&mut out);
        out.push_str(&crate::output::gpu_notes::render_markdown(
            self.entries
                .iter()
                .filter_map(|e| Some((e.name.as_str(), e.summary.as_ref()?))),
            code,
            text,
        ));
        self.failures(&mut out);
        if let Some(c) = self.comparison {
            self.one_side_only(&mut out, c);
        }
        let _ = writeln!(out, "\n{}", self.result_sentence());
        out
    }

    fn header_line(&self) -> String {
        let device = self
            .comparison
            .and_then(|c| c.current_device.clone())
            .or_else(|| {
                self.summaries()
                    .map(|s| s.device_name.clone())
                    .find(|n| known(n))
            });
        let label = self
            .summaries()
            .find(|s| known(&s.device_name))
            .map(|s| s.device_label.clone());
        let mut parts = vec![match (device, label) {
            (Some(d), Some(l)) => format!("**Device:** {} ({})", text(&d), code(&l)),
            (Some(d), None) => format!("**Device:** {}", text(&d)),
            _ => "**Device:** unknown".to_string(),
        }];
        match self.comparison {
            Some(c) => {
                let what = match c.baseline.kind {
                    SourceKind::Baseline => "",
                    SourceKind::Run => "run ",
                };
                let mut notes = Vec::new();
                if let Some(d) = &c.baseline.device {
                    notes.push(text(d));
                }
                if c.baseline.default {
                    notes.push("the default".to_string());
                }
                let notes = if notes.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", notes.join("; "))
                };
                parts.push(format!(
                    "**Baseline:** {what}{}{notes}",
                    code(&c.baseline.name)
                ));
                let s = &c.settings;
                parts.push(format!(
                    "**Gate:** `--fail-on {} --gate-on {}`, significance {}, noise threshold ±{} (host-bound ±{})",
                    s.fail_on,
                    s.gate,
                    s.config.significance,
                    plain_percent(s.config.noise_threshold),
                    plain_percent(s.config.host_noise_threshold)
                ));
            }
            None => parts.push("**Baseline:** none".to_string()),
        }
        parts.join(" · ")
    }

    fn summaries(&self) -> impl Iterator<Item = &BenchmarkSummary> {
        self.entries.iter().filter_map(|e| e.summary.as_ref())
    }

    fn compared_table(&self, out: &mut String, c: &RunComparison) {
        let confidence = c.settings.config.confidence * 100.0;
        let outcome = |e: &SummaryEntry| c.get(&e.id).map(|b| &b.outcome);
        let kernel_column = self
            .entries
            .iter()
            .filter_map(outcome)
            .any(|o| kernel_comparison(o).is_some());
        let counters_column = self
            .entries
            .iter()
            .filter_map(outcome)
            .any(|o| counters_text(o).is_some());
        let verdict = if kernel_column || counters_column {
            "Verdict on time"
        } else {
            "Verdict"
        };
        let mut header = format!(
            "| Benchmark | Baseline | Current | Change [{confidence:.0}% CI] | Processes (spread) | {verdict} |"
        );
        let mut rule = "| :-- | --: | --: | --: | --: | :-- |".to_string();
        if kernel_column {
            header.push_str(&format!(" Kernel time [{confidence:.0}% CI] |"));
            rule.push_str(" --: |");
        }
        if counters_column {
            header.push_str(" Counters |");
            rule.push_str(" :-- |");
        }
        let _ = writeln!(out, "{header}\n{rule}");
        for e in self.entries {
            let passed = e.status == BenchStatus::Passed;
            let current = || {
                current_estimate(e)
                    .filter(|_| passed)
                    .map(format_ns)
                    .unwrap_or_else(dash)
            };
            let processes = || {
                e.summary
                    .as_ref()
                    .filter(|_| passed)
                    .map(processes_cell)
                    .unwrap_or_else(dash)
            };
            let (baseline, now, change, procs, verdict) = match c.get(&e.id).map(|b| &b.outcome) {
                Some(o @ ComparisonOutcome::Compared { comparison: x, .. }) => {
                    let word = outcome_word(o);
                    let word = if x.verdict == Verdict::Regressed {
                        format!("**{word}**")
                    } else {
                        word.to_string()
                    };
                    let spread = x
                        .spread
                        .map(|s| format!(" (±{})", spread_percent(s)))
                        .unwrap_or_default();
                    (
                        format_ns(x.baseline_estimate),
                        format_ns(x.current_estimate),
                        change_text(&x.change),
                        format!(
                            "{} vs {}{spread}",
                            x.baseline_processes, x.current_processes
                        ),
                        word,
                    )
                }
                Some(o) => (
                    dash(),
                    current(),
                    dash(),
                    processes(),
                    outcome_word(o).to_string(),
                ),
                None => (
                    dash(),
                    current(),
                    dash(),
                    processes(),
                    status_word(e, c).to_string(),
                ),
            };
            let mut line = format!(
                "| {} | {baseline} | {now} | {change} | {procs} | {verdict} |",
                cell_code(&e.name)
            );
            if kernel_column {
                let cell = outcome(e)
                    .and_then(kernel_comparison)
                    .map(|k| {
                        let word = if k.verdict == Verdict::Regressed {
                            format!("**{}**", k.verdict.label())
                        } else {
                            k.verdict.label().to_string()
                        };
                        format!("{} {word}", change_text(&k.change))
                    })
                    .unwrap_or_else(dash);
                let _ = write!(line, " {cell} |");
            }
            if counters_column {
                let cell = match outcome(e).and_then(counter_changes) {
                    Some([]) => Verdict::NoChange.label().to_string(),
                    Some(changes) => {
                        let words: Vec<String> = changes.iter().map(|c| c.describe()).collect();
                        format!("**{}**", text(&words.join(", ")))
                    }
                    None => dash(),
                };
                let _ = write!(line, " {cell} |");
            }
            let _ = writeln!(out, "{line}");
        }
        let _ = writeln!(out, "\n**Verdicts:** {}.", c.counts_text());
        if let Some(gpu) = c.gpu_counts_text() {
            let _ = writeln!(out, "\n**On the GPU's own work:** {}.", text(&gpu));
        }
        let changed: Vec<String> = self
            .entries
            .iter()
            .filter_map(|e| {
                let words = gpu_changes(outcome(e)?);
                (!words.is_empty()).then(|| {
                    let words: Vec<String> = words.iter().map(|w| backticked(w)).collect();
                    format!("- {}: {}", code(&e.name), words.join("; "))
                })
            })
            .collect();
        if !changed.is_empty() {
            let _ = writeln!(
                out,
                "\n**What the GPU did differently:**\n\n{}",
                changed.join("\n")
            );
        }
        for (id, note) in c.notes() {
            let name = self
                .entries
                .iter()
                .find(|e| e.id == id)
                .map_or(id, |e| e.name.as_str());
            let _ = writeln!(out, "\n> **Ambiguous:** {}: {}.", code(name), text(note));
        }
        if let Some(msg) = c.device_mismatch_message() {
            let _ = writeln!(out, "\n> **Warning:** {}.", text(&msg));
        }
        for x in &c.set.other_settings {
            let _ = writeln!(
                out,
                "\n> **Note:** {} was compared across settings (`--allow-settings-mismatch`): {}.",
                code(&x.id),
                text(&x.differences.join("; "))
            );
        }
        for (id, note) in crate::output::gpu_notes::clock_lines(&c.set.other_clocks) {
            let _ = writeln!(
                out,
                "\n> **Note:** {} ran at other clocks: {}.",
                code(&id),
                text(&note)
            );
        }
        for x in &c.set.cross_device {
            let _ = writeln!(
                out,
                "\n> **Note:** {} was compared across devices (`--allow-device-mismatch`): {} in the baseline, {} now.",
                code(&x.id),
                text(&x.baseline_device),
                text(&x.current_device)
            );
        }
    }

    fn plain_table(&self, out: &mut String) {
        let kernel_column = self.summaries().any(|s| s.kernel.is_some());
        if kernel_column {
            out.push_str("| Benchmark | Time [95% interval] | Processes (spread) | Kernel time (kernels) | Status |\n");
            out.push_str("| :-- | --: | --: | --: | :-- |\n");
        } else {
            out.push_str("| Benchmark | Time [95% interval] | Processes (spread) | Status |\n");
            out.push_str("| :-- | --: | --: | :-- |\n");
        }
        for e in self.entries {
            let time = e
                .summary
                .as_ref()
                .and_then(BenchmarkSummary::primary)
                .map(|p| figure(&p.estimate, &p.processes.medians))
                .unwrap_or_else(|| "—".to_string());
            let processes = e
                .summary
                .as_ref()
                .map(processes_cell)
                .unwrap_or_else(|| "—".to_string());
            let kernel = if kernel_column {
                let [k, n, _] = kernel_cells(e.summary.as_ref());
                let counted = e
                    .summary
                    .as_ref()
                    .and_then(|s| s.counters?.per_call(Counter::Kernels))
                    .is_some();
                if counted {
                    format!(" {k} ({n}) |")
                } else {
                    format!(" {k} |")
                }
            } else {
                String::new()
            };
            let _ = writeln!(
                out,
                "| {} | {time} | {processes} |{kernel} {} |",
                cell_code(&e.name),
                run_status_word(e.status)
            );
        }
        if !kernel_column {
            let why: Vec<&str> = self
                .summaries()
                .filter_map(|s| s.kernel_unavailable.as_deref())
                .collect();
            if let Some(first) = why.first() {
                let _ = writeln!(out, "\nKernel time: not measured ({}).", text(first));
            }
        }
    }

    fn unstable(&self, out: &mut String) {
        let notes: Vec<(&SummaryEntry, String)> = self
            .entries
            .iter()
            .filter_map(|e| Some((e, e.summary.as_ref().and_then(process_note)?)))
            .collect();
        if notes.is_empty() {
            return;
        }
        out.push_str("\n**Unstable across processes** (each process is a fresh start; the interval covers them):\n\n");
        for (e, note) in notes {
            let _ = writeln!(out, "- {}: {}", code(&e.name), text(&note));
        }
    }

    fn eager_compiled(&self, out: &mut String) {
        let lines: Vec<(&SummaryEntry, String)> = self
            .entries
            .iter()
            .filter_map(|e| {
                let c = e.summary.as_ref()?.eager_compiled.as_ref()?;
                Some((e, crate::output::eager_compiled::line(c)))
            })
            .collect();
        if lines.is_empty() {
            return;
        }
        out.push_str("\n**Eager versus compiled:**\n\n");
        for (e, line) in lines {
            let _ = writeln!(out, "- {}: {}", code(&e.name), text(&line));
        }
    }

    fn failures(&self, out: &mut String) {
        let failed: Vec<&SummaryEntry> = self
            .entries
            .iter()
            .filter(|e| e.status == BenchStatus::Failed)
            .collect();
        if failed.is_empty() {
            return;
        }
        out.push_str("\n**Failed:**\n\n");
        for e in failed {
            match e.summary.as_ref().and_then(|s| s.failure.as_ref()) {
                Some(f) => {
                    let first = f.message.lines().next().unwrap_or("").trim();
                    let _ = writeln!(
                        out,
                        "- {} ({}): {}",
                        code(&e.name),
                        f.kind.label(),
                        text(&shorten(first, REASON_CHARS))
                    );
                }
                None => {
                    let _ = writeln!(out, "- {}", code(&e.name));
                }
            }
        }
    }

    fn one_side_only(&self, out: &mut String, c: &RunComparison) {
        let name_of = |id: &str| {
            let name = self
                .entries
                .iter()
                .find(|e| e.id == id)
                .map_or(id, |e| e.name.as_str());
            code(name)
        };
        let not_compared: Vec<String> = c
            .not_compared()
            .into_iter()
            .map(|(id, reason)| format!("- {}: {}", name_of(id), text(reason)))
            .collect();
        if !not_compared.is_empty() {
            let _ = writeln!(out, "\n**Not compared:**\n\n{}", not_compared.join("\n"));
        }
        if !c.set.missing_in_baseline.is_empty() {
            let names: Vec<String> = c
                .set
                .missing_in_baseline
                .iter()
                .map(|id| name_of(id))
                .collect();
            let _ = writeln!(out, "\n**New** (not in the baseline): {}", names.join(", "));
        }
        if !c.set.missing_in_current.is_empty() {
            let names: Vec<String> = c.set.missing_in_current.iter().map(|id| code(id)).collect();
            let _ = writeln!(
                out,
                "\n**Missing** (in the baseline, not run here): {}",
                names.join(", ")
            );
        }
    }

    fn result_sentence(&self) -> String {
        let code_n = self.exit.code();
        let gate = self.comparison.filter(|c| c.gate_tripped).map(|c| {
            let tripping: Vec<String> = c
                .tripping_reasons()
                .into_iter()
                .map(|(id, why)| {
                    let name = self
                        .entries
                        .iter()
                        .find(|e| e.id == id)
                        .map_or(id, |e| e.name.as_str());
                    format!("{} ({})", code(name), text(&why))
                })
                .collect();
            format!(
                "{} (`--fail-on {} --gate-on {}`)",
                tripping.join(", "),
                c.settings.fail_on,
                c.settings.gate
            )
        });
        match self.exit {
            Exit::Interrupted => {
                let not_run = self
                    .entries
                    .iter()
                    .filter(|e| !matches!(e.status, BenchStatus::Passed | BenchStatus::Failed))
                    .count();
                format!(
                    "**Result: interrupted** (exit code {code_n}): {not_run} benchmark{} did not run.",
                    plural(not_run)
                )
            }
            Exit::BenchmarkFailed => {
                let failed = self
                    .entries
                    .iter()
                    .filter(|e| e.status == BenchStatus::Failed)
                    .count();
                let also = gate
                    .map(|g| format!("; a regression was also found: {g}"))
                    .unwrap_or_default();
                format!(
                    "**Result: {failed} benchmark{} failed** (exit code {code_n}){also}.",
                    plural(failed)
                )
            }
            Exit::RegressionFound => format!(
                "**Result: regression found** (exit code {code_n}): {}.",
                gate.unwrap_or_default()
            ),
            Exit::Setup => format!(
                "**Result: setup error** (exit code {code_n}): the benchmarks passed, but \
                 their results could not all be written (see the log)."
            ),
            _ => match self.comparison {
                Some(c) => format!(
                    "**Result: no regression** (exit code {code_n}, `--fail-on {} --gate-on {}`).",
                    c.settings.fail_on, c.settings.gate
                ),
                None => format!("**Result: passed** (exit code {code_n})."),
            },
        }
    }
}

/// The word for a benchmark the baseline lacks.
fn status_word(e: &SummaryEntry, c: &RunComparison) -> &'static str {
    match e.status {
        BenchStatus::Failed => "failed",
        BenchStatus::Interrupted | BenchStatus::Pending => "not run",
        BenchStatus::Passed if c.is_new(&e.id) => "new",
        BenchStatus::Passed => "—",
    }
}

fn run_status_word(status: BenchStatus) -> &'static str {
    match status {
        BenchStatus::Passed => "passed",
        BenchStatus::Failed => "failed",
        BenchStatus::Interrupted | BenchStatus::Pending => "not run",
    }
}

fn current_estimate(e: &SummaryEntry) -> Option<f64> {
    e.summary
        .as_ref()
        .and_then(BenchmarkSummary::primary)
        .map(|p| p.estimate.point)
}

fn dash() -> String {
    "—".to_string()
}

/// `s` as Markdown text whose backticked names (kernel names) stay code spans.
fn backticked(s: &str) -> String {
    s.split('`')
        .enumerate()
        .map(|(i, part)| if i % 2 == 1 { code(part) } else { text(part) })
        .collect()
}

fn known(name: &str) -> bool {
    !name.is_empty() && name != "unknown"
}

/// `s` as an inline code span, whatever backticks it holds.
pub fn code(s: &str) -> String {
    let longest = s.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    let pad = if longest > 0 { " " } else { "" };
    format!("{fence}{pad}{s}{pad}{fence}")
}

/// `s` as an inline code span in a table cell, where a pipe must be escaped even
/// inside code.
pub fn cell_code(s: &str) -> String {
    code(&s.replace('|', "\\|"))
}

/// `s` as plain Markdown text: characters that would format or break a table are
/// escaped.
pub fn text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '|' | '#' => {
                out.push('\\');
                out.push(c);
            }
            '\n' | '\r' => out.push(' '),
            _ => out.push(c),
        }
    }
    out
}

/// Writes the Markdown summary to `path` (`--summary-file`), creating its directory,
/// atomically.
pub fn write_summary_file(path: &std::path::Path, markdown: &str) -> anyhow::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("failed to create the directory of {}", path.display()))?;
    }
    crate::store::runs::write_atomic(path, markdown.as_bytes())
        .context("failed to write the summary file")
}

#[cfg(test)]
mod tests;
