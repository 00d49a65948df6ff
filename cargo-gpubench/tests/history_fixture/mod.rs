//! Git repositories of committed baselines for `cargo gpubench history`, made from
//! the H200 records in `docs/gpu-runs/` with their real noise: every commit's
//! baseline of a benchmark is three processes drawn (seeded) from the pool of real
//! processes measured of it in separate runs, their times scaled by the level
//! planted at that commit, and saved as a run saves it
//! (`BaselineEntry::from_record`). Commits are written with `git fast-import`, so a
//! repository of hundreds of commits takes a second.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use gpubench_analysis::BaselineEntry;
use gpubench_record::id::file_stem_for_id;
use gpubench_record::record::{ProcessRecord, RawRecord};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_pcg::Pcg64;

/// The repository's root, two levels above this package.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the package is in the workspace")
        .to_path_buf()
}

/// The records of the files in the tar.gz `archive` (under `docs/gpu-runs/`) whose
/// path ends in `suffix` and lies outside a `baseline/` copy, in path order.
pub fn records(archive: &str, suffix: &str) -> Vec<RawRecord> {
    records_in("docs/gpu-runs", archive, suffix)
        .into_iter()
        .map(|(_, r)| r)
        .collect()
}

/// The records (with their paths) of the files in the tar.gz `archive` under `dir`
/// (relative to the repository) whose path ends in `suffix`, lies in a stored run
/// (`/runs/`) and outside a `baseline/` copy, in path order.
pub fn records_in(dir: &str, archive: &str, suffix: &str) -> Vec<(String, RawRecord)> {
    let mut found: Vec<(String, RawRecord)> = files_in(dir, archive)
        .into_iter()
        .filter(|(name, _)| {
            name.ends_with(suffix)
                && !name.ends_with("/manifest.json")
                && !name.contains("/baseline/")
                && name.contains("/runs/")
        })
        .map(|(name, bytes)| {
            let text = String::from_utf8(bytes).expect("UTF-8 JSON");
            let record = RawRecord::from_json(&text, &name).expect("a record");
            (name, record)
        })
        .collect();
    found.sort_by(|a, b| a.0.cmp(&b.0));
    assert!(
        !found.is_empty(),
        "no record ending in {suffix} in {archive}"
    );
    found
}

/// Every file of the tar.gz `archive` under `dir` (relative to the repository): its
/// path in the archive and content.
pub fn files_in(dir: &str, archive: &str) -> Vec<(String, Vec<u8>)> {
    let path = repo_root().join(dir).join(archive);
    let file = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(file));
    let mut out = Vec::new();
    for entry in tar.entries().expect("a tar archive") {
        let mut entry = entry.expect("a tar entry");
        if !entry.header().entry_type().is_file() {
            continue;
        }
        let name = entry.path().expect("a path").to_string_lossy().into_owned();
        let mut bytes = Vec::new();
        entry.read_to_end(&mut bytes).expect("readable");
        out.push((name, bytes));
    }
    out
}

/// The real processes of one benchmark, pooled over separate runs, and a record to
/// dress them in.
#[derive(Clone)]
pub struct Noise {
    template: RawRecord,
    processes: Vec<ProcessRecord>,
}

impl Noise {
    /// Pools the measured processes of `records` (all of one benchmark).
    pub fn of(records: &[RawRecord]) -> Self {
        let processes: Vec<ProcessRecord> = records
            .iter()
            .flat_map(|r| {
                r.processes
                    .iter()
                    .filter(|x| x.measurement.is_some())
                    .cloned()
            })
            .collect();
        assert!(processes.len() >= 6, "too few processes to draw from");
        Noise {
            template: records[0].clone(),
            processes,
        }
    }

    /// How many real processes the pool holds.
    pub fn processes(&self) -> usize {
        self.processes.len()
    }

