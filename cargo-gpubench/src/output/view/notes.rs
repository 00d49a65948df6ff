//! Notes under a summary's tables, each with its kind, the benchmark it is about and
//! the benchmarks it covers, in words every output shows ([`Note`], built once by
//! [`notes`]): what the processes, the GPU and the host did to a benchmark's figures
//! (unstable processes, throttled or contended samples, the CPU's threads, other
//! clocks), what the GPU's power and peak say of it (power-capped samples, % of
//! peak at the clock it ran, energy per call), what a comparison found beside its verdicts (benchmarks not compared,
//! ambiguous, new, missing or left out), and what held memory at a peak.

use gpubench_analysis::baseline::{Metric, OtherClocks};
use gpubench_analysis::peaks::{PeakKind, PeakShare};
use gpubench_analysis::BenchmarkSummary;
use gpubench_record::measurement::Throughput;
use gpubench_record::units::format_ns;

use crate::compare::RunComparison;
use crate::output::view::metrics;
use crate::store::references::SummaryEntry;

/// What a note says; each output frames a kind in its own way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum NoteKind {
    /// A benchmark whose processes disagree ([`process_note`]).
    Unstable,
    /// A benchmark whose routine keeps memory from call to call.
    HoldsMemory,
    /// A benchmark that compares eager with compiled.
    EagerCompiled,
    /// A benchmark whose GPU throttled or was shared, or whose host was
    /// oversubscribed ([`gpu_note`]); `on_cpu` when it ran on the CPU device.
    Conditions {
        /// Whether it ran on the CPU device, which has no GPU to throttle or share.
        on_cpu: bool,
    },
    /// A benchmark that ran power-capped, its rate as a share of the peak at the
    /// clock it ran, or its energy per call ([`power_note`]).
    PowerAndPeak,
    /// What the GPU did differently from the baseline ([`metrics::gpu_changes`]).
    GpuChanges,
    /// A benchmark whose memory changed against the baseline.
    MemoryChanged,
    /// Benchmarks not compared, for one reason.
    NotCompared,
    /// Benchmarks whose verdict is ambiguous whatever their data, for one reason.
    Ambiguous,
    /// Benchmarks the baseline lacks.
    New,
    /// Missing evidence of one kind and reason.
    Missing {
        /// Whether `--allow-missing` lets it pass the gate.
        allowed: bool,
    },
    /// Baseline benchmarks the judged side left out on purpose.
    NotSelected,
    /// A benchmark compared across measurement settings
    /// (`--allow-settings-mismatch`): the text is how they differ.
    OtherSettings,
    /// A benchmark whose two sides ran at clearly different clocks.
    OtherClocks,
    /// A benchmark compared across device models (`--allow-device-mismatch`).
    CrossDevice {
        /// The baseline's device.
        baseline: String,
        /// The judged side's device.
        current: String,
    },
}

/// A note under a summary's tables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Note {
    /// What it says.
    pub kind: NoteKind,
    /// The benchmark it is about, when it is about one.
    pub id: Option<String>,
    /// The words (unescaped).
    pub text: String,
    /// The names of the benchmarks it covers, in order.
    pub benchmarks: Vec<String>,
}

impl Note {
    fn one(kind: NoteKind, e: &SummaryEntry, text: String) -> Self {
        Note {
            kind,
            id: Some(e.id.clone()),
            text,
            benchmarks: vec![e.name.clone()],
        }
    }

    /// A note for each kind and reason, with the benchmarks it covers, from
    /// `(name, kind, reason)` in order: a reason many benchmarks share (another
    /// thread count, a noisy host) is said once.
    fn grouped(items: impl IntoIterator<Item = (String, NoteKind, String)>) -> Vec<Self> {
        let mut out: Vec<Note> = Vec::new();
        for (name, kind, text) in items {
            match out.iter_mut().find(|n| n.kind == kind && n.text == text) {
                Some(n) => n.benchmarks.push(name),
                None => out.push(Note {
                    kind,
                    id: None,
                    text,
                    benchmarks: vec![name],
                }),
            }
        }
        out
    }

    /// A note of `kind` that lists `benchmarks`, when there are any.
    fn listing(kind: NoteKind, benchmarks: Vec<String>) -> Option<Self> {
        (!benchmarks.is_empty()).then(|| Note {
            kind,
            id: None,
            text: String::new(),
            benchmarks,
        })
    }
}

