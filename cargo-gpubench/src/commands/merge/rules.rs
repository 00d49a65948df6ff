//! The rules of `merge`, apart from the file system: which runs may be folded into
//! one, what the merged run's manifest says, and what the user is warned about.
//!
//! * **A run still being written is refused**: its manifest says `running` and its
//!   cargo gpubench is alive, so merging it would fold in half a part.
//! * **The same run given twice is refused** (same run id), naming both places.
//! * **`ab` runs merge only with `ab` runs of the same base and head builds**,
//!   measured the same way (paired or not): the parts of one `ab` split with
//!   `--partition` (one per GPU or cluster task) fold into one paired `ab` run, the
//!   head's records as its records and the base's under `base/`, judged again from
//!   the per-process ratios each part recorded. An `ab` run with a plain run, or
//!   with an `ab` run of another base or head (another commit, uncommitted changes
//!   on one side, other library files, or paired on one side only), is refused
//!   naming the run and its revisions: their verdicts answer different questions,
//!   and a plain run has no base to pair with; the refusal names that first, since
//!   it is the larger mistake.
//! * **A benchmark id in two inputs is refused.** Merging folds *disjoint* parts of a
//!   suite (the runs of `--partition K/N`, or runs of different filters) into one
//!   run; it never pools two measurements of one benchmark, nor picks one of them:
//!   - measured on **different device models**: never pooled, since the figures
//!     describe different hardware; the error names the benchmark, both runs and
//!     both models, and says how to compare them instead;
//!   - on **the same model** (or a model not known): refused too. Pooling the two
//!     runs' processes would look sound (the process is the unit of repetition), but
//!     the runs also differ in what varies between runs and machines (the host's
//!     dispatch speed drifts by up to 45% between runs on one H200, the machines
//!     may differ in driver, clocks or settings), so the pooled interval would
//!     describe neither; and keeping one silently drops a measurement. A benchmark
//!     listed but not run in one input (interrupted) counts too: the inputs then
//!     are not the disjoint parts merging is for.
//! * **Status**: the merged run is `completed` only when every input completed;
//!   otherwise `interrupted` when an input was interrupted, else `incomplete`, with a
//!   warning naming each such input and how many of its benchmarks did not run
//!   (they are listed in the merged manifest as not run). Nothing hides a missing
//!   part.
//! * **Partitions**: when every input carries a part `K/N` of one scheme, the parts
//!   of `1..=N` that no input carries are named in a warning (a part that held no
//!   benchmark leaves no run: its absence loses nothing). Inputs split in different
//!   ways (schemes, N, or some not split) get a warning that their parts need not add
//!   up to the suite.
//! * Inputs measured with different settings (`--quick`, `--flush-l2`) get a
//!   warning; inputs on different device models (for different benchmarks) a note:
//!   every record keeps the fingerprint of the device and host that measured it, and
//!   a comparison judges each benchmark against a baseline of its own model.
//!
//! The merged manifest lists the union of the inputs' benchmarks in the order of an
//! unpartitioned run, and [`RunManifest::merged_from`] the inputs. Its `started_at` is
//! the earliest input's start and `finished_at` when it was merged.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use thiserror::Error;

use crate::execute::partition::Partition;
use crate::execute::select::natural_cmp;
use crate::format::plural;
use crate::store::manifest::{
    ManifestAb, ManifestArchive, ManifestBenchmark, ManifestExecutable, ManifestRevision,
    MergedPart, RunManifest, RunStatus, Selection, MANIFEST_FORMAT_VERSION,
};
use crate::store::runs::RunDir;

