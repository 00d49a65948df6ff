//! The head of an `ab` run judged against its base, from the ratios their processes
//! shared, and stored with the run.

use anyhow::{Context, Result};
use gpubench_analysis::baseline::{
    compare_paired_records, BenchmarkComparison, ComparisonOutcome, Missing, MissingKind,
};
use gpubench_analysis::BaselineEntry;
use gpubench_record::record::RawRecord;

use super::plan::Plan;
use super::process::first_line;
use super::session::{Session, Tracked};
use crate::compare::{Absences, RunComparison};
use crate::store::manifest::RunManifest;
use crate::store::runs::RunDir;
use crate::store::{Source, SourceKind};

impl Session<'_> {
    /// The head judged against the base, stored with the run (the base's entries as
    /// its baseline copy, so `report` shows both).
    pub(super) fn judge(
        &self,
        run: &RunDir,
        tracked: &[Tracked],
        plan: &Plan,
        manifest: &RunManifest,
    ) -> Result<RunComparison> {
        let settings = self.settings();
        let head: Vec<RawRecord> = tracked
            .iter()
            .filter_map(|t| t.head_record.clone())
            .collect();
        let base: Vec<RawRecord> = tracked
            .iter()
            .filter_map(|t| t.base_record.clone())
            .collect();
        let entries: Vec<BaselineEntry> = base
            .iter()
            .filter_map(|r| BaselineEntry::from_record(r).ok())
            .collect();
        let mut set = compare_paired_records(&base, &head, &settings.options())
            .context("failed to judge the head against the base")?;
        for t in tracked {
            let (Some(u), Some(c)) = (
                &t.unpaired,
                set.comparisons.iter_mut().find(|c| c.id == t.head.id),
            ) else {
                continue;
            };
            if let ComparisonOutcome::Compared { comparison, .. } = &mut c.outcome {
                let said = format!("judged on separate processes: {}", u.reason);
                comparison.note = Some(match comparison.note.take() {
                    Some(n) => format!("{said}; {n}"),
                    None => said,
                });
            }
        }
        // A benchmark the base failed on (alone too, when pairing failed) has nothing
        // to be judged against: it says so where its verdict would be.
        for r in base.iter().filter(|r| !r.passed()) {
            if head.iter().any(|h| h.id == r.id) && !set.comparisons.iter().any(|c| c.id == r.id) {
                let why = r
                    .failure()
                    .map(|f| format!("{}: {}", f.kind.label(), first_line(&f.message)))
                    .unwrap_or_else(|| "no measurement".into());
                set.comparisons.push(BenchmarkComparison {
                    id: r.id.clone(),
                    outcome: ComparisonOutcome::NotCompared {
                        reason: format!("the base failed ({why})"),
                    },
                });
            }
        }
        let mut absences = Absences::of_run(manifest);
        absences.side = self.head.describe();
        absences.unusable_baseline = base
            .iter()
            .filter(|r| !r.passed())
            .map(|r| {
                let why = r
                    .failure()
                    .map(|f| format!("it failed on the base ({}): {}", f.kind.label(), f.message))
                    .unwrap_or_else(|| "it has no measurement on the base".to_string());
                (r.id.clone(), why)
            })
            .collect();
        let source = Source {
            kind: SourceKind::Revision,
            name: self.base.label.clone(),
            path: self.base.root.display().to_string(),
            default: false,
            device: None,
        };
        let gone: Vec<Missing> = plan
            .gone
            .iter()
            .map(|b| {
                Missing::benchmark(
                    &b.id,
                    MissingKind::Gone,
                    format!(
                        "{} has it and {} does not (removed or renamed?); --allow-missing gone \
                         lets that pass",
                        self.base.describe(),
                        self.head.describe()
                    ),
                )
            })
            .collect();
        let comparison = RunComparison::of_set(set, &head, &entries, source, settings, &absences)
            .with_missing(gone);
        comparison
            .store(&run.path, &entries)
            .context("failed to store the comparison with the run")?;
        Ok(comparison)
    }
}
