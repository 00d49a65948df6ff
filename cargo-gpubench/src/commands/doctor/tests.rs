//! The doctor's judgement on made-up machines.

use gpubench_record::telemetry::{
    ClockReading, GpuProcess, GpuState, SlowdownReason, TelemetryReading,
};

use super::facts::{GpuFacts, LibtorchFacts};
use super::*;
use crate::build::libtorch::libtorch_version;

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
                        power_w: Some(75.0),
                    },
                    memory_clock_mhz: Some(2619),
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
