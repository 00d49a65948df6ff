//! A benchmark's page: its facts, cold calls, naive loops, failure, memory and
//! settings.

use crate::format;
use crate::output::html::eager_compiled::EagerCompiledView;
use crate::output::html::facts::{fact, Fact};
use crate::output::html::input::ReportBenchmark;
use crate::output::html::kernels::KernelView;
use crate::output::html::view::common::{
    baseline_note, benchmark_status, compared, environment_rows, on_cpu, p_value, percent_of_peak,
    time_label, BenchmarkView, ColdRow, FailureView, Figures, MeasuredFacts, NaiveRow, PageCharts,
};
use crate::output::html::view::plots::{comparison_chart, fill_charts};
use gpubench_analysis::baseline::{Metric, Unit};
use gpubench_analysis::compare::SPREAD_MULTIPLE;
use gpubench_analysis::processes::{Bound, EstimateBasis};
use gpubench_analysis::BenchmarkSummary;
use gpubench_record::id::file_stem_for_id;
use gpubench_record::measurement::{Flag, NaiveLoop};
use gpubench_record::measurement::{Measurement, RunMode, StopReason};
use gpubench_record::record::RawRecord;

pub(crate) fn benchmark_view(
    b: &ReportBenchmark,
    s: &BenchmarkSummary,
    fig: Option<&Figures>,
) -> BenchmarkView {
    let r = &b.record;
    let stem = file_stem_for_id(&r.id);
    let status = benchmark_status(b);
    let comparison = r.eager_compiled().map(EagerCompiledView::new);
    let on_cpu = on_cpu(&r.fingerprint);
    let mut view = BenchmarkView {
        id: r.id.clone(),
        history: b.history.clone(),
        name: b.name().to_string(),
        on_cpu,
        stem: stem.clone(),
        status,
        failure: failure_view(r),
        measured: fig.is_some(),
        smoke: r.config.mode == RunMode::Smoke,
        facts: MeasuredFacts::default(),
        held_at_peak: crate::output::view::notes::held_at_peak_lines(s).unwrap_or_default(),
        baseline_note: baseline_note(b),
        charts: PageCharts::default(),
        comparison,
        kernels: None,
        environment: environment_rows(&r.fingerprint),
        config: config_rows(r),
    };
    view.charts.comparison = view
        .comparison
        .as_ref()
        .and_then(|c| comparison_chart(&stem, c));
    let (Some(m), Some(fig)) = (r.first_measurement(), fig) else {
        return view;
    };
    // The CPU has no kernels to time or count; the page says so in its CPU sentence.
    if !on_cpu {
        view.kernels = KernelView::new(s, b.baseline.as_ref());
    }
    view.facts = measured_facts(b, s, m, fig, on_cpu);
    fill_charts(&mut view, b, s, m, fig);
    view
}

/// Why the benchmark failed, with the process that failed and what held memory.
fn failure_view(r: &RawRecord) -> Option<FailureView> {
    let f = r.failure()?;
    Some(FailureView {
        kind: match r.failed_process() {
            Some(process) if r.processes.len() > 1 => {
                format!(
                    "{} (in process {} of {})",
                    f.kind.label(),
                    process.process,
                    r.processes.len()
                )
            }
            _ => f.kind.label().to_string(),
        },
        message: f.message.clone(),
        memory: f.memory_at_failure.map(memory_facts).unwrap_or_default(),
        held: held_lines(f),
    })
}

/// The page's facts, readings and tables, one part of the summary at a time.
fn measured_facts(
    b: &ReportBenchmark,
    s: &BenchmarkSummary,
    m: &Measurement,
    fig: &Figures,
    on_cpu: bool,
) -> MeasuredFacts {
    let mut key_facts = estimate_facts(fig);
    if let Some(c) = compared(b) {
        key_facts.extend(comparison_facts(c, fig, s.timing.bound));
    }
    key_facts.extend(timed_metric_facts(b));
    key_facts.extend(sample_facts(b, m, fig));
    if !on_cpu {
        key_facts.push(sync_cost_fact(s, m));
    }
    let mut reading: Vec<String> = bound_reading(fig, on_cpu).into_iter().collect();
    reading.extend(s.flags.iter().flat_map(|f| flag_reading(*f, s, on_cpu)));
    reading
        .extend(crate::output::view::notes::power_note(s).map(|n| format!("Power and peak: {n}.")));
    let cold_rows = cold_rows(s, fig);
    MeasuredFacts {
        primary_label: time_label(fig.primary_kind).into(),
        key_facts,
        cpu_note: on_cpu.then(|| cpu_note(fig)),
        reading,
        timing_facts: timing_facts(fig),
        cold_device: cold_rows.iter().any(|c| !c.device.is_empty()),
        cold_rows,
        // Without a queue an unsynchronised loop is as right as a synced one.
        naive_rows: if on_cpu {
            Vec::new()
        } else {
            m.naive.iter().map(naive_row).collect()
        },
        resource_facts: resource_facts(b, s, m, fig, on_cpu),
    }
}

