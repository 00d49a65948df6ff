//! The history page: `<out-dir>/history/index.html`, one trend chart per benchmark
//! and figure (each point with its interval, the change points as vertical lines, a
//! flagged drift as its fitted line), the change points in a table with their commits,
//! and the files that could not be read. It sits beside `<out-dir>/report/` rather
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

use super::charts::{palette, Axis, AxisFormat, Plot, Rule, Series, SeriesKind};
use super::input::ReportError;
use super::{io_error, templates};
use crate::format::{percent_change, time_unit};
use crate::output::history::{change_words, day, drift_words};
use crate::store::history::{HistoryReport, SeriesHistory};

/// The page's directory inside the output directory.
pub const HISTORY_DIR: &str = "history";

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
}

#[derive(Serialize)]
struct ChangeRow {
    figure: String,
    commit: String,
    date: String,
    subject: String,
    change: String,
}

#[derive(Serialize)]
struct BenchmarkView {
    id: String,
    anchor: String,
    charts: Vec<Chart>,
    changes: Vec<ChangeRow>,
    drifts: Vec<String>,
}

#[derive(Serialize)]
struct PageView {
    title: String,
    lede: String,
    generated_at: String,
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
            for s in b
                .series
                .iter()
                .filter(|s| !s.exact || !s.change_points.is_empty())
            {
                let file = format!("{stem}-{}.svg", figure_key(s));
                let svg = plot(report, s)
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
                    caption: caption(s),
                    src: file,
                    width: super::charts::WIDTH,
                    height: super::charts::HEIGHT,
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
                        change: change_words(c, s.exact)
                            .split(" at ")
                            .next()
                            .unwrap_or_default()
                            .to_string(),
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

fn figure_key(s: &SeriesHistory) -> String {
    s.label.replace(' ', "-")
}

fn caption(s: &SeriesHistory) -> String {
    let steps = s.change_points.len();
    let mut text = format!(
        "{} per commit (oldest left), {} change point{}",
        s.label,
        steps,
        crate::format::plural(steps)
    );
    if !s.exact {
        text.push_str(&format!(
            "; shaded lines: each point's interval; steps under {} are noise",
            percent_change(s.threshold).trim_start_matches('+')
        ));
    }
    if let Some(w) = drift_words(s) {
        text.push_str(&format!("; drift {w}"));
    }
    text
}

/// The trend chart of one series: x is the version (commit) index.
fn plot(report: &HistoryReport, s: &SeriesHistory) -> Plot {
    let xs: Vec<f64> = s.points.iter().map(|p| p.version as f64 + 1.0).collect();
    let lo = s
        .points
        .iter()
        .map(|p| p.point.lower)
        .fold(f64::INFINITY, f64::min);
    let hi = s
        .points
        .iter()
        .map(|p| p.point.upper)
        .fold(f64::NEG_INFINITY, f64::max);
    let pad = ((hi - lo).abs() * 0.08).max(hi.abs() * 0.01).max(1e-9);
    let y_range = (lo - pad).max(0.0)..hi + pad;
    let y = if s.exact {
        Axis::linear(s.label.clone(), y_range, AxisFormat::Index)
    } else {
        Axis::time(&s.label, y_range, false, time_unit(hi))
    };
    let mut plot = Plot::new(Axis::index("commit (version)", report.commits.len()), y);
    if !s.exact {
        for (name, pick) in [
            (
                "interval",
                (|p: &gpubench_analysis::history::SeriesPoint| p.lower) as fn(&_) -> f64,
            ),
            ("", |p| p.upper),
        ] {
            plot.series.push(Series {
                name: (!name.is_empty()).then(|| name.to_string()),
                color: palette::INTERVAL,
                points: xs
                    .iter()
                    .zip(&s.points)
                    .map(|(x, p)| (*x, pick(&p.point)))
                    .collect(),
                kind: SeriesKind::Line,
            });
        }
    }
    plot.series.push(Series {
        name: Some(s.label.clone()),
        color: palette::NEW,
        points: xs
            .iter()
            .zip(&s.points)
            .map(|(x, p)| (*x, p.point.value))
            .collect(),
        kind: SeriesKind::LineMarkers,
    });
    if let Some(d) = s.flagged_drift() {
        let first = d.drift.from_index;
        let base = s.points[first].point.value;
        let slope = d.drift.per_commit.ln_1p();
        plot.series.push(Series {
            name: Some(format!(
                "drift {}/commit",
                percent_change(d.drift.per_commit)
            )),
            color: palette::HOST,
            points: (first..s.points.len())
                .map(|i| (xs[i], base * (slope * (i - first) as f64).exp()))
                .collect(),
            kind: SeriesKind::Line,
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
    }
    if let Some(c) = s.change_points.last() {
        if let Some(rule) = plot.rules.last_mut() {
            rule.label = Some(format!(
                "change point {} at {}",
                if s.exact {
                    format!(
                        "{} → {}",
                        crate::format::number(c.change.before),
                        crate::format::number(c.change.after)
                    )
                } else {
                    percent_change(c.change.change)
                },
                c.commit.short
            ));
        }
    }
    plot
}
