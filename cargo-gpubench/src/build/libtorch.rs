//! Finding libtorch's shared libraries for benchmark processes, which load them at
//! run time, and putting their directory on the dynamic loader's search path.
//!
//! The search order is: the `LIBTORCH` environment variable (its `lib/`), the
//! `LIBTORCH` of the workspace's cargo configuration (`[env]`, which `cargo gpubench
//! setup` writes: [`crate::build::cargo_config`]), the project's virtual environment (`.venv/lib/python3*/site-packages/torch/lib`), the
//! one `cargo gpubench setup` makes in the user's cache ([`crate::build::setup`]), a `torch`
//! importable by `python3`, the native library directories build scripts reported,
//! and finally the loader path already set. The first directory that holds
//! `libtorch_cpu` wins. `cargo gpubench` searches before it builds, too, and hands
//! what it found to the build as `LIBTORCH` (tch's build needs it).

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;

use thiserror::Error;

use crate::build::cargo_config::{configured_libtorch, ConfiguredLibtorch};

/// The version of libtorch the workspace pins (tch 0.24).
pub const LIBTORCH_VERSION: &str = "2.11.0";

/// Errors finding libtorch.
#[derive(Debug, Error)]
pub enum LibtorchError {
    /// `LIBTORCH` is set but does not point at a libtorch.
    #[error("LIBTORCH is set to {dir} but {lib} has no libtorch_cpu library: point it at a libtorch {LIBTORCH_VERSION} directory (the one containing lib/)")]
    BadEnv {
        /// The value of `LIBTORCH`.
        dir: String,
        /// The directory searched.
        lib: String,
    },
    /// The cargo configuration's `[env] LIBTORCH` does not point at a libtorch.
    #[error("{file} sets LIBTORCH to {dir}, which has no lib/ with libtorch_cpu: run `cargo gpubench setup` again, or fix or remove that line")]
    BadConfig {
        /// The configuration file.
        file: String,
        /// The value.
        dir: String,
    },
    /// Nothing found.
    #[error("failed to find libtorch {LIBTORCH_VERSION} (searched: {searched}): tch builds against it and benchmarks load it. Run `cargo gpubench setup` (installs PyTorch's libtorch {LIBTORCH_VERSION} into your cache, once, about 5 GB), or `pip install torch=={LIBTORCH_VERSION}` for python3, or set LIBTORCH to a libtorch {LIBTORCH_VERSION} directory")]
    NotFound {
        /// Where it looked.
        searched: String,
    },
}

/// Where libtorch was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LibtorchSource {
    /// The `LIBTORCH` environment variable.
    Env,
    /// `[env] LIBTORCH` of the workspace's cargo configuration, which cargo hands
    /// to builds itself.
    CargoConfig,
    /// The project's `.venv`.
    Venv,
    /// The virtual environment of `cargo gpubench setup`.
    Setup,
    /// `python3 -c "import torch"`.
    Python,
    /// A build script's native library directory.
    BuildScript,
    /// The loader path already set in the environment.
    LoaderPath,
}

impl fmt::Display for LibtorchSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LibtorchSource::Env => "LIBTORCH",
            LibtorchSource::CargoConfig => "the workspace's .cargo/config.toml",
            LibtorchSource::Venv => "the project's .venv",
            LibtorchSource::Setup => "cargo gpubench setup",
            LibtorchSource::Python => "python3's torch",
            LibtorchSource::BuildScript => "a build script's library path",
            LibtorchSource::LoaderPath => loader_path_var(),
        })
    }
}

/// A libtorch library directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Libtorch {
    /// The directory holding `libtorch_cpu`.
    pub lib_dir: PathBuf,
    /// How it was found.
    pub source: LibtorchSource,
}

impl Libtorch {
    /// The libtorch directory (the one holding `lib/` and `include/`): what `LIBTORCH`
    /// names, for tch's build.
    pub fn root(&self) -> Option<&Path> {
        let root = self.lib_dir.parent()?;
        root.join("include").is_dir().then_some(root)
    }
}

/// `venv`'s `torch/lib`, when it holds libtorch.
pub fn venv_torch_lib(venv: &Path) -> Option<PathBuf> {
    let mut pythons: Vec<PathBuf> = std::fs::read_dir(venv.join("lib"))
        .ok()?
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with("python3"))
        .map(|e| e.path())
        .collect();
    pythons.sort();
    pythons
        .into_iter()
        .map(|py| py.join("site-packages").join("torch").join("lib"))
        .find(|lib| has_libtorch(lib))
}

