//! What the doctor makes of the facts: for each, whether it would make results
//! unreliable, why, and what to do.

use super::facts::{Facts, GpuFacts};
use crate::build::libtorch::LIBTORCH_VERSION;

/// How a finding bears on the results.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Severity {
    /// Fine, shown for the record.
    Ok,
    /// Makes results unreliable: the exit code says so.
    Problem,
}

/// One line of the diagnosis.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Finding {
    /// What was checked: `libtorch`, `cuda:0`, `host`.
    pub subject: String,
    /// What was found.
    pub found: String,
    /// Fine or a problem.
    pub severity: Severity,
    /// Why it makes results unreliable, and what to do (problems only).
    pub advice: Option<String>,
}

fn ok(subject: &str, found: String) -> Finding {
    Finding {
        subject: subject.into(),
        found,
        severity: Severity::Ok,
        advice: None,
    }
}

fn problem(subject: &str, found: String, advice: &str) -> Finding {
    Finding {
        subject: subject.into(),
        found,
        severity: Severity::Problem,
        advice: Some(advice.into()),
    }
}

/// Which device the diagnosis is for (`--device`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wanted {
    /// `--device cuda` or `cuda:N`: a GPU is required.
    Gpu,
    /// `--device cpu`: the host alone.
    Cpu,
    /// No `--device`: a GPU machine when an NVIDIA driver is there (a GPU it cannot
    /// use is then a problem), else a CPU-only machine.
    Auto,
}

impl Wanted {
    /// From `--device`.
    pub(crate) fn from_device(device: Option<&str>) -> Self {
        match device {
            Some("cpu") => Wanted::Cpu,
            Some(_) => Wanted::Gpu,
            None => Wanted::Auto,
        }
    }
}

/// The diagnosis of `facts` for the device `wanted`.
pub(crate) fn findings(facts: &Facts, wanted: Wanted) -> Vec<Finding> {
    // No driver at all (neither CUDA nor NVML loads): a machine without a GPU,
    // which is no problem unless a GPU was asked for.
    let no_driver = facts.cuda_devices.is_err() && facts.nvml.is_err();
    let cpu_only = match wanted {
        Wanted::Gpu => false,
        Wanted::Cpu => true,
        Wanted::Auto => no_driver,
    };
    if cpu_only {
        return cpu_findings(facts, wanted);
    }
    let mut out = Vec::new();
    match &facts.libtorch {
        Err(why) => out.push(problem(
            "libtorch",
            why.clone(),
            "benchmarks cannot run without it",
        )),
        Ok(lt) => {
            let version = lt.version.as_deref().unwrap_or("version unknown");
            let found = format!("{version} at {} (via {})", lt.lib_dir.display(), lt.source);
            let matches = lt
                .version
                .as_deref()
                .is_some_and(|v| v.split('+').next() == Some(LIBTORCH_VERSION));
            if matches || lt.version.is_none() {
                out.push(ok("libtorch", found));
            } else {
                out.push(problem(
                    "libtorch",
                    found,
                    &format!(
                        "tch is built for libtorch {LIBTORCH_VERSION}; another version fails to \
                         load or misbehaves: run `cargo gpubench setup`, or point LIBTORCH at \
                         libtorch {LIBTORCH_VERSION}"
                    ),
                ));
            }
            if !lt.has_cuda {
                out.push(problem(
                    "libtorch",
                    "a CPU-only build (no libtorch_cuda)".into(),
                    "benchmarks would run on the CPU: install the CUDA build (`cargo gpubench \
                     setup`, or PyPI's default torch wheel on Linux)",
                ));
            }
        }
    }
    match &facts.cuda_devices {
        Ok(n) if *n > 0 => out.push(ok("cuda", format!("{n} device(s) usable"))),
        Ok(_) => out.push(problem(
            "cuda",
            "no CUDA device visible".into(),
            "benchmarks would run on the CPU and say nothing of a GPU: check \
             CUDA_VISIBLE_DEVICES and that the GPU is attached",
        )),
        Err(why) => out.push(problem(
            "cuda",
            why.clone(),
            "benchmarks would run on the CPU and say nothing of a GPU: install the NVIDIA \
             driver, or run on a machine with a GPU",
        )),
    }
    if let Some(v) = &facts.visible_devices {
        out.push(ok("cuda", format!("CUDA_VISIBLE_DEVICES={v}")));
    }
    match &facts.nvml {
        Err(why) => out.push(problem(
            "gpu",
            why.clone(),
            "without NVML nothing records the GPU's clocks, throttling or other processes \
             on it, so a throttled or shared GPU goes unseen: install the NVIDIA driver \
             (it ships libnvidia-ml.so.1)",
        )),
        Ok((driver, gpus)) => {
            out.push(ok(
                "driver",
                format!("NVIDIA {driver}, {} GPU(s)", gpus.len()),
            ));
            for g in gpus {
                out.extend(gpu_findings(g));
            }
        }
    }
    out.extend(host_findings(facts));
    out
}

