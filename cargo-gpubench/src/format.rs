//! Numbers and words as people read them, for every output: durations with a fitting
//! unit, intervals in the unit of their point, percentages (signed changes, spreads,
//! settings), byte sizes, ratios, plurals and shortened text. Imports nothing of
//! this crate.

use gpubench_record::estimate::Estimate;
use gpubench_record::units::format_ns;

/// A unit of time and how many nanoseconds it holds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct TimeUnit {
    /// Its symbol, e.g. `ms`.
    pub symbol: &'static str,
    /// Nanoseconds per unit.
    pub ns: f64,
}

const fn unit(symbol: &'static str, ns: f64) -> TimeUnit {
    TimeUnit { symbol, ns }
}

/// The units, smallest first.
const UNITS: [TimeUnit; 4] = [
    unit("ns", 1.0),
    unit("µs", 1e3),
    unit("ms", 1e6),
    unit("s", 1e9),
];

/// The unit that shows `ns` with one to three digits before the point (`ns` below
/// 1 µs and for non-finite values).
pub(crate) fn time_unit(ns: f64) -> TimeUnit {
    let a = ns.abs();
    UNITS
        .iter()
        .rev()
        .find(|u| a.is_finite() && a >= u.ns)
        .copied()
        .unwrap_or(UNITS[0])
}

/// `value` with four significant digits (at least the integer part).
fn significant(value: f64) -> String {
    let a = value.abs();
    let decimals = if a >= 1000.0 {
        0
    } else if a >= 100.0 {
        1
    } else if a >= 10.0 {
        2
    } else {
        3
    };
    format!("{value:.decimals$}")
}

/// A duration, e.g. `16.12 ms`, as the terminal shows it; `—` when not a finite
/// number.
pub(crate) fn duration(ns: f64) -> String {
    if !ns.is_finite() {
        return "—".into();
    }
    format_ns(ns)
}

/// Energy, e.g. `1.16 J`, `1.5 mJ`, `12.0 µJ`.
pub(crate) fn joules(j: f64) -> String {
    if j >= 1.0 {
        format!("{j:.2} J")
    } else if j >= 1e-3 {
        format!("{:.1} mJ", j * 1e3)
    } else {
        format!("{:.1} µJ", j * 1e6)
    }
}

/// An interval without its point, e.g. `16.05 – 16.20 ms`: one unit when both bounds
/// print in the point's, else each bound with its own (`999.0 µs – 1.010 ms`), so a
/// bound is never read in a unit it is not in.
pub(crate) fn duration_interval(point: f64, lower: f64, upper: f64) -> String {
    if !(point.is_finite() && lower.is_finite() && upper.is_finite()) {
        return String::new();
    }
    let point = format_ns(point);
    let unit = unit_of(&point);
    let (lo, hi) = (format_ns(lower), format_ns(upper));
    match (lo.rsplit_once(' '), hi.rsplit_once(' ')) {
        (Some((l, lu)), Some((h, hu))) if lu == unit && hu == unit => {
            format!("{l} – {h} {unit}")
        }
        _ => format!("{lo} – {hi}"),
    }
}

/// How many times its lower bound an interval's upper bound may be and still be
/// shown as an interval. Past a factor of 4 the next run could be half or twice the
/// point, so the bounds no longer pin down even the figure's first digit, and they
/// come from the t quantile of a few processes far more than from anything measured
/// (three processes in two modes, 5.4 µs and 9.3 µs, give an interval of 2.4 µs to
/// 21 µs). The processes' own range then says more. Host-bound figures, whose interval
/// is at least ±25% wide (a factor of 1.56), stay well inside it.
pub(crate) const TOO_NOISY_RATIO: f64 = 4.0;

/// Whether an interval is too wide to show as one (see [`TOO_NOISY_RATIO`]).
pub(crate) fn too_noisy(lower: f64, upper: f64) -> bool {
    upper > TOO_NOISY_RATIO * lower
}

/// What a figure too noisy for an interval shows instead: `too noisy for an
/// interval; processes 912.0 µs – 3.100 ms`, the range of its processes' medians.
pub(crate) fn too_noisy_words(medians: &[f64]) -> String {
    match duration_range(medians) {
        Some(range) => format!("too noisy for an interval; processes {range}"),
        None => "too noisy for an interval".to_string(),
    }
}

/// The lowest and highest of `values`, e.g. `912.0 µs – 3.100 ms`; `None` for fewer
/// than two finite values.
pub fn duration_range(values: &[f64]) -> Option<String> {
    let finite: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    if finite.len() < 2 {
        return None;
    }
    let lo = finite.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = finite.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    Some(duration_interval(lo, lo, hi))
}

