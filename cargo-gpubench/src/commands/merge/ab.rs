//! A merged `ab` run judged as `ab` judges one: the head's records against the
//! base's that each part stored beside them (`base/`), on the per-process ratios
//! the parts' processes recorded, with the paired noise threshold the parts were
//! judged with; the comparison stored with the run, so `report` shows it again.

use std::path::Path;

use anyhow::{Context, Result};
use gpubench_analysis::baseline::{
    compare_paired_records, BenchmarkComparison, ComparisonOutcome, Missing, MissingKind,
};
use gpubench_analysis::BaselineEntry;
use gpubench_record::record::RawRecord;

use super::rules::Part;
use crate::cli::MergeArgs;
use crate::compare::{Absences, RunComparison};
use crate::store::manifest::{RunManifest, BASE_RECORDS};
use crate::store::runs::RunDir;
use crate::store::{Source, SourceKind};

/// The head of the merged `ab` run at `run` judged against its base.
pub(super) fn judge(
    run: &Path,
    parts: &[Part],
    head: &[RawRecord],
    manifest: &RunManifest,
    args: &MergeArgs,
) -> Result<RunComparison> {
    let ab = manifest.ab.as_ref().expect("judged only for an ab run");
    let base_dir = run.join(BASE_RECORDS);
    let mut base = Vec::new();
    for b in manifest.benchmarks.iter().filter(|b| b.record.is_some()) {
        let file = base_dir.join(RunDir::record_file(&b.id));
        if file.is_file() {
            base.push(
                RawRecord::read(&file)
                    .with_context(|| format!("failed to read record {}", file.display()))?,
            );
        }
    }
    // What the parts were judged with: the merge's gate, `ab`'s paired threshold
    // (which merge has no option for), and the base as their comparisons named it.
    let judged: Vec<RunComparison> = parts
        .iter()
        .filter_map(|p| RunComparison::read(&p.dir).ok().flatten())
        .collect();
    let mut settings = args.verdicts.settings();
    if let Some(c) = judged.first() {
        settings.config.paired_noise_threshold = c.settings.config.paired_noise_threshold;
    }
    let source = judged
        .first()
        .map(|c| c.baseline.clone())
        .unwrap_or_else(|| Source {
            kind: SourceKind::Revision,
            name: ab.base.label.clone(),
            path: base_dir.display().to_string(),
            default: false,
            device: None,
        });

    let entries: Vec<BaselineEntry> = base
        .iter()
        .filter_map(|r| BaselineEntry::from_record(r).ok())
        .collect();
    let mut set = compare_paired_records(&base, head, &settings.options())
        .context("failed to judge the head against the base")?;
    // A benchmark the base failed on has nothing to be judged against, as in `ab`.
    for r in base.iter().filter(|r| !r.passed()) {
        if head.iter().any(|h| h.id == r.id) && !set.comparisons.iter().any(|c| c.id == r.id) {
            set.comparisons.push(BenchmarkComparison {
                id: r.id.clone(),
                outcome: ComparisonOutcome::NotCompared {
                    reason: "the base failed".to_string(),
                },
            });
        }
    }
    let mut absences = Absences::of_run(manifest);
    absences.side = format!("head ({})", ab.head.label);
    absences.unusable_baseline = base
        .iter()
        .filter(|r| !r.passed())
        .map(|r| (r.id.clone(), "it failed on the base".to_string()))
        .collect();
    // What the head lost (in the base's listing, not the head's), said by the parts.
    let mut gone: Vec<Missing> = Vec::new();
    for m in judged
        .iter()
        .flat_map(|c| &c.missing)
        .filter(|m| m.kind == MissingKind::Gone)
    {
        if !gone.iter().any(|g| g.id == m.id) {
            gone.push(m.clone());
        }
    }
    let comparison =
        RunComparison::of_set(set, head, &entries, source, settings, &absences).with_missing(gone);
    comparison
        .store(run, &entries)
        .context("failed to store the comparison with the run")?;
    Ok(comparison)
}

