//! Reading an archive back into a directory: the manifest first (refusing what is not
//! a gpubench archive, or a newer format, before anything is extracted), then every
//! entry, each checked to be a plain file or folder that stays inside the directory;
//! a file cut short or corrupt anywhere is damaged (bad input), a directory that
//! cannot be written the machine's problem.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};
use std::rc::Rc;

use flate2::read::GzDecoder;

use super::{
    ArchiveError, ArchiveManifest, ARCHIVE_FORMAT_VERSION, ARCHIVE_KIND, BASELINES_DIR, LIB_DIR,
    MANIFEST_ENTRY,
};

/// The most bytes a manifest may have: a file claiming more is not an archive.
const MANIFEST_LIMIT: u64 = 64 << 20;

/// An archive extracted into a directory.
#[derive(Debug, Clone)]
pub struct Extracted {
    /// The directory it was extracted into.
    pub dir: PathBuf,
    /// Its manifest.
    pub manifest: ArchiveManifest,
}

impl Extracted {
    /// Where an entry of the archive (a path the manifest names) now is.
    pub fn path_of(&self, entry: &str) -> PathBuf {
        self.dir.join(entry)
    }

    /// The folder of the bundled native libraries.
    pub fn lib_dir(&self) -> PathBuf {
        self.dir.join(LIB_DIR)
    }

    /// The folder of the bundled baselines, one folder per name (a baseline store's
    /// root).
    pub fn baselines_root(&self) -> PathBuf {
        self.dir.join(BASELINES_DIR)
    }
}

/// Extracts the archive `file` into `into` (an existing, empty directory).
pub fn extract(file: &Path, into: &Path) -> Result<Extracted, ArchiveError> {
    let path = || file.display().to_string();
    let opened = File::open(file).map_err(|source| ArchiveError::Io {
        action: "open archive",
        path: path(),
        source,
    })?;
    let read_failed = Rc::new(RefCell::new(None));
    let mut archive = tar::Archive::new(Watched {
        inner: GzDecoder::new(BufReader::new(opened)),
        failed: read_failed.clone(),
    });
    archive.set_preserve_mtime(false);
    let not_an_archive = |why: String| ArchiveError::NotAnArchive { path: path(), why };
    let damaged = |why: String| ArchiveError::Damaged { path: path(), why };
    let mut entries = archive
        .entries()
        .map_err(|e| not_an_archive(e.to_string()))?;

    let mut first = match entries.next() {
        None => return Err(not_an_archive("it holds nothing".into())),
        Some(Err(e)) => return Err(not_an_archive(e.to_string())),
        Some(Ok(entry)) => entry,
    };
    let first_name = entry_name(&first);
    if first_name != MANIFEST_ENTRY {
        return Err(not_an_archive(format!(
            "its first entry is `{first_name}`, not {MANIFEST_ENTRY}"
        )));
    }
    let mut text = String::new();
    (&mut first)
        .take(MANIFEST_LIMIT)
        .read_to_string(&mut text)
        .map_err(|e| damaged(format!("its {MANIFEST_ENTRY} cannot be read: {e}")))?;
    let manifest = parse_manifest(&text, file)?;

    let mut extracted = BTreeSet::new();
    for entry in entries {
        let mut entry = entry.map_err(|e| damaged(e.to_string()))?;
        let name = entry_name(&entry);
        let kind = entry.header().entry_type();
        // A sparse file is a plain file whose holes are left out (other tools write
        // them for executables with holes).
        let is_file = kind.is_file() || kind.is_gnu_sparse();
        let safe_kind = is_file || kind.is_dir();
        if !safe_kind || !stays_inside(&entry) {
            return Err(ArchiveError::UnsafeEntry {
                path: path(),
                entry: name,
            });
        }
        let unpacked = entry.unpack_in(into).map_err(|e| {
            // The archive's bytes ran out or are corrupt: the file is damaged (a
            // copy cut short), whatever the directory it goes into.
            match read_failed.borrow_mut().take() {
                Some(why) => damaged(format!("{name} cannot be read to its end: {why}")),
                None => ArchiveError::Io {
                    action: "extract",
                    path: format!("{name} of {} into {}", path(), into.display()),
                    source: e,
                },
            }
        })?;
        if !unpacked {
            return Err(ArchiveError::UnsafeEntry {
                path: path(),
                entry: name,
            });
        }
        if is_file {
            extracted.insert(name);
        }
    }
    let listed = manifest
        .executables
        .iter()
        .map(|e| &e.file)
        .chain(&manifest.native_libs);
    for want in listed {
        if !extracted.contains(want.as_str()) {
            return Err(damaged(format!(
                "it lacks {want}, which its manifest lists"
            )));
        }
    }
    Ok(Extracted {
        dir: into.to_path_buf(),
        manifest,
    })
}

/// The archive's bytes, remembering the last error reading them, so an entry that
/// cannot be extracted is told apart: a file cut short or corrupt (bad input) from a
/// directory that cannot be written (the machine's problem).
struct Watched<R> {
    inner: R,
    failed: Rc<RefCell<Option<String>>>,
}

impl<R: Read> Read for Watched<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.inner.read(buf).inspect_err(|e| {
            *self.failed.borrow_mut() = Some(e.to_string());
        })
    }
}

/// Reads an archive's manifest, refusing another kind of file and newer formats.
fn parse_manifest(text: &str, file: &Path) -> Result<ArchiveManifest, ArchiveError> {
    let path = || file.display().to_string();
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| ArchiveError::NotAnArchive {
            path: path(),
            why: format!("its {MANIFEST_ENTRY} is not JSON: {e}"),
        })?;
    let kind = value.get("kind").and_then(serde_json::Value::as_str);
    if kind != Some(ARCHIVE_KIND) {
        return Err(ArchiveError::NotAnArchive {
            path: path(),
            why: format!("its {MANIFEST_ENTRY} does not say kind \"{ARCHIVE_KIND}\""),
        });
    }
    let found = value
        .get("format_version")
        .and_then(serde_json::Value::as_u64)
        .unwrap_or(0);
    if found > u64::from(ARCHIVE_FORMAT_VERSION) {
        return Err(ArchiveError::TooNew {
            path: path(),
            found: u32::try_from(found).unwrap_or(u32::MAX),
            supported: ARCHIVE_FORMAT_VERSION,
            made_by: value
                .get("gpubench_version")
                .and_then(serde_json::Value::as_str)
                .unwrap_or("unknown")
                .to_string(),
        });
    }
    serde_json::from_value(value).map_err(|e| ArchiveError::Damaged {
        path: path(),
        why: format!("its {MANIFEST_ENTRY} is not a manifest: {e}"),
    })
}

/// The entry's path as the archive names it.
fn entry_name<R: Read>(entry: &tar::Entry<'_, R>) -> String {
    String::from_utf8_lossy(&entry.path_bytes()).into_owned()
}

/// Whether the entry's path is relative and never steps up or out.
fn stays_inside<R: Read>(entry: &tar::Entry<'_, R>) -> bool {
    entry
        .path()
        .is_ok_and(|path| crate::store::stays_inside(&path))
}
