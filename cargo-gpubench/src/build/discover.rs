//! Finding the bench targets to build: `cargo metadata`, then the bench targets of
//! workspace packages that depend on `gpubench-core`, narrowed by `-p` and `--bench`.

use std::path::{Path, PathBuf};

use cargo_metadata::{Metadata, MetadataCommand, TargetKind};
use thiserror::Error;

use crate::store::references::Places;

/// The crate a package must depend on for its bench targets to be gpubench ones.
pub const CORE_CRATE: &str = "gpubench-core";

/// Errors discovering bench targets.
#[derive(Debug, Error)]
pub enum DiscoverError {
    /// `cargo metadata` failed.
    #[error("failed to read the workspace with cargo metadata: {0}")]
    Metadata(#[source] cargo_metadata::Error),
    /// No `Cargo.toml` in the current directory or above it.
    #[error("{dir} is not in a cargo workspace (no Cargo.toml in it or above it): run cargo gpubench in your workspace, or pass --manifest-path PATH/Cargo.toml (or --exe / --archive to run benchmarks built elsewhere)")]
    NotInWorkspace {
        /// Where cargo looked from.
        dir: String,
    },
    /// `--manifest-path` names no file.
    #[error("--manifest-path {path} {why}: pass the path of the workspace's Cargo.toml, or leave it out to use the workspace of the current directory")]
    NoManifest {
        /// The path given.
        path: String,
        /// `does not exist` or `is not a file`.
        why: &'static str,
    },
    /// `-p` named a package that is not a workspace member.
    #[error("package `{spec}` is not a member of the workspace (members: {members})")]
    UnknownPackage {
        /// The `-p` value.
        spec: String,
        /// The members, comma-separated.
        members: String,
    },
    /// `-p` named a package without a dependency on gpubench-core.
    #[error(
        "package `{package}` does not depend on {CORE_CRATE}, so it has no gpubench benchmarks"
    )]
    NotAGpubenchPackage {
        /// The package.
        package: String,
    },
    /// `--bench` named no bench target of the selected packages.
    #[error("no bench target `{name}` in the selected packages (bench targets: {available})")]
    UnknownBench {
        /// The `--bench` value.
        name: String,
        /// The bench targets there are, comma-separated.
        available: String,
    },
    /// Nothing to build.
    #[error(
        "no bench targets in workspace packages that depend on {CORE_CRATE} (workspace {root})"
    )]
    NoBenchTargets {
        /// The workspace root.
        root: String,
    },
}

/// A bench target to build and run.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct BenchTarget {
    /// Its package's name.
    pub package: String,
    /// Cargo's opaque package id, to match build messages.
    pub package_id: String,
    /// The target's name (what `--bench` takes).
    pub name: String,
}

/// The workspace and the bench targets selected in it.
#[derive(Debug, Clone)]
pub struct Workspace {
    /// The workspace root directory.
    pub root: PathBuf,
    /// Cargo's target directory.
    pub target_dir: PathBuf,
    /// The selected bench targets, sorted by package then name.
    pub targets: Vec<BenchTarget>,
    /// What keeps a selected target from being a gpubench harness, with the fix
    /// ([`harness_problems`]): said before the build, and again if it fails.
    pub problems: Vec<String>,
}

/// Runs `cargo metadata` and selects bench targets.
pub fn discover(
    cargo: &Path,
    manifest_path: Option<&Path>,
    packages: &[String],
    benches: &[String],
) -> Result<Workspace, DiscoverError> {
    let metadata = metadata(cargo, manifest_path)?;
    let targets = select_targets(&metadata, packages, benches)?;
    let problems = harness_problems(&metadata, &targets);
    Ok(Workspace {
        root: metadata.workspace_root.into_std_path_buf(),
        target_dir: metadata.target_directory.into_std_path_buf(),
        targets,
        problems,
    })
}

