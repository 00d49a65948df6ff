//! Human-readable durations, sizes and ratios for terminal and report output.

/// Formats nanoseconds with a unit that keeps 3–4 significant digits: `812 ns`,
/// `12.3 µs`, `1.446 ms`, `2.51 s`; past 100,000 s (a day) in scientific notation,
/// `1.000e299 s`, so a corrupt or absurd figure prints as a number and not as
/// hundreds of digits; a negative one with its sign before the same.
pub fn format_ns(ns: f64) -> String {
    if !ns.is_finite() {
        return "n/a".into();
    }
    if ns < 0.0 {
        return format!("-{}", format_ns(-ns));
    }
    // -0.0 prints as `-0.000`.
    let ns = ns + 0.0;
    if ns >= 99_999.95e9 {
        return format!("{:.3e} s", ns / 1e9);
    }
    // Units and digits are decided on the value as it will print: 999.97 µs shows as
    // `1.000 ms`, and 99.999 µs as `100.0 µs`, not `1000.0 µs` or `100.00 µs`.
    let (value, unit) = if ns < 999.95 {
        (ns, "ns")
    } else if ns < 999.95e3 {
        (ns / 1e3, "µs")
    } else if ns < 999.95e6 {
        (ns / 1e6, "ms")
    } else {
        (ns / 1e9, "s")
    };
    let digits = if value >= 99.95 {
        1
    } else if value >= 9.995 {
        2
    } else {
        3
    };
    format!("{value:.digits$} {unit}")
}

/// Formats a byte count in binary units: `512 B`, `1.50 KiB`, `402.0 MiB`, `3.25 GiB`.
pub fn format_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.2} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_pick_a_readable_unit() {
        assert_eq!(format_ns(812.0), "812.0 ns");
        assert_eq!(format_ns(12_345.0), "12.35 µs");
        assert_eq!(format_ns(1_446_000.0), "1.446 ms");
        assert_eq!(format_ns(2.5e9), "2.500 s");
        assert_eq!(format_ns(f64::NAN), "n/a");
        // Rounding never prints a fifth digit or a unit's worth of the smaller unit.
        assert_eq!(format_ns(99_999.0), "100.0 µs");
        assert_eq!(format_ns(999_970.0), "1.000 ms");
        assert_eq!(format_ns(9.9996), "10.00 ns");
    }

    #[test]
    fn huge_and_negative_durations_print_as_numbers_not_hundreds_of_digits() {
        assert_eq!(format_ns(1e308), "1.000e299 s");
        assert_eq!(format_ns(f64::MAX), "1.798e299 s");
        assert_eq!(format_ns(99_999.9e9), "99999.9 s");
        assert_eq!(format_ns(1.5e14), "1.500e5 s");
        assert_eq!(format_ns(-2.5e6), "-2.500 ms");
        assert_eq!(format_ns(-1e308), "-1.000e299 s");
        assert_eq!(format_ns(-0.0), "0.000 ns");
        assert_eq!(format_ns(5e-324), "0.000 ns");
    }

    #[test]
    fn sizes_use_binary_units() {
        assert_eq!(format_bytes(512), "512 B");
        assert_eq!(format_bytes(1536), "1.50 KiB");
        assert_eq!(format_bytes(3 << 30), "3.00 GiB");
    }
}
