//! What a bench target's library crate is made of: its `Cargo.toml` (the package's
//! dependencies as `cargo metadata` read them, normal and dev alike, those the
//! default features turn on), the `Cargo.toml` of the workspace that holds a
//! revision's libraries (the revision's `[patch]`, `[replace]` and `[profile]`), and
//! the `lib.rs` that includes the bench source. Pure functions of metadata and TOML.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use cargo_metadata::{Dependency, DependencyKind, Package, Target, TargetKind};
use toml::{Table, Value};

use crate::build::discover::CORE_CRATE;

/// The features and optional dependencies a build with the package's default
/// features turns on, as `cargo bench` builds it.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Activation {
    /// The package's features that are on (`default` and what it turns on).
    pub features: BTreeSet<String>,
    /// Optional dependencies turned on, by dependency name (the rename if any).
    pub optional: BTreeSet<String>,
    /// Features of dependencies turned on (`dep/feature`), by dependency name.
    pub dependency_features: BTreeMap<String, BTreeSet<String>>,
    /// `dep?/feature`: features for a dependency only if it is on anyway.
    pub weak: BTreeMap<String, BTreeSet<String>>,
}

/// What `default` turns on in `package`, followed through its features.
pub fn default_activation(package: &Package) -> Activation {
    let mut on = Activation::default();
    let mut todo = vec!["default".to_string()];
    while let Some(feature) = todo.pop() {
        let Some(entries) = package.features.get(&feature) else {
            continue;
        };
        if !on.features.insert(feature) {
            continue;
        }
        for entry in entries {
            if let Some(dep) = entry.strip_prefix("dep:") {
                on.optional.insert(dep.to_string());
            } else if let Some((dep, f)) = entry.split_once("?/") {
                on.weak
                    .entry(dep.to_string())
                    .or_default()
                    .insert(f.to_string());
            } else if let Some((dep, f)) = entry.split_once('/') {
                on.optional.insert(dep.to_string());
                on.dependency_features
                    .entry(dep.to_string())
                    .or_default()
                    .insert(f.to_string());
            } else {
                todo.push(entry.clone());
            }
        }
    }
    on
}

/// The name a dependency is known by in the package (its rename, else its name).
fn key_of(dep: &Dependency) -> &str {
    dep.rename.as_deref().unwrap_or(&dep.name)
}

/// The crate name bench code reaches gpubench-core by (`gpubench_core` unless
/// renamed); `None` when the package does not depend on it.
pub fn core_crate_name(package: &Package) -> Option<String> {
    package
        .dependencies
        .iter()
        .filter(|d| d.name == CORE_CRATE && d.kind != DependencyKind::Build)
        .map(|d| key_of(d).replace('-', "_"))
        .next()
}

/// One dependency of the library, before it is written.
struct Entry {
    table: Table,
    features: BTreeSet<String>,
    default_features: bool,
}

/// The library's `Cargo.toml`: package `name` of `target`'s edition, a `cdylib`
/// from `lib.rs`, the package's features that are on by default (as empty
/// features, so `cfg(feature = ..)` in bench code reads as in `cargo bench`), and
/// its normal and dev-dependencies (target-specific ones under `[target.'cfg(..)']`)
/// plus the package itself when it has a library.
pub fn member_manifest(package: &Package, target: &Target, name: &str) -> Table {
    let on = default_activation(package);
    // Keyed by platform (`None`: every platform), then by dependency name.
    let mut deps: BTreeMap<Option<String>, BTreeMap<String, Entry>> = BTreeMap::new();

    let mut declared: Vec<&Dependency> = package
        .dependencies
        .iter()
        .filter(|d| matches!(d.kind, DependencyKind::Normal | DependencyKind::Development))
        .filter(|d| !d.optional || on.optional.contains(key_of(d)))
        .collect();
    // Normal before dev, so a crate that is both keeps its normal requirement.
    declared.sort_by_key(|d| d.kind != DependencyKind::Normal);
    for dep in declared {
        let key = key_of(dep).to_string();
        let mut features: BTreeSet<String> = dep.features.iter().cloned().collect();
        features.extend(
            on.dependency_features
                .get(&key)
                .into_iter()
                .flatten()
                .cloned(),
        );
        features.extend(on.weak.get(&key).into_iter().flatten().cloned());
        let platform = dep.target.as_ref().map(|p| p.to_string());
        merge(
            deps.entry(platform).or_default(),
            key,
            Entry {
                table: dependency_source(dep),
                features,
                default_features: dep.uses_default_features,
            },
        );
    }
    let has_lib = package.targets.iter().any(|t| {
        t.kind.iter().any(|k| {
            matches!(
                k,
                TargetKind::Lib | TargetKind::RLib | TargetKind::DyLib | TargetKind::ProcMacro
            )
        })
    });
    if has_lib {
        let dir = package
            .manifest_path
            .parent()
            .map(|p| p.as_str())
            .unwrap_or(".");
        let mut table = Table::new();
        table.insert("path".into(), dir.into());
        merge(
            deps.entry(None).or_default(),
            package.name.to_string(),
            Entry {
                table,
                features: BTreeSet::new(),
                default_features: true,
            },
        );
    }

    let mut manifest = Table::new();
    let mut pkg = Table::new();
    pkg.insert("name".into(), name.into());
    pkg.insert("version".into(), "0.0.0".into());
    pkg.insert("edition".into(), target.edition.as_str().into());
    pkg.insert("publish".into(), false.into());
    manifest.insert("package".into(), pkg.into());

    let mut lib = Table::new();
    lib.insert("crate-type".into(), Value::Array(vec!["cdylib".into()]));
    lib.insert("path".into(), "lib.rs".into());
    manifest.insert("lib".into(), lib.into());

    let features: Vec<&String> = on.features.iter().filter(|f| *f != "default").collect();
    if !features.is_empty() {
        let mut table = Table::new();
        table.insert(
            "default".into(),
            Value::Array(features.iter().map(|f| (*f).clone().into()).collect()),
        );
        for f in features {
            table.insert(f.clone(), Value::Array(Vec::new()));
        }
        manifest.insert("features".into(), table.into());
    }

    let mut targets = Table::new();
    for (platform, entries) in deps {
        let table: Table = entries
            .into_iter()
            .map(|(key, entry)| (key, entry.into_value()))
            .collect();
        match platform {
            None => {
                manifest.insert("dependencies".into(), table.into());
            }
            Some(p) => {
                let mut inner = Table::new();
                inner.insert("dependencies".into(), table.into());
                targets.insert(p, inner.into());
            }
        }
    }
    if !targets.is_empty() {
        manifest.insert("target".into(), targets.into());
    }
    manifest
}

