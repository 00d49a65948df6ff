//! Every committed version of a baseline, read from git without checking anything
//! out: the commits along the first-parent history of a revision that changed
//! `gpubench/baselines/<name>/` (`git log --first-parent -- <dir>`), each version's
//! tree and files through two `git cat-file --batch` processes (one for the trees,
//! one for every distinct file), parsed as a baseline directory is loaded
//! ([`gpubench_analysis::baseline::parse_file`], so every format version that loads
//! today loads here). A file that cannot be read is named with its commit and why;
//! the other files of that commit still count. [`analyse`] turns the versions into
//! each benchmark's series with change points and drift ([`HistoryReport`]).

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::Stdio;

use gpubench_analysis::baseline::parse_file;
use gpubench_analysis::history::{
    benchmark_series, ChangePoint, Drift, HistoryOptions, SeriesMetric, SeriesSettings,
    VersionPoint,
};
use gpubench_analysis::processes::Bound;
use gpubench_analysis::BaselineEntry;
use serde::Serialize;
use thiserror::Error;

use super::git;

/// What to read.
#[derive(Debug, Clone)]
pub struct HistoryQuery {
    /// A directory inside the repository (git runs there).
    pub repo_dir: PathBuf,
    /// The baseline's directory (absolute, or relative to `repo_dir`).
    pub baseline_dir: PathBuf,
    /// The revision whose first-parent history is read (`HEAD`, a branch, a tag).
    pub rev: String,
    /// Only commits after this date (git's `--since`: `2026-01-01`, `3 months ago`).
    pub since: Option<String>,
    /// At most this many of the latest versions.
    pub max_commits: Option<usize>,
}

/// A commit that holds a version of the baseline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CommitInfo {
    /// Full id.
    pub id: String,
    /// The first 10 characters of the id.
    pub short: String,
    /// Committer date, ISO 8601.
    pub date: String,
    /// The first line of the message.
    pub subject: String,
}

/// One version of the baseline: its commit and the benchmarks it holds.
#[derive(Debug, Clone)]
pub struct BaselineVersion {
    /// The commit.
    pub commit: CommitInfo,
    /// Its benchmarks (every readable file), sorted by id.
    pub entries: Vec<BaselineEntry>,
}

/// A file of a version that could not be read, or a version without the baseline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Unreadable {
    /// The commit.
    pub commit: CommitInfo,
    /// The file, relative to the repository (the directory when the whole version
    /// is meant).
    pub path: String,
    /// Why.
    pub reason: String,
}

/// Every version of a baseline, oldest first.
#[derive(Debug, Clone)]
pub struct BaselineHistory {
    /// The baseline's directory relative to the repository root, `/`-separated.
    pub path: String,
    /// The revision read, as given.
    pub rev: String,
    /// The versions that hold the baseline, oldest first.
    pub versions: Vec<BaselineVersion>,
    /// Files (or versions) that could not be read, oldest first.
    pub unreadable: Vec<Unreadable>,
}

/// Errors reading a baseline's history.
#[derive(Debug, Error)]
pub enum HistoryError {
    /// git could not be started.
    #[error("failed to run git: {source}; `cargo gpubench history` reads the baselines' commits with git, so install it or put it on PATH")]
    Spawn {
        /// The cause.
        source: std::io::Error,
    },
    /// The directory is not in a git repository.
    #[error("failed to read the baselines' history: {dir} is not inside a git repository; commit the baselines (gpubench/baselines/) to git and run it in that checkout")]
    NotARepository {
        /// Where it was looked for.
        dir: String,
    },
    /// The baseline's directory lies outside the repository.
    #[error("failed to read the history of {dir}: it is outside the git repository at {root}; pass a --baselines-dir inside it")]
    OutsideRepository {
        /// The baseline's directory.
        dir: String,
        /// The repository's root.
        root: String,
    },
    /// The revision names no commit.
    #[error("failed to resolve --rev {rev}: git knows no commit by that name; pass a branch, tag or commit (`git branch` lists branches)")]
    UnknownRevision {
        /// What was given.
        rev: String,
    },
    /// A git command failed.
    #[error("failed to {what}: git {args} said: {message}")]
    Git {
        /// What was being done.
        what: &'static str,
        /// git's arguments.
        args: String,
        /// git's stderr.
        message: String,
    },
    /// git's output could not be understood.
    #[error("failed to read git's output ({what}): {detail}")]
    Protocol {
        /// What was being read.
        what: &'static str,
        /// What was wrong.
        detail: String,
    },
}