/// Why runs cannot be merged.
#[derive(Debug, Error)]
pub(crate) enum MergeError {
    /// An input is still being written.
    #[error("run `{run}` ({dir}) is still being written: its manifest says running{pid}; wait for that run to end and merge again (a part still being written would be merged half)")]
    StillRunning {
        /// Its run id.
        run: String,
        /// Its directory.
        dir: String,
        /// ` (pid N)` when known.
        pid: String,
    },
    /// One run given twice.
    #[error("run `{run}` is given twice ({first} and {second}): give each run once")]
    SameRun {
        /// Its run id.
        run: String,
        /// Where it was found first.
        first: String,
        /// Where it was found again.
        second: String,
    },
    /// An `ab` run among the inputs.
    #[error("run `{run}` is an `ab` run ({subject}): {why}; merge folds an `ab` run only with `ab` runs of the same base and head builds, measured alike, so that one paired verdict covers them. {fix}")]
    AbRun {
        /// Its run id.
        run: String,
        /// `head (…) against base (…)`.
        subject: String,
        /// What is wrong with merging it with the others.
        why: String,
        /// What to do instead.
        fix: String,
    },
    /// A benchmark measured on two device models.
    #[error("benchmark `{name}` was measured on {first_model} in run `{first_run}` and on {second_model} in run `{second_run}`: results from different device models are never pooled; merge runs of one device model (each benchmark in one run), and compare the two with `cargo gpubench compare run:{first_run} run:{second_run} --allow-device-mismatch`")]
    DeviceModels {
        /// `<target>/<id>`.
        name: String,
        /// The first run holding it.
        first_run: String,
        /// The device model there.
        first_model: String,
        /// The second run holding it.
        second_run: String,
        /// The device model there.
        second_model: String,
    },
    /// A benchmark in two inputs.
    #[error("benchmark `{name}` is in both run `{first_run}` and run `{second_run}`{model}: merge folds disjoint parts of a suite (such as the runs of --partition K/N) and never pools or picks between two measurements of one benchmark; leave one of the two runs out, or measure the parts with --partition so each benchmark runs once")]
    Overlap {
        /// `<target>/<id>`.
        name: String,
        /// The first run holding it.
        first_run: String,
        /// The second run holding it.
        second_run: String,
        /// ` (both on <model>)` when known.
        model: String,
    },
}

/// One input of a merge: a stored run and the device model of each of its records.
#[derive(Debug, Clone)]
pub(crate) struct Part {
    /// Its directory.
    pub dir: PathBuf,
    /// Its manifest.
    pub manifest: RunManifest,
    /// The device model each of its recorded benchmarks was measured on, by id
    /// (`unknown` left out).
    pub models: BTreeMap<String, String>,
}

impl Part {
    /// `run `<id>`` with its partition, for sentences.
    fn describe(&self) -> String {
        match &self.manifest.partition {
            Some(p) => format!("run `{}` (part {p})", self.manifest.run_id),
            None => format!("run `{}`", self.manifest.run_id),
        }
    }

    /// Its device models, sorted, once each.
    fn device_models(&self) -> Vec<String> {
        let models: BTreeSet<&String> = self.models.values().collect();
        models.into_iter().cloned().collect()
    }
}

/// What merging the inputs gives, before anything is written.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    /// The merged run's benchmarks in order, each with the index of its input.
    pub benchmarks: Vec<(usize, ManifestBenchmark)>,
    /// The merged run's status.
    pub status: RunStatus,
    /// Why the merged run lacks benchmarks of the suite: inputs cut short, parts of
    /// a split missing, inputs split in different ways. Each fails the merge unless
    /// `--allow-missing not-run` lets it pass.
    pub gaps: Vec<String>,
    /// What else the user must know: mixed settings.
    pub warnings: Vec<String>,
    /// What is worth knowing: several device models.
    pub notes: Vec<String>,
}