/// What to search.
#[derive(Debug, Clone, Default)]
pub struct Search {
    /// The value of `LIBTORCH`.
    pub libtorch_env: Option<OsString>,
    /// `[env] LIBTORCH` of the cargo configuration of the first `venv_roots`.
    pub configured: Option<ConfiguredLibtorch>,
    /// Directories that may hold a `.venv` (the workspace root, or the current
    /// directory with `--exe`).
    pub venv_roots: Vec<PathBuf>,
    /// The virtual environment of `cargo gpubench setup`, when a cache is known.
    pub setup_venv: Option<PathBuf>,
    /// The python interpreter to ask, `None` to skip.
    pub python: Option<OsString>,
    /// Native library directories build scripts reported.
    pub native_paths: Vec<PathBuf>,
    /// The loader path variable's current value.
    pub loader_path: Option<OsString>,
}

impl Search {
    /// The search for this process's environment.
    pub fn from_env(venv_roots: Vec<PathBuf>, native_paths: Vec<PathBuf>) -> Self {
        Search {
            libtorch_env: std::env::var_os("LIBTORCH").filter(|v| !v.is_empty()),
            configured: venv_roots.first().and_then(|r| configured_libtorch(r)),
            venv_roots,
            setup_venv: setup_venv(),
            python: Some("python3".into()),
            native_paths,
            loader_path: std::env::var_os(loader_path_var()),
        }
    }
}

/// Finds libtorch's library directory.
pub fn locate(search: &Search) -> Result<Libtorch, LibtorchError> {
    let found = |lib_dir: PathBuf, source| Libtorch { lib_dir, source };
    let mut searched = Vec::new();

    if let Some(dir) = &search.libtorch_env {
        let lib = Path::new(dir).join("lib");
        if has_libtorch(&lib) {
            return Ok(found(lib, LibtorchSource::Env));
        }
        return Err(LibtorchError::BadEnv {
            dir: Path::new(dir).display().to_string(),
            lib: lib.display().to_string(),
        });
    }
    searched.push("LIBTORCH (unset)".to_string());

    if let Some(c) = &search.configured {
        let lib = c.dir.join("lib");
        if has_libtorch(&lib) {
            return Ok(found(lib, LibtorchSource::CargoConfig));
        }
        return Err(LibtorchError::BadConfig {
            file: c.file.display().to_string(),
            dir: c.dir.display().to_string(),
        });
    }

    for root in &search.venv_roots {
        let venv = root.join(".venv");
        searched.push(format!(
            "{}",
            venv.join("lib/python3*/site-packages/torch/lib").display()
        ));
        if let Some(lib) = venv_torch_lib(&venv) {
            return Ok(found(lib, LibtorchSource::Venv));
        }
    }

    if let Some(venv) = &search.setup_venv {
        searched.push(format!("{} (cargo gpubench setup)", venv.display()));
        if let Some(lib) = venv_torch_lib(venv) {
            return Ok(found(lib, LibtorchSource::Setup));
        }
    }

    if let Some(python) = &search.python {
        searched.push(format!("{}'s torch", python.to_string_lossy()));
        if let Some(torch_dir) = python_torch_dir(python) {
            let lib = torch_dir.join("lib");
            if has_libtorch(&lib) {
                return Ok(found(lib, LibtorchSource::Python));
            }
        }
    }

    searched.push("build-script library paths".to_string());
    if let Some(lib) = search.native_paths.iter().find(|p| has_libtorch(p)) {
        return Ok(found(lib.clone(), LibtorchSource::BuildScript));
    }

    searched.push(loader_path_var().to_string());
    if let Some(path) = &search.loader_path {
        if let Some(lib) = std::env::split_paths(path).find(|p| has_libtorch(p)) {
            return Ok(found(lib, LibtorchSource::LoaderPath));
        }
    }

    Err(LibtorchError::NotFound {
        searched: searched.join(", "),
    })
}

/// Whether `dir` holds libtorch's CPU library.
pub fn has_libtorch(dir: &Path) -> bool {
    ["libtorch_cpu.so", "libtorch_cpu.dylib", "torch_cpu.dll"]
        .iter()
        .any(|f| dir.join(f).is_file())
}

