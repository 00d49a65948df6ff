//! The "What the GPU did" section of a benchmark page: kernel time and how it was
//! taken, the exact counts per call, and the table of one call's kernels beside the
//! baseline's, with what is new, gone, slower or faster.

use gpubench_analysis::summary::BenchmarkSummary;
use gpubench_analysis::{kernels::count_text, kernels::counter_changes, kernels::KernelStatMoves};
use gpubench_record::kernels::{ActivityKind, Counter, Counters, KernelStat};
use serde::Serialize;

use super::facts::{fact, Fact};
use super::input::BaselineComparison;
use crate::format;
use crate::output::view::metrics;

/// One row of the kernel table: a kernel (or copy, memset) of one call, now and in
/// the baseline.
#[derive(Debug, Clone, Serialize)]
pub(super) struct KernelRow {
    /// The kernel's name.
    pub name: String,
    /// `kernel`, `memcpy`, `memset` or `others`.
    pub kind: String,
    /// Launches per call now, or empty when gone.
    pub count: String,
    /// Time per call now, or empty when gone.
    pub time: String,
    /// Share of the call's kernel time now, e.g. `62%`.
    pub share: String,
    /// Time per call in the baseline, or empty when new or without a baseline table.
    pub baseline: String,
    /// `+12%`, `new`, `gone`, `2 → 3 launches`, or empty.
    pub change: String,
    /// `worse`, `better` or empty: how to colour the change.
    pub class: String,
}

/// What the GPU did in one call of a benchmark.
#[derive(Debug, Clone, Default, Serialize)]
pub(super) struct KernelView {
    /// Kernel time, launch share, counts and their verdicts.
    pub facts: Vec<Fact>,
    /// Sentences: how kernel time was taken, why it could not be captured.
    pub notes: Vec<String>,
    /// The kernels, most time first, then those only the baseline launched.
    pub rows: Vec<KernelRow>,
    /// Whether a baseline table is beside this one.
    pub with_baseline: bool,
    /// Why there is no kernel time (`no kernel timing on cpu`), when there is none.
    pub unavailable: Option<String>,
}

impl KernelView {
    /// The section for `s`, against `baseline` when compared; `None` when there is
    /// nothing to say (a smoke run, a failure before measuring).
    pub(super) fn new(s: &BenchmarkSummary, baseline: Option<&BaselineComparison>) -> Option<Self> {
        let mut v = KernelView::default();
        let outcome = baseline.map(|b| &b.outcome);
        if s.timing.kernel.is_none() && s.counters.counts.is_none() {
            v.unavailable = Some(s.kernels.unavailable.clone()?);
            return Some(v);
        }
        if let Some(k) = &s.timing.kernel {
            let e = k.estimate;
            let interval = if format::too_noisy(e.lower, e.upper) {
                format::too_noisy_words(&k.processes.medians)
            } else {
                format!(
                    "{:.0}% interval for the next run {}",
                    e.confidence * 100.0,
                    format::duration_interval(e.point, e.lower, e.upper)
                )
            };
            v.facts.push(fact(
                "kernel time",
                format::duration(e.point),
                format!("{interval}; {}", s.kernels.method.map_or("", |m| m.label())),
            ));
        }
        if let Some(share) = s.kernels.launch_overhead {
            v.facts.push(fact(
                "launch overhead",
                format!("{:.0}%", share * 100.0),
                "of device time outside the kernels (1 − kernel ÷ device)",
            ));
        }
        if let Some(c) = outcome.and_then(metrics::kernel) {
            v.facts.push(fact(
                "kernel time vs baseline",
                format::percent_change(c.change.point),
                format!(
                    "{:.0}% interval {}; {} against {} in the baseline",
                    c.change.confidence * 100.0,
                    format::percent_interval(c.change.lower, c.change.upper),
                    c.verdict.label(),
                    format::duration(c.baseline_estimate)
                ),
            ));
        }
        if let Some(c) = s.counters.counts {
            v.facts.extend(counter_facts(&c, baseline));
        }
        if let Some(words) = outcome
            .and_then(|o| metrics::verdict(o, gpubench_analysis::baseline::Metric::Counters))
            .map(|m| m.words)
        {
            v.facts.push(fact(
                "counters vs baseline",
                words,
                "exact counts per call: any change is a verdict",
            ));
        }
        if let Some(why) = &s.kernels.not_capturable {
            v.notes.push(format!(
                "The routine could not be captured in a CUDA graph ({why}), so its kernel time is the sum of its kernels' durations from the profiler, gaps left out."
            ));
        } else if s.timing.kernel.is_some() {
            v.notes.push("Kernel time is CUDA-graph replay of captured calls between device events: the kernels back to back, with no host in the way. It does not move with the host's dispatch speed.".into());
        }
        if s.counters.vary {
            v.notes.push("The processes counted different work per call: the routine does not launch the same kernels every call. The counts shown are the first process's.".into());
        }
        let was: &[KernelStat] = baseline.map_or(&[], |b| b.baseline_kernels.as_slice());
        v.with_baseline = !was.is_empty();
        v.rows = rows(&s.kernels.table, was);
        Some(v)
    }
}

