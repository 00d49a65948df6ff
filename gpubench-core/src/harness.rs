//! `gpubench_core::main()`: lists, smoke-tests or measures the registered
//! benchmarks, one at a time, turning panics and libtorch errors into failed
//! records and moving on.

use std::cell::RefCell;
use std::io::Write;
use std::panic::{self, AssertUnwindSafe};
use std::path::Path;
use std::rc::Rc;
use std::sync::OnceLock;
use std::time::Instant;

use clap::Parser;
use gpubench_analysis::{
    cap_message, file_stem_for_id, Failure, FailureKind, Fingerprint, MeasurementConfig,
    MeasurementSettings, RawRecord, Round, RunMode,
};

use crate::cli::HarnessArgs;
use crate::cuda_loader::{self, CudaLoad};
use crate::device::{DeviceBackend, TorchDevice};
use crate::host::{HostWatch, ThreadRequest};
use crate::registry::{self, Case};
use crate::telemetry::Telemetry;
use crate::{fingerprint, output, Bencher};

pub use gpubench_analysis::protocol::{EXIT_BENCHMARK_FAILED as EXIT_FAILED, EXIT_USAGE};

thread_local! {
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// What `--device` (or `GPUBENCH_DEVICE`) asked this harness process for, set before
/// the benchmarks' cases are made.
static REQUESTED_DEVICE: OnceLock<Option<String>> = OnceLock::new();

/// The device the benchmarks of this process run on: `--device` (or
/// `GPUBENCH_DEVICE`) when given, else the first CUDA device when one is visible,
/// else the CPU: in a harness, what [`Bencher::device`] returns. `#[gpu_bench(args = [...])]`
/// values are made once it is known, so a sweep can size its cases for the device
/// and name them by what they run (`matmul/4096` on a GPU, `matmul/256` on the CPU):
///
/// ```no_run
/// # use gpubench_core::{gpu_bench, Bencher};
/// /// `n` on a GPU, a sixteenth of it on the CPU.
/// fn size(n: i64) -> i64 {
///     if gpubench_core::bench_device().is_cuda() { n } else { n / 16 }
/// }
///
/// #[gpu_bench(args = [size(1024), size(4096)])]
/// fn matmul(b: &mut Bencher, n: i64) {
///     let x = tch::Tensor::randn([n, n], (tch::Kind::Float, b.device()));
///     b.iter(|| x.matmul(&x));
/// }
/// # fn main() {}
/// ```
///
/// `cargo gpubench` lists with the `--device` it runs with, so both see the same ids.
/// In the library `cargo gpubench ab` loads, it is the default device (the first CUDA
/// device, else the CPU) whatever the run's `--device`, so that library lists and
/// opens the same ids. An unknown `--device` gives the CPU here; the harness then
/// refuses it.
pub fn bench_device() -> tch::Device {
    static RESOLVED: OnceLock<tch::Device> = OnceLock::new();
    *RESOLVED.get_or_init(|| {
        let requested = REQUESTED_DEVICE.get().and_then(Option::as_deref);
        select_device(requested).map_or(tch::Device::Cpu, |d| d.tch_device())
    })
}

/// Parses the process's arguments, runs, and exits with the harness's exit code.
pub fn main() {
    take_down_group_on_sigterm();
    let args = HarnessArgs::parse();
    let code = run(args);
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    // Every record is written and the output flushed: leave without running
    // libtorch's and CUDA's teardown, which costs a fifth of a second per process
    // and `cargo gpubench` starts several processes per benchmark. The driver frees
    // the device's memory when the process is gone either way.
    // SAFETY: _exit(2) ends the process at once; nothing of this process runs after.
    unsafe { libc::_exit(code) }
}

/// When this process leads a process group of its own (as `cargo gpubench` starts
/// it), SIGTERM kills the whole group: `cargo gpubench` has it sent when it dies, and
/// whatever the benchmark started must not outlive it either. A harness started from
/// a shell or by `cargo bench` shares its parent's group and keeps the default.
fn take_down_group_on_sigterm() {
    extern "C" fn kill_group(_signal: libc::c_int) {
        // SAFETY: kill(2) is async-signal-safe; 0 is this process's group.
        unsafe {
            libc::kill(0, libc::SIGKILL);
        }
    }
    // SAFETY: getpgrp and getpid have no preconditions.
    let leads_group = unsafe { libc::getpgrp() == libc::getpid() };
    if leads_group {
        // SAFETY: the handler only calls an async-signal-safe function.
        unsafe {
            libc::signal(
                libc::SIGTERM,
                kill_group as extern "C" fn(libc::c_int) as libc::sighandler_t,
            );
        }
    }
}

/// Runs the harness with parsed arguments; returns the exit code.
pub fn run(args: HarnessArgs) -> i32 {
    if std::env::var_os(gpubench_analysis::protocol::HANDSHAKE_VAR).is_some() {
        // Before anything can fail: `cargo gpubench` tells a gpubench harness that
        // refuses its benchmarks from a bench that is not one.
        println!("{}", gpubench_analysis::protocol::handshake_line());
    }
    // Before the cases are made: their arguments may depend on it.
    let _ = REQUESTED_DEVICE.set(args.device.clone());
    let cases = match registry::cases() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_USAGE;
        }
    };
    let total = cases.len();
    let selected = select(cases, &args);
    if args.list {
        print_list(&selected, &args);
        return 0;
    }
    if args.list_devices {
        for id in visible_devices() {
            println!("{} {}", id.label(), id.name);
        }
        return 0;
    }
    let round = args.round.unwrap_or(1).max(1);
    let config = match measurement_config(&args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_USAGE;
        }
    };
    let backend: Rc<dyn DeviceBackend> = match select_device(args.device.as_deref()) {
        Ok(d) => Rc::new(d),
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_USAGE;
        }
    };
    if args.check_device {
        let id = backend.identity();
        println!("{} {}", id.label(), id.name);
        return 0;
    }
    install_panic_hook();
    // The device, libraries, host and commit do not change between benchmarks: ask
    // once (a git subprocess, the driver, /proc/cpuinfo); only the time is per case.
    let mut fingerprint = fingerprint::collect(backend.as_ref());
    // Opened once per process; without a GPU or NVML each round only says why.
    let telemetry = Telemetry::for_device(backend.as_ref());
    fingerprint.gpu = telemetry.as_ref().ok().map(|t| t.state.clone());
    let host = HostWatch::new(ThreadRequest::from_env(
        fingerprint.device.on_cpu(),
        args.cpu_threads,
    ));
    let started = Instant::now();
    let filtered_out = total - selected.len();
    let (mut passed, mut failed, mut ignored) = (0, 0, 0);
    let runs_ignored = args.ignored || args.include_ignored;
    for case in &selected {
        if case.ignore && !runs_ignored {
            ignored += 1;
            if config.mode == RunMode::Smoke {
                println!("test {} ... ignored", case.id);
            }
            continue;
        }
        let record = run_case(
            case,
            &backend,
            &config,
            &fingerprint,
            Watches {
                gpu: &telemetry,
                host: &host,
            },
            round,
            None,
        );
        if let Some(dir) = &args.record_dir {
            if let Err(e) = write_record(dir, &record) {
                eprintln!("error: failed to write the record of {}: {e}", case.id);
                return EXIT_USAGE;
            }
        }
        match config.mode {
            RunMode::Smoke => {
                let status = if record.passed() { "ok" } else { "FAILED" };
                println!("test {} ... {status}", case.id);
                if !record.passed() {
                    print!("{}", output::summary(&record));
                }
            }
            RunMode::Bench => print!("{}", output::summary(&record)),
        }
        let _ = std::io::stdout().flush();
        if record.passed() {
            passed += 1;
        } else {
            failed += 1;
        }
    }
    let verdict = if failed == 0 { "ok" } else { "FAILED" };
    let (passed_n, measured_n) = match config.mode {
        RunMode::Smoke => (passed, 0),
        RunMode::Bench => (0, passed),
    };
    println!(
        "\ntest result: {verdict}. {passed_n} passed; {failed} failed; {ignored} ignored; {measured_n} measured; {filtered_out} filtered out; finished in {:.2}s\n",
        started.elapsed().as_secs_f64()
    );
    if failed == 0 {
        0
    } else {
        EXIT_FAILED
    }
}