fn gpu_findings(g: &GpuFacts) -> Vec<Finding> {
    let subject = format!("gpu {}", g.index);
    let s = &g.state;
    let mhz = |x: Option<u32>| x.map_or_else(|| "?".to_string(), |v| format!("{v} MHz"));
    let mut out = vec![ok(
        &subject,
        format!(
            "{}: SM clock {} (max {}, default {}), memory clock {}, power limit {}, compute mode {}, ECC {}",
            g.name,
            mhz(s.sm_clock_mhz),
            mhz(s.max_sm_clock_mhz),
            mhz(s.default_sm_clock_mhz),
            mhz(s.memory_clock_mhz),
            s.power_limit_w
                .map_or_else(|| "?".into(), |w| format!("{w:.0} W")),
            s.compute_mode.as_deref().unwrap_or("?"),
            match s.ecc_enabled {
                Some(true) => "on",
                Some(false) => "off",
                None => "?",
            }
        ),
    )];
    match s.persistence_mode {
        Some(false) => out.push(problem(
            &subject,
            "persistence mode off".into(),
            "the driver is torn down between processes, so every benchmark process pays its \
             start-up and begins at idle clocks, and processes differ more: `sudo nvidia-smi \
             -pm 1`",
        )),
        Some(true) => out.push(ok(&subject, "persistence mode on".into())),
        None => {}
    }
    if s.compute_mode.as_deref() == Some("prohibited") {
        out.push(problem(
            &subject,
            "compute mode prohibited".into(),
            "no process may use this GPU: `sudo nvidia-smi -c DEFAULT`, or pick another GPU",
        ));
    }
    match &g.reading {
        Err(why) => out.push(problem(
            &subject,
            why.clone(),
            "the GPU could not be read: its clocks and other processes go unseen",
        )),
        Ok(r) => {
            if let Some(t) = r.clock.temperature_c {
                out.push(ok(&subject, format!("{t} °C now")));
            }
            let slow: Vec<&str> = r
                .clock
                .slowdown
                .iter()
                .filter(|x| x.throttles())
                .map(|x| x.label())
                .collect();
            if !slow.is_empty() {
                out.push(problem(
                    &subject,
                    format!("slowed down now: {}", slow.join(", ")),
                    "a throttled GPU runs below its clocks and every figure is slow by an \
                     unknown amount: let it cool, check its cooling and power supply",
                ));
            }
            if !r.processes.is_empty() {
                let list: Vec<String> = r
                    .processes
                    .iter()
                    .map(|p| match p.used_memory_bytes {
                        Some(b) => format!("{} ({} MiB)", p.pid, b >> 20),
                        None => p.pid.to_string(),
                    })
                    .collect();
                out.push(problem(
                    &subject,
                    format!("other processes on it: {}", list.join(", ")),
                    "they share its SMs, memory bandwidth and power with the benchmarks, which \
                     then measure slow by whatever they take: stop them, or run on another GPU \
                     (--devices, CUDA_VISIBLE_DEVICES)",
                ));
            }
        }
    }
    out
}

/// The diagnosis of a machine measured on its CPU: libtorch (any build), that
/// benchmarks run on the CPU, and the host.
fn cpu_findings(facts: &Facts, wanted: Wanted) -> Vec<Finding> {
    let mut out: Vec<Finding> = findings(facts, Wanted::Gpu)
        .into_iter()
        .filter(|f| {
            f.subject == "libtorch"
                && !(f.severity == Severity::Problem && f.found.contains("CPU-only"))
        })
        .collect();
    out.push(ok(
        "device",
        match wanted {
            Wanted::Cpu => "cpu (--device cpu): GPU checks left out".to_string(),
            _ => "no NVIDIA driver: a CPU-only machine, benchmarks run on the CPU \
                  (--device cuda makes a missing GPU a problem)"
                .to_string(),
        },
    ));
    out.extend(host_findings(facts));
    out
}

fn host_findings(facts: &Facts) -> Vec<Finding> {
    let mut out = Vec::new();
    match facts.cpu_governor.as_deref() {
        Some("performance") => out.push(ok("host", "CPU governor performance".into())),
        Some(g) => out.push(problem(
            "host",
            format!("CPU governor {g}"),
            "the host's clock then follows its load, and launch-bound benchmarks (which time \
             the host's dispatch) vary with it: `sudo cpupower frequency-set -g performance`",
        )),
        None => out.push(ok(
            "host",
            "CPU governor not exposed (a VM or container)".into(),
        )),
    }
    if let Some(load) = facts.load_average {
        let busy = load > (facts.cpus as f64 / 2.0).max(1.0);
        let found = format!("load average {load:.2} on {} CPU(s)", facts.cpus);
        if busy {
            out.push(problem(
                "host",
                found,
                "other work competes for the CPUs that dispatch the GPU's work, and host-bound \
                 figures slow down with it: wait for it to finish, or run on a quiet machine",
            ));
        } else {
            out.push(ok("host", found));
        }
    }
    out
}