/// The counts per call, each with its baseline figure when it differs.
fn counter_facts(c: &Counters, baseline: Option<&BaselineComparison>) -> Vec<Fact> {
    let was = baseline.and_then(|b| b.baseline_counters);
    let changed = was.map(|w| counter_changes(&w, c)).unwrap_or_default();
    let calls = format!("per call, counted over {} calls", c.calls);
    Counter::ALL
        .into_iter()
        .filter_map(|counter| {
            let now = c.per_call(counter)?;
            let value = match counter {
                Counter::AllocatedBytes => format::bytes(now.round() as u64),
                _ => count_text(now),
            };
            let detail = match changed.iter().find(|x| x.counter == counter) {
                Some(x) => format!("{}; was {}", x.describe(), count_text(x.baseline)),
                None => calls.clone(),
            };
            Some(fact(counter.nouns(), value, detail))
        })
        .collect()
}

/// The table rows: each kernel now beside its baseline figure, then those gone.
fn rows(now: &[KernelStat], was: &[KernelStat]) -> Vec<KernelRow> {
    let total: f64 = now.iter().map(|k| k.ns_per_call).sum();
    let same = |a: &KernelStat, b: &KernelStat| a.name == b.name && a.kind == b.kind;
    let mut rows: Vec<KernelRow> = now
        .iter()
        .map(|k| {
            let before = was.iter().find(|b| same(b, k));
            let (change, class) = match before {
                None if was.is_empty() => (String::new(), ""),
                None if k.kind == ActivityKind::Others => (String::new(), ""),
                None => ("new".into(), "worse"),
                Some(b) => moved(b, k),
            };
            KernelRow {
                name: k.name.clone(),
                kind: k.kind.label().into(),
                count: count_text(k.count_per_call),
                time: format::duration(k.ns_per_call),
                share: if total > 0.0 {
                    format!("{:.0}%", k.ns_per_call / total * 100.0)
                } else {
                    String::new()
                },
                baseline: before.map_or_else(String::new, |b| format::duration(b.ns_per_call)),
                change,
                class: class.into(),
            }
        })
        .collect();
    rows.extend(
        was.iter()
            .filter(|b| b.kind != ActivityKind::Others && !now.iter().any(|k| same(k, b)))
            .map(|b| KernelRow {
                name: b.name.clone(),
                kind: b.kind.label().into(),
                count: String::new(),
                time: String::new(),
                share: String::new(),
                baseline: format::duration(b.ns_per_call),
                change: "gone".into(),
                class: "better".into(),
            }),
    );
    rows
}