/// The workspace root and cargo's target directory, from `cargo metadata`, for what
/// needs to find stored runs and baselines without building anything.
pub fn locate(
    cargo: &Path,
    manifest_path: Option<&Path>,
) -> Result<(PathBuf, PathBuf), DiscoverError> {
    let metadata = metadata(cargo, manifest_path)?;
    Ok((
        metadata.workspace_root.into_std_path_buf(),
        metadata.target_directory.into_std_path_buf(),
    ))
}

/// `cargo metadata --no-deps` of the workspace of `manifest_path`, run in `dir` so
/// the cargo configuration (`.cargo/config.toml`) is that workspace's: how `ab`
/// reads a revision checked out elsewhere.
pub fn metadata_in(
    cargo: &Path,
    manifest_path: &Path,
    dir: &Path,
) -> Result<Metadata, DiscoverError> {
    MetadataCommand::new()
        .cargo_path(cargo)
        .no_deps()
        .manifest_path(manifest_path)
        .current_dir(dir)
        .exec()
        .map_err(DiscoverError::Metadata)
}

/// `cargo metadata --no-deps` of the workspace (of `manifest_path` when given).
fn metadata(cargo: &Path, manifest_path: Option<&Path>) -> Result<Metadata, DiscoverError> {
    let mut cmd = MetadataCommand::new();
    cmd.cargo_path(cargo).no_deps();
    if let Some(path) = manifest_path {
        // A mistake in the command line, said as such rather than as cargo's failure.
        if !path.is_file() {
            return Err(DiscoverError::NoManifest {
                path: path.display().to_string(),
                why: if path.exists() {
                    "is not a file"
                } else {
                    "does not exist"
                },
            });
        }
        cmd.manifest_path(path);
    }
    cmd.exec().map_err(|e| match &e {
        // A mistake in where it was run, said as such (a usage error) rather than as
        // cargo's failure (a setup error).
        cargo_metadata::Error::CargoMetadata { stderr }
            if manifest_path.is_none() && not_in_workspace(stderr) =>
        {
            DiscoverError::NotInWorkspace {
                dir: std::env::current_dir()
                    .map(|d| d.display().to_string())
                    .unwrap_or_else(|_| "the current directory".into()),
            }
        }
        _ => DiscoverError::Metadata(e),
    })
}

/// Whether cargo's `stderr` says it found no `Cargo.toml` to start from.
fn not_in_workspace(stderr: &str) -> bool {
    stderr.contains("could not find `Cargo.toml`")
}

/// Selects the bench targets of workspace members that depend on gpubench-core (as a
/// normal or dev dependency, under any rename), narrowed by `-p` names and `--bench`
/// target names.
pub fn select_targets(
    metadata: &Metadata,
    packages: &[String],
    benches: &[String],
) -> Result<Vec<BenchTarget>, DiscoverError> {
    let members: Vec<&cargo_metadata::Package> = metadata
        .packages
        .iter()
        .filter(|p| metadata.workspace_members.contains(&p.id))
        .collect();
    let depends_on_core =
        |p: &cargo_metadata::Package| p.dependencies.iter().any(|d| d.name == CORE_CRATE);

    let chosen: Vec<&cargo_metadata::Package> = if packages.is_empty() {
        members
            .iter()
            .copied()
            .filter(|p| depends_on_core(p))
            .collect()
    } else {
        let mut chosen = Vec::new();
        for spec in packages {
            // `-p name@1.2.3` names a version too; members are unique by name.
            let name = spec.split('@').next().unwrap_or(spec);
            let pkg = members
                .iter()
                .find(|p| p.name.as_str() == name)
                .ok_or_else(|| DiscoverError::UnknownPackage {
                    spec: spec.clone(),
                    members: join(members.iter().map(|p| p.name.to_string())),
                })?;
            if !depends_on_core(pkg) {
                return Err(DiscoverError::NotAGpubenchPackage {
                    package: pkg.name.to_string(),
                });
            }
            chosen.push(*pkg);
        }
        chosen
    };

    let mut all: Vec<BenchTarget> = chosen
        .iter()
        .flat_map(|p| {
            p.targets
                .iter()
                .filter(|t| t.kind.contains(&TargetKind::Bench))
                .map(|t| BenchTarget {
                    package: p.name.to_string(),
                    package_id: p.id.repr.clone(),
                    name: t.name.clone(),
                })
        })
        .collect();
    all.sort();
    all.dedup();

    for name in benches {
        if !all.iter().any(|t| &t.name == name) {
            return Err(DiscoverError::UnknownBench {
                name: name.clone(),
                available: join(all.iter().map(|t| t.name.clone())),
            });
        }
    }
    if !benches.is_empty() {
        all.retain(|t| benches.contains(&t.name));
    }
    if all.is_empty() {
        return Err(DiscoverError::NoBenchTargets {
            root: metadata.workspace_root.to_string(),
        });
    }
    Ok(all)
}

