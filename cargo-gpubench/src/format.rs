//! Numbers and words as people read them, for every output: durations with a fitting
//! unit, intervals in the unit of their point, percentages (signed changes, spreads,
//! settings), byte sizes, ratios, plurals and shortened text. Imports nothing of this
//! crate.

use gpubench_analysis::units::format_ns;

/// A unit of time and how many nanoseconds it holds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TimeUnit {
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
pub fn time_unit(ns: f64) -> TimeUnit {
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
pub fn duration(ns: f64) -> String {
    if !ns.is_finite() {
        return "—".into();
    }
    format_ns(ns)
}

/// An interval in the unit of `point`, e.g. `16.05 – 16.20 ms`.
pub fn duration_interval(point: f64, lower: f64, upper: f64) -> String {
    if !(point.is_finite() && lower.is_finite() && upper.is_finite()) {
        return String::new();
    }
    let unit = time_unit(point);
    format!(
        "{} – {} {}",
        significant(lower / unit.ns),
        significant(upper / unit.ns),
        unit.symbol
    )
}

/// A relative change as a signed percentage, e.g. `+3.2%`, `−0.4%`.
pub fn percent_change(fraction: f64) -> String {
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
pub fn percent_interval(lower: f64, upper: f64) -> String {
    if !(lower.is_finite() && upper.is_finite()) {
        return String::new();
    }
    format!("{} to {}", percent_change(lower), percent_change(upper))
}

/// A byte count with a binary unit, e.g. `1.50 GiB`, as the terminal shows it.
pub fn bytes(n: u64) -> String {
    gpubench_analysis::units::format_bytes(n)
}

/// A ratio such as a speedup, e.g. `1.32×`.
pub fn ratio(x: f64) -> String {
    if !x.is_finite() {
        return "—".into();
    }
    format!("{x:.2}×")
}

/// A plain number with up to four significant digits, without trailing noise, e.g.
/// `0.000001` → `1e-6`.
pub fn number(x: f64) -> String {
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
pub fn format_ns_or_dash(ns: Option<f64>) -> String {
    ns.map_or_else(|| "—".into(), duration)
}

/// `+12.3%`: a relative change in percent with one decimal, never `-0.0%`.
pub fn percent(x: f64) -> String {
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
pub fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// `2%`, `0.5%`: a fraction as a percentage, without trailing zeros.
pub fn plain_percent(x: f64) -> String {
    let s = format!("{:.2}", x * 100.0);
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s}%")
}

/// A relative spread in percent with two significant digits: `1.2%`, `14%`.
pub fn spread_percent(x: f64) -> String {
    let p = x * 100.0;
    if p >= 10.0 {
        format!("{p:.0}%")
    } else {
        format!("{p:.1}%")
    }
}

/// `16.12 ms [16.05, 16.20]`: bounds drop the unit when it is the point's.
pub fn interval(point: f64, lower: f64, upper: f64) -> String {
    let p = format_ns(point);
    let unit = p.rsplit_once(' ').map(|(_, u)| u).unwrap_or("");
    let bound = |x: f64| {
        let b = format_ns(x);
        match b.rsplit_once(' ') {
            Some((num, u)) if u == unit => num.to_string(),
            _ => b,
        }
    };
    format!("{p} [{}, {}]", bound(lower), bound(upper))
}

/// `s` cut to `max` characters, with `…` when cut.
pub fn shorten(s: &str, max: usize) -> String {
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
