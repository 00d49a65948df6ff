//! What the GPU did to a run, in words for the terminal and Markdown: benchmarks
//! whose samples ran throttled (left out of the figures) or that shared the GPU
//! with another process, and comparisons whose two sides ran at clearly different
//! clocks.

use std::fmt::Write as _;

use gpubench_analysis::baseline::OtherClocks;
use gpubench_analysis::BenchmarkSummary;

/// `3 of 120 samples throttled, left out; shared the GPU with process 4242`, when
/// the GPU throttled or was shared; `None` otherwise (and without telemetry).
pub fn gpu_note(s: &BenchmarkSummary) -> Option<String> {
    let mut parts = Vec::new();
    if s.throttled_samples > 0 {
        let total = s.throttled_samples + s.primary().map_or(0, |p| p.samples);
        parts.push(format!(
            "{} of {total} samples throttled, left out",
            s.throttled_samples
        ));
    }
    if !s.other_processes.is_empty() {
        let pids: Vec<String> = s.other_processes.iter().map(u32::to_string).collect();
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
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// The heading both outputs put above the notes.
pub const HEADING: &str = "the GPU throttled or was shared (throttled samples are left out of \
    the figures; a contended benchmark may be slow by what the other process took)";

/// Lines under the terminal table naming throttled or contended benchmarks (empty
/// when none was); `benchmarks` are each benchmark's name and figures.
pub fn render_terminal<'a>(
    benchmarks: impl IntoIterator<Item = (&'a str, &'a BenchmarkSummary)>,
) -> String {
    let mut out = String::new();
    for (name, s) in benchmarks {
        if let Some(note) = gpu_note(s) {
            let _ = writeln!(out, "  {name}: {note}");
        }
    }
    if !out.is_empty() {
        out.insert_str(0, &format!("\n{HEADING}:\n"));
    }
    out
}

/// The same as a Markdown list (folded when long), with `code` and `text` escaping
/// as the caller does.
pub fn render_markdown<'a>(
    benchmarks: impl IntoIterator<Item = (&'a str, &'a BenchmarkSummary)>,
    code: impl Fn(&str) -> String,
    text: impl Fn(&str) -> String,
) -> String {
    let items: Vec<String> = benchmarks
        .into_iter()
        .filter_map(|(name, s)| Some(format!("{}: {}", code(name), text(&gpu_note(s)?))))
        .collect();
    let mut heading = HEADING.to_string();
    heading[..1].make_ascii_uppercase();
    let mut out = String::new();
    crate::output::markdown::list(
        &mut out,
        &format!("**{heading}:**"),
        "The GPU throttled or was shared",
        &items,
    );
    out
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

#[cfg(test)]
mod tests {
    use super::*;
    use gpubench_analysis::synthetic::GpuLikeSamples;
    use rand::SeedableRng;
    use rand_pcg::Pcg64Mcg;

    #[test]
    fn throttled_and_contended_benchmarks_are_named_and_others_are_not() {
        let mut rng = Pcg64Mcg::seed_from_u64(3);
        let r = GpuLikeSamples::default().record("mm", "NVIDIA H200", 20, &mut rng);
        let mut s = BenchmarkSummary::from_record(&r);
        assert_eq!(gpu_note(&s), None);
        s.throttled_samples = 4;
        s.other_processes = vec![4242];
        assert_eq!(
            gpu_note(&s).unwrap(),
            "4 of 24 samples throttled, left out; contended: shared the GPU with process 4242"
        );
        let terminal = render_terminal([("mm", &s)]);
        assert!(
            terminal.contains("the GPU throttled or was shared"),
            "{terminal}"
        );
        assert!(terminal.contains("  mm: 4 of 24"), "{terminal}");
        let md = render_markdown([("mm", &s)], |c| format!("`{c}`"), str::to_string);
        assert!(md.contains("**The GPU throttled or was shared"), "{md}");
        assert!(md.contains("- `mm`: 4 of 24"), "{md}");
    }
}
