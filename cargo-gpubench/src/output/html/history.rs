//! The history page: `<out-dir>/history/index.html`, the baseline's versions in a
//! table (number, commit id, date, subject), one trend chart per benchmark and
//! figure (each point with its interval, on an axis that a single huge interval
//! cannot flatten; the change points as vertical lines, a flagged drift as its fitted
//! line; the key under the chart, never over its points), the change points in a
//! table with the commits that hold them, and the files that could not be read. It sits beside `<out-dir>/report/` rather
//! than in it, so a run re-rendering its report leaves it alone; a run's pages link to
//! it ([`link_for`]) when it is there.
//!
//! ```text
//! <out-dir>/history/index.html
//! <out-dir>/history/report.css
//! <out-dir>/history/<stem>-<figure>.svg
//! ```

use std::path::{Path, PathBuf};

use gpubench_record::id::file_stem_for_id;
use serde::Serialize;

use super::charts::{palette, Axis, AxisFormat, Note, Plot, Rule, Series, SeriesKind};
use super::input::ReportError;
use super::{io_error, templates, HISTORY_DIR};
use crate::format::{percent_change, time_unit};
use crate::output::history::{change_size, day, drift_words, figure_text};
use crate::store::history::{HistoryReport, SeriesHistory};
use gpubench_analysis::history::SeriesMetric;

/// The anchor of a benchmark on the page.
pub fn anchor(id: &str) -> String {
    file_stem_for_id(id)
}

/// The link from a page `depth` folders below `<out-dir>/report/` to `id` on the
/// history page of `out_dir`, when the page is there and shows `id`.
pub fn link_for(out_dir: &Path, id: &str, depth: usize) -> Option<String> {
    ShownIds::read(out_dir)?.link(id, depth)
}

/// The ids the history page of an output directory shows, read once for every page
/// of a report that links to it.
pub struct ShownIds(String);

impl ShownIds {
    /// Those of the history page of `out_dir`, when the page is there.
    pub fn read(out_dir: &Path) -> Option<Self> {
        std::fs::read_to_string(out_dir.join(HISTORY_DIR).join(IDS_FILE))
            .ok()
            .map(ShownIds)
    }

    /// The link from a page `depth` folders below `<out-dir>/report/` to `id` on the
    /// page, when it shows `id`.
    pub fn link(&self, id: &str, depth: usize) -> Option<String> {
        self.0.lines().any(|l| l == id).then(|| {
            format!(
                "{}../{HISTORY_DIR}/index.html#{}",
                "../".repeat(depth),
                anchor(id)
            )
        })
    }
}

/// The ids the page shows, one a line, for [`link_for`].
const IDS_FILE: &str = "benchmarks.txt";

#[derive(Serialize)]
struct Chart {
    src: String,
    alt: String,
    width: u32,
    height: u32,
    caption: String,
    /// The chart's key, drawn under it rather than over its points.
    key: Vec<KeyEntry>,
}

/// One entry of a chart's key: a swatch of the colour and what it stands for.
#[derive(Serialize)]
struct KeyEntry {
    color: String,
    dashed: bool,
    text: String,
}

#[derive(Serialize)]
struct ChangeRow {
    figure: String,
    commit: String,
    date: String,
    subject: String,
    range: String,
    change: String,
}

/// A version of the baseline as the charts number it.
#[derive(Serialize)]
struct CommitRow {
    number: usize,
    id: String,
    short: String,
    date: String,
    subject: String,
}

#[derive(Serialize)]
struct BenchmarkView {
    id: String,
    anchor: String,
    gone: Option<String>,
    charts: Vec<Chart>,
    changes: Vec<ChangeRow>,
    drifts: Vec<String>,
}

#[derive(Serialize)]
struct PageView {
    title: String,
    lede: String,
    generated_at: String,
    commits: Vec<CommitRow>,
    benchmarks: Vec<BenchmarkView>,
    unreadable: Vec<String>,
}