/// Reads every version of the baseline `query` names (module docs).
pub fn read(query: &HistoryQuery) -> Result<BaselineHistory, HistoryError> {
    let root = toplevel(&query.repo_dir)?;
    let path = relative_path(&root, &query.repo_dir.join(&query.baseline_dir))?;
    verify_rev(&root, &query.rev)?;
    let commits = log(&root, query, &path)?;

    // Each version's tree.
    let tree_requests: Vec<String> = commits.iter().map(|c| format!("{}:{path}", c.id)).collect();
    let trees = cat_file(&root, &tree_requests)?;
    let mut unreadable = Vec::new();
    let mut listed: Vec<(usize, Vec<(String, String)>)> = Vec::new();
    let mut blobs: Vec<(String, String)> = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    for (i, (commit, tree)) in commits.iter().zip(trees).enumerate() {
        let Some(object) = tree else {
            unreadable.push(Unreadable {
                commit: commit.clone(),
                path: path.clone(),
                reason: "the baseline's directory was removed in this commit".into(),
            });
            continue;
        };
        if object.kind != "tree" {
            unreadable.push(Unreadable {
                commit: commit.clone(),
                path: path.clone(),
                reason: format!("it is a {} in this commit, not a directory", object.kind),
            });
            continue;
        }
        let mut files = Vec::new();
        for entry in parse_tree(&object.content, commit.id.len() / 2)? {
            let name = entry.name;
            if !name.ends_with(".json") || name.starts_with('.') {
                continue;
            }
            let file = format!("{path}/{name}");
            let why = match entry.mode.as_str() {
                "100644" | "100755" => None,
                "40000" => Some("it is a directory, not a baseline file"),
                "120000" => Some("it is a symbolic link: history reads only files"),
                _ => Some("it is not a regular file"),
            };
            if let Some(why) = why {
                unreadable.push(Unreadable {
                    commit: commit.clone(),
                    path: file,
                    reason: why.into(),
                });
                continue;
            }
            if seen.insert(entry.oid.clone()) {
                blobs.push((entry.oid.clone(), file.clone()));
            }
            files.push((file, entry.oid));
        }
        files.sort();
        listed.push((i, files));
    }

    // Every distinct file once, read and parsed on every core.
    let parsed = read_and_parse(&root, &blobs)?;

    let mut versions = Vec::new();
    for (i, files) in listed {
        let commit = &commits[i];
        let mut entries: Vec<BaselineEntry> = Vec::with_capacity(files.len());
        let mut first_file: HashMap<String, String> = HashMap::new();
        for (file, oid) in files {
            match &parsed[&oid] {
                Ok(Some(entry)) => {
                    if let Some(first) = first_file.insert(entry.id.clone(), file.clone()) {
                        unreadable.push(Unreadable {
                            commit: commit.clone(),
                            path: file,
                            reason: format!("it holds benchmark `{}` as {first} does", entry.id),
                        });
                        continue;
                    }
                    entries.push(entry.clone());
                }
                Ok(None) => {}
                Err(reason) => unreadable.push(Unreadable {
                    commit: commit.clone(),
                    path: file,
                    reason: reason.clone(),
                }),
            }
        }
        entries.sort_by(|a, b| a.id.cmp(&b.id));
        versions.push(BaselineVersion {
            commit: commit.clone(),
            entries,
        });
    }
    Ok(BaselineHistory {
        path,
        rev: query.rev.clone(),
        versions,
        unreadable,
    })
}

