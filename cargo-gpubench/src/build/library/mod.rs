//! A revision's bench targets built as loadable libraries for `cargo gpubench ab`:
//! each bench target becomes a `cdylib` crate that includes its source and exports
//! the C entry points of [`gpubench_record::paired`], so a driver process can load
//! base and head side by side. A bench executable cannot be loaded that way (tch's
//! C++ error slot is a thread-local whose TLS model is wrong in an executable
//! loaded as a library); a `cdylib` can.
//!
//! | step | where |
//! |---|---|
//! | read the revision, write the crates: [`prepare`] → [`LibraryPlan`] | here, [`manifest`] |
//! | build them: [`LibraryPlan::command`], [`LibraryPlan::build`] → [`LibraryBuild`] | here, [`messages`] |
//! | when pairing in one process cannot work: bench executables | [`fallback`] |
//! | copy them out for one run, under the target directory's build lock | [`run_copy`] |
//! | carry them to a machine without cargo | [`export`] |
//!
//! The crates of one revision form a workspace of their own under the target
//! directory, written by every `ab` under the build lock and removed once built
//! ([`LibraryPlan::remove_crates`]):
//!
//! ```text
//! <target-dir>/gpubench/ab/libs/<revision-key>/   `working-tree` or 12 hex digits
//!     Cargo.toml             [workspace] of the members, with the revision's
//!                            [patch], [replace] and [profile] and its resolver
//!     Cargo.lock             the revision's, so versions resolve as its build does
//!     <package>-<target>/
//!         Cargo.toml         package gpubench-ab-<revision-key>-<package>-<target>
//!         lib.rs             #[path = "<bench source>"] mod bench; export_paired!()
//! ```
//!
//! They are built with `cargo build --profile bench` (the profile `cargo bench`
//! uses) into the workspace's own target directory, so both revisions reuse the
//! dependency builds a run made (tch and torch-sys take minutes); the package name
//! carries the revision key so the two revisions' libraries are different files.
//! Cargo runs in the revision's workspace root, so its `.cargo/config.toml` applies.
//!
//! A bench source included as a module behaves as it does as a crate root, with
//! these exceptions, which fail the library's build or change what the code reads
//! (then `ab` falls back to separate processes, [`fallback`]):
//! * `crate::` paths name the library's root, not the bench file's: a bench whose
//!   modules reach each other through `crate::` does not compile as a library.
//! * `env!`/`option_env!` read cargo's variables about the package
//!   (`CARGO_MANIFEST_DIR`, `CARGO_PKG_*`, `CARGO_CRATE_NAME`) as the bench target
//!   sees them (`lib.rs` shadows those macros), but `std::env!` written out, other
//!   variables, and `OUT_DIR` of the package's build script read the library's.
//! * Crate-level attributes of the bench file (`#![feature]`, `#![no_std]`) do not
//!   apply to the crate.
//! * The package's features are the default ones, as in `cargo bench` without
//!   `--features`.

pub mod export;
pub mod fallback;
pub mod manifest;
pub mod messages;
pub mod run_copy;

use std::io::{BufReader, IsTerminal};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use cargo_metadata::TargetKind;
use thiserror::Error;

use crate::build::discover::{self, DiscoverError};
use crate::build::revision::Revision;
use messages::CompilerError;

/// Where the libraries' crates go, under the target directory.
pub const LIBS_DIR: &str = "gpubench/ab/libs";

