//! Benchmarks registered by `#[gpu_bench]` before `main`, expanded into cases (one
//! per argument of a parameterised benchmark).

use std::collections::BTreeMap;
use std::fmt::Display;

use gpubench_record::id::id_part_problem;

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

/// The capacity search of a `#[gpu_bench(capacity = "unit", args = [..])]` function,
/// submitted beside its [`BenchDef`]: `cargo gpubench capacity` runs `probe(size)`
/// for the sizes it tries, each in a fresh process.
pub struct CapacityDef {
    /// The benchmark name, as in its [`BenchDef`].
    pub name: &'static str,
    /// What the size counts (`batch`, `tokens`).
    pub unit: &'static str,
    /// The case for one size.
    pub probe: fn(u64) -> CaseFn,
}

inventory::collect!(CapacityDef);

/// A capacity benchmark, with the size its search starts from: its first `args`
/// value.
pub struct CapacityBench {
    /// The benchmark name.
    pub name: &'static str,
    /// What the size counts.
    pub unit: &'static str,
    /// The first size the search probes.
    pub start: u64,
    /// `file:line` of the function.
    pub location: String,
    /// Whether it only runs with `--ignored`.
    pub ignore: bool,
    pub(crate) probe: fn(u64) -> CaseFn,
}

impl CapacityBench {
    /// The case of one probe: id `<name>/<size>`.
    pub fn probe_case(&self, size: u64) -> Case {
        let case = (self.probe)(size);
        Case {
            id: format!("{}/{size}", self.name),
            name: self.name.to_string(),
            arg: case.arg,
            ignore: self.ignore,
            location: self.location.clone(),
            run: case.run,
        }
    }
}

/// The registered capacity benchmarks, sorted by name; `Err` names one whose first
/// argument is not a positive whole number.
pub fn capacity_benches() -> Result<Vec<CapacityBench>, String> {
    let mut out = Vec::new();
    for cap in inventory::iter::<CapacityDef>() {
        let def = inventory::iter::<BenchDef>()
            .find(|d| d.name == cap.name)
            .ok_or_else(|| {
                format!(
                    "capacity benchmark `{}` has no #[gpu_bench] entry",
                    cap.name
                )
            })?;
        let first = (def.cases)().into_iter().next().and_then(|c| c.arg);
        let start = first
            .as_deref()
            .and_then(|a| a.parse::<u64>().ok())
            .filter(|&n| n > 0)
            .ok_or_else(|| {
                format!(
                    "capacity benchmark `{}` at {}:{}: its first `args` value {:?} is not a \
                     positive whole number; the search starts from it",
                    cap.name, def.file, def.line, first
                )
            })?;
        out.push(CapacityBench {
            name: cap.name,
            unit: cap.unit,
            start,
            location: format!("{}:{}", def.file, def.line),
            ignore: def.ignore,
            probe: cap.probe,
        });
    }
    out.sort_by_key(|c| c.name);
    Ok(out)
}

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

/// A benchmark name or argument that cannot be part of an id.
#[derive(Debug, thiserror::Error)]
#[error("benchmark `{name}` at {location}: {what} {value:?} {why}")]
pub struct BadId {
    /// The benchmark's name.
    pub name: String,
    /// Where it is.
    pub location: String,
    /// `the name` or `argument 2`.
    pub what: String,
    /// The offending text.
    pub value: String,
    /// What is wrong with it, and the fix.
    pub why: &'static str,
}

/// Why the registered benchmarks cannot be listed or run.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// Two benchmarks share an id.
    #[error(transparent)]
    Duplicate(#[from] DuplicateId),
    /// A name or argument cannot be part of an id.
    #[error(transparent)]
    BadId(#[from] BadId),
}

/// All registered benchmarks, sorted by id.
pub fn cases() -> Result<Vec<Case>, RegistryError> {
    cases_from(inventory::iter::<BenchDef>())
}

fn cases_from<'a>(defs: impl Iterator<Item = &'a BenchDef>) -> Result<Vec<Case>, RegistryError> {
    // Sorted by name, then by argument in declaration order (`f/64` before `f/256`).
    let mut by_id: BTreeMap<String, (String, usize, Case)> = BTreeMap::new();
    for def in defs {
        let location = format!("{}:{}", def.file, def.line);
        let bad = |what: String, value: &str, why| BadId {
            name: def.name.to_string(),
            location: location.clone(),
            what,
            value: value.to_string(),
            why,
        };
        if let Some(why) = id_part_problem(def.name) {
            return Err(bad("the name".into(), def.name, why).into());
        }
        for (order, case) in (def.cases)().into_iter().enumerate() {
            if let Some(arg) = &case.arg {
                if let Some(why) = id_part_problem(arg) {
                    return Err(bad(format!("argument {}", order + 1), arg, why).into());
                }
            }
            let id = match &case.arg {
                Some(arg) => format!("{}/{}", def.name, arg),
                None => def.name.to_string(),
            };
            if let Some((_, _, existing)) = by_id.get(&id) {
                return Err(DuplicateId {
                    id,
                    first: existing.location.clone(),
                    second: location,
                }
                .into());
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

    fn weird_args() -> Vec<CaseFn> {
        vec![
            CaseFn::with_arg("ok".into(), |_| {}),
            CaseFn::with_arg("two\nlines".into(), |_| {}),
        ]
    }
    fn empty_arg() -> Vec<CaseFn> {
        vec![CaseFn::with_arg(String::new(), |_| {})]
    }
    fn slash_arg() -> Vec<CaseFn> {
        vec![CaseFn::with_arg("a/b".into(), |_| {})]
    }

    #[test]
    fn names_and_arguments_that_cannot_be_in_an_id_are_refused_naming_them() {
        let def = |name: &'static str, cases: fn() -> Vec<CaseFn>| BenchDef {
            name,
            file: "w.rs",
            line: 3,
            ignore: false,
            cases,
        };
        for (d, expect) in [
            (
                def("weird", weird_args),
                "argument 2 \"two\\nlines\" contains a control character",
            ),
            (def("weird2", empty_arg), "argument 1 \"\" is empty"),
            (def("weird3", slash_arg), "argument 1 \"a/b\" contains `/`"),
            (
                def("tab\tname", one),
                "the name \"tab\\tname\" contains a control character",
            ),
        ] {
            let err = cases_from(std::iter::once(&d)).err().expect("refused");
            assert!(matches!(err, RegistryError::BadId(_)), "{err}");
            let msg = err.to_string();
            assert!(msg.contains(expect) && msg.contains("w.rs:3"), "{msg}");
        }
        assert!(id_part_problem("bf16 4096").is_none());
    }
}