/// Adds `entry` under `key`, or folds it into the one there: features add up and
/// default features stay on when either asks for them, as cargo unifies them.
fn merge(entries: &mut BTreeMap<String, Entry>, key: String, entry: Entry) {
    match entries.get_mut(&key) {
        Some(there) => {
            there.features.extend(entry.features);
            there.default_features |= entry.default_features;
        }
        None => {
            entries.insert(key, entry);
        }
    }
}

impl Entry {
    fn into_value(mut self) -> Value {
        if !self.features.is_empty() {
            self.table.insert(
                "features".into(),
                Value::Array(self.features.into_iter().map(Value::from).collect()),
            );
        }
        if !self.default_features {
            self.table.insert("default-features".into(), false.into());
        }
        self.table.into()
    }
}

/// Where a dependency comes from: `package` (when renamed), `version`, and `path`,
/// `git` (with its branch, tag or rev) or `registry-index`.
fn dependency_source(dep: &Dependency) -> Table {
    let mut t = Table::new();
    if dep.rename.is_some() {
        t.insert("package".into(), dep.name.clone().into());
    }
    let git = dep
        .source
        .as_ref()
        .and_then(|s| s.repr.strip_prefix("git+"));
    let req = dep.req.to_string();
    // A registry dependency needs a version; a path or git one only when it has one.
    if req != "*" || (dep.path.is_none() && git.is_none()) {
        t.insert("version".into(), req.into());
    }
    if let Some(path) = &dep.path {
        t.insert("path".into(), path.as_str().into());
    } else if let Some(url) = git {
        let url = url.split('#').next().unwrap_or(url);
        let (repo, query) = url.split_once('?').unwrap_or((url, ""));
        t.insert("git".into(), repo.into());
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            if let Some((k, v)) = pair.split_once('=') {
                if matches!(k, "branch" | "tag" | "rev") {
                    t.insert(k.into(), percent_decode(v).into());
                }
            }
        }
    } else if let Some(index) = &dep.registry {
        // The index's URL stands for the registry's name, as in a published
        // manifest: this crate's builder may not have named it the same.
        t.insert("registry-index".into(), index.clone().into());
    }
    t
}

