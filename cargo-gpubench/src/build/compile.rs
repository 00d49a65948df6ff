//! Building bench targets with `cargo bench --no-run`, reading cargo's JSON messages
//! for the executables and the native library directories build scripts report.
//!
//! Cargo renders compiler diagnostics itself (`json-render-diagnostics`) on its
//! stderr, which is the user's, so warnings and errors look as they do in any build.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};

use cargo_metadata::{Message, TargetKind};
use thiserror::Error;

use crate::build::discover::{self, BenchTarget};
use crate::build::libtorch::Libtorch;

/// Errors building bench targets.
#[derive(Debug, Error)]
pub enum CompileError {
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
    /// The build failed; cargo printed why.
    #[error("cargo bench --no-run failed ({status}); the compiler's messages are above")]
    Failed {
        /// cargo's exit status.
        status: String,
    },
    /// The build succeeded but a bench target produced no executable.
    #[error("the build reported no executable for bench target `{target}` of package `{package}`")]
    MissingExecutable {
        /// The package.
        package: String,
        /// The target.
        target: String,
    },
}

/// A built bench executable.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct BenchExecutable {
    /// Its package, when built from a workspace.
    pub package: Option<String>,
    /// The bench target's name.
    pub target: String,
    /// The executable.
    pub path: PathBuf,
}

impl BenchExecutable {
    /// An executable given on the command line (`--exe`): its target name is the file
    /// name without cargo's `-<hash>` suffix.
    pub fn from_path(path: PathBuf) -> Self {
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let target = match stem.rsplit_once('-') {
            Some((name, hash))
                if hash.len() == 16 && hash.bytes().all(|b| b.is_ascii_hexdigit()) =>
            {
                name.to_string()
            }
            _ => stem,
        };
        BenchExecutable {
            package: None,
            target,
            path,
        }
    }
}

/// What a build produced.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BuildOutput {
    /// One executable per bench target, sorted.
    pub executables: Vec<BenchExecutable>,
    /// Native library directories from build scripts (`cargo:rustc-link-search`).
    pub native_paths: Vec<PathBuf>,
}

/// The `cargo bench --no-run` command for `targets` (`--quiet` with `-q`).
pub fn build_command(
    cargo: &Path,
    manifest_path: Option<&Path>,
    targets: &[BenchTarget],
) -> Command {
    let mut cmd = Command::new(cargo);
    cmd.args([
        "bench",
        "--no-run",
        "--message-format=json-render-diagnostics",
    ]);
    // `-q` keeps cargo's "Compiling" lines out too; its errors still show.
    if crate::console::get().quiet() {
        cmd.arg("--quiet");
    }
    if let Some(path) = manifest_path {
        cmd.arg("--manifest-path").arg(path);
    }
    let packages: BTreeSet<&str> = targets.iter().map(|t| t.package.as_str()).collect();
    for p in packages {
        cmd.args(["-p", p]);
    }
    let names: BTreeSet<&str> = targets.iter().map(|t| t.name.as_str()).collect();
    for n in names {
        cmd.args(["--bench", n]);
    }
    cmd
}

/// Runs the build, streaming cargo's diagnostics to stderr.
pub fn build(mut cmd: Command, targets: &[BenchTarget]) -> Result<BuildOutput, CompileError> {
    let cargo = cmd.get_program().to_string_lossy().into_owned();
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|source| CompileError::Spawn { cargo, source })?;
    let stdout = child.stdout.take().expect("stdout is piped");
    let parsed = parse_messages(BufReader::new(stdout), targets);
    let status = child.wait().map_err(CompileError::Read)?;
    let (output, success) = parsed.map_err(CompileError::Read)?;
    if !status.success() || success == Some(false) {
        return Err(CompileError::Failed {
            status: status.to_string(),
        });
    }
    for t in targets {
        let built = output
            .executables
            .iter()
            .any(|e| e.target == t.name && e.package.as_deref() == Some(t.package.as_str()));
        if !built {
            return Err(CompileError::MissingExecutable {
                package: t.package.clone(),
                target: t.name.clone(),
            });
        }
    }
    Ok(output)
}

