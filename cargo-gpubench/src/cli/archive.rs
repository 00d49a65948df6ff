//! The options of `cargo gpubench archive`: which bench targets to build and where the
//! archive goes.

use std::path::PathBuf;

use clap::Args;

use super::run::TargetArgs;

/// Options of `archive`.
#[derive(Debug, Clone, Args)]
pub struct ArchiveArgs {
    /// The archive to write (a gzipped tar; replaced only once the new one is
    /// complete).
    #[arg(
        short = 'o',
        long = "output",
        value_name = "FILE",
        env = "GPUBENCH_ARCHIVE_OUTPUT"
    )]
    pub output: PathBuf,

    /// Which bench targets of which workspace.
    #[command(flatten)]
    pub targets: TargetArgs,
}
