//! Archives: the built bench executables of a workspace in one file, to run where
//! the GPUs are, on a machine with libtorch but no cargo or sources
//! (`cargo gpubench archive`, `cargo gpubench run --archive`).
//!
//! An archive is a gzipped tar:
//!
//! ```text
//! gpubench-archive.json             the [`ArchiveManifest`]; always the first entry
//! bin/<package>/<file>              one bench executable per gpubench bench target
//! lib/<file>                        shared libraries of the build scripts' native
//!                                   directories under the target directory
//! baselines/<name>/<stem>.json      the workspace's saved baselines
//! ```
//!
//! [`pack`] writes one (atomically: a temporary file renamed into place), [`unpack`]
//! reads one back into a directory, refusing files that are not archives, newer
//! formats and paths that leave the directory, and checks the libtorch found on the
//! running machine against the one the archive was built with.

pub mod pack;
#[cfg(test)]
mod tests;
pub mod unpack;

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// The archive format this build writes and the newest it reads.
pub(crate) const ARCHIVE_FORMAT_VERSION: u32 = 1;

/// What [`ArchiveManifest::kind`] says in every gpubench archive.
pub(crate) const ARCHIVE_KIND: &str = "gpubench-archive";

/// The manifest's name inside the archive.
pub(crate) const MANIFEST_ENTRY: &str = "gpubench-archive.json";

/// The folder of the executables inside the archive.
pub(crate) const BIN_DIR: &str = "bin";

/// The folder of the native libraries inside the archive.
pub(crate) const LIB_DIR: &str = "lib";

/// The folder of the baselines inside the archive.
pub(crate) const BASELINES_DIR: &str = "baselines";

/// The cargo profile `cargo bench` builds with.
pub(crate) const BENCH_PROFILE: &str = "bench";

/// Errors writing or reading an archive.
#[derive(Debug, Error)]
pub enum ArchiveError {
    /// A file could not be read or written.
    #[error("failed to {action} {path}: {source}")]
    Io {
        /// What was being done.
        action: &'static str,
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The file is not a gpubench archive.
    #[error(
        "{path} is not a gpubench archive ({why}): make one with `cargo gpubench archive -o FILE`"
    )]
    NotAnArchive {
        /// The file.
        path: String,
        /// What gave it away.
        why: String,
    },
    /// The file starts like an archive but cannot be read to the end.
    #[error("archive {path} is damaged ({why}): copy it again or make it again with `cargo gpubench archive`")]
    Damaged {
        /// The file.
        path: String,
        /// What is wrong.
        why: String,
    },
    /// Written by a newer cargo-gpubench.
    #[error("archive {path} has format_version {found}, newer than the {supported} this cargo-gpubench reads: upgrade cargo-gpubench to the version that made it ({made_by})")]
    TooNew {
        /// The file.
        path: String,
        /// Its version.
        found: u32,
        /// The newest this build reads.
        supported: u32,
        /// The gpubench version that wrote it.
        made_by: String,
    },
    /// An entry's path would land outside the extraction directory, or is a link.
    #[error("archive {path} holds an entry that would be written outside its directory or is not a plain file ({entry}): refusing to extract it")]
    UnsafeEntry {
        /// The file.
        path: String,
        /// The entry, as the archive names it.
        entry: String,
    },
    /// The libtorch here is not the version the archive was built against.
    #[error("archive {path} was built against libtorch {built}, but the libtorch here is {found} ({here}): tch needs exactly the version it was built with. Install libtorch {built} here (`pip install torch=={}`, or `cargo gpubench setup` with a cargo-gpubench for that version) and point LIBTORCH at it, or make the archive again against {found}", base_version(.built))]
    LibtorchMismatch {
        /// The file.
        path: String,
        /// The archive's libtorch version.
        built: String,
        /// The version found here.
        found: String,
        /// Where it was found, and how.
        here: String,
    },
}

/// The index of an archive: what made it, from what, and what it holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArchiveManifest {
    /// Always [`ARCHIVE_KIND`].
    pub kind: String,
    /// See [`ARCHIVE_FORMAT_VERSION`].
    pub format_version: u32,
    /// RFC 3339, UTC.
    pub created_at: String,
    /// The cargo-gpubench version that wrote it.
    pub gpubench_version: String,
    /// The cargo profile the executables were built with.
    pub profile: String,
    /// `git rev-parse HEAD` of the workspace; absent when it is not a git repository.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_commit: Option<String>,
    /// The version of the libtorch the executables were built against (e.g.
    /// `2.11.0+cu130`); absent when its directory did not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub libtorch_version: Option<String>,
    /// The bench executables, sorted by package and target.
    pub executables: Vec<ArchivedExecutable>,
    /// The bundled native libraries, paths inside the archive.
    #[serde(default)]
    pub native_libs: Vec<String>,
    /// The names of the bundled baselines.
    #[serde(default)]
    pub baselines: Vec<String>,
}

/// A bench executable in an archive.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArchivedExecutable {
    /// Its package.
    pub package: String,
    /// Its bench target.
    pub target: String,
    /// Its path inside the archive (`bin/<package>/<file>`).
    pub file: String,
    /// Its benchmarks as it listed them when archived, sorted by id.
    pub benchmarks: Vec<ArchivedBenchmark>,
}

/// A benchmark of an archived executable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArchivedBenchmark {
    /// Its id.
    pub id: String,
    /// Whether it is marked ignored.
    pub ignored: bool,
}

impl ArchiveManifest {
    /// Pretty JSON with a trailing newline.
    pub fn to_json_pretty(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("manifests always serialise");
        s.push('\n');
        s
    }

    /// How many benchmarks its executables hold.
    pub fn benchmark_count(&self) -> usize {
        self.executables.iter().map(|e| e.benchmarks.len()).sum()
    }
}

/// `2.11.0` of `2.11.0+cu130`: the part of a libtorch version the tch ABI depends on.
fn base_version(version: &str) -> &str {
    version.split_once('+').map_or(version, |(base, _)| base)
}

/// Checks the libtorch here (its library directory, how it was found, and its version
/// when its directory says) against the one archive `path` was built with. Returns a
/// note when the check could not be made in full or the builds differ only in their
/// local part (`+cu130` against `+cpu`); refuses another version.
pub(crate) fn check_libtorch(
    path: &std::path::Path,
    built: Option<&str>,
    here: &crate::build::libtorch::Libtorch,
    here_version: Option<&str>,
) -> Result<Option<String>, ArchiveError> {
    let lib_dir = here.lib_dir.display();
    match (built, here_version) {
        (None, _) => Ok(Some(format!(
            "archive {} does not say which libtorch it was built against; running with the one in {lib_dir}",
            path.display()
        ))),
        (Some(built), None) => Ok(Some(format!(
            "cannot tell the version of the libtorch in {lib_dir} (no version.py or build-version beside it); archive {} was built against {built}, and another version fails to load or crashes",
            path.display()
        ))),
        (Some(built), Some(found)) if base_version(built) != base_version(found) => {
            Err(ArchiveError::LibtorchMismatch {
                path: path.display().to_string(),
                built: built.to_string(),
                found: found.to_string(),
                here: format!("{lib_dir}, via {}", here.source),
            })
        }
        (Some(built), Some(found)) if built != found => Ok(Some(format!(
            "archive {} was built against libtorch {built}; running with {found} from {lib_dir}",
            path.display()
        ))),
        _ => Ok(None),
    }
}
