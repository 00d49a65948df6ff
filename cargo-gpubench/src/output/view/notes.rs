//! Notes under a summary's tables, in words every output shows: what the processes,
//! the GPU and the host did to a benchmark's figures (unstable processes, throttled
//! or contended samples, the CPU's threads, other clocks) and what held memory at
//! its peak.

use gpubench_analysis::baseline::OtherClocks;
use gpubench_analysis::BenchmarkSummary;
use gpubench_record::units::format_ns;

/// `3 of 120 samples throttled, left out; shared the GPU with process 4242`, when
/// the GPU throttled or was shared, and `contended in 3 of 3 processes: the host's 2
/// CPUs were oversubscribed: ...` when the host could not serve the benchmark's
/// threads; `None` otherwise (and without readings).
pub fn gpu_note(s: &BenchmarkSummary) -> Option<String> {
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

/// The heading both outputs put above the notes when a GPU's benchmark has one.
pub const HEADING: &str = "the GPU throttled or was shared, or the host was oversubscribed \
    (throttled samples are left out of the figures; a contended benchmark may be slow by \
    what the other work took)";

/// The heading when every note is of work on the CPU device, which has no GPU to
/// throttle or share.
pub const CPU_HEADING: &str = "the host was oversubscribed (a contended benchmark may be \
    slow by what the other work took; `cargo gpubench ab` measures both revisions under \
    the same load)";

/// The heading for notes of `noted`: [`CPU_HEADING`] when all of them ran on the CPU
/// device, else [`HEADING`].
pub fn heading<'a>(mut noted: impl Iterator<Item = &'a BenchmarkSummary>) -> &'static str {
    if noted.all(|s| s.timing.bound == Some(gpubench_analysis::processes::Bound::Cpu)) {
        CPU_HEADING
    } else {
        HEADING
    }
}

/// `on the CPU: 1 intra-op thread (the cores the host had free)`: the threads the
/// routines of the CPU device ran on, once when every benchmark ran on as many, else
/// per benchmark; empty when none ran on the CPU.
pub fn cpu_threads_line<'a>(
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
/// baseline (mean SM clock)`, one line per benchmark.
pub fn clock_lines(other: &[OtherClocks]) -> Vec<(String, String)> {
    other
        .iter()
        .map(|x| {
            (
                x.id.clone(),
                format!(
                    "{}: a change may be the clock's, not the code's",
                    x.describe()
                ),
            )
        })
        .collect()
}

/// What the processes of an unstable benchmark did: `processes in 2 modes: 5.40 µs
/// (3), 9.30 µs (2)`, or `process medians 7.30 µs to 11.9 µs`.
pub fn process_note(s: &BenchmarkSummary) -> Option<String> {
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
pub fn held_at_peak_lines(s: &BenchmarkSummary) -> Option<Vec<String>> {
    match (&s.memory.at_peak, &s.memory.at_peak_unavailable) {
        (Some(p), _) => Some(p.report_lines(s.memory.peak.map(|m| m.peak_allocated_bytes))),
        (None, Some(why)) => Some(vec![format!("no allocator snapshot at the peak: {why}")]),
        (None, None) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::markdown::render_conditions as render_markdown;
    use crate::output::terminal::render_conditions as render_terminal;
    use gpubench_analysis::synthetic::GpuLikeSamples;
    use gpubench_record::host::{HostCpus, HostReading, HostTelemetry, ThreadSource};
    use rand::SeedableRng;
    use rand_pcg::Pcg64Mcg;

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
        for (round, others) in cpu.rounds.iter_mut().zip([0, 5]) {
            round.host = Some(HostTelemetry {
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
        let terminal = render_terminal([("mm", &s)]);
        assert!(
            terminal.contains("the GPU throttled or was shared"),
            "{terminal}"
        );
        assert!(terminal.contains("  mm: 4 of 24"), "{terminal}");
        let md = render_markdown([("mm", &s)], |c| format!("`{c}`"), str::to_string);
        assert!(md.contains("**The GPU throttled or was shared"), "{md}");
        assert!(md.contains("- `mm`: 4 of 24"), "{md}");
        // Notes of CPU work only speak of the host: there is no GPU to throttle.
        let terminal = render_terminal([("mv", &c)]);
        assert!(
            terminal.starts_with("\nthe host was oversubscribed (") && !terminal.contains("GPU"),
            "{terminal}"
        );
        let md = render_markdown([("mv", &c)], |c| format!("`{c}`"), str::to_string);
        assert!(
            md.contains("**The host was oversubscribed (") && !md.contains("GPU"),
            "{md}"
        );
        // Beside a GPU's note the heading names both.
        let both = render_terminal([("mv", &c), ("mm", &s)]);
        assert!(both.contains("the GPU throttled or was shared"), "{both}");
    }
}