/// A figure with its interval as the terminal and the Markdown show it, `16.12 ms
/// [16.05, 16.20]`, or, when the interval is too wide to mean anything
/// ([`TOO_NOISY_RATIO`]), the range its processes' `medians` span: `1.508 ms (too
/// noisy for an interval; processes 912.0 µs – 3.100 ms)`.
pub(crate) fn figure(estimate: &Estimate, medians: &[f64]) -> String {
    if too_noisy(estimate.lower, estimate.upper) {
        format!(
            "{} ({})",
            format_ns(estimate.point),
            too_noisy_words(medians)
        )
    } else {
        interval(estimate.point, estimate.lower, estimate.upper)
    }
}

/// A figure's interval without its point, as the HTML report shows it under the
/// point: `16.05 – 16.20 ms`, or [`too_noisy_words`].
pub(crate) fn figure_spread(estimate: &Estimate, medians: &[f64]) -> String {
    if too_noisy(estimate.lower, estimate.upper) {
        too_noisy_words(medians)
    } else {
        duration_interval(estimate.point, estimate.lower, estimate.upper)
    }
}

/// A relative change as a signed percentage, e.g. `+3.2%`, `−0.4%`.
pub(crate) fn percent_change(fraction: f64) -> String {
    if !fraction.is_finite() {
        return "—".into();
    }
    let pct = fraction * 100.0;
    let digits = if pct.abs() >= 100.0 { 0 } else { 1 };
    let body = format!("{:.digits$}%", pct.abs());
    if body.trim_start_matches(['0', '.', '%']).is_empty() {
        return format!("±{body}");
    }
    if pct < 0.0 {
        format!("−{body}")
    } else {
        format!("+{body}")
    }
}

/// A relative-change interval, e.g. `+1.1% to +5.0%`.
pub(crate) fn percent_interval(lower: f64, upper: f64) -> String {
    if !(lower.is_finite() && upper.is_finite()) {
        return String::new();
    }
    format!("{} to {}", percent_change(lower), percent_change(upper))
}

/// A byte count with a binary unit, e.g. `1.50 GiB`, as the terminal shows it.
pub(crate) fn bytes(n: u64) -> String {
    gpubench_record::units::format_bytes(n)
}

/// A ratio such as a speedup, e.g. `1.32×`.
pub(crate) fn ratio(x: f64) -> String {
    if !x.is_finite() {
        return "—".into();
    }
    format!("{x:.2}×")
}

/// A plain number with up to four significant digits, without trailing noise, e.g.
/// `0.000001` → `1e-6`.
pub(crate) fn number(x: f64) -> String {
    if !x.is_finite() {
        return format!("{x}");
    }
    if x == x.trunc() && x.abs() < 1e15 {
        return format!("{x:.0}");
    }
    let a = x.abs();
    if !(1e-3..1e6).contains(&a) {
        format!("{x:.3e}")
    } else {
        significant(x)
    }
}

/// A duration like [`duration`], or `—` when there is none.
pub(crate) fn format_ns_or_dash(ns: Option<f64>) -> String {
    ns.map_or_else(|| "—".into(), duration)
}

/// `+12.3%`: a relative change in percent with one decimal, never `-0.0%`.
pub(crate) fn percent(x: f64) -> String {
    if !x.is_finite() {
        return if x > 0.0 {
            "+inf%".into()
        } else {
            "n/a".into()
        };
    }
    let r = (x * 1000.0).round() / 10.0 + 0.0;
    format!("{:+.1}%", if r == 0.0 { 0.0 } else { r })
}

/// `s` when `n` is not 1.
pub(crate) fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// `2%`, `0.5%`: a fraction as a percentage, without trailing zeros.
pub(crate) fn plain_percent(x: f64) -> String {
    let s = format!("{:.2}", x * 100.0);
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s}%")
}

/// A relative spread in percent with two significant digits: `1.2%`, `14%`.
pub(crate) fn spread_percent(x: f64) -> String {
    let p = x * 100.0;
    if p >= 10.0 {
        format!("{p:.0}%")
    } else {
        format!("{p:.1}%")
    }
}

