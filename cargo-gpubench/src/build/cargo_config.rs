//! The workspace's `.cargo/config.toml` as far as libtorch goes: `cargo gpubench
//! setup` writes there the libtorch tch builds against (`[env] LIBTORCH`) and where
//! bench executables load it from (an rpath in `[build] rustflags`), so that plain
//! `cargo bench` and `cargo test` build and run with no environment set, and with
//! the environment `cargo gpubench` builds with: switching between them rebuilds
//! nothing. `cargo gpubench` reads the same `LIBTORCH` back ([`configured_libtorch`]).
//!
//! What it did not write stays as it was: other keys and tables, comments (an
//! inline one after a value it replaces too), the file's permissions. A `LIBTORCH`
//! it replaces is said ([`Written::replaced`]); a read-only file, or one cargo could
//! not parse, is refused with the file named rather than replaced.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use toml_edit::{Array, DocumentMut, Item, Table, Value};

use crate::exit_code::UsageError;

/// The rustflags entry that makes bench executables find libtorch at run time.
const RPATH_FLAG: &str = "-Clink-arg=-Wl,-rpath,";

/// A `LIBTORCH` set in a cargo configuration file's `[env]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfiguredLibtorch {
    /// The libtorch directory it names (the one holding `lib/`).
    pub dir: PathBuf,
    /// The file that sets it.
    pub file: PathBuf,
}

/// The cargo configuration files that apply in `dir`, nearest first, as cargo reads
/// them: `.cargo/config.toml` (or the older `.cargo/config`) of `dir` and of each
/// directory above it, then `$CARGO_HOME`'s.
pub(crate) fn config_files(dir: &Path) -> Vec<PathBuf> {
    // Cargo reads `config` when both exist.
    let in_dir = |cargo: PathBuf| {
        [cargo.join("config"), cargo.join("config.toml")]
            .into_iter()
            .find(|f| f.is_file())
    };
    let mut files: Vec<PathBuf> = dir
        .ancestors()
        .filter_map(|d| in_dir(d.join(".cargo")))
        .collect();
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")));
    if let Some(file) = cargo_home.and_then(in_dir) {
        if !files.contains(&file) {
            files.push(file);
        }
    }
    files
}

/// The `LIBTORCH` that cargo's configuration gives builds in `dir` (the nearest
/// file that sets it wins, as in cargo), `None` when none does or a file cannot be
/// read (cargo itself then says what is wrong with it).
pub(crate) fn configured_libtorch(dir: &Path) -> Option<ConfiguredLibtorch> {
    config_files(dir).into_iter().find_map(|file| {
        let text = std::fs::read_to_string(&file).ok()?;
        let doc: toml::Table = toml::from_str(&text).ok()?;
        let entry = doc.get("env")?.as_table()?.get("LIBTORCH")?;
        let (value, relative) = match entry {
            toml::Value::String(s) => (s.clone(), false),
            toml::Value::Table(t) => (
                t.get("value")?.as_str()?.to_string(),
                t.get("relative")
                    .and_then(toml::Value::as_bool)
                    .unwrap_or(false),
            ),
            _ => return None,
        };
        let dir = if relative {
            // Relative to the directory holding `.cargo/`.
            file.parent()?.parent()?.join(value)
        } else {
            PathBuf::from(value)
        };
        Some(ConfiguredLibtorch { dir, file })
    })
}

/// Refuses a cargo configuration file that applies in `dir` and is not TOML, naming
/// it and the parse error: cargo cannot read the workspace past it (`cargo
/// locate-project` and every build fail), so nothing that asks cargo about the
/// workspace can go on.
pub(crate) fn check_parses(dir: &Path) -> Result<()> {
    for file in config_files(dir) {
        let text = std::fs::read_to_string(&file)
            .with_context(|| format!("failed to read {}", file.display()))?;
        if let Err(e) = text.parse::<DocumentMut>() {
            return Err(UsageError(format!(
                "{} is not valid TOML, and cargo reads it for every build here: fix it \
                 (or move it away), then run the command again: {}",
                file.display(),
                e.to_string().trim_end()
            ))
            .into());
        }
    }
    Ok(())
}