/// Writes the page of `report` into `dir` (created when missing), replacing its
/// files; returns the page's path.
pub fn write(report: &HistoryReport, dir: &Path) -> anyhow::Result<PathBuf> {
    gpubench_analysis::atomic_dir::rebuild(dir, |staged| -> anyhow::Result<()> {
        std::fs::create_dir_all(staged).map_err(io_error(staged))?;
        let mut benchmarks = Vec::new();
        for b in &report.benchmarks {
            let stem = anchor(&b.id);
            let mut charts = Vec::new();
            for (k, s) in b
                .series
                .iter()
                .enumerate()
                .filter(|(_, s)| !s.exact || !s.change_points.is_empty())
            {
                let file = format!("{stem}-{}.svg", figure_key(s, k));
                let drawn = plot(report, s);
                let svg = drawn
                    .plot
                    .to_svg()
                    .map_err(|message| ReportError::Chart {
                        id: b.id.clone(),
                        chart: file.clone(),
                        message,
                    })?;
                let path = staged.join(&file);
                std::fs::write(&path, svg).map_err(io_error(&path))?;
                charts.push(Chart {
                    alt: format!("{} of {} over {} commits", s.label, b.id, s.points.len()),
                    caption: caption(s, drawn.clipped),
                    src: file,
                    width: super::charts::WIDTH,
                    height: super::charts::HEIGHT,
                    key: drawn.key,
                });
            }
            let changes = b
                .series
                .iter()
                .flat_map(|s| {
                    s.change_points.iter().map(move |c| ChangeRow {
                        figure: s.label.clone(),
                        commit: c.commit.short.clone(),
                        date: day(&c.commit.date).to_string(),
                        subject: c.commit.subject.clone(),
                        range: c.range(),
                        change: change_size(c, s.exact),
                    })
                })
                .collect();
            let drifts = b
                .series
                .iter()
                .filter_map(|s| drift_words(s).map(|w| format!("{}: {w}", s.label)))
                .collect();
            benchmarks.push(BenchmarkView {
                id: b.id.clone(),
                anchor: stem,
                gone: b.gone_at.as_ref().map(|c| {
                    format!(
                        "Gone: the baseline holds no figure of it since {} ({}, {}), so it has no latest figure.",
                        c.short,
                        day(&c.date),
                        c.subject
                    )
                }),
                charts,
                changes,
                drifts,
            });
        }
        let view = PageView {
            title: format!("gpubench history of baseline {}", report.baseline),
            lede: format!(
                "{} version{} of {} along the first-parent history of {}.",
                report.commits.len(),
                crate::format::plural(report.commits.len()),
                report.path,
                report.rev
            ),
            generated_at: chrono::Utc::now().format("%Y-%m-%d %H:%M UTC").to_string(),
            commits: report
                .commits
                .iter()
                .enumerate()
                .map(|(i, c)| CommitRow {
                    number: i + 1,
                    id: c.id.clone(),
                    short: c.short.clone(),
                    date: day(&c.date).to_string(),
                    subject: c.subject.clone(),
                })
                .collect(),
            benchmarks,
            unreadable: report
                .unreadable
                .iter()
                .map(|u| format!("{} at {}: {}", u.path, u.commit.short, u.reason))
                .collect(),
        };
        let html = templates::render_history(&templates::engine()?, &view)?;
        for (name, bytes) in [
            ("index.html", html.as_bytes()),
            ("report.css", templates::CSS.as_bytes()),
        ] {
            let path = staged.join(name);
            std::fs::write(&path, bytes).map_err(io_error(&path))?;
        }
        let ids: String = report
            .benchmarks
            .iter()
            .map(|b| format!("{}\n", b.id))
            .collect();
        let path = staged.join(IDS_FILE);
        std::fs::write(&path, ids).map_err(io_error(&path))?;
        Ok(())
    })
    .map_err(|e| {
        e.context(format!(
            "failed to write the history page in {}",
            dir.display()
        ))
    })?;
    Ok(dir.join("index.html"))
}

/// The chart's file name part: the figure's words, and for a series kept apart (other
/// settings) its place among the benchmark's series.
fn figure_key(s: &SeriesHistory, k: usize) -> String {
    let words = s.metric.label().replace(' ', "-");
    if s.settings_differ.is_empty() {
        words
    } else {
        format!("{words}-{k}")
    }
}