/// A file parsed: its entry, `None` for a JSON object that is no baseline file, or why
/// it could not be read.
type Parsed = Result<Option<BaselineEntry>, String>;

/// Files per `git cat-file --batch` of [`read_and_parse`].
const BLOBS_PER_BATCH: usize = 1000;

/// Reads the files `blobs` names (`(oid, path it was first seen at)`) and parses each
/// with the baseline store's parser. Batches of them go to one thread per core, each
/// with its own `git cat-file --batch`, so git's reading of one batch overlaps the
/// parsing of another. A file's error becomes its message, naming the path.
fn read_and_parse(
    root: &Path,
    blobs: &[(String, String)],
) -> Result<HashMap<String, Parsed>, HistoryError> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let batches: Vec<&[(String, String)]> = blobs.chunks(BLOBS_PER_BATCH).collect();
    let next = AtomicUsize::new(0);
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(batches.len().max(1));
    let parse = |path: &str, bytes: Option<Vec<u8>>| -> Parsed {
        let bytes = bytes.ok_or("git could not find the file's content")?;
        let text = std::str::from_utf8(&bytes).map_err(|e| format!("it is not UTF-8 text: {e}"))?;
        parse_file(text, path).map_err(|e| e.to_string())
    };
    let work = || -> Result<Vec<(String, Parsed)>, HistoryError> {
        let mut out = Vec::new();
        loop {
            let Some(batch) = batches.get(next.fetch_add(1, Ordering::Relaxed)) else {
                return Ok(out);
            };
            let oids: Vec<String> = batch.iter().map(|(oid, _)| oid.clone()).collect();
            for ((oid, path), object) in batch.iter().zip(cat_file(root, &oids)?) {
                out.push((oid.clone(), parse(path, object.map(|o| o.content))));
            }
        }
    };
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads).map(|_| s.spawn(work)).collect();
        let mut parsed = HashMap::with_capacity(blobs.len());
        for h in handles {
            parsed.extend(h.join().expect("reading baseline files does not panic")?);
        }
        Ok(parsed)
    })
}

/// Runs git and returns its stdout, or a [`HistoryError::Git`].
fn output(dir: &Path, args: &[&str], what: &'static str) -> Result<Vec<u8>, HistoryError> {
    let out = git::output(dir, args).map_err(|source| HistoryError::Spawn { source })?;
    if out.status.success() {
        Ok(out.stdout)
    } else {
        Err(HistoryError::Git {
            what,
            args: args.join(" "),
            message: git::stderr_text(&out),
        })
    }
}

fn toplevel(dir: &Path) -> Result<PathBuf, HistoryError> {
    match git::toplevel(dir).map_err(|source| HistoryError::Spawn { source })? {
        Ok(root) => Ok(root),
        Err(out) => {
            let message = git::stderr_text(&out);
            if message.contains("not a git repository") {
                Err(HistoryError::NotARepository {
                    dir: dir.display().to_string(),
                })
            } else {
                Err(HistoryError::Git {
                    what: "find the repository",
                    args: git::TOPLEVEL_ARGS.join(" "),
                    message,
                })
            }
        }
    }
}

/// `dir` relative to `root`, `/`-separated; `dir` need not exist in the working tree.
fn relative_path(root: &Path, dir: &Path) -> Result<String, HistoryError> {
    let canonical_root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    // Canonicalise the deepest part that exists, keep the rest as written.
    let mut existing = dir.to_path_buf();
    let mut rest = Vec::new();
    while !existing.exists() {
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                existing = parent.to_path_buf();
            }
            _ => break,
        }
    }
    let mut full = existing.canonicalize().unwrap_or(existing);
    for name in rest.into_iter().rev() {
        full.push(name);
    }
    let outside = || HistoryError::OutsideRepository {
        dir: dir.display().to_string(),
        root: root.display().to_string(),
    };
    let relative = full.strip_prefix(&canonical_root).map_err(|_| outside())?;
    let parts: Vec<String> = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.is_empty() || parts.iter().any(|p| p == "..") {
        return Err(outside());
    }
    Ok(parts.join("/"))
}