/// The environment variable the dynamic loader searches.
pub fn loader_path_var() -> &'static str {
    if cfg!(target_os = "macos") {
        "DYLD_LIBRARY_PATH"
    } else if cfg!(windows) {
        "PATH"
    } else {
        "LD_LIBRARY_PATH"
    }
}

/// `dirs` in front of `existing`, without repeating a directory.
pub fn prepend_paths(dirs: &[PathBuf], existing: Option<&OsStr>) -> OsString {
    let mut all: Vec<PathBuf> = Vec::new();
    let rest = existing.map(|e| std::env::split_paths(e).collect::<Vec<_>>());
    for p in dirs.iter().cloned().chain(rest.into_iter().flatten()) {
        if !p.as_os_str().is_empty() && !all.contains(&p) {
            all.push(p);
        }
    }
    std::env::join_paths(all).unwrap_or_else(|_| existing.unwrap_or_default().to_owned())
}

fn python_torch_dir(python: &OsStr) -> Option<PathBuf> {
    let out = Command::new(python)
        .args([
            "-c",
            "import torch, os; print(os.path.dirname(torch.__file__))",
        ])
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let dir = String::from_utf8(out.stdout).ok()?;
    let dir = dir.trim();
    (!dir.is_empty()).then(|| PathBuf::from(dir))
}

/// The cache directory gpubench keeps its libtorch in, when a home is known.
pub fn cache_dir() -> Option<PathBuf> {
    let from = |var: &str| std::env::var_os(var).filter(|v| !v.is_empty());
    if let Some(dir) = from("GPUBENCH_CACHE_DIR") {
        return Some(PathBuf::from(dir));
    }
    let base = from("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| from("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("gpubench"))
}

/// The virtual environment `cargo gpubench setup` installs libtorch into, when a
/// cache directory is known.
pub fn setup_venv() -> Option<PathBuf> {
    cache_dir().map(|c| c.join(format!("torch-{LIBTORCH_VERSION}")))
}

