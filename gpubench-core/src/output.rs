//! The readable per-benchmark summary the harness prints.

use gpubench_analysis::kernels::count_text;
use gpubench_analysis::stats::{median, median_estimate};
use gpubench_record::kernels::Counter;
use gpubench_record::measurement::{Measurement, StopReason};
use gpubench_record::record::RawRecord;
use gpubench_record::units::{format_bytes, format_ns};

/// A few lines describing one record.
pub fn summary(record: &RawRecord) -> String {
    let mut out = String::new();
    if let Some(f) = record.failure() {
        out.push_str(&format!(
            "{}: FAILED ({}): {}\n",
            record.id,
            f.kind.label(),
            first_line(&f.message)
        ));
        if let Some(m) = &f.memory_at_failure {
            out.push_str(&format!(
                "    allocator at failure: {} allocated, {} reserved, {} OOMs\n",
                format_bytes(m.allocated_bytes),
                format_bytes(m.reserved_bytes),
                m.num_ooms
            ));
        }
        if let Some(s) = &f.memory_snapshot {
            out.push_str("    what held memory at the failure:\n");
            for line in s.report_lines() {
                out.push_str(&format!("      {line}\n"));
            }
        }
        if let Some(why) = &f.memory_snapshot_unavailable {
            out.push_str(&format!("    no allocator snapshot: {why}\n"));
        }
        return out;
    }
    let Some(m) = record.first_measurement() else {
        return format!("{}: no measurement\n", record.id);
    };
    let device = record.fingerprint.device.label();
    if m.stop_reason == StopReason::Smoke {
        let cold = m
            .cold
            .first()
            .map(|c| format_ns(c.wall_ns))
            .unwrap_or_default();
        return format!("{}: ran once on {device} ({cold})\n", record.id);
    }
    let primary = median_estimate(&m.primary_per_iter());
    let which = if m.device_timer { "device" } else { "synced" };
    out.push_str(&format!(
        "{:<32} {which} {} [{} {}] per iteration on {device}\n",
        record.id,
        format_ns(primary.point),
        format_ns(primary.lower),
        format_ns(primary.upper),
    ));
    // Only the primary figure gets an interval; the others are plain medians.
    let wall = median(&m.wall_per_iter());
    let host = median(&m.host_per_iter());
    let mut parts = vec![
        format!("synced wall {}", format_ns(wall)),
        format!("host dispatch {}", format_ns(host)),
    ];
    if let Some(d) = m.device_per_iter() {
        parts.push(format!("device {}", format_ns(median(&d))));
    }
    out.push_str(&format!("    {}\n", parts.join(" · ")));
    let mut parts = Vec::new();
    for c in &m.cold {
        parts.push(format!("{} {}", c.label, format_ns(c.wall_ns)));
    }
    if let Some(t) = &m.throughput {
        parts.push(t.format_rate(primary.point));
    }
    if let Some(mem) = &m.memory {
        parts.push(format!(
            "peak memory {} (reserved {})",
            format_bytes(mem.peak_allocated_bytes),
            format_bytes(mem.peak_reserved_bytes)
        ));
    }
    out.push_str(&format!("    cold: {}\n", parts.join(" · ")));
    let iters = m.samples.first().map_or(0, |s| s.iters);
    let stop = match m.stop_reason {
        StopReason::Converged => "converged",
        StopReason::TimeBound => "stopped at the time bound",
        StopReason::SampleBound => "stopped at the sample bound",
        StopReason::Smoke => "smoke",
        StopReason::Paired => "alternated with the other revision",
    };
    out.push_str(&format!(
        "    {} samples × {iters} iterations, {stop}; empty sync costs {}\n",
        m.samples.len(),
        format_ns(m.sync_cost_ns)
    ));
    for n in &m.naive {
        let ratio = n.synced_ns_per_iter / n.naive_ns_per_iter.max(1.0);
        out.push_str(&format!(
            "    a naive timer over {} iterations says {} per iteration; synced: {} ({ratio:.1}× longer)\n",
            n.iters,
            format_ns(n.naive_ns_per_iter),
            format_ns(n.synced_ns_per_iter)
        ));
    }
    out.push_str(&kernel_line(m));
    if let Some(p) = &m.memory_peak {
        out.push_str("    what held memory at the peak:\n");
        for line in p.report_lines(m.memory.map(|s| s.peak_allocated_bytes)) {
            out.push_str(&format!("      {line}\n"));
        }
    }
    if let Some(why) = &m.memory_peak_unavailable {
        out.push_str(&format!("    no allocator snapshot at the peak: {why}\n"));
    }
    if !m.flags.is_empty() {
        let flags: Vec<&str> = m.flags.iter().map(|f| f.label()).collect();
        out.push_str(&format!("    flags: {}\n", flags.join(", ")));
    }
    out.push_str(&gpu_line(record, m));
    out.push_str(&host_line(record));
    if let Some(c) = record.eager_compiled() {
        out.push_str(&crate::eager_compiled::summary(c));
    }
    out
}