fn verify_rev(root: &Path, rev: &str) -> Result<(), HistoryError> {
    match git::commit_of(root, rev).map_err(|source| HistoryError::Spawn { source })? {
        Some(_) => Ok(()),
        None => Err(HistoryError::UnknownRevision {
            rev: rev.to_string(),
        }),
    }
}

/// The commits that changed `path` along the first-parent history, oldest first.
fn log(root: &Path, query: &HistoryQuery, path: &str) -> Result<Vec<CommitInfo>, HistoryError> {
    let mut args: Vec<String> = vec![
        "log".into(),
        "--first-parent".into(),
        "--format=%H%x1f%cI%x1f%s%x1e".into(),
    ];
    if let Some(since) = &query.since {
        args.push(format!("--since={since}"));
    }
    if let Some(n) = query.max_commits {
        args.push(format!("--max-count={n}"));
    }
    args.extend([query.rev.clone(), "--".into(), path.into()]);
    let args_ref: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = output(root, &args_ref, "list the baseline's commits")?;
    let text = String::from_utf8_lossy(&out);
    let mut commits = Vec::new();
    for record in text.split('\u{1e}') {
        let record = record.trim_matches('\n');
        if record.is_empty() {
            continue;
        }
        let mut fields = record.splitn(3, '\u{1f}');
        let (Some(id), Some(date), Some(subject)) = (fields.next(), fields.next(), fields.next())
        else {
            return Err(HistoryError::Protocol {
                what: "git log",
                detail: format!("a commit line without three fields: {record:?}"),
            });
        };
        commits.push(CommitInfo {
            short: id.chars().take(10).collect(),
            id: id.to_string(),
            date: date.to_string(),
            subject: subject.to_string(),
        });
    }
    commits.reverse();
    Ok(commits)
}

/// An object `git cat-file --batch` handed back.
struct Object {
    kind: String,
    content: Vec<u8>,
}

