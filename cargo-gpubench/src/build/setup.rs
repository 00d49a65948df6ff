//! What `cargo gpubench setup` installs: the libtorch this build needs, where
//! `cargo gpubench` looks for it, so a workspace builds and runs without any environment
//! set by hand. libtorch comes from PyPI's `torch` wheel (it ships the libraries and
//! headers, for the CPU and CUDA 13) in a virtual environment under the user's cache:
//!
//! ```text
//! <cache>/gpubench/torch-<version>/            the virtual environment
//! <cache>/gpubench/torch-<version>/.installed  written once pip succeeded
//! ```
//!
//! where `<cache>` is `GPUBENCH_CACHE_DIR`, else `XDG_CACHE_HOME`, else `~/.cache`.
//! A libtorch of the right version already at hand (`LIBTORCH`, the project's
//! `.venv`, python3's torch) with the CUDA headers is used instead of a second copy.
//! Run in a workspace, it then writes that libtorch into the workspace's
//! `.cargo/config.toml` ([`crate::build::cargo_config`]), so plain `cargo bench` and
//! `cargo test` build and run with it too, in the same environment as `cargo
//! gpubench`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::build::cargo_config;
use crate::build::libtorch::{self, LibtorchSource, LIBTORCH_VERSION};
use crate::exit_code::UsageError;

/// The wheel whose `crt/` headers the torch wheel's CUDA headers include but do not
/// ship: with them the kernel-timing shim is built.
pub const CUDA_CRT_WHEEL: &str = "nvidia-cuda-crt==13.0.88";

/// PyTorch's index of CPU-only wheels: the same libtorch without the CUDA libraries.
pub const CPU_WHEELS: &str = "https://download.pytorch.org/whl/cpu";

/// The marker of a finished installation.
const MARKER: &str = ".installed";

/// Whether `venv` holds a finished installation.
pub fn is_installed(venv: &Path) -> bool {
    venv.join(MARKER).is_file()
}

/// What `cargo gpubench setup` is asked to do.
#[derive(Debug, Clone)]
pub struct SetupOptions {
    /// The virtual environment to make, or the default one in the cache.
    pub venv: Option<PathBuf>,
    /// The Python that makes it.
    pub python: OsString,
    /// Leave out the CUDA headers wheel.
    pub no_cuda_headers: bool,
    /// Install again even when it is there or a libtorch is at hand.
    pub force: bool,
    /// Use this libtorch and install nothing.
    pub libtorch: Option<PathBuf>,
    /// Leave the workspace's `.cargo/config.toml` alone.
    pub no_cargo_config: bool,
}

