//! The eager-versus-compiled result of a benchmark in words, one line each, as the
//! terminal and the Markdown summary show it (the JSON carries the same figures).

use gpubench_record::eager_compiled::EagerCompiledSummary;

use crate::format::{format_ns_or_dash, too_noisy};

/// `traced 1.32× faster [1.30×, 1.35×] (2.10 ms vs 1.59 ms per call); outputs agree;
/// pays off after 1200 calls`, or why compiled has no figure.
pub(crate) fn line(c: &EagerCompiledSummary) -> String {
    let mut parts = Vec::new();
    match (&c.compiled_failure, &c.speedup) {
        (Some(why), _) => parts.push(format!("{} failed: {why}", c.compiled)),
        (None, Some(s)) => {
            let word = if s.lower > 1.0 {
                "faster"
            } else if s.upper < 1.0 {
                "slower"
            } else {
                "no clear difference"
            };
            let interval = if too_noisy(s.lower, s.upper) {
                ", too noisy for an interval".to_string()
            } else {
                format!(" [{:.2}×, {:.2}×]", s.lower, s.upper)
            };
            parts.push(format!(
                "{} {:.2}× {word}{interval} ({} vs {} per call)",
                c.compiled,
                s.point,
                format_ns_or_dash(c.eager_ns_per_call),
                format_ns_or_dash(c.compiled_ns_per_call)
            ));
        }
        (None, None) => parts.push(format!("{}: no steady-state timing", c.compiled)),
    }
    parts.push(if c.agrees {
        format!("outputs agree at {} shape(s)", c.shapes)
    } else {
        format!(
            "outputs disagree at {} of {} shape(s)",
            c.shapes_disagreeing, c.shapes
        )
    });
    if let Some(n) = c.break_even_calls {
        parts.push(format!("pays off after {n} calls"));
    }
    parts.extend(c.flag_words.iter().cloned());
    parts.join("; ")
}
