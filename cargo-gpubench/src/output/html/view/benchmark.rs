//! A benchmark's page: its facts, cold calls, naive loops, failure, memory and
//! settings.

use crate::format;
use crate::output::html::eager_compiled::EagerCompiledView;
use crate::output::html::facts::{fact, Fact};
use crate::output::html::input::ReportBenchmark;
use crate::output::html::kernels::KernelView;
use crate::output::html::view::common::{
    baseline_note, benchmark_status, compared, environment_rows, on_cpu, p_value, percent_of_peak,
    time_label, BenchmarkView, ColdRow, FailureView, Figures, NaiveRow, PageCharts,
};
use crate::output::html::view::plots::{chart, fill_charts};
use gpubench_analysis::processes::EstimateBasis;
use gpubench_analysis::{
    file_stem_for_id, BenchmarkSummary, Measurement, RawRecord, RunMode, StopReason,
};

pub(crate) fn benchmark_view(
    b: &ReportBenchmark,
    s: &BenchmarkSummary,
    fig: Option<&Figures>,
) -> BenchmarkView {
    let r = &b.record;
    let stem = file_stem_for_id(&r.id);
    let status = benchmark_status(b);
    let m = r.first_measurement();
    let failure = r.failure().map(|f| FailureView {
        kind: match r.failed_round() {
            Some(round) if r.rounds.len() > 1 => {
                format!(
                    "{} (in round {} of {})",
                    f.kind.label(),
                    round.round,
                    r.rounds.len()
                )
            }
            _ => f.kind.label().to_string(),
        },
        message: f.message.clone(),
        memory: f.memory_at_failure.map(memory_facts).unwrap_or_default(),
    });
    let comparison = r.eager_compiled().map(EagerCompiledView::new);
    let on_cpu = on_cpu(&r.fingerprint);
    let mut view = BenchmarkView {
        id: r.id.clone(),
        name: b.name().to_string(),
        on_cpu,
        cpu_note: None,
        stem: stem.clone(),
        status,
        failure,
        measured: fig.is_some(),
        smoke: r.config.mode == RunMode::Smoke,
        primary_label: String::new(),
        key_facts: Vec::new(),
        reading: Vec::new(),
        timing_facts: Vec::new(),
        cold_rows: Vec::new(),
        cold_device: false,
        naive_rows: Vec::new(),
        resource_facts: Vec::new(),
        baseline_note: baseline_note(b),
        charts: PageCharts::default(),
        comparison,
        kernels: None,
        environment: environment_rows(&r.fingerprint),
        config: config_rows(r),
    };
    if let Some(plot) = view
        .comparison
        .as_ref()
        .and_then(EagerCompiledView::latency_plot)
    {
        view.charts.comparison = Some(chart(
            &stem,
            "comparison.svg",
            plot,
            "Per-request latency of each variant over the shape stream",
            "Each dot is one request, in the order served; rings mark cold calls (the first request at a new shape). Rings after the first requests mean a variant pays again for every new shape.",
        ));
    }
    let (Some(m), Some(fig)) = (m, fig) else {
        return view;
    };
    view.primary_label = time_label(fig.primary_kind).into();
    // The CPU has no kernels to time or count; the page says so in its CPU sentence.
    if !on_cpu {
        view.kernels = KernelView::new(s, b.baseline.as_ref());
    }
    fill_facts(&mut view, b, s, m, fig);
    fill_charts(&mut view, b, s, m, fig);
    view
}