/// What [`write_libtorch`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Written {
    /// The file written.
    pub file: PathBuf,
    /// Whether it changed (false: it already said so).
    pub changed: bool,
    /// The `LIBTORCH` it replaced, as the file wrote it, when the file set another.
    pub replaced: Option<String>,
    /// A reason the rpath may not apply (a `[target]` table of the file with its own
    /// `rustflags`, which cargo then uses instead of `[build]`'s).
    pub caveat: Option<String>,
}

/// Sets `[env] LIBTORCH = libtorch_root` and an rpath to `lib_dir` in `[build]
/// rustflags` of `workspace_root/.cargo/config.toml` (created if missing; the rest
/// of the file, comments included, kept; an rpath this wrote before replaced),
/// written to a temporary file with the file's permissions and renamed over it. A
/// read-only file that would change is refused, left as it is.
pub(crate) fn write_libtorch(
    workspace_root: &Path,
    libtorch_root: &Path,
    lib_dir: &Path,
) -> Result<Written> {
    let dir = workspace_root.join(".cargo");
    let file = match [dir.join("config"), dir.join("config.toml")]
        .into_iter()
        .find(|f| f.is_file())
    {
        Some(f) => f,
        None => dir.join("config.toml"),
    };
    let before = match std::fs::read_to_string(&file) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e).with_context(|| format!("failed to read {}", file.display())),
    };
    let mut doc: DocumentMut = before.parse().with_context(|| {
        format!(
            "{} is not valid TOML: fix it, or pass --no-cargo-config",
            file.display()
        )
    })?;
    let text_of = |p: &Path| p.to_string_lossy().into_owned();

    let env = table(&mut doc, "env", &file)?;
    let new_value = text_of(libtorch_root);
    let replaced = env.get("LIBTORCH").and_then(|old| match old.as_str() {
        Some(same) if same == new_value => None,
        Some(other) => Some(other.to_string()),
        // `{ value = "…", relative = true }`: as written, without its comments.
        None => {
            let mut shown = old.clone();
            if let Some(v) = shown.as_value_mut() {
                v.decor_mut().clear();
            }
            Some(shown.to_string().trim().to_string())
        }
    });
    set_keeping_decor(env, "LIBTORCH", Value::from(new_value));

    let build = table(&mut doc, "build", &file)?;
    let mut flags = match build.get("rustflags") {
        None => Array::new(),
        Some(item) => match item.as_value() {
            Some(Value::Array(a)) => a.clone(),
            // `rustflags = "-C foo -C bar"`: cargo splits it at whitespace.
            Some(Value::String(s)) => s.value().split_whitespace().collect(),
            _ => anyhow::bail!(
                "{}: [build] rustflags is neither a string nor an array: fix it, or pass --no-cargo-config",
                file.display()
            ),
        },
    };
    flags.retain(|v| !v.as_str().is_some_and(|s| s.starts_with(RPATH_FLAG)));
    flags.push(format!("{RPATH_FLAG}{}", text_of(lib_dir)));
    set_keeping_decor(build, "rustflags", Value::Array(flags));

    let caveat = doc
        .get("target")
        .and_then(Item::as_table_like)
        .and_then(|targets| {
            targets
                .iter()
                .find(|(_, t)| t.get("rustflags").is_some())
                .map(|(name, _)| {
                    format!(
                        "[target.{name}] in {} has its own rustflags, which cargo uses instead of \
                         [build]'s: add \"{RPATH_FLAG}{}\" there",
                        file.display(),
                        lib_dir.display()
                    )
                })
        });

    let after = doc.to_string();
    let changed = after != before;
    if changed {
        let permissions = match std::fs::metadata(&file) {
            Ok(m) => Some(m.permissions()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(e).with_context(|| format!("failed to read {}", file.display())),
        };
        if permissions.as_ref().is_some_and(|p| p.readonly()) {
            return Err(UsageError(format!(
                "{} is read-only, so setup leaves it as it is: make it writable (chmod u+w) \
                 and run `cargo gpubench setup` again, or pass --no-cargo-config and set \
                 LIBTORCH={} yourself",
                file.display(),
                libtorch_root.display()
            ))
            .into());
        }
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("failed to create {}", dir.display()))?;
        let tmp = dir.join(format!(".config.toml.gpubench-{}", std::process::id()));
        let written = std::fs::write(&tmp, &after).and_then(|()| match permissions {
            Some(p) => std::fs::set_permissions(&tmp, p),
            None => Ok(()),
        });
        written
            .and_then(|()| std::fs::rename(&tmp, &file))
            .with_context(|| {
                let _ = std::fs::remove_file(&tmp);
                format!("failed to write {}", file.display())
            })?;
    }
    Ok(Written {
        file,
        changed,
        replaced,
        caveat,
    })
}

