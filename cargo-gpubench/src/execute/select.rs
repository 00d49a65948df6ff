//! Which listed benchmarks run: the filters, `--skip`, `--exact`, and what happens to
//! the ones marked ignored.

use std::cmp::Ordering;
use std::path::PathBuf;

use gpubench_analysis::BenchmarkSummary;
use thiserror::Error;

use crate::store::manifest::ManifestBenchmark;
use crate::store::references::SummaryEntry;

/// Errors selecting benchmarks.
#[derive(Debug, Error)]
pub(crate) enum SelectError {
    /// Two bench targets define the same id; records are keyed by id.
    #[error("benchmark id `{id}` is defined in bench targets `{first}` and `{second}`: records and baselines are keyed by id, so ids must be unique; select one target with --bench or -p, or rename one")]
    DuplicateId {
        /// The id.
        id: String,
        /// One target.
        first: String,
        /// The other.
        second: String,
    },
    /// Nothing matched.
    #[error("no benchmark to run: {why}")]
    NothingSelected {
        /// What was asked and what there is.
        why: String,
    },
}

/// A benchmark of a bench executable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Benchmark {
    /// The package of its bench target, when built from a workspace.
    pub package: Option<String>,
    /// Its bench target.
    pub target: String,
    /// The executable that runs it.
    pub exe: PathBuf,
    /// Its id.
    pub id: String,
    /// Whether it is marked ignored.
    pub ignored: bool,
}

impl Benchmark {
    /// `<target>/<id>`, the name `--list` prints.
    pub fn qualified(&self) -> String {
        format!("{}/{}", self.target, self.id)
    }

    /// How a run's summary lists it: as the run's manifest left it (`entry`), with
    /// the summary of its record when it has one.
    pub(crate) fn summary_entry(
        &self,
        entry: &ManifestBenchmark,
        summary: Option<BenchmarkSummary>,
    ) -> SummaryEntry {
        SummaryEntry {
            name: self.qualified(),
            target: self.target.clone(),
            id: self.id.clone(),
            status: entry.status,
            record: entry.record.clone(),
            summary,
            comparison: None,
        }
    }
}

/// What to do with benchmarks marked ignored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ignored {
    /// Skip them (the default).
    Skip,
    /// Run only them (`--ignored`).
    Only,
    /// Run them too (`--include-ignored`).
    Include,
}

/// A selection of benchmarks.
#[derive(Debug, Clone)]
pub struct Filter {
    /// Substrings (or, with `exact`, whole names); empty selects everything.
    pub patterns: Vec<String>,
    /// Names left out (`--skip`), matched as `patterns` are; they win over them.
    pub skip: Vec<String>,
    /// Match whole names.
    pub exact: bool,
    /// Ignored benchmarks.
    pub ignored: Ignored,
}

impl Filter {
    /// Whether `b`'s name matches a pattern and no `--skip`, ignoring whether it is
    /// marked ignored. A pattern matches the id or `<target>/<id>`.
    pub fn matches_name(&self, b: &Benchmark) -> bool {
        let qualified = b.qualified();
        let hit = |p: &String| {
            if self.exact {
                b.id == *p || qualified == *p
            } else {
                qualified.contains(p.as_str())
            }
        };
        (self.patterns.is_empty() || self.patterns.iter().any(hit)) && !self.skip.iter().any(hit)
    }

    /// Whether `b` runs.
    pub fn selects(&self, b: &Benchmark) -> bool {
        let ignored_ok = match self.ignored {
            Ignored::Skip => !b.ignored,
            Ignored::Only => b.ignored,
            Ignored::Include => true,
        };
        ignored_ok && self.matches_name(b)
    }
}

/// The benchmarks `filter` selects, in [`natural_cmp`] order of `<target>/<id>`.
pub(crate) fn select(all: &[Benchmark], filter: &Filter) -> Vec<Benchmark> {
    let mut chosen: Vec<Benchmark> = all.iter().filter(|b| filter.selects(b)).cloned().collect();
    sort(&mut chosen);
    chosen
}