/// Checks the rules of the module docs and plans the merged run.
pub(crate) fn plan(parts: &[Part]) -> Result<Plan, MergeError> {
    for p in parts {
        if p.manifest.state() == RunStatus::Running {
            return Err(MergeError::StillRunning {
                run: p.manifest.run_id.clone(),
                dir: p.dir.display().to_string(),
                pid: p
                    .manifest
                    .pid
                    .map(|pid| format!(" (pid {pid})"))
                    .unwrap_or_default(),
            });
        }
    }
    for (i, a) in parts.iter().enumerate() {
        if let Some(b) = parts[i + 1..]
            .iter()
            .find(|b| b.manifest.run_id == a.manifest.run_id)
        {
            return Err(MergeError::SameRun {
                run: a.manifest.run_id.clone(),
                first: a.dir.display().to_string(),
                second: b.dir.display().to_string(),
            });
        }
    }

    if let Some(refusal) = ab_refusal(parts) {
        return Err(refusal);
    }

    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    let mut benchmarks = Vec::new();
    for (i, part) in parts.iter().enumerate() {
        for b in &part.manifest.benchmarks {
            if let Some(&first) = seen.get(b.id.as_str()) {
                return Err(overlap(&parts[first], part, b));
            }
            seen.insert(&b.id, i);
            let mut entry = b.clone();
            entry.record = b.record.as_ref().map(|_| RunDir::record_file(&b.id));
            benchmarks.push((i, entry));
        }
    }
    benchmarks.sort_by(|(_, a), (_, b)| {
        natural_cmp(
            &format!("{}/{}", a.target, a.id),
            &format!("{}/{}", b.target, b.id),
        )
    });

    let states: Vec<RunStatus> = parts.iter().map(|p| p.manifest.state()).collect();
    let status = if states.contains(&RunStatus::Interrupted) {
        RunStatus::Interrupted
    } else if states.contains(&RunStatus::Incomplete) {
        RunStatus::Incomplete
    } else {
        RunStatus::Completed
    };
    let mut gaps = Vec::new();
    for (p, state) in parts.iter().zip(&states) {
        if matches!(state, RunStatus::Completed | RunStatus::Running) {
            continue;
        }
        let how = p.manifest.why_unfinished().unwrap_or_default();
        let m = &p.manifest;
        let missing = m.benchmarks.len() - m.finished();
        gaps.push(format!(
            "{} {how}; {missing} of its {} benchmark{} did not run, and the merged run is \
             marked {}",
            p.describe(),
            m.benchmarks.len(),
            plural(m.benchmarks.len()),
            status_word(status)
        ));
    }
    gaps.extend(partition_warning(parts));
    let warnings: Vec<String> = settings_warning(parts).into_iter().collect();

    let mut notes = Vec::new();
    let mut by_model: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for p in parts {
        for model in p.device_models() {
            by_model
                .entry(model)
                .or_default()
                .push(format!("`{}`", p.manifest.run_id));
        }
    }
    if by_model.len() > 1 {
        let list: Vec<String> = by_model
            .iter()
            .map(|(model, runs)| format!("{model} (run {})", runs.join(", ")))
            .collect();
        notes.push(format!(
            "the merged run's benchmarks were measured on different device models: {}; \
             each record keeps its own, and a comparison judges each benchmark against a \
             baseline of its model",
            list.join(", ")
        ));
    }
    Ok(Plan {
        benchmarks,
        status,
        gaps,
        warnings,
        notes,
    })
}

/// Why an `ab` input cannot be merged, the worst reason first: mixed with a plain
/// run, then with an `ab` run of other revisions or measured another way; `None`
/// when no input is an `ab` run, or all are parts of one `ab`.
fn ab_refusal(parts: &[Part]) -> Option<MergeError> {
    let (first_ab, ab) = parts
        .iter()
        .find_map(|p| p.manifest.ab.as_ref().map(|ab| (p, ab)))?;
    let refuse = |why: String, fix: &str| MergeError::AbRun {
        run: first_ab.manifest.run_id.clone(),
        subject: ab.subject(),
        why,
        fix: fix.to_string(),
    };
    let each_alone = "Show each `ab` run on its own (`cargo gpubench report run:ID`), or \
                      measure again with one `cargo gpubench ab` (--partition K/N for \
                      parts of one suite)";
    if let Some(plain) = parts.iter().find(|p| p.manifest.ab.is_none()) {
        return Some(refuse(
            format!(
                "run `{}` is a plain run, measured without a base to pair with",
                plain.manifest.run_id
            ),
            "Leave the `ab` run out of the merge.",
        ));
    }
    let revisions = |a: &ManifestAb| (revision_key(&a.base), revision_key(&a.head));
    if let Some((other, other_ab)) = parts.iter().find_map(|p| {
        p.manifest
            .ab
            .as_ref()
            .filter(|o| revisions(o) != revisions(ab))
            .map(|o| (p, o))
    }) {
        let which = if revision_key(&other_ab.base) != revision_key(&ab.base) {
            "base"
        } else {
            "head"
        };
        return Some(refuse(
            format!(
                "run `{}` judged {} with another {which}, so their verdicts answer different \
                 questions",
                other.manifest.run_id,
                other_ab.subject()
            ),
            each_alone,
        ));
    }
    if let Some(other) = parts.iter().find(|p| {
        p.manifest
            .ab
            .as_ref()
            .is_some_and(|o| o.paired != ab.paired)
    }) {
        return Some(refuse(
            format!(
                "run `{}` measured base and head {}, run `{}` {}, so their verdicts rest on \
                 different evidence",
                first_ab.manifest.run_id,
                ab.how_short(),
                other.manifest.run_id,
                other.manifest.ab.as_ref().expect("found as ab").how_short()
            ),
            each_alone,
        ));
    }
    None
}

/// What names a revision of an `ab` run: its commit (with whether it had changes
/// not committed), else its label, and the digests of the files its processes
/// loaded (two builds of a dirty working tree differ there).
fn revision_key(r: &ManifestRevision) -> (String, bool, Vec<String>) {
    let mut digests: Vec<String> = r.libraries.iter().map(|l| l.sha256.clone()).collect();
    digests.sort();
    (
        r.commit.clone().unwrap_or_else(|| r.label.clone()),
        r.dirty,
        digests,
    )
}