/// The libtorch directory (the one holding `lib/` and `include/`) this setup ends
/// with: `--libtorch`, one already at hand, or the virtual environment installed.
pub fn libtorch_root(args: &SetupOptions) -> Result<PathBuf> {
    if let Some(dir) = &args.libtorch {
        // Canonical, so `.cargo/config.toml` names the directory itself and not
        // `ws/../torch`; one that does not exist is refused just below.
        let dir = std::fs::canonicalize(dir)
            .or_else(|_| std::path::absolute(dir))
            .with_context(|| format!("failed to resolve {}", dir.display()))?;
        if !libtorch::has_libtorch(&dir.join("lib")) || !dir.join("include").is_dir() {
            bail!(
                "--libtorch {}: not a libtorch directory (it needs lib/ with libtorch_cpu and \
                 include/; a torch package's directory, e.g. .venv/lib/python3.*/site-packages/torch)",
                dir.display()
            );
        }
        match torch_version(&dir) {
            Some(v) if v == LIBTORCH_VERSION => {}
            Some(v) => {
                return Err(UsageError(format!(
                    "--libtorch {} is libtorch {v} (so say its version files), but this \
                     cargo-gpubench's tch needs libtorch {LIBTORCH_VERSION}: give a libtorch \
                     {LIBTORCH_VERSION} directory, or leave --libtorch out to install one",
                    dir.display()
                ))
                .into())
            }
            None => crate::console::warning(format_args!(
                "--libtorch {} has neither version.py nor build-version, so its version is \
                 not known; tch's build checks it is {LIBTORCH_VERSION}",
                dir.display()
            )),
        }
        crate::console::status(format_args!(
            "using the libtorch in {} (--libtorch)",
            dir.display()
        ));
        return Ok(dir);
    }
    let venv = match &args.venv {
        Some(v) => v.clone(),
        None => libtorch::setup_venv().context(
            "no cache directory: set GPUBENCH_CACHE_DIR, XDG_CACHE_HOME or HOME, or give --venv",
        )?,
    };
    let installed = || {
        libtorch::venv_torch_lib(&venv)
            .and_then(|lib| lib.parent().map(Path::to_path_buf))
            .with_context(|| {
                format!(
                    "{} holds no torch/lib with libtorch_cpu: run `cargo gpubench setup --force`",
                    venv.display()
                )
            })
    };
    if is_installed(&venv) && !args.force {
        crate::console::status(format_args!(
            "libtorch {LIBTORCH_VERSION} is already set up in {} (--force installs it again)",
            venv.display()
        ));
        return installed();
    }
    if args.venv.is_none() && !args.force {
        let cwd = std::env::current_dir().context("failed to read the current directory")?;
        let root = workspace_root(&cwd).ok().flatten().unwrap_or(cwd);
        let search = libtorch::Search::from_env(vec![root], vec![]);
        if let Some((root, source)) = at_hand(&search, !args.no_cuda_headers) {
            crate::console::status(format_args!(
                "using libtorch {LIBTORCH_VERSION} from {source} ({}): no second copy \
                 (--force installs one into {} all the same)",
                root.display(),
                venv.display()
            ));
            return Ok(root);
        }
    }
    install(&venv, &args.python, !args.no_cuda_headers)?;
    let root = installed()?;
    std::fs::write(venv.join(MARKER), format!("torch=={LIBTORCH_VERSION}\n"))
        .with_context(|| format!("failed to write {}", venv.join(MARKER).display()))?;
    crate::console::status(format_args!(
        "libtorch {LIBTORCH_VERSION} is set up ({}); cargo gpubench builds and runs \
         with it from now on. The first build compiles tch's C++ bindings (torch-sys) \
         against it: several minutes, once per target directory",
        root.join("lib").display()
    ));
    Ok(root)
}

/// A libtorch of [`LIBTORCH_VERSION`] already at hand (`LIBTORCH`, the workspace's
/// cargo configuration, the project's `.venv`, python3's torch) and, when
/// `cuda_headers`, with the CUDA headers beside it that kernel timing is built
/// against: its directory and where it was found.
fn at_hand(search: &libtorch::Search, cuda_headers: bool) -> Option<(PathBuf, LibtorchSource)> {
    let found = libtorch::locate(search).ok()?;
    let usable = matches!(
        found.source,
        LibtorchSource::Env
            | LibtorchSource::CargoConfig
            | LibtorchSource::Venv
            | LibtorchSource::Python
    );
    let root = found.root()?.to_path_buf();
    (usable
        && torch_version(&root).as_deref() == Some(LIBTORCH_VERSION)
        && (!cuda_headers || has_cuda_headers(&root)))
    .then_some((root, found.source))
}

/// Why the `LIBTORCH` of the environment (`env`) keeps builds and benchmarks from
/// the libtorch `root` this setup ends with, when it does: cargo gpubench and tch's
/// build take the variable first, so one naming no libtorch, or another version
/// than tch's, breaks every build after a setup that went well.
pub fn shadowing_env(env: Option<&Path>, root: &Path) -> Option<String> {
    let dir = env.filter(|d| *d != root)?;
    let what = if !libtorch::has_libtorch(&dir.join("lib")) {
        "no libtorch (its lib/ has no libtorch_cpu)".to_string()
    } else {
        match torch_version(dir) {
            Some(v) if v == LIBTORCH_VERSION => return None,
            Some(v) => format!("libtorch {v}"),
            None => return None,
        }
    };
    Some(format!(
        "LIBTORCH is set to {} in this environment, which holds {what}: cargo gpubench \
         and tch's build use it before the libtorch {LIBTORCH_VERSION} set up here ({}); \
         unset it, or set it to that directory",
        dir.display(),
        root.display()
    ))
}

/// The version of the libtorch in `root`, without a local part (`2.11.0` of
/// `2.11.0+cu130`), as [`libtorch::libtorch_version`] reads it.
pub fn torch_version(root: &Path) -> Option<String> {
    let version = libtorch::libtorch_version(&root.join("lib"))?;
    Some(version.split('+').next().unwrap_or_default().to_string())
}

