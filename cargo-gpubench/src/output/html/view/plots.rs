//! The charts of a benchmark's page: samples, processes, cold calls.

use crate::format;
use crate::output::html::charts::{
    self, palette, Axis, AxisFormat, Note, Plot, Rule, Series, SeriesKind,
};
use crate::output::html::eager_compiled::EagerCompiledView;
use crate::output::html::input::ReportBenchmark;
use crate::output::html::view::common::{compared, time_label, BenchmarkView, ChartView, Figures};
use gpubench_analysis::stats::{self};
use gpubench_analysis::BenchmarkSummary;
use gpubench_record::measurement::{Measurement, TimeKind};

pub(crate) fn chart(stem: &str, file: &str, plot: Plot, alt: &str, caption: &str) -> ChartView {
    ChartView {
        file: file.to_string(),
        src: format!("{stem}/{file}"),
        alt: alt.to_string(),
        caption: caption.to_string(),
        width: charts::WIDTH,
        height: plot.height,
        plot,
    }
}

/// The charts of a measured benchmark's page, one builder per chart.
pub(crate) fn fill_charts(
    view: &mut BenchmarkView,
    b: &ReportBenchmark,
    s: &BenchmarkSummary,
    m: &Measurement,
    fig: &Figures,
) {
    let stem = view.stem.as_str();
    let unit = charts::axis_unit(fig.estimate.point);
    let out = &mut view.charts;
    out.distribution = distribution_chart(stem, b, fig, unit);
    out.paired =
        paired_plot(b).map(|plot| chart(stem, "paired.svg", plot, PAIRED_ALT, PAIRED_CAPTION));
    out.timeline = timeline_chart(stem, fig, &view.facts.primary_label, unit);
    if let Some((clock, temperature)) = gpu_charts(stem, b) {
        out.gpu_clock = Some(clock);
        out.gpu_temperature = temperature;
    }
    match crate::output::html::gpu::power_plot(&b.record) {
        Ok((plot, caption)) => {
            out.gpu_power = Some(chart(
                stem,
                "gpu-power.svg",
                plot,
                "The board's power draw after every sample, in time order, against its power limit",
                &caption,
            ))
        }
        Err(why) => out.gpu_power_absent = Some(why),
    }
    // On the CPU host dispatch is wall time and there is no device time: the chart
    // would draw one line twice (the page says so in words instead).
    if !view.on_cpu {
        out.host_device = host_device_chart(stem, b, unit);
    }
    out.warmup = warmup_chart(stem, m);
    out.cold = (!s.cold.is_empty() && fig.wall > 0.0).then(|| {
        chart(
            stem,
            "cold.svg",
            cold_plot(s, fig.wall),
            "Cold calls against one steady-state call",
            "Cold calls include lazy initialisation, library heuristics, allocator growth and compilation; they are reported on their own, never mixed into the samples.",
        )
    });
}

/// Eager and compiled latency over the shape stream, when the benchmark is one.
pub(crate) fn comparison_chart(stem: &str, c: &EagerCompiledView) -> Option<ChartView> {
    Some(chart(
        stem,
        "comparison.svg",
        c.latency_plot()?,
        "Per-request latency of each variant over the shape stream",
        "Each dot is one request, in the order served; rings mark cold calls (the first request at a new shape). Rings after the first requests mean a variant pays again for every new shape.",
    ))
}

/// Every sample of the compared timer, one row per process, this run against the
/// baseline.
fn distribution_chart(
    stem: &str,
    b: &ReportBenchmark,
    fig: &Figures,
    unit: format::TimeUnit,
) -> Option<ChartView> {
    if fig.compared.is_empty() {
        return None;
    }
    let base: &[Vec<f64>] = b
        .baseline
        .as_ref()
        .map(|c| c.baseline_processes_ns.as_slice())
        .unwrap_or(&[]);
    let (plot, hidden) = process_plot(
        &fig.compared,
        base,
        fig.estimate.point,
        compared(b).map(|c| c.baseline_estimate),
        unit,
        time_label(fig.compared_kind),
    );
    let mut caption = if base.is_empty() {
        "Every sample, one row per process (in the order they ran); the ring is the process's median and the dashed line the estimate over processes. Rows that sit apart are processes that ran at different speeds.".to_string()
    } else {
        "Every sample, one row per process: the baseline's (grey) above this run's (blue); rings are process medians, dashed lines each side's estimate. A change shows as all blue rows shifted; rows scattered on both sides are process-to-process noise.".to_string()
    };
    if hidden > 0 {
        caption.push_str(&format!(
            " {hidden} far outlier(s) lie beyond the axis; the time-order chart shows them."
        ));
    }
    Some(chart(
        stem,
        "distribution.svg",
        plot,
        "Per-call times of every process, this run against the baseline",
        &caption,
    ))
}