/// The estimate over processes, how the processes compare, and their modes.
fn estimate_facts(fig: &Figures) -> Vec<Fact> {
    let est = fig.estimate;
    let n = fig.processes.count;
    let mut facts = vec![fact(
        "time",
        format::duration(est.point),
        match fig.basis {
            _ if format::too_noisy(est.lower, est.upper) => format!(
                "{} (its {:.0}% interval is more than a factor of {} wide)",
                format::too_noisy_words(&fig.processes.medians),
                est.confidence * 100.0,
                format::TOO_NOISY_RATIO,
            ),
            EstimateBasis::Processes => format!(
                "{:.0}% interval for the next run {}; over {n} processes",
                est.confidence * 100.0,
                format::duration_interval(est.point, est.lower, est.upper)
            ),
            EstimateBasis::OneProcess => format!(
                "{:.0}% interval {} of one process only: it says nothing of the next",
                est.confidence * 100.0,
                format::duration_interval(est.point, est.lower, est.upper)
            ),
        },
    )];
    let within = fig
        .processes
        .within
        .map(|w| format!("noise within each ±{:.2}%", w * 100.0));
    facts.push(fact(
        "processes",
        n.to_string(),
        match (fig.processes.between, fig.processes.range) {
            (Some(b), Some(r)) => {
                let mut d = format!(
                    "spread between them ±{:.2}% (medians {:.1}% apart at most)",
                    b * 100.0,
                    r * 100.0
                );
                if let Some(w) = &within {
                    d.push_str(&format!("; {w}"));
                }
                d
            }
            _ => within.unwrap_or_else(|| "one process".into()),
        },
    ));
    if let Some([low, high]) = fig.processes.modes {
        facts.push(fact(
            "modes",
            "2",
            format!(
                "{} in {} process{}, {} in {}",
                format::duration(low.centre),
                low.processes,
                if low.processes == 1 { "" } else { "es" },
                format::duration(high.centre),
                high.processes
            ),
        ));
    }
    facts
}

/// The change against the baseline, the smallest change the comparison could have
/// detected, and the baseline's own figure.
fn comparison_facts(
    c: &gpubench_analysis::Comparison,
    fig: &Figures,
    bound: Option<Bound>,
) -> Vec<Fact> {
    let e = c.change;
    let pct = |x: f64| {
        format::percent_change(x)
            .trim_start_matches('+')
            .to_string()
    };
    // The threshold is the largest of the noise threshold, the one of this kind of
    // work (host-bound, the CPU device's, a contended host's) and 1.5 times the
    // spread between processes: say which one set it.
    let from_spread = c
        .spread
        .is_some_and(|s| (SPREAD_MULTIPLE * s).exp_m1() >= c.threshold * (1.0 - 1e-9));
    let threshold = if c.paired && c.threshold <= c.noise_threshold * (1.0 + 1e-9) {
        format!(
            "paired noise threshold ±{} (--paired-noise-threshold)",
            pct(c.threshold)
        )
    } else if c.paired {
        format!(
            "threshold ±{} (the spread of the per-process ratios; paired noise threshold ±{})",
            pct(c.threshold),
            pct(c.noise_threshold)
        )
    } else {
        // The comparison's noise threshold is its rule's: the GPU's, the CPU
        // device's, host-bound work's or a contended host's.
        let whose = match bound {
            _ if c.contended => Some(("a contended host's", "--host-noise-threshold")),
            Some(Bound::Cpu) => Some(("the CPU device's", "--cpu-noise-threshold")),
            Some(Bound::Host) => Some(("host-bound work's", "--host-noise-threshold")),
            _ => None,
        };
        if from_spread && c.threshold > c.noise_threshold * (1.0 + 1e-9) {
            let whose = whose.map_or(String::new(), |(w, _)| format!(", {w}"));
            format!(
                "threshold ±{} (the spread between processes; noise threshold ±{}{whose})",
                pct(c.threshold),
                pct(c.noise_threshold)
            )
        } else {
            let whose = whose.map_or(String::new(), |(w, flag)| format!(" ({w}, {flag})"));
            format!("noise threshold ±{}{whose}", pct(c.threshold))
        }
    };
    let certain = if c.certain_under_threshold {
        "; certain, but under the threshold: no change"
    } else {
        ""
    };
    let mut facts = vec![fact(
        "change vs baseline",
        format::percent_change(e.point),
        format!(
            "{:.0}% interval {}; {} (one-sided); {threshold}{certain}",
            e.confidence * 100.0,
            format::percent_interval(e.lower, e.upper),
            p_value(c.p_value),
        ),
    )];
    if let Some(d) = crate::output::view::words::detectable_text(c) {
        // Both on the log scale the verdict is decided on.
        let half_width = ((1.0 + e.upper) / (1.0 + e.lower)).sqrt() - 1.0;
        let fine = |x: f64| format!("{:.2}%", x * 100.0);
        facts.push(fact(
            "could detect",
            d,
            format!(
                "the smallest change this comparison could have called: the threshold ±{} \
                 plus the interval's half-width ±{}; a change read beyond it is regressed \
                 or improved, and \"no change\" says the change lies within the threshold",
                fine(c.threshold),
                fine(half_width)
            ),
        ));
    }
    facts.push(fact(
        "baseline",
        format::duration(c.baseline_estimate),
        format!(
            "{} process{} of {} time",
            c.baseline_processes,
            if c.baseline_processes == 1 { "" } else { "es" },
            fig.compared_kind.label()
        ),
    ));
    facts
}