/// libtorch's version from the files beside its `lib/`: the pip wheel's
/// `version.py` (`__version__ = '2.11.0+cu130'`) or a libtorch archive's
/// `build-version`.
pub fn libtorch_version(lib_dir: &Path) -> Option<String> {
    let root = lib_dir.parent()?;
    if let Ok(text) = std::fs::read_to_string(root.join("version.py")) {
        let line = text.lines().find(|l| l.starts_with("__version__"))?;
        let value = line.split_once('=')?.1.trim();
        return Some(value.trim_matches(|c| c == '\'' || c == '"').to_string());
    }
    std::fs::read_to_string(root.join("build-version"))
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// tch's build needs `LIBTORCH` (or the like) to find libtorch. When none of tch's
/// own variables is set, the libtorch that benchmarks would load is looked up before
/// building and handed to the build (unless the workspace's cargo configuration
/// names it, which cargo hands over itself), so a workspace builds with no environment set;
/// when there is none, the run stops here with the one command that sets it up.
/// Returns what it handed over, which the benchmarks then load too.
pub fn hand_to_the_build(
    cmd: &mut std::process::Command,
    root: &std::path::Path,
) -> anyhow::Result<Option<Libtorch>> {
    use anyhow::Context;
    let own = [
        "LIBTORCH",
        "LIBTORCH_USE_PYTORCH",
        "LIBTORCH_LIB",
        "LIBTORCH_INCLUDE",
    ];
    if own
        .iter()
        .any(|v| std::env::var_os(v).is_some_and(|x| !x.is_empty()))
    {
        return Ok(None);
    }
    let found = locate(&Search::from_env(vec![root.to_path_buf()], vec![]))
        .context("failed to find the libtorch to build tch against")?;
    match found.root() {
        // Cargo hands the configuration's `[env]` to the build itself, as it does
        // for plain `cargo bench`: the same environment, so nothing rebuilds.
        _ if found.source == LibtorchSource::CargoConfig => {}
        Some(dir) => {
            cmd.env("LIBTORCH", dir);
        }
        None => crate::console::note(format_args!(
            "{} (from {}) has no include/ beside it; tch's build must find libtorch by itself",
            found.lib_dir.display(),
            found.source
        )),
    }
    Ok(Some(found))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_libtorch(dir: &Path) -> PathBuf {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join("libtorch_cpu.so"), b"").unwrap();
        dir.to_path_buf()
    }

    fn nothing() -> Search {
        Search {
            python: None,
            ..Search::default()
        }
    }

    #[test]
    fn libtorch_env_wins_and_a_bad_one_is_an_error() {
        let tmp = tempfile::tempdir().unwrap();
        let lib = fake_libtorch(&tmp.path().join("libtorch/lib"));
        let venv = fake_libtorch(
            &tmp.path()
                .join("ws/.venv/lib/python3.12/site-packages/torch/lib"),
        );
        let search = Search {
            libtorch_env: Some(tmp.path().join("libtorch").into()),
            venv_roots: vec![tmp.path().join("ws")],
            ..nothing()
        };
        assert_eq!(
            locate(&search).unwrap(),
            Libtorch {
                lib_dir: lib,
                source: LibtorchSource::Env
            }
        );
        let bad = Search {
            libtorch_env: Some(tmp.path().join("nowhere").into()),
            ..search
        };
        let err = locate(&bad).unwrap_err();
        assert!(err.to_string().contains("nowhere"), "{err}");
        // Without LIBTORCH the venv is found.
        let search = Search {
            venv_roots: vec![tmp.path().join("ws")],
            ..nothing()
        };
        assert_eq!(locate(&search).unwrap().lib_dir, venv);
        assert_eq!(locate(&search).unwrap().source, LibtorchSource::Venv);
    }

    #[test]
    fn the_cargo_configs_libtorch_comes_after_the_variable_and_before_the_venv() {
        let tmp = tempfile::tempdir().unwrap();
        let configured = fake_libtorch(&tmp.path().join("configured/lib"));
        fake_libtorch(
            &tmp.path()
                .join("ws/.venv/lib/python3.12/site-packages/torch/lib"),
        );
        let search = Search {
            configured: Some(ConfiguredLibtorch {
                dir: tmp.path().join("configured"),
                file: tmp.path().join("ws/.cargo/config.toml"),
            }),
            venv_roots: vec![tmp.path().join("ws")],
            ..nothing()
        };
        let found = locate(&search).unwrap();
        assert_eq!(
            (found.lib_dir, found.source),
            (configured, LibtorchSource::CargoConfig)
        );
        let env = fake_libtorch(&tmp.path().join("env/lib"));
        let with_env = Search {
            libtorch_env: Some(tmp.path().join("env").into()),
            ..search.clone()
        };
        assert_eq!(locate(&with_env).unwrap().lib_dir, env);
        // A stale one is an error that names the file.
        let stale = Search {
            configured: Some(ConfiguredLibtorch {
                dir: tmp.path().join("gone"),
                file: tmp.path().join("ws/.cargo/config.toml"),
            }),
            ..search
        };
        let err = locate(&stale).unwrap_err().to_string();
        assert!(
            err.contains("ws/.cargo/config.toml") && err.contains("gone"),
            "{err}"
        );
    }

    #[test]
    fn build_script_paths_then_loader_path() {
        let tmp = tempfile::tempdir().unwrap();
        let a = fake_libtorch(&tmp.path().join("a"));
        let b = fake_libtorch(&tmp.path().join("b"));
        let search = Search {
            native_paths: vec![tmp.path().join("empty"), a.clone()],
            loader_path: Some(std::env::join_paths([&b]).unwrap()),
            ..nothing()
        };
        assert_eq!(locate(&search).unwrap().lib_dir, a);
        let search = Search {
            loader_path: Some(std::env::join_paths([&b]).unwrap()),
            ..nothing()
        };
        assert_eq!(locate(&search).unwrap().source, LibtorchSource::LoaderPath);
    }

    #[test]
    fn not_found_says_how_to_install() {
        let err = locate(&nothing()).unwrap_err().to_string();
        assert!(err.contains("cargo gpubench setup"), "{err}");
        assert!(err.contains("pip install torch==2.11.0"), "{err}");
    }

    #[test]
    fn prepending_keeps_order_and_drops_repeats() {
        let joined = prepend_paths(
            &["/t/lib".into(), "/n".into()],
            Some(OsStr::new("/n:/usr/lib")),
        );
        assert_eq!(joined, OsString::from("/t/lib:/n:/usr/lib"));
        assert_eq!(prepend_paths(&["/t".into()], None), OsString::from("/t"));
    }
}
