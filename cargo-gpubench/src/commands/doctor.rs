//! `cargo gpubench doctor`: checks the machine before benchmarks run on it (libtorch,
//! CUDA, the NVIDIA driver, each GPU's clocks, modes and other processes, the host's
//! CPU governor and load) and says, for each problem, why it makes results
//! unreliable and what to do.
//!
//! What is read ([`Facts::gather`]) is apart from what is judged ([`findings`]), so
//! the judgement is tested on made-up machines.

use std::ffi::{c_int, CString};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Result;
use gpubench_analysis::nvml::{driver_and_count, NvmlSource};
use gpubench_analysis::telemetry::TelemetrySource;
use gpubench_record::telemetry::{GpuState, TelemetryReading};

use crate::build::libtorch::libtorch_version;
use crate::build::libtorch::{self, LIBTORCH_VERSION};
use crate::cli::DoctorArgs;
use crate::exit_code::Exit;

/// What libtorch the benchmarks would load.
#[derive(Debug, Clone, PartialEq)]
pub struct LibtorchFacts {
    /// Its library directory.
    pub lib_dir: PathBuf,
    /// How it was found, in words.
    pub source: String,
    /// Its version, e.g. `2.11.0+cu130`, when it says.
    pub version: Option<String>,
    /// Whether it holds the CUDA library (`libtorch_cuda`).
    pub has_cuda: bool,
}

/// One GPU as NVML sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct GpuFacts {
    /// NVML's number of the GPU.
    pub index: u32,
    /// Its model name.
    pub name: String,
    /// Driver, clocks, limits and modes.
    pub state: GpuState,
    /// A reading now (clocks, slowdown reasons, processes), or why it failed.
    pub reading: Result<TelemetryReading, String>,
}

/// Everything `doctor` judges.
#[derive(Debug, Clone, PartialEq)]
pub struct Facts {
    /// The libtorch found, or why none was.
    pub libtorch: Result<LibtorchFacts, String>,
    /// CUDA devices the driver API sees, or why CUDA cannot be used.
    pub cuda_devices: Result<u32, String>,
    /// The driver's version and its GPUs through NVML, or why NVML cannot be used.
    pub nvml: Result<(String, Vec<GpuFacts>), String>,
    /// `CUDA_VISIBLE_DEVICES`, when set.
    pub visible_devices: Option<String>,
    /// The first CPU's frequency governor, when the host exposes it.
    pub cpu_governor: Option<String>,
    /// The one-minute load average.
    pub load_average: Option<f64>,
    /// CPUs of the host.
    pub cpus: usize,
}

impl Facts {
    /// Reads this machine.
    pub fn gather(workspace: &Path) -> Self {
        let libtorch = libtorch::locate(&libtorch::Search::from_env(
            vec![workspace.to_path_buf()],
            Vec::new(),
        ))
        .map(|found| LibtorchFacts {
            version: libtorch_version(&found.lib_dir),
            has_cuda: ["libtorch_cuda.so", "torch_cuda.dll"]
                .iter()
                .any(|f| found.lib_dir.join(f).exists()),
            source: found.source.to_string(),
            lib_dir: found.lib_dir,
        })
        .map_err(|e| e.to_string());
        let nvml = driver_and_count().map(|(driver, count)| {
            let gpus = (0..count)
                .filter_map(|i| NvmlSource::open(None, i).ok().map(|s| (i, s)))
                .map(|(index, source)| GpuFacts {
                    index,
                    name: source.name().unwrap_or_else(|| "unknown GPU".into()),
                    state: source.state(),
                    reading: source.read(),
                })
                .collect();
            (driver, gpus)
        });
        Facts {
            libtorch,
            cuda_devices: cuda_device_count(),
            nvml,
            visible_devices: std::env::var("CUDA_VISIBLE_DEVICES").ok(),
            cpu_governor: std::fs::read_to_string(
                "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor",
            )
            .ok()
            .map(|s| s.trim().to_string()),
            load_average: std::fs::read_to_string("/proc/loadavg")
                .ok()
                .and_then(|s| s.split_whitespace().next()?.parse().ok()),
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        }
    }
}