/// Each other metric judged process by process against the baseline (host time,
/// share of peak), but kernel time, which the kernels part shows: its change,
/// interval and verdict.
fn timed_metric_facts(b: &ReportBenchmark) -> Vec<Fact> {
    let Some(outcome) = b.baseline.as_ref().map(|c| &c.outcome) else {
        return Vec::new();
    };
    Metric::besides_time()
        .filter(|&m| m != Metric::Kernel)
        .filter_map(|m| {
            let c = outcome.judged(m)?.timed()?;
            let change = format::percent_change(c.change.point);
            Some(fact(
                &format!("{} vs baseline", m.label()),
                match m.spec().unit {
                    Unit::Joules => format!(
                        "{change} ({} per call)",
                        crate::format::joules(c.current_estimate)
                    ),
                    _ => change,
                },
                format!(
                    "{:.0}% interval {}; {} against {} in the baseline",
                    c.change.confidence * 100.0,
                    format::percent_interval(c.change.lower, c.change.upper),
                    c.verdict.label(),
                    typical(m, c.baseline_estimate)
                ),
            ))
        })
        .collect()
}

/// A side's typical value of a metric judged process by process, in its unit:
/// `1.40 ms`, `85.4% of peak at its clock`.
fn typical(metric: Metric, x: f64) -> String {
    match metric.spec().unit {
        Unit::ShareOfPeak => format!("{:.1}% of peak at its clock", x * 100.0),
        Unit::Nanoseconds => format::duration(x),
        Unit::PerCall => format!("{x:.1} per call"),
        Unit::Bytes => format::bytes(x as u64),
        Unit::Joules => crate::format::joules(x),
    }
}

/// The mean, the outliers, the samples and why the first process stopped.
fn sample_facts(b: &ReportBenchmark, m: &Measurement, fig: &Figures) -> Vec<Fact> {
    let mut facts = vec![fact(
        "mean",
        format::duration(fig.mean),
        "of every sample of every process",
    )];
    let o = fig.outliers;
    if o.total() > 0 {
        facts.push(fact(
            "outliers",
            format!("{} of {}", o.outliers(), o.total()),
            format!(
                "{} mild, {} severe (Tukey fences of each process)",
                o.low_mild + o.high_mild,
                o.low_severe + o.high_severe
            ),
        ));
    }
    let iters: Vec<u64> = b
        .record
        .measurements()
        .flat_map(|m| &m.samples)
        .map(|s| s.iters)
        .collect();
    let (lo, hi) = (
        iters.iter().min().copied().unwrap_or(0),
        iters.iter().max().copied().unwrap_or(0),
    );
    facts.push(fact(
        "samples",
        iters.len().to_string(),
        if lo == hi {
            format!("{lo} iteration{} each", format::plural(lo as usize))
        } else {
            format!("{lo}–{hi} iterations each")
        },
    ));
    facts.push(fact(
        "first process stopped because",
        match m.stop_reason {
            StopReason::Converged => "interval narrow enough",
            StopReason::TimeBound => "time bound hit",
            StopReason::SampleBound => "sample bound hit",
            StopReason::Smoke => "smoke run (one call)",
            StopReason::Paired => "its ratio to the other revision was sure enough",
        },
        format!(
            "target ±{:.1}% within a process",
            b.record.config.target_rel_ci * 100.0
        ),
    ));
    facts
}