/// Every note on `entries` and, when there is one, their comparison, in the order
/// of [`NoteKind`]'s kinds, each kind in the benchmarks' order.
pub(crate) fn notes(entries: &[SummaryEntry], comparison: Option<&RunComparison>) -> Vec<Note> {
    let mut out = Vec::new();
    for e in entries {
        if let Some(note) = e.summary.as_ref().and_then(process_note) {
            out.push(Note::one(NoteKind::Unstable, e, note));
        }
    }
    for e in entries {
        let Some(g) = e.summary.as_ref().and_then(|s| s.memory.growth.as_ref()) else {
            continue;
        };
        if let Some(held) = g.flag_text() {
            let text = format!(
                "{held} (allocated after its outputs were dropped, over two stretches of {} calls)",
                g.calls
            );
            out.push(Note::one(NoteKind::HoldsMemory, e, text));
        }
    }
    for e in entries {
        if let Some(c) = e.summary.as_ref().and_then(|s| s.eager_compiled.as_ref()) {
            let text = crate::output::eager_compiled::line(c);
            out.push(Note::one(NoteKind::EagerCompiled, e, text));
        }
    }
    for e in entries {
        let Some(s) = e.summary.as_ref() else {
            continue;
        };
        if let Some(note) = gpu_note(s) {
            let on_cpu = s.timing.bound == Some(gpubench_analysis::processes::Bound::Cpu);
            out.push(Note::one(NoteKind::Conditions { on_cpu }, e, note));
        }
    }
    for e in entries {
        if let Some(note) = e.summary.as_ref().and_then(power_note) {
            out.push(Note::one(NoteKind::PowerAndPeak, e, note));
        }
    }
    if let Some(c) = comparison {
        out.extend(comparison_notes(entries, c));
    }
    out
}

/// The notes on what comparison `c` found beside its verdicts.
fn comparison_notes(entries: &[SummaryEntry], c: &RunComparison) -> Vec<Note> {
    let mut out = Vec::new();
    let outcome = |e: &SummaryEntry| c.get(&e.id).map(|b| &b.outcome);
    for e in entries {
        let words = outcome(e).map(metrics::gpu_changes).unwrap_or_default();
        if !words.is_empty() {
            out.push(Note::one(NoteKind::GpuChanges, e, words.join("; ")));
        }
    }
    for e in entries {
        let memory = outcome(e).and_then(|o| metrics::verdict(o, Metric::Memory));
        if let Some(m) = memory {
            if let Some(detail) = &m.detail {
                let text = format!("{}: {detail}", m.words);
                out.push(Note::one(NoteKind::MemoryChanged, e, text));
            }
        }
    }
    let name_of = |id: &str| c.name_of(id, entries);
    out.extend(Note::grouped(c.not_compared().into_iter().map(
        |(id, reason)| (name_of(id), NoteKind::NotCompared, reason.to_string()),
    )));
    out.extend(Note::grouped(c.notes().into_iter().map(|(id, note)| {
        (name_of(id), NoteKind::Ambiguous, note.to_string())
    })));
    out.extend(Note::listing(
        NoteKind::New,
        c.set
            .missing_in_baseline
            .iter()
            .map(|id| name_of(id))
            .collect(),
    ));
    out.extend(Note::grouped(c.missing_with_allowance().into_iter().map(
        |(m, allowed)| {
            let why = format!("{}: {}", m.what(), m.reason);
            (name_of(&m.id), NoteKind::Missing { allowed }, why)
        },
    )));
    out.extend(Note::listing(
        NoteKind::NotSelected,
        c.not_selected.iter().map(|id| name_of(id)).collect(),
    ));
    // These name the benchmark by its id, as the comparison keeps it.
    out.extend(c.set.other_settings.iter().map(|x| Note {
        kind: NoteKind::OtherSettings,
        id: Some(x.id.clone()),
        text: x.differences.join("; "),
        benchmarks: vec![x.id.clone()],
    }));
    out.extend(
        clock_lines(&c.set.other_clocks)
            .into_iter()
            .map(|(id, text)| Note {
                kind: NoteKind::OtherClocks,
                id: Some(id.clone()),
                text,
                benchmarks: vec![id],
            }),
    );
    out.extend(c.set.cross_device.iter().map(|x| Note {
        kind: NoteKind::CrossDevice {
            baseline: x.baseline_device.clone(),
            current: x.current_device.clone(),
        },
        id: Some(x.id.clone()),
        text: String::new(),
        benchmarks: vec![x.id.clone()],
    }));
    out
}

