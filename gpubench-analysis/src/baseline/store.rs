//! The store of baselines under `gpubench/baselines/<name>/`: loading (unrelated
//! files noted and left alone) and saving a whole baseline at once.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::*;
use gpubench_record::id::file_stem_for_id;
use gpubench_record::record::RawRecord;

/// What [`BaselineStore::save`] did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SaveReport {
    /// The baseline's directory.
    pub dir: PathBuf,
    /// Files written, in record order.
    pub written: Vec<PathBuf>,
    /// Records not saved and why; their previous files, if any, are kept.
    pub skipped: Vec<(String, NotSaved)>,
    /// The ids of `skipped` whose previous file is kept (the others have none).
    pub kept: Vec<String>,
}

/// A loaded baseline and the files of its directory that were not baseline files.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedEntries {
    /// Every benchmark, sorted by id.
    pub entries: Vec<BaselineEntry>,
    /// JSON files without a baseline's `id` and `format_version`, ignored.
    pub ignored: Vec<PathBuf>,
}

/// The baselines of a workspace: one directory per name under `root`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BaselineStore {
    /// The directory holding one directory per baseline, usually
    /// `<workspace>/gpubench/baselines`.
    pub root: PathBuf,
}

impl BaselineStore {
    /// A store rooted at `root`.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        BaselineStore { root: root.into() }
    }

    /// The store of a workspace: `<workspace_root>/gpubench/baselines`.
    pub fn for_workspace(workspace_root: &Path) -> Self {
        Self::new(workspace_root.join("gpubench").join("baselines"))
    }

    /// The directory of baseline `name`, after checking the name.
    pub fn dir(&self, name: &str) -> Result<PathBuf, BaselineError> {
        validate_name(name)?;
        Ok(self.root.join(name))
    }

    /// Whether baseline `name` can be saved: a valid name, and no file where its
    /// directory or the directories a save stages go ([`BaselineError::Blocked`]).
    /// A run asks before it measures anything; [`BaselineStore::save`] asks again.
    pub fn check_save(&self, name: &str) -> Result<PathBuf, BaselineError> {
        let dir = self.dir(name)?;
        match crate::atomic_dir::blocker(&dir) {
            Some(blocker) => Err(blocker.into()),
            None => Ok(dir),
        }
    }

    /// Saves one file per measured record into baseline `name`, creating it when
    /// needed, as one change ([`crate::atomic_dir`]): a reader, or a save killed at
    /// any point, sees the baseline entirely as it was or entirely as saved. Files of
    /// other benchmarks are kept, and so are those of records that are skipped. A
    /// file in the way ([`BaselineStore::check_save`]) is refused before anything is
    /// written.
    pub fn save(&self, name: &str, records: &[RawRecord]) -> Result<SaveReport, BaselineError> {
        self.save_with_targets(name, records, |_| None)
    }

    /// [`BaselineStore::save`], each file naming the bench target `target_of` gives
    /// its benchmark id (what a run's manifest knows), so that a benchmark later gone
    /// from the code is still named by its target.
    pub fn save_with_targets(
        &self,
        name: &str,
        records: &[RawRecord],
        target_of: impl Fn(&str) -> Option<String>,
    ) -> Result<SaveReport, BaselineError> {
        let dir = self.check_save(name)?;
        let mut entries = Vec::new();
        let mut skipped = Vec::new();
        let mut by_stem: HashMap<String, &str> = HashMap::new();
        for record in records {
            let stem = file_stem_for_id(&record.id);
            if let Some(first) = by_stem.insert(stem.clone(), &record.id) {
                return Err(if first == record.id {
                    BaselineError::DuplicateRecord {
                        id: record.id.clone(),
                    }
                } else {
                    BaselineError::FileClash {
                        first: first.to_string(),
                        second: record.id.clone(),
                        file: format!("{stem}.json"),
                    }
                });
            }
            match BaselineEntry::from_record(record) {
                Ok(entry) => entries.push((
                    stem,
                    BaselineEntry {
                        target: target_of(&record.id),
                        ..entry
                    },
                )),
                Err(why) => skipped.push((record.id.clone(), why)),
            }
        }
        let current = crate::atomic_dir::readable(&dir);
        let kept = skipped
            .iter()
            .filter(|(id, _)| {
                current
                    .as_ref()
                    .is_some_and(|d| d.join(format!("{}.json", file_stem_for_id(id))).is_file())
            })
            .map(|(id, _)| id.clone())
            .collect();
        let files: Vec<(String, Vec<u8>)> = entries
            .iter()
            .map(|(stem, entry)| (format!("{stem}.json"), entry.to_json_pretty().into_bytes()))
            .collect();
        if !files.is_empty() {
            std::fs::create_dir_all(&self.root).map_err(|source| BaselineError::Io {
                action: "create baseline directory",
                path: self.root.display().to_string(),
                source,
            })?;
            crate::atomic_dir::replace_files(&dir, &files).map_err(|source| BaselineError::Io {
                action: "save baseline",
                path: dir.display().to_string(),
                source,
            })?;
        }
        let written = files.iter().map(|(f, _)| dir.join(f)).collect();
        Ok(SaveReport {
            dir,
            written,
            skipped,
            kept,
        })
    }

    /// Loads every benchmark of baseline `name`, sorted by id. Any unreadable, corrupt,
    /// truncated or newer baseline file is an error naming it, and so is a `.json`
    /// entry that is no file (a directory, a dangling or looping link) or holds JSON
    /// that is no object (`null`, an array); JSON objects that are not baseline files
    /// are left out ([`BaselineStore::load_noting`] names them).
    pub fn load(&self, name: &str) -> Result<Vec<BaselineEntry>, BaselineError> {
        self.load_noting(name).map(|l| l.entries)
    }

    /// [`BaselineStore::load`], with the files it ignored.
    pub fn load_noting(&self, name: &str) -> Result<LoadedEntries, BaselineError> {
        let named = self.dir(name)?;
        // A save killed between its two renames leaves the old files beside it.
        let Some(dir) = crate::atomic_dir::readable(&named) else {
            return Err(BaselineError::NotFound {
                name: name.to_string(),
                path: named.display().to_string(),
            });
        };
        let io_err = |action, path: &Path| {
            let path = path.display().to_string();
            move |source| BaselineError::Io {
                action,
                path,
                source,
            }
        };
        let mut files = Vec::new();
        for item in std::fs::read_dir(&dir).map_err(io_err("read baseline directory", &dir))? {
            let path = item
                .map_err(io_err("read baseline directory", &dir))?
                .path();
            let file_name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            // Leading dots are temporary files of an interrupted save.
            if file_name.ends_with(".json") && !file_name.starts_with('.') {
                files.push(path);
            }
        }
        files.sort();
        let mut entries: Vec<BaselineEntry> = Vec::with_capacity(files.len());
        let mut ignored = Vec::new();
        let mut seen: HashMap<String, PathBuf> = HashMap::new();
        for path in files {
            // A `.json` entry that is no readable file (a directory, a dangling link,
            // a link loop) is a benchmark's evidence gone missing, never skipped.
            let unreadable = |reason: String| BaselineError::Invalid {
                path: path.display().to_string(),
                reason,
            };
            match std::fs::metadata(&path) {
                Ok(m) if m.is_file() => {}
                Ok(m) if m.is_dir() => {
                    return Err(unreadable(
                        "it is a directory, not a baseline file: move it out of the baseline"
                            .into(),
                    ))
                }
                Ok(_) => {
                    return Err(unreadable(
                        "it is not a regular file: move it out of the baseline".into(),
                    ))
                }
                Err(e) => {
                    return Err(unreadable(format!(
                        "it cannot be opened ({e}; a dangling or looping symbolic link?): \
                         restore the file or remove it"
                    )))
                }
            }
            let text =
                std::fs::read_to_string(&path).map_err(io_err("read baseline file", &path))?;
            let Some(entry) = parse_file(&text, &path.display().to_string())? else {
                ignored.push(path);
                continue;
            };
            if let Some(first) = seen.insert(entry.id.clone(), path.clone()) {
                return Err(BaselineError::DuplicateId {
                    id: entry.id,
                    first: first.display().to_string(),
                    second: path.display().to_string(),
                });
            }
            entries.push(entry);
        }
        entries.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(LoadedEntries { entries, ignored })
    }

    /// Names of the saved baselines, sorted; none when the store does not exist yet.
    pub fn list(&self) -> Result<Vec<String>, BaselineError> {
        if !self.root.exists() {
            return Ok(Vec::new());
        }
        let io_err = |source| BaselineError::Io {
            action: "read baseline store",
            path: self.root.display().to_string(),
            source,
        };
        let mut names = Vec::new();
        for item in std::fs::read_dir(&self.root).map_err(io_err)? {
            let item = item.map_err(io_err)?;
            if let Some(file_name) = item.file_name().to_str() {
                // A save killed between its two renames leaves the baseline under
                // `.NAME.old-PID`, where loading it still finds it.
                let name = crate::atomic_dir::interrupted_swap_of(file_name).unwrap_or(file_name);
                if validate_name(name).is_ok() && item.path().is_dir() {
                    names.push(name.to_string());
                }
            }
        }
        names.sort();
        names.dedup();
        Ok(names)
    }
}

