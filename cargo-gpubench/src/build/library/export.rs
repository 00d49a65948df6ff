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
    /// The directory to export into holds files an export did not write.
    #[error(
        "{path} holds files `ab --export-libraries` did not write ({found}): export into \
         an empty or new directory, or move them away"
    )]
    NotOurs {
        /// The directory.
        path: String,
        /// The first such files.
        found: String,
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

/// Copies `libraries` of `revision` into `dir` with the index, replacing an earlier
/// export there; a `dir` that holds anything else is refused
/// ([`ExportError::NotOurs`]).
pub fn write(
    dir: &Path,
    revision: ManifestRevision,
    libraries: &[BenchLibrary],
) -> Result<(), ExportError> {
    if dir.exists() {
        clear_export(dir)?;
    }
    std::fs::create_dir_all(dir).map_err(io_error("create", dir))?;
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
        std::fs::copy(&lib.path, &to).map_err(io_error("copy a library to", &to))?;
        index.libraries.push(ExportedLibrary {
            package: lib.package.clone(),
            target: lib.target.clone(),
            file,
        });
    }
    let text = serde_json::to_string_pretty(&index).expect("plain data serialises");
    let path = dir.join(INDEX_FILE);
    std::fs::write(&path, text + "\n").map_err(io_error("write", &path))
}

/// The error of an I/O `action` on `path`, for `map_err`.
fn io_error(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> ExportError {
    let path = path.display().to_string();
    move |source| ExportError::Io {
        action,
        path,
        source,
    }
}

/// Checks that [`write`] may export into `dir`: it is absent, empty, or holds an
/// earlier export and nothing else. `ab` checks both sides' directories before it
/// writes either.
pub fn check_target(dir: &Path) -> Result<(), ExportError> {
    if dir.exists() {
        ours_in(dir)?;
    }
    Ok(())
}

/// Removes an earlier export from `dir`: the files its index names and the index,
/// nothing else. A directory that holds anything an export did not write is
/// refused, and nothing in it is touched.
fn clear_export(dir: &Path) -> Result<(), ExportError> {
    for path in ours_in(dir)? {
        if path.exists() {
            std::fs::remove_file(&path).map_err(io_error("replace", &path))?;
        }
    }
    Ok(())
}

/// The files of an earlier export in `dir` (its libraries and index), or
/// [`ExportError::NotOurs`] when the directory holds anything else.
fn ours_in(dir: &Path) -> Result<Vec<PathBuf>, ExportError> {
    let entries: Vec<String> = std::fs::read_dir(dir)
        .map_err(io_error("read", dir))?
        .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect::<Result<_, _>>()
        .map_err(io_error("read", dir))?;
    if entries.is_empty() {
        return Ok(Vec::new());
    }
    let ours: Vec<String> = match read(dir) {
        Ok((_, libraries)) => libraries
            .iter()
            .filter_map(|l| l.path.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .chain([INDEX_FILE.to_string()])
            .collect(),
        Err(_) => Vec::new(),
    };
    let foreign: Vec<&String> = entries.iter().filter(|e| !ours.contains(e)).collect();
    if !foreign.is_empty() {
        let mut found: Vec<String> = foreign.iter().take(3).map(|s| s.to_string()).collect();
        if foreign.len() > 3 {
            found.push(format!("and {} more", foreign.len() - 3));
        }
        return Err(ExportError::NotOurs {
            path: dir.display().to_string(),
            found: found.join(", "),
        });
    }
    Ok(ours.iter().map(|name| dir.join(name)).collect())
}

/// Whether `file` names a file in the index's own directory: a plain name, no
/// folder, no `..`, not absolute.
fn is_plain_name(file: &str) -> bool {
    let path = Path::new(file);
    let mut parts = path.components();
    matches!(
        (parts.next(), parts.next()),
        (Some(std::path::Component::Normal(_)), None)
    )
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
        // The index names files beside it; one elsewhere would load code the export
        // never held.
        if !is_plain_name(&lib.file) {
            return Err(not(format!(
                "its {INDEX_FILE} names `{}`, which is not a file beside it",
                lib.file
            )));
        }
        let path: PathBuf = dir.join(&lib.file);
        match std::fs::symlink_metadata(&path) {
            Err(_) => return Err(not(format!("{} is missing", path.display()))),
            // A link could point anywhere, as an archive's could: refused alike.
            Ok(m) if !m.file_type().is_file() => {
                return Err(not(format!(
                    "{} is not a plain file (a link or a folder), so not the file the \
                     export wrote",
                    path.display()
                )))
            }
            Ok(_) => {}
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
            libraries: Vec::new(),
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

    fn export_into(dir: &Path, built: &Path) -> Result<(), ExportError> {
        write(
            dir,
            ManifestRevision {
                label: "1a2b3c4".into(),
                commit: None,
                dirty: false,
                libraries: Vec::new(),
            },
            &[BenchLibrary {
                package: "p".into(),
                target: "t".into(),
                path: built.to_path_buf(),
            }],
        )
    }

    #[test]
    fn an_export_replaces_only_what_an_export_wrote() {
        let tmp = tempfile::tempdir().unwrap();
        let built = tmp.path().join("libgpubench_ab_x.so");
        std::fs::write(&built, b"library").unwrap();
        let dir = tmp.path().join("out/base");
        export_into(&dir, &built).unwrap();
        // Again over its own export: replaced.
        export_into(&dir, &built).unwrap();
        assert!(read(&dir).is_ok());
        // A file of the user's beside it: refused, and nothing removed.
        std::fs::write(dir.join("notes.txt"), b"mine").unwrap();
        let err = export_into(&dir, &built).unwrap_err().to_string();
        assert!(
            err.contains("did not write (notes.txt)") && err.contains("empty or new directory"),
            "{err}"
        );
        assert!(dir.join("notes.txt").is_file());
        assert!(dir.join("libgpubench_ab_x.so").is_file());
        // A directory of the user's with no index at all: refused too.
        let theirs = tmp.path().join("theirs");
        std::fs::create_dir_all(theirs.join("data")).unwrap();
        let err = export_into(&theirs, &built).unwrap_err().to_string();
        assert!(err.contains("did not write (data)"), "{err}");
        assert!(theirs.join("data").is_dir());
    }

    #[test]
    fn an_index_that_names_a_file_elsewhere_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let built = tmp.path().join("libgpubench_ab_x.so");
        std::fs::write(&built, b"library").unwrap();
        let dir = tmp.path().join("out/base");
        export_into(&dir, &built).unwrap();
        let index = dir.join(INDEX_FILE);
        let text = std::fs::read_to_string(&index).unwrap();
        for elsewhere in [
            "../../libgpubench_ab_x.so",
            "/tmp/libgpubench_ab_x.so",
            "sub/x.so",
        ] {
            std::fs::write(&index, text.replace("libgpubench_ab_x.so", elsewhere)).unwrap();
            let err = read(&dir).unwrap_err().to_string();
            assert!(err.contains("not a file beside it"), "{elsewhere}: {err}");
        }
        // The file beside it, but a link to one elsewhere.
        std::fs::write(&index, &text).unwrap();
        std::fs::remove_file(dir.join("libgpubench_ab_x.so")).unwrap();
        std::os::unix::fs::symlink(&built, dir.join("libgpubench_ab_x.so")).unwrap();
        let err = read(&dir).unwrap_err().to_string();
        assert!(err.contains("is not a plain file"), "{err}");
    }
}