/// The selected targets whose source uses gpubench but that cannot run as its
/// harness, each with the line that fixes it: built with libtest's harness (no
/// `harness = false` in its `[[bench]]`: libtest then ignores the file's `main` and
/// lists nothing), or without a `main` (rustc's E0601 alone would not say what to
/// add). Read from the manifest and the source as written.
pub fn harness_problems(metadata: &Metadata, targets: &[BenchTarget]) -> Vec<String> {
    let mut problems = Vec::new();
    for t in targets {
        let Some(pkg) = metadata.packages.iter().find(|p| p.id.repr == t.package_id) else {
            continue;
        };
        let Some(target) = pkg
            .targets
            .iter()
            .find(|x| x.name == t.name && x.kind.contains(&TargetKind::Bench))
        else {
            continue;
        };
        let source = std::fs::read_to_string(&target.src_path).unwrap_or_default();
        let manifest = std::fs::read_to_string(&pkg.manifest_path).unwrap_or_default();
        problems.extend(harness_problem(
            &t.name,
            target.src_path.as_std_path(),
            &source,
            pkg.manifest_path.as_std_path(),
            &manifest,
        ));
    }
    problems
}

/// [`harness_problems`] for one target, from its source and its package manifest.
fn harness_problem(
    name: &str,
    src: &Path,
    source: &str,
    manifest_path: &Path,
    manifest: &str,
) -> Option<String> {
    if !(source.contains("gpubench_core") || source.contains("gpu_bench")) {
        // A criterion or libtest bench beside gpubench ones: left to `cargo bench`.
        return None;
    }
    let declared = toml::from_str::<toml::Table>(manifest)
        .ok()
        .and_then(|doc| {
            doc.get("bench")?.as_array()?.iter().find_map(|b| {
                let b = b.as_table()?;
                (b.get("name")?.as_str()? == name).then(|| {
                    b.get("harness")
                        .and_then(toml::Value::as_bool)
                        .unwrap_or(true)
                })
            })
        });
    match declared {
        None => Some(format!(
            "bench target `{name}` ({}) uses gpubench but is built with libtest's harness, \
             which ignores its main and runs none of its benchmarks: add to {}:\n\n    \
             [[bench]]\n    name = \"{name}\"\n    harness = false\n",
            src.display(),
            manifest_path.display()
        )),
        Some(true) => Some(format!(
            "bench target `{name}` ({}) uses gpubench but is built with libtest's harness, \
             which ignores its main and runs none of its benchmarks: add `harness = false` \
             to its [[bench]] in {}",
            src.display(),
            manifest_path.display()
        )),
        Some(false) if !(source.contains("main!") || source.contains("fn main")) => Some(format!(
            "bench target `{name}` ({}) has no main function, so it does not build \
                 (rustc's E0601): add `gpubench_core::main!();` as its last line, which \
                 runs the file's #[gpu_bench] functions",
            src.display()
        )),
        Some(false) => None,
    }
}

fn join(items: impl Iterator<Item = String>) -> String {
    let v: Vec<String> = items.collect();
    if v.is_empty() {
        "none".into()
    } else {
        v.join(", ")
    }
}