/// `    gpu: SM clock 1980 MHz at start, 1755 MHz at end, up to 71 °C; 3 of 40 samples
/// throttled, left out; other processes on the GPU: 4242`, when the GPU was read;
/// nothing without telemetry (a CPU run prints nothing new).
fn gpu_line(record: &RawRecord, m: &Measurement) -> String {
    let Some(t) = record.processes.first().and_then(|r| r.telemetry.as_ref()) else {
        return String::new();
    };
    let mut parts = vec![format!(
        "SM clock {} MHz at start, {} MHz at end",
        t.start.clock.sm_clock_mhz, t.end.clock.sm_clock_mhz
    )];
    if let Some(c) = t.max_temperature_c {
        parts.push(format!("up to {c} °C"));
    }
    let throttled = m.throttled_samples();
    if throttled > 0 {
        parts.push(format!(
            "{throttled} of {} samples throttled, left out",
            m.samples.len()
        ));
    }
    if t.contended() {
        let pids: Vec<String> = t
            .other_processes
            .iter()
            .map(|p| p.pid.to_string())
            .collect();
        parts.push(format!("other processes on the GPU: {}", pids.join(", ")));
    }
    format!("    gpu: {}\n", parts.join(" · "))
}

/// `    host: 1 intra-op thread (the cores the host had free); contended: the host's 2
/// CPUs were oversubscribed: ...`: on the CPU device always (its threads do the work),
/// on a GPU only when the host was oversubscribed.
fn host_line(record: &RawRecord) -> String {
    let Some(h) = record.processes.first().and_then(|r| r.host.as_ref()) else {
        return String::new();
    };
    let contention = h.contention_text();
    if !record.fingerprint.device.on_cpu() && contention.is_none() {
        return String::new();
    }
    let mut parts = vec![h.threads_text()];
    parts.extend(contention.map(|c| format!("contended: {c}")));
    format!("    host: {}\n", parts.join("; "))
}

/// `    kernel 2.29 µs per call (CUDA-graph replay) · 1 kernel, 0 memcpys, 0 syncs per
/// call · top: void add_kernel<...>`, or why there is no kernel time.
fn kernel_line(m: &Measurement) -> String {
    let Some(k) = &m.kernel else {
        return match &m.kernel_unavailable {
            Some(why) => format!("    {why}\n"),
            None => String::new(),
        };
    };
    let mut parts = vec![format!(
        "kernel {} per call ({})",
        format_ns(median(&k.samples_ns)),
        k.method.label()
    )];
    if let Some(c) = &k.counters {
        let counts: Vec<String> = Counter::ALL
            .into_iter()
            .filter(|&x| x != Counter::AllocatedBytes)
            .filter_map(|x| {
                let n = c.per_call(x)?;
                Some(format!(
                    "{} {}",
                    count_text(n),
                    if n == 1.0 { x.noun() } else { x.nouns() }
                ))
            })
            .collect();
        parts.push(format!("{} per call", counts.join(", ")));
    }
    if let Some(top) = k.kernels.first() {
        parts.push(format!("top: {}", shorten(&top.name, 60)));
    }
    let mut line = format!("    {}\n", parts.join(" · "));
    if let Some(why) = &k.not_capturable {
        line.push_str(&format!(
            "    not capturable in a CUDA graph: {}\n",
            first_line(why)
        ));
    }
    line
}

/// `s` cut to `max` characters, with `…` when cut.
fn shorten(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let cut: String = s.chars().take(max - 1).collect();
    format!("{cut}…")
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}
