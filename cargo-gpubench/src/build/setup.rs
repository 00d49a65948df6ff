//! `cargo gpubench setup`: installs the libtorch this build needs where `cargo
//! gpubench` looks for it, so a workspace builds and runs without any environment
//! set by hand. libtorch comes from PyPI's `torch` wheel (it ships the libraries and
//! headers, for the CPU and CUDA 13) in a virtual environment under the user's cache:
//!
//! ```text
//! <cache>/gpubench/torch-<version>/            the virtual environment
//! <cache>/gpubench/torch-<version>/.installed  written once pip succeeded
//! ```
//!
//! where `<cache>` is `GPUBENCH_CACHE_DIR`, else `XDG_CACHE_HOME`, else `~/.cache`.

use std::ffi::OsString;
use std::path::Path;
use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::build::libtorch::{self, LIBTORCH_VERSION};
use crate::cli::SetupArgs;
use crate::exit_code::Exit;

/// The wheel whose `crt/` headers the torch wheel's CUDA headers include but do not
/// ship: with them the kernel-timing shim is built.
pub const CUDA_CRT_WHEEL: &str = "nvidia-cuda-crt==13.0.88";

/// The marker of a finished installation.
const MARKER: &str = ".installed";

/// Whether `venv` holds a finished installation.
pub fn is_installed(venv: &Path) -> bool {
    venv.join(MARKER).is_file()
}

/// Runs `cargo gpubench setup`.
pub fn run(args: &SetupArgs) -> Result<Exit> {
    let venv = match &args.venv {
        Some(v) => v.clone(),
        None => libtorch::setup_venv().context(
            "no cache directory: set GPUBENCH_CACHE_DIR, XDG_CACHE_HOME or HOME, or give --venv",
        )?,
    };
    if is_installed(&venv) && !args.force {
        crate::output::console::status(format_args!(
            "libtorch {LIBTORCH_VERSION} is already set up in {} (--force installs it again)",
            venv.display()
        ));
        return Ok(Exit::Success);
    }
    install(&venv, &args.python, !args.no_cuda_headers)?;
    let lib = libtorch::venv_torch_lib(&venv).with_context(|| {
        format!(
            "pip finished but {} holds no torch/lib with libtorch_cpu",
            venv.display()
        )
    })?;
    std::fs::write(venv.join(MARKER), format!("torch=={LIBTORCH_VERSION}\n"))
        .with_context(|| format!("failed to write {}", venv.join(MARKER).display()))?;
    crate::output::console::status(format_args!(
        "libtorch {LIBTORCH_VERSION} is set up ({}); cargo gpubench builds and runs \
         with it from now on",
        lib.display()
    ));
    Ok(Exit::Success)
}

/// Creates the virtual environment and installs the wheels, with pip's own progress
/// on the terminal.
fn install(venv: &Path, python: &OsString, cuda_headers: bool) -> Result<()> {
    if let Some(parent) = venv.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("failed to create {}", parent.display()))?;
    }
    crate::output::console::status(format_args!(
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
    crate::output::console::status(format_args!(
        "installing {} with pip (about 5 GB, a few minutes)",
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
        let args = SetupArgs {
            venv: Some(venv.clone()),
            python: python.clone().into(),
            no_cuda_headers: false,
            force: false,
        };
        assert_eq!(run(&args).unwrap(), Exit::Success);
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
        assert_eq!(run(&args).unwrap(), Exit::Success);
        assert_eq!(std::fs::read_to_string(venv.join("pip.log")).unwrap(), log);

        // A python that cannot make a venv is an error that says what failed.
        let bad = SetupArgs {
            venv: Some(tmp.path().join("other")),
            python: "/bin/false".into(),
            no_cuda_headers: true,
            force: false,
        };
        let err = format!("{:#}", run(&bad).unwrap_err());
        assert!(
            err.contains("failed to create the virtual environment"),
            "{err}"
        );
    }
}
