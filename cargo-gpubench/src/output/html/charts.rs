//! SVG charts drawn with plotters from a small declarative [`Plot`]: axes, series,
//! reference lines and text. Pages build `Plot`s from data; only this file knows
//! plotters.
//!
//! Text reaches the SVG through plotters' SVG backend, which escapes `<`, `>`, `&`
//! and quotes, so user strings (shape labels, cold-call labels) stay inert.

use std::ops::Range;

use plotters::coord::combinators::{IntoLogRange, LogCoord};
use plotters::coord::ranged1d::ValueFormatter;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::format::{self, TimeUnit};

/// Chart width in SVG pixels; pages scale it to the column.
pub(super) const WIDTH: u32 = 860;
/// Chart height in SVG pixels.
pub(super) const HEIGHT: u32 = 320;

/// The palette, shared with the stylesheet so charts and tables agree.
pub(super) mod palette {
    use plotters::style::RGBColor;
    /// This run's samples.
    pub(crate) const NEW: RGBColor = RGBColor(37, 99, 235);
    /// The baseline's samples.
    pub(crate) const BASELINE: RGBColor = RGBColor(120, 128, 142);
    /// Host-dispatch time.
    pub(crate) const HOST: RGBColor = RGBColor(217, 119, 6);
    /// Device time.
    pub(crate) const DEVICE: RGBColor = RGBColor(5, 150, 105);
    /// Cold calls.
    pub(crate) const COLD: RGBColor = RGBColor(220, 38, 38);
    /// The compiled variant.
    pub(crate) const COMPILED: RGBColor = RGBColor(147, 51, 234);
    /// Axis text.
    pub(crate) const TEXT: RGBColor = RGBColor(55, 65, 81);
    /// The ends of each point's interval on a history chart.
    pub(crate) const INTERVAL: RGBColor = RGBColor(184, 190, 200);
    /// Grid lines.
    pub(crate) const GRID: RGBColor = RGBColor(229, 231, 235);
}

/// How an axis labels its values.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum AxisFormat {
    /// Values are ns, labelled in `unit` (the description names the unit).
    Time(TimeUnit),
    /// Values are ns, each label with its own unit (`100 µs`, `1 ms`): for log axes,
    /// which span several units.
    Duration,
    /// Whole numbers, e.g. sample indices.
    Index,
    /// Fractions, labelled as signed percentages (`+2%`).
    Percent,
    /// Values labelled divided by this scale (the description names the unit:
    /// `energy per call (mJ)` with a scale of 1e-3, `share of peak (%)` with 0.01).
    Scaled(f64),
    /// No labels (e.g. a density axis, whose scale means nothing to a reader).
    Hidden,
}

/// One axis.
#[derive(Debug, Clone)]
pub(super) struct Axis {
    /// The description under or beside the axis.
    pub desc: String,
    /// The visible range.
    pub range: Range<f64>,
    /// Logarithmic scale (the range must be positive).
    pub log: bool,
    /// How ticks are labelled.
    pub format: AxisFormat,
}

impl Axis {
    /// A linear axis.
    pub(super) fn linear(desc: impl Into<String>, range: Range<f64>, format: AxisFormat) -> Self {
        Axis {
            desc: desc.into(),
            range,
            log: false,
            format,
        }
    }

    /// A time axis described as `what`: labelled in `unit` on a linear scale, or
    /// each tick with its own unit on a log scale.
    pub(super) fn time(what: &str, range: Range<f64>, log: bool, unit: TimeUnit) -> Self {
        if log {
            Axis {
                desc: format!("{what} (log scale)"),
                range,
                log,
                format: AxisFormat::Duration,
            }
        } else {
            Axis::linear(
                format!("{what} ({})", unit.symbol),
                range,
                AxisFormat::Time(unit),
            )
        }
    }

    /// Sample indices `1..=n`, with half a step of room on either side.
    pub(super) fn index(desc: &str, n: usize) -> Self {
        Axis::linear(desc, 0.5..n as f64 + 0.5, AxisFormat::Index)
    }