/// libtest's selection: any of the filters (substring, or exact), `--skip`, and
/// `--ignored` keeping only ignored benchmarks.
pub(crate) fn select(cases: Vec<Case>, args: &HarnessArgs) -> Vec<Case> {
    cases
        .into_iter()
        .filter(|c| {
            args.filters.is_empty()
                || args.filters.iter().any(|f| {
                    if args.exact {
                        c.id == *f
                    } else {
                        c.id.contains(f.as_str())
                    }
                })
        })
        .filter(|c| !args.skip.iter().any(|s| c.id.contains(s.as_str())))
        .filter(|c| !args.ignored || c.ignore)
        .collect()
}

fn print_list(cases: &[Case], args: &HarnessArgs) {
    for c in cases {
        println!("{}: benchmark", c.id);
    }
    if args.format.as_deref() != Some("terse") {
        println!("\n{} benchmarks", cases.len());
    }
}

/// The measurement settings of `args` on the defaults of a run (or of `--quick`),
/// checked by the rules `cargo gpubench` checks them with before it starts this
/// process (`gpubench_analysis::MeasurementSettings`).
fn measurement_config(args: &HarnessArgs) -> Result<MeasurementConfig, String> {
    let defaults = if args.quick {
        MeasurementConfig::quick()
    } else {
        MeasurementConfig::standard()
    };
    let settings = MeasurementSettings {
        warm_up_time_s: args.warm_up_time,
        measurement_time_s: args.measurement_time,
        sample_time_s: args.sample_time,
        min_samples: args.min_samples,
        max_samples: args.max_samples,
        target_rel_ci: args.target_rel_ci,
        throttle_threshold: args.throttle_threshold,
    };
    let mut c = settings.apply(defaults).map_err(|e| e.to_string())?;
    c.mode = if args.bench {
        RunMode::Bench
    } else {
        RunMode::Smoke
    };
    c.flush_l2 = args.flush_l2;
    Ok(c)
}

