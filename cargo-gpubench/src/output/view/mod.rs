//! The view model every output renders: what a run's summary and its comparison say,
//! in words and tones, built once ([`SummaryView::build`]) and laid out by the
//! terminal ([`crate::output::terminal`]) and Markdown ([`crate::output::markdown`]);
//! the HTML report's page model (`output/html/view/`) takes its verdicts,
//! words and notes from here too. [`metrics`] is each metric's verdict (the one
//! place that reads a comparison's per-metric fields), [`words`] the comparison in
//! words, [`table`] the cells of a row, [`notes`] the notes under the tables,
//! [`drifts`] what the baseline's history adds.

pub(crate) mod drifts;
pub(crate) mod metrics;
pub(crate) mod notes;
pub(crate) mod table;
pub(crate) mod words;

use gpubench_analysis::baseline::Metric;

use crate::compare::RunComparison;
use crate::console::Tone;
use crate::store::manifest::BenchStatus;
use crate::store::references::SummaryEntry;
use metrics::MetricView;
use notes::{Note, NoteKind};
use table::{dash, outcome_tone, status_tone, Cell, FigureRow};

/// A run's summary (or one side of `compare`) with its comparison, as every output
/// shows it.
#[derive(Debug, Clone)]
pub(crate) struct SummaryView<'a> {
    /// The benchmarks, in order.
    pub entries: &'a [SummaryEntry],
    /// The comparison with the baseline, when there was one.
    pub comparison: Option<&'a RunComparison>,
    /// One per benchmark, in `entries`' order: its own figures.
    pub figures: Vec<FigureRow>,
    /// One per benchmark, in `entries`' order, when there is a comparison: its
    /// comparison.
    pub rows: Vec<RowView>,
    /// The metrics beside time that some benchmark was judged on, in
    /// [`Metric::ALL`]'s order: a column each.
    pub metric_columns: Vec<Metric>,
    /// The notes under the tables.
    pub notes: Vec<Note>,
}

/// One benchmark's comparison, as a table row shows it.
#[derive(Debug, Clone)]
pub(crate) struct RowView {
    /// Each metric's verdict, time first; empty when it was not compared.
    pub verdicts: Vec<MetricView>,
    /// Its outcome in a word, in its tone: the time verdict, `failed`, `not
    /// compared`, `new`, `not run`, or `—` when the baseline lacks it for another
    /// reason.
    pub word: Cell,
    /// `±1.03%`: the smallest change its time verdict could have detected (`ab`).
    pub could_detect: Option<String>,
}

impl RowView {
    fn of(e: &SummaryEntry, c: &RunComparison) -> Self {
        let outcome = c.get(&e.id).map(|b| &b.outcome);
        let word = match outcome {
            Some(o) => Cell::toned(words::outcome_word(o).to_string(), outcome_tone(o)),
            None => match e.status {
                BenchStatus::Failed => Cell::toned("failed".into(), status_tone(e.status)),
                BenchStatus::Interrupted | BenchStatus::Pending => {
                    Cell::toned("not run".into(), status_tone(e.status))
                }
                BenchStatus::Passed if c.is_new(&e.id) => {
                    Cell::toned("new".into(), Some(Tone::New))
                }
                BenchStatus::Passed => dash().into(),
            },
        };
        RowView {
            verdicts: outcome.map(metrics::verdicts).unwrap_or_default(),
            word,
            could_detect: outcome
                .and_then(metrics::time)
                .and_then(words::detectable_text),
        }
    }

    /// The verdict on `metric`, when it was judged.
    pub(crate) fn verdict(&self, metric: Metric) -> Option<&MetricView> {
        self.verdicts.iter().find(|m| m.metric == metric)
    }

    /// Whether the benchmark was compared and every verdict says nothing changed (a
    /// change certain but under the threshold is no change too).
    pub(crate) fn unremarkable(&self) -> bool {
        !self.verdicts.is_empty()
            && self
                .verdicts
                .iter()
                .all(|m| m.verdict == gpubench_analysis::Verdict::NoChange)
    }
}

impl<'a> SummaryView<'a> {
    /// The view of `entries` and their `comparison`.
    pub(crate) fn build(
        entries: &'a [SummaryEntry],
        comparison: Option<&'a RunComparison>,
    ) -> Self {
        let rows: Vec<RowView> = match comparison {
            Some(c) => entries.iter().map(|e| RowView::of(e, c)).collect(),
            None => Vec::new(),
        };
        let metric_columns = Metric::ALL
            .into_iter()
            .filter(|&m| m != Metric::Time)
            .filter(|&m| rows.iter().any(|r| r.verdict(m).is_some()))
            .collect();
        SummaryView {
            entries,
            comparison,
            figures: entries.iter().map(FigureRow::of).collect(),
            rows,
            metric_columns,
            notes: notes::notes(entries, comparison),
        }
    }

    /// The notes whose kind `keep` accepts, in order.
    pub(crate) fn notes_where(&self, keep: impl Fn(&NoteKind) -> bool) -> Vec<&Note> {
        self.notes.iter().filter(|n| keep(&n.kind)).collect()
    }

    /// The notes of exactly `kind`, in order.
    pub(crate) fn notes_of(&self, kind: &NoteKind) -> Vec<&Note> {
        self.notes_where(|k| k == kind)
    }

    /// Each benchmark with its comparison's row, when there is a comparison.
    pub(crate) fn compared_rows(&self) -> impl Iterator<Item = (&SummaryEntry, &RowView)> {
        self.entries.iter().zip(&self.rows)
    }
}

#[cfg(test)]
pub(crate) mod tests;
