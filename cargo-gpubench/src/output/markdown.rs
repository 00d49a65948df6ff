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

/// Rows a table has before its unremarkable ones (no change; passed, without a
/// baseline) fold into `<details>`: ten rows are about a screen of a pull request,
/// and past that a regression drowns among rows that say nothing happened. The others
/// (regressed, improved, ambiguous, failed, new, ...) always stay in view.
pub const TABLE_ROWS_SHOWN: usize = 10;

/// Items a list (failures, notes, new benchmarks, ...) shows before it folds into
/// `<details>` with its count: a handful reads at a glance, more is a list to open.
pub const LIST_ITEMS_SHOWN: usize = 5;

/// Where the HTML report is, for the summary's first line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReportLink<'a> {
    /// `--report-url`: where a reader can open it.
    Url(&'a str),
    /// Where it was written, on the machine that ran the command.
    Path(&'a str),
}

impl<'a> ReportLink<'a> {
    /// The URL when one was given, else the path when the report was written.
    pub fn of(url: Option<&'a str>, path: Option<&'a str>) -> Option<Self> {
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
pub struct MarkdownSummary<'a> {
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
    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "### cargo gpubench: {}\n", self.subject);
        if let Some(report) = self.report {
            let _ = writeln!(out, "{}\n", report.line());
        }
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
        let head = format!("{header}\n{rule}\n");
        let mut rows = Vec::new();
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
            // A row folds only when every verdict it holds says nothing changed.
            let unremarkable = verdict == Verdict::NoChange.label()
                && outcome(e)
                    .and_then(kernel_comparison)
                    .is_none_or(|k| k.verdict == Verdict::NoChange)
                && outcome(e)
                    .and_then(counter_changes)
                    .is_none_or(<[_]>::is_empty);
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
            rows.push(Row { line, unremarkable });
        }
        fold_table(out, &head, &rows, |n| {
            format!("{n} more benchmark{} with no change", plural(n))
        });
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
                    format!("{}: {}", code(&e.name), words.join("; "))
                })
            })
            .collect();
        list(
            out,
            "**What the GPU did differently:**",
            "What the GPU did differently",
            &changed,
        );
        let ambiguous: Vec<String> = c
            .notes()
            .into_iter()
            .map(|(id, note)| {
                let name = self
                    .entries
                    .iter()
                    .find(|e| e.id == id)
                    .map_or(id, |e| e.name.as_str());
                format!("{}: {}.", code(name), text(note))
            })
            .collect();
        quoted(out, "Ambiguous", "Why they are ambiguous", &ambiguous);
        if let Some(msg) = c.device_mismatch_message() {
            let _ = writeln!(out, "\n> **Warning:** {}.", text(&msg));
        }
        let mut notes: Vec<String> = c
            .set
            .other_settings
            .iter()
            .map(|x| {
                format!(
                    "{} was compared across settings (`--allow-settings-mismatch`): {}.",
                    code(&x.id),
                    text(&x.differences.join("; "))
                )
            })
            .collect();
        notes.extend(
            crate::output::gpu_notes::clock_lines(&c.set.other_clocks)
                .into_iter()
                .map(|(id, note)| format!("{} ran at other clocks: {}.", code(&id), text(&note))),
        );
        notes.extend(c.set.cross_device.iter().map(|x| {
            format!(
                "{} was compared across devices (`--allow-device-mismatch`): {} in the baseline, {} now.",
                code(&x.id),
                text(&x.baseline_device),
                text(&x.current_device)
            )
        }));
        quoted(out, "Note", "Notes", &notes);
    }

    fn plain_table(&self, out: &mut String) {
        let kernel_column = self.summaries().any(|s| s.kernel.is_some());
        let head = if kernel_column {
            "| Benchmark | Time [95% interval] | Processes (spread) | Kernel time (kernels) | Status |\n\
             | :-- | --: | --: | --: | :-- |\n"
        } else {
            "| Benchmark | Time [95% interval] | Processes (spread) | Status |\n\
             | :-- | --: | --: | :-- |\n"
        };
        let mut rows = Vec::new();
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
        let items: Vec<String> = notes
            .iter()
            .map(|(e, note)| format!("{}: {}", code(&e.name), text(note)))
            .collect();
        list(
            out,
            "**Unstable across processes** (each process is a fresh start; the interval covers them):",
            "Unstable across processes",
            &items,
        );
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
        let items: Vec<String> = lines
            .iter()
            .map(|(e, line)| format!("{}: {}", code(&e.name), text(line)))
            .collect();
        list(
            out,
            "**Eager versus compiled:**",
            "Eager versus compiled",
            &items,
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
                |e| match e.summary.as_ref().and_then(|s| s.failure.as_ref()) {
                    Some(f) => {
                        let first = f.message.lines().next().unwrap_or("").trim();
                        format!(
                            "{} ({}): {}",
                            code(&e.name),
                            f.kind.label(),
                            text(&shorten(first, REASON_CHARS))
                        )
                    }
                    None => code(&e.name),
                },
            )
            .collect();
        list(out, "**Failed:**", "Failed", &items);
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
            .map(|(id, reason)| format!("{}: {}", name_of(id), text(reason)))
            .collect();
        list(out, "**Not compared:**", "Not compared", &not_compared);
        let names: Vec<String> = c
            .set
            .missing_in_baseline
            .iter()
            .map(|id| name_of(id))
            .collect();
        inline_list(
            out,
            "**New** (not in the baseline):",
            "New, not in the baseline",
            &names,
        );
        let missing: Vec<String> = c
            .missing_with_allowance()
            .iter()
            .map(|(m, passes)| {
                format!(
                    "{}: {}: {}{}",
                    name_of(&m.id),
                    m.what(),
                    text(&m.reason),
                    if *passes { " (allowed)" } else { "" }
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
        let names: Vec<String> = c.not_selected.iter().map(|id| code(id)).collect();
        inline_list(
            out,
            "**Not selected** (in the baseline, left out here):",
            "Not selected: in the baseline, left out here",
            &names,
        );
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
                    .map_or("regression found", RunComparison::trip_headline),
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

/// A table row, and whether it may fold away (see [`TABLE_ROWS_SHOWN`]).
struct Row {
    line: String,
    unremarkable: bool,
}

/// `rows` under `head` (the header and rule lines). Past [`TABLE_ROWS_SHOWN`] rows
/// the unremarkable ones move, in order, to a second table folded in `<details>`
/// whose summary `folded` words from their count; the others stay in view.
fn fold_table(out: &mut String, head: &str, rows: &[Row], folded: impl Fn(usize) -> String) {
    let lines = |keep: &dyn Fn(&Row) -> bool| -> String {
        rows.iter()
            .filter(|r| keep(r))
            .map(|r| format!("{}\n", r.line))
            .collect()
    };
    let quiet = rows.iter().filter(|r| r.unremarkable).count();
    if rows.len() <= TABLE_ROWS_SHOWN || quiet == 0 {
        let _ = write!(out, "{head}{}", lines(&|_| true));
        return;
    }
    if quiet < rows.len() {
        let _ = writeln!(out, "{head}{}", lines(&|r| !r.unremarkable));
    }
    let _ = write!(
        out,
        "<details><summary>{}</summary>\n\n{head}{}\n</details>\n",
        folded(quiet),
        lines(&|r| r.unremarkable)
    );
}

/// A bulleted list under `heading` (bold Markdown, e.g. `**Failed:**`), folded into
/// `<details>` with `label` and the count past [`LIST_ITEMS_SHOWN`] items; nothing
/// when `items` is empty. Each item is one line of Markdown without its `- `.
pub fn list(out: &mut String, heading: &str, label: &str, items: &[String]) {
    let body: String = items.iter().map(|i| format!("- {i}\n")).collect();
    fold(out, heading, label, items.len(), &body);
}

/// `names` run together after `heading` (`**New** (not in the baseline): a, b`),
/// folded as [`list`] folds.
fn inline_list(out: &mut String, heading: &str, label: &str, names: &[String]) {
    let body = format!("{}\n", names.join(", "));
    if names.len() <= LIST_ITEMS_SHOWN {
        if !names.is_empty() {
            let _ = write!(out, "\n{heading} {body}");
        }
        return;
    }
    fold(out, heading, label, names.len(), &body);
}

/// Notes each quoted on its own, `> **Note:** …` (with `word`), or, past
/// [`LIST_ITEMS_SHOWN`], one folded list of them.
fn quoted(out: &mut String, word: &str, label: &str, items: &[String]) {
    if items.len() <= LIST_ITEMS_SHOWN {
        for item in items {
            let _ = writeln!(out, "\n> **{word}:** {item}");
        }
    } else {
        let body: String = items.iter().map(|i| format!("- {i}\n")).collect();
        details(out, label, items.len(), &body);
    }
}

/// `body` under `heading`, or folded past [`LIST_ITEMS_SHOWN`] items.
fn fold(out: &mut String, heading: &str, label: &str, n: usize, body: &str) {
    if n == 0 {
        return;
    }
    if n <= LIST_ITEMS_SHOWN {
        let _ = write!(out, "\n{heading}\n\n{body}");
    } else {
        details(out, label, n, body);
    }
}

/// `body` folded in `<details>`, its summary `label (n)`: plain text, since GitHub
/// shows a summary's Markdown as it is.
fn details(out: &mut String, label: &str, n: usize, body: &str) {
    let _ = write!(
        out,
        "\n<details><summary>{label} ({n})</summary>\n\n{body}\n</details>\n"
    );
}

/// `url` as a Markdown link target: what would end the link or break the line is
/// percent-encoded.
fn link_target(url: &str) -> String {
    let mut out = String::with_capacity(url.len());
    for c in url.trim().chars() {
        match c {
            ' ' => out.push_str("%20"),
            '(' => out.push_str("%28"),
            ')' => out.push_str("%29"),
            '<' => out.push_str("%3C"),
            '>' => out.push_str("%3E"),
            '\n' | '\r' => {}
            _ => out.push(c),
        }
    }
    out
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