const PAIRED_ALT: &str = "The change of head against base in each process they shared";
const PAIRED_CAPTION: &str =
    "Each dot is one process: the ratio of the head's per-call time to the base's, \
     measured side by side in that process (samples alternated base, head, head, \
     base), so what the process added to both cancels. The solid line is the change \
     over processes and the band its interval; the dashed lines are the threshold a \
     change must clear. Dots on both sides of 0 are noise; all of them above the \
     threshold is a regression.";

/// Every primary sample in the order taken, process after process.
fn timeline_chart(
    stem: &str,
    fig: &Figures,
    what: &str,
    unit: format::TimeUnit,
) -> Option<ChartView> {
    let pooled = fig.pooled();
    if pooled.len() < 2 {
        return None;
    }
    let mut plot = Plot::new(
        Axis::index(
            "sample (in time order, process after process)",
            pooled.len(),
        ),
        Axis::time(
            &format!("{what} per call"),
            charts::padded_range(pooled.iter().copied(), 0.15, false),
            false,
            unit,
        ),
    );
    plot.rules.push(Rule {
        horizontal: true,
        at: fig.estimate.point,
        color: palette::BASELINE,
        dashed: true,
        label: Some("estimate".into()),
    });
    // A light line where each process after the first begins.
    let mut start = 0usize;
    for g in &fig.primary[..fig.primary.len().saturating_sub(1)] {
        start += g.len();
        plot.rules.push(Rule {
            horizontal: false,
            at: start as f64 - 0.5,
            color: palette::GRID,
            dashed: false,
            label: None,
        });
    }
    plot.series.push(Series {
        name: None,
        color: palette::NEW,
        points: charts::in_order(&pooled),
        kind: SeriesKind::LineMarkers,
    });
    Some(chart(
        stem,
        "timeline.svg",
        plot,
        "Per-call time of every sample in the order taken, process after process",
        "Vertical lines separate processes. A steady run is a flat band; a step at a process boundary is a process that ran at another speed; a slope within a process is drift (clocks, heat); a slow start means warm-up ended too early.",
    ))
}

/// The GPU's SM clock and, when read, its temperature after every sample.
fn gpu_charts(stem: &str, b: &ReportBenchmark) -> Option<(ChartView, Option<ChartView>)> {
    let (clock, temperature, caption) = crate::output::html::gpu::clock_plots(&b.record)?;
    let clock = chart(
        stem,
        "gpu-clock.svg",
        clock,
        "The GPU's SM clock after every sample, in time order",
        &caption,
    );
    let temperature = temperature.map(|plot| {
        chart(
            stem,
            "gpu-temperature.svg",
            plot,
            "The GPU's temperature after every sample, in time order",
            "The GPU's temperature read with each sample: a climb towards the slowdown temperature comes before thermal throttling.",
        )
    });
    Some((clock, temperature))
}

/// Host-dispatch, device and synced wall time of every sample of every process.
fn host_device_chart(stem: &str, b: &ReportBenchmark, unit: format::TimeUnit) -> Option<ChartView> {
    let r = &b.record;
    let hosts = r.groups(TimeKind::Host).concat();
    let walls = r.groups(TimeKind::Wall).concat();
    let devices = r
        .device_timed()
        .then(|| r.groups(TimeKind::Device).concat())
        .filter(|d| !d.is_empty());
    if walls.is_empty() {
        return None;
    }
    let all = walls
        .iter()
        .chain(hosts.iter())
        .chain(devices.iter().flatten())
        .copied();
    let top = charts::padded_range(all, 0.1, false).end;
    let n = walls.len();
    let kind = if n == 1 {
        SeriesKind::Markers {
            size: 5,
            hollow: false,
        }
    } else {
        SeriesKind::Line
    };
    let mut plot = Plot::new(
        Axis::index("sample (in time order)", n),
        Axis::time("per call", 0.0..top * 1.25, false, unit),
    );
    let line = |name: &str, color, values: &[f64]| Series {
        name: Some(name.into()),
        color,
        points: charts::in_order(values),
        kind,
    };
    plot.series.push(line("synced wall", palette::NEW, &walls));
    if let Some(d) = &devices {
        plot.series.push(line("device", palette::DEVICE, d));
    }
    plot.series
        .push(line("host dispatch", palette::HOST, &hosts));
    Some(chart(
        stem,
        "host-device.svg",
        plot,
        "Host-dispatch, device and synced wall time per call for every sample of every process",
        "Host dispatch far below device time: device-bound (the host queues ahead). Host dispatch near wall time with device time below it: launch-bound.",
    ))
}

