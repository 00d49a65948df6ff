//! The Markdown summary (`--format markdown`, `--summary-file`): a link to the HTML
//! report, a short header with the device and the baseline, one table row per
//! benchmark (baseline median, current median, change with its interval, verdict
//! word), then failures, benchmarks on one side only, and the result with its exit
//! code. Made for a pull-request comment: no emoji, no HTML but `<details>` folds, and
//! everything a benchmark name or a message holds is escaped. Long tables and lists
//! fold ([`TABLE_ROWS_SHOWN`], [`LIST_ITEMS_SHOWN`]), so a comment stays a screen long
//! with what needs a reader's eye in view.

use anyhow::Context;
use std::fmt::Write as _;

use gpubench_analysis::baseline::{Judgement, Metric};
use gpubench_analysis::processes::Bound;
use gpubench_analysis::BenchmarkSummary;
use gpubench_record::units::format_ns;

use crate::compare::RunComparison;
use crate::exit_code::Exit;
use crate::format::{plain_percent, plural, shorten, spread_percent};
use crate::output::view::drifts;
use crate::output::view::metrics::{self, MetricView};
use crate::output::view::notes::{self, Note, NoteKind};
use crate::output::view::table::dash;
use crate::output::view::words::{self, counts_text};
use crate::output::view::SummaryView;
use crate::store::manifest::BenchStatus;
use crate::store::references::SummaryEntry;
use crate::store::SourceKind;

mod blocks;

use blocks::{backticked, fold_table, inline_list, link_target, quoted, Row};
pub(crate) use blocks::{cell_code, code, list, text};

/// Characters of a failure's first line quoted.
const REASON_CHARS: usize = 120;

/// Where the HTML report is, for the summary's first line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReportLink<'a> {
    /// `--report-url`: where a reader can open it.
    Url(&'a str),
    /// Where it was written, on the machine that ran the command.
    Path(&'a str),
}

impl<'a> ReportLink<'a> {
    /// The URL when one was given, else the path when the report was written.
    pub(crate) fn of(url: Option<&'a str>, path: Option<&'a str>) -> Option<Self> {
        url.map(ReportLink::Url).or(path.map(ReportLink::Path))
    }

    /// The line under the title.
    fn line(self) -> String {
        match self {
            ReportLink::Url(url) => format!(
                "Charts and every figure: [the HTML report]({}).",
                link_target(url)
            ),
            ReportLink::Path(path) => format!(
                "The HTML report is at {} on the machine that ran this (`--report-url` links it here).",
                code(path)
            ),
        }
    }
}

/// What a Markdown summary shows.
#[derive(Debug, Clone, Copy)]
pub(crate) struct MarkdownSummary<'a> {
    /// What is summarised, already formatted, e.g. ``run `2026…` ``.
    pub subject: &'a str,
    /// Where the HTML report is, when it is anywhere.
    pub report: Option<ReportLink<'a>>,
    /// The benchmarks, in order.
    pub entries: &'a [SummaryEntry],
    /// The comparison with the baseline, when there was one.
    pub comparison: Option<&'a RunComparison>,
    /// How the invocation ends.
    pub exit: Exit,
}