/// On the CPU one figure stands for host, device and wall time: the page says so once,
/// and shows none of the figures and charts that tell them apart on a GPU.
fn cpu_note(fig: &Figures) -> String {
    format!(
        "Measured on the CPU, where device time is host time: a call returns when its work is done, with no queue to wait on, so host dispatch ({}) and synced wall time ({}) are one figure and every sync is free. The figures are synced wall time per call.",
        format::duration(fig.host),
        format::duration(fig.wall)
    )
}

fn sync_cost_fact(s: &BenchmarkSummary, m: &Measurement) -> Fact {
    fact(
        "sync cost",
        format::duration(s.sampling.sync_cost_ns.unwrap_or(m.sync_cost_ns)),
        "an empty sync; amortised over each sample",
    )
}

/// Host, device and wall time per call.
fn timing_facts(fig: &Figures) -> Vec<Fact> {
    let mut facts = vec![fact(
        "synced wall",
        format::duration(fig.wall),
        "sync; start; k calls; sync; stop — per call",
    )];
    if let Some(d) = fig.device {
        facts.push(fact("device", format::duration(d), "from device events"));
    }
    facts.push(fact(
        "host dispatch",
        format::duration(fig.host),
        "until the k-th call returned to the host",
    ));
    facts
}

/// Whether the device or the host is the bottleneck, when one clearly is.
fn bound_reading(fig: &Figures, on_cpu: bool) -> Option<String> {
    let busy = fig.device.unwrap_or(fig.wall);
    // On the CPU there is no device to be bound by.
    let device_bound = !on_cpu && fig.host < 0.6 * busy;
    let launch_bound = !on_cpu && fig.device.is_some_and(|d| d < 0.7 * fig.host);
    if device_bound {
        Some(format!(
            "The host returns after {} per call while the device needs {}: the device is the bottleneck (device-bound). A timer stopped without a sync would report the host figure.",
            format::duration(fig.host),
            format::duration(busy)
        ))
    } else if launch_bound {
        Some(format!(
            "The device needs {} per call but the host takes {} to dispatch it: the device waits on the host (launch-bound). Fewer, larger kernels or a compiled graph help here.",
            format::duration(busy),
            format::duration(fig.host)
        ))
    } else {
        None
    }
}

/// What `flag` means for this benchmark's figures, in sentences (a contended run can
/// have two: the GPU's other processes and the host's other work).
fn flag_reading(flag: Flag, s: &BenchmarkSummary, on_cpu: bool) -> Vec<String> {
    let conditions = &s.conditions;
    match flag {
        Flag::SyncsInsideRoutine => vec!["Host-dispatch time tracks device time: something inside the routine synchronises (e.g. `.item()`, printing a tensor, a copy to the CPU).".into()],
        Flag::Unstable => vec![format!(
            "The samples of a process never settled within its time bound; treat the figures as rough and look at the time-order chart for drift{}.",
            if on_cpu { " or other work on the machine" } else { " or throttling" }
        )],
        Flag::Throttled => vec![format!(
            "The GPU throttled during {} sample(s): their SM clock was below 75% of the GPU's default, or a hardware, thermal or power-brake slowdown was on. They are left out of the figures; the clock chart under the samples shows when.",
            conditions.throttled_samples
        )],
        Flag::Contended => {
            let mut out = Vec::new();
            if !conditions.other_processes.is_empty() {
                let pids: Vec<String> =
                    conditions.other_processes.iter().map(u32::to_string).collect();
                out.push(format!(
                    "Contended: another process used the GPU while this benchmark ran (process {}). It shared the SMs, memory bandwidth and power, so the figures may be slow by whatever it took; measure again on a quiet GPU (`cargo gpubench doctor` lists what runs on it).",
                    pids.join(", ")
                ));
            }
            if let Some(host) = conditions.host_cpus.as_ref().and_then(|h| h.contention_text()) {
                out.push(format!(
                    "Contended: {host}. Some of its threads waited for a core, so the figures may be slow by whatever the other work took; measure again on a quiet host (`cargo gpubench doctor` checks the load)."
                ));
            }
            out
        }
        Flag::UnstableAcrossProcesses => vec![format!(
            "The processes disagree ({}): the machine runs this benchmark at a different speed in each fresh process, usually the host's dispatch speed for launch-bound work. The interval covers that; kernel time would not move with it.",
            crate::output::view::notes::process_note(s).unwrap_or_default()
        )],
        _ => Vec::new(),
    }
}

