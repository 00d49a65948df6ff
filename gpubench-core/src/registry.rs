//! Benchmarks registered by `#[gpu_bench]` before `main`, expanded into cases (one
//! per argument of a parameterised benchmark).

use std::collections::BTreeMap;
use std::fmt::Display;

use crate::Bencher;

/// One `#[gpu_bench]` function, submitted to the registry by the macro.
pub struct BenchDef {
    /// The benchmark name (the function name, or `name = "..."`).
    pub name: &'static str,
    /// Source file of the function.
    pub file: &'static str,
    /// Line of the function.
    pub line: u32,
    /// Whether it only runs with `--ignored`.
    pub ignore: bool,
    /// Builds the cases: one without an argument, or one per argument.
    pub cases: fn() -> Vec<CaseFn>,
}

inventory::collect!(BenchDef);

/// One runnable case of a [`BenchDef`].
pub struct CaseFn {
    /// The argument as shown in the id, for parameterised benchmarks.
    pub arg: Option<String>,
    /// Runs the benchmark body.
    pub run: Box<dyn Fn(&mut Bencher)>,
}

impl CaseFn {
    /// A case without an argument.
    pub fn plain(run: impl Fn(&mut Bencher) + 'static) -> Self {
        CaseFn {
            arg: None,
            run: Box::new(run),
        }
    }

    /// A case for one argument.
    pub fn with_arg(arg: String, run: impl Fn(&mut Bencher) + 'static) -> Self {
        CaseFn {
            arg: Some(arg),
            run: Box::new(run),
        }
    }
}

/// How an argument appears in a benchmark id (`f/256`).
pub fn arg_label<T: Display>(arg: &T) -> String {
    arg.to_string()
}

/// A benchmark ready to list or run.
pub struct Case {
    /// `name` or `name/arg`.
    pub id: String,
    /// The benchmark name.
    pub name: String,
    /// The argument, if parameterised.
    pub arg: Option<String>,
    /// Only runs with `--ignored`.
    pub ignore: bool,
    /// `file:line` of the function.
    pub location: String,
    /// Runs the benchmark body.
    pub run: Box<dyn Fn(&mut Bencher)>,
}

/// Two benchmarks with the same id.
#[derive(Debug, thiserror::Error)]
#[error("duplicate benchmark id `{id}` at {first} and {second}: give one of them `#[gpu_bench(name = \"...\")]`")]
pub struct DuplicateId {
    /// The id.
    pub id: String,
    /// Where the first one is.
    pub first: String,
    /// Where the second one is.
    pub second: String,
}

/// All registered benchmarks, sorted by id.
pub fn cases() -> Result<Vec<Case>, DuplicateId> {
    cases_from(inventory::iter::<BenchDef>())
}

fn cases_from<'a>(defs: impl Iterator<Item = &'a BenchDef>) -> Result<Vec<Case>, DuplicateId> {
    // Sorted by name, then by argument in declaration order (`f/64` before `f/256`).
    let mut by_id: BTreeMap<String, (String, usize, Case)> = BTreeMap::new();
    for def in defs {
        let location = format!("{}:{}", def.file, def.line);
        for (order, case) in (def.cases)().into_iter().enumerate() {
            let id = match &case.arg {
                Some(arg) => format!("{}/{}", def.name, arg),
                None => def.name.to_string(),
            };
            if let Some((_, _, existing)) = by_id.get(&id) {
                return Err(DuplicateId {
                    id,
                    first: existing.location.clone(),
                    second: location,
                });
            }
            let case = Case {
                id,
                name: def.name.to_string(),
                arg: case.arg,
                ignore: def.ignore,
                location: location.clone(),
                run: case.run,
            };
            by_id.insert(case.id.clone(), (def.name.to_string(), order, case));
        }
    }
    let mut cases: Vec<(String, usize, Case)> = by_id.into_values().collect();
    cases.sort_by(|a, b| (&a.0, a.1, &a.2.id).cmp(&(&b.0, b.1, &b.2.id)));
    Ok(cases.into_iter().map(|(_, _, c)| c).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two_args() -> Vec<CaseFn> {
        vec![
            CaseFn::with_arg("64".into(), |_| {}),
            CaseFn::with_arg("256".into(), |_| {}),
        ]
    }
    fn one() -> Vec<CaseFn> {
        vec![CaseFn::plain(|_| {})]
    }

    #[test]
    fn parameterised_benchmarks_get_one_id_per_argument() {
        let defs = [
            BenchDef {
                name: "f",
                file: "a.rs",
                line: 1,
                ignore: false,
                cases: two_args,
            },
            BenchDef {
                name: "g",
                file: "a.rs",
                line: 9,
                ignore: true,
                cases: one,
            },
        ];
        let cases = cases_from(defs.iter()).unwrap();
        let ids: Vec<&str> = cases.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["f/64", "f/256", "g"]);
        assert!(cases[2].ignore);
    }

    #[test]
    fn duplicate_ids_name_both_places_and_the_fix() {
        let defs = [
            BenchDef {
                name: "f",
                file: "a.rs",
                line: 1,
                ignore: false,
                cases: one,
            },
            BenchDef {
                name: "f",
                file: "b.rs",
                line: 7,
                ignore: false,
                cases: one,
            },
        ];
        let err = cases_from(defs.iter())
            .err()
            .expect("duplicate must be refused");
        let msg = err.to_string();
        assert!(
            msg.contains("a.rs:1") && msg.contains("b.rs:7") && msg.contains("name ="),
            "{msg}"
        );
    }
}