/// The bench targets of the workspace at `manifest_path` (or the current one) that
/// `packages` and `benches` select, found with the cargo that runs this (`CARGO`).
pub fn find_targets(
    manifest_path: Option<&Path>,
    packages: &[String],
    benches: &[String],
) -> anyhow::Result<Workspace> {
    use anyhow::Context;
    discover(&crate::build::cargo(), manifest_path, packages, benches)
        .context("failed to discover bench targets")
}

/// Where baselines and runs are: `--out-dir` and `--baselines-dir` (relative to
/// `cwd`), else the workspace's (from `cargo metadata`, of `--manifest-path` when
/// given), else the current directory's when it is not in a workspace.
pub fn places(
    manifest_path: Option<&Path>,
    out_dir: Option<&Path>,
    baselines_dir: Option<&Path>,
    cwd: &Path,
) -> anyhow::Result<Places> {
    use anyhow::Context;
    let needs_workspace = baselines_dir.is_none() || out_dir.is_none();
    let (root, target_dir) = if needs_workspace {
        match locate(&crate::build::cargo(), manifest_path) {
            Ok(found) => found,
            Err(e) if manifest_path.is_some() => {
                return Err(e).context("failed to find the workspace's baselines and runs")
            }
            // Outside a workspace (e.g. a CI machine with only results), as --exe does.
            Err(_) => (cwd.to_path_buf(), cwd.join("target")),
        }
    } else {
        (cwd.to_path_buf(), cwd.join("target"))
    };
    Ok(Places {
        baselines: crate::store::baselines::store(baselines_dir, &root, cwd),
        out_dir: match out_dir {
            Some(dir) => cwd.join(dir),
            None => target_dir.join("gpubench"),
        },
        cwd: cwd.to_path_buf(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gpubench_bench_without_harness_false_or_main_is_told_the_line_to_add() {
        let src = Path::new("benches/ops.rs");
        let manifest_path = Path::new("ws/Cargo.toml");
        let with_main = "use gpubench_core::gpu_bench;\n#[gpu_bench]\nfn add(b: &mut gpubench_core::Bencher) {}\ngpubench_core::main!();\n";
        let no_main = "use gpubench_core::gpu_bench;\n#[gpu_bench]\nfn add(b: &mut gpubench_core::Bencher) {}\n";
        let declared = |harness: &str| {
            format!("[package]\nname = \"a\"\n\n[[bench]]\nname = \"ops\"\n{harness}")
        };
        // Auto-discovered: libtest's harness; the whole [[bench]] to add.
        let p = harness_problem(
            "ops",
            src,
            with_main,
            manifest_path,
            "[package]\nname = \"a\"\n",
        )
        .unwrap();
        assert!(
            p.contains("[[bench]]\n    name = \"ops\"\n    harness = false")
                && p.contains("ws/Cargo.toml"),
            "{p}"
        );
        // Declared without harness = false.
        let p = harness_problem("ops", src, with_main, manifest_path, &declared("")).unwrap();
        assert!(p.contains("add `harness = false` to its [[bench]]"), "{p}");
        // harness = false without a main.
        let p = harness_problem(
            "ops",
            src,
            no_main,
            manifest_path,
            &declared("harness = false\n"),
        )
        .unwrap();
        assert!(
            p.contains("gpubench_core::main!();") && p.contains("benches/ops.rs"),
            "{p}"
        );
        // Right as it is, or not a gpubench bench at all: nothing to say.
        assert_eq!(
            harness_problem(
                "ops",
                src,
                with_main,
                manifest_path,
                &declared("harness = false\n")
            ),
            None
        );
        assert_eq!(
            harness_problem("ops", src, "fn main() {}\n", manifest_path, "[package]\n"),
            None
        );
    }

    /// Metadata in cargo's format for a workspace of three members: `gpu` depends on
    /// gpubench-core and has two bench targets, `renamed` depends on it under another
    /// name as a dev-dependency, `plain` has a bench target but no gpubench-core.
    fn metadata() -> Metadata {
        let pkg = |name: &str, deps: serde_json::Value, benches: &[&str]| {
            let mut targets = vec![serde_json::json!({
                "name": name, "kind": ["lib"], "crate_types": ["lib"],
                "src_path": format!("/ws/{name}/src/lib.rs"), "edition": "2021",
                "doctest": true, "test": true, "doc": true
            })];
            for b in benches {
                targets.push(serde_json::json!({
                    "name": b, "kind": ["bench"], "crate_types": ["bin"],
                    "src_path": format!("/ws/{name}/benches/{b}.rs"), "edition": "2021",
                    "doctest": false, "test": false, "doc": false
                }));
            }
            serde_json::json!({
                "name": name, "version": "0.1.0", "id": format!("path+file:///ws/{name}#0.1.0"),
                "license": null, "license_file": null, "description": null, "source": null,
                "dependencies": deps, "targets": targets, "features": {},
                "manifest_path": format!("/ws/{name}/Cargo.toml"), "metadata": null,
                "publish": null, "authors": [], "categories": [], "keywords": [],
                "readme": null, "repository": null, "homepage": null, "documentation": null,
                "edition": "2021", "links": null, "default_run": null, "rust_version": null
            })
        };
        let dep = |name: &str, kind: Option<&str>, rename: Option<&str>| {
            serde_json::json!({
                "name": name, "source": null, "req": "*", "kind": kind, "rename": rename,
                "optional": false, "uses_default_features": true, "features": [],
                "target": null, "registry": null, "path": "/ws/core"
            })
        };
        let json = serde_json::json!({
            "packages": [
                pkg("gpu", serde_json::json!([dep("gpubench-core", None, None)]), &["matmul", "conv"]),
                pkg("renamed", serde_json::json!([dep("gpubench-core", Some("dev"), Some("gb"))]), &["attn"]),
                pkg("plain", serde_json::json!([dep("serde", None, None)]), &["cpu_only"]),
            ],
            "workspace_members": [
                "path+file:///ws/gpu#0.1.0", "path+file:///ws/renamed#0.1.0", "path+file:///ws/plain#0.1.0"
            ],
            "workspace_default_members": [],
            "resolve": null, "target_directory": "/ws/target", "version": 1,
            "workspace_root": "/ws", "metadata": null
        });
        serde_json::from_value(json).expect("valid metadata")
    }

    fn names(targets: &[BenchTarget]) -> Vec<String> {
        targets
            .iter()
            .map(|t| format!("{}/{}", t.package, t.name))
            .collect()
    }

    #[test]
    fn picks_bench_targets_of_packages_that_depend_on_core() {
        let t = select_targets(&metadata(), &[], &[]).unwrap();
        assert_eq!(names(&t), ["gpu/conv", "gpu/matmul", "renamed/attn"]);
    }

    #[test]
    fn package_and_bench_narrow_the_selection() {
        let t = select_targets(&metadata(), &["gpu".into()], &["matmul".into()]).unwrap();
        assert_eq!(names(&t), ["gpu/matmul"]);
        let t = select_targets(&metadata(), &["renamed@0.1.0".into()], &[]).unwrap();
        assert_eq!(names(&t), ["renamed/attn"]);
    }

    #[test]
    fn bad_selections_say_what_exists() {
        let err = select_targets(&metadata(), &["nope".into()], &[]).unwrap_err();
        assert!(err.to_string().contains("gpu, renamed, plain"), "{err}");
        let err = select_targets(&metadata(), &["plain".into()], &[]).unwrap_err();
        assert!(err.to_string().contains("does not depend on gpubench-core"));
        let err = select_targets(&metadata(), &[], &["cpu_only".into()]).unwrap_err();
        assert!(
            err.to_string()
                .contains("bench targets: conv, matmul, attn"),
            "{err}"
        );
    }
}
