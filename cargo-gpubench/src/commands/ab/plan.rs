//! Which benchmarks `ab` measures: the head's and the base's listings paired by
//! `<target>/<id>`, the selection applied to the head's, and the benchmarks only one
//! revision has.

use crate::execute::partition::Partition;
use crate::execute::select::{self, Benchmark, Filter};

/// What `ab` measures and what it names.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Plan {
    /// Benchmarks both revisions have, selected, sorted: `(base, head)`.
    pub pairs: Vec<(Benchmark, Benchmark)>,
    /// Selected benchmarks only the head has: measured alone, new.
    pub new: Vec<Benchmark>,
    /// Benchmarks only the base has that the selection would take: missing evidence
    /// (the head lost them).
    pub gone: Vec<Benchmark>,
    /// Benchmarks of the head's listing the selection left out, by id.
    pub filtered_out: Vec<String>,
    /// Selected benchmarks `--partition` left to the other parts, by id, sorted.
    pub other_parts: Vec<String>,
}

impl Plan {
    /// Pairs `base` and `head` listings under `filter`.
    pub(crate) fn new(base: &[Benchmark], head: &[Benchmark], filter: &Filter) -> Self {
        let named = |b: &Benchmark| b.qualified();
        let in_base = |b: &Benchmark| base.iter().find(|x| named(x) == named(b));
        let mut pairs = Vec::new();
        let mut new = Vec::new();
        let mut filtered_out = Vec::new();
        for h in select::select(head, filter) {
            match in_base(&h) {
                Some(b) => pairs.push((b.clone(), h)),
                None => new.push(h),
            }
        }
        for h in head {
            if !filter.selects(h) {
                filtered_out.push(h.id.clone());
            }
        }
        filtered_out.sort();
        let gone = select::select(base, filter)
            .into_iter()
            .filter(|b| !head.iter().any(|h| named(h) == named(b)))
            .collect();
        Plan {
            pairs,
            new,
            gone,
            filtered_out,
            other_parts: Vec::new(),
        }
    }

    /// The part `partition` of the selected head benchmarks (as a run deals them):
    /// the others are left to the other parts; the benchmarks the head lost are named
    /// by part 1 only, so a merge of the parts names each once.
    pub(crate) fn partitioned(self, partition: Partition) -> Plan {
        let selected: Vec<Benchmark> = self
            .pairs
            .iter()
            .map(|(_, h)| h.clone())
            .chain(self.new.iter().cloned())
            .collect();
        let part: Vec<String> = partition
            .split(&selected)
            .into_iter()
            .map(|b| b.qualified())
            .collect();
        let mine = |h: &Benchmark| part.contains(&h.qualified());
        let mut other_parts: Vec<String> = selected
            .iter()
            .filter(|h| !mine(h))
            .map(|h| h.id.clone())
            .collect();
        other_parts.sort();
        Plan {
            pairs: self.pairs.into_iter().filter(|(_, h)| mine(h)).collect(),
            new: self.new.into_iter().filter(|h| mine(h)).collect(),
            gone: if partition.index == 1 {
                self.gone
            } else {
                Vec::new()
            },
            filtered_out: self.filtered_out,
            other_parts,
        }
    }

    /// Whether nothing is to be measured.
    pub(crate) fn is_empty(&self) -> bool {
        self.pairs.is_empty() && self.new.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::execute::select::Ignored;

    fn bench(target: &str, id: &str) -> Benchmark {
        Benchmark {
            package: Some("p".into()),
            target: target.into(),
            exe: format!("/lib/{target}").into(),
            id: id.into(),
            ignored: false,
        }
    }

    /// A base and a head sharing two benchmarks, each with one of its own, and the
    /// filter that selects everything.
    fn listings() -> ([Benchmark; 3], [Benchmark; 4], Filter) {
        let base = [bench("ops", "add"), bench("ops", "mul"), bench("mm", "f32")];
        let head = [
            bench("ops", "add"),
            bench("ops", "div"),
            bench("mm", "f32"),
            bench("mm", "bf16"),
        ];
        let all = Filter {
            patterns: vec![],
            skip: vec![],
            exact: false,
            ignored: Ignored::Skip,
        };
        (base, head, all)
    }

    #[test]
    fn benchmarks_pair_by_target_and_id_and_the_rest_are_named() {
        let (base, head, all) = listings();
        let plan = Plan::new(&base, &head, &all);
        let names: Vec<String> = plan.pairs.iter().map(|(b, _)| b.qualified()).collect();
        assert_eq!(names, ["mm/f32", "ops/add"]);
        assert_eq!(
            plan.new
                .iter()
                .map(Benchmark::qualified)
                .collect::<Vec<_>>(),
            ["mm/bf16", "ops/div"]
        );
        assert_eq!(
            plan.gone
                .iter()
                .map(Benchmark::qualified)
                .collect::<Vec<_>>(),
            ["ops/mul"]
        );
        assert!(plan.filtered_out.is_empty());

        // A filter narrows all three; what it leaves out of the head is named.
        let ops = Filter {
            patterns: vec!["ops".into()],
            ..all
        };
        let plan = Plan::new(&base, &head, &ops);
        assert_eq!(plan.pairs.len(), 1);
        assert_eq!(plan.new.len(), 1);
        assert_eq!(plan.gone.len(), 1);
        assert_eq!(plan.filtered_out, ["bf16", "f32"]);
        assert!(!plan.is_empty());
    }

    #[test]
    fn the_parts_of_an_ab_measure_each_selected_benchmark_once_and_name_the_gone_once() {
        let (base, head, all) = listings();
        let mut measured = Vec::new();
        let mut gone = Vec::new();
        for k in 1..=3 {
            let p: Partition = format!("count:{k}/3").parse().unwrap();
            let part = Plan::new(&base, &head, &all).partitioned(p);
            let mine: Vec<String> = part
                .pairs
                .iter()
                .map(|(_, h)| h.qualified())
                .chain(part.new.iter().map(Benchmark::qualified))
                .collect();
            assert_eq!(part.other_parts.len(), 4 - mine.len(), "part {k}");
            measured.extend(mine);
            gone.extend(part.gone.iter().map(Benchmark::qualified));
        }
        measured.sort();
        assert_eq!(measured, ["mm/bf16", "mm/f32", "ops/add", "ops/div"]);
        assert_eq!(gone, ["ops/mul"]);
    }
}
