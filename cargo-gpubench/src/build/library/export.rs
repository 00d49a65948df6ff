//! A revision's loadable libraries copied out of the target directory, with a small
//! index, so `ab` can run where there is no cargo, git or source (a GPU machine fed by
//! a build job): `ab --export-libraries DIR` writes `DIR/base/` and `DIR/head/`, and
//! `ab --base-libraries DIR/base --head-libraries DIR/head` runs from them.
//!
//! ```text
//! <dir>/libraries.json     this index: the revision and every library's file
//! <dir>/<file>.so          the libraries, as cargo built them
//! ```

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use thiserror::Error;

use super::BenchLibrary;
use crate::store::manifest::ManifestRevision;

/// The index file of an exported revision.
pub const INDEX_FILE: &str = "libraries.json";
/// The index format this build writes and the newest it reads.
pub const INDEX_FORMAT_VERSION: u32 = 1;

/// Errors exporting or reading exported libraries.
#[derive(Debug, Error)]
pub enum ExportError {
    /// A file could not be read or written.
    #[error("failed to {action} {path}: {source}")]
    Io {
        /// What was being done.
        action: &'static str,
        /// The path.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The directory holds no index, or one that cannot be read.
    #[error("{path} is not a directory of libraries `ab --export-libraries` wrote: {why}")]
    NotExported {
        /// The directory.
        path: String,
        /// What is wrong.
        why: String,
    },
}

/// One exported library.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExportedLibrary {
    /// Its package.
    pub package: String,
    /// Its bench target.
    pub target: String,
    /// Its file, in the directory.
    pub file: String,
}

/// The index of an exported revision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExportedRevision {
    /// See [`INDEX_FORMAT_VERSION`].
    pub format_version: u32,
    /// Which code it is.
    pub revision: ManifestRevision,
    /// Its libraries.
    pub libraries: Vec<ExportedLibrary>,
}

/// Copies `libraries` of `revision` into `dir` (made afresh) with the index.
pub fn write(
    dir: &Path,
    revision: ManifestRevision,
    libraries: &[BenchLibrary],
) -> Result<(), ExportError> {
    let io = |action, path: &Path| {
        let path = path.display().to_string();
        move |source| ExportError::Io {
            action,
            path,
            source,
        }
    };
    if dir.exists() {
        std::fs::remove_dir_all(dir).map_err(io("replace", dir))?;
    }
    std::fs::create_dir_all(dir).map_err(io("create", dir))?;
    let mut index = ExportedRevision {
        format_version: INDEX_FORMAT_VERSION,
        revision,
        libraries: Vec::new(),
    };
    for lib in libraries {
        let file = lib
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| format!("{}-{}.so", lib.package, lib.target));
        let to = dir.join(&file);
        std::fs::copy(&lib.path, &to).map_err(io("copy a library to", &to))?;
        index.libraries.push(ExportedLibrary {
            package: lib.package.clone(),
            target: lib.target.clone(),
            file,
        });
    }
    let text = serde_json::to_string_pretty(&index).expect("plain data serialises");
    let path = dir.join(INDEX_FILE);
    std::fs::write(&path, text + "\n").map_err(io("write", &path))
}

/// Reads what [`write`] wrote in `dir`: the revision and its libraries, with paths.
pub fn read(dir: &Path) -> Result<(ManifestRevision, Vec<BenchLibrary>), ExportError> {
    let path = dir.join(INDEX_FILE);
    let not = |why: String| ExportError::NotExported {
        path: dir.display().to_string(),
        why,
    };
    let text = std::fs::read_to_string(&path)
        .map_err(|e| not(format!("failed to read {INDEX_FILE}: {e}")))?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| not(format!("{INDEX_FILE}: {e}")))?;
    let found = value
        .get("format_version")
        .and_then(serde_json::Value::as_u64)
        .unwrap_or(0);
    if found > u64::from(INDEX_FORMAT_VERSION) {
        return Err(not(format!(
            "its {INDEX_FILE} has format_version {found}, newer than the \
             {INDEX_FORMAT_VERSION} this cargo-gpubench reads: upgrade cargo-gpubench"
        )));
    }
    let index: ExportedRevision =
        serde_json::from_value(value).map_err(|e| not(format!("{INDEX_FILE}: {e}")))?;
    let mut libraries = Vec::new();
    for lib in index.libraries {
        let path: PathBuf = dir.join(&lib.file);
        if !path.is_file() {
            return Err(not(format!("{} is missing", path.display())));
        }
        libraries.push(BenchLibrary {
            package: lib.package,
            target: lib.target,
            path,
        });
    }
    Ok((index.revision, libraries))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_exported_revision_reads_back_and_a_foreign_directory_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let built = tmp.path().join("libgpubench_ab_x.so");
        std::fs::write(&built, b"not really a library").unwrap();
        let revision = ManifestRevision {
            label: "1a2b3c4".into(),
            commit: Some("1a2b3c4d".into()),
            dirty: false,
        };
        let dir = tmp.path().join("out/base");
        write(
            &dir,
            revision.clone(),
            &[BenchLibrary {
                package: "p".into(),
                target: "t".into(),
                path: built,
            }],
        )
        .unwrap();
        let (back, libs) = read(&dir).unwrap();
        assert_eq!(back, revision);
        assert_eq!(libs.len(), 1);
        assert_eq!(libs[0].path, dir.join("libgpubench_ab_x.so"));
        assert_eq!(
            (libs[0].package.as_str(), libs[0].target.as_str()),
            ("p", "t")
        );

        let err = read(tmp.path()).unwrap_err().to_string();
        assert!(err.contains("not a directory of libraries"), "{err}");
        std::fs::remove_file(dir.join("libgpubench_ab_x.so")).unwrap();
        let err = read(&dir).unwrap_err().to_string();
        assert!(err.contains("is missing"), "{err}");
    }
}