/// `16.12 ms [16.05, 16.20]`: the bounds drop the unit when both print in the
/// point's; otherwise every bound keeps its own, `1.001 ms [999.0 µs, 1.010 ms]`, since
/// a bare number beside one with a unit reads as being in that unit.
pub(crate) fn interval(point: f64, lower: f64, upper: f64) -> String {
    let p = format_ns(point);
    let unit = unit_of(&p);
    let (lo, hi) = (format_ns(lower), format_ns(upper));
    match (lo.rsplit_once(' '), hi.rsplit_once(' ')) {
        (Some((l, lu)), Some((h, hu))) if lu == unit && hu == unit => format!("{p} [{l}, {h}]"),
        _ => format!("{p} [{lo}, {hi}]"),
    }
}

/// The unit of a duration [`format_ns`] printed (empty for `n/a`).
fn unit_of(formatted: &str) -> &str {
    formatted.rsplit_once(' ').map_or("", |(_, u)| u)
}

/// `s` cut to `max` characters, with `…` when cut.
pub(crate) fn shorten(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let cut: String = s.chars().take(max - 1).collect();
    format!("{cut}…")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_pick_a_readable_unit() {
        assert_eq!(duration(812.0), "812.0 ns");
        assert_eq!(duration(4_900.0), "4.900 µs");
        assert_eq!(duration(16_120_000.0), "16.12 ms");
        assert_eq!(duration(132_000_000.0), "132.0 ms");
        assert_eq!(duration(2.5e9), "2.500 s");
        assert_eq!(duration(f64::NAN), "—");
        assert_eq!(
            duration_interval(16.12e6, 16.05e6, 16.2e6),
            "16.05 – 16.20 ms"
        );
    }

    fn estimate(point: f64, lower: f64, upper: f64) -> Estimate {
        Estimate {
            point,
            lower,
            upper,
            confidence: 0.95,
        }
    }

    #[test]
    fn a_bound_keeps_its_unit_unless_both_share_the_points() {
        // The busy-CPU demo printed `1.185 ms [79.33 µs, 17.69]`: the upper bound,
        // in the point's unit, lost it beside a lower bound with its own.
        assert_eq!(
            interval(1.185e6, 79.33e3, 17.69e6),
            "1.185 ms [79.33 µs, 17.69 ms]"
        );
        assert_eq!(
            interval(16.12e6, 16.05e6, 16.2e6),
            "16.12 ms [16.05, 16.20]"
        );
        assert_eq!(
            duration_interval(1.001e6, 999.0e3, 1.01e6),
            "999.0 µs – 1.010 ms"
        );
        // Bounds far from the point keep their digits instead of `0.000 ms`.
        assert_eq!(
            duration_interval(1.508e6, 89.6, 25.39e9),
            "89.60 ns – 25.39 s"
        );
    }

    #[test]
    fn an_interval_spanning_more_than_a_factor_of_four_shows_the_processes_range() {
        let medians = [0.912e6, 1.2e6, 3.1e6];
        // The busy-CPU demo's `1.508 ms [89.60 ns, 25.39 s]` (±277%).
        let wild = estimate(1.508e6, 89.6, 25.39e9);
        assert_eq!(
            figure(&wild, &medians),
            "1.508 ms (too noisy for an interval; processes 912.0 µs – 3.100 ms)"
        );
        assert_eq!(
            figure_spread(&wild, &medians),
            "too noisy for an interval; processes 912.0 µs – 3.100 ms"
        );
        assert_eq!(
            figure(&wild, &[1.5e6]),
            "1.508 ms (too noisy for an interval)"
        );
        // Up to a factor of 4 it is an interval: a host-bound ±25% floor, or half to
        // twice the point.
        let host = estimate(8e3, 6.4e3, 10e3);
        assert_eq!(figure(&host, &medians), "8.000 µs [6.400, 10.00]");
        let edge = estimate(2e6, 1e6, 4e6);
        assert!(!too_noisy(edge.lower, edge.upper));
        assert_eq!(figure_spread(&edge, &medians), "1.000 – 4.000 ms");
        assert!(too_noisy(1e6, 4.01e6));
    }

    #[test]
    fn changes_are_signed() {
        assert_eq!(percent_change(0.032), "+3.2%");
        assert_eq!(percent_change(-0.004), "−0.4%");
        assert_eq!(percent_change(0.0), "±0.0%");
        assert_eq!(percent_change(1.5), "+150%");
        assert_eq!(percent_interval(0.011, 0.05), "+1.1% to +5.0%");
    }

    #[test]
    fn sizes_and_numbers() {
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(3 << 29), "1.50 GiB");
        assert_eq!(ratio(1.3219), "1.32×");
        assert_eq!(number(1e-6), "1.000e-6");
        assert_eq!(number(42.0), "42");
        assert_eq!(number(0.25), "0.250");
    }
}