/// Reads cargo's JSON messages: executables of `targets`, native library directories
/// of every build script, and whether the build finished successfully (`None` when
/// cargo did not say). Lines that are not messages are passed on to stderr.
pub fn parse_messages(
    reader: impl BufRead,
    targets: &[BenchTarget],
) -> std::io::Result<(BuildOutput, Option<bool>)> {
    let mut out = BuildOutput::default();
    let mut success = None;
    let mut native = BTreeSet::new();
    for message in Message::parse_stream(reader) {
        match message? {
            Message::CompilerArtifact(artifact) => {
                if !artifact.target.kind.contains(&TargetKind::Bench) {
                    continue;
                }
                let Some(exe) = artifact.executable else {
                    continue;
                };
                let wanted = targets.iter().find(|t| {
                    t.package_id == artifact.package_id.repr && t.name == artifact.target.name
                });
                if let Some(t) = wanted {
                    out.executables.push(BenchExecutable {
                        package: Some(t.package.clone()),
                        target: t.name.clone(),
                        path: exe.into_std_path_buf(),
                    });
                }
            }
            Message::BuildScriptExecuted(script) => {
                for p in script.linked_paths {
                    native.insert(strip_search_kind(p.as_str()));
                }
            }
            Message::BuildFinished(finished) => success = Some(finished.success),
            Message::TextLine(line) => eprintln!("{line}"),
            _ => {}
        }
    }
    out.executables.sort();
    out.executables.dedup();
    out.native_paths = native.into_iter().collect();
    Ok((out, success))
}

/// `native=/x` → `/x`: rustc's `-L KIND=PATH`, as cargo reports it.
pub(crate) fn strip_search_kind(path: &str) -> PathBuf {
    for kind in ["native=", "dependency=", "crate=", "framework=", "all="] {
        if let Some(rest) = path.strip_prefix(kind) {
            return PathBuf::from(rest);
        }
    }
    PathBuf::from(path)
}

/// Builds `workspace`'s bench targets, handing tch's build the libtorch the
/// benchmarks will load; returns the build and the libtorch handed over, or `None`
/// when interrupted.
pub fn build_workspace(
    manifest_path: Option<&Path>,
    workspace: &discover::Workspace,
    stop: &AtomicBool,
) -> anyhow::Result<Option<(BuildOutput, Option<Libtorch>)>> {
    use anyhow::Context;
    let mut cmd = build_command(&crate::build::cargo(), manifest_path, &workspace.targets);
    let libtorch = crate::build::libtorch::hand_to_the_build(&mut cmd, &workspace.root)?;
    for problem in &workspace.problems {
        crate::console::warning(format_args!("{problem}"));
    }
    if let Some(what) = first_build_note(&workspace.target_dir) {
        crate::console::status(format_args!("{what}"));
    }
    let built = build(cmd, &workspace.targets);
    if stop.load(Ordering::SeqCst) {
        return Ok(None);
    }
    Ok(Some((
        built.with_context(|| match workspace.problems.as_slice() {
            [] => "failed to build bench targets".to_string(),
            problems => format!(
                "failed to build bench targets; what to fix first:\n{}",
                problems.join("\n")
            ),
        })?,
        libtorch,
    )))
}