/// `feature%2Fx` → `feature/x`, as cargo writes a branch into a source URL.
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes[i], bytes.get(i + 1), bytes.get(i + 2)) {
            (b'%', Some(&h), Some(&l)) if hex(h).is_some() && hex(l).is_some() => {
                out.push((hex(h).unwrap_or(0) * 16 + hex(l).unwrap_or(0)) as u8);
                i += 3;
            }
            (b, ..) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The `Cargo.toml` of the workspace holding a revision's libraries (`members`):
/// the revision's root manifest's `[patch]`, `[replace]` and `[profile]`, with
/// relative paths made absolute from `root_dir`, and its resolver.
pub fn workspace_manifest(members: &[String], root: &Table, root_dir: &Path) -> Table {
    let mut workspace = Table::new();
    workspace.insert(
        "members".into(),
        Value::Array(members.iter().map(|m| m.clone().into()).collect()),
    );
    workspace.insert("resolver".into(), resolver(root).into());
    let mut manifest = Table::new();
    manifest.insert("workspace".into(), workspace.into());

    if let Some(Value::Table(patch)) = root.get("patch") {
        let mut patch = patch.clone();
        for (_, source) in patch.iter_mut() {
            if let Value::Table(crates) = source {
                crates
                    .iter_mut()
                    .for_each(|(_, d)| absolute_path(d, root_dir));
            }
        }
        manifest.insert("patch".into(), patch.into());
    }
    if let Some(Value::Table(replace)) = root.get("replace") {
        let mut replace = replace.clone();
        replace
            .iter_mut()
            .for_each(|(_, d)| absolute_path(d, root_dir));
        manifest.insert("replace".into(), replace.into());
    }
    if let Some(profile) = root.get("profile") {
        manifest.insert("profile".into(), profile.clone());
    }
    manifest
}

/// The resolver the revision's workspace uses: its `workspace.resolver`, else the
/// one its root package's edition implies, else cargo's default for a virtual
/// workspace ("1").
fn resolver(root: &Table) -> String {
    let workspace = root.get("workspace").and_then(Value::as_table);
    if let Some(r) = workspace
        .and_then(|w| w.get("resolver"))
        .and_then(Value::as_str)
    {
        return r.to_string();
    }
    let edition = root
        .get("package")
        .and_then(Value::as_table)
        .and_then(|p| p.get("edition"))
        .and_then(|e| match e {
            Value::String(s) => Some(s.as_str()),
            // `edition.workspace = true`
            Value::Table(_) => workspace
                .and_then(|w| w.get("package"))
                .and_then(Value::as_table)
                .and_then(|p| p.get("edition"))
                .and_then(Value::as_str),
            _ => None,
        });
    match edition {
        Some("2021") => "2",
        Some("2024") => "3",
        _ => "1",
    }
    .to_string()
}

/// `{ path = "rel" }` → `{ path = "<root_dir>/rel" }`.
fn absolute_path(dep: &mut Value, root_dir: &Path) {
    if let Some(Value::String(path)) = dep.as_table_mut().and_then(|t| t.get_mut("path")) {
        if Path::new(path.as_str()).is_relative() {
            *path = root_dir.join(path.as_str()).display().to_string();
        }
    }
}

/// The `lib.rs` that includes `target`'s source as `mod bench` and exports the
/// pairing entry points through `core` (the crate name of gpubench-core).
///
/// `env!`/`option_env!` of the variables cargo sets for the bench target about its
/// package (`CARGO_MANIFEST_DIR`, `CARGO_PKG_*`, `CARGO_CRATE_NAME`) are shadowed
/// with the bench target's values, so bench code finding files beside its package
/// reads the same paths; other variables, and `std::env!` written out, read the
/// library's own.
pub fn lib_source(package: &Package, target: &Target, revision: &str, core: &str) -> String {
    let dir = package
        .manifest_path
        .parent()
        .map(|p| p.to_string())
        .unwrap_or_default();
    let v = &package.version;
    let vars: [(&str, String); 9] = [
        ("CARGO_MANIFEST_DIR", dir),
        ("CARGO_MANIFEST_PATH", package.manifest_path.to_string()),
        ("CARGO_PKG_NAME", package.name.to_string()),
        ("CARGO_PKG_VERSION", v.to_string()),
        ("CARGO_PKG_VERSION_MAJOR", v.major.to_string()),
        ("CARGO_PKG_VERSION_MINOR", v.minor.to_string()),
        ("CARGO_PKG_VERSION_PATCH", v.patch.to_string()),
        ("CARGO_PKG_VERSION_PRE", v.pre.to_string()),
        ("CARGO_CRATE_NAME", target.name.replace('-', "_")),
    ];
    let mut env = String::new();
    let mut option_env = String::new();
    for (name, value) in &vars {
        env.push_str(&format!(
            "    ({name:?} $(, $message:expr)? $(,)?) => {{ {value:?} }};\n"
        ));
        option_env.push_str(&format!(
            "    ({name:?} $(,)?) => {{ ::std::option::Option::Some({value:?}) }};\n"
        ));
    }
    format!(
        "// Generated by `cargo gpubench ab` from bench target `{target}` of package \
         `{package}` at {revision},\n\
         // built as a library to load into a paired process. Written again by every \
         `ab`: edits are lost.\n\
         #![allow(warnings)]\n\
         \n\
         macro_rules! env {{\n{env}    ($($rest:tt)*) => {{ ::std::env!($($rest)*) }};\n}}\n\
         \n\
         macro_rules! option_env {{\n{option_env}    ($($rest:tt)*) => {{ ::std::option_env!($($rest)*) }};\n}}\n\
         \n\
         #[path = {src:?}]\n\
         mod bench;\n\
         \n\
         {core}::export_paired!();\n",
        target = target.name,
        package = package.name,
        src = target.src_path.as_str(),
    )
}

#[cfg(test)]
mod tests;
