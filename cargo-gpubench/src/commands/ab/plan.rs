//! Which benchmarks `ab` measures: the head's and the base's listings paired by
//! `<target>/<id>`, the selection applied to the head's, and the benchmarks only one
//! revision has.

use crate::execute::select::{self, Benchmark, Filter};

/// What `ab` measures and what it names.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// Benchmarks both revisions have, selected, sorted: `(base, head)`.
    pub pairs: Vec<(Benchmark, Benchmark)>,
    /// Selected benchmarks only the head has: measured alone, new.
    pub new: Vec<Benchmark>,
    /// Benchmarks only the base has that the selection would take: missing evidence
    /// (the head lost them).
    pub gone: Vec<Benchmark>,
    /// Benchmarks of the head's listing the selection left out, by id.
    pub filtered_out: Vec<String>,
}

impl Plan {
    /// Pairs `base` and `head` listings under `filter`.
    pub fn new(base: &[Benchmark], head: &[Benchmark], filter: &Filter) -> Self {
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
        }
    }

    /// Whether nothing is to be measured.
    pub fn is_empty(&self) -> bool {
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

    #[test]
    fn benchmarks_pair_by_target_and_id_and_the_rest_are_named() {
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
}