pub(crate) fn fill_facts(
    view: &mut BenchmarkView,
    b: &ReportBenchmark,
    s: &BenchmarkSummary,
    m: &Measurement,
    fig: &Figures,
) {
    let est = fig.estimate;
    let n = fig.processes.count;
    view.key_facts.push(fact(
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
    ));
    let within = fig
        .processes
        .within
        .map(|w| format!("noise within each ±{:.2}%", w * 100.0));
    view.key_facts.push(fact(
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
        view.key_facts.push(fact(
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
    if let Some(c) = compared(b) {
        let e = c.change;
        let threshold = if c.threshold > c.noise_threshold {
            format!(
                "threshold ±{} (the spread between processes; noise threshold ±{})",
                format::percent_change(c.threshold).trim_start_matches('+'),
                format::percent_change(c.noise_threshold).trim_start_matches('+')
            )
        } else {
            format!(
                "noise threshold ±{}",
                format::percent_change(c.threshold).trim_start_matches('+')
            )
        };
        view.key_facts.push(fact(
            "change vs baseline",
            format::percent_change(e.point),
            format!(
                "{:.0}% interval {}; {} (one-sided); {threshold}",
                e.confidence * 100.0,
                format::percent_interval(e.lower, e.upper),
                p_value(c.p_value),
            ),
        ));
        view.key_facts.push(fact(
            "baseline",
            format::duration(c.baseline_estimate),
            format!(
                "{} process{} of {} time",
                c.baseline_processes,
                if c.baseline_processes == 1 { "" } else { "es" },
                fig.compared_kind.label()
            ),
        ));
    }
    view.key_facts.push(fact(
        "mean",
        format::duration(fig.mean),
        "of every sample of every process",
    ));
    let o = fig.outliers;
    if o.total() > 0 {
        view.key_facts.push(fact(
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
    view.key_facts.push(fact(
        "samples",
        iters.len().to_string(),
        if lo == hi {
            format!("{lo} iteration{} each", format::plural(lo as usize))
        } else {
            format!("{lo}–{hi} iterations each")
        },
    ));
    view.key_facts.push(fact(
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
    if view.on_cpu {
        // One figure stands for host, device and wall time here: say so once, and
        // show none of the figures and charts that tell them apart on a GPU.
        view.cpu_note = Some(format!(
            "Measured on the CPU, where device time is host time: a call returns when its work is done, with no queue to wait on, so host dispatch ({}) and synced wall time ({}) are one figure and every sync is free. The figures are synced wall time per call.",
            format::duration(fig.host),
            format::duration(fig.wall)
        ));
    } else {
        view.key_facts.push(fact(
            "sync cost",
            format::duration(s.sync_cost_ns.unwrap_or(m.sync_cost_ns)),
            "an empty sync; amortised over each sample",
        ));
    }

    view.timing_facts.push(fact(
        "synced wall",
        format::duration(fig.wall),
        "sync; start; k calls; sync; stop — per call",
    ));
    if let Some(d) = fig.device {
        view.timing_facts
            .push(fact("device", format::duration(d), "from device events"));
    }
    view.timing_facts.push(fact(
        "host dispatch",
        format::duration(fig.host),
        "until the k-th call returned to the host",
    ));
    let busy = fig.device.unwrap_or(fig.wall);
    // On the CPU there is no device to be bound by.
    let device_bound = !view.on_cpu && fig.host < 0.6 * busy;
    let launch_bound = !view.on_cpu && fig.device.is_some_and(|d| d < 0.7 * fig.host);
    if device_bound {
        view.reading.push(format!(
            "The host returns after {} per call while the device needs {}: the device is the bottleneck (device-bound). A timer stopped without a sync would report the host figure.",
            format::duration(fig.host),
            format::duration(busy)
        ));
    } else if launch_bound {
        view.reading.push(format!(
            "The device needs {} per call but the host takes {} to dispatch it: the device waits on the host (launch-bound). Fewer, larger kernels or a compiled graph help here.",
            format::duration(busy),
            format::duration(fig.host)
        ));
    }
    for flag in &s.flags {
        if *flag == gpubench_analysis::Flag::SyncsInsideRoutine {
            view.reading.push("Host-dispatch time tracks device time: something inside the routine synchronises (e.g. `.item()`, printing a tensor, a copy to the CPU).".into());
        }
        if *flag == gpubench_analysis::Flag::Unstable {
            view.reading.push(format!(
                "The samples of a process never settled within its time bound; treat the figures as rough and look at the time-order chart for drift{}.",
                if view.on_cpu { " or other work on the machine" } else { " or throttling" }
            ));
        }
        if *flag == gpubench_analysis::Flag::Throttled {
            view.reading.push(format!(
                "The GPU throttled during {} sample(s): their SM clock was below 75% of the GPU's default, or a hardware, thermal or power-brake slowdown was on. They are left out of the figures; the clock chart under the samples shows when.",
                s.throttled_samples
            ));
        }
        if *flag == gpubench_analysis::Flag::Contended && !s.other_processes.is_empty() {
            let pids: Vec<String> = s.other_processes.iter().map(u32::to_string).collect();
            view.reading.push(format!(
                "Contended: another process used the GPU while this benchmark ran (process {}). It shared the SMs, memory bandwidth and power, so the figures may be slow by whatever it took; measure again on a quiet GPU (`cargo gpubench doctor` lists what runs on it).",
                pids.join(", ")
            ));
        }
        let host = s.host_cpus.as_ref().and_then(|h| h.contention_text());
        if let (gpubench_analysis::Flag::Contended, Some(host)) = (flag, host) {
            view.reading.push(format!(
                "Contended: {host}. Some of its threads waited for a core, so the figures may be slow by whatever the other work took; measure again on a quiet host (`cargo gpubench doctor` checks the load)."
            ));
        }
        if *flag == gpubench_analysis::Flag::UnstableAcrossProcesses {
            view.reading.push(format!(
                "The processes disagree ({}): the machine runs this benchmark at a different speed in each fresh process, usually the host's dispatch speed for launch-bound work. The interval covers that; kernel time would not move with it.",
                crate::output::terminal::process_note(s).unwrap_or_default()
            ));
        }
    }

    // Cold calls are synced wall times, so they compare with the steady wall time.
    let steady_wall = fig.wall;
    let steady = fig.estimate.point;
    view.cold_rows = s
        .cold
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
        .collect();
    view.cold_device = view.cold_rows.iter().any(|c| !c.device.is_empty());
    // Without a queue an unsynchronised loop is as right as a synced one.
    let naive: &[gpubench_analysis::NaiveLoop] = if view.on_cpu { &[] } else { &m.naive };
    view.naive_rows = naive
        .iter()
        .map(|n| NaiveRow {
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
        })
        .collect();

    if let (Some(t), Some((rate, _))) = (m.throughput, &fig.throughput) {
        let detail = percent_of_peak(b, t, steady)
            .map(|(p, of)| format!("{p:.0}% of {of}"))
            .unwrap_or_else(|| {
                if view.on_cpu {
                    "per second of synced wall time".into()
                } else {
                    "device peak unknown".into()
                }
            });
        view.resource_facts
            .push(fact("throughput", rate.clone(), detail));
    }
    if let Some(mem) = s.memory {
        view.resource_facts.extend(memory_facts(mem));
    }
}

pub(crate) fn memory_facts(mem: gpubench_analysis::MemoryStats) -> Vec<Fact> {
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
            processes_setting(&c.processes, r.rounds.len()),
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
pub const FLUSH_L2_REGIME: &str = "yes: one call per sample after a flush, so the GPU idles between calls and clocks up; this is the cold-cache, rested-GPU figure, often faster than back to back (an 8192³ bf16 matmul on an H200: 1.39 ms here, 1.60–1.64 ms back to back)";

/// The processes that measured the benchmark (`ran`, its record's rounds) with the
/// policy they ran under, in words: `3`, `2 of 3`, `4 (3 to 6: more than 3 only for
/// device-bound ...)`.
pub(crate) fn processes_setting(p: &gpubench_analysis::ProcessPolicy, ran: usize) -> String {
    // Records from before the run wrote its policy into them carry the harness's own
    // view: one process.
    if *p == gpubench_analysis::ProcessPolicy::single() {
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