/// The cold calls, each against the steady state. Cold calls are synced wall times, so
/// they compare with the steady wall time.
fn cold_rows(s: &BenchmarkSummary, fig: &Figures) -> Vec<ColdRow> {
    let steady_wall = fig.wall;
    s.cold
        .iter()
        .map(|c| ColdRow {
            label: c.label.clone(),
            wall: format::duration(c.wall_ns),
            host: format::duration(c.host_ns),
            device: c.device_ns.map(format::duration).unwrap_or_default(),
            ratio: if steady_wall > 0.0 {
                format!("{:.0}×", c.wall_ns / steady_wall)
            } else {
                String::new()
            },
            per_process: match (
                c.per_process_wall_ns.iter().copied().reduce(f64::min),
                c.per_process_wall_ns.iter().copied().reduce(f64::max),
            ) {
                (Some(lo), Some(hi)) => format!(
                    "{} to {} over {} processes",
                    format::duration(lo),
                    format::duration(hi),
                    c.per_process_wall_ns.len()
                ),
                _ => String::new(),
            },
        })
        .collect()
}

fn naive_row(n: &NaiveLoop) -> NaiveRow {
    NaiveRow {
        iters: n.iters,
        naive: format::duration(n.naive_ns_per_iter),
        synced: format::duration(n.synced_ns_per_iter),
        error: if n.naive_ns_per_iter > 0.0 && n.synced_ns_per_iter > n.naive_ns_per_iter {
            format!(
                "{:.1}× too fast",
                n.synced_ns_per_iter / n.naive_ns_per_iter
            )
        } else {
            "about right".into()
        },
    }
}

/// Throughput, memory at the peak and from call to call, and memory against the
/// baseline.
fn resource_facts(
    b: &ReportBenchmark,
    s: &BenchmarkSummary,
    m: &Measurement,
    fig: &Figures,
    on_cpu: bool,
) -> Vec<Fact> {
    let mut facts = Vec::new();
    if let (Some(t), Some((rate, _))) = (m.throughput, &fig.throughput) {
        let detail = percent_of_peak(b, s, t, fig.estimate.point)
            .map(|(p, of)| format!("{p:.0}% of {of}"))
            .unwrap_or_else(|| {
                if on_cpu {
                    "per second of synced wall time".into()
                } else {
                    "device peak unknown".into()
                }
            });
        facts.push(fact("throughput", rate.clone(), detail));
    }
    if let Some(mem) = s.memory.peak {
        facts.extend(memory_facts(mem));
    }
    if let Some(g) = &s.memory.growth {
        facts.push(growth_fact(g));
    }
    if let Some(c) = b
        .baseline
        .as_ref()
        .and_then(|c| crate::output::view::metrics::memory(&c.outcome))
    {
        // A bounded cache in one phrase first (it explains the peak and the growth),
        // then every figure, then what was left out and why.
        let cache = c.bounded_cache.is_some().then(|| c.describe());
        let figures = c.figures.iter().map(|f| f.describe());
        let left_out = c
            .left_out
            .iter()
            .map(|l| format!("{} not judged: {}", l.figure.label(), l.reason));
        facts.push(fact(
            "memory vs baseline",
            c.verdict().label(),
            cache
                .into_iter()
                .chain(figures)
                .chain(left_out)
                .collect::<Vec<_>>()
                .join("; "),
        ));
    }
    facts
}

/// What the routine holds from call to call: flagged when it keeps memory per call.
fn growth_fact(g: &gpubench_analysis::memory::GrowthSummary) -> Fact {
    let calls = format!(
        "allocated bytes after the outputs were dropped, read after two stretches of {} calls",
        g.calls
    );
    match g.flag_text() {
        Some(held) => fact(
            "growth per call",
            held,
            format!("{calls}: the routine keeps memory every call (a cache that never evicts?)"),
        ),
        None => fact(
            "growth per call",
            "none",
            format!("{calls}: nothing kept from call to call"),
        ),
    }
}