/// What a build in `target_dir` is about to spend its time on, when it has not built
/// tch's C++ bindings yet (no `torch-sys` build script has run for the bench
/// profile): the slow step of a first build, said before cargo goes quiet on it.
fn first_build_note(target_dir: &Path) -> Option<String> {
    let built = std::fs::read_dir(target_dir.join("release/build"))
        .into_iter()
        .flatten()
        .flatten()
        .any(|e| {
            e.file_name().to_string_lossy().starts_with("torch-sys-")
                && e.path().join("output").is_file()
        });
    (!built).then(|| {
        format!(
            "building the bench targets in {}: the first build compiles tch's C++ \
             bindings (torch-sys), which takes several minutes (about 10 on 2 cores); \
             later builds reuse them and take seconds",
            target_dir.display()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_first_build_says_it_compiles_tchs_bindings_and_a_later_one_does_not() {
        let dir = tempfile::tempdir().unwrap();
        let note = first_build_note(dir.path()).expect("nothing built yet");
        assert!(
            note.contains("torch-sys") && note.contains("minutes"),
            "{note}"
        );
        // A torch-sys whose build script has not finished is not built yet.
        let script = dir.path().join("release/build/torch-sys-0123abcd");
        std::fs::create_dir_all(&script).unwrap();
        assert!(first_build_note(dir.path()).is_some());
        std::fs::write(script.join("output"), "cargo:rustc-link-lib=torch\n").unwrap();
        assert_eq!(first_build_note(dir.path()), None);
    }

    fn target(package: &str, name: &str) -> BenchTarget {
        BenchTarget {
            package: package.into(),
            package_id: format!("path+file:///ws/{package}#0.1.0"),
            name: name.into(),
        }
    }

    fn artifact(package: &str, name: &str, kind: &str, exe: Option<&str>) -> String {
        serde_json::json!({
            "reason": "compiler-artifact",
            "package_id": format!("path+file:///ws/{package}#0.1.0"),
            "manifest_path": format!("/ws/{package}/Cargo.toml"),
            "target": {
                "name": name, "kind": [kind], "crate_types": ["bin"],
                "src_path": format!("/ws/{package}/benches/{name}.rs"), "edition": "2021",
                "doctest": false, "test": false, "doc": false
            },
            "profile": {"opt_level": "3", "debuginfo": 0, "debug_assertions": false,
                        "overflow_checks": false, "test": false},
            "features": [], "filenames": [exe.unwrap_or("/ws/target/release/deps/libx.rlib")],
            "executable": exe, "fresh": false
        })
        .to_string()
    }

    #[test]
    fn collects_bench_executables_and_native_paths() {
        let script = serde_json::json!({
            "reason": "build-script-executed",
            "package_id": "registry+https://github.com/rust-lang/crates.io-index#torch-sys@0.24.0",
            "linked_libs": ["torch_cpu"],
            "linked_paths": ["native=/venv/torch/lib", "/plain/dir"],
            "cfgs": [], "env": [], "out_dir": "/ws/target/release/build/torch-sys-1/out"
        })
        .to_string();
        let lines = [
            artifact("gpu", "gpu", "lib", None),
            script,
            artifact(
                "gpu",
                "matmul",
                "bench",
                Some("/ws/target/release/deps/matmul-0123456789abcdef"),
            ),
            // A bench of a package that was not selected (e.g. built as a dependency).
            artifact(
                "other",
                "x",
                "bench",
                Some("/ws/target/release/deps/x-0123456789abcdef"),
            ),
            "not json: passed on".to_string(),
            r#"{"reason":"build-finished","success":true}"#.to_string(),
        ];
        let input = lines.join("\n");
        let (out, success) = parse_messages(input.as_bytes(), &[target("gpu", "matmul")]).unwrap();
        assert_eq!(success, Some(true));
        assert_eq!(
            out.executables,
            [BenchExecutable {
                package: Some("gpu".into()),
                target: "matmul".into(),
                path: "/ws/target/release/deps/matmul-0123456789abcdef".into(),
            }]
        );
        assert_eq!(
            out.native_paths,
            [
                PathBuf::from("/plain/dir"),
                PathBuf::from("/venv/torch/lib")
            ]
        );
    }

    #[test]
    fn failed_build_is_reported_by_cargo_message() {
        let input = r#"{"reason":"build-finished","success":false}"#;
        let (_, success) = parse_messages(input.as_bytes(), &[]).unwrap();
        assert_eq!(success, Some(false));
    }

    #[test]
    fn build_command_selects_packages_and_targets() {
        let cmd = build_command(
            Path::new("cargo"),
            Some(Path::new("/ws/Cargo.toml")),
            &[target("gpu", "matmul"), target("gpu", "conv")],
        );
        let args: Vec<String> = cmd
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            args,
            [
                "bench",
                "--no-run",
                "--message-format=json-render-diagnostics",
                "--manifest-path",
                "/ws/Cargo.toml",
                "-p",
                "gpu",
                "--bench",
                "conv",
                "--bench",
                "matmul"
            ]
        );
    }

    #[test]
    fn executable_names_lose_cargos_hash() {
        let e = BenchExecutable::from_path("/x/matmul_bench-0123456789abcdef".into());
        assert_eq!(e.target, "matmul_bench");
        let e = BenchExecutable::from_path("/x/my-bench".into());
        assert_eq!(e.target, "my-bench");
    }
}