    fn label(&self, v: f64) -> String {
        match self.format {
            AxisFormat::Time(unit) => {
                let x = v / unit.ns;
                if x == 0.0 {
                    return "0".into();
                }
                // Enough decimals that ticks about a seventh of the span apart stay
                // distinct (a narrow band around 3.64 ms needs 3.635, 3.640, ...).
                let step = ((self.range.end - self.range.start).abs() / unit.ns / 7.0).max(1e-12);
                let digits = (-step.log10().floor()).clamp(0.0, 6.0) as usize;
                trim_zeros(format!("{x:.digits$}"))
            }
            AxisFormat::Duration => {
                let unit = format::time_unit(v);
                let x = v / unit.ns;
                let digits = if x >= 10.0 || (x - x.round()).abs() < 1e-6 {
                    0
                } else {
                    1
                };
                format!("{x:.digits$} {}", unit.symbol)
            }
            AxisFormat::Index => {
                if v.fract().abs() < 1e-9 {
                    format!("{v:.0}")
                } else {
                    String::new()
                }
            }
            AxisFormat::Percent => {
                let step = ((self.range.end - self.range.start).abs() * 100.0 / 7.0).max(1e-9);
                let digits = (-step.log10().floor()).clamp(0.0, 3.0) as usize;
                let x = v * 100.0;
                if x.abs() < 1e-9 {
                    "0%".into()
                } else {
                    format!("{x:+.digits$}%")
                }
            }
            AxisFormat::Scaled(scale) => {
                let x = v / scale;
                if x == 0.0 {
                    return "0".into();
                }
                let step = ((self.range.end - self.range.start).abs() / scale / 7.0).max(1e-12);
                let digits = (-step.log10().floor()).clamp(0.0, 6.0) as usize;
                trim_zeros(format!("{x:.digits$}"))
            }
            AxisFormat::Hidden => String::new(),
        }
    }
}

fn trim_zeros(s: String) -> String {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// How a series is drawn.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum SeriesKind {
    /// A solid line.
    Line,
    /// A line with a dot at every point.
    LineMarkers,
    /// Dots only; `hollow` draws rings (for points drawn over others).
    Markers {
        /// Radius in pixels.
        size: u32,
        /// Ring instead of disc.
        hollow: bool,
    },
    /// Horizontal bars from the x range's start to each point's x, centred on its y.
    HorizontalBars {
        /// Half the bar's height in y units.
        half_height: f64,
    },
}

/// A data series.
#[derive(Debug, Clone)]
pub(super) struct Series {
    /// The legend entry; `None` for no entry.
    pub name: Option<String>,
    /// Its colour.
    pub color: RGBColor,
    /// Its points, in plot coordinates.
    pub points: Vec<(f64, f64)>,
    /// How it is drawn.
    pub kind: SeriesKind,
}

/// A reference line across the plot, e.g. a median.
#[derive(Debug, Clone)]
pub(super) struct Rule {
    /// `true`: horizontal at y = `at`; `false`: vertical at x = `at`.
    pub horizontal: bool,
    /// Where.
    pub at: f64,
    /// Its colour.
    pub color: RGBColor,
    /// Dashed rather than solid.
    pub dashed: bool,
    /// Text written at its end.
    pub label: Option<String>,
}

/// Text placed in the plot, left-aligned and vertically centred on `at`.
#[derive(Debug, Clone)]
pub(super) struct Note {
    /// Where, in plot coordinates.
    pub at: (f64, f64),
    /// The text.
    pub text: String,
}

/// A whole chart.
#[derive(Debug, Clone)]
pub(super) struct Plot {
    /// Horizontal axis.
    pub x: Axis,
    /// Vertical axis.
    pub y: Axis,
    /// Series, drawn in order (later ones on top).
    pub series: Vec<Series>,
    /// Reference lines, drawn under the series.
    pub rules: Vec<Rule>,
    /// Text notes, drawn last.
    pub notes: Vec<Note>,
    /// Height in SVG pixels ([`HEIGHT`] when 0).
    pub height: u32,
}

impl Plot {
    /// A plot with axes and nothing in it.
    pub(super) fn new(x: Axis, y: Axis) -> Self {
        Plot {
            x,
            y,
            series: Vec::new(),
            rules: Vec::new(),
            notes: Vec::new(),
            height: HEIGHT,
        }
    }

    /// Draws the plot to an SVG document.
    pub(super) fn to_svg(&self) -> Result<String, String> {
        let mut buf = String::new();
        let x = self.x.range.clone();
        let y = self.y.range.clone();
        match (self.x.log, self.y.log) {
            (false, false) => {
                self.draw_on(&mut buf, RangedCoordf64::from(x), RangedCoordf64::from(y))
            }
            (false, true) => self.draw_on(
                &mut buf,
                RangedCoordf64::from(x),
                LogCoord::from(y.log_scale()),
            ),
            (true, false) => self.draw_on(
                &mut buf,
                LogCoord::from(x.log_scale()),
                RangedCoordf64::from(y),
            ),
            (true, true) => self.draw_on(
                &mut buf,
                LogCoord::from(x.log_scale()),
                LogCoord::from(y.log_scale()),
            ),
        }
        .map_err(|e| e.to_string())?;
        Ok(buf)
    }