/// Every CUDA device this process sees, or the CPU when it sees none.
fn visible_devices() -> Vec<gpubench_analysis::DeviceIdentity> {
    let _ = cuda_loader::ensure_loaded();
    let count = if tch::Cuda::is_available() {
        tch::Cuda::device_count().max(0) as usize
    } else {
        0
    };
    if count == 0 {
        return vec![TorchDevice::new(tch::Device::Cpu).identity()];
    }
    (0..count)
        .map(|i| TorchDevice::new(tch::Device::Cuda(i)).identity())
        .collect()
}

/// `cpu`, `cuda`, `cuda:N`, or automatic (first CUDA device, else CPU).
pub(crate) fn select_device(requested: Option<&str>) -> Result<TorchDevice, String> {
    let requested = requested
        .map(str::trim)
        .filter(|s| !s.is_empty() && *s != "auto");
    let cuda_index = match requested {
        Some("cpu") => return Ok(TorchDevice::new(tch::Device::Cpu)),
        None => None,
        Some("cuda") => Some(0),
        Some(other) => match other.strip_prefix("cuda:").map(str::parse::<usize>) {
            Some(Ok(i)) => Some(i),
            _ => {
                return Err(format!(
                    "unknown device `{other}` (--device / GPUBENCH_DEVICE): use cpu, cuda or cuda:N"
                ))
            }
        },
    };
    let load = cuda_loader::ensure_loaded();
    let count = if tch::Cuda::is_available() {
        tch::Cuda::device_count().max(0) as usize
    } else {
        0
    };
    match cuda_index {
        None if count > 0 => Ok(TorchDevice::new(tch::Device::Cuda(0))),
        None => Ok(TorchDevice::new(tch::Device::Cpu)),
        Some(i) if i < count => {
            // Current from the start: nothing of this process lands on device 0
            // (and opens a context there) while another benchmark measures on it.
            crate::shim::cuda_set_device(i)
                .map_err(|e| format!("failed to make cuda:{i} the current device: {e}"))?;
            Ok(TorchDevice::new(tch::Device::Cuda(i)))
        }
        Some(i) => {
            let why = match load {
                CudaLoad::Unavailable(reason) => {
                    format!("libtorch_cuda could not be loaded: {reason}")
                }
                CudaLoad::Loaded(_) if count == 0 => {
                    "no CUDA device is visible (no driver or GPU)".to_string()
                }
                CudaLoad::Loaded(_) => format!("only {count} CUDA device(s) are visible"),
            };
            Err(format!("--device cuda:{i} requested but {why}"))
        }
    }
}

fn install_panic_hook() {
    panic::set_hook(Box::new(|info| {
        if crate::quiet_panic::is_quiet() {
            return;
        }
        let payload = info.payload();
        let msg = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "panic with a non-string payload".to_string());
        let location = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        let full = cap_message(&format!("panicked{location}: {msg}"));
        eprintln!("{full}");
        LAST_PANIC.with(|p| *p.borrow_mut() = Some(full));
    }));
}

