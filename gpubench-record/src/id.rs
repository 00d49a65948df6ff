//! Benchmark ids: `name` or `name/arg`, typed on command lines, matched by filters and
//! used to name files.

/// What is wrong with `part` as the name or argument part of an id, if anything:
/// ids are typed on command lines, matched by filters and name files, so a part is
/// non-empty, holds no `/` (which separates name and argument) and no control
/// character (a newline would make a listing show a benchmark that does not exist).
pub fn id_part_problem(part: &str) -> Option<&'static str> {
    if part.is_empty() {
        Some("is empty: give it a value that says what it is")
    } else if part.contains('/') {
        Some("contains `/`, which separates a benchmark's name from its argument: use another character")
    } else if part.chars().any(char::is_control) {
        Some("contains a control character (a newline, a tab): ids are one line of printable text")
    } else {
        None
    }
}

/// The name and the argument of `id`: `name/arg` split at its first `/`, or the
/// whole id as the name.
pub fn split_id(id: &str) -> (&str, Option<&str>) {
    match id.split_once('/') {
        Some((name, arg)) => (name, Some(arg)),
        None => (id, None),
    }
}

/// Stems a run directory keeps for its own files (`manifest.json`,
/// `comparison.json`): a benchmark with such an id gets the hash too, so its record
/// never overwrites them.
const RESERVED_STEMS: [&str; 2] = ["manifest", "comparison"];

/// A file name for a benchmark id that is safe on every file system: characters
/// outside `[A-Za-z0-9._-]` become `_`, and when anything was replaced, or the name
/// is one a run keeps for its own files, a short hash of the id is appended so `a/b`
/// and `a_b` never share a file and no record overwrites a run's manifest.
pub fn file_stem_for_id(id: &str) -> String {
    let mut changed = false;
    let mut stem: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                changed = true;
                '_'
            }
        })
        .collect();
    if stem.starts_with('.') || stem.is_empty() {
        stem.insert(0, '_');
        changed = true;
    }
    if stem.len() > 100 {
        stem.truncate(100);
        changed = true;
    }
    if RESERVED_STEMS.contains(&stem.to_ascii_lowercase().as_str()) {
        changed = true;
    }
    if changed {
        // FNV-1a: stable across builds and platforms, unlike std's hasher.
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in id.bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        stem.push_str(&format!("-{:08x}", h as u32));
    }
    stem
}

#[cfg(test)]
mod tests {
    use super::{file_stem_for_id, id_part_problem};

    #[test]
    fn a_part_is_one_line_of_text_without_the_separator() {
        assert_eq!(id_part_problem("bf16 4096"), None);
        assert!(id_part_problem("").unwrap().starts_with("is empty"));
        assert!(id_part_problem("a/b").unwrap().contains("separates"));
        assert!(id_part_problem("a\nb")
            .unwrap()
            .contains("control character"));
        assert!(id_part_problem("a\tb")
            .unwrap()
            .contains("control character"));
    }

    #[test]
    fn a_benchmark_named_like_a_runs_own_file_never_takes_its_name() {
        for id in ["manifest", "comparison", "Manifest"] {
            let stem = file_stem_for_id(id);
            assert!(stem.starts_with(id) && stem != id, "{id}: {stem}");
        }
        assert_eq!(file_stem_for_id("manifests"), "manifests");
    }

    #[test]
    fn ids_map_to_distinct_safe_names() {
        assert_eq!(file_stem_for_id("matmul_bf16"), "matmul_bf16");
        let a = file_stem_for_id("matmul/4096");
        let b = file_stem_for_id("matmul_4096");
        assert_ne!(a, b);
        assert!(a.starts_with("matmul_4096-"));
        for id in [
            "../../etc/passwd",
            "..",
            "",
            "<script>alert(1)</script>",
            "a\\b",
        ] {
            let s = file_stem_for_id(id);
            assert!(
                !s.contains('/') && !s.contains('\\') && !s.starts_with('.'),
                "{s}"
            );
            assert!(!s.is_empty());
        }
    }
}