    /// A baseline entry of benchmark `id`: three processes drawn from the pool with
    /// `rng`, every time (wall, host, device, kernel) multiplied by `level`.
    pub fn entry(&self, id: &str, level: f64, rng: &mut Pcg64) -> BaselineEntry {
        let mut record = self.template.clone();
        record.id = id.to_string();
        record.name = id.to_string();
        // A run's first process is the one that counts kernels: keep one such.
        let counts = |r: &ProcessRecord| {
            r.measurement
                .as_ref()
                .and_then(|m| m.kernel.as_ref())
                .is_some_and(|k| k.counters.is_some())
        };
        let (counting, others): (Vec<&ProcessRecord>, Vec<&ProcessRecord>) =
            self.processes.iter().partition(|r| counts(r));
        let chosen: Vec<&ProcessRecord> = match counting.choose(rng) {
            Some(first) => std::iter::once(*first)
                .chain(others.choose_multiple(rng, 2).copied())
                .collect(),
            None => self.processes.choose_multiple(rng, 3).collect(),
        };
        record.processes = chosen
            .into_iter()
            .enumerate()
            .map(|(i, r)| {
                let mut r = r.clone();
                r.process = i as u32 + 1;
                let m = r.measurement.as_mut().expect("measured");
                for s in &mut m.samples {
                    s.wall_ns *= level;
                    s.host_ns *= level;
                    s.device_ns = s.device_ns.map(|d| d * level);
                }
                if let Some(k) = m.kernel.as_mut() {
                    for x in &mut k.samples_ns {
                        *x *= level;
                    }
                }
                r
            })
            .collect();
        BaselineEntry::from_record(&record).expect("a measured record saves")
    }
}

/// A seeded generator for a fixture.
pub fn rng(seed: u64) -> Pcg64 {
    Pcg64::seed_from_u64(seed)
}

/// One commit of a fixture: its subject and the files of the baseline directory
/// (name, content); `None` leaves the baseline directory as it was (a commit that
/// only touches code).
pub struct FixtureCommit {
    /// The first line of the message.
    pub subject: String,
    /// The baseline's files, replacing all of the previous commit's.
    pub files: Option<Vec<(String, Vec<u8>)>>,
}

/// A baseline file's name and content for `entry`, as a save writes it.
pub fn file_of(entry: &BaselineEntry) -> (String, Vec<u8>) {
    (
        format!("{}.json", file_stem_for_id(&entry.id)),
        entry.to_json_pretty().into_bytes(),
    )
}

/// Makes a git repository at `dir` whose branch `main` holds `commits` in order
/// (one a day from 2026-01-01), the baseline under `baseline_dir` (relative), each
/// commit also changing `src.txt` so none is empty; checks `main` out.
pub fn write_repo(dir: &Path, baseline_dir: &str, commits: &[FixtureCommit]) {
    std::fs::create_dir_all(dir).unwrap();
    git(dir, &["init", "-q", "-b", "main"]);
    let mut stream: Vec<u8> = Vec::new();
    let t0 = 1_767_225_600u64; // 2026-01-01T00:00:00Z
    for (i, c) in commits.iter().enumerate() {
        let mark = i + 1;
        let msg = format!("{}\n", c.subject);
        stream.extend_from_slice(
            format!(
                "commit refs/heads/main\nmark :{mark}\ncommitter Fixture <fixture@example.com> {} +0000\ndata {}\n{msg}",
                t0 + 86_400 * i as u64,
                msg.len()
            )
            .as_bytes(),
        );
        if mark > 1 {
            stream.extend_from_slice(format!("from :{}\n", mark - 1).as_bytes());
        }
        let code = format!("change {mark}\n");
        stream.extend_from_slice(
            format!("M 100644 inline src.txt\ndata {}\n{code}\n", code.len()).as_bytes(),
        );
        if let Some(files) = &c.files {
            stream.extend_from_slice(format!("D {baseline_dir}\n").as_bytes());
            for (name, bytes) in files {
                stream.extend_from_slice(
                    format!(
                        "M 100644 inline {baseline_dir}/{name}\ndata {}\n",
                        bytes.len()
                    )
                    .as_bytes(),
                );
                stream.extend_from_slice(bytes);
                stream.push(b'\n');
            }
        }
        stream.push(b'\n');
    }
    let mut child = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["fast-import", "--quiet"])
        .stdin(Stdio::piped())
        .spawn()
        .expect("git runs");
    child.stdin.take().unwrap().write_all(&stream).unwrap();
    assert!(child.wait().unwrap().success(), "git fast-import failed");
    git(dir, &["checkout", "-q", "-f", "main"]);
}

/// Runs git in `dir`, which must succeed.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "Fixture")
        .env("GIT_AUTHOR_EMAIL", "fixture@example.com")
        .env("GIT_COMMITTER_NAME", "Fixture")
        .env("GIT_COMMITTER_EMAIL", "fixture@example.com")
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}