/// The first process's warm-up batches against its steady state.
fn warmup_chart(stem: &str, m: &Measurement) -> Option<ChartView> {
    // The warm-up batches are the first process's, in synced wall time per call: the
    // line they lead to is that process's own steady state in the same timer, not the
    // estimate over processes (another process may run at another speed) nor device
    // time.
    let steady = stats::median(&m.per_iter(TimeKind::Wall));
    if m.warmup.is_empty() || !steady.is_finite() {
        return None;
    }
    let per_iter: Vec<f64> = m
        .warmup
        .iter()
        .map(|w| w.wall_ns / w.iters.max(1) as f64)
        .collect();
    let values = per_iter.iter().copied().chain([steady]);
    let log = charts::wants_log(values.clone());
    let mut plot = Plot::new(
        Axis::index("warm-up batch", per_iter.len()),
        Axis::time(
            "synced wall per call",
            charts::padded_range(values, 0.15, log),
            log,
            charts::axis_unit(steady),
        ),
    );
    plot.rules.push(Rule {
        horizontal: true,
        at: steady,
        color: palette::DEVICE,
        dashed: true,
        label: Some(format!("steady state: {}", format::duration(steady))),
    });
    plot.series.push(Series {
        name: None,
        color: palette::HOST,
        points: charts::in_order(&per_iter),
        kind: SeriesKind::LineMarkers,
    });
    Some(chart(
        stem,
        "warmup.svg",
        plot,
        "Per-call time of each warm-up batch of the first process against that process's steady state",
        "Warm-up runs until the per-call time stops changing; these batches are not part of the samples. The dashed line is the median synced wall time per call of the samples the same process took after them.",
    ))
}

/// One row per process, the baseline's above this run's: every sample as a dot, the
/// process median as a ring, each side's estimate as a dashed line. Returns the plot
/// and how many samples fall outside the axis.
pub(crate) fn process_plot(
    new: &[Vec<f64>],
    base: &[Vec<f64>],
    new_estimate: f64,
    base_estimate: Option<f64>,
    unit: format::TimeUnit,
    what: &str,
) -> (Plot, usize) {
    let all: Vec<f64> = new.iter().chain(base).flatten().copied().collect();
    let fences = shown_ranges(new.iter().chain(base));
    let shown = |v: &f64| fences.iter().any(|(lo, hi)| *v >= *lo && *v <= *hi);
    let hidden = all.iter().filter(|v| !shown(v)).count();
    let visible = all.iter().copied().filter(shown).chain([new_estimate]);
    let x = charts::padded_range(visible.chain(base_estimate), 0.08, false);
    let rows = base.len() + new.len();
    let mut plot = Plot::new(
        Axis::time(&format!("{what} per call"), x, false, unit),
        Axis::linear("", -0.7..rows as f64 - 0.3, AxisFormat::Hidden),
    );
    plot.height = (90 + 26 * rows as u32).clamp(170, 560);
    // Row 0 at the bottom: this run's last process; the baseline's first at the top.
    let row = |i: usize| (rows - 1 - i) as f64;
    let sides = [
        ("baseline", base, 0usize, palette::BASELINE, base_estimate),
        (
            "this run",
            new,
            base.len(),
            palette::NEW,
            Some(new_estimate),
        ),
    ];
    for (name, groups, offset, color, estimate) in sides {
        if groups.is_empty() {
            continue;
        }
        let rows_of = |i: usize| row(offset + i);
        push_side(&mut plot, name, groups, color, &shown, &rows_of);
        if let Some(at) = estimate {
            plot.rules.push(Rule {
                horizontal: false,
                at,
                color,
                dashed: true,
                label: None,
            });
        }
    }
    (plot, hidden)
}

/// Far outliers (a throttling spike) would squash the rows into one column: the
/// ranges shown are the outer fences of each process, with a little room.
fn shown_ranges<'a>(groups: impl Iterator<Item = &'a Vec<f64>>) -> Vec<(f64, f64)> {
    groups
        .filter_map(|xs| stats::TukeyFences::from_samples(xs))
        .map(|f| {
            let width = (f.high_severe - f.low_severe).max(f.high_severe.abs() * 1e-3);
            (f.low_severe - 0.1 * width, f.high_severe + 0.1 * width)
        })
        .collect()
}