    fn draw_on<X, Y>(
        &self,
        buf: &mut String,
        x: X,
        y: Y,
    ) -> Result<(), DrawingAreaErrorKind<std::io::Error>>
    where
        X: Ranged<ValueType = f64> + ValueFormatter<f64>,
        Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
    {
        let height = if self.height == 0 {
            HEIGHT
        } else {
            self.height
        };
        let legend = self.legend();
        let band = legend_band(&legend);
        let root = SVGBackend::with_string(buf, (WIDTH, height + band)).into_drawing_area();
        root.fill(&WHITE)?;
        // The legend has a band of its own under the plot, so it never covers a point.
        let (plot_area, legend_area) = root.split_vertically(height);
        let y_label_area = if self.y.format == AxisFormat::Hidden {
            24
        } else {
            70
        };
        let mut chart = ChartBuilder::on(&plot_area)
            .margin_top(14)
            .margin_right(22)
            .margin_left(8)
            .margin_bottom(6)
            .x_label_area_size(48)
            .y_label_area_size(y_label_area)
            .build_cartesian_2d(x, y)?;

        let label_font = ("sans-serif", 15).into_font().color(&palette::TEXT);
        let desc_font = ("sans-serif", 16).into_font().color(&palette::TEXT);
        let x_fmt = |v: &f64| self.x.label(*v);
        let y_fmt = |v: &f64| self.y.label(*v);
        chart
            .configure_mesh()
            .x_desc(self.x.desc.as_str())
            .y_desc(self.y.desc.as_str())
            .x_labels(9)
            .y_labels(7)
            .x_label_formatter(&x_fmt)
            .y_label_formatter(&y_fmt)
            .label_style(label_font.clone())
            .axis_desc_style(desc_font)
            .bold_line_style(palette::GRID.stroke_width(1))
            .light_line_style(TRANSPARENT)
            .axis_style(palette::TEXT.mix(0.6))
            .draw()?;

        let (x_lo, x_hi) = (self.x.range.start, self.x.range.end);
        let (y_lo, y_hi) = (self.y.range.start, self.y.range.end);

        for rule in &self.rules {
            let (a, b) = if rule.horizontal {
                ((x_lo, rule.at), (x_hi, rule.at))
            } else {
                ((rule.at, y_lo), (rule.at, y_hi))
            };
            let style = rule.color.stroke_width(2);
            if rule.dashed {
                chart.draw_series(DashedLineSeries::new([a, b], 7, 5, style))?;
            } else {
                chart.draw_series(LineSeries::new([a, b], style))?;
            }
        }

        for s in &self.series {
            let color = s.color;
            let pts = s.points.iter().copied();
            match s.kind {
                SeriesKind::Line => {
                    chart.draw_series(LineSeries::new(pts, color.stroke_width(2)))?;
                }
                SeriesKind::LineMarkers => {
                    chart.draw_series(LineSeries::new(pts, color.mix(0.55).stroke_width(1)))?;
                    chart
                        .draw_series(s.points.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
                }
                SeriesKind::Markers { size, hollow } => {
                    let style = if hollow {
                        color.stroke_width(2)
                    } else {
                        color.filled()
                    };
                    chart.draw_series(pts.map(|p| Circle::new(p, size, style)))?;
                }
                SeriesKind::HorizontalBars { half_height } => {
                    chart.draw_series(pts.map(|(x, y)| {
                        Rectangle::new(
                            [(x_lo, y - half_height), (x, y + half_height)],
                            color.filled(),
                        )
                    }))?;
                }
            }
        }

        for note in &self.notes {
            let font = ("sans-serif", 14)
                .into_font()
                .color(&palette::TEXT)
                .pos(Pos::new(HPos::Left, VPos::Center));
            chart.draw_series(std::iter::once(Text::new(note.text.clone(), note.at, font)))?;
        }

        draw_legend(&legend_area, &legend)?;
        root.present()?;
        Ok(())
    }

    /// The legend's entries: labelled reference lines, then named series.
    fn legend(&self) -> Vec<LegendEntry> {
        let rules = self.rules.iter().filter_map(|r| {
            r.label.as_ref().map(|text| LegendEntry {
                text: text.clone(),
                color: r.color,
                mark: SeriesKind::Line,
            })
        });
        let series = self.series.iter().filter_map(|s| {
            s.name.as_ref().map(|text| LegendEntry {
                text: text.clone(),
                color: s.color,
                mark: s.kind,
            })
        });
        rules.chain(series).collect()
    }
}

/// One entry of a chart's legend.
struct LegendEntry {
    text: String,
    color: RGBColor,
    mark: SeriesKind,
}

/// Height of one row of the legend band, in SVG pixels.
const LEGEND_ROW: u32 = 24;
/// Width of an entry's mark and the gaps around its text, in SVG pixels.
const LEGEND_MARK: i32 = 30;
const LEGEND_GAP: i32 = 22;
const LEGEND_LEFT: i32 = 80;

/// Where each entry goes in the band, as (x, row): left to right, wrapping at the
/// chart's width. Text is measured at 8 px a character (15 px sans-serif).
fn legend_layout(entries: &[LegendEntry]) -> Vec<(i32, u32)> {
    let mut out = Vec::with_capacity(entries.len());
    let (mut x, mut row) = (LEGEND_LEFT, 0);
    for e in entries {
        let width = LEGEND_MARK + 8 * e.text.chars().count() as i32 + LEGEND_GAP;
        if x > LEGEND_LEFT && x + width > WIDTH as i32 {
            x = LEGEND_LEFT;
            row += 1;
        }
        out.push((x, row));
        x += width;
    }
    out
}

/// Height of the band under the plot that holds the legend; 0 without one.
fn legend_band(entries: &[LegendEntry]) -> u32 {
    match legend_layout(entries).last() {
        Some((_, rows)) => (rows + 1) * LEGEND_ROW + 6,
        None => 0,
    }
}

fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    entries: &[LegendEntry],
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let font = ("sans-serif", 15)
        .into_font()
        .color(&palette::TEXT)
        .pos(Pos::new(HPos::Left, VPos::Center));
    for (e, (x, row)) in entries.iter().zip(legend_layout(entries)) {
        let y = (row * LEGEND_ROW + LEGEND_ROW / 2) as i32;
        let color = e.color;
        match e.mark {
            SeriesKind::Markers { hollow: true, .. } => {
                area.draw(&Circle::new((x + 10, y), 5, color.stroke_width(2)))?
            }
            SeriesKind::Markers { .. } => {
                area.draw(&Circle::new((x + 10, y), 4, color.filled()))?
            }
            SeriesKind::HorizontalBars { .. } => area.draw(&Rectangle::new(
                [(x, y - 6), (x + 20, y + 6)],
                color.mix(0.5).filled(),
            ))?,
            _ => area.draw(&PathElement::new(
                vec![(x, y), (x + 20, y)],
                color.stroke_width(3),
            ))?,
        }
        area.draw(&Text::new(
            e.text.clone(),
            (x + LEGEND_MARK - 2, y),
            font.clone(),
        ))?;
    }
    Ok(())
}