/// Whether the pip wheels' CUDA runtime headers with `crt/` (what gpubench-core's
/// build script compiles the kernel-timing shim against) are beside the torch
/// package `root`.
fn has_cuda_headers(root: &Path) -> bool {
    let Some(site) = root.parent() else {
        return false;
    };
    std::fs::read_dir(site.join("nvidia")).is_ok_and(|entries| {
        entries.filter_map(Result::ok).any(|e| {
            let include = e.path().join("include");
            include.join("cuda_runtime_api.h").is_file()
                && include.join("crt/host_config.h").is_file()
        })
    })
}

/// The root of the cargo workspace around `dir`, `None` when there is none. A
/// cargo configuration that is not TOML, or any other reason cargo cannot read the
/// workspace, is an error naming the file and the cause: read as "not in a
/// workspace" it would leave the workspace unconfigured while saying all is well.
pub fn workspace_root(dir: &Path) -> Result<Option<PathBuf>> {
    cargo_config::check_parses(dir)?;
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(&cargo)
        .args(["locate-project", "--workspace", "--message-format", "plain"])
        .current_dir(dir)
        .output()
        .with_context(|| {
            format!(
                "failed to run {} locate-project",
                Path::new(&cargo).display()
            )
        })?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        if stderr.contains("could not find `Cargo.toml`") {
            return Ok(None);
        }
        return Err(UsageError(format!(
            "cargo could not read the workspace around {}, so its .cargo/config.toml was \
             not written: {}",
            dir.display(),
            stderr.trim().trim_start_matches("error: ")
        ))
        .into());
    }
    let manifest = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    Ok(manifest.parent().map(Path::to_path_buf))
}

/// Creates the virtual environment and installs the wheels, with pip's own progress
/// on the terminal.
fn install(venv: &Path, python: &OsString, cuda_headers: bool) -> Result<()> {
    if let Some(parent) = venv.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("failed to create {}", parent.display()))?;
    }
    crate::console::status(format_args!(
        "creating a virtual environment in {} with {}",
        venv.display(),
        Path::new(python).display()
    ));
    let mut cmd = Command::new(python);
    cmd.args(["-m", "venv"]).arg(venv);
    checked(
        cmd,
        "create the virtual environment (needs python3 with venv)",
    )?;
    let pip = venv.join("bin").join("pip");
    let mut wheels = vec![format!("torch=={LIBTORCH_VERSION}")];
    if cuda_headers {
        wheels.push(CUDA_CRT_WHEEL.to_string());
    }
    let index = std::env::var("PIP_INDEX_URL").ok();
    let what = if index.as_deref().is_some_and(|i| i.contains("/whl/cpu")) {
        "PyTorch's CPU-only torch wheel (PIP_INDEX_URL), a few hundred MB, once per \
         machine (pip shows each file)"
            .to_string()
    } else {
        format!(
            "PyPI's torch wheel and the CUDA libraries it needs, about 2.5 GB to download \
             and 5 GB on disk, once per machine (minutes on a fast link; pip shows each \
             file); a machine without a GPU can take PyTorch's CPU wheels instead, a few \
             hundred MB: PIP_INDEX_URL={CPU_WHEELS} with --no-cuda-headers"
        )
    };
    crate::console::status(format_args!(
        "installing {} with pip: {what}",
        wheels.join(" ")
    ));
    let mut cmd = Command::new(&pip);
    cmd.args(["install", "--disable-pip-version-check"])
        .args(&wheels);
    checked(
        cmd,
        "install the wheels (needs access to PyPI or a mirror pip is set up for)",
    )
}