fn caption(s: &SeriesHistory, clipped: usize) -> String {
    let steps = s.change_points.len();
    let mut text = format!(
        "{} per version of the baseline (numbered as in the table of commits, oldest left), {} change point{}",
        s.label,
        steps,
        crate::format::plural(steps)
    );
    if !s.exact {
        text.push_str(&format!(
            "; grey bars: each point's interval; steps under {} are noise",
            percent_change(s.threshold).trim_start_matches('+')
        ));
    }
    if stretches(s).len() > 1 {
        text.push_str("; the line breaks where versions were saved without the figure");
    }
    if clipped > 0 {
        text.push_str(&format!(
            "; {clipped} interval{} reach{} beyond the chart, cut at its edge and marked with an arrow and {} end",
            crate::format::plural(clipped),
            if clipped == 1 { "es" } else { "" },
            if clipped == 1 { "its" } else { "their" }
        ));
    }
    if !s.unplaced.is_empty() {
        let n = s.unplaced.len();
        text.push_str(&format!(
            "; {n} point{} (rings) too noisy to place a step or drift",
            crate::format::plural(n)
        ));
    }
    if let Some(w) = drift_words(s) {
        text.push_str(&format!("; drift {w}"));
    }
    text
}

/// A chart and what goes with it on the page.
struct Drawn {
    plot: Plot,
    key: Vec<KeyEntry>,
    /// Intervals cut at the chart's edge.
    clipped: usize,
}

fn css_color(c: plotters::style::RGBColor) -> String {
    format!("#{:02x}{:02x}{:02x}", c.0, c.1, c.2)
}

/// The y range of a measured series: every point's figure, and its interval as far as
/// it stays within one spread of the figures (or twice the typical interval, up to the
/// typical figure, or 5% of the typical figure, whichever is widest) beyond them. A single interval many times
/// wider than the rest would otherwise flatten every other point into a line.
fn robust_range(points: &[gpubench_analysis::history::SeriesPoint]) -> (f64, f64) {
    let values: Vec<f64> = points.iter().map(|p| p.value).collect();
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mut halves: Vec<f64> = points
        .iter()
        .flat_map(|p| [p.value - p.lower, p.upper - p.value])
        .filter(|h| h.is_finite() && *h >= 0.0)
        .collect();
    halves.sort_by(f64::total_cmp);
    let typical_half = halves.get(halves.len() / 2).copied().unwrap_or(0.0);
    let mut sorted = values.clone();
    sorted.sort_by(f64::total_cmp);
    let typical = sorted.get(sorted.len() / 2).copied().unwrap_or(0.0);
    // Intervals wider than the figure itself ("too noisy for an interval") never set
    // the scale.
    let span = (hi - lo)
        .max((2.0 * typical_half).min(typical.abs()))
        .max(0.05 * typical.abs());
    ((lo - span).max(0.0), hi + span)
}

/// Whether versions missing from `s` break its line: energy and the share of peak,
/// which versions saved before they were kept lack, so a line across them would
/// draw figures nobody measured.
fn gaps_break(s: &SeriesHistory) -> bool {
    matches!(s.metric, SeriesMetric::Energy | SeriesMetric::PeakShare)
}

/// The runs of points (indices into `s.points`) its line joins: all of them, or for
/// a figure whose gaps break the line ([`gaps_break`]), each run of consecutive
/// versions.
fn stretches(s: &SeriesHistory) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let mut start = 0;
    for i in 1..s.points.len() {
        if gaps_break(s) && s.points[i].version > s.points[i - 1].version + 1 {
            out.push(start..i);
            start = i;
        }
    }
    if !s.points.is_empty() {
        out.push(start..s.points.len());
    }
    out
}