/// Reads the text of one `.json` file of a baseline directory, as [`BaselineStore::load`]
/// does (and `cargo gpubench history` for every committed version): the entry, or
/// `None` for a JSON object that is no baseline file (it has no `id` and
/// `format_version`: a tool's file beside the baselines, to be left alone). JSON that
/// is no object, or a baseline file that is corrupt, truncated, newer or invalid, is an
/// error naming `origin`.
pub fn parse_file(text: &str, origin: &str) -> Result<Option<BaselineEntry>, BaselineError> {
    // One light pass tells what the file is, then a baseline file has its one full
    // parse (or the parse of its version, which says why it does not read).
    match serde_json::from_str::<Shape>(text) {
        Ok(Shape::Object {
            id: true,
            version: Version::Read(version),
        }) => BaselineEntry::from_json_version(text, origin, version).map(Some),
        Ok(Shape::Object {
            id: true,
            version: Version::Unreadable,
        }) => BaselineEntry::from_json(text, origin).map(Some),
        Ok(Shape::Object { .. }) => Ok(None),
        Ok(Shape::NotAnObject(what)) => Err(BaselineError::Invalid {
            path: origin.to_string(),
            reason: format!(
                "it holds {what}, not a baseline (a JSON object with `id` and \
                 `format_version`): restore it from git, or remove it"
            ),
        }),
        // Not valid JSON: a truncated baseline file must be an error, not skipped.
        Err(_) => BaselineEntry::from_json(text, origin).map(Some),
    }
}