/// Runs one benchmark as a side of a paired process (`cargo gpubench ab`): its
/// `b.iter…` hands the routine to the driver through `hook`. `Err` when there is no
/// record to give (an unknown id, an unusable device).
pub(crate) fn run_paired(
    request: &gpubench_analysis::paired::PairedRequest,
    hook: crate::paired::Hook,
) -> Result<RawRecord, String> {
    let cases = registry::cases().map_err(|e| e.to_string())?;
    let case = cases
        .iter()
        .find(|c| c.id == request.id)
        .ok_or_else(|| format!("this revision has no benchmark `{}`", request.id))?;
    let backend: Rc<dyn DeviceBackend> = Rc::new(select_device(request.device.as_deref())?);
    install_panic_hook();
    let mut fingerprint = fingerprint::collect(backend.as_ref());
    let telemetry = Telemetry::for_device(backend.as_ref());
    fingerprint.gpu = telemetry.as_ref().ok().map(|t| t.state.clone());
    let host = HostWatch::new(ThreadRequest::from_env(fingerprint.device.on_cpu(), None));
    Ok(run_case(
        case,
        &backend,
        &request.config,
        &fingerprint,
        Watches {
            gpu: &telemetry,
            host: &host,
        },
        request.round.max(1),
        Some(hook),
    ))
}

/// What a process reads around each benchmark: the GPU's telemetry (or why there is
/// none) and the host.
#[derive(Clone, Copy)]
struct Watches<'a> {
    gpu: &'a Result<Telemetry, String>,
    host: &'a HostWatch,
}

/// Runs one benchmark, read as `watches` say, and makes its record of one round.
fn run_case(
    case: &Case,
    backend: &Rc<dyn DeviceBackend>,
    config: &MeasurementConfig,
    fingerprint: &Fingerprint,
    watches: Watches<'_>,
    round: u32,
    paired: Option<crate::paired::Hook>,
) -> RawRecord {
    let Watches {
        gpu: telemetry,
        host,
    } = watches;
    backend.reset_memory();
    let watching = host.start();
    let log = telemetry.as_ref().map(Telemetry::start);
    let fingerprint = Fingerprint {
        timestamp: fingerprint::now_rfc3339(),
        ..fingerprint.clone()
    };
    let mut bencher = Bencher::new(&case.id, Rc::clone(backend), config.clone());
    // A later round of `cargo gpubench` leaves out what the first one recorded.
    bencher.diagnostics(round == 1);
    bencher.telemetry(telemetry.as_ref().ok().cloned());
    bencher.paired = paired;
    LAST_PANIC.with(|p| p.borrow_mut().take());
    let outcome = panic::catch_unwind(AssertUnwindSafe(|| (case.run)(&mut bencher)));
    let failure = match outcome {
        Ok(()) if bencher.measurement.is_some() => None,
        Ok(()) if bencher.not_measured.is_some() => Some(Failure::new(
            FailureKind::Setup,
            bencher.not_measured.take().unwrap_or_default(),
        )),
        Ok(()) => Some(Failure::new(
            FailureKind::Setup,
            format!(
                "benchmark {} returned without calling b.iter, b.iter_with_setup or b.iter_inputs",
                case.id
            ),
        )),
        Err(_) => {
            let msg = LAST_PANIC
                .with(|p| p.borrow_mut().take())
                .unwrap_or_else(|| "panicked".to_string());
            let mut f = Failure::from_panic_message(&msg);
            if f.kind == FailureKind::OutOfMemory {
                f.memory_at_failure = backend.memory();
            }
            Some(f)
        }
    };
    let mut round = Round {
        round,
        started_at: fingerprint.timestamp.clone(),
        measurement: if failure.is_none() {
            bencher.measurement.take()
        } else {
            None
        },
        failure,
        eager_compiled: bencher.eager_compiled.take(),
        telemetry: None,
        telemetry_unavailable: None,
        host: None,
        host_unavailable: None,
        pairing: None,
    };
    match (telemetry, log) {
        (Ok(t), Ok(log)) => t.finish(log, &mut round),
        (Err(why), _) | (_, Err(why)) => round.telemetry_unavailable = Some(why.clone()),
    }
    let threads = host.finish(watching, &mut round);
    round.flag_contended();
    let mut config = config.clone();
    // On the CPU device the routine's work is split over these threads: a setting
    // that moves the figures, which a comparison checks.
    config.cpu_threads = fingerprint.device.on_cpu().then_some(threads);
    let record = RawRecord::new(
        &case.id,
        &case.name,
        case.arg.clone(),
        fingerprint,
        config,
        round,
    );
    drop(bencher);
    backend.reset_memory();
    record
}

/// Writes `<dir>/<stem>.json` through a temporary file and a rename, so a reader
/// never sees half a record.
fn write_record(dir: &Path, record: &RawRecord) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let stem = file_stem_for_id(&record.id);
    let tmp = dir.join(format!(".{stem}.json.tmp"));
    std::fs::write(&tmp, record.to_json_pretty())?;
    std::fs::rename(&tmp, dir.join(format!("{stem}.json")))
}
