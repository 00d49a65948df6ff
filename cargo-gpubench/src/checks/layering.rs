//! The check that every module of a crate imports only modules of a lower layer, as
//! the table in the crate's documentation (`lib.rs`) gives them: this crate's and
//! gpubench-core's. Test modules may reach any layer.

use std::collections::BTreeMap;
use std::path::Path;

use super::sources::{imports, production_code, workspace_root, Crate};

/// The layer of each top-level module, read from the table in `lib.rs`'s docs
/// (`//! | 3 | [`execute`] | ... |`, or `` `execute` `` for a private module).
fn layers(lib: &str) -> BTreeMap<String, u32> {
    lib.lines()
        .filter_map(|l| {
            let cells: Vec<&str> = l.strip_prefix("//! |")?.split('|').map(str::trim).collect();
            let layer = cells.first()?.parse().ok()?;
            let module = cells.get(1)?;
            let module = module
                .strip_prefix('[')
                .and_then(|m| m.strip_suffix(']'))
                .unwrap_or(module);
            let module = module.strip_prefix('`')?.strip_suffix('`')?;
            Some((module.to_string(), layer))
        })
        .collect()
}

/// The modules of `commands` its subcommands share: what a command that stores a run
/// says once it is stored, and what a command that runs benchmarks does before it
/// lists them.
const SHARED: [&str; 2] = ["present", "prepare"];

/// The imports of `krate`'s production code against `layers`: one that points to a
/// module of its own layer or above, and, inside `commands`, one subcommand's of
/// another (what two share lives in [`SHARED`]).
fn violations(krate: &Crate, layers: &BTreeMap<String, u32>) -> Vec<String> {
    let mut bad = Vec::new();
    for file in krate.production() {
        let Some(top) = file.module.first() else {
            continue;
        };
        let Some(&own) = layers.get(top) else {
            continue;
        };
        let sub = file.module.get(1);
        for import in imports(&production_code(&file.text), &file.module) {
            let target = krate.resolve(&import.path);
            let Some(module) = target.first() else {
                continue;
            };
            let Some(&theirs) = layers.get(module) else {
                continue;
            };
            let at = format!("{}:{}", file.relative.display(), import.line);
            if module != top && theirs >= own {
                bad.push(format!(
                    "{at}: `{top}` (layer {own}) imports `crate::{module}` (layer {theirs})"
                ));
            }
            if module == "commands" && top == "commands" {
                if let (Some(sub), Some(inner)) = (sub, import.path.get(1)) {
                    if sub != inner && !SHARED.contains(&inner.as_str()) {
                        bad.push(format!(
                            "{at}: subcommand `{sub}` imports subcommand `{inner}`"
                        ));
                    }
                }
            }
        }
    }
    bad
}

/// Checks the crate at `src` against its `lib.rs`'s table, which names at least
/// `expected`.
fn check(src: &Path, expected: &[&str]) {
    let krate = Crate::read(src);
    let layers = layers(&std::fs::read_to_string(src.join("lib.rs")).unwrap());
    for module in expected {
        assert!(
            layers.contains_key(*module),
            "{}'s table lacks {module}",
            src.join("lib.rs").display()
        );
    }
    // Every top-level module of src/ has a layer, save the tests'.
    for file in krate.production() {
        if let Some(top) = file.module.first() {
            assert!(
                layers.contains_key(top),
                "{}'s table has no layer for `{top}`",
                src.join("lib.rs").display()
            );
        }
    }
    let bad = violations(&krate, &layers);
    assert!(
        bad.is_empty(),
        "imports against the layers of {}:\n{}",
        src.display(),
        bad.join("\n")
    );
}

#[test]
fn no_module_imports_one_of_its_own_layer_or_above() {
    check(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &[
            "commands", "cli", "output", "store", "execute", "build", "format",
        ],
    );
}

#[test]
fn no_module_of_gpubench_core_imports_one_of_its_own_layer_or_above() {
    check(
        &workspace_root().join("gpubench-core/src"),
        &["harness", "engine", "device", "paired", "bencher"],
    );
}

#[test]
fn the_check_finds_an_import_upwards_and_one_between_subcommands() {
    let krate = Crate::of(&[
        (
            "lib.rs",
            "mod commands;\nmod output;\nmod store;\n#[cfg(test)]\nmod tests;\n",
        ),
        (
            "store/mod.rs",
            "use crate::output::json::X; // crate::cli in a comment is fine\n",
        ),
        ("commands/archive.rs", "use crate::commands::run::x;\n"),
        (
            "commands/run/mod.rs",
            "use crate::commands::present; use crate::store::X;\n",
        ),
        (
            "output/mod.rs",
            "#[cfg(test)]\nmod tests {\n    use crate::commands::run;\n}\n",
        ),
        ("tests.rs", "use crate::commands::run;\n"),
    ]);
    let layers = layers(
        "//! | 7 | [`commands`] | x |\n//! | 6 | [`output`] | x |\n//! | 1 | `store` | x |\n",
    );
    let bad = violations(&krate, &layers);
    assert_eq!(bad.len(), 2, "{bad:?}");
    assert!(
        bad[0].contains("subcommand `archive` imports subcommand `run`"),
        "{bad:?}"
    );
    assert!(
        bad[1].starts_with("store/mod.rs:1: `store` (layer 1) imports `crate::output`"),
        "{bad:?}"
    );
}
