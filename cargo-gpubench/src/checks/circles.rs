//! The check that no crate of the workspace has modules that import each other in a
//! circle, directly (`a` ↔ `b`) or round several (`a` → `b` → `c` → `a`), through
//! `crate::` and `super::` paths in production code.
//!
//! An import is an edge between the two modules that hold its ends under their
//! nearest common parent: `crate::device::torch` importing `crate::cuda_shim` is the
//! edge `device` → `cuda_shim` among the root's modules. A module's use of its own
//! parent's items (`super::Thing`) is how a folder's table of contents serves its
//! files, not a circle.

use std::collections::{BTreeMap, BTreeSet};

use super::sources::{imports, production_code, workspace_sources, Crate, ModulePath};

/// One import between two sibling modules: `(from, to, where it is written)`.
type Edge = (String, String, String);

/// The import edges among the children of each module.
fn edges(krate: &Crate) -> BTreeMap<ModulePath, Vec<Edge>> {
    let mut edges: BTreeMap<ModulePath, Vec<Edge>> = BTreeMap::new();
    for file in krate.production() {
        for import in imports(&production_code(&file.text), &file.module) {
            let target = krate.resolve(&import.path);
            let common = file
                .module
                .iter()
                .zip(&target)
                .take_while(|(a, b)| a == b)
                .count();
            // An import of the module itself, of an ancestor or of a descendant.
            let (Some(from), Some(to)) = (file.module.get(common), target.get(common)) else {
                continue;
            };
            let at = format!(
                "{}:{} imports {}",
                file.relative.display(),
                import.line,
                target.join("::")
            );
            edges
                .entry(file.module[..common].to_vec())
                .or_default()
                .push((from.clone(), to.clone(), at));
        }
    }
    edges
}

/// The modules reachable from `start` along `graph`.
fn reachable<'a>(
    graph: &'a BTreeMap<&'a str, BTreeSet<&'a str>>,
    start: &'a str,
) -> BTreeSet<&'a str> {
    let mut seen = BTreeSet::new();
    let mut stack = vec![start];
    while let Some(m) = stack.pop() {
        for &next in graph.get(m).into_iter().flatten() {
            if seen.insert(next) {
                stack.push(next);
            }
        }
    }
    seen
}

/// Each circle of `krate`: `parent: a, b, c`, then the imports that close it.
fn circles(krate: &Crate) -> Vec<(String, Vec<String>)> {
    let mut found = Vec::new();
    for (parent, edges) in edges(krate) {
        let mut graph: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
        for (from, to, _) in &edges {
            graph.entry(from).or_default().insert(to);
        }
        let reach: BTreeMap<&str, BTreeSet<&str>> =
            graph.keys().map(|&m| (m, reachable(&graph, m))).collect();
        let mut placed = BTreeSet::new();
        for (&m, from_m) in &reach {
            if placed.contains(m) || !from_m.contains(m) {
                continue;
            }
            // The modules on a circle through `m`: each reaches `m` and `m` it.
            let members: BTreeSet<&str> = from_m
                .iter()
                .copied()
                .filter(|&other| reach.get(other).is_some_and(|r| r.contains(m)))
                .collect();
            placed.extend(members.iter().copied());
            let parent = if parent.is_empty() {
                "(root)".to_string()
            } else {
                parent.join("::")
            };
            let names: Vec<&str> = members.iter().copied().collect();
            let mut closing: Vec<String> = edges
                .iter()
                .filter(|(a, b, _)| members.contains(a.as_str()) && members.contains(b.as_str()))
                .map(|(_, _, at)| at.clone())
                .collect();
            // One line of a group (`use crate::{a::X, a::Y}`) once.
            closing.dedup();
            found.push((format!("{parent}: {}", names.join(", ")), closing));
        }
    }
    found
}

#[test]
fn no_crate_has_a_module_circle() {
    let mut found = Vec::new();
    for (name, src) in workspace_sources() {
        for (circle, closing) in circles(&Crate::read(&src)) {
            found.push(format!("{name}: {circle}\n    {}", closing.join("\n    ")));
        }
    }
    assert!(
        found.is_empty(),
        "modules that import each other in a circle (move what both need to a \
         module below them):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_check_finds_a_planted_circle_and_leaves_a_tree_alone() {
    let krate = Crate::of(&[
        ("lib.rs", "mod a;\nmod b;\nmod c;\nmod d;\n"),
        // a -> b -> c -> a, through a re-export and `super::`.
        ("a.rs", "use crate::b::B;\n"),
        ("b/mod.rs", "mod inner;\npub use inner::B;\n"),
        ("b/inner.rs", "use super::super::c::C;\nuse super::Other;\n"),
        ("c.rs", "pub fn c() { crate::a::f() }\n"),
        // d uses a, and two of its files each other.
        ("d/mod.rs", "mod x;\nmod y;\nuse crate::a;\n"),
        ("d/x.rs", "use super::y::Y;\nuse super::Z;\n"),
        ("d/y.rs", "use crate::d::x::X;\n"),
    ]);
    let found = circles(&krate);
    let names: Vec<&str> = found.iter().map(|(c, _)| c.as_str()).collect();
    assert_eq!(names, ["(root): a, b, c", "d: x, y"], "{found:?}");
    assert_eq!(
        found[0].1,
        [
            "a.rs:1 imports b",
            "b/inner.rs:1 imports c",
            "c.rs:1 imports a"
        ]
    );

    let tree = Crate::of(&[
        ("lib.rs", "mod a;\nmod b;\n#[cfg(test)]\nmod tests;\n"),
        (
            "a.rs",
            "use crate::b;\n#[cfg(test)]\nmod tests {\n    use crate::b;\n}\n",
        ),
        (
            "b.rs",
            "// use crate::a;\n#[cfg(test)]\nmod tests {\n    use crate::a;\n}\n",
        ),
        ("tests.rs", "use crate::a;\nuse crate::b;\n"),
    ]);
    assert!(circles(&tree).is_empty(), "{:?}", circles(&tree));
}