/// CUDA devices the driver API sees (`cuInit`, `cuDeviceGetCount` through `dlopen`),
/// or why CUDA cannot be used.
fn cuda_device_count() -> Result<u32, String> {
    type CuInit = unsafe extern "C" fn(u32) -> c_int;
    type CuDeviceGetCount = unsafe extern "C" fn(*mut c_int) -> c_int;
    let lib = CString::new("libcuda.so.1").expect("no NUL");
    // SAFETY: dlopen/dlsym with valid C strings; the symbols have the driver API's
    // documented signatures.
    unsafe {
        let handle = libc::dlopen(lib.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL);
        if handle.is_null() {
            return Err("no NVIDIA driver (libcuda.so.1 could not be loaded)".into());
        }
        let sym = |name: &str| {
            let c = CString::new(name).expect("no NUL");
            let p = libc::dlsym(handle, c.as_ptr());
            (!p.is_null()).then_some(p)
        };
        let (Some(init), Some(count)) = (sym("cuInit"), sym("cuDeviceGetCount")) else {
            return Err("libcuda.so.1 lacks cuInit or cuDeviceGetCount".into());
        };
        let init: CuInit = std::mem::transmute(init);
        let count: CuDeviceGetCount = std::mem::transmute(count);
        let rc = init(0);
        if rc == 100 {
            return Err("the NVIDIA driver sees no CUDA device (CUDA error 100)".into());
        }
        if rc != 0 {
            return Err(format!("cuInit failed with CUDA error {rc}"));
        }
        let mut n: c_int = 0;
        match count(&mut n) {
            0 => Ok(n.max(0) as u32),
            rc => Err(format!("cuDeviceGetCount failed with CUDA error {rc}")),
        }
    }
}

/// How a finding bears on the results.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    /// Fine, shown for the record.
    Ok,
    /// Makes results unreliable: the exit code says so.
    Problem,
}

/// One line of the diagnosis.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
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
pub enum Wanted {
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
    pub fn from_device(device: Option<&str>) -> Self {
        match device {
            Some("cpu") => Wanted::Cpu,
            Some(_) => Wanted::Gpu,
            None => Wanted::Auto,
        }
    }
}