/// Sorts benchmarks by `<target>/<id>` in [`natural_cmp`] order.
pub(crate) fn sort(benchmarks: &mut [Benchmark]) {
    benchmarks.sort_by(|a, b| natural_cmp(&a.qualified(), &b.qualified()));
}

/// Orders names so that runs of digits compare as numbers: `mlp/256` before
/// `mlp/1024` (a sweep reads in the order of its sizes), otherwise byte by byte.
pub(crate) fn natural_cmp(a: &str, b: &str) -> Ordering {
    let (mut a, mut b) = (a.as_bytes(), b.as_bytes());
    loop {
        match (a.first(), b.first()) {
            (None, None) => return Ordering::Equal,
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(x), Some(y)) if x.is_ascii_digit() && y.is_ascii_digit() => {
                let (na, ra) = split_digits(a);
                let (nb, rb) = split_digits(b);
                // Compare by value: drop leading zeros, then length, then digits.
                let (va, vb) = (trim_zeros(na), trim_zeros(nb));
                let by_value = va.len().cmp(&vb.len()).then_with(|| va.cmp(vb));
                match by_value.then_with(|| na.len().cmp(&nb.len())) {
                    Ordering::Equal => (a, b) = (ra, rb),
                    other => return other,
                }
            }
            (Some(x), Some(y)) => match x.cmp(y) {
                Ordering::Equal => (a, b) = (&a[1..], &b[1..]),
                other => return other,
            },
        }
    }
}

fn split_digits(s: &[u8]) -> (&[u8], &[u8]) {
    let n = s.iter().take_while(|c| c.is_ascii_digit()).count();
    s.split_at(n)
}

fn trim_zeros(s: &[u8]) -> &[u8] {
    let n = s.iter().take_while(|c| **c == b'0').count();
    &s[n..]
}

/// Refuses two benchmarks of different targets that share an id.
pub(crate) fn check_unique_ids(benchmarks: &[Benchmark]) -> Result<(), SelectError> {
    let mut by_id: Vec<&Benchmark> = benchmarks.iter().collect();
    by_id.sort_by(|a, b| a.id.cmp(&b.id).then(a.target.cmp(&b.target)));
    for pair in by_id.windows(2) {
        if pair[0].id == pair[1].id {
            return Err(SelectError::DuplicateId {
                id: pair[0].id.clone(),
                first: pair[0].target.clone(),
                second: pair[1].target.clone(),
            });
        }
    }
    Ok(())
}