/// Sets `key` of `table` to `value`, keeping what surrounds the old value (an inline
/// comment after it) when there was one.
fn set_keeping_decor(table: &mut Table, key: &str, mut value: Value) {
    if let Some(old) = table.get(key).and_then(Item::as_value) {
        *value.decor_mut() = old.decor().clone();
    }
    table[key] = Item::Value(value);
}

/// The table `name` of `doc`, made when missing.
fn table<'d>(doc: &'d mut DocumentMut, name: &str, file: &Path) -> Result<&'d mut Table> {
    let item = doc.entry(name).or_insert_with(|| Item::Table(Table::new()));
    item.as_table_mut().with_context(|| {
        format!(
            "{}: `{name}` is not a table: fix it, or pass --no-cargo-config",
            file.display()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn setup_writes_libtorch_and_the_rpath_and_keeps_the_rest() {
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path().join("ws");
        std::fs::create_dir_all(ws.join(".cargo")).unwrap();
        std::fs::write(
            ws.join(".cargo/config.toml"),
            "# the team's settings\n[build]\nrustflags = \"-C target-cpu=native\"\n\n[alias]\nb = \"bench\"\n",
        )
        .unwrap();
        let w = write_libtorch(&ws, Path::new("/t/torch"), Path::new("/t/torch/lib")).unwrap();
        assert!(w.changed && w.caveat.is_none(), "{w:?}");
        let text = std::fs::read_to_string(&w.file).unwrap();
        assert!(text.starts_with("# the team's settings\n"), "{text}");
        assert!(text.contains("b = \"bench\""), "{text}");
        let doc: toml::Table = toml::from_str(&text).unwrap();
        assert_eq!(doc["env"]["LIBTORCH"].as_str(), Some("/t/torch"));
        let flags: Vec<&str> = doc["build"]["rustflags"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert_eq!(
            flags,
            [
                "-C",
                "target-cpu=native",
                "-Clink-arg=-Wl,-rpath,/t/torch/lib"
            ]
        );
        // Read back, from the workspace and from below it.
        let found = configured_libtorch(&ws.join("crates/a")).unwrap();
        assert_eq!(found.dir, PathBuf::from("/t/torch"));
        assert_eq!(found.file, w.file);

        // Again: nothing changes. Another libtorch: the old rpath goes.
        let again = write_libtorch(&ws, Path::new("/t/torch"), Path::new("/t/torch/lib")).unwrap();
        assert!(!again.changed);
        write_libtorch(&ws, Path::new("/u/torch"), Path::new("/u/torch/lib")).unwrap();
        let doc: toml::Table = toml::from_str(&std::fs::read_to_string(&w.file).unwrap()).unwrap();
        let flags = doc["build"]["rustflags"].as_array().unwrap();
        assert_eq!(flags.len(), 3, "{flags:?}");
        assert_eq!(
            flags[2].as_str(),
            Some("-Clink-arg=-Wl,-rpath,/u/torch/lib")
        );
    }

    #[test]
    fn a_new_file_is_made_and_target_rustflags_are_named() {
        let tmp = tempfile::tempdir().unwrap();
        let w = write_libtorch(tmp.path(), Path::new("/t"), Path::new("/t/lib")).unwrap();
        assert_eq!(w.file, tmp.path().join(".cargo/config.toml"));
        assert!(w.changed);
        std::fs::write(
            &w.file,
            "[target.x86_64-unknown-linux-gnu]\nrustflags = [\"-Cforce-frame-pointers\"]\n",
        )
        .unwrap();
        let w = write_libtorch(tmp.path(), Path::new("/t"), Path::new("/t/lib")).unwrap();
        let caveat = w.caveat.unwrap();
        assert!(
            caveat.contains("[target.x86_64-unknown-linux-gnu]"),
            "{caveat}"
        );
        // Not TOML: an error naming the file and the way out.
        std::fs::write(&w.file, "[env\n").unwrap();
        let err = format!(
            "{:#}",
            write_libtorch(tmp.path(), Path::new("/t"), Path::new("/t/lib")).unwrap_err()
        );
        assert!(
            err.contains("config.toml") && err.contains("--no-cargo-config"),
            "{err}"
        );
    }

    #[test]
    fn what_setup_did_not_write_stays_and_a_libtorch_it_replaces_is_said() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join(".cargo/config.toml");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(
            &file,
            "[env]\n# ours\nLIBTORCH = \"/team/torch\" # the team's build\n\n[build]\nrustflags = [\"-Cdebuginfo=1\"] # keep\n",
        )
        .unwrap();
        let w = write_libtorch(tmp.path(), Path::new("/t"), Path::new("/t/lib")).unwrap();
        assert_eq!(w.replaced.as_deref(), Some("/team/torch"));
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(
            text.contains("# ours\nLIBTORCH = \"/t\" # the team's build\n"),
            "{text}"
        );
        assert!(
            text.contains(
                "rustflags = [\"-Cdebuginfo=1\", \"-Clink-arg=-Wl,-rpath,/t/lib\"] # keep\n"
            ),
            "{text}"
        );
        // Its own value again: nothing replaced.
        let w = write_libtorch(tmp.path(), Path::new("/t"), Path::new("/t/lib")).unwrap();
        assert_eq!((w.changed, w.replaced), (false, None));
    }

    #[test]
    #[cfg(unix)]
    fn a_read_only_file_is_refused_and_a_writable_one_keeps_its_mode() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join(".cargo/config.toml");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        let before = "[alias]\nb = \"bench\"\n";
        std::fs::write(&file, before).unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o444)).unwrap();
        let err = write_libtorch(tmp.path(), Path::new("/t"), Path::new("/t/lib")).unwrap_err();
        assert!(err.downcast_ref::<UsageError>().is_some(), "{err:#}");
        let err = format!("{err:#}");
        assert!(
            err.contains("config.toml is read-only") && err.contains("--no-cargo-config"),
            "{err}"
        );
        assert_eq!(std::fs::read_to_string(&file).unwrap(), before);
        let mode = |f: &Path| std::fs::metadata(f).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&file), 0o444);

        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
        let w = write_libtorch(tmp.path(), Path::new("/t"), Path::new("/t/lib")).unwrap();
        assert!(w.changed);
        assert_eq!(mode(&file), 0o640);
    }

    #[test]
    fn a_file_that_is_not_toml_is_named_with_the_parse_error() {
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path().join("ws");
        std::fs::create_dir_all(ws.join(".cargo")).unwrap();
        check_parses(&ws).unwrap();
        std::fs::write(ws.join(".cargo/config.toml"), "[env\nLIBTORCH = \"/t\"\n").unwrap();
        let err = check_parses(&ws.join("crates/a")).unwrap_err();
        assert!(err.downcast_ref::<UsageError>().is_some(), "{err:#}");
        let err = format!("{err:#}");
        assert!(
            err.contains("ws/.cargo/config.toml is not valid TOML")
                && err.contains("line 1, column 5"),
            "{err}"
        );
    }

    #[test]
    fn the_nearest_file_wins_and_relative_values_are_from_its_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let outer = tmp.path();
        let inner = outer.join("ws");
        std::fs::create_dir_all(outer.join(".cargo")).unwrap();
        std::fs::create_dir_all(inner.join(".cargo")).unwrap();
        std::fs::write(
            outer.join(".cargo/config.toml"),
            "[env]\nLIBTORCH = \"/outer\"\n",
        )
        .unwrap();
        assert_eq!(
            configured_libtorch(&inner).unwrap().dir,
            PathBuf::from("/outer")
        );
        std::fs::write(
            inner.join(".cargo/config.toml"),
            "[env]\nLIBTORCH = { value = \"libtorch\", relative = true }\n",
        )
        .unwrap();
        assert_eq!(
            configured_libtorch(&inner).unwrap().dir,
            inner.join("libtorch")
        );
        let elsewhere = tempfile::tempdir().unwrap();
        assert!(configured_libtorch(elsewhere.path()).is_none());
    }
}
