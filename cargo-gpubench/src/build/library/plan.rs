//! A revision's bench targets read with `cargo metadata` and written as the library
//! crates of a workspace of their own under the target directory (the layout is in
//! the parent module's docs).

use std::path::{Path, PathBuf};

use cargo_metadata::TargetKind;

use super::{manifest, LibraryError, LIBS_DIR};
use crate::build::discover;
use crate::build::revision::Revision;

/// One library crate written for a bench target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedLibrary {
    /// The bench target's package.
    pub package: String,
    /// The bench target.
    pub target: String,
    /// The generated package's crate name (`gpubench_ab_<key>_<package>_<target>`).
    pub crate_name: String,
    /// Its directory.
    pub dir: PathBuf,
}

/// A revision's library crates, written and ready to build.
#[derive(Debug, Clone)]
pub struct LibraryPlan {
    /// [`Revision::describe`].
    pub revision: String,
    /// `base` or `head`.
    pub(super) role: &'static str,
    /// The revision's workspace root, where cargo runs.
    pub revision_root: PathBuf,
    /// The workspace of the crates (`libs/<revision-key>`).
    pub dir: PathBuf,
    /// The target directory both revisions build into.
    pub target_dir: PathBuf,
    /// One per bench target, sorted by package and target.
    pub libraries: Vec<PlannedLibrary>,
}

/// Reads `revision`'s workspace with `cargo metadata`, selects its bench targets as
/// a run does (`-p` `packages`, `--bench` `benches`) and writes a library crate
/// for each under `target_dir` (module docs).
pub fn prepare(
    cargo: &Path,
    revision: &Revision,
    packages: &[String],
    benches: &[String],
    target_dir: &Path,
) -> Result<LibraryPlan, LibraryError> {
    let shown = revision.describe();
    let discover_error = |source| LibraryError::Discover {
        revision: shown.clone(),
        source,
    };
    let root_manifest = revision.manifest_path();
    let metadata =
        discover::metadata_in(cargo, &root_manifest, &revision.root).map_err(discover_error)?;
    let targets = discover::select_targets(&metadata, packages, benches).map_err(discover_error)?;
    let root: toml::Table = std::fs::read_to_string(&root_manifest)
        .map_err(|e| e.to_string())
        .and_then(|text| text.parse().map_err(|e: toml::de::Error| e.to_string()))
        .map_err(|reason| LibraryError::RootManifest {
            revision: shown.clone(),
            path: root_manifest.display().to_string(),
            reason,
        })?;

    let key = revision.key();
    let dir = target_dir.join(LIBS_DIR).join(&key);
    let mut libraries = Vec::new();
    for t in &targets {
        let package = metadata
            .packages
            .iter()
            .find(|p| p.id.repr == t.package_id)
            .expect("selected targets are of the metadata's packages");
        let target = package
            .targets
            .iter()
            .find(|x| x.name == t.name && x.kind.contains(&TargetKind::Bench))
            .expect("selected targets are bench targets of their package");
        let core =
            manifest::core_crate_name(package).expect("selected packages depend on gpubench-core");
        let member = format!("{}-{}", path_safe(&t.package), path_safe(&t.name));
        let name = format!("gpubench-ab-{key}-{member}");
        let member_dir = dir.join(&member);
        let cargo_toml = manifest::member_manifest(package, target, &name);
        write_if_changed(&member_dir.join("Cargo.toml"), &cargo_toml.to_string())?;
        write_if_changed(
            &member_dir.join("lib.rs"),
            &manifest::lib_source(package, target, &shown, &core),
        )?;
        libraries.push(PlannedLibrary {
            package: t.package.clone(),
            target: t.name.clone(),
            crate_name: name.replace('-', "_"),
            dir: member_dir,
        });
    }
    let members: Vec<String> = libraries
        .iter()
        .map(|l| {
            l.dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        })
        .collect();
    let workspace = manifest::workspace_manifest(&members, &root, &revision.root);
    write_if_changed(&dir.join("Cargo.toml"), &workspace.to_string())?;
    // The revision's lock (a worktree without one has the working tree's).
    if let Ok(lock) = std::fs::read_to_string(revision.root.join("Cargo.lock")) {
        write_if_changed(&dir.join("Cargo.lock"), &lock)?;
    }
    Ok(LibraryPlan {
        revision: shown,
        role: revision.role.as_str(),
        revision_root: revision.root.clone(),
        dir,
        target_dir: target_dir.to_path_buf(),
        libraries,
    })
}

impl LibraryPlan {
    /// Removes the crates [`prepare`] wrote (and `libs/` when that leaves it
    /// empty): the next `ab` writes them again, and a finished one leaves nothing
    /// under `gpubench/ab/`. Cargo's outputs stay in the target directory.
    pub fn remove_crates(&self) {
        let _ = std::fs::remove_dir_all(&self.dir);
        if let Some(libs) = self.dir.parent() {
            let _ = std::fs::remove_dir(libs);
        }
    }
}

/// `name` with anything but ASCII letters, digits, `-` and `_` made `_`, for a
/// directory and package name.
fn path_safe(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Writes `text` to `path` unless it holds it already: an unchanged file keeps its
/// time, so cargo does not rebuild the library for nothing.
fn write_if_changed(path: &Path, text: &str) -> Result<(), LibraryError> {
    if std::fs::read_to_string(path).is_ok_and(|there| there == text) {
        return Ok(());
    }
    let err = |source| LibraryError::Write {
        path: path.display().to_string(),
        source,
    };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(err)?;
    }
    std::fs::write(path, text).map_err(err)
}