/// One side's processes, one row each (`row` of the process's index): every shown
/// sample as a dot, the median as a ring.
fn push_side(
    plot: &mut Plot,
    name: &str,
    groups: &[Vec<f64>],
    color: plotters::style::RGBColor,
    shown: &dyn Fn(&f64) -> bool,
    row: &dyn Fn(usize) -> f64,
) {
    let dots = groups
        .iter()
        .enumerate()
        .flat_map(|(i, g)| {
            g.iter()
                .copied()
                .filter(|v| shown(v))
                .map(move |v| (v, row(i)))
        })
        .collect();
    plot.series.push(Series {
        name: Some(format!(
            "{name} ({} process{})",
            groups.len(),
            if groups.len() == 1 { "" } else { "es" }
        )),
        color,
        points: dots,
        kind: SeriesKind::Markers {
            size: 2,
            hollow: false,
        },
    });
    plot.series.push(Series {
        name: None,
        color,
        points: groups
            .iter()
            .enumerate()
            .map(|(i, g)| (stats::median(g), row(i)))
            .collect(),
        kind: SeriesKind::Markers {
            size: 6,
            hollow: true,
        },
    });
}

/// `ab`: one dot per process at its change (head over base, minus 1), the change over
/// processes with its interval, and the threshold; `None` unless the benchmark was
/// paired and compared.
pub(crate) fn paired_plot(b: &ReportBenchmark) -> Option<Plot> {
    let changes = gpubench_analysis::baseline::paired_changes(&b.record);
    let c = compared(b)?;
    if changes.is_empty() || !gpubench_analysis::baseline::is_paired(&b.record) {
        return None;
    }
    let values = changes.iter().copied().chain([
        c.change.lower,
        c.change.upper,
        c.threshold,
        -c.threshold,
        0.0,
    ]);
    let y = charts::padded_range(values, 0.15, false);
    let mut plot = Plot::new(
        Axis::index("process (in the order they ran)", changes.len()),
        Axis::linear("head / base − 1", y, AxisFormat::Percent),
    );
    plot.height = 240;
    for (at, color, dashed, label) in [
        (0.0, palette::GRID, false, None),
        (
            c.threshold,
            palette::BASELINE,
            true,
            Some("threshold".to_string()),
        ),
        (-c.threshold, palette::BASELINE, true, None),
        (
            c.change.point,
            palette::NEW,
            false,
            Some("change".to_string()),
        ),
        (c.change.lower, palette::NEW, true, None),
        (c.change.upper, palette::NEW, true, None),
    ] {
        plot.rules.push(Rule {
            horizontal: true,
            at,
            color,
            dashed,
            label,
        });
    }
    plot.series.push(Series {
        name: Some(format!(
            "per process ({} process{})",
            changes.len(),
            if changes.len() == 1 { "" } else { "es" }
        )),
        color: palette::NEW,
        points: changes
            .iter()
            .enumerate()
            .map(|(i, v)| (i as f64 + 1.0, *v))
            .collect(),
        kind: SeriesKind::Markers {
            size: 5,
            hollow: false,
        },
    });
    Some(plot)
}

/// Horizontal bars on a log axis: each cold call and one steady-state call, labelled
/// with its time and ratio.
pub(crate) fn cold_plot(s: &BenchmarkSummary, steady: f64) -> Plot {
    let mut bars: Vec<(String, f64, bool)> = s
        .cold
        .iter()
        .map(|c| (c.label.clone(), c.wall_ns, true))
        .collect();
    bars.push(("steady state (median wall)".into(), steady, false));
    let lo = bars.iter().map(|b| b.1).fold(f64::INFINITY, f64::min) / 3.0;
    let hi = bars.iter().map(|b| b.1).fold(0.0f64, f64::max);
    // Room on the right for the labels.
    let x = lo..hi * 400.0;
    let n = bars.len();
    let mut plot = Plot::new(
        Axis {
            desc: "synced wall time (log scale)".into(),
            range: x,
            log: true,
            format: AxisFormat::Duration,
        },
        Axis::linear("", -0.6..n as f64 - 0.4, AxisFormat::Hidden),
    );
    plot.height = (70 + 44 * n as u32).clamp(150, 480);
    let row = |i: usize| (n - 1 - i) as f64;
    for (cold, color) in [(true, palette::COLD), (false, palette::DEVICE)] {
        plot.series.push(Series {
            name: None,
            color,
            points: bars
                .iter()
                .enumerate()
                .filter(|(_, b)| b.2 == cold)
                .map(|(i, b)| (b.1, row(i)))
                .collect(),
            kind: SeriesKind::HorizontalBars { half_height: 0.3 },
        });
    }
    for (i, (label, v, cold)) in bars.iter().enumerate() {
        let text = if *cold {
            format!(
                "{label}: {} ({:.0}× steady)",
                format::duration(*v),
                v / steady
            )
        } else {
            format!("{label}: {}", format::duration(*v))
        };
        plot.notes.push(Note {
            at: (v * 1.15, row(i)),
            text,
        });
    }
    plot
}