/// Why nothing was selected, in words that suggest the fix.
pub(crate) fn explain_empty(all: &[Benchmark], filter: &Filter) -> SelectError {
    let named = all.iter().filter(|b| filter.matches_name(b)).count();
    let ignored = all
        .iter()
        .filter(|b| filter.matches_name(b) && b.ignored)
        .count();
    let unskipped = Filter {
        skip: Vec::new(),
        ..filter.clone()
    };
    let skipped = all
        .iter()
        .filter(|b| unskipped.matches_name(b) && !filter.matches_name(b))
        .count();
    let why = if all.is_empty() {
        "the bench targets list no benchmarks".to_string()
    } else if named == 0 && skipped > 0 {
        format!(
            "--skip {} left out all {skipped} benchmark(s) the filter matched (see --list)",
            filter
                .skip
                .iter()
                .map(|p| format!("`{p}`"))
                .collect::<Vec<_>>()
                .join(", --skip ")
        )
    } else if named == 0 {
        let suggestions: Vec<(&String, String)> = filter
            .patterns
            .iter()
            .filter_map(|p| closest_name(p, all, filter.exact).map(|c| (p, c)))
            .collect();
        let hint = match suggestions.as_slice() {
            [] => String::new(),
            [(_, c)] if filter.patterns.len() == 1 => format!("; did you mean `{c}`?"),
            many => format!(
                "; did you mean {}?",
                many.iter()
                    .map(|(p, c)| format!("`{c}` (for `{p}`)"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        format!(
            "no benchmark matches {} {} ({} listed; see --list){hint}",
            if filter.exact {
                "exactly"
            } else {
                "the filter"
            },
            filter
                .patterns
                .iter()
                .map(|p| format!("`{p}`"))
                .collect::<Vec<_>>()
                .join(", "),
            all.len()
        )
    } else if filter.ignored == Ignored::Only {
        "none of the matching benchmarks is marked ignored".to_string()
    } else {
        format!("the {ignored} matching benchmark(s) are marked ignored; pass --include-ignored to run them")
    };
    SelectError::NothingSelected { why }
}

/// The benchmark name closest to `pattern` that a filter could mean, when one is
/// within a typo of it (an edit per three characters, at least one): with `exact`
/// whole ids and `<target>/<id>` names, else also their leading parts (`matmul` of
/// `matmul/4096`), which a substring filter selects with.
fn closest_name(pattern: &str, all: &[Benchmark], exact: bool) -> Option<String> {
    let mut names = std::collections::BTreeSet::new();
    for b in all {
        names.insert(b.qualified());
        names.insert(b.id.clone());
        if !exact {
            for (i, _) in b.id.match_indices('/') {
                names.insert(b.id[..i].to_string());
            }
        }
    }
    let most = (pattern.chars().count() / 3).max(1);
    names
        .into_iter()
        .map(|n| (strsim::damerau_levenshtein(pattern, &n), n))
        .filter(|(d, _)| *d <= most)
        .min_by_key(|(d, _)| *d)
        .map(|(_, n)| n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(target: &str, id: &str, ignored: bool) -> Benchmark {
        Benchmark {
            package: None,
            target: target.into(),
            exe: format!("/bin/{target}").into(),
            id: id.into(),
            ignored,
        }
    }

    fn all() -> Vec<Benchmark> {
        vec![
            b("suite", "matmul/4096", false),
            b("suite", "matmul/1024", false),
            b("conv", "conv2d", false),
            b("suite", "huge", true),
        ]
    }

    fn filter(patterns: &[&str], exact: bool, ignored: Ignored) -> Filter {
        Filter {
            patterns: patterns.iter().map(|s| s.to_string()).collect(),
            skip: Vec::new(),
            exact,
            ignored,
        }
    }

    fn names(v: Vec<Benchmark>) -> Vec<String> {
        v.iter().map(Benchmark::qualified).collect()
    }

    #[test]
    fn default_runs_everything_but_ignored_sorted() {
        let got = names(select(&all(), &filter(&[], false, Ignored::Skip)));
        assert_eq!(
            got,
            ["conv/conv2d", "suite/matmul/1024", "suite/matmul/4096"]
        );
    }

    #[test]
    fn substring_and_exact_filters() {
        let got = names(select(&all(), &filter(&["matmul"], false, Ignored::Skip)));
        assert_eq!(got, ["suite/matmul/1024", "suite/matmul/4096"]);
        let got = names(select(
            &all(),
            &filter(&["matmul/1024"], true, Ignored::Skip),
        ));
        assert_eq!(got, ["suite/matmul/1024"]);
        let got = names(select(&all(), &filter(&["matmul"], true, Ignored::Skip)));
        assert!(got.is_empty());
        // The target name takes part in matching.
        let got = names(select(
            &all(),
            &filter(&["conv/conv2d"], true, Ignored::Skip),
        ));
        assert_eq!(got, ["conv/conv2d"]);
    }

    #[test]
    fn skip_leaves_out_what_it_matches_by_substring_or_exactly() {
        let skip = |patterns: &[&str], skip: &[&str], exact: bool| {
            let f = Filter {
                skip: skip.iter().map(|s| s.to_string()).collect(),
                ..filter(patterns, exact, Ignored::Skip)
            };
            names(select(&all(), &f))
        };
        assert_eq!(
            skip(&[], &["4096"], false),
            ["conv/conv2d", "suite/matmul/1024"]
        );
        // Repeated, and against `<target>/<id>` too.
        assert_eq!(skip(&[], &["suite/", "conv2"], false), Vec::<String>::new());
        // It wins over a filter that matches.
        assert_eq!(skip(&["matmul"], &["1024"], false), ["suite/matmul/4096"]);
        // With --exact only a whole id or `<target>/<id>` is left out.
        assert_eq!(skip(&[], &["matmul"], true).len(), 3);
        assert_eq!(
            skip(&[], &["matmul/1024", "conv/conv2d"], true),
            ["suite/matmul/4096"]
        );
        let f = Filter {
            skip: vec!["matmul".into()],
            ..filter(&["matmul"], false, Ignored::Skip)
        };
        let err = explain_empty(&all(), &f).to_string();
        assert!(err.contains("--skip `matmul` left out all 2"), "{err}");
    }

    #[test]
    fn ignored_benchmarks_run_only_when_asked() {
        let got = names(select(&all(), &filter(&[], false, Ignored::Only)));
        assert_eq!(got, ["suite/huge"]);
        let got = names(select(&all(), &filter(&[], false, Ignored::Include)));
        assert_eq!(got.len(), 4);
        let err = explain_empty(&all(), &filter(&["huge"], false, Ignored::Skip));
        assert!(err.to_string().contains("--include-ignored"), "{err}");
        let err = explain_empty(&all(), &filter(&["nope"], false, Ignored::Skip));
        assert!(err.to_string().contains("`nope`"), "{err}");
    }

    #[test]
    fn a_filter_one_typo_from_a_name_suggests_it() {
        let err = |patterns: &[&str], exact: bool| {
            explain_empty(&all(), &filter(patterns, exact, Ignored::Skip)).to_string()
        };
        let e = err(&["matmlu"], false);
        assert!(
            e.ends_with("(4 listed; see --list); did you mean `matmul`?"),
            "{e}"
        );
        // --exact wants a whole id.
        let e = err(&["matmul/409"], true);
        assert!(e.ends_with("did you mean `matmul/4096`?"), "{e}");
        let e = err(&["conv/con2d"], true);
        assert!(e.ends_with("did you mean `conv/conv2d`?"), "{e}");
        // Several filters: each suggestion says which it is for.
        let e = err(&["matmlu", "cnv2d"], false);
        assert!(
            e.ends_with("did you mean `matmul` (for `matmlu`), `conv2d` (for `cnv2d`)?"),
            "{e}"
        );
        // Nothing close: no guess.
        let e = err(&["attention"], false);
        assert!(!e.contains("did you mean"), "{e}");
    }

    #[test]
    fn sweeps_sort_by_size() {
        let mut sorted = vec![
            "mlp/4096",
            "mlp/256",
            "mlp/16384",
            "conv",
            "mlp/1024",
            "mlp/0256",
            "a10b",
            "a9c",
        ];
        sorted.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(
            sorted,
            [
                "a9c",
                "a10b",
                "conv",
                "mlp/256",
                "mlp/0256",
                "mlp/1024",
                "mlp/4096",
                "mlp/16384"
            ]
        );
        let sweep = [b("s", "mlp/4096", false), b("s", "mlp/256", false)];
        let got = names(select(&sweep, &filter(&[], false, Ignored::Skip)));
        assert_eq!(got, ["s/mlp/256", "s/mlp/4096"]);
    }

    #[test]
    fn shared_ids_across_targets_are_refused() {
        let mut v = all();
        v.push(b("other", "conv2d", false));
        let err = check_unique_ids(&v).unwrap_err().to_string();
        assert!(err.contains("`conv2d`") && err.contains("`conv`") && err.contains("`other`"));
        assert!(check_unique_ids(&all()).is_ok());
    }
}