fn status_word(status: RunStatus) -> &'static str {
    match status {
        RunStatus::Running => "running",
        RunStatus::Completed => "completed",
        RunStatus::Interrupted => "interrupted",
        RunStatus::Incomplete => "incomplete",
    }
}

/// The refusal of benchmark `b` of `second`, already in `first`.
fn overlap(first: &Part, second: &Part, b: &ManifestBenchmark) -> MergeError {
    let name = format!("{}/{}", b.target, b.id);
    let first_run = first.manifest.run_id.clone();
    let second_run = second.manifest.run_id.clone();
    match (first.models.get(&b.id), second.models.get(&b.id)) {
        (Some(a), Some(z)) if a != z => MergeError::DeviceModels {
            name,
            first_run,
            first_model: a.clone(),
            second_run,
            second_model: z.clone(),
        },
        (a, z) => MergeError::Overlap {
            name,
            first_run,
            second_run,
            model: match (a, z) {
                (Some(m), Some(_)) => format!(" (both on {m})"),
                _ => String::new(),
            },
        },
    }
}

/// The parts of one split that no input carries, or that the inputs were split in
/// different ways.
fn partition_warning(parts: &[Part]) -> Option<String> {
    let splits: Vec<Option<Partition>> = parts
        .iter()
        .map(|p| p.manifest.partition.as_deref().and_then(|s| s.parse().ok()))
        .collect();
    if splits.iter().all(Option::is_none) {
        return None;
    }
    let schemes: BTreeSet<(String, u32)> = splits
        .iter()
        .map(|s| match s {
            Some(p) => (format!("{:?}", p.kind), p.total),
            None => (String::new(), 0),
        })
        .collect();
    if schemes.len() > 1 {
        let list: Vec<String> = parts
            .iter()
            .zip(&splits)
            .map(|(p, s)| match s {
                Some(s) => format!("run `{}`: {s}", p.manifest.run_id),
                None => format!("run `{}`: not split", p.manifest.run_id),
            })
            .collect();
        return Some(format!(
            "the runs were split in different ways ({}): their parts need not add up to \
             the suite, so benchmarks may be missing; split every run with the same \
             --partition scheme and N",
            list.join(", ")
        ));
    }
    let first = splits[0].expect("every input is split");
    let have: BTreeSet<u32> = splits.iter().flatten().map(|p| p.index).collect();
    let missing: Vec<String> = (1..=first.total)
        .filter(|k| !have.contains(k))
        .map(|index| Partition { index, ..first }.to_string())
        .collect();
    if missing.is_empty() {
        return None;
    }
    Some(format!(
        "{} of the {} parts {} missing: {}; the merged run lacks their benchmarks (merge \
         their runs too; a part that held no benchmark left no run and loses nothing)",
        missing.len(),
        first.total,
        if missing.len() == 1 { "is" } else { "are" },
        missing.join(", ")
    ))
}

/// That the inputs were measured with different settings that move figures.
fn settings_warning(parts: &[Part]) -> Option<String> {
    let differs = |f: fn(&RunManifest) -> bool, flag: &str| -> Option<String> {
        let (with, without): (Vec<&Part>, Vec<&Part>) = parts.iter().partition(|p| f(&p.manifest));
        if with.is_empty() || without.is_empty() {
            return None;
        }
        let ids = |ps: &[&Part]| -> String {
            ps.iter()
                .map(|p| format!("`{}`", p.manifest.run_id))
                .collect::<Vec<_>>()
                .join(", ")
        };
        Some(format!(
            "{flag} in run {}, not in run {}",
            ids(&with),
            ids(&without)
        ))
    };
    let found: Vec<String> = [
        differs(|m| m.quick, "--quick"),
        differs(|m| m.flush_l2, "--flush-l2"),
    ]
    .into_iter()
    .flatten()
    .collect();
    (!found.is_empty()).then(|| {
        format!(
            "the runs were measured with different settings ({}): their figures are not \
             alike, and a comparison checks each benchmark's settings against its baseline",
            found.join("; ")
        )
    })
}

/// The archive every part ran from (the same build: made at one time, of one
/// commit; each machine had its own copy of the file), else none.
fn one_archive(parts: &[Part]) -> Option<ManifestArchive> {
    let first = parts.first()?.manifest.archive.clone()?;
    parts
        .iter()
        .all(|p| {
            p.manifest.archive.as_ref().is_some_and(|a| {
                (&a.created_at, &a.git_commit) == (&first.created_at, &first.git_commit)
            })
        })
        .then_some(first)
}

