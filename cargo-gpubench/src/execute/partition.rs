//! Splitting a suite across machines (`--partition`): `count:k/n` deals the selected
//! benchmarks round-robin in their sorted order, `hash:k/n` by a hash of their name,
//! which keeps a benchmark in the same part when others come and go. Both are the
//! same on every machine and in every run, so n jobs of a CI matrix, each with its
//! own k, measure every benchmark exactly once.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::execute::select::Benchmark;

/// How a partition deals benchmarks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PartitionKind {
    /// Round-robin over the sorted selection: parts differ in size by one at most.
    Count,
    /// By a stable hash of `<target>/<id>`: a benchmark stays in its part.
    Hash,
}

/// Part `index` of `total` (1-based), e.g. `hash:2/4`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Partition {
    /// How benchmarks are dealt.
    pub kind: PartitionKind,
    /// This part, 1 to `total`.
    pub index: u32,
    /// How many parts.
    pub total: u32,
}

impl FromStr for Partition {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let usage =
            || format!("`{s}` is not a partition: write count:K/N or hash:K/N with 1 <= K <= N");
        let (kind, part) = s.trim().split_once(':').ok_or_else(usage)?;
        let kind = match kind {
            "count" => PartitionKind::Count,
            "hash" => PartitionKind::Hash,
            _ => return Err(usage()),
        };
        let (k, n) = part.split_once('/').ok_or_else(usage)?;
        let (index, total): (u32, u32) = (
            k.trim().parse().map_err(|_| usage())?,
            n.trim().parse().map_err(|_| usage())?,
        );
        if index == 0 || total == 0 || index > total {
            return Err(usage());
        }
        Ok(Partition { kind, index, total })
    }
}

impl fmt::Display for Partition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            PartitionKind::Count => "count",
            PartitionKind::Hash => "hash",
        };
        write!(f, "{kind}:{}/{}", self.index, self.total)
    }
}

impl Partition {
    /// The benchmarks of `selected` (sorted, as [`crate::execute::select::select`]
    /// returns them) that belong to this part, in the same order.
    pub fn split(&self, selected: &[Benchmark]) -> Vec<Benchmark> {
        let part = u64::from(self.index - 1);
        let total = u64::from(self.total);
        selected
            .iter()
            .enumerate()
            .filter(|(i, b)| {
                let key = match self.kind {
                    PartitionKind::Count => *i as u64,
                    PartitionKind::Hash => fnv1a(b.qualified().as_bytes()),
                };
                key % total == part
            })
            .map(|(_, b)| b.clone())
            .collect()
    }
}

/// 64-bit FNV-1a: fixed by its definition, so the same on every machine, build and
/// release (unlike the standard library's hasher).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::path::PathBuf;

    use super::*;

    fn suite(n: usize) -> Vec<Benchmark> {
        let mut all: Vec<Benchmark> = (0..n)
            .map(|i| Benchmark {
                package: Some("p".into()),
                target: if i % 3 == 0 { "matmul" } else { "launch" }.into(),
                exe: PathBuf::from("/t/bench"),
                id: format!("case/{i}"),
                ignored: false,
            })
            .collect();
        crate::execute::select::sort(&mut all);
        all
    }

    #[test]
    fn partitions_are_disjoint_and_cover_the_suite() {
        let all = suite(23);
        let names: BTreeSet<String> = all.iter().map(Benchmark::qualified).collect();
        for kind in [PartitionKind::Count, PartitionKind::Hash] {
            for total in [1, 2, 3, 5, 8, 30] {
                let mut seen = BTreeSet::new();
                for index in 1..=total {
                    let part = Partition { kind, index, total }.split(&all);
                    for b in part {
                        assert!(
                            seen.insert(b.qualified()),
                            "{kind:?} {total}: {} twice",
                            b.qualified()
                        );
                    }
                }
                assert_eq!(seen, names, "{kind:?} with {total} parts");
            }
        }
        // Round-robin parts differ in size by one at most.
        let sizes: Vec<usize> = (1..=5)
            .map(|index| {
                Partition {
                    kind: PartitionKind::Count,
                    index,
                    total: 5,
                }
                .split(&all)
                .len()
            })
            .collect();
        assert_eq!(sizes, [5, 5, 5, 4, 4]);
    }

    #[test]
    fn a_hash_partition_keeps_a_benchmark_in_its_part_when_others_change() {
        let p = |index| Partition {
            kind: PartitionKind::Hash,
            index,
            total: 4,
        };
        let owner = |all: &[Benchmark], name: &str| {
            (1..=4).find(|&k| p(k).split(all).iter().any(|b| b.qualified() == name))
        };
        let small = suite(10);
        let large = suite(40);
        for b in &small {
            assert_eq!(owner(&small, &b.qualified()), owner(&large, &b.qualified()));
        }
        // Fixed by FNV-1a itself: the same on every machine.
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn partitions_parse_and_print_and_bad_ones_say_how_to_write_them() {
        for text in ["count:1/3", "hash:4/4"] {
            assert_eq!(text.parse::<Partition>().unwrap().to_string(), text);
        }
        for bad in [
            "count:0/3",
            "hash:4/3",
            "count:1/0",
            "slice:1/2",
            "count:1",
            "hash:a/b",
        ] {
            let err = bad.parse::<Partition>().unwrap_err();
            assert!(err.contains("count:K/N or hash:K/N"), "{bad}: {err}");
        }
    }
}
