//! Writing an archive: the manifest first, then the executables, the build scripts'
//! shared libraries and the saved baselines, gzipped, into a temporary file beside
//! the output that is renamed over it at the end, so a failed or killed archive never
//! leaves half a file under the output's name.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use flate2::write::GzEncoder;
use flate2::Compression;

use super::{
    ArchiveError, ArchiveManifest, ArchivedBenchmark, ArchivedExecutable, ARCHIVE_FORMAT_VERSION,
    ARCHIVE_KIND, BASELINES_DIR, BENCH_PROFILE, BIN_DIR, LIB_DIR, MANIFEST_ENTRY,
};
use crate::build::compile::BenchExecutable;
use crate::build::libtorch::has_libtorch;

/// What goes into an archive.
#[derive(Debug, Clone, Default)]
pub struct Bundle {
    /// The gpubench harnesses, with the benchmarks each listed.
    pub executables: Vec<BundledExecutable>,
    /// Native library directories of build scripts under the target directory (what
    /// a run puts on the loader path); their shared libraries are bundled.
    pub native_dirs: Vec<PathBuf>,
    /// The saved baselines: name and the directory holding its files.
    pub baselines: Vec<(String, PathBuf)>,
    /// The workspace's git commit.
    pub git_commit: Option<String>,
    /// The version of the libtorch the executables were built against.
    pub libtorch_version: Option<String>,
}

/// A built executable and its benchmarks.
#[derive(Debug, Clone)]
pub struct BundledExecutable {
    /// The executable (its package is `None` only for `--exe` ones, never here).
    pub exe: BenchExecutable,
    /// Its benchmarks.
    pub benchmarks: Vec<ArchivedBenchmark>,
}

/// What [`write`] wrote.
#[derive(Debug, Clone)]
pub struct Written {
    /// The archive's manifest.
    pub manifest: ArchiveManifest,
    /// The archive's size in bytes.
    pub bytes: u64,
    /// Files left out, and why, for the user.
    pub notes: Vec<String>,
}

/// Writes `bundle` as an archive at `output`, replacing any file there only once the
/// new one is complete.
pub fn write(bundle: &Bundle, output: &Path) -> Result<Written, ArchiveError> {
    let (libs, mut notes) = shared_libraries(&bundle.native_dirs)?;
    let mut executables: Vec<(&Path, ArchivedExecutable)> = bundle
        .executables
        .iter()
        .map(|b| {
            let package = b.exe.package.clone().unwrap_or_default();
            let name = b
                .exe
                .path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| b.exe.target.clone());
            let mut benchmarks = b.benchmarks.clone();
            benchmarks.sort_by(|a, b| a.id.cmp(&b.id));
            let entry = ArchivedExecutable {
                file: format!("{BIN_DIR}/{package}/{name}"),
                package,
                target: b.exe.target.clone(),
                benchmarks,
            };
            (b.exe.path.as_path(), entry)
        })
        .collect();
    executables.sort_by(|a, b| (&a.1.package, &a.1.target).cmp(&(&b.1.package, &b.1.target)));
    let mut baselines = Vec::new();
    for (name, dir) in &bundle.baselines {
        let files = json_files(dir)?;
        if files.is_empty() {
            notes.push(format!("baseline `{name}` has no files: not bundled"));
            continue;
        }
        baselines.push((name.clone(), files));
    }
    baselines.sort();
    let manifest = ArchiveManifest {
        kind: ARCHIVE_KIND.to_string(),
        format_version: ARCHIVE_FORMAT_VERSION,
        created_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        gpubench_version: env!("CARGO_PKG_VERSION").to_string(),
        profile: BENCH_PROFILE.to_string(),
        git_commit: bundle.git_commit.clone(),
        libtorch_version: bundle.libtorch_version.clone(),
        executables: executables.iter().map(|(_, e)| e.clone()).collect(),
        native_libs: libs
            .iter()
            .map(|(name, _)| format!("{LIB_DIR}/{name}"))
            .collect(),
        baselines: baselines.iter().map(|(name, _)| name.clone()).collect(),
    };

    let io = |action: &'static str, path: &Path| {
        let path = path.display().to_string();
        move |source| ArchiveError::Io {
            action,
            path: path.clone(),
            source,
        }
    };
    let dir = match output.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let name = output
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "archive".into());
    // `-o dist/benches.tar.gz` into a `dist/` not made yet: made, as cargo's
    // `--artifact-dir` is.
    std::fs::create_dir_all(dir).map_err(io("create the directory", dir))?;
    // Beside the output, so the rename stays on one filesystem; removed on error.
    let partial = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".partial")
        .tempfile_in(dir)
        .map_err(io("create a temporary file in", dir))?;
    let to_partial = io("write", partial.path());
    let mut tar = tar::Builder::new(GzEncoder::new(
        BufWriter::new(partial.as_file()),
        Compression::default(),
    ));
    tar.mode(tar::HeaderMode::Deterministic);
    // Plain entries only: every tar reads them, and executables rarely have holes
    // worth keeping out.
    tar.sparse(false);
    let json = manifest.to_json_pretty();
    let mut header = tar::Header::new_gnu();
    header.set_size(json.len() as u64);
    header.set_mode(0o644);
    header.set_mtime(0);
    tar.append_data(&mut header, MANIFEST_ENTRY, json.as_bytes())
        .map_err(&to_partial)?;
    for (source, entry) in &executables {
        append_file(&mut tar, source, &entry.file)?;
    }
    for (name, source) in &libs {
        append_file(&mut tar, source, &format!("{LIB_DIR}/{name}"))?;
    }
    for (name, files) in &baselines {
        for file in files {
            let file_name = file.file_name().unwrap_or_default().to_string_lossy();
            append_file(
                &mut tar,
                file,
                &format!("{BASELINES_DIR}/{name}/{file_name}"),
            )?;
        }
    }
    let gz = tar.into_inner().map_err(&to_partial)?;
    let mut buffered = gz.finish().map_err(&to_partial)?;
    buffered.flush().map_err(&to_partial)?;
    drop(buffered);
    let file = partial.as_file();
    file.sync_all().map_err(&to_partial)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        file.set_permissions(std::fs::Permissions::from_mode(0o644))
            .map_err(&to_partial)?;
    }
    let bytes = file.metadata().map_err(&to_partial)?.len();
    partial
        .persist(output)
        .map_err(|e| io("rename the finished archive to", output)(e.error))?;
    Ok(Written {
        manifest,
        bytes,
        notes,
    })
}

