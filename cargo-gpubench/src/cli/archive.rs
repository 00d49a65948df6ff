//! The options of `cargo gpubench archive`: which bench targets to build and where the
//! archive goes.

use std::path::PathBuf;

use clap::Args;

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

    /// Only bench targets of these workspace packages.
    #[arg(
        short = 'p',
        long = "package",
        value_name = "SPEC",
        env = "GPUBENCH_PACKAGE",
        value_delimiter = ','
    )]
    pub packages: Vec<String>,

    /// Only these bench targets.
    #[arg(
        long = "bench",
        value_name = "TARGET",
        env = "GPUBENCH_BENCH",
        value_delimiter = ','
    )]
    pub benches: Vec<String>,

    /// Path to the workspace's Cargo.toml.
    #[arg(long, value_name = "PATH", env = "GPUBENCH_MANIFEST_PATH")]
    pub manifest_path: Option<PathBuf>,
}
