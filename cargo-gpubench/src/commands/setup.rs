//! `cargo gpubench setup`: installs (or finds) the libtorch this build needs
//! ([`crate::build::setup`]), warns when the environment's `LIBTORCH` would keep
//! builds from it, and, run in a workspace, writes it into the workspace's
//! `.cargo/config.toml` ([`crate::build::cargo_config`]).

use std::path::Path;

use anyhow::{Context, Result};

use crate::build::cargo_config;
use crate::build::setup;
use crate::cli::SetupArgs;
use crate::exit_code::Exit;

/// Runs `cargo gpubench setup`.
pub(crate) fn run(args: &SetupArgs) -> Result<Exit> {
    let options = args.options();
    let root = setup::libtorch_root(&options)?;
    let libtorch_env = std::env::var_os("LIBTORCH").filter(|v| !v.is_empty());
    if let Some(why) = setup::shadowing_env(libtorch_env.as_deref().map(Path::new), &root) {
        crate::console::warning(format_args!("{why}"));
    }
    if options.no_cargo_config {
        return Ok(Exit::Success);
    }
    let cwd = std::env::current_dir().context("failed to read the current directory")?;
    let Some(workspace) = setup::workspace_root(&cwd)? else {
        crate::console::note(format_args!(
            "not in a cargo workspace, so no .cargo/config.toml was written: run `cargo \
             gpubench setup` again in your workspace for plain `cargo bench` and `cargo test` \
             to build and run with this libtorch (cargo gpubench finds it by itself)"
        ));
        return Ok(Exit::Success);
    };
    let written = cargo_config::write_libtorch(&workspace, &root, &root.join("lib"))?;
    if let Some(old) = &written.replaced {
        crate::console::warning(format_args!(
            "{} set LIBTORCH to {old}; it now names {} (put the old one back, or pass \
             --no-cargo-config next time to leave the file alone)",
            written.file.display(),
            root.display()
        ));
    }
    crate::console::status(format_args!(
        "{} {}: LIBTORCH in [env] and its lib/ as the executables' rpath in [build] \
         rustflags, so plain `cargo bench` and `cargo test` build and run with it, and \
         switching between them and cargo gpubench rebuilds nothing (--no-cargo-config \
         leaves the file alone)",
        if written.changed { "wrote" } else { "kept" },
        written.file.display()
    ));
    if let Some(caveat) = written.caveat {
        crate::console::warning(format_args!("{caveat}"));
    }
    Ok(Exit::Success)
}