/// The heading above the notes of kind [`NoteKind::Conditions`] among `notes`:
/// [`CPU_HEADING`] when all of them ran on the CPU device, else [`HEADING`].
pub(crate) fn conditions_heading<'a>(notes: impl IntoIterator<Item = &'a Note>) -> &'static str {
    let all_cpu = notes.into_iter().all(|n| match n.kind {
        NoteKind::Conditions { on_cpu } => on_cpu,
        _ => true,
    });
    if all_cpu {
        CPU_HEADING
    } else {
        HEADING
    }
}

/// `3 of 120 samples throttled, left out; shared the GPU with process 4242`, when
/// the GPU throttled or was shared, and `contended in 3 of 3 processes: the host's 2
/// CPUs were oversubscribed: ...` when the host could not serve the benchmark's
/// threads; `None` otherwise (and without readings).
pub(crate) fn gpu_note(s: &BenchmarkSummary) -> Option<String> {
    let mut parts = Vec::new();
    if s.conditions.throttled_samples > 0 {
        let total = s.conditions.throttled_samples + s.primary().map_or(0, |p| p.samples);
        parts.push(format!(
            "{} of {total} samples throttled, left out",
            s.conditions.throttled_samples
        ));
    }
    if !s.conditions.other_processes.is_empty() {
        let pids: Vec<String> = s
            .conditions
            .other_processes
            .iter()
            .map(u32::to_string)
            .collect();
        let which = if pids.len() == 1 {
            "process"
        } else {
            "processes"
        };
        parts.push(format!(
            "contended: shared the GPU with {which} {}",
            pids.join(", ")
        ));
    }
    parts.extend(
        s.conditions
            .host_cpus
            .as_ref()
            .and_then(|h| h.contention_text()),
    );
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// `power-capped: 38% of samples at the 700 W limit; 75.0% of the dense bf16 peak at
/// 1672 MHz (681.6 TFLOP/s of 904.0 TFLOP/s); 1.64 J per call at 410 W (idle 123 W)`:
/// what a benchmark's power and peak figures say, each part where it has the figure
/// (the power cap only when some sample ran capped); `None` when it has none.
pub(crate) fn power_note(s: &BenchmarkSummary) -> Option<String> {
    let mut parts = Vec::new();
    if let Some(p) = s.conditions.power_capped.as_ref().filter(|p| p.share > 0.0) {
        let limit = match p.power_limit_w {
            Some(w) => format!("the {w:.0} W limit"),
            None => "the power limit".to_string(),
        };
        parts.push(format!(
            "power-capped: {:.0}% of samples at {limit}",
            p.share * 100.0
        ));
    }
    parts.extend(s.peak.as_ref().map(peak_text));
    parts.extend(kernel_clock_text(s));
    if let Some(e) = &s.energy {
        let idle = e
            .idle_w
            .map(|w| format!(" (idle {w:.0} W)"))
            .unwrap_or_default();
        parts.push(format!(
            "{} per call at {:.0} W{idle}",
            crate::format::joules(e.joules_per_call),
            e.power_w
        ));
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// `kernel time ran at 1702 MHz (100% power-capped), the samples at 1980 MHz`: the
/// paced replays of `--flush-l2` ran at a clearly different clock than the samples,
/// so kernel and device time are not one regime; `None` when they agree or either
/// clock is unknown.
fn kernel_clock_text(s: &BenchmarkSummary) -> Option<String> {
    let k = s.conditions.kernel_clock.as_ref()?;
    let samples = s.conditions.sm_clock_mhz?;
    k.differs_from(samples).then(|| {
        format!(
            "kernel time ran at {:.0} MHz ({:.0}% power-capped), the samples at {samples:.0} MHz",
            k.sm_clock_mhz,
            k.power_capped_share * 100.0
        )
    })
}

/// `75.0% of the dense bf16 peak at 1672 MHz (681.6 TFLOP/s of 904.0 TFLOP/s)`, or
/// with the data sheet's peak and why it is not scaled when the clock is unknown.
fn peak_text(p: &PeakShare) -> String {
    let per_s = |x: f64| match p.kind {
        PeakKind::DenseFlops | PeakKind::SparseFlops => Throughput::Flops(x).format_rate(1e9),
        PeakKind::Bytes => Throughput::Bytes(x).format_rate(1e9),
    };
    let of = match (p.kind, &p.dtype) {
        (PeakKind::DenseFlops, Some(d)) => format!("the dense {d} peak"),
        (PeakKind::DenseFlops, None) => "the dense peak".to_string(),
        (PeakKind::SparseFlops, Some(d)) => format!("the 2:4 sparse {d} peak"),
        (PeakKind::SparseFlops, None) => "the 2:4 sparse peak".to_string(),
        (PeakKind::Bytes, _) => "the memory bandwidth".to_string(),
    };
    let rates = format!("{} of {}", per_s(p.rate_per_s), per_s(p.peak_per_s));
    match (&p.unscaled, p.measured_clock_mhz) {
        (None, Some(mhz)) => format!("{:.1}% of {of} at {mhz:.0} MHz ({rates})", p.share * 100.0),
        (Some(why), _) => format!(
            "{:.1}% of {of} ({rates}; the data sheet's peak: {why})",
            p.share * 100.0
        ),
        (None, None) => format!("{:.1}% of {of} ({rates})", p.share * 100.0),
    }
}

/// The heading both outputs put above the notes of kind [`NoteKind::PowerAndPeak`].
pub(crate) const POWER_HEADING: &str =
    "power, energy and % of peak (the peak scaled to the clock the samples ran at)";

/// The heading both outputs put above the notes when a GPU's benchmark has one.
pub(crate) const HEADING: &str = "the GPU throttled or was shared, or the host was oversubscribed \
    (throttled samples are left out of the figures; a contended benchmark may be slow by \
    what the other work took)";

/// The heading when every note is of work on the CPU device, which has no GPU to
/// throttle or share.
pub(crate) const CPU_HEADING: &str = "the host was oversubscribed (a contended benchmark may be \
    slow by what the other work took; `cargo gpubench ab` measures both revisions under \
    the same load)";

/// `on the CPU: 1 intra-op thread (the cores the host had free)`: the threads the
/// routines of the CPU device ran on, once when every benchmark ran on as many, else
/// per benchmark; empty when none ran on the CPU.
pub(crate) fn cpu_threads_line<'a>(
    benchmarks: impl IntoIterator<Item = (&'a str, &'a BenchmarkSummary)>,
) -> String {
    let threads: Vec<(&str, String)> = benchmarks
        .into_iter()
        .filter(|(_, s)| s.timing.bound == Some(gpubench_analysis::processes::Bound::Cpu))
        .filter_map(|(name, s)| Some((name, s.conditions.host_cpus.as_ref()?.threads_text())))
        .collect();
    let Some((_, first)) = threads.first() else {
        return String::new();
    };
    if threads.iter().all(|(_, t)| t == first) {
        return format!("\non the CPU: {first}\n");
    }
    let each: Vec<String> = threads
        .iter()
        .map(|(name, t)| format!("{name} {t}"))
        .collect();
    format!("\non the CPU: {}\n", each.join("; "))
}

/// `compared at other clocks: mm: the GPU ran at 1410 MHz here, 1980 MHz in the
/// baseline (mean SM clock)`, with the power cap when one side ran power-capped and
/// the other did not, one line per benchmark.
pub(crate) fn clock_lines(other: &[OtherClocks]) -> Vec<(String, String)> {
    other
        .iter()
        .map(|x| {
            (
                x.id.clone(),
                format!(
                    "{}: a change may be the {}, not the code's",
                    x.describe(),
                    if x.power_capped.is_some() {
                        "power limit's or the clock's"
                    } else {
                        "clock's"
                    }
                ),
            )
        })
        .collect()
}

/// What the processes of an unstable benchmark did: `processes in 2 modes: 5.40 µs
/// (3), 9.30 µs (2)`, or `process medians 7.30 µs to 11.9 µs`.
pub(crate) fn process_note(s: &BenchmarkSummary) -> Option<String> {
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

/// The lines of the allocator's state at a benchmark's peak
/// (`--memory-peak-snapshot`), or why there is none; `None` when not asked for.
pub(crate) fn held_at_peak_lines(s: &BenchmarkSummary) -> Option<Vec<String>> {
    match (&s.memory.at_peak, &s.memory.at_peak_unavailable) {
        (Some(p), _) => Some(p.report_lines(s.memory.peak.map(|m| m.peak_allocated_bytes))),
        (None, Some(why)) => Some(vec![format!("no allocator snapshot at the peak: {why}")]),
        (None, None) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::view::SummaryView;
    use crate::store::manifest::BenchStatus;

    fn entries(benchmarks: &[(&str, &BenchmarkSummary)]) -> Vec<SummaryEntry> {
        benchmarks
            .iter()
            .map(|(name, s)| SummaryEntry {
                name: name.to_string(),
                target: "suite".into(),
                id: name.to_string(),
                status: BenchStatus::Passed,
                record: None,
                summary: Some((*s).clone()),
                comparison: None,
            })
            .collect()
    }

    fn render_terminal(benchmarks: &[(&str, &BenchmarkSummary)]) -> String {
        let entries = entries(benchmarks);
        crate::output::terminal::render_conditions(&SummaryView::build(&entries, None))
    }

    fn render_markdown(benchmarks: &[(&str, &BenchmarkSummary)]) -> String {
        let entries = entries(benchmarks);
        crate::output::markdown::render_conditions(&SummaryView::build(&entries, None))
    }
    use gpubench_analysis::synthetic::GpuLikeSamples;
    use gpubench_record::host::{HostCpus, HostReading, HostTelemetry, ThreadSource};
    use rand::SeedableRng;
    use rand_pcg::Pcg64Mcg;

    #[test]
    fn a_2_4_sparse_share_names_the_sparse_peak() {
        let mut rng = Pcg64Mcg::seed_from_u64(5);
        let r = GpuLikeSamples::default().record("mm", "NVIDIA H200", 20, &mut rng);
        let mut s = BenchmarkSummary::from_record(&r);
        s.peak = gpubench_analysis::peaks::PeakShare::of_id(
            "NVIDIA H200",
            Throughput::Flops(2.0 * 8192f64.powi(3)),
            1e6,
            "matmul_bf16_2:4/8192",
            Some(1830.0),
            None,
        );
        assert_eq!(
            power_note(&s).unwrap(),
            "55.6% of the 2:4 sparse bf16 peak at 1830 MHz (1099.5 TFLOP/s of 1978.9 TFLOP/s)"
        );
    }

    #[test]
    fn throttled_and_contended_benchmarks_are_named_and_others_are_not() {
        let mut rng = Pcg64Mcg::seed_from_u64(3);
        let r = GpuLikeSamples::default().record("mm", "NVIDIA H200", 20, &mut rng);
        let mut s = BenchmarkSummary::from_record(&r);
        assert_eq!(gpu_note(&s), None);
        s.conditions.throttled_samples = 4;
        s.conditions.other_processes = vec![4242];
        assert_eq!(
            gpu_note(&s).unwrap(),
            "4 of 24 samples throttled, left out; contended: shared the GPU with process 4242"
        );
        // A host that could not serve its threads is named the same way.
        let mut rng = Pcg64Mcg::seed_from_u64(4);
        let mut cpu = GpuLikeSamples::default().record_processes("mv", "AMD EPYC", 2, 10, &mut rng);
        cpu.fingerprint.device.kind = "cpu".into();
        let reading = |others| HostReading {
            others_runnable: others,
            load_average: Some(6.0),
        };
        for (process, others) in cpu.processes.iter_mut().zip([0, 5]) {
            process.host = Some(HostTelemetry {
                cpus: HostCpus {
                    online: 2,
                    available: 2,
                },
                intra_op_threads: 1,
                threads_from: ThreadSource::FreeCores,
                working_threads: 1,
                start: reading(others),
                end: reading(0),
            });
        }
        let c = BenchmarkSummary::from_record(&cpu);
        assert_eq!(
            gpu_note(&c).unwrap(),
            "contended in 1 of 2 processes: the host's 2 CPUs were oversubscribed: 5 runnable \
             threads of other work beside this benchmark's 1"
        );
        assert_eq!(
            cpu_threads_line([("mv", &c), ("mm", &s)]),
            "\non the CPU: 1 intra-op thread (the cores the host had free)\n"
        );
        assert_eq!(cpu_threads_line([("mm", &s)]), "");
        let terminal = render_terminal(&[("mm", &s)]);
        assert!(
            terminal.contains("the GPU throttled or was shared"),
            "{terminal}"
        );
        assert!(terminal.contains("  mm: 4 of 24"), "{terminal}");
        let md = render_markdown(&[("mm", &s)]);
        assert!(md.contains("**The GPU throttled or was shared"), "{md}");
        assert!(md.contains("- `mm`: 4 of 24"), "{md}");
        // Notes of CPU work only speak of the host: there is no GPU to throttle.
        let terminal = render_terminal(&[("mv", &c)]);
        assert!(
            terminal.starts_with("\nthe host was oversubscribed (") && !terminal.contains("GPU"),
            "{terminal}"
        );
        let md = render_markdown(&[("mv", &c)]);
        assert!(
            md.contains("**The host was oversubscribed (") && !md.contains("GPU"),
            "{md}"
        );
        // Beside a GPU's note the heading names both.
        let both = render_terminal(&[("mv", &c), ("mm", &s)]);
        assert!(both.contains("the GPU throttled or was shared"), "{both}");
    }
}
