//! The workspace's crates as the checks read them: each crate's module files, which
//! of them are tests, their code without comments, and the `crate::` and `super::`
//! paths in it resolved to the modules they name.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module's path from its crate's root (`["engine", "kernels"]`); the root is empty.
pub(super) type ModulePath = Vec<String>;

/// One `.rs` file of a crate's `src/`.
pub(super) struct SourceFile {
    /// Relative to `src/`.
    pub relative: PathBuf,
    pub module: ModulePath,
    /// Declared `#[cfg(test)]`, or inside a module that is.
    pub is_test: bool,
    pub text: String,
}

/// The module files of one crate's `src/`.
pub(super) struct Crate {
    pub files: Vec<SourceFile>,
    /// What the root re-exports (`pub use bencher::Bencher;`): name to full path.
    reexports: BTreeMap<String, Vec<String>>,
}

/// A path into the crate found in a file's code.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Import {
    /// 1-based.
    pub line: usize,
    /// The path's segments as written, from the crate's root (`super::` resolved).
    pub path: Vec<String>,
}

/// The root of this workspace (the folder above this crate).
pub(super) fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the crate lies in the workspace")
        .to_path_buf()
}

/// The `src/` folder of every member of the workspace, by the members of its
/// `Cargo.toml`.
pub(super) fn workspace_sources() -> Vec<(String, PathBuf)> {
    let root = workspace_root();
    let manifest = std::fs::read_to_string(root.join("Cargo.toml"))
        .expect("the workspace's Cargo.toml (these checks run in the repository)");
    let manifest: toml::Table = manifest.parse().expect("the workspace's Cargo.toml parses");
    let members = manifest["workspace"]["members"]
        .as_array()
        .expect("workspace.members");
    let sources: Vec<(String, PathBuf)> = members
        .iter()
        .map(|m| {
            let m = m.as_str().expect("a member is a path");
            (m.to_string(), root.join(m).join("src"))
        })
        .collect();
    assert!(
        sources.len() >= 5,
        "the workspace lists its crates: {sources:?}"
    );
    for (name, src) in &sources {
        assert!(
            src.is_dir(),
            "member {name} has no src/ at {}",
            src.display()
        );
    }
    sources
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

/// The module a file of `src/` holds: `engine/mod.rs` and `engine.rs` are `engine`,
/// `lib.rs` and `main.rs` the root.
fn module_of(relative: &Path) -> ModulePath {
    let mut parts: Vec<String> = relative
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap_or_default();
    let stem = last.trim_end_matches(".rs");
    let at_root = parts.is_empty() && (stem == "lib" || stem == "main");
    if stem != "mod" && !at_root {
        parts.push(stem.to_string());
    }
    parts
}

/// The modules `text` declares under `#[cfg(test)]` (`mod tests;`).
fn test_declarations(text: &str) -> Vec<String> {
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    let mut found = Vec::new();
    for (n, line) in lines.iter().enumerate() {
        let Some(name) = declared_module(line).filter(|_| line.ends_with(';')) else {
            continue;
        };
        let attributes = lines[..n]
            .iter()
            .rev()
            .take_while(|l| l.starts_with("#[") || l.starts_with("///"));
        if attributes.into_iter().any(|l| is_cfg_test(l)) {
            found.push(name);
        }
    }
    found
}

fn is_cfg_test(attribute: &str) -> bool {
    attribute.starts_with("#[cfg(test)]") || attribute.starts_with("#[cfg(all(test,")
}

/// `name` of a `mod name;` or `mod name {` line (with any visibility).
fn declared_module(line: &str) -> Option<String> {
    let rest = line
        .strip_prefix("pub ")
        .or_else(|| line.strip_prefix("pub(crate) "))
        .or_else(|| line.strip_prefix("pub(super) "))
        .unwrap_or(line);
    let rest = rest.strip_prefix("mod ")?;
    let name: String = rest
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    (!name.is_empty()).then_some(name)
}

impl Crate {
    /// Reads every `.rs` file of `src`.
    pub(super) fn read(src: &Path) -> Crate {
        let mut paths = Vec::new();
        rust_files(src, &mut paths);
        Crate::new(
            paths
                .iter()
                .map(|path| {
                    let relative = path.strip_prefix(src).unwrap().to_path_buf();
                    (relative, std::fs::read_to_string(path).unwrap())
                })
                .collect(),
        )
    }

    /// An in-memory crate of `(path under src/, text)`: for the checks' own tests.
    pub(super) fn of(files: &[(&str, &str)]) -> Crate {
        Crate::new(
            files
                .iter()
                .map(|(path, text)| (PathBuf::from(path), text.to_string()))
                .collect(),
        )
    }

    fn new(mut files: Vec<(PathBuf, String)>) -> Crate {
        files.sort();
        let mut files: Vec<SourceFile> = files
            .into_iter()
            .map(|(relative, text)| SourceFile {
                module: module_of(&relative),
                relative,
                is_test: false,
                text,
            })
            .collect();
        Crate::mark_tests(&mut files);
        let reexports = files
            .iter()
            .find(|f| f.module.is_empty())
            .map(|root| root_reexports(&production_code(&root.text)))
            .unwrap_or_default();
        Crate { files, reexports }
    }

    fn mark_tests(files: &mut [SourceFile]) {
        let tests: BTreeSet<ModulePath> = files
            .iter()
            .flat_map(|f| {
                test_declarations(&f.text).into_iter().map(|name| {
                    let mut m = f.module.clone();
                    m.push(name);
                    m
                })
            })
            .collect();
        for f in files.iter_mut() {
            f.is_test = (1..=f.module.len()).any(|n| tests.contains(&f.module[..n]));
        }
    }

    /// Whether `module` is one of this crate's modules (a file, or a folder of them).
    fn has(&self, module: &[String]) -> bool {
        self.files.iter().any(|f| f.module.starts_with(module))
    }

    /// The module an import names: the longest start of its path that is a module of
    /// this crate, through what the root re-exports.
    pub(super) fn resolve(&self, path: &[String]) -> ModulePath {
        if let Some(full) = path.first().and_then(|first| self.reexports.get(first)) {
            if full.first() != path.first() {
                let mut through: Vec<String> = full.clone();
                through.extend(path[1..].iter().cloned());
                return self.resolve(&through);
            }
        }
        let mut module = Vec::new();
        for segment in path {
            module.push(segment.clone());
            if !self.has(&module) {
                module.pop();
                break;
            }
        }
        module
    }

    /// The production files: what a bench executable or the binary is built from.
    pub(super) fn production(&self) -> impl Iterator<Item = &SourceFile> {
        self.files.iter().filter(|f| !f.is_test)
    }
}

/// `text` without comments, test modules written inline (`#[cfg(test)] mod tests {`
/// to its closing brace) blanked, so line numbers stay.
pub(super) fn production_code(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::with_capacity(lines.len());
    let mut n = 0;
    while n < lines.len() {
        let line = lines[n];
        let opens_test_module = is_cfg_test(line.trim())
            && lines.get(n + 1).is_some_and(|next| {
                declared_module(next.trim()).is_some() && next.trim_end().ends_with('{')
            });
        if opens_test_module {
            let indent = &lines[n + 1][..lines[n + 1].len() - lines[n + 1].trim_start().len()];
            let close = format!("{indent}}}");
            let end = (n + 2..lines.len())
                .find(|&k| lines[k] == close)
                .unwrap_or(lines.len() - 1);
            out.extend(std::iter::repeat_n(String::new(), end + 1 - n));
            n = end + 1;
            continue;
        }
        out.push(without_comment(line).to_string());
        n += 1;
    }
    out.join("\n")
}

/// `text` without comments, tests included.
pub(super) fn code(text: &str) -> String {
    text.lines()
        .map(without_comment)
        .collect::<Vec<_>>()
        .join("\n")
}

/// A line without its `//` comment (a `//` inside a string ends it too, which only
/// ever hides code from the checks, never invents it).
fn without_comment(line: &str) -> &str {
    line.split("//").next().unwrap_or("")
}

fn ident(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// What `pub use a::b::Name;` (or a group of them) at the root makes `crate::Name`.
fn root_reexports(code: &str) -> BTreeMap<String, Vec<String>> {
    let mut found = BTreeMap::new();
    for statement in code.split(';') {
        let Some(at) = statement.find("pub use ") else {
            continue;
        };
        let start = at + "pub use ".len();
        for path in expand(statement, start) {
            let path: Vec<String> = path.into_iter().filter(|s| s != "crate").collect();
            if let Some(name) = path.last().filter(|_| path.len() > 1) {
                found.insert(name.clone(), path);
            }
        }
    }
    found
}

/// The paths of a use tree starting at byte `at` of `code` (`a::{b, c::d}` is
/// `a::b` and `a::c::d`); `as` renames are dropped, a glob names its module.
fn expand(code: &str, at: usize) -> Vec<Vec<String>> {
    tree(code, at).0
}

/// `at` moved past white space.
fn skip_space(code: &str, at: usize) -> usize {
    at + (code[at..].len() - code[at..].trim_start().len())
}

/// The paths of the use tree at `at`, and where it ends.
fn tree(code: &str, mut at: usize) -> (Vec<Vec<String>>, usize) {
    let mut prefix = Vec::new();
    loop {
        at = skip_space(code, at);
        if code[at..].starts_with('{') {
            at += 1;
            let mut paths = Vec::new();
            loop {
                at = skip_space(code, at);
                if code[at..].starts_with('}') {
                    return (paths, at + 1);
                }
                let (inner, end) = tree(code, at);
                paths.extend(inner.into_iter().map(|p| [prefix.clone(), p].concat()));
                at = skip_space(code, end);
                match code[at..].chars().next() {
                    Some(',') => at += 1,
                    Some('}') => return (paths, at + 1),
                    _ => return (paths, at),
                }
            }
        }
        let name = ident(&code[at..]);
        if name.is_empty() {
            let paths = if prefix.is_empty() {
                vec![]
            } else {
                vec![prefix]
            };
            return (paths, at);
        }
        at += name.len();
        if name != "self" {
            prefix.push(name.to_string());
        }
        if code[at..].starts_with("::") {
            at += 2;
            continue;
        }
        let after = skip_space(code, at);
        if code[after..].starts_with("as ") {
            let alias = skip_space(code, after + "as ".len());
            at = alias + ident(&code[alias..]).len();
        }
        return (vec![prefix], at);
    }
}

/// Every path into the crate in `code` (comments and inline test modules already
/// taken out by [`production_code`]) of the file of `module`: `crate::…` (not a
/// macro's `$crate::…`) from the root, `super::…` from the module's parent, each
/// group `{a, b}` one import a member.
pub(super) fn imports(code: &str, module: &[String]) -> Vec<Import> {
    let mut found = Vec::new();
    let line_of = |at: usize| code[..at].matches('\n').count() + 1;
    for keyword in ["crate::", "super::"] {
        let mut from = 0;
        while let Some(found_at) = code[from..].find(keyword) {
            let at = from + found_at;
            from = at + keyword.len();
            let before = code[..at].chars().next_back();
            if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$' || c == ':')
            {
                continue;
            }
            let mut base: Vec<String> = if keyword == "crate::" {
                Vec::new()
            } else {
                module[..module.len().saturating_sub(1)].to_vec()
            };
            let mut at_path = from;
            // `super::super::x`
            while code[at_path..].starts_with("super::") && keyword == "super::" {
                base.pop();
                at_path += "super::".len();
            }
            for path in expand(code, at_path) {
                let mut full = base.clone();
                full.extend(path.into_iter().filter(|s| s != "super"));
                found.push(Import {
                    line: line_of(at),
                    path: full,
                });
            }
            from = at_path;
        }
    }
    found.sort_by_key(|i| i.line);
    found
}

#[test]
fn imports_are_read_through_groups_supers_and_reexports() {
    let krate = Crate::of(&[
        (
            "lib.rs",
            "mod a;\nmod b;\n#[cfg(test)]\nmod t;\npub use b::inner::Thing;\n",
        ),
        (
            "a/mod.rs",
            "mod x;\nuse crate::{b::inner::{self, Y}, Thing};\nuse crate::b::inner as i; use crate::b::*;\n",
        ),
        (
            "a/x.rs",
            "use super::super::b::Z; // crate::t in a comment\nfn f() { $crate::b::q }\n",
        ),
        (
            "b/mod.rs",
            "pub mod inner;\n#[cfg(test)]\nmod tests {\n    use crate::a;\n}\n",
        ),
        ("b/inner.rs", ""),
        ("t.rs", "use crate::a;"),
    ]);
    let of = |relative: &str| {
        let f = krate
            .files
            .iter()
            .find(|f| f.relative == Path::new(relative))
            .unwrap();
        imports(&production_code(&f.text), &f.module)
            .into_iter()
            .map(|i| (i.line, krate.resolve(&i.path).join("::")))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        of("a/mod.rs"),
        [
            (2, "b::inner".into()),
            (2, "b::inner".into()),
            (2, "b::inner".into()),
            (3, "b::inner".into()),
            (3, "b".into())
        ]
    );
    assert_eq!(of("a/x.rs"), [(1, "b".to_string())]);
    assert_eq!(of("b/mod.rs"), Vec::<(usize, String)>::new());
    let tests: Vec<_> = krate
        .files
        .iter()
        .filter(|f| f.is_test)
        .map(|f| f.relative.clone())
        .collect();
    assert_eq!(tests, [PathBuf::from("t.rs")]);
}
