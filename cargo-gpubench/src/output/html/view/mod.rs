//! What the templates see: every figure of the report computed, formatted and
//! labelled once, plus the charts each page links to. [`summary`] builds the summary
//! page's rows, [`benchmark`] a benchmark's page, [`plots`] its charts, from what
//! [`common`] holds for both.

pub(super) use common::BenchmarkView;
pub(super) use summary::SummaryView;

mod benchmark;
mod common;
mod plots;
mod summary;

use crate::output::html::input::{ReportBenchmark, ReportInput};
use crate::output::html::peaks::device_peaks;
use crate::output::html::view::benchmark::benchmark_view;
use crate::output::html::view::common::{environment_rows, on_cpu, Figures};
use crate::output::html::view::summary::{summary_row, CountView, ScorecardRow, SummaryRow};
use gpubench_analysis::BenchmarkSummary;
use gpubench_record::record::{Fingerprint, RawRecord};
use std::collections::BTreeSet;

/// The summary and every benchmark page.
pub(super) struct Views {
    /// The summary page.
    pub summary: SummaryView,
    /// One per benchmark, in input order.
    pub benchmarks: Vec<BenchmarkView>,
}

/// Builds every view of the report.
pub(super) fn build_all(input: &ReportInput) -> Views {
    let (benchmarks, rows): (Vec<BenchmarkView>, Vec<SummaryRow>) =
        super::parallel::map(&input.benchmarks, build_one)
            .into_iter()
            .unzip();
    let records: Vec<&RawRecord> = input.benchmarks.iter().map(|b| &b.record).collect();
    let known: Vec<&Fingerprint> = records
        .iter()
        .map(|r| &r.fingerprint)
        .filter(|f| f.device.name != "unknown")
        .collect();
    let devices: BTreeSet<&str> = known.iter().map(|f| f.device.name.as_str()).collect();
    let cpu_only = !known.is_empty() && known.iter().all(|f| on_cpu(f));
    let environment = known
        .first()
        .or(records.first().map(|r| &r.fingerprint).as_ref())
        .map(|f| run_environment(f, &known))
        .unwrap_or_default();
    let environment_warning = (devices.len() > 1).then(|| {
        format!(
            "These records come from {} different devices ({}); compare figures only within one device.",
            devices.len(),
            devices.iter().copied().collect::<Vec<_>>().join(", ")
        )
    });
    let has_kernels = rows.iter().any(|r| !r.kernel.text.is_empty());
    let title = if input.title.trim().is_empty() {
        "cargo gpubench report".to_string()
    } else {
        input.title.clone()
    };
    Views {
        summary: SummaryView {
            title,
            baseline_name: input.baseline_name.clone(),
            baseline_origin: input.baseline_fingerprint.as_ref().map(baseline_origin),
            generated_at: input.generated_at.clone(),
            counts: status_counts(&benchmarks),
            total: benchmarks.len(),
            environment,
            environment_warning,
            peaks: devices.first().and_then(|name| peaks_line(name)),
            has_kernels,
            cpu_only,
            // Time, processes, change, cold call, throughput, memory; host and device
            // off the CPU; kernel time where measured.
            figure_columns: 6 + 2 * usize::from(!cpu_only) + usize::from(has_kernels),
            rows,
            missing_in_current: input.missing_in_current.clone(),
            not_run: input.not_run.clone(),
            parts: input.parts.clone(),
            gaps: input.gaps.clone(),
            missing: input.missing.clone(),
            not_selected: input.not_selected.clone(),
            scorecard: scorecard(&benchmarks),
            // The history page shows this run's benchmarks when it links any.
            history: input
                .benchmarks
                .iter()
                .any(|b| b.history.is_some())
                .then(|| format!("../{}/index.html", crate::output::html::HISTORY_DIR)),
        },
        benchmarks,
    }
}