/// How a kernel launched on both sides moved: its launches, then its time beyond
/// `gpubench_analysis::kernels::KERNEL_CHANGE`.
fn moved(was: &KernelStat, now: &KernelStat) -> (String, &'static str) {
    let mut parts = Vec::new();
    let mut class = "";
    if now.count_moved(was) {
        parts.push(format!(
            "{} → {} launches",
            count_text(was.count_per_call),
            count_text(now.count_per_call)
        ));
        class = if now.count_per_call > was.count_per_call {
            "worse"
        } else {
            "better"
        };
    }
    if let Some(r) = now.time_moved(was) {
        parts.push(format::percent_change(r));
        if class.is_empty() {
            class = if r > 0.0 { "worse" } else { "better" };
        }
    }
    (parts.join(", "), class)
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpubench_analysis::synthetic::{GpuLikeSamples, SyntheticKernels};
    use gpubench_analysis::{compare_with_baseline, BaselineCompareOptions, BaselineEntry};
    use rand::SeedableRng;
    use rand_pcg::Pcg64Mcg;

    fn stat(name: &str, count: f64, ns: f64) -> KernelStat {
        KernelStat {
            name: name.into(),
            kind: ActivityKind::Kernel,
            count_per_call: count,
            ns_per_call: ns,
        }
    }

    #[test]
    fn rows_pair_each_kernel_with_the_baseline_and_list_the_gone_last() {
        let was = vec![
            stat("gemm", 1.0, 1000.0),
            stat("add", 1.0, 200.0),
            stat("old", 1.0, 50.0),
        ];
        let now = vec![
            stat("gemm", 1.0, 1120.0),
            stat("add", 2.0, 400.0),
            stat("relu", 1.0, 80.0),
        ];
        let r = rows(&now, &was);
        let names: Vec<&str> = r.iter().map(|x| x.name.as_str()).collect();
        assert_eq!(names, ["gemm", "add", "relu", "old"]);
        assert_eq!(r[0].change, "+12.0%");
        assert_eq!(r[0].class, "worse");
        assert_eq!(r[1].change, "1 → 2 launches, +100%");
        assert_eq!(r[2].change, "new");
        assert_eq!(r[3].change, "gone");
        assert_eq!(r[3].class, "better");
        assert!(r[3].time.is_empty() && !r[3].baseline.is_empty());
        assert_eq!(r[0].share, "70%");
        // Without a baseline table nothing is called new.
        assert!(rows(&now, &[]).iter().all(|x| x.change.is_empty()));
    }

    #[test]
    fn a_kernel_within_the_change_threshold_is_unchanged() {
        let r = rows(&[stat("gemm", 1.0, 1030.0)], &[stat("gemm", 1.0, 1000.0)]);
        assert_eq!((r[0].change.as_str(), r[0].class.as_str()), ("", ""));
    }

    #[test]
    fn a_summary_without_kernel_time_says_why() {
        let mut rng = Pcg64Mcg::seed_from_u64(1);
        let mut r = GpuLikeSamples::default().record("a", "cpu", 10, &mut rng);
        let m = r.processes[0].measurement.as_mut().unwrap();
        m.kernel_unavailable = Some("no kernel timing on cpu".into());
        let v = KernelView::new(&BenchmarkSummary::from_record(&r), None).unwrap();
        assert_eq!(v.unavailable.as_deref(), Some("no kernel timing on cpu"));
        assert!(v.rows.is_empty() && v.facts.is_empty());
        r.processes[0]
            .measurement
            .as_mut()
            .unwrap()
            .kernel_unavailable = None;
        assert!(KernelView::new(&BenchmarkSummary::from_record(&r), None).is_none());
    }

    #[test]
    fn a_section_against_a_baseline_names_the_changes() {
        let mut rng = Pcg64Mcg::seed_from_u64(2);
        let model = GpuLikeSamples::default();
        let add = SyntheticKernels::one("add_kernel", 2_000.0);
        let mut was = model.record_processes("a", "NVIDIA H200", 3, 20, &mut rng);
        add.attach(&mut was, &mut rng);
        let mut now = model.record_processes("a", "NVIDIA H200", 3, 20, &mut rng);
        add.with_kernel("fill_kernel", 500.0)
            .attach(&mut now, &mut rng);
        let entry = BaselineEntry::from_record(&was).unwrap();
        let set = compare_with_baseline(
            std::slice::from_ref(&now),
            std::slice::from_ref(&entry),
            &BaselineCompareOptions::default(),
        )
        .unwrap();
        let baseline = BaselineComparison::new(set.comparisons[0].outcome.clone(), Some(&entry));
        let v = KernelView::new(&BenchmarkSummary::from_record(&now), Some(&baseline)).unwrap();
        assert!(v.with_baseline);
        let fill = v.rows.iter().find(|r| r.name == "fill_kernel").unwrap();
        assert_eq!(
            (fill.change.as_str(), fill.class.as_str()),
            ("new", "worse")
        );
        let facts: Vec<(&str, &str)> = v
            .facts
            .iter()
            .map(|f| (f.label.as_str(), f.value.as_str()))
            .collect();
        assert!(facts.contains(&("kernels", "2")), "{facts:?}");
        assert!(
            facts.contains(&("counters vs baseline", "+1 kernel per call")),
            "{facts:?}"
        );
        assert!(facts.iter().any(|(l, _)| *l == "kernel time vs baseline"));
        let kernels = v.facts.iter().find(|f| f.label == "kernels").unwrap();
        assert_eq!(kernels.detail, "+1 kernel per call; was 1");
        assert!(v.notes[0].starts_with("Kernel time is CUDA-graph replay"));
    }
}
