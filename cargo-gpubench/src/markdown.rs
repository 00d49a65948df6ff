//! The Markdown summary (`--format markdown`, `--summary-file`): a short header with
//! the device and the baseline, one table row per benchmark (baseline median, current
//! median, change with its interval, verdict word), then failures, benchmarks on one
//! side only, and the result with its exit code. Made for a pull-request comment: no
//! emoji, no HTML, and everything a benchmark name or a message holds is escaped.

use std::fmt::Write as _;

use gpubench_analysis::baseline::ComparisonOutcome;
use gpubench_analysis::kernels::Counter;
use gpubench_analysis::units::format_ns;
use gpubench_analysis::{BenchmarkSummary, Verdict};

use crate::comparison::{
    change_text, counter_changes, counters_text, gpu_changes, kernel_comparison, outcome_word,
    plural, RunComparison, SourceKind,
};
use crate::exit::Exit;
use crate::manifest::BenchStatus;
use crate::summary::{
    interval, kernel_cells, process_note, processes_cell, shorten, spread_percent, SummaryEntry,
};

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
        out.push_str(&crate::gpu_notes::render_markdown(
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
        for (id, note) in crate::gpu_notes::clock_lines(&c.set.other_clocks) {
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
                .map(|p| interval(p.estimate.point, p.estimate.lower, p.estimate.upper))
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

/// `2%`, `0.5%`: a fraction as a percentage, without trailing zeros.
fn plain_percent(x: f64) -> String {
    let s = format!("{:.2}", x * 100.0);
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s}%")
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

#[cfg(test)]
mod tests {
    use super::*;
    use gpubench_analysis::{
        BaselineEntry, CompareConfig, DeviceIdentity, FailOn, Failure, FailureKind, Fingerprint,
        Measurement, MeasurementConfig, RawRecord, Round, Sample, StopReason,
        RECORD_FORMAT_VERSION,
    };

    use crate::comparison::{Source, SourceKind, VerdictSettings};
    use gpubench_analysis::baseline::{Gate, Metric};
    use gpubench_analysis::synthetic::SyntheticKernels;
    use rand::SeedableRng;
    use rand_pcg::Pcg64Mcg;

    /// A passed record of three processes on an `NVIDIA H200` whose per-iteration
    /// device times are `base_ns` times a fixed ±1% pattern, the processes 0.3% apart:
    /// deterministic, so the table is too.
    fn record(id: &str, base_ns: f64) -> RawRecord {
        let mut r = one_process(id, base_ns);
        r.append_rounds(one_process(id, base_ns * 1.003)).unwrap();
        r.append_rounds(one_process(id, base_ns * 0.997)).unwrap();
        r
    }

    fn one_process(id: &str, base_ns: f64) -> RawRecord {
        let pattern = [
            1.0, 1.01, 0.99, 1.005, 0.995, 1.002, 0.998, 1.0, 1.008, 0.992,
        ];
        let samples = (0..20)
            .map(|i| {
                let device = base_ns * pattern[i % pattern.len()] * 10.0;
                Sample {
                    iters: 10,
                    wall_ns: device * 1.02,
                    host_ns: device * 0.3,
                    device_ns: Some(device),
                    clock: None,
                }
            })
            .collect();
        let (name, arg) = match id.split_once('/') {
            Some((n, a)) => (n.to_string(), Some(a.to_string())),
            None => (id.to_string(), None),
        };
        RawRecord {
            format_version: RECORD_FORMAT_VERSION,
            id: id.into(),
            name,
            arg,
            fingerprint: Fingerprint {
                device: DeviceIdentity {
                    kind: "cuda".into(),
                    index: Some(0),
                    name: "NVIDIA H200".into(),
                    total_memory_bytes: None,
                },
                ..Fingerprint::unknown("cuda:0", "2026-01-01T00:00:00Z".into())
            },
            config: MeasurementConfig::standard(),
            rounds: vec![Round {
                round: 1,
                started_at: "2026-01-01T00:00:00Z".into(),
                measurement: Some(Measurement {
                    sync_cost_ns: 1e4,
                    cold: vec![],
                    warmup: vec![],
                    samples,
                    naive: vec![],
                    throughput: None,
                    memory: None,
                    stop_reason: StopReason::Converged,
                    flags: vec![gpubench_analysis::Flag::DeviceBound],
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

    fn failed(id: &str) -> RawRecord {
        let mut r = one_process(id, 1e6);
        r.rounds[0].measurement = None;
        r.rounds[0].failure = Some(Failure::new(
            FailureKind::OutOfMemory,
            "CUDA out of memory | tried to allocate 2.00 GiB\nmore detail",
        ));
        r
    }

    fn entry(r: &RawRecord) -> SummaryEntry {
        SummaryEntry {
            name: format!("matmul/{}", r.id),
            target: "matmul".into(),
            id: r.id.clone(),
            status: if r.passed() {
                BenchStatus::Passed
            } else {
                BenchStatus::Failed
            },
            record: None,
            summary: Some(BenchmarkSummary::from_record(r)),
            comparison: None,
        }
    }

    /// A baseline of four benchmarks, and a run where one regressed by 50%, one
    /// improved by 20%, one is unchanged, one failed, one is new and one is gone.
    fn fixture(fail_on: FailOn) -> (Vec<SummaryEntry>, RunComparison) {
        let base: Vec<BaselineEntry> = [
            record("mm_f32/4096", 2e6),
            record("mm_bf16/4096", 1e6),
            record("mm_f32/1024", 1e5),
            record("conv", 3e5),
            record("gone", 1e5),
        ]
        .iter()
        .map(|r| BaselineEntry::from_record(r).unwrap())
        .collect();
        let now = vec![
            record("mm_f32/4096", 3e6),
            record("mm_bf16/4096", 0.8e6),
            record("mm_f32/1024", 1e5),
            failed("conv"),
            record("new|one", 5e5),
        ];
        let settings = VerdictSettings {
            config: CompareConfig::default(),
            fail_on,
            allow_device_mismatch: false,
            gate: gpubench_analysis::baseline::Gate::default(),
            allow_settings_mismatch: false,
        };
        let source = Source {
            kind: SourceKind::Baseline,
            name: "main".into(),
            path: "/ws/gpubench/baselines/main".into(),
            default: false,
            device: None,
        };
        let c = RunComparison::judge(&now, &base, source, settings).unwrap();
        (now.iter().map(entry).collect(), c)
    }

    #[test]
    fn a_regression_with_a_failure_new_and_missing_benchmarks() {
        let (entries, c) = fixture(FailOn::Regressed);
        let md = MarkdownSummary {
            subject: "run `20260101T000000.000Z-1-0`",
            entries: &entries,
            comparison: Some(&c),
            exit: Exit::of_verdicts(false, true, c.gate_tripped),
        }
        .render();
        insta::assert_snapshot!(md, @r"
        ### cargo gpubench: run `20260101T000000.000Z-1-0`

        **Device:** NVIDIA H200 (`cuda:0`) · **Baseline:** `main` (NVIDIA H200) · **Gate:** `--fail-on regressed --gate-on time,kernel,counters`, significance 0.05, noise threshold ±2% (host-bound ±50%)

        | Benchmark | Baseline | Current | Change [90% CI] | Processes (spread) | Verdict |
        | :-- | --: | --: | --: | --: | :-- |
        | `matmul/mm_f32/4096` | 2.000 ms | 3.000 ms | +50.0% [+49.2%, +50.8%] | 3 vs 3 (±0.3%) | **regressed** |
        | `matmul/mm_bf16/4096` | 1.000 ms | 800.0 µs | -20.0% [-20.4%, -19.6%] | 3 vs 3 (±0.3%) | improved |
        | `matmul/mm_f32/1024` | 100.0 µs | 100.0 µs | +0.0% [-0.5%, +0.5%] | 3 vs 3 (±0.3%) | no change |
        | `matmul/conv` | — | — | — | — | failed |
        | `matmul/new\|one` | — | 500.0 µs | — | 3 ±0.3% | new |

        **Verdicts:** 1 regressed, 1 improved, 1 no change, 1 failed, 1 new.

        **Failed:**

        - `matmul/conv` (out of memory): CUDA out of memory \| tried to allocate 2.00 GiB

        **New** (not in the baseline): `matmul/new|one`

        **Missing** (in the baseline, not run here): `gone`

        **Result: 1 benchmark failed** (exit code 1); a regression was also found: `matmul/mm_f32/4096` (time regressed) (`--fail-on regressed --gate-on time,kernel,counters`).
        ");
    }

    #[test]
    fn a_clean_run_and_a_run_without_a_baseline() {
        let (entries, c) = fixture(FailOn::Regressed);
        let clean: Vec<SummaryEntry> = entries
            .iter()
            .filter(|e| e.id == "mm_f32/1024")
            .cloned()
            .collect();
        let only = RunComparison::judge(
            &[record("mm_f32/1024", 1e5)],
            &[BaselineEntry::from_record(&record("mm_f32/1024", 1e5)).unwrap()],
            Source {
                default: true,
                ..c.baseline.clone()
            },
            c.settings,
        )
        .unwrap();
        let md = MarkdownSummary {
            subject: "run `r`",
            entries: &clean,
            comparison: Some(&only),
            exit: Exit::of_verdicts(false, false, only.gate_tripped),
        }
        .render();
        insta::assert_snapshot!(md, @"
        ### cargo gpubench: run `r`

        **Device:** NVIDIA H200 (`cuda:0`) · **Baseline:** `main` (NVIDIA H200; the default) · **Gate:** `--fail-on regressed --gate-on time,kernel,counters`, significance 0.05, noise threshold ±2% (host-bound ±50%)

        | Benchmark | Baseline | Current | Change [90% CI] | Processes (spread) | Verdict |
        | :-- | --: | --: | --: | --: | :-- |
        | `matmul/mm_f32/1024` | 100.0 µs | 100.0 µs | +0.0% [-0.5%, +0.5%] | 3 vs 3 (±0.3%) | no change |

        **Verdicts:** 1 no change.

        **Result: no regression** (exit code 0, `--fail-on regressed --gate-on time,kernel,counters`).
        ");
        let md = MarkdownSummary {
            subject: "run `r`",
            entries: &clean,
            comparison: None,
            exit: Exit::Success,
        }
        .render();
        insta::assert_snapshot!(md, @"
        ### cargo gpubench: run `r`

        **Device:** NVIDIA H200 (`cuda:0`) · **Baseline:** none

        | Benchmark | Time [95% interval] | Processes (spread) | Status |
        | :-- | --: | --: | :-- |
        | `matmul/mm_f32/1024` | 100.0 µs [98.95, 101.1] | 3 ±0.3% | passed |

        **Result: passed** (exit code 0).
        ");
    }

    /// `base_ns` of device time per call with the GPU work of `kernels` attached.
    fn with_kernels(id: &str, base_ns: f64, kernels: &SyntheticKernels, seed: u64) -> RawRecord {
        let mut r = record(id, base_ns);
        kernels.attach(&mut r, &mut Pcg64Mcg::seed_from_u64(seed));
        r
    }

    #[test]
    fn kernel_time_counters_and_kernel_changes_are_shown() {
        let add = SyntheticKernels::one("add_kernel", 2_290.0);
        let sdpa = SyntheticKernels::one("flash_fwd_kernel", 6_700.0);
        let base: Vec<BaselineEntry> = [
            with_kernels("add_1m", 9e3, &add, 1),
            with_kernels("sdpa", 2e4, &sdpa, 2),
        ]
        .iter()
        .map(|r| BaselineEntry::from_record(r).unwrap())
        .collect();
        let now = vec![
            with_kernels("add_1m", 9e3, &add.scaled(1.1), 3),
            with_kernels("sdpa", 2e4, &sdpa.with_kernel("fill_kernel", 1_000.0), 4),
        ];
        let (entries, c) = {
            let (_, fixture) = fixture(FailOn::Regressed);
            let c = RunComparison::judge(&now, &base, fixture.baseline, fixture.settings).unwrap();
            (now.iter().map(entry).collect::<Vec<_>>(), c)
        };
        assert!(c.gate_tripped);
        let md = MarkdownSummary {
            subject: "run `r`",
            entries: &entries,
            comparison: Some(&c),
            exit: Exit::of_verdicts(false, false, c.gate_tripped),
        }
        .render();
        insta::assert_snapshot!(md);
        // Gated on time alone, neither trips.
        let time_only = RunComparison::judge(
            &now,
            &base,
            c.baseline.clone(),
            VerdictSettings {
                gate: Gate::of(&[Metric::Time]),
                ..c.settings
            },
        )
        .unwrap();
        assert!(!time_only.gate_tripped);

        // Without a baseline the kernel time and kernels per call are a column.
        let md = MarkdownSummary {
            subject: "run `r`",
            entries: &entries,
            comparison: None,
            exit: Exit::Success,
        }
        .render();
        assert!(md.contains("| Kernel time (kernels) |"), "{md}");
        assert!(md.contains("| 2.5"), "{md}");
    }

    #[test]
    fn a_run_without_kernel_time_says_why_once() {
        let mut r = record("mm", 1e5);
        for m in r.rounds.iter_mut().filter_map(|x| x.measurement.as_mut()) {
            m.kernel_unavailable = Some("no kernel timing on cpu".into());
        }
        let entries = vec![entry(&r)];
        let md = MarkdownSummary {
            subject: "run `r`",
            entries: &entries,
            comparison: None,
            exit: Exit::Success,
        }
        .render();
        assert!(
            md.contains("\nKernel time: not measured (no kernel timing on cpu).\n"),
            "{md}"
        );
        assert!(!md.contains("Kernel time (kernels)"), "{md}");
    }

    #[test]
    fn names_and_messages_cannot_break_the_markdown() {
        assert_eq!(code("a/b"), "`a/b`");
        assert_eq!(code("a`b"), "`` a`b ``");
        assert_eq!(code("x|y"), "`x|y`");
        assert_eq!(cell_code("x|y"), "`x\\|y`");
        assert_eq!(text("*bold* <b> | #1"), "\\*bold\\* \\<b\\> \\| \\#1");
        assert_eq!(plain_percent(0.02), "2%");
        assert_eq!(plain_percent(0.025), "2.5%");
    }
}