/// The objects `requests` name, in order (`None` for one git does not have), from one
/// `git cat-file --batch`: the requests are written from a thread while the answers
/// are read, so neither pipe fills up.
fn cat_file(root: &Path, requests: &[String]) -> Result<Vec<Option<Object>>, HistoryError> {
    if requests.is_empty() {
        return Ok(Vec::new());
    }
    let mut child = git::command(root)
        .args(["cat-file", "--batch"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| HistoryError::Spawn { source })?;
    let mut stdin = child.stdin.take().expect("stdin is piped");
    let input: Vec<u8> = requests
        .iter()
        .flat_map(|r| r.bytes().chain(std::iter::once(b'\n')))
        .collect();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let mut reader = BufReader::with_capacity(1 << 20, child.stdout.take().expect("piped"));
    let protocol = |detail: String| HistoryError::Protocol {
        what: "git cat-file --batch",
        detail,
    };
    let mut objects = Vec::with_capacity(requests.len());
    let mut header = String::new();
    for request in requests {
        header.clear();
        let n = reader
            .read_line(&mut header)
            .map_err(|e| protocol(e.to_string()))?;
        if n == 0 {
            break;
        }
        let line = header.trim_end_matches('\n');
        if line.ends_with(" missing") || line.ends_with(" ambiguous") {
            objects.push(None);
            continue;
        }
        let mut parts = line.split(' ');
        let (Some(_oid), Some(kind), Some(size)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(protocol(format!(
                "unexpected answer {line:?} to {request:?}"
            )));
        };
        let size: usize = size
            .parse()
            .map_err(|_| protocol(format!("unexpected size in {line:?}")))?;
        let mut content = vec![0; size + 1];
        reader
            .read_exact(&mut content)
            .map_err(|e| protocol(format!("{e} while reading {request}")))?;
        content.pop();
        objects.push(Some(Object {
            kind: kind.to_string(),
            content,
        }));
    }
    let _ = writer.join();
    let out = child
        .wait_with_output()
        .map_err(|source| HistoryError::Spawn { source })?;
    if objects.len() != requests.len() {
        return Err(HistoryError::Git {
            what: "read the baseline's files",
            args: "cat-file --batch".into(),
            message: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(objects)
}

/// One entry of a tree object.
struct TreeEntry {
    mode: String,
    name: String,
    oid: String,
}

/// A tree object's entries: `<mode> <name>\0<hash>` each, the hash `hash_len` bytes.
fn parse_tree(bytes: &[u8], hash_len: usize) -> Result<Vec<TreeEntry>, HistoryError> {
    let mut entries = Vec::new();
    let mut rest = bytes;
    let bad = || HistoryError::Protocol {
        what: "a tree object",
        detail: "an entry is cut short".into(),
    };
    while !rest.is_empty() {
        let space = rest.iter().position(|&b| b == b' ').ok_or_else(bad)?;
        let nul = rest.iter().position(|&b| b == 0).ok_or_else(bad)?;
        if nul < space || rest.len() < nul + 1 + hash_len {
            return Err(bad());
        }
        let mode = String::from_utf8_lossy(&rest[..space]).into_owned();
        let name = String::from_utf8_lossy(&rest[space + 1..nul]).into_owned();
        let oid = rest[nul + 1..nul + 1 + hash_len]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        entries.push(TreeEntry { mode, name, oid });
        rest = &rest[nul + 1 + hash_len..];
    }
    Ok(entries)
}

/// The format of [`HistoryReport`] (`history --format json`; see
/// `docs/schema/history.schema.json`).
pub const HISTORY_FORMAT_VERSION: u32 = 1;

/// A baseline's history analysed: every benchmark's series with its change points
/// and drift, each named by its commit.
#[derive(Debug, Clone, Serialize)]
pub struct HistoryReport {
    /// [`HISTORY_FORMAT_VERSION`].
    pub format_version: u32,
    /// The baseline's name.
    pub baseline: String,
    /// Its directory relative to the repository root.
    pub path: String,
    /// The revision whose first-parent history was read.
    pub rev: String,
    /// The versions read, oldest first; points name them by index.
    pub commits: Vec<CommitInfo>,
    /// Files or versions that could not be read, and why.
    pub unreadable: Vec<Unreadable>,
    /// How the series were analysed.
    pub options: HistoryOptions,
    /// The benchmarks, sorted by id.
    pub benchmarks: Vec<BenchmarkHistory>,
}

/// One benchmark over the versions.
#[derive(Debug, Clone, Serialize)]
pub struct BenchmarkHistory {
    /// Its id.
    pub id: String,
    /// The first version after its last one, when the latest version no longer holds
    /// it: it has no latest figure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gone_at: Option<CommitInfo>,
    /// What its time rested on in the latest version that says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bound: Option<Bound>,
    /// Its figures: time, kernel time, energy per call, share of peak, then exact
    /// counts per call.
    pub series: Vec<SeriesHistory>,
}

/// One figure of a benchmark over the versions.
#[derive(Debug, Clone, Serialize)]
pub struct SeriesHistory {
    /// Which figure.
    #[serde(flatten)]
    pub metric: SeriesMetric,
    /// Words for it, e.g. `device time`, or `wall time (2 intra-op threads)` for a
    /// series measured with other settings than the benchmark's latest.
    pub label: String,
    /// What its points were measured on and with: all alike, as `compare` would
    /// compare them; other settings make another series.
    pub settings: SeriesSettings,
    /// How its settings differ from the benchmark's latest series of the figure
    /// (empty for that one).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub settings_differ: Vec<String>,
    /// Whether it repeats exactly (counts), so every change is a change point.
    pub exact: bool,
    /// Its points, oldest first (`version` indexes `commits`).
    pub points: Vec<VersionPoint>,
    /// Steps or drifts smaller than this (relative) are noise for this series.
    pub threshold: f64,
    /// The steps, oldest first, each with the commit that introduced it.
    pub change_points: Vec<ChangePointAt>,
    /// The trend over the latest points.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drift: Option<DriftAt>,
    /// Points (indices into `points`) whose interval is too wide to take part in
    /// finding steps and drifts.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unplaced: Vec<usize>,
}

/// A change point with the commits that hold it: the code changed after `since` (the
/// series' last version at the old level) and up to `commit` (its first at the new
/// one), so `git log since..commit` lists the candidates.
#[derive(Debug, Clone, Serialize)]
pub struct ChangePointAt {
    /// The first version measured at the new level (`commits[version]`).
    pub commit: CommitInfo,
    /// Index into `commits`.
    pub version: usize,
    /// The series' last version at the old level.
    pub since: CommitInfo,
    /// Versions of the baseline in between (measured with other settings, too
    /// noisy, or without the benchmark), which cannot place the step more closely.
    pub versions_between: usize,
    /// The step (`index` is into the series' points).
    #[serde(flatten)]
    pub change: ChangePoint,
}

/// A drift with the commit its window starts at.
#[derive(Debug, Clone, Serialize)]
pub struct DriftAt {
    /// The first commit of the window.
    pub from_commit: CommitInfo,
    /// The trend.
    #[serde(flatten)]
    pub drift: Drift,
}

impl DriftAt {
    /// The version (index into `commits`) its window starts at, in `series`.
    pub fn from_commit_version(&self, series: &SeriesHistory) -> usize {
        series.points[self.drift.from_index].version
    }
}

impl ChangePointAt {
    /// `since..commit` in short ids, as `git log` takes it.
    pub fn range(&self) -> String {
        format!("{}..{}", self.since.short, self.commit.short)
    }
}

impl SeriesHistory {
    /// The latest change point.
    pub fn latest_change(&self) -> Option<&ChangePointAt> {
        self.change_points.last()
    }

    /// The drift, when flagged.
    pub fn flagged_drift(&self) -> Option<&DriftAt> {
        self.drift.as_ref().filter(|d| d.drift.flagged)
    }
}

impl BenchmarkHistory {
    /// Its time series (the latest timer's, measured with the latest settings),
    /// when it has one.
    pub fn time(&self) -> Option<&SeriesHistory> {
        self.series
            .iter()
            .filter(|s| matches!(s.metric, SeriesMetric::Time(_)))
            .max_by_key(|s| s.points.last().map(|p| p.version))
    }

    /// Its fastest-samples series (work on the CPU device), measured with the latest
    /// settings.
    pub fn fastest(&self) -> Option<&SeriesHistory> {
        self.series
            .iter()
            .filter(|s| s.metric == SeriesMetric::Fastest)
            .max_by_key(|s| s.points.last().map(|p| p.version))
    }

    /// Its energy-per-call series measured with the latest settings, when some
    /// version has energy.
    pub fn energy(&self) -> Option<&SeriesHistory> {
        self.latest_of(SeriesMetric::Energy)
    }

    /// Its share-of-peak series measured with the latest settings, when some version
    /// has one.
    pub fn peak_share(&self) -> Option<&SeriesHistory> {
        self.latest_of(SeriesMetric::PeakShare)
    }

    fn latest_of(&self, metric: SeriesMetric) -> Option<&SeriesHistory> {
        self.series
            .iter()
            .filter(|s| s.metric == metric)
            .max_by_key(|s| s.points.last().map(|p| p.version))
    }

    /// Its kernel time series.
    pub fn kernel(&self) -> Option<&SeriesHistory> {
        self.series
            .iter()
            .find(|s| s.metric == SeriesMetric::Kernel)
    }

    /// Its exact series with at least one change.
    pub fn changed_counts(&self) -> impl Iterator<Item = &SeriesHistory> {
        self.series
            .iter()
            .filter(|s| s.exact && !s.change_points.is_empty())
    }
}

/// Which benchmarks to keep: ids containing one of `patterns` (equal to one, with
/// `exact`); all when empty.
#[derive(Debug, Clone, Default)]
pub struct IdFilter {
    /// Substrings or whole ids.
    pub patterns: Vec<String>,
    /// Whole ids.
    pub exact: bool,
}

impl IdFilter {
    /// Whether `id` is kept.
    pub fn keeps(&self, id: &str) -> bool {
        self.patterns.is_empty()
            || self.patterns.iter().any(|p| {
                if self.exact {
                    id == p
                } else {
                    id.contains(p.as_str())
                }
            })
    }
}

/// Analyses the benchmarks of `history` that `filter` keeps.
pub fn analyse(
    baseline: &str,
    history: BaselineHistory,
    filter: &IdFilter,
    options: &HistoryOptions,
) -> HistoryReport {
    let kept: Vec<Vec<&BaselineEntry>> = history
        .versions
        .iter()
        .map(|v| v.entries.iter().filter(|e| filter.keeps(&e.id)).collect())
        .collect();
    let commits: Vec<CommitInfo> = history.versions.iter().map(|v| v.commit.clone()).collect();
    let benchmarks = benchmark_series(&kept, options)
        .into_iter()
        .map(|b| BenchmarkHistory {
            id: b.id,
            gone_at: commits.get(b.last_version + 1).cloned(),
            bound: b.bound,
            series: b
                .series
                .into_iter()
                .map(|s| {
                    let at = |index: usize| s.points[index].version;
                    let label = if s.settings_differ.is_empty() {
                        s.metric.label()
                    } else {
                        format!("{} ({})", s.metric.label(), s.settings_differ.join(", "))
                    };
                    SeriesHistory {
                        metric: s.metric,
                        label,
                        settings: s.settings,
                        settings_differ: s.settings_differ,
                        exact: s.metric.exact(),
                        threshold: s.analysis.threshold,
                        change_points: s
                            .analysis
                            .change_points
                            .iter()
                            .map(|c| {
                                // The series' last point before the step that took
                                // part (a noisy one could be at either level): the
                                // code changed after it.
                                let before = (0..c.index)
                                    .rev()
                                    .find(|i| !s.analysis.unplaced.contains(i))
                                    .map_or(0, at);
                                ChangePointAt {
                                    commit: commits[at(c.index)].clone(),
                                    version: at(c.index),
                                    since: commits[before].clone(),
                                    versions_between: at(c.index) - before - 1,
                                    change: *c,
                                }
                            })
                            .collect(),
                        drift: s.analysis.drift.map(|d| DriftAt {
                            from_commit: commits[at(d.from_index)].clone(),
                            drift: d,
                        }),
                        unplaced: s.analysis.unplaced,
                        points: s.points,
                    }
                })
                .collect(),
        })
        .collect();
    HistoryReport {
        format_version: HISTORY_FORMAT_VERSION,
        baseline: baseline.to_string(),
        path: history.path,
        rev: history.rev,
        commits,
        unreadable: history.unreadable,
        options: *options,
        benchmarks,
    }
}
/// `dir` or its nearest ancestor that exists: git must start inside the repository
/// even when the baseline is gone from the working tree.
pub fn existing_ancestor(dir: &Path) -> PathBuf {
    dir.ancestors()
        .find(|d| d.is_dir())
        .unwrap_or(dir)
        .to_path_buf()
}
