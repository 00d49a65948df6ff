//! The check that every module of this crate imports only modules of a lower layer,
//! as the table in the crate's documentation (`lib.rs`) gives them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The layer of each top-level module, read from the table in `lib.rs`'s docs
/// (`//! | 3 | [`execute`] | ... |`).
fn layers(lib: &str) -> BTreeMap<String, u32> {
    lib.lines()
        .filter_map(|l| {
            let cells: Vec<&str> = l.strip_prefix("//! |")?.split('|').map(str::trim).collect();
            let layer = cells.first()?.parse().ok()?;
            let module = cells.get(1)?.strip_prefix("[`")?.strip_suffix("`]")?;
            Some((module.to_string(), layer))
        })
        .collect()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level module a file of `src/` belongs to, and its subcommand when it is in
/// `commands/`.
fn owner(relative: &Path) -> (String, Option<String>) {
    let mut parts = relative.iter().map(|p| p.to_string_lossy().into_owned());
    let first = parts.next().unwrap();
    let top = first.trim_end_matches(".rs").to_string();
    let sub = parts.next().map(|p| p.trim_end_matches(".rs").to_string());
    (top, sub.filter(|s| s != "mod"))
}

/// Every `crate::a::b` path in `source` outside comments: `(line, a, b)`.
fn crate_paths(source: &str) -> Vec<(usize, String, Option<String>)> {
    let mut found = Vec::new();
    for (n, line) in source.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        let mut rest = code;
        while let Some(at) = rest.find("crate::") {
            let after = &rest[at + "crate::".len()..];
            let ident = |s: &str| {
                s.chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect::<String>()
            };
            let first = ident(after);
            let second = after[first.len()..]
                .strip_prefix("::")
                .map(ident)
                .filter(|s| !s.is_empty());
            found.push((n + 1, first, second));
            rest = after;
        }
    }
    found
}

/// What `violations` reports for the sources of `src` against `layers`.
fn violations(src: &Path, layers: &BTreeMap<String, u32>) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files.sort();
    let mut bad = Vec::new();
    for file in files {
        let relative = file.strip_prefix(src).unwrap();
        let (top, sub) = owner(relative);
        let Some(&own) = layers.get(&top) else {
            continue;
        };
        let source = std::fs::read_to_string(&file).unwrap();
        for (line, module, inner) in crate_paths(&source) {
            let Some(&theirs) = layers.get(&module) else {
                continue;
            };
            let at = format!("{}:{line}", relative.display());
            if module != top && theirs >= own {
                bad.push(format!(
                    "{at}: `{top}` (layer {own}) imports `crate::{module}` (layer {theirs})"
                ));
            }
            if module == "commands" && top == "commands" {
                if let (Some(sub), Some(inner)) = (&sub, &inner) {
                    if sub != inner && inner != "present" {
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

#[test]
fn no_module_imports_one_of_its_own_layer_or_above() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let layers = layers(&std::fs::read_to_string(src.join("lib.rs")).unwrap());
    for module in [
        "commands", "cli", "output", "store", "execute", "build", "format",
    ] {
        assert!(layers.contains_key(module), "lib.rs's table lacks {module}");
    }
    // Every top-level module of src/ has a layer.
    for entry in std::fs::read_dir(&src).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        let name = name.trim_end_matches(".rs");
        if !["lib", "main", "layering"].contains(&name) {
            assert!(
                layers.contains_key(name),
                "lib.rs's table has no layer for `{name}`"
            );
        }
    }
    let bad = violations(&src, &layers);
    assert!(
        bad.is_empty(),
        "imports against the layers:\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_check_finds_an_import_upwards_and_one_between_subcommands() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path();
    std::fs::create_dir_all(src.join("store")).unwrap();
    std::fs::create_dir_all(src.join("commands/run")).unwrap();
    std::fs::write(
        src.join("store/mod.rs"),
        "use crate::output::json::X; // crate::cli in a comment is fine\n",
    )
    .unwrap();
    std::fs::write(
        src.join("commands/archive.rs"),
        "use crate::commands::run::x;\n",
    )
    .unwrap();
    std::fs::write(
        src.join("commands/run/mod.rs"),
        "use crate::commands::present; use crate::store::X;\n",
    )
    .unwrap();
    let layers = layers(
        "//! | 7 | [`commands`] | x |\n//! | 6 | [`output`] | x |\n//! | 1 | [`store`] | x |\n",
    );
    let bad = violations(src, &layers);
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