#[cfg(test)]
mod tests {
    use std::ffi::OsString;

    use crate::cli::{Cli, Command};
    use crate::compare::paired_fixture::{ab_records, ADD, MATMUL, MLP};
    use crate::exit_code::Exit;
    use crate::store::manifest::{RunManifest, MANIFEST_FILE};
    use crate::store::runs::{resolve_latest, RunDir};

    /// An `ab` run of `ids` as `ab --partition` stores one: the head's records, the
    /// base's under `base/`, the revisions in its manifest.
    fn ab_part(dir: &std::path::Path, run_id: &str, partition: &str, ids: &[&str]) {
        let (base, head) = ab_records();
        std::fs::create_dir_all(dir.join("base")).unwrap();
        let mut benchmarks = Vec::new();
        for id in ids {
            let file = RunDir::record_file(id);
            let h = head.iter().find(|r| r.id == *id).unwrap();
            let b = base.iter().find(|r| r.id == *id).unwrap();
            std::fs::write(dir.join(&file), h.to_json_pretty()).unwrap();
            std::fs::write(dir.join("base").join(&file), b.to_json_pretty()).unwrap();
            benchmarks.push(serde_json::json!({
                "id": id, "target": "suite", "status": "passed", "record": file, "rounds": 5
            }));
        }
        let revision = |c: &str| serde_json::json!({"label": c, "commit": format!("{c}00000000")});
        let manifest = serde_json::json!({
            "format_version": crate::store::manifest::MANIFEST_FORMAT_VERSION,
            "run_id": run_id,
            "started_at": "2026-01-01T00:00:00.000Z",
            "finished_at": "2026-01-01T00:01:00.000Z",
            "status": "completed",
            "command_line": ["cargo-gpubench", "ab"],
            "device": "cuda:0",
            "quick": false,
            "flush_l2": false,
            "partition": partition,
            "ab": {"base": revision("1a2b3c4d"), "head": revision("5e6f7a8b"), "paired": true},
            "timeout_s": 300.0,
            "libtorch_lib": "/lib",
            "executables": [],
            "benchmarks": benchmarks,
        });
        std::fs::write(dir.join(MANIFEST_FILE), manifest.to_string()).unwrap();
    }

    #[test]
    fn the_parts_of_one_ab_merge_into_one_paired_run_with_its_verdicts() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        ab_part(&a, "part-a", "count:1/2", &[MLP, MATMUL]);
        ab_part(&b, "part-b", "count:2/2", &[ADD]);
        let out = dir.path().join("merged");
        let argv: Vec<OsString> = vec![
            "cargo-gpubench".into(),
            "merge".into(),
            a.clone().into(),
            b.clone().into(),
            "--out-dir".into(),
            out.clone().into(),
            "--no-report".into(),
        ];
        let cli = Cli::parse_from_cargo(argv.clone()).unwrap();
        let Some(Command::Merge(args)) = &cli.command else {
            panic!("parsed as merge");
        };
        let exit = super::super::run(args, &argv).unwrap();
        assert_eq!(
            exit,
            Exit::RegressionFound,
            "the MLP step's +1.75% trips the gate"
        );

        let run = resolve_latest(&out).unwrap();
        let m = RunManifest::read(&run.join(MANIFEST_FILE)).unwrap();
        assert_eq!(
            m.ab.as_ref().map(|ab| ab.head.label.as_str()),
            Some("5e6f7a8b")
        );
        assert_eq!(m.benchmarks.len(), 3);
        for id in [MLP, MATMUL, ADD] {
            assert!(
                run.join("base").join(RunDir::record_file(id)).is_file(),
                "{id}'s base record is kept"
            );
        }
        let c = crate::compare::RunComparison::read(&run)
            .unwrap()
            .expect("the comparison is stored with the merged run");
        assert!(c.is_ab(), "judged as an ab: paired");
        assert_eq!(c.tripping(), [MLP]);
        assert_eq!(c.set.comparisons.len(), 3);
    }
}