/// What the light pass over a `.json` file of a baseline directory finds.
enum Shape {
    /// A JSON object: whether it has an `id`, and its `format_version`. With both it
    /// is meant as a baseline file; without, it is some other file (a tool's config
    /// beside the baselines), noted and left alone.
    Object { id: bool, version: Version },
    /// JSON that is no object at all, e.g. `null`, in words.
    NotAnObject(&'static str),
}

/// An object's `format_version`.
enum Version {
    /// There is none.
    Absent,
    /// Given once, as a `u32`.
    Read(u32),
    /// Given twice, or not as a `u32`: [`BaselineEntry::from_json`] says why.
    Unreadable,
}

impl<'de> Deserialize<'de> for Shape {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ShapeVisitor)
    }
}

struct ShapeVisitor;

impl<'de> serde::de::Visitor<'de> for ShapeVisitor {
    type Value = Shape;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("JSON")
    }

    fn visit_unit<E>(self) -> Result<Shape, E> {
        Ok(Shape::NotAnObject("JSON `null`"))
    }

    fn visit_bool<E>(self, _: bool) -> Result<Shape, E> {
        Ok(Shape::NotAnObject("a JSON boolean"))
    }

    fn visit_i64<E>(self, _: i64) -> Result<Shape, E> {
        Ok(Shape::NotAnObject("a JSON number"))
    }

    fn visit_u64<E>(self, _: u64) -> Result<Shape, E> {
        Ok(Shape::NotAnObject("a JSON number"))
    }

    fn visit_f64<E>(self, _: f64) -> Result<Shape, E> {
        Ok(Shape::NotAnObject("a JSON number"))
    }

    fn visit_str<E>(self, _: &str) -> Result<Shape, E> {
        Ok(Shape::NotAnObject("a JSON string"))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Shape, A::Error> {
        // Read as a `Value` would be: JSON named as an array must be valid to the letter.
        while seq.next_element::<serde_json::Value>()?.is_some() {}
        Ok(Shape::NotAnObject("a JSON array"))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Shape, A::Error> {
        let mut id = false;
        let mut version: Option<serde_json::Value> = None;
        let mut repeated = false;
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "format_version" => {
                    repeated |= version.is_some();
                    version = Some(map.next_value()?);
                    continue;
                }
                "id" => id = true,
                _ => {}
            }
            // Until both keys are seen, values are read as a `Value` would be: an
            // object left alone must be valid JSON to the letter (a lone surrogate or
            // an out-of-range number makes it an error). A baseline file's full parse
            // checks the rest, which is only skipped here (the samples: most of it).
            if id && version.is_some() {
                map.next_value::<serde::de::IgnoredAny>()?;
            } else {
                map.next_value::<serde_json::Value>()?;
            }
        }
        let version = match version {
            None => Version::Absent,
            Some(v) if !repeated => u32::deserialize(&v).map_or(Version::Unreadable, Version::Read),
            Some(_) => Version::Unreadable,
        };
        Ok(Shape::Object { id, version })
    }
}