/// The trend chart of one series: x is the version's number (1: the oldest).
fn plot(report: &HistoryReport, s: &SeriesHistory) -> Drawn {
    use gpubench_analysis::history::SeriesPoint;
    let xs: Vec<f64> = s.points.iter().map(|p| p.version as f64 + 1.0).collect();
    let raw: Vec<SeriesPoint> = s.points.iter().map(|p| p.point).collect();
    let (lo_allowed, hi_allowed) = if s.exact {
        (f64::NEG_INFINITY, f64::INFINITY)
    } else {
        robust_range(&raw)
    };
    let lo = raw
        .iter()
        .map(|p| p.lower.max(lo_allowed).min(p.value))
        .fold(f64::INFINITY, f64::min);
    let hi = raw
        .iter()
        .map(|p| p.upper.min(hi_allowed).max(p.value))
        .fold(f64::NEG_INFINITY, f64::max);
    let pad = ((hi - lo).abs() * 0.08).max(hi.abs() * 0.01).max(1e-9);
    let y_range = (lo - pad).max(0.0)..hi + pad;
    let unit = time_unit(hi);
    let y = match s.metric {
        _ if s.exact => Axis::linear(s.label.clone(), y_range, AxisFormat::Index),
        SeriesMetric::Energy => {
            let (scale, symbol) = if hi >= 1.0 {
                (1.0, "J")
            } else if hi >= 1e-3 {
                (1e-3, "mJ")
            } else {
                (1e-6, "µJ")
            };
            Axis::linear(
                format!("{} ({symbol})", s.label),
                y_range,
                AxisFormat::Scaled(scale),
            )
        }
        SeriesMetric::PeakShare => Axis::linear(
            format!("{} at the measured clock (%)", s.label),
            y_range,
            AxisFormat::Scaled(0.01),
        ),
        _ => Axis::time(&s.label, y_range, false, unit),
    };
    let mut plot = Plot::new(
        Axis::index(
            "version of the baseline (see the commits below)",
            report.commits.len(),
        ),
        y,
    );
    let mut key = Vec::new();
    let mut clipped = 0;
    if !s.exact {
        for (x, p) in xs.iter().zip(&raw) {
            let (a, b) = (p.lower.max(lo), p.upper.min(hi));
            plot.series.push(Series {
                name: None,
                color: palette::INTERVAL,
                points: vec![(*x, a), (*x, b)],
                kind: SeriesKind::Line,
            });
            for (cut, end, arrow) in [(p.upper > hi, p.upper, '↑'), (p.lower < lo, p.lower, '↓')]
            {
                if cut {
                    clipped += 1;
                    plot.notes.push(Note {
                        at: (*x + 0.06, if arrow == '↑' { hi } else { lo }),
                        text: format!("{arrow} {}", figure_text(s.metric, end)),
                    });
                }
            }
        }
        key.push(KeyEntry {
            color: css_color(palette::INTERVAL),
            dashed: false,
            text: "each point's interval".into(),
        });
    }
    let placed = |i: &usize| !s.unplaced.contains(i);
    for stretch in stretches(s) {
        plot.series.push(Series {
            name: None,
            color: palette::NEW,
            points: stretch
                .filter(placed)
                .map(|i| (xs[i], raw[i].value))
                .collect(),
            kind: SeriesKind::LineMarkers,
        });
    }
    key.push(KeyEntry {
        color: css_color(palette::NEW),
        dashed: false,
        text: s.label.clone(),
    });
    if !s.unplaced.is_empty() {
        plot.series.push(Series {
            name: None,
            color: palette::NEW,
            points: s.unplaced.iter().map(|&i| (xs[i], raw[i].value)).collect(),
            kind: SeriesKind::Markers {
                size: 5,
                hollow: true,
            },
        });
    }
    if let Some(d) = s.flagged_drift() {
        let first = d.drift.from_index;
        let base = s.points[first].point.value;
        let slope = d.drift.per_commit.ln_1p();
        plot.series.push(Series {
            name: None,
            color: palette::HOST,
            points: (first..s.points.len())
                .filter(placed)
                .map(|i| (xs[i], base * (slope * (i - first) as f64).exp()))
                .collect(),
            kind: SeriesKind::Line,
        });
        key.push(KeyEntry {
            color: css_color(palette::HOST),
            dashed: false,
            text: format!("drift {}/commit", percent_change(d.drift.per_commit)),
        });
    }
    for c in &s.change_points {
        plot.rules.push(Rule {
            horizontal: false,
            at: c.version as f64 + 1.0 - 0.5,
            color: palette::COLD,
            dashed: true,
            label: None,
        });
        key.push(KeyEntry {
            color: css_color(palette::COLD),
            dashed: true,
            text: format!(
                "change point {} at version {} ({}), in {}",
                if s.exact {
                    format!(
                        "{} → {}",
                        crate::format::number(c.change.before),
                        crate::format::number(c.change.after)
                    )
                } else {
                    percent_change(c.change.change)
                },
                c.version + 1,
                c.commit.short,
                c.range()
            ),
        });
    }
    Drawn { plot, key, clipped }
}