/// The x or y range that shows `values` with a margin of `pad` (a fraction of the
/// spread) on both sides; never empty, and positive when `log`.
pub(super) fn padded_range(
    values: impl IntoIterator<Item = f64>,
    pad: f64,
    log: bool,
) -> Range<f64> {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values
        .into_iter()
        .filter(|v| v.is_finite() && (!log || *v > 0.0))
    {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() {
        return if log { 1.0..10.0 } else { 0.0..1.0 };
    }
    if log {
        let f = 1.0 + pad.max(0.05) * 4.0;
        return lo / f..hi * f;
    }
    let spread = hi - lo;
    let margin = if spread > 0.0 {
        spread * pad
    } else {
        (lo.abs() * 0.01).max(1.0)
    };
    lo - margin..hi + margin
}

/// Whether values spread over enough orders of magnitude that a log axis reads
/// better (cold calls can be 100× the steady state).
pub(super) fn wants_log(values: impl IntoIterator<Item = f64>) -> bool {
    let r = padded_range(values, 0.0, true);
    r.end / r.start > 30.0
}

/// The time unit for axis labels of values around `typical` ns.
pub(super) fn axis_unit(typical: f64) -> TimeUnit {
    format::time_unit(typical)
}

/// `values` against their 1-based position: `[a, b]` → `[(1, a), (2, b)]`.
pub(super) fn in_order(values: &[f64]) -> Vec<(f64, f64)> {
    values
        .iter()
        .enumerate()
        .map(|(i, &v)| (i as f64 + 1.0, v))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_text_in_charts_is_escaped() {
        let mut plot = Plot::new(
            Axis::linear("x", 0.0..10.0, AxisFormat::Index),
            Axis::linear("y", 0.0..10.0, AxisFormat::Index),
        );
        plot.series.push(Series {
            name: Some("<script>alert(1)</script>".into()),
            color: palette::NEW,
            points: vec![(1.0, 1.0), (2.0, 2.0)],
            kind: SeriesKind::Line,
        });
        plot.notes.push(Note {
            at: (1.0, 5.0),
            text: "a & <b>".into(),
        });
        let svg = plot.to_svg().unwrap();
        assert!(!svg.contains("<script"), "{svg}");
        assert!(svg.contains("&lt;script&gt;"));
        assert!(svg.contains("a &amp; &lt;b&gt;"));
    }

    #[test]
    fn the_legend_lies_under_the_plot_never_over_a_point() {
        let mut plot = Plot::new(
            Axis::linear("x", 0.0..10.0, AxisFormat::Index),
            Axis::linear("y", 0.0..10.0, AxisFormat::Index),
        );
        // Points in every corner, where a legend inside the plot would go.
        let corners = [(0.2, 9.8), (9.8, 9.8), (0.2, 0.2), (9.8, 0.2)];
        for (i, name) in ["base", "head", "a name long enough to wrap the row"]
            .iter()
            .chain(["fourth series", "fifth series", "sixth series"].iter())
            .enumerate()
        {
            plot.series.push(Series {
                name: Some(name.to_string()),
                color: palette::NEW,
                points: corners
                    .iter()
                    .map(|&(x, y)| (x, y - i as f64 * 0.01))
                    .collect(),
                kind: SeriesKind::Markers {
                    size: 4,
                    hollow: i % 2 == 0,
                },
            });
        }
        let svg = plot.to_svg().unwrap();
        let height: u32 = svg
            .split("height=\"")
            .nth(1)
            .and_then(|h| h.split('"').next())
            .and_then(|h| h.parse().ok())
            .unwrap();
        assert!(height > HEIGHT, "a band is added for the legend: {height}");
        // Every legend text sits below the plot's own height.
        for name in ["base", "head", "sixth series"] {
            let at = svg
                .find(&format!(">\n{name}\n</text>"))
                .unwrap_or_else(|| panic!("{name}: {svg}"));
            let tag = &svg[svg[..at].rfind("<text").unwrap()..at];
            let y: f64 = tag
                .split(" y=\"")
                .nth(1)
                .and_then(|v| v.split('"').next())
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("no y in {tag}"));
            assert!(y > HEIGHT as f64, "{name} at y {y}, inside the plot: {tag}");
        }
        // Two rows: the long name wrapped.
        assert!(height >= HEIGHT + 2 * LEGEND_ROW, "{height}");
        // No legend, no band.
        let mut bare = Plot::new(
            Axis::linear("x", 0.0..1.0, AxisFormat::Index),
            Axis::linear("y", 0.0..1.0, AxisFormat::Index),
        );
        bare.series.push(Series {
            name: None,
            color: palette::NEW,
            points: vec![(0.5, 0.5)],
            kind: SeriesKind::Line,
        });
        assert!(bare
            .to_svg()
            .unwrap()
            .contains(&format!("height=\"{HEIGHT}\"")));
    }

    #[test]
    fn log_axes_draw() {
        let mut plot = Plot::new(
            Axis::linear("request", 0.0..5.0, AxisFormat::Index),
            Axis {
                desc: "latency (ms)".into(),
                range: 1e5..1e9,
                log: true,
                format: AxisFormat::Time(axis_unit(1e6)),
            },
        );
        plot.series.push(Series {
            name: None,
            color: palette::COLD,
            points: vec![(0.0, 5e8), (1.0, 1e6)],
            kind: SeriesKind::Markers {
                size: 4,
                hollow: true,
            },
        });
        let svg = plot.to_svg().unwrap();
        assert!(svg.starts_with("<svg"));
        assert!(wants_log([1e6, 5e8]));
        assert!(!wants_log([1e6, 1.2e6]));
    }
}