/// Why a revision's bench targets could not be built as libraries. All of them
/// leave separate processes ([`fallback`]) as the way to measure the revision;
/// [`LibraryError::PredatesPairing`] is the one that says so by design.
#[derive(Debug, Error)]
pub enum LibraryError {
    /// The revision's workspace could not be read or has no bench target to pair.
    #[error("failed to read the bench targets of the {revision}: {source}")]
    Discover {
        /// [`Revision::describe`].
        revision: String,
        /// The cause.
        source: DiscoverError,
    },
    /// The revision's root `Cargo.toml` could not be read as TOML.
    #[error("failed to read {path} of the {revision}: {reason}")]
    RootManifest {
        /// [`Revision::describe`].
        revision: String,
        /// The manifest.
        path: String,
        /// What is wrong.
        reason: String,
    },
    /// A generated file could not be written.
    #[error("failed to write {path}: {source}; check that the target directory is writable")]
    Write {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// cargo could not be started.
    #[error("failed to run {cargo}: {source}")]
    Spawn {
        /// The cargo executable.
        cargo: String,
        /// The cause.
        source: std::io::Error,
    },
    /// cargo's output could not be read.
    #[error("failed to read cargo's build messages: {0}")]
    Read(#[source] std::io::Error),
    /// The revision's gpubench-core has no `export_paired`.
    #[error("failed to build bench target `{target}` of the {revision} as a library: the {role}'s gpubench-core predates pairing in one process ({message}); update gpubench-core there to pair in one process")]
    PredatesPairing {
        /// [`Revision::describe`].
        revision: String,
        /// `base` or `head`.
        role: &'static str,
        /// The bench target.
        target: String,
        /// The compiler's message.
        message: String,
    },
    /// Any other failed build.
    #[error("failed to build the bench targets of the {revision} as libraries (cargo: {status}): {summary}")]
    Failed {
        /// [`Revision::describe`].
        revision: String,
        /// cargo's exit status.
        status: String,
        /// The first error's message, and how many more there were.
        summary: String,
        /// Every error as the compiler rendered it.
        errors: Vec<String>,
        /// Everything the build said ([`messages::Parsed::shown`]), not shown yet:
        /// the caller shows it when building the same code otherwise does not.
        shown: String,
    },
    /// The build succeeded without one of the libraries.
    #[error("the library build of the {revision} reported no library for bench target `{target}` of package `{package}`")]
    MissingLibrary {
        /// [`Revision::describe`].
        revision: String,
        /// The package.
        package: String,
        /// The target.
        target: String,
    },
}

impl LibraryError {
    /// What a failed build said and has not shown, when it is a compiler failure.
    pub fn unshown(&self) -> Option<&str> {
        match self {
            LibraryError::Failed { shown, .. } => Some(shown),
            _ => None,
        }
    }

    /// Whether the revision's gpubench-core cannot pair in one process at all.
    pub fn predates_pairing(&self) -> bool {
        matches!(self, LibraryError::PredatesPairing { .. })
    }
}

/// A bench target built as a loadable library.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct BenchLibrary {
    /// Its package.
    pub package: String,
    /// The bench target's name.
    pub target: String,
    /// The `cdylib`, for [`crate::execute::paired::library::PairedLibrary::load`].
    pub path: PathBuf,
}

/// What building a revision's libraries produced.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LibraryBuild {
    /// One library per bench target, sorted.
    pub libraries: Vec<BenchLibrary>,
    /// Native library directories from build scripts (libtorch's among them), for
    /// the loader path of the process that loads the libraries.
    pub native_paths: Vec<PathBuf>,
}