fn append_file<W: Write>(
    tar: &mut tar::Builder<W>,
    source: &Path,
    name: &str,
) -> Result<(), ArchiveError> {
    // Opened here so a link is stored as the file it points at.
    let mut file = File::open(source).map_err(|e| ArchiveError::Io {
        action: "read",
        path: source.display().to_string(),
        source: e,
    })?;
    tar.append_file(name, &mut file)
        .map_err(|e| ArchiveError::Io {
            action: "add to the archive",
            path: source.display().to_string(),
            source: e,
        })
}

/// A shared library to bundle: its file name and where it is.
type Library = (String, PathBuf);

/// Whether `name` is a shared library's file name (`libx.so`, `libx.so.1`,
/// `libx.dylib`, `x.dll`).
pub fn is_shared_library(name: &str) -> bool {
    name.ends_with(".so")
        || name.contains(".so.")
        || name.ends_with(".dylib")
        || name.ends_with(".dll")
}

/// The shared libraries in `dirs`, by file name (the first directory wins a name),
/// and notes on what was left out. A directory that holds libtorch itself is left
/// out: the running machine brings its own.
fn shared_libraries(dirs: &[PathBuf]) -> Result<(Vec<Library>, Vec<String>), ArchiveError> {
    let mut out: Vec<Library> = Vec::new();
    let mut notes = Vec::new();
    let mut seen = BTreeSet::new();
    for dir in dirs {
        if !dir.is_dir() {
            continue;
        }
        if has_libtorch(dir) {
            notes.push(format!(
                "{} holds libtorch: not bundled (the machine that runs the archive needs its own libtorch)",
                dir.display()
            ));
            continue;
        }
        let read = |e| ArchiveError::Io {
            action: "read the directory",
            path: dir.display().to_string(),
            source: e,
        };
        let mut names: Vec<(String, PathBuf)> = std::fs::read_dir(dir)
            .map_err(read)?
            .filter_map(Result::ok)
            .filter_map(|e| Some((e.file_name().into_string().ok()?, e.path())))
            .filter(|(name, path)| is_shared_library(name) && path.is_file())
            .collect();
        names.sort();
        for (name, path) in names {
            if seen.insert(name.clone()) {
                out.push((name, path));
            } else {
                notes.push(format!(
                    "{} has the name of a library bundled from another directory: not bundled",
                    path.display()
                ));
            }
        }
    }
    Ok((out, notes))
}

/// The `.json` files of a baseline's directory, sorted.
fn json_files(dir: &Path) -> Result<Vec<PathBuf>, ArchiveError> {
    let read = |e| ArchiveError::Io {
        action: "read the baseline directory",
        path: dir.display().to_string(),
        source: e,
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(read)?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json") && p.is_file())
        .collect();
    files.sort();
    Ok(files)
}
