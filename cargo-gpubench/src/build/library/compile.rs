//! A revision's library crates built with `cargo build --profile bench` into the
//! workspace's target directory, and what the build made or why it failed.

use std::io::{BufReader, IsTerminal};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::messages::{self, CompilerError};
use super::{BenchLibrary, LibraryError, LibraryPlan};

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build::library::PlannedLibrary;

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
