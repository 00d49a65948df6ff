//! A comparison in words, for every output: changes with their intervals, verdicts,
//! the counts, why the gate tripped and the thresholds. The judge
//! ([`crate::compare`]) decides; this module only says what it decided.

use gpubench_analysis::baseline::{BenchmarkComparison, ComparisonOutcome, Metric};
use gpubench_analysis::{Comparison, Verdict};

use crate::compare::{RunComparison, VerdictSettings};
use crate::output::view::metrics;

/// `±1.03%`: the smallest change `c` could have detected
/// ([`Comparison::detectable`]), when a verdict was possible.
pub(crate) fn detectable_text(c: &Comparison) -> Option<String> {
    let p = c.detectable? * 100.0;
    Some(if !p.is_finite() {
        "—".to_string()
    } else if p >= 10.0 {
        format!("±{p:.0}%")
    } else {
        format!("±{p:.2}%")
    })
}

/// The word for a benchmark's outcome: a verdict, `failed` or `not compared`.
pub(crate) fn outcome_word(outcome: &ComparisonOutcome) -> &'static str {
    match outcome {
        ComparisonOutcome::Compared { comparison, .. } => comparison.verdict.label(),
        ComparisonOutcome::Failed { .. } => "failed",
        ComparisonOutcome::NotCompared { .. } => "not compared",
    }
}

/// Why `b` trips a gate on `settings`: one phrase per metric that trips, e.g.
/// `kernel time regressed`, `counters: +1 kernel per call`.
pub(crate) fn trip_reasons(b: &BenchmarkComparison, settings: &VerdictSettings) -> Vec<String> {
    settings
        .gate
        .metrics()
        .into_iter()
        .filter_map(|m| metrics::verdict(&b.outcome, m))
        .filter(|v| settings.fail_on.fails(v.verdict))
        .map(|v| v.trip_phrase())
        .collect()
}

/// The ids whose outcome trips the gate, each with why ([`trip_reasons`], joined),
/// then those whose missing evidence does (`not run`, `kernel time missing`).
pub(crate) fn tripping_reasons(c: &RunComparison) -> Vec<(&str, String)> {
    let mut out: Vec<(&str, String)> = c
        .tripping()
        .into_iter()
        .map(|id| {
            let why = c
                .get(id)
                .map(|b| trip_reasons(b, &c.settings).join(", "))
                .unwrap_or_default();
            (id, why)
        })
        .collect();
    for m in c.missing_tripping() {
        match out.iter_mut().find(|(id, _)| *id == m.id) {
            Some((_, why)) => {
                why.push_str(", ");
                why.push_str(&m.what());
            }
            None => out.push((m.id.as_str(), m.what())),
        }
    }
    out
}

/// `1 regressed, 2 no change, 1 failed`: the non-zero counts, worst first.
pub(crate) fn counts_text(c: &RunComparison) -> String {
    let n = &c.counts;
    let parts: Vec<String> = [
        (n.regressed, "regressed"),
        (n.ambiguous, "ambiguous"),
        (n.improved, "improved"),
        (n.no_change, "no change"),
        (n.not_compared, "not compared"),
        (n.failed, "failed"),
        (c.set.missing_in_baseline.len(), "new"),
        (c.missing_benchmarks(), "missing"),
    ]
    .iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, word)| format!("{n} {word}"))
    .collect();
    if parts.is_empty() {
        "nothing to compare".to_string()
    } else {
        parts.join(", ")
    }
}

/// What tripped the gate, in words: `regression found` when a verdict did, else
/// `missing evidence`.
pub(crate) fn trip_headline(c: &RunComparison) -> &'static str {
    if c.tripping().is_empty() {
        "missing evidence"
    } else {
        "regression found"
    }
}

/// `kernel time: 1 regressed, 1 no change; counters: 1 regressed; memory: 2 no
/// change`: the verdicts on the metrics beside time, worst first, when any
/// benchmark has one.
pub(crate) fn gpu_counts_text(c: &RunComparison) -> Option<String> {
    let parts: Vec<String> = Metric::besides_time()
        .filter(|m| m.spec().on_gpu)
        .filter_map(|metric| {
            let views: Vec<metrics::MetricView> = c
                .set
                .comparisons
                .iter()
                .filter_map(|b| metrics::verdict(&b.outcome, metric))
                .collect();
            let label = views.first()?.label();
            let counts: Vec<String> = [
                Verdict::Regressed,
                Verdict::Ambiguous,
                Verdict::Improved,
                Verdict::NoChange,
            ]
            .into_iter()
            .filter_map(|v| {
                let n = views.iter().filter(|x| x.verdict == v).count();
                (n > 0).then(|| format!("{n} {}", v.label()))
            })
            .collect();
            Some(format!("{label}: {}", counts.join(", ")))
        })
        .collect();
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// The thresholds of the paired verdicts in words, `the paired noise threshold
/// ±1%`, adding the others where some benchmarks ran in processes of their own;
/// `None` when no time verdict is paired.
pub(crate) fn paired_threshold_text(c: &RunComparison) -> Option<String> {
    let compared: Vec<&Comparison> = c
        .set
        .comparisons
        .iter()
        .filter_map(|b| metrics::time(&b.outcome))
        .collect();
    let paired = compared.iter().filter(|x| x.paired).count();
    if paired == 0 {
        return None;
    }
    let config = &c.settings.config;
    let mut text = format!(
        "the paired noise threshold ±{}",
        crate::format::plain_percent(config.paired_noise_threshold)
    );
    if paired < compared.len() {
        text.push_str(&format!(
            " (in processes of their own: ±{}, host-bound ±{})",
            crate::format::plain_percent(config.noise_threshold),
            crate::format::plain_percent(config.host_noise_threshold)
        ));
    }
    Some(text)
}

/// What the smallest change each benchmark could have detected is (the `could
/// detect` column of an `ab` summary), for the line under its table; `None` for
/// other comparisons.
pub(crate) fn detectable_note(c: &RunComparison) -> Option<String> {
    if !c.is_ab() {
        return None;
    }
    let threshold = match paired_threshold_text(c) {
        Some(paired) => format!("{paired}, or 1.5 times the spread of the per-process ratios"),
        None => "the noise threshold, or 1.5 times the spread between processes".to_string(),
    };
    Some(format!(
        "each verdict's threshold ({threshold}, whichever is larger) plus the \
         half-width of its change's interval: a change read beyond it is regressed or \
         improved; \"no change\" says the change lies within the threshold"
    ))
}