pub(crate) fn memory_facts(mem: gpubench_record::measurement::MemoryStats) -> Vec<Fact> {
    let mut facts = vec![
        fact(
            "peak allocated",
            format::bytes(mem.peak_allocated_bytes),
            "held by tensors",
        ),
        fact(
            "peak reserved",
            format::bytes(mem.peak_reserved_bytes),
            "held by the caching allocator",
        ),
    ];
    if mem.alloc_retries > 0 || mem.num_ooms > 0 {
        facts.push(fact(
            "allocator retries / OOMs",
            format!("{} / {}", mem.alloc_retries, mem.num_ooms),
            "retries mean the cache was flushed to fit an allocation",
        ));
    }
    facts
}

pub(crate) fn config_rows(r: &RawRecord) -> Vec<(String, String)> {
    let c = &r.config;
    let seconds = |s: f64| format::duration(s * 1e9);
    // A run splits each benchmark's measurement time over the processes it runs at
    // least; the record holds one process's share.
    let measurement = if c.processes.min > 1 {
        format!(
            "{} per process ({} over {} processes)",
            seconds(c.measurement_time_s),
            seconds(c.measurement_time_s * f64::from(c.processes.min)),
            c.processes.min
        )
    } else {
        seconds(c.measurement_time_s)
    };
    let on_cpu = on_cpu(&r.fingerprint);
    let flushed = match (c.flush_l2, on_cpu) {
        (true, false) => FLUSH_L2_REGIME,
        (true, true) => {
            "yes: one call per sample, after the cache is overwritten (the cold-cache figure)"
        }
        (false, false) => "no: calls run back to back, the GPU busy and at its loaded clock",
        (false, true) => "no: calls run back to back",
    };
    vec![
        (
            "mode".into(),
            match c.mode {
                RunMode::Bench => "bench".into(),
                RunMode::Smoke => "smoke (one call)".into(),
            },
        ),
        ("warm-up bound".into(), seconds(c.warmup_time_s)),
        ("measurement bound".into(), measurement),
        ("sample target".into(), seconds(c.sample_target_s)),
        (
            "samples".into(),
            format!("{} to {}", c.min_samples, c.max_samples),
        ),
        (
            "interval target".into(),
            format!(
                "±{:.1}% (median, 95%, within a process)",
                c.target_rel_ci * 100.0
            ),
        ),
        (
            "processes".into(),
            processes_setting(&c.processes, r.processes.len()),
        ),
        (
            if on_cpu {
                "cache flushed"
            } else {
                "L2 flushed"
            }
            .into(),
            flushed.into(),
        ),
    ]
}

/// Which regime a `--flush-l2` run measures, in words.
pub(super) const FLUSH_L2_REGIME: &str = "yes: one call per sample after a flush, at the clock flushed calls settle at over the whole warm-up; this is the cold-cache figure (an 8192³ bf16 matmul on an H200, power-capped either way: 1.60 ms here, 1.56–1.58 ms back to back)";

/// The processes that measured the benchmark (`ran`, its record's processes) with the
/// policy they ran under, in words: `3`, `2 of 3`, `4 (3 to 6: more than 3 only for
/// device-bound ...)`.
pub(crate) fn processes_setting(
    p: &gpubench_record::measurement::ProcessPolicy,
    ran: usize,
) -> String {
    // Records from before the run wrote its policy into them carry the harness's own
    // view: one process.
    if *p == gpubench_record::measurement::ProcessPolicy::single() {
        return ran.to_string();
    }
    if p.is_fixed() {
        return if ran == p.min as usize {
            ran.to_string()
        } else {
            format!("{ran} of {}", p.min)
        };
    }
    format!(
        "{ran} ({} to {}: more than {} only for device-bound benchmarks whose interval is wider than ±{}%)",
        p.min,
        p.max,
        p.min,
        p.target_rel_ci * 100.0
    )
}

/// The snapshot's lines at an out-of-memory failure, or why there is none.
fn held_lines(f: &gpubench_record::failure::Failure) -> Vec<String> {
    match (&f.memory_snapshot, &f.memory_snapshot_unavailable) {
        (Some(s), _) => s.report_lines(),
        (None, Some(why)) => vec![format!("no allocator snapshot: {why}")],
        (None, None) => Vec::new(),
    }
}