fn checked(mut cmd: Command, what: &str) -> Result<()> {
    let program = cmd.get_program().to_string_lossy().into_owned();
    let status = cmd
        .status()
        .with_context(|| format!("failed to run {program} to {what}"))?;
    if !status.success() {
        bail!("{program} failed to {what} ({status})");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in python: `-m venv DIR` makes DIR/bin/pip, a stand-in pip that logs
    /// its arguments and lays out a torch package with a libtorch_cpu.
    const FAKE_PYTHON: &str = r#"#!/bin/sh
[ "$1 $2" = "-m venv" ] || exit 9
mkdir -p "$3/bin"
cat > "$3/bin/pip" <<EOF
#!/bin/sh
echo "\$@" >> "$3/pip.log"
mkdir -p "$3/lib/python3.12/site-packages/torch/lib"
: > "$3/lib/python3.12/site-packages/torch/lib/libtorch_cpu.so"
EOF
chmod +x "$3/bin/pip"
"#;

    #[test]
    #[cfg(unix)]
    fn setup_installs_the_pinned_wheels_once_into_a_venv_libtorch_discovery_finds() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let python = tmp.path().join("python3");
        std::fs::write(&python, FAKE_PYTHON).unwrap();
        std::fs::set_permissions(&python, std::fs::Permissions::from_mode(0o755)).unwrap();
        let venv = tmp.path().join("cache/torch");
        let args = SetupOptions {
            venv: Some(venv.clone()),
            python: python.clone().into(),
            no_cuda_headers: false,
            force: false,
            libtorch: None,
            // Never the workspace of these tests.
            no_cargo_config: true,
        };
        libtorch_root(&args).unwrap();
        let log = std::fs::read_to_string(venv.join("pip.log")).unwrap();
        assert_eq!(
            log,
            format!(
                "install --disable-pip-version-check torch=={LIBTORCH_VERSION} {CUDA_CRT_WHEEL}\n"
            )
        );
        assert!(is_installed(&venv));
        assert_eq!(
            libtorch::venv_torch_lib(&venv),
            Some(venv.join("lib/python3.12/site-packages/torch/lib"))
        );
        // A second setup does nothing.
        libtorch_root(&args).unwrap();
        assert_eq!(std::fs::read_to_string(venv.join("pip.log")).unwrap(), log);

        // A python that cannot make a venv is an error that says what failed.
        let bad = SetupOptions {
            venv: Some(tmp.path().join("other")),
            python: "/bin/false".into(),
            no_cuda_headers: true,
            force: false,
            libtorch: None,
            no_cargo_config: true,
        };
        let err = format!("{:#}", libtorch_root(&bad).unwrap_err());
        assert!(
            err.contains("failed to create the virtual environment"),
            "{err}"
        );
    }

    /// A torch package as pip lays it out: `site/torch/{lib,include,version.py}`,
    /// with the CUDA headers wheel's `site/nvidia/cu13/include` when `cuda`.
    fn fake_torch(site: &Path, version: &str, cuda: bool) -> PathBuf {
        let root = site.join("torch");
        std::fs::create_dir_all(root.join("lib")).unwrap();
        std::fs::create_dir_all(root.join("include")).unwrap();
        std::fs::write(root.join("lib/libtorch_cpu.so"), b"").unwrap();
        std::fs::write(
            root.join("version.py"),
            format!("from typing import Optional\n__version__ = '{version}'\ncuda: Optional[str] = '13.0'\n"),
        )
        .unwrap();
        if cuda {
            let inc = site.join("nvidia/cu13/include");
            std::fs::create_dir_all(inc.join("crt")).unwrap();
            std::fs::write(inc.join("cuda_runtime_api.h"), b"").unwrap();
            std::fs::write(inc.join("crt/host_config.h"), b"").unwrap();
        }
        root
    }

    #[test]
    fn a_libtorch_at_hand_of_the_right_version_with_cuda_headers_is_used_instead_of_a_copy() {
        let tmp = tempfile::tempdir().unwrap();
        let search = |site: &Path| libtorch::Search {
            libtorch_env: Some(site.join("torch").into()),
            ..libtorch::Search::default()
        };
        let good = tmp.path().join("good");
        let root = fake_torch(&good, &format!("{LIBTORCH_VERSION}+cu130"), true);
        assert_eq!(torch_version(&root).as_deref(), Some(LIBTORCH_VERSION));
        assert_eq!(
            at_hand(&search(&good), true),
            Some((root, LibtorchSource::Env))
        );
        // Another version, or no CUDA headers when they are wanted: not used.
        let old = tmp.path().join("old");
        fake_torch(&old, "2.9.1", true);
        assert_eq!(at_hand(&search(&old), true), None);
        let bare = tmp.path().join("bare");
        let bare_root = fake_torch(&bare, LIBTORCH_VERSION, false);
        assert_eq!(at_hand(&search(&bare), true), None);
        assert_eq!(
            at_hand(&search(&bare), false),
            Some((bare_root, LibtorchSource::Env))
        );
        // A libtorch archive says its version in build-version.
        let archive = tmp.path().join("libtorch");
        std::fs::create_dir_all(&archive).unwrap();
        std::fs::write(
            archive.join("build-version"),
            format!("{LIBTORCH_VERSION}+cpu\n"),
        )
        .unwrap();
        assert_eq!(torch_version(&archive).as_deref(), Some(LIBTORCH_VERSION));
    }

    #[test]
    fn libtorch_given_is_checked_and_used_without_installing() {
        let tmp = tempfile::tempdir().unwrap();
        let root = fake_torch(&tmp.path().join("site"), LIBTORCH_VERSION, false);
        let args = |dir: PathBuf| SetupOptions {
            venv: None,
            python: "/bin/false".into(),
            no_cuda_headers: false,
            force: false,
            libtorch: Some(dir),
            no_cargo_config: true,
        };
        let root = std::fs::canonicalize(root).unwrap();
        assert_eq!(libtorch_root(&args(root.clone())).unwrap(), root);
        let roundabout = root.join("../../site/torch/lib/..");
        assert_eq!(libtorch_root(&args(roundabout)).unwrap(), root);
        let err = format!(
            "{:#}",
            libtorch_root(&args(tmp.path().join("site"))).unwrap_err()
        );
        assert!(
            err.contains("--libtorch") && err.contains("not a libtorch directory"),
            "{err}"
        );
        // One whose version files say another version: refused, naming it.
        let old = fake_torch(&tmp.path().join("old"), "2.0.0+cpu", false);
        let err = libtorch_root(&args(old)).unwrap_err();
        assert!(err.downcast_ref::<UsageError>().is_some(), "{err:#}");
        let err = format!("{err:#}");
        assert!(
            err.contains("old/torch is libtorch 2.0.0")
                && err.contains(&format!("needs libtorch {LIBTORCH_VERSION}")),
            "{err}"
        );
    }

    #[test]
    fn a_libtorch_variable_of_another_version_is_named_as_what_builds_will_use() {
        let tmp = tempfile::tempdir().unwrap();
        let good = fake_torch(&tmp.path().join("good"), LIBTORCH_VERSION, false);
        let other = fake_torch(&tmp.path().join("other"), LIBTORCH_VERSION, false);
        let old = fake_torch(&tmp.path().join("old"), "2.0.0", false);
        assert_eq!(shadowing_env(None, &good), None);
        assert_eq!(shadowing_env(Some(&good), &good), None);
        assert_eq!(shadowing_env(Some(&other), &good), None);
        let why = shadowing_env(Some(&old), &good).unwrap();
        assert!(
            why.contains("old/torch in this environment, which holds libtorch 2.0.0")
                && why.contains("unset it"),
            "{why}"
        );
        let why = shadowing_env(Some(&tmp.path().join("gone")), &good).unwrap();
        assert!(why.contains("which holds no libtorch"), "{why}");
    }

    #[test]
    fn a_cargo_config_cargo_cannot_parse_is_an_error_not_no_workspace() {
        let tmp = tempfile::tempdir().unwrap();
        assert_eq!(workspace_root(tmp.path()).unwrap(), None);
        let ws = tmp.path().join("ws");
        std::fs::create_dir_all(ws.join("src")).unwrap();
        std::fs::write(
            ws.join("Cargo.toml"),
            "[package]\nname = \"ws\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
        )
        .unwrap();
        std::fs::write(ws.join("src/lib.rs"), "").unwrap();
        assert_eq!(workspace_root(&ws).unwrap(), Some(ws.clone()));
        std::fs::create_dir_all(ws.join(".cargo")).unwrap();
        std::fs::write(ws.join(".cargo/config.toml"), "[env\n").unwrap();
        let err = workspace_root(&ws).unwrap_err();
        assert!(err.downcast_ref::<UsageError>().is_some(), "{err:#}");
        let err = format!("{err:#}");
        assert!(
            err.contains("ws/.cargo/config.toml is not valid TOML")
                && err.contains("unclosed table"),
            "{err}"
        );
    }
}