impl LibraryBuild {
    /// Removes the libraries cargo built (the file it reported, the one under
    /// `deps/` it was copied from, and their dep-info), once a run has its own
    /// copies: the next `ab` writes the crates again and builds them anew, so they
    /// would only pile up in the target directory, one set per base revision.
    pub fn remove_outputs(&self) {
        for lib in &self.libraries {
            let (Some(dir), Some(name), Some(stem)) = (
                lib.path.parent(),
                lib.path
                    .file_name()
                    .map(|s| s.to_string_lossy().into_owned()),
                lib.path
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned()),
            ) else {
                continue;
            };
            let deps = dir.join("deps");
            let ext = name.strip_prefix(&stem).unwrap_or_default().to_string();
            let mut files = vec![
                lib.path.clone(),
                dir.join(format!("{stem}.d")),
                deps.join(&name),
                deps.join(format!("{stem}.d")),
            ];
            // A library cargo names with its metadata hash: `<stem>-<hex><ext>`.
            for entry in std::fs::read_dir(&deps).into_iter().flatten().flatten() {
                let file = entry.file_name().to_string_lossy().into_owned();
                let hashed = file
                    .strip_prefix(&format!("{stem}-"))
                    .and_then(|rest| rest.strip_suffix(&ext))
                    .is_some_and(|hash| hash.chars().all(|c| c.is_ascii_hexdigit()));
                if hashed {
                    files.push(entry.path());
                }
            }
            for file in files {
                let _ = std::fs::remove_file(file);
            }
        }
    }
}

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
    role: &'static str,
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
    /// `cargo build --profile bench` of the crates into the shared target directory,
    /// run in the revision's root. Set what tch's build needs (`LIBTORCH`) on it.
    pub fn command(&self, cargo: &Path) -> Command {
        let format = if std::io::stderr().is_terminal() {
            "json-diagnostic-rendered-ansi"
        } else {
            "json"
        };
        let mut cmd = Command::new(cargo);
        cmd.args(["build", "--profile", "bench", "--workspace"])
            .arg(format!("--message-format={format}"))
            .arg("--manifest-path")
            .arg(self.dir.join("Cargo.toml"))
            .current_dir(&self.revision_root)
            .env("CARGO_TARGET_DIR", &self.target_dir);
        cmd
    }

    /// Removes the crates [`prepare`] wrote (and `libs/` when that leaves it
    /// empty): the next `ab` writes them again, and a finished one leaves nothing
    /// under `gpubench/ab/`. Cargo's outputs stay in the target directory.
    pub fn remove_crates(&self) {
        let _ = std::fs::remove_dir_all(&self.dir);
        if let Some(libs) = self.dir.parent() {
            let _ = std::fs::remove_dir(libs);
        }
    }

    /// Runs `cmd` (from [`command`](Self::command)), showing cargo's progress and
    /// the compiler's messages on stderr; one library per planned crate.
    pub fn build(&self, mut cmd: Command) -> Result<LibraryBuild, LibraryError> {
        let cargo = cmd.get_program().to_string_lossy().into_owned();
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|source| LibraryError::Spawn { cargo, source })?;
        let stdout = child.stdout.take().expect("stdout is piped");
        let crates: Vec<String> = self
            .libraries
            .iter()
            .map(|l| l.crate_name.clone())
            .collect();
        let parsed = messages::parse(BufReader::new(stdout), &crates);
        let status = child.wait().map_err(LibraryError::Read)?;
        let parsed = parsed.map_err(LibraryError::Read)?;
        if !status.success() || parsed.success == Some(false) {
            return Err(self.failure(status.to_string(), &parsed.errors, parsed.shown));
        }
        eprint!("{}", parsed.shown);
        let mut libraries = Vec::new();
        for l in &self.libraries {
            let path = parsed.libraries.get(&l.crate_name).ok_or_else(|| {
                LibraryError::MissingLibrary {
                    revision: self.revision.clone(),
                    package: l.package.clone(),
                    target: l.target.clone(),
                }
            })?;
            libraries.push(BenchLibrary {
                package: l.package.clone(),
                target: l.target.clone(),
                path: path.clone(),
            });
        }
        libraries.sort();
        Ok(LibraryBuild {
            libraries,
            native_paths: parsed.native_paths,
        })
    }

    /// Why the build failed: a gpubench-core without `export_paired`, else the
    /// compiler's errors.
    fn failure(&self, status: String, errors: &[CompilerError], shown: String) -> LibraryError {
        if let Some(e) = errors.iter().find(|e| e.predates_pairing()) {
            let target = self
                .libraries
                .iter()
                .find(|l| e.library.as_ref() == Some(&l.crate_name))
                .map(|l| l.target.clone())
                .unwrap_or_default();
            return LibraryError::PredatesPairing {
                revision: self.revision.clone(),
                role: self.role,
                target,
                message: e.message.clone(),
            };
        }
        let summary = match errors {
            [] => "cargo reported no compiler error".to_string(),
            [one] => one.message.clone(),
            [first, rest @ ..] => format!(
                "{} (and {} more error{})",
                first.message,
                rest.len(),
                crate::format::plural(rest.len())
            ),
        };
        LibraryError::Failed {
            revision: self.revision.clone(),
            status,
            summary,
            errors: errors.iter().map(|e| e.rendered.clone()).collect(),
            shown,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> LibraryPlan {
        LibraryPlan {
            revision: "base (1a2b3c4)".into(),
            role: "base",
            revision_root: "/wt/1a2b/ws".into(),
            dir: "/ws/target/gpubench/ab/libs/1a2b3c4d5e6f".into(),
            target_dir: "/ws/target".into(),
            libraries: vec![PlannedLibrary {
                package: "gpu".into(),
                target: "matmul".into(),
                crate_name: "gpubench_ab_1a2b3c4d5e6f_gpu_matmul".into(),
                dir: "/ws/target/gpubench/ab/libs/1a2b3c4d5e6f/gpu-matmul".into(),
            }],
        }
    }

    fn error(library: Option<&str>, message: &str) -> CompilerError {
        CompilerError {
            library: library.map(str::to_string),
            message: message.into(),
            rendered: format!("error: {message}\n"),
        }
    }

    #[test]
    fn a_core_without_export_paired_is_told_apart_from_other_failures() {
        let p = plan();
        let lib = Some("gpubench_ab_1a2b3c4d5e6f_gpu_matmul");
        let err = p.failure(
            "exit status: 101".into(),
            &[
                error(lib, "unused import"),
                error(lib, "cannot find `export_paired` in `gpubench_core`"),
            ],
            String::new(),
        );
        assert!(err.predates_pairing());
        assert_eq!(
            err.to_string(),
            "failed to build bench target `matmul` of the base (1a2b3c4) as a library: the \
             base's gpubench-core predates pairing in one process (cannot find \
             `export_paired` in `gpubench_core`); update gpubench-core there to pair in one \
             process"
        );

        let err = p.failure(
            "exit status: 101".into(),
            &[
                error(lib, "failed to resolve: unresolved import `crate::common`"),
                error(None, "mismatched types"),
            ],
            "error: mismatched types\n".into(),
        );
        assert!(!err.predates_pairing());
        assert_eq!(
            err.to_string(),
            "failed to build the bench targets of the base (1a2b3c4) as libraries (cargo: exit \
             status: 101): failed to resolve: unresolved import `crate::common` (and 1 more \
             error)"
        );
        assert_eq!(
            err.unshown(),
            Some("error: mismatched types\n"),
            "what the build said is held for the caller to show once"
        );
        let LibraryError::Failed { errors, .. } = err else {
            unreachable!()
        };
        assert_eq!(
            errors.len(),
            2,
            "every rendered error is kept for the caller"
        );
    }

    #[test]
    fn a_built_library_is_removed_with_its_copy_under_deps_and_nothing_else() {
        let tmp = tempfile::tempdir().unwrap();
        let release = tmp.path().join("release");
        std::fs::create_dir_all(release.join("deps")).unwrap();
        let name = "libgpubench_ab_1a2b3c4d5e6f_p_t";
        let ours = [
            release.join(format!("{name}.so")),
            release.join(format!("{name}.d")),
            release.join(format!("deps/{name}.so")),
            release.join(format!("deps/{name}-0123abcd.so")),
        ];
        let others = [
            release.join(format!("deps/{name}_other-0123abcd.so")),
            release.join(format!("deps/{name}_other.so")),
            release.join("deps/libtch-0123abcd.rlib"),
        ];
        for f in ours.iter().chain(&others) {
            std::fs::write(f, "").unwrap();
        }
        LibraryBuild {
            libraries: vec![BenchLibrary {
                package: "p".into(),
                target: "t".into(),
                path: ours[0].clone(),
            }],
            native_paths: Vec::new(),
        }
        .remove_outputs();
        assert!(ours.iter().all(|f| !f.exists()));
        assert!(
            others.iter().all(|f| f.exists()),
            "only the library's own files"
        );
    }

    #[test]
    fn the_build_uses_the_bench_profile_the_shared_target_dir_and_the_revisions_config() {
        let cmd = plan().command(Path::new("cargo"));
        let args: Vec<String> = cmd
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(&args[..4], ["build", "--profile", "bench", "--workspace"]);
        assert!(args[4].starts_with("--message-format=json"));
        assert_eq!(
            &args[5..],
            [
                "--manifest-path",
                "/ws/target/gpubench/ab/libs/1a2b3c4d5e6f/Cargo.toml"
            ]
        );
        assert_eq!(cmd.get_current_dir(), Some(Path::new("/wt/1a2b/ws")));
        let target = cmd
            .get_envs()
            .find(|(k, _)| *k == "CARGO_TARGET_DIR")
            .and_then(|(_, v)| v);
        assert_eq!(target, Some(std::ffi::OsStr::new("/ws/target")));
    }
}