/// The eager-versus-compiled benchmarks' headline: speed-up and agreement.
fn scorecard(benchmarks: &[BenchmarkView]) -> Vec<ScorecardRow> {
    benchmarks
        .iter()
        .filter_map(|v| {
            let c = v.comparison.as_ref()?;
            Some(ScorecardRow {
                name: v.name.clone(),
                href: format!("bench/{}.html", v.stem),
                speedup: c.speedup.clone(),
                agreement: c.agreement_summary.clone(),
                disagrees: c.disagrees,
                flags: c.flags.clone(),
            })
        })
        .collect()
}

/// How many benchmarks have each status, most severe first.
fn status_counts(benchmarks: &[BenchmarkView]) -> Vec<CountView> {
    let mut counts: Vec<CountView> = Vec::new();
    for v in benchmarks {
        match counts.iter_mut().find(|c| c.status.class == v.status.class) {
            Some(c) => c.n += 1,
            None => counts.push(CountView {
                status: v.status.clone(),
                n: 1,
            }),
        }
    }
    counts.sort_by_key(|c| c.status.rank);
    counts
}

/// The environment of `f`, naming every GPU of its model the run used (`--devices`,
/// a merge) and the span of time the records were measured in.
fn run_environment(f: &Fingerprint, known: &[&Fingerprint]) -> Vec<(String, String)> {
    let mut rows = environment_rows(f);
    // Each benchmark's page names its own device.
    let labels: BTreeSet<String> = known
        .iter()
        .filter(|k| k.device.name == f.device.name)
        .map(|k| k.device.label())
        .collect();
    if labels.len() > 1 {
        if let Some(row) = rows.iter_mut().find(|(k, _)| k == "device") {
            let one = format!("({})", f.device.label());
            let all = format!("({})", labels.into_iter().collect::<Vec<_>>().join(", "));
            row.1 = row.1.replacen(&one, &all, 1);
        }
    }
    let stamps: BTreeSet<&str> = known.iter().map(|f| f.timestamp.as_str()).collect();
    if let (Some(first), Some(last)) = (stamps.first(), stamps.last()) {
        if first != last {
            if let Some(row) = rows.iter_mut().find(|(k, _)| k == "measured at") {
                row.1 = format!("{first} to {last}");
            }
        }
    }
    rows
}

/// The device model's peaks, when known: `NVIDIA H200: dense …; memory … GB/s`.
fn peaks_line(name: &str) -> Option<String> {
    let p = device_peaks(name)?;
    let flops: Vec<String> = p
        .dense_tflops
        .iter()
        .map(|(d, tf)| format!("{d} {tf} TFLOP/s"))
        .collect();
    Some(format!(
        "{}: dense {}; memory {} GB/s",
        p.model,
        flops.join(", "),
        p.memory_gb_s
    ))
}

/// Where the baseline was measured: device, commit and time.
fn baseline_origin(f: &Fingerprint) -> String {
    let mut s = format!("{} ({})", f.device.name, f.device.label());
    if let Some(c) = &f.git_commit {
        s.push_str(&format!(", commit {}", short_commit(c)));
    }
    s.push_str(&format!(", measured {}", f.timestamp));
    s
}

fn short_commit(c: &str) -> &str {
    c.get(..12).unwrap_or(c)
}

/// A benchmark's page and its summary row, sharing the (costly) estimates.
fn build_one(b: &ReportBenchmark) -> (BenchmarkView, SummaryRow) {
    let summary = match &b.summary {
        Some(s) => std::borrow::Cow::Borrowed(s),
        None => std::borrow::Cow::Owned(BenchmarkSummary::from_record(&b.record)),
    };
    let compared_kind = b.baseline.as_ref().and_then(|c| c.kind());
    let fig = b
        .record
        .first_measurement()
        .and_then(|_| Figures::of(&b.record, &summary, compared_kind));
    let view = benchmark_view(b, &summary, fig.as_ref());
    let row = summary_row(b, &summary, &view, fig.as_ref());
    (view, row)
}

#[cfg(test)]
mod tests;