/// The diagnosis of `facts` for the device `wanted`.
pub fn findings(facts: &Facts, wanted: Wanted) -> Vec<Finding> {
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

/// The diagnosis in words, one finding a line, advice indented under problems.
pub fn render(findings: &[Finding]) -> String {
    let mut out = String::new();
    for f in findings {
        let mark = match f.severity {
            Severity::Ok => "ok     ",
            Severity::Problem => "PROBLEM",
        };
        let _ = writeln!(out, "{mark} {:<9} {}", f.subject, f.found);
        if let Some(a) = &f.advice {
            let _ = writeln!(out, "        {:<9} why and what to do: {a}", "");
        }
    }
    let problems = findings
        .iter()
        .filter(|f| f.severity == Severity::Problem)
        .count();
    if problems == 0 {
        out.push_str("\nnothing found that would make results unreliable\n");
    } else {
        let _ = writeln!(
            out,
            "\n{problems} problem(s) that would make results unreliable"
        );
    }
    out
}

/// The exit of a diagnosis: success when no finding is a problem.
pub fn exit_of(findings: &[Finding]) -> Exit {
    if findings.iter().any(|f| f.severity == Severity::Problem) {
        Exit::Setup
    } else {
        Exit::Success
    }
}

/// Runs `cargo gpubench doctor`.
pub fn run(args: &DoctorArgs) -> Result<Exit> {
    let here = std::env::current_dir()?;
    let found = findings(
        &Facts::gather(&here),
        Wanted::from_device(args.device.as_deref()),
    );
    print!("{}", render(&found));
    Ok(exit_of(&found))
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpubench_record::telemetry::{ClockReading, GpuProcess, SlowdownReason};

    fn healthy() -> Facts {
        Facts {
            libtorch: Ok(LibtorchFacts {
                lib_dir: "/venv/torch/lib".into(),
                source: "LIBTORCH".into(),
                version: Some("2.11.0+cu130".into()),
                has_cuda: true,
            }),
            cuda_devices: Ok(1),
            nvml: Ok((
                "580.95.05".into(),
                vec![GpuFacts {
                    index: 0,
                    name: "NVIDIA H200".into(),
                    state: GpuState {
                        driver_version: Some("580.95.05".into()),
                        sm_clock_mhz: Some(345),
                        max_sm_clock_mhz: Some(1980),
                        persistence_mode: Some(true),
                        compute_mode: Some("default".into()),
                        ..GpuState::default()
                    },
                    reading: Ok(TelemetryReading {
                        clock: ClockReading {
                            sm_clock_mhz: 345,
                            temperature_c: Some(31),
                            slowdown: vec![SlowdownReason::GpuIdle],
                        },
                        memory_clock_mhz: Some(2619),
                        power_w: Some(75.0),
                        power_limit_w: Some(700.0),
                        processes: vec![],
                    }),
                }],
            )),
            visible_devices: None,
            cpu_governor: Some("performance".into()),
            load_average: Some(0.2),
            cpus: 16,
        }
    }

    fn problems(facts: &Facts) -> Vec<String> {
        findings(facts, Wanted::Gpu)
            .into_iter()
            .filter(|f| f.severity == Severity::Problem)
            .map(|f| f.found)
            .collect()
    }

    #[test]
    fn a_quiet_gpu_machine_has_no_problem_and_exits_0() {
        let f = findings(&healthy(), Wanted::Gpu);
        assert_eq!(exit_of(&f), Exit::Success, "{}", render(&f));
        let text = render(&f);
        assert!(text.contains("2.11.0+cu130"), "{text}");
        assert!(text.contains("NVIDIA 580.95.05"), "{text}");
        assert!(text.contains("nothing found"), "{text}");
    }

    #[test]
    fn a_cpu_only_machine_is_no_problem_unless_a_gpu_is_asked_for() {
        let mut facts = healthy();
        facts.cuda_devices = Err("no NVIDIA driver (libcuda.so.1 could not be loaded)".into());
        facts.nvml = Err("NVML could not be loaded".into());
        if let Ok(lt) = &mut facts.libtorch {
            lt.has_cuda = false;
        }
        for wanted in [Wanted::Auto, Wanted::Cpu] {
            let f = findings(&facts, wanted);
            let text = render(&f);
            assert_eq!(exit_of(&f), Exit::Success, "{wanted:?}: {text}");
            assert!(
                text.contains("benchmarks run on the CPU") || text.contains("--device cpu"),
                "{text}"
            );
            assert!(text.contains("2.11.0"), "libtorch is still checked: {text}");
        }
        // Its host and its libtorch version are still problems there.
        facts.load_average = Some(40.0);
        assert_eq!(exit_of(&findings(&facts, Wanted::Auto)), Exit::Setup);
        facts.load_average = Some(0.1);
        // A GPU asked for, and none there: problems.
        let f = findings(&facts, Wanted::Gpu);
        assert_eq!(exit_of(&f), Exit::Setup, "{}", render(&f));
        assert!(render(&f).contains("no NVIDIA driver"));
        // A driver with no usable device is a GPU machine gone wrong, not a CPU one.
        facts.cuda_devices = Ok(0);
        assert_eq!(exit_of(&findings(&facts, Wanted::Auto)), Exit::Setup);
        assert_eq!(Wanted::from_device(Some("cuda:1")), Wanted::Gpu);
        assert_eq!(Wanted::from_device(Some("cpu")), Wanted::Cpu);
        assert_eq!(Wanted::from_device(None), Wanted::Auto);
    }

    #[test]
    fn each_problem_says_why_and_what_to_do_and_exits_5() {
        let mut facts = healthy();
        let Ok((_, gpus)) = &mut facts.nvml else {
            unreachable!()
        };
        gpus[0].state.persistence_mode = Some(false);
        let reading = gpus[0].reading.as_mut().unwrap();
        reading.processes.push(GpuProcess {
            pid: 4242,
            used_memory_bytes: Some(3 << 30),
        });
        reading
            .clock
            .slowdown
            .push(SlowdownReason::HwThermalSlowdown);
        facts.cpu_governor = Some("powersave".into());
        facts.load_average = Some(12.0);
        let found = problems(&facts);
        assert_eq!(
            found,
            vec![
                "persistence mode off",
                "slowed down now: hardware thermal slowdown",
                "other processes on it: 4242 (3072 MiB)",
                "CPU governor powersave",
                "load average 12.00 on 16 CPU(s)",
            ]
        );
        let f = findings(&facts, Wanted::Gpu);
        assert_eq!(exit_of(&f).code(), 5);
        assert!(f
            .iter()
            .filter(|x| x.severity == Severity::Problem)
            .all(|x| x.advice.is_some()));
        assert!(render(&f).contains("nvidia-smi -pm 1"));
    }

    #[test]
    fn a_libtorch_of_another_version_or_without_cuda_is_a_problem() {
        let mut facts = healthy();
        if let Ok(lt) = &mut facts.libtorch {
            lt.version = Some("2.9.1+cpu".into());
            lt.has_cuda = false;
        }
        let found = problems(&facts);
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(
            found[0].starts_with("2.9.1+cpu at /venv/torch/lib"),
            "{found:?}"
        );
        assert!(found[1].contains("CPU-only"), "{found:?}");
    }

    #[test]
    fn the_version_is_read_from_the_wheel_or_the_archive() {
        let dir = tempfile::tempdir().unwrap();
        let lib = dir.path().join("lib");
        std::fs::create_dir_all(&lib).unwrap();
        assert_eq!(libtorch_version(&lib), None);
        std::fs::write(dir.path().join("build-version"), "2.11.0+cu130\n").unwrap();
        assert_eq!(libtorch_version(&lib).as_deref(), Some("2.11.0+cu130"));
        std::fs::write(
            dir.path().join("version.py"),
            "from typing import Optional\n__version__ = '2.11.0+cpu'\ncuda = None\n",
        )
        .unwrap();
        assert_eq!(libtorch_version(&lib).as_deref(), Some("2.11.0+cpu"));
    }
}