impl MarkdownSummary<'_> {
    /// The Markdown text, ending with a newline.
    pub(crate) fn render(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "### cargo gpubench: {}\n", self.subject);
        if let Some(report) = self.report {
            let _ = writeln!(out, "{}\n", report.line());
        }
        out.push_str(&self.header_line());
        out.push_str("\n\n");
        let view = SummaryView::build(self.entries, self.comparison);
        match self.comparison {
            Some(c) => self.compared_table(&mut out, &view, c),
            None => self.plain_table(&mut out, &view),
        }
        self.unstable(&mut out, &view);
        self.memory_held(&mut out, &view);
        self.eager_compiled(&mut out, &view);
        out.push_str(&render_conditions(&view));
        out.push_str(&render_power(&view));
        self.failures(&mut out);
        self.memory_peaks(&mut out);
        if self.comparison.is_some() {
            self.one_side_only(&mut out, &view);
        }
        let _ = writeln!(out, "\n{}", self.result_sentence());
        out
    }

    /// [`render`](Self::render), then the head figures that continue a drift of the
    /// baseline's committed history ([`drift_section`]): what
    /// a run, `ab` and `compare` write. It reads git; a failure to is a note on stderr.
    pub(crate) fn render_with_drifts(&self) -> String {
        let mut out = self.render();
        let drifts = self
            .comparison
            .map(drifts::continued_drifts_noted)
            .unwrap_or_default();
        out.push_str(&drift_section(&drifts));
        out
    }

    fn header_line(&self) -> String {
        let device = self
            .comparison
            .and_then(|c| c.current_device.clone())
            .or_else(|| {
                self.summaries()
                    .map(|s| s.device.name.clone())
                    .find(|n| known(n))
            });
        let label = self
            .summaries()
            .find(|s| known(&s.device.name))
            .map(|s| s.device.label.clone());
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
                    SourceKind::Revision => "base ",
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
                // The CPU device's threshold where a benchmark ran there.
                let cpu = if self.summaries().any(|b| b.timing.bound == Some(Bound::Cpu)) {
                    format!(", CPU ±{}", plain_percent(s.config.cpu_noise_threshold))
                } else {
                    String::new()
                };
                // Energy's threshold where a benchmark was judged on it.
                let energy = if c
                    .set
                    .comparisons
                    .iter()
                    .any(|b| b.verdict_of(Metric::Energy).is_some())
                {
                    format!(
                        ", energy ±{}",
                        plain_percent(s.config.energy_noise_threshold)
                    )
                } else {
                    String::new()
                };
                // Paired verdicts (`ab`) have a threshold of their own.
                let noise = words::paired_threshold_text(c).unwrap_or_else(|| {
                    format!(
                        "noise threshold ±{} (host-bound ±{}{cpu}{energy})",
                        plain_percent(s.config.noise_threshold),
                        plain_percent(s.config.host_noise_threshold)
                    )
                });
                parts.push(format!(
                    "**Gate:** `--fail-on {} --gate-on {}`, significance {}, {noise}",
                    s.fail_on, s.gate, s.config.significance,
                ));
            }
            None => parts.push("**Baseline:** none".to_string()),
        }
        parts.join(" · ")
    }

    fn summaries(&self) -> impl Iterator<Item = &BenchmarkSummary> {
        self.entries.iter().filter_map(|e| e.summary.as_ref())
    }

    fn compared_table(&self, out: &mut String, view: &SummaryView, c: &RunComparison) {
        let confidence = c.settings.config.confidence * 100.0;
        let verdict = if view.metric_columns.is_empty() {
            "Verdict"
        } else {
            "Verdict on time"
        };
        // `ab` shows what each verdict could have seen.
        let detectable_column = c.is_ab();
        let detectable = if detectable_column {
            " Could detect |"
        } else {
            ""
        };
        let mut header = format!(
            "| Benchmark | Baseline | Current | Change [{confidence:.0}% CI] |{detectable} Processes (pooled spread) | {verdict} |"
        );
        let mut rule = format!(
            "| :-- | --: | --: | --: |{} --: | :-- |",
            if detectable_column { " --: |" } else { "" }
        );
        for &metric in &view.metric_columns {
            let heading = capitalised(metric.label());
            let (title, align) = match metric.spec().judgement {
                Judgement::Timed => (format!("{heading} [{confidence:.0}% CI]"), "--:"),
                Judgement::Counted | Judgement::Memory => (heading, ":--"),
            };
            let _ = write!(header, " {title} |");
            let _ = write!(rule, " {align} |");
        }
        let head = format!("{header}\n{rule}\n");
        let mut rows = Vec::new();
        for ((e, row), figures) in view.compared_rows().zip(&view.figures) {
            let passed = e.status == BenchStatus::Passed;
            let current = || {
                current_estimate(e)
                    .filter(|_| passed)
                    .map(format_ns)
                    .unwrap_or_else(dash)
            };
            let processes = || {
                if passed {
                    figures.processes.clone()
                } else {
                    dash()
                }
            };
            let time = c.get(&e.id).and_then(|b| metrics::time(&b.outcome));
            let (baseline, now, change, procs, verdict) = match (time, row.verdict(Metric::Time)) {
                (Some(x), Some(m)) => {
                    let spread = x
                        .spread
                        .map(|s| format!(" (±{})", spread_percent(s)))
                        .unwrap_or_default();
                    (
                        format_ns(x.baseline_estimate),
                        format_ns(x.current_estimate),
                        m.change.clone().unwrap_or_else(dash),
                        format!(
                            "{} vs {}{spread}",
                            x.baseline_processes, x.current_processes
                        ),
                        marked(m),
                    )
                }
                _ => (
                    dash(),
                    current(),
                    dash(),
                    processes(),
                    row.word.text.clone(),
                ),
            };
            let detectable = if detectable_column {
                format!(" {} |", row.could_detect.clone().unwrap_or_else(dash))
            } else {
                String::new()
            };
            let mut line = format!(
                "| {} | {baseline} | {now} | {change} |{detectable} {procs} | {verdict} |",
                cell_code(&e.name)
            );
            for &metric in &view.metric_columns {
                let cell = match row.verdict(metric) {
                    Some(m) => {
                        let mut cell = marked(m);
                        if let Some(change) = &m.change {
                            cell = format!("{change} {cell}");
                        }
                        if let Some(detail) = &m.detail {
                            let _ = write!(cell, ": {}", text(detail));
                        }
                        cell
                    }
                    None => dash(),
                };
                let _ = write!(line, " {cell} |");
            }
            // A row folds only when every verdict it holds says nothing changed.
            rows.push(Row {
                line,
                unremarkable: row.unremarkable(),
            });
        }
        fold_table(out, &head, &rows, |n| {
            format!("{n} more benchmark{} with no change", plural(n))
        });
        let _ = writeln!(out, "\n**Verdicts:** {}.", counts_text(c));
        if let Some(note) = words::detectable_note(c) {
            let _ = writeln!(out, "\n**Could detect:** {}.", text(&note));
        }
        if let Some(gpu) = words::gpu_counts_text(c) {
            let _ = writeln!(out, "\n**On the GPU's own work:** {}.", text(&gpu));
        }
        let changed = items(view.notes_of(&NoteKind::GpuChanges), backticked);
        list(
            out,
            "**What the GPU did differently:**",
            "What the GPU did differently",
            &changed,
        );
        let ambiguous: Vec<String> = items(view.notes_of(&NoteKind::Ambiguous), text)
            .into_iter()
            .map(|item| format!("{item}."))
            .collect();
        quoted(out, "Ambiguous", "Why they are ambiguous", &ambiguous);
        if let Some(msg) = c.device_mismatch_message() {
            let _ = writeln!(out, "\n> **Warning:** {}.", text(&msg));
        }
        let notes: Vec<String> = view
            .notes
            .iter()
            .filter_map(|n| {
                let names = names(n);
                Some(match &n.kind {
                    NoteKind::OtherSettings => format!(
                        "{names} was compared across settings (`--allow-settings-mismatch`): {}.",
                        text(&n.text)
                    ),
                    NoteKind::OtherClocks => {
                        format!("{names} ran at other clocks: {}.", text(&n.text))
                    }
                    NoteKind::CrossDevice { baseline, current } => format!(
                        "{names} was compared across devices (`--allow-device-mismatch`): {} in the baseline, {} now.",
                        text(baseline),
                        text(current)
                    ),
                    _ => return None,
                })
            })
            .collect();
        quoted(out, "Note", "Notes", &notes);
    }

    fn plain_table(&self, out: &mut String, view: &SummaryView) {
        let kernel_column = self.summaries().any(|s| s.timing.kernel.is_some());
        let head = if kernel_column {
            "| Benchmark | Time [95% interval] | Processes (spread) | Kernel time (kernels) | Status |\n\
             | :-- | --: | --: | --: | :-- |\n"
        } else {
            "| Benchmark | Time [95% interval] | Processes (spread) | Status |\n\
             | :-- | --: | --: | :-- |\n"
        };
        let mut rows = Vec::new();
        for (e, f) in self.entries.iter().zip(&view.figures) {
            let kernel = match (&f.kernels, kernel_column) {
                (_, false) => String::new(),
                (Some(n), true) => format!(" {} ({n}) |", f.kernel),
                (None, true) => format!(" {} |", f.kernel),
            };
            let (time, processes) = (&f.time, &f.processes);
            rows.push(Row {
                line: format!(
                    "| {} | {time} | {processes} |{kernel} {} |",
                    cell_code(&e.name),
                    run_status_word(e.status)
                ),
                unremarkable: e.status == BenchStatus::Passed,
            });
        }
        fold_table(out, head, &rows, |n| {
            format!("{n} more benchmark{} that passed", plural(n))
        });
        if !kernel_column {
            let why: Vec<&str> = self
                .summaries()
                .filter_map(|s| s.kernels.unavailable.as_deref())
                .collect();
            if let Some(first) = why.first() {
                let _ = writeln!(out, "\nKernel time: not measured ({}).", text(first));
            }
        }
    }

    fn unstable(&self, out: &mut String, view: &SummaryView) {
        list(
            out,
            "**Unstable across processes** (each process is a fresh start; the interval covers them):",
            "Unstable across processes",
            &items(view.notes_of(&NoteKind::Unstable), text),
        );
    }

    /// The benchmarks whose routine keeps memory per call, with the figure.
    fn memory_held(&self, out: &mut String, view: &SummaryView) {
        list(
            out,
            "**Holds memory per call** (a cache that never evicts leaks like this):",
            "Holds memory per call",
            &items(view.notes_of(&NoteKind::HoldsMemory), text),
        );
    }

    fn eager_compiled(&self, out: &mut String, view: &SummaryView) {
        list(
            out,
            "**Eager versus compiled:**",
            "Eager versus compiled",
            &items(view.notes_of(&NoteKind::EagerCompiled), text),
        );
    }

    fn failures(&self, out: &mut String) {
        let failed: Vec<&SummaryEntry> = self
            .entries
            .iter()
            .filter(|e| e.status == BenchStatus::Failed)
            .collect();
        let items: Vec<String> = failed
            .iter()
            .map(
                |e| match e.summary.as_ref().and_then(|s| s.outcome.failure.as_ref()) {
                    Some(f) => {
                        let first = f.message.lines().next().unwrap_or("").trim();
                        let held = f.memory_snapshot.as_ref().map_or(String::new(), |m| {
                            format!(
                                " (cause: {}; {} allocated, {} reserved but free)",
                                m.cause().label(),
                                gpubench_record::units::format_bytes(m.allocated_bytes),
                                gpubench_record::units::format_bytes(m.free_reserved_bytes())
                            )
                        });
                        format!(
                            "{} ({}): {}{}",
                            code(&e.name),
                            f.kind.label(),
                            text(&shorten(first, REASON_CHARS)),
                            text(&held)
                        )
                    }
                    None => code(&e.name),
                },
            )
            .collect();
        list(out, "**Failed:**", "Failed", &items);
    }

    /// Each benchmark's peak (`--memory-peak-snapshot`): allocated against reserved,
    /// the largest block and where it was allocated; or why there is no snapshot.
    fn memory_peaks(&self, out: &mut String) {
        use gpubench_record::units::format_bytes;
        let items: Vec<String> = self
            .entries
            .iter()
            .filter_map(|e| {
                let s = e.summary.as_ref()?;
                let line = match (&s.memory.at_peak, &s.memory.at_peak_unavailable) {
                    (Some(p), _) => {
                        let m = &p.snapshot;
                        let largest = m.largest_blocks.first().map_or(String::new(), |b| {
                            let at = b
                                .allocated_at
                                .first()
                                .map_or(String::new(), |f| format!(" at {f}"));
                            format!("; largest block {}{at}", format_bytes(b.bytes))
                        });
                        format!(
                            "{} allocated in {} live blocks, {} reserved ({} reserved but free){largest}",
                            format_bytes(m.allocated_bytes),
                            m.live_blocks,
                            format_bytes(m.reserved_bytes),
                            format_bytes(m.free_reserved_bytes()),
                        )
                    }
                    (None, Some(why)) => format!("no allocator snapshot: {why}"),
                    (None, None) => return None,
                };
                Some(format!("{}: {}", code(&e.name), text(&line)))
            })
            .collect();
        list(
            out,
            "**What held memory at the peak:**",
            "What held memory at the peak",
            &items,
        );
    }

    fn one_side_only(&self, out: &mut String, view: &SummaryView) {
        list(
            out,
            "**Not compared:**",
            "Not compared",
            &items(view.notes_of(&NoteKind::NotCompared), text),
        );
        let listed = |kind: NoteKind| -> Vec<String> {
            view.notes_of(&kind)
                .into_iter()
                .flat_map(|n| n.benchmarks.iter().map(|b| code(b)))
                .collect()
        };
        inline_list(
            out,
            "**New** (not in the baseline):",
            "New, not in the baseline",
            &listed(NoteKind::New),
        );
        let missing: Vec<String> = view
            .notes_where(|k| matches!(k, NoteKind::Missing { .. }))
            .into_iter()
            .map(|n| {
                let allowed = n.kind == NoteKind::Missing { allowed: true };
                format!(
                    "{}: {}{}",
                    names(n),
                    text(&n.text),
                    if allowed { " (allowed)" } else { "" }
                )
            })
            .collect();
        list(
            out,
            "**Missing evidence** (fails the gate unless `--allow-missing \
             not-run|gone|not-compared|metric` lets its kind pass):",
            "Missing evidence, which fails the gate",
            &missing,
        );
        inline_list(
            out,
            "**Not selected** (in the baseline, left out here):",
            "Not selected: in the baseline, left out here",
            &listed(NoteKind::NotSelected),
        );
    }

    fn result_sentence(&self) -> String {
        let code_n = self.exit.code();
        let gate = self.comparison.filter(|c| c.gate_tripped).map(|c| {
            let tripping: Vec<String> = words::tripping_reasons(c)
                .into_iter()
                .map(|(id, why)| format!("{} ({})", code(&c.name_of(id, self.entries)), text(&why)))
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
                let also = match (gate, self.comparison) {
                    (Some(g), Some(c)) if c.tripping().is_empty() => {
                        format!("; missing evidence also fails the gate: {g}")
                    }
                    (Some(g), _) => format!("; a regression was also found: {g}"),
                    _ => String::new(),
                };
                format!(
                    "**Result: {failed} benchmark{} failed** (exit code {code_n}){also}.",
                    plural(failed)
                )
            }
            Exit::RegressionFound => format!(
                "**Result: {}** (exit code {code_n}): {}.",
                self.comparison
                    .map_or("regression found", words::trip_headline),
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

/// The Markdown section listing [`drifts::continued_drift_words`] notes; empty without any.
pub(crate) fn drift_section(notes: &[String]) -> String {
    if notes.is_empty() {
        return String::new();
    }
    let mut out = String::from("\n**Continuing drifts** (from the baseline's git history; `cargo gpubench history` shows it):\n\n");
    for n in notes {
        out.push_str(&format!("- {n}\n"));
    }
    out
}

/// A verdict's words as a cell says them: escaped, and bold when it stands out.
fn marked(m: &MetricView) -> String {
    if m.marked() {
        format!("**{}**", text(&m.words))
    } else {
        text(&m.words)
    }
}

/// The benchmarks whose GPU throttled or was shared, or whose host was
/// oversubscribed, as a Markdown list (folded when long).
pub(crate) fn render_conditions(view: &SummaryView) -> String {
    let noted = view.notes_where(|k| matches!(k, NoteKind::Conditions { .. }));
    let chosen = notes::conditions_heading(noted.iter().copied());
    let mut heading = chosen.to_string();
    heading[..1].make_ascii_uppercase();
    let summary = if chosen == notes::CPU_HEADING {
        "The host was oversubscribed"
    } else {
        "The GPU throttled or was shared"
    };
    let mut out = String::new();
    list(
        &mut out,
        &format!("**{heading}:**"),
        summary,
        &items(noted, text),
    );
    out
}

/// Each benchmark's power cap, % of peak and energy per call, as a Markdown list
/// (folded when long; empty when none has these figures).
fn render_power(view: &SummaryView) -> String {
    let mut heading = notes::POWER_HEADING.to_string();
    heading[..1].make_ascii_uppercase();
    let mut out = String::new();
    list(
        &mut out,
        &format!("**{heading}:**"),
        "Power, energy and % of peak",
        &items(view.notes_of(&NoteKind::PowerAndPeak), text),
    );
    out
}

/// `` `a`, `b` ``: the benchmarks a note covers, as code spans.
fn names(n: &Note) -> String {
    n.benchmarks
        .iter()
        .map(|b| code(b))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `` `a`, `b`: words ``: each note with the benchmarks it covers, its words as
/// `words` escapes them.
fn items(notes: Vec<&Note>, words: impl Fn(&str) -> String) -> Vec<String> {
    notes
        .into_iter()
        .map(|n| format!("{}: {}", names(n), words(&n.text)))
        .collect()
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

fn known(name: &str) -> bool {
    !name.is_empty() && name != "unknown"
}

/// Writes the Markdown summary to `path` (`--summary-file`), creating its directory,
/// atomically.
pub(crate) fn write_summary_file(path: &std::path::Path, markdown: &str) -> anyhow::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("failed to create the directory of {}", path.display()))?;
    }
    crate::store::runs::write_atomic(path, markdown.as_bytes())
        .context("failed to write the summary file")
}

/// `Kernel time` of `kernel time`.
fn capitalised(words: &str) -> String {
    let mut chars = words.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests;
