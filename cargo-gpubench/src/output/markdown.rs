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

use gpubench_analysis::baseline::{ComparisonOutcome, Metric};
use gpubench_analysis::processes::Bound;
use gpubench_analysis::{BenchmarkSummary, Verdict};
use gpubench_record::kernels::Counter;
use gpubench_record::units::format_ns;

use crate::compare::RunComparison;
use crate::exit_code::Exit;
use crate::format::{figure, plain_percent, plural, shorten, spread_percent};
use crate::output::view::drifts;
use crate::output::view::metrics::{self, gpu_changes, MetricView};
use crate::output::view::notes::{self, process_note};
use crate::output::view::table::{dash, kernel_cells, processes_cell};
use crate::output::view::words::{self, counts_text, detectable_text, outcome_word};
use crate::store::manifest::BenchStatus;
use crate::store::references::SummaryEntry;
use crate::store::SourceKind;

mod blocks;

use blocks::{backticked, fold_table, inline_list, link_target, quoted, Row};
pub use blocks::{cell_code, code, list, text, LIST_ITEMS_SHOWN, TABLE_ROWS_SHOWN};

/// Characters of a failure's first line quoted.
const REASON_CHARS: usize = 120;

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
        self.memory_held(&mut out);
        self.eager_compiled(&mut out);
        out.push_str(&render_conditions(
            self.entries
                .iter()
                .filter_map(|e| Some((e.name.as_str(), e.summary.as_ref()?))),
            code,
            text,
        ));
        self.failures(&mut out);
        self.memory_peaks(&mut out);
        if let Some(c) = self.comparison {
            self.one_side_only(&mut out, c);
        }
        let _ = writeln!(out, "\n{}", self.result_sentence());
        out
    }

    /// [`render`](Self::render), then the head figures that continue a drift of the
    /// baseline's committed history ([`drift_section`]): what
    /// a run, `ab` and `compare` write. It reads git; a failure to is a note on stderr.
    pub fn render_with_drifts(&self) -> String {
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
                // Paired verdicts (`ab`) have a threshold of their own.
                let noise = words::paired_threshold_text(c).unwrap_or_else(|| {
                    format!(
                        "noise threshold ±{} (host-bound ±{}{cpu})",
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

    fn compared_table(&self, out: &mut String, c: &RunComparison) {
        let confidence = c.settings.config.confidence * 100.0;
        let outcome = |e: &SummaryEntry| c.get(&e.id).map(|b| &b.outcome);
        let verdicts: Vec<Vec<MetricView>> = self
            .entries
            .iter()
            .map(|e| outcome(e).map(metrics::verdicts).unwrap_or_default())
            .collect();
        // A column for each metric beside time that some benchmark was judged on.
        let columns: Vec<Metric> = Metric::ALL
            .into_iter()
            .filter(|&m| m != Metric::Time)
            .filter(|&m| verdicts.iter().flatten().any(|v| v.metric == m))
            .collect();
        let verdict = if columns.is_empty() {
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
        for &metric in &columns {
            let (title, align) = match metric {
                Metric::Time => unreachable!("time has its own columns"),
                Metric::Kernel => (format!("Kernel time [{confidence:.0}% CI]"), "--:"),
                Metric::Counters => ("Counters".to_string(), ":--"),
                Metric::Memory => ("Memory".to_string(), ":--"),
            };
            let _ = write!(header, " {title} |");
            let _ = write!(rule, " {align} |");
        }
        let head = format!("{header}\n{rule}\n");
        let mut rows = Vec::new();
        for (e, views) in self.entries.iter().zip(&verdicts) {
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
            let mut could_detect = dash();
            let (baseline, now, change, procs, verdict) = match c.get(&e.id).map(|b| &b.outcome) {
                Some(ComparisonOutcome::Compared { comparison: x, .. }) => {
                    let time = views.iter().find(|m| m.metric == Metric::Time);
                    let word = time.map(marked).unwrap_or_default();
                    if let Some(d) = detectable_text(x) {
                        could_detect = d;
                    }
                    let spread = x
                        .spread
                        .map(|s| format!(" (±{})", spread_percent(s)))
                        .unwrap_or_default();
                    (
                        format_ns(x.baseline_estimate),
                        format_ns(x.current_estimate),
                        time.and_then(|m| m.change.clone()).unwrap_or_else(dash),
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
            // A row folds only when every verdict it holds says nothing changed (a
            // change certain but under the threshold is no change too).
            let unremarkable =
                !views.is_empty() && views.iter().all(|m| m.verdict == Verdict::NoChange);
            let detectable = if detectable_column {
                format!(" {could_detect} |")
            } else {
                String::new()
            };
            let mut line = format!(
                "| {} | {baseline} | {now} | {change} |{detectable} {procs} | {verdict} |",
                cell_code(&e.name)
            );
            for &metric in &columns {
                let cell = match views.iter().find(|m| m.metric == metric) {
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
            rows.push(Row { line, unremarkable });
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
        // A note many benchmarks share is said once, with the benchmarks it covers.
        let named = c.notes().into_iter().map(|(id, note)| {
            let name = self
                .entries
                .iter()
                .find(|e| e.id == id)
                .map_or(id, |e| e.name.as_str());
            (code(name), note)
        });
        let ambiguous: Vec<String> = crate::format::grouped(named)
            .into_iter()
            .map(|(note, names)| format!("{}: {}.", names.join(", "), text(&note)))
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
            notes::clock_lines(&c.set.other_clocks)
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
        let kernel_column = self.summaries().any(|s| s.timing.kernel.is_some());
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
                    .and_then(|s| s.counters.counts?.per_call(Counter::Kernels))
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
                .filter_map(|s| s.kernels.unavailable.as_deref())
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

    /// The benchmarks whose routine keeps memory per call, with the figure.
    fn memory_held(&self, out: &mut String) {
        let items: Vec<String> = self
            .entries
            .iter()
            .filter_map(|e| {
                let g = e.summary.as_ref()?.memory.growth.as_ref()?;
                let held = g.flag_text()?;
                Some(format!(
                    "{}: {} (allocated after its outputs were dropped, over two stretches of {} calls)",
                    code(&e.name),
                    text(&held),
                    g.calls
                ))
            })
            .collect();
        list(
            out,
            "**Holds memory per call** (a cache that never evicts leaks like this):",
            "Holds memory per call",
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

    fn one_side_only(&self, out: &mut String, c: &RunComparison) {
        let name_of = |id: &str| code(&c.name_of(id, self.entries));
        let not_compared: Vec<String> = crate::format::grouped(
            c.not_compared()
                .into_iter()
                .map(|(id, reason)| (name_of(id), reason)),
        )
        .into_iter()
        .map(|(reason, names)| format!("{}: {}", names.join(", "), text(&reason)))
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
        let missing: Vec<String> =
            crate::format::grouped(c.missing_with_allowance().iter().map(|(m, passes)| {
                let why = format!(
                    "{}: {}{}",
                    m.what(),
                    text(&m.reason),
                    if *passes { " (allowed)" } else { "" }
                );
                (name_of(&m.id), why)
            }))
            .into_iter()
            .map(|(why, names)| format!("{}: {why}", names.join(", ")))
            .collect();
        list(
            out,
            "**Missing evidence** (fails the gate unless `--allow-missing \
             not-run|gone|not-compared|metric` lets its kind pass):",
            "Missing evidence, which fails the gate",
            &missing,
        );
        let names: Vec<String> = c.not_selected.iter().map(|id| name_of(id)).collect();
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
            let tripping: Vec<String> = words::tripping_reasons(c)
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
pub fn drift_section(notes: &[String]) -> String {
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
/// oversubscribed, as a Markdown list (folded when long), with `code` and `text`
/// escaping as the caller does.
pub(crate) fn render_conditions<'a>(
    benchmarks: impl IntoIterator<Item = (&'a str, &'a BenchmarkSummary)>,
    code: impl Fn(&str) -> String,
    text: impl Fn(&str) -> String,
) -> String {
    let noted: Vec<(&str, &BenchmarkSummary, String)> = benchmarks
        .into_iter()
        .filter_map(|(name, s)| Some((name, s, notes::gpu_note(s)?)))
        .collect();
    let items: Vec<String> = noted
        .iter()
        .map(|(name, _, note)| format!("{}: {}", code(name), text(note)))
        .collect();
    let chosen = notes::heading(noted.iter().map(|(_, s, _)| *s));
    let mut heading = chosen.to_string();
    heading[..1].make_ascii_uppercase();
    let summary = if chosen == notes::CPU_HEADING {
        "The host was oversubscribed"
    } else {
        "The GPU throttled or was shared"
    };
    let mut out = String::new();
    list(&mut out, &format!("**{heading}:**"), summary, &items);
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

fn known(name: &str) -> bool {
    !name.is_empty() && name != "unknown"
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