/// The merged run's manifest: `plan`'s benchmarks, the inputs as
/// [`RunManifest::merged_from`], and what the inputs share.
pub(crate) fn manifest(
    parts: &[Part],
    plan: &Plan,
    run_id: &str,
    merged_at: &str,
    command_line: Vec<String>,
) -> RunManifest {
    let joined = |f: fn(&RunManifest) -> &str| -> String {
        let mut seen: Vec<&str> = Vec::new();
        for p in parts {
            let v = f(&p.manifest);
            if !seen.contains(&v) {
                seen.push(v);
            }
        }
        seen.join(", ")
    };
    let mut executables: Vec<ManifestExecutable> = Vec::new();
    for e in parts.iter().flat_map(|p| &p.manifest.executables) {
        if !executables.contains(e) {
            executables.push(e.clone());
        }
    }
    RunManifest {
        format_version: MANIFEST_FORMAT_VERSION,
        run_id: run_id.to_string(),
        started_at: parts
            .iter()
            .map(|p| p.manifest.started_at.clone())
            .min()
            .unwrap_or_else(|| merged_at.to_string()),
        finished_at: Some(merged_at.to_string()),
        status: plan.status,
        error: None,
        pid: None,
        host: crate::store::manifest::this_host(),
        command_line,
        device: joined(|m| &m.device),
        quick: parts.iter().any(|p| p.manifest.quick),
        flush_l2: parts.iter().any(|p| p.manifest.flush_l2),
        processes: parts
            .first()
            .map(|p| p.manifest.processes)
            .unwrap_or_default(),
        partition: None,
        // Every input's, by the rules: the parts of one `ab`.
        ab: parts.first().and_then(|p| p.manifest.ab.clone()),
        selection: merged_selection(parts, plan),
        timeout_s: parts
            .iter()
            .map(|p| p.manifest.timeout_s)
            .fold(0.0, f64::max),
        libtorch_lib: joined(|m| &m.libtorch_lib),
        executables,
        benchmarks: plan.benchmarks.iter().map(|(_, b)| b.clone()).collect(),
        archive: one_archive(parts),
        merged_from: parts
            .iter()
            .map(|p| MergedPart {
                run_id: p.manifest.run_id.clone(),
                path: p.dir.display().to_string(),
                partition: p.manifest.partition.clone(),
                device: p.manifest.device.clone(),
                device_models: p.device_models(),
                started_at: p.manifest.started_at.clone(),
                finished_at: p.manifest.finished_at.clone(),
                status: p.manifest.state(),
                benchmarks: p.manifest.benchmarks.len(),
            })
            .collect(),
        gaps: plan.gaps.clone(),
    }
}

/// What the merged run left out: what its inputs' filters left out, and, as
/// `other_parts`, what their partitions left to parts no input carries (missing
/// parts); none when an input kept no selection.
fn merged_selection(parts: &[Part], plan: &Plan) -> Option<Selection> {
    let mut all_targets = true;
    let mut filtered_out = BTreeSet::new();
    let mut other_parts = BTreeSet::new();
    for p in parts {
        let s = p.manifest.selection.as_ref()?;
        all_targets &= s.all_targets;
        filtered_out.extend(s.filtered_out.iter().cloned());
        other_parts.extend(s.other_parts.iter().cloned());
    }
    let merged: BTreeSet<&str> = plan.benchmarks.iter().map(|(_, b)| b.id.as_str()).collect();
    let keep = |ids: BTreeSet<String>| -> Vec<String> {
        ids.into_iter()
            .filter(|id| !merged.contains(id.as_str()))
            .collect()
    };
    let other_parts = keep(other_parts);
    Some(Selection {
        all_targets,
        // A benchmark a part filtered out but that its part's partition gave to a
        // missing part is missing, not filtered.
        filtered_out: keep(filtered_out)
            .into_iter()
            .filter(|id| other_parts.binary_search(id).is_err())
            .collect(),
        other_parts,
    })
}

/// Whether `status` lets the merged run be saved as a baseline, and if not why.
pub(crate) fn unsaveable(status: RunStatus) -> Option<&'static str> {
    match status {
        RunStatus::Completed => None,
        RunStatus::Interrupted => Some("an input was interrupted"),
        RunStatus::Incomplete | RunStatus::Running => Some("an input is incomplete"),
    }
}

#[cfg(test)]
mod tests;
