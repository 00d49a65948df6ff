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
use gpubench_record::failure::{cap_message, Failure, FailureKind};
use gpubench_record::id::file_stem_for_id;
use gpubench_record::measurement::{MeasurementConfig, RunMode};
use gpubench_record::record::{Fingerprint, ProcessRecord, RawRecord};

use gpubench_record::memory_snapshot::{self, MemorySnapshot};

use crate::cli::HarnessArgs;
use crate::cuda_loader::{self, CudaLoad};
use crate::device::{DeviceBackend, TorchDevice};
use crate::host::{HostWatch, ThreadRequest};
use crate::registry::{self, Case};
use crate::telemetry::Telemetry;
use crate::{fingerprint, output, Bencher};

pub(crate) mod paired_entry;

pub use gpubench_record::protocol::{EXIT_BENCHMARK_FAILED as EXIT_FAILED, EXIT_USAGE};

thread_local! {
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
    /// The device of the benchmark running now, whose allocator the panic hook
    /// reads at an out-of-memory error, before unwinding frees what held the memory.
    static OOM_DEVICE: RefCell<Option<Rc<dyn DeviceBackend>>> = const { RefCell::new(None) };
    /// What the panic hook read at the last out-of-memory error.
    static LAST_OOM: RefCell<Option<OomState>> = const { RefCell::new(None) };
}

/// The allocator at an out-of-memory error, read while the memory is still held.
struct OomState {
    stats: Option<gpubench_record::measurement::MemoryStats>,
    snapshot: Result<MemorySnapshot, String>,
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

/// Parses the process's arguments, runs, and exits with the harness's exit code:
/// the `main` of a bench target with `harness = false` (or write [`main!`](crate::main!)).
/// It lists (`--list`), smoke-tests (`cargo test --benches`) or measures
/// (`cargo bench`, `cargo gpubench`) the `#[gpu_bench]` functions of the target.
///
/// ```no_run
/// use gpubench_core::{gpu_bench, Bencher};
///
/// #[gpu_bench]
/// fn empty_cache(b: &mut Bencher) {
///     b.iter(|| tch::Cuda::synchronize(0));
/// }
///
/// fn main() {
///     gpubench_core::main()
/// }
/// ```
pub fn main() {
    take_down_group_on_sigterm();
    let argv: Vec<String> = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let args = match HarnessArgs::try_parse_from(&argv) {
        Ok(args) => args,
        Err(e) => match crate::cli::unknown_option_help(&e, &argv) {
            Some(help) => {
                eprintln!("{help}");
                std::process::exit(EXIT_USAGE);
            }
            None => e.exit(),
        },
    };
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
    if std::env::var_os(gpubench_record::protocol::HANDSHAKE_VAR).is_some() {
        // Before anything can fail: `cargo gpubench` tells a gpubench harness that
        // refuses its benchmarks from a bench that is not one.
        println!("{}", gpubench_record::protocol::handshake_line());
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
    let selected = match args.capacity_probe {
        Some(size) => match probe_cases(size, &args) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("error: {e}");
                return EXIT_USAGE;
            }
        },
        None => select(cases, &args),
    };
    if args.list {
        print_list(&selected, &args);
        return 0;
    }
    if args.list_capacity {
        return match registry::capacity_benches() {
            Ok(benches) => {
                for c in benches {
                    println!("{} {} {}", c.name, c.unit, c.start);
                }
                0
            }
            Err(e) => {
                eprintln!("error: {e}");
                EXIT_USAGE
            }
        };
    }
    if args.list_devices {
        for id in visible_devices() {
            println!("{} {}", id.label(), id.name);
        }
        return 0;
    }
    let mut process = args.process.unwrap_or(1).max(1);
    let mut config = match measurement_config(&args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_USAGE;
        }
    };
    if args.capacity_probe.is_some() {
        // A probe needs the steady state's peak memory (a training step's second
        // call holds the first one's gradients), not a figure to trust: a few calls,
        // and none of the first process's diagnostics (naive loops of hundreds of calls).
        config = MeasurementConfig {
            warmup_time_s: 0.05,
            measurement_time_s: 0.1,
            min_samples: 2,
            max_samples: 5,
            mode: RunMode::Bench,
            ..MeasurementConfig::quick()
        };
        process = process.max(2);
    }
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
    if let Err(e) = prepare_allocator(backend.as_ref(), &args) {
        eprintln!("error: {e}");
        return EXIT_USAGE;
    }
    install_panic_hook();
    // The device, libraries, host and commit do not change between benchmarks: ask
    // once (a git subprocess, the driver, /proc/cpuinfo); only the time is per case.
    let mut fingerprint = fingerprint::collect(backend.as_ref());
    // Opened once per process; without a GPU or NVML each process only says why.
    let telemetry = Telemetry::for_device(backend.as_ref());
    fingerprint.gpu = telemetry.as_ref().ok().map(|t| t.state.clone());
    let host = match HostWatch::new(ThreadRequest::from_env(
        fingerprint.device.on_cpu(),
        args.cpu_threads,
    )) {
        Ok(host) => host,
        Err(why) => {
            eprintln!("error: {why}");
            return EXIT_USAGE;
        }
    };
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
            CaseRun {
                process,
                memory_peak: args.memory_peak_snapshot,
                paired: None,
            },
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

/// The case of one capacity probe: the capacity benchmark named by the one exact
/// filter, at `size`.
fn probe_cases(size: u64, args: &HarnessArgs) -> Result<Vec<Case>, String> {
    let [name] = args.filters.as_slice() else {
        return Err(format!(
            "--capacity-probe {size} needs one benchmark name, e.g. `--exact NAME`"
        ));
    };
    let name = name.split('/').next().unwrap_or(name);
    let benches = registry::capacity_benches()?;
    let bench = benches.iter().find(|c| c.name == name).ok_or_else(|| {
        let known: Vec<&str> = benches.iter().map(|c| c.name).collect();
        format!(
            "`{name}` is not a capacity benchmark (declare it with #[gpu_bench(capacity = \"batch\", args = [..])]); \
             this executable has: {}",
            if known.is_empty() { "none".to_string() } else { known.join(", ") }
        )
    })?;
    Ok(vec![bench.probe_case(size)])
}

/// `--memory-fraction` and `--memory-history` on the device's allocator; a
/// fraction out of range or that cannot be set is an error.
fn prepare_allocator(backend: &dyn DeviceBackend, args: &HarnessArgs) -> Result<(), String> {
    if let Some(f) = args.memory_fraction {
        if !(f > 0.0 && f <= 1.0) {
            return Err(format!(
                "--memory-fraction / {} must be in (0, 1], got {f}",
                gpubench_record::protocol::MEMORY_FRACTION_VAR
            ));
        }
        backend
            .cap_memory(f)
            .map_err(|e| format!("failed to cap device memory at {f} (--memory-fraction): {e}"))?;
    }
    // As `--memory-peak-snapshot` does, a device that cannot record history (the
    // CPU has no caching allocator) runs its benchmarks without it and says so:
    // history only adds where blocks came from to a snapshot, and none is lost.
    if args.memory_history {
        if let Err(e) = backend.record_memory_history() {
            eprintln!(
                "note: no allocation history (--memory-history / {}): {e}; the benchmarks \
                 run without it",
                gpubench_record::protocol::MEMORY_HISTORY_VAR
            );
        }
    }
    Ok(())
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

/// The measurement settings of `args`, checked by the rules `cargo gpubench`
/// checks them with before it starts this process.
fn measurement_config(args: &HarnessArgs) -> Result<MeasurementConfig, String> {
    let mut c = args
        .settings()
        .checked_config()
        .map_err(|e| e.to_string())?;
    c.mode = if args.bench {
        RunMode::Bench
    } else {
        RunMode::Smoke
    };
    Ok(c)
}

/// Every CUDA device this process sees, or the CPU when it sees none.
fn visible_devices() -> Vec<gpubench_record::record::DeviceIdentity> {
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
            .map(|l| format!(" {}", crate::panic_site::describe(l.file(), l.line())))
            .unwrap_or_default();
        let full = cap_message(&format!("panicked{location}: {msg}"));
        eprintln!("{full}");
        if gpubench_record::failure::is_out_of_memory(&msg) {
            read_allocator_at_oom(&msg);
        }
        LAST_PANIC.with(|p| *p.borrow_mut() = Some(full));
    }));
}

/// Reads the running benchmark's allocator while what held its memory is still
/// alive (the panic has not unwound yet), for the failure record.
fn read_allocator_at_oom(message: &str) {
    let Some(device) = OOM_DEVICE.with(|d| d.borrow().clone()) else {
        return;
    };
    let snapshot = device.memory_snapshot().map(|mut s| {
        s.failed_request_bytes = memory_snapshot::parse_failed_request(message);
        if let Some(cap) = memory_snapshot::parse_allowed_limit(message) {
            s.limit_bytes = Some(cap);
        }
        s
    });
    let state = OomState {
        stats: device.memory(),
        snapshot,
    };
    LAST_OOM.with(|o| *o.borrow_mut() = Some(state));
}

/// Runs one benchmark as a side of a paired process (`cargo gpubench ab`): its
/// `b.iter…` hands the routine to the driver through `hook`. `Err` when there is no
/// record to give (an unknown id, an unusable device).
pub(crate) fn run_paired(
    request: &gpubench_record::paired::PairedRequest,
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
    let host = HostWatch::new(ThreadRequest::from_env(fingerprint.device.on_cpu(), None))?;
    Ok(run_case(
        case,
        &backend,
        &request.config,
        &fingerprint,
        Watches {
            gpu: &telemetry,
            host: &host,
        },
        CaseRun {
            process: request.process.max(1),
            memory_peak: false,
            paired: Some(hook),
        },
    ))
}

/// What a process reads around each benchmark: the GPU's telemetry (or why there is
/// none) and the host.
#[derive(Clone, Copy)]
struct Watches<'a> {
    gpu: &'a Result<Telemetry, String>,
    host: &'a HostWatch,
}

/// How one benchmark runs in this process.
struct CaseRun {
    /// The process of `cargo gpubench` it is (the first runs the diagnostics).
    process: u32,
    /// `--memory-peak-snapshot`: the measurement ends with a traced stretch of calls
    /// and the allocator's state at its peak.
    memory_peak: bool,
    /// The `ab` driver's hook, when base and head are paired in this process.
    paired: Option<crate::paired::Hook>,
}

/// Runs one benchmark, read as `watches` say, and makes its record of one process.
fn run_case(
    case: &Case,
    backend: &Rc<dyn DeviceBackend>,
    config: &MeasurementConfig,
    fingerprint: &Fingerprint,
    watches: Watches<'_>,
    how: CaseRun,
) -> RawRecord {
    let CaseRun {
        process,
        memory_peak,
        paired,
    } = how;
    let Watches {
        gpu: telemetry,
        host,
    } = watches;
    if paired.is_some() {
        // Before either side's memory is counted: what the libraries keep for the
        // process (cuBLAS's workspaces) is neither side's.
        backend.warm_libraries();
    }
    backend.reset_memory();
    // A side of a paired process shares the allocator with the other side: its
    // memory is what its own code allocates from here on.
    let own_memory = paired.map(|_| Rc::new(crate::engine::OwnMemory::begin(Rc::clone(backend))));
    let watching = host.start();
    let log = telemetry.as_ref().map(Telemetry::start);
    let fingerprint = Fingerprint {
        timestamp: fingerprint::now_rfc3339(),
        ..fingerprint.clone()
    };
    let mut bencher = Bencher::new(&case.id, Rc::clone(backend), config.clone());
    // A later process of `cargo gpubench` leaves out what the first one recorded.
    bencher.diagnostics(process == 1);
    bencher.memory_peak(memory_peak);
    bencher.telemetry(telemetry.as_ref().ok().cloned());
    bencher.paired = paired;
    bencher.own_memory = own_memory;
    LAST_PANIC.with(|p| p.borrow_mut().take());
    LAST_OOM.with(|o| o.borrow_mut().take());
    OOM_DEVICE.with(|d| *d.borrow_mut() = Some(Rc::clone(backend)));
    let outcome = panic::catch_unwind(AssertUnwindSafe(|| (case.run)(&mut bencher)));
    OOM_DEVICE.with(|d| d.borrow_mut().take());
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
                match LAST_OOM.with(|o| o.borrow_mut().take()) {
                    Some(at_oom) => {
                        f.memory_at_failure = at_oom.stats.or_else(|| backend.memory());
                        match at_oom.snapshot {
                            Ok(s) => f.memory_snapshot = Some(s),
                            Err(why) => f.memory_snapshot_unavailable = Some(why),
                        }
                    }
                    None => {
                        f.memory_at_failure = backend.memory();
                        f.memory_snapshot_unavailable = Some(
                            "the out-of-memory error was not seen as it was raised, so the \
                             allocator was read only after the benchmark's memory was freed"
                                .into(),
                        );
                    }
                }
            }
            Some(f)
        }
    };
    let mut process = ProcessRecord {
        process,
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
        unpaired: None,
    };
    match (telemetry, log) {
        (Ok(t), Ok(log)) => t.finish(log, &mut process),
        (Err(why), _) | (_, Err(why)) => process.telemetry_unavailable = Some(why.clone()),
    }
    let threads = host.finish(watching, &mut process);
    process.flag_contended();
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
        process,
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

#[cfg(test)]
mod paired_memory_tests;

#[cfg(test)]
mod oom_tests {
    //! An out-of-memory failure on the simulated device: the record says what held
    //! the memory, read before unwinding freed it; and capacity probes as a search
    //! runs them, each on a fresh device.
    use std::rc::Rc;

    use gpubench_analysis::capacity::{self, CapacityProbe, Next, SearchOptions};
    use gpubench_record::failure::FailureKind;
    use gpubench_record::measurement::{MeasurementConfig, RunMode};
    use gpubench_record::memory_snapshot::OomCause;
    use gpubench_record::record::RawRecord;

    use super::*;
    use crate::device::SimulatedDevice;
    use crate::registry::{CapacityBench, CaseFn};

    fn run_on(device: &Rc<SimulatedDevice>, case: &Case, config: &MeasurementConfig) -> RawRecord {
        run_traced(device, case, config, false)
    }

    /// [`run_on`], with `--memory-peak-snapshot` when `memory_peak`.
    fn run_traced(
        device: &Rc<SimulatedDevice>,
        case: &Case,
        config: &MeasurementConfig,
        memory_peak: bool,
    ) -> RawRecord {
        install_panic_hook();
        let backend: Rc<dyn DeviceBackend> = device.clone();
        let fingerprint = fingerprint::collect(backend.as_ref());
        let telemetry = Err("no telemetry in tests".to_string());
        let host = HostWatch::new(ThreadRequest::from_env(false, None)).unwrap();
        run_case(
            case,
            &backend,
            config,
            &fingerprint,
            Watches {
                gpu: &telemetry,
                host: &host,
            },
            CaseRun {
                process: 2,
                memory_peak,
                paired: None,
            },
        )
    }

    /// A registered benchmark `id` whose body is `run`.
    pub(super) fn case(id: &str, run: impl Fn(&mut Bencher) + 'static) -> Case {
        Case {
            id: id.into(),
            name: id.into(),
            arg: None,
            ignore: false,
            location: "test.rs:1".into(),
            run: Box::new(run),
        }
    }

    fn smoke() -> MeasurementConfig {
        MeasurementConfig {
            mode: RunMode::Smoke,
            ..MeasurementConfig::quick()
        }
    }

    /// A 256 MiB weight made before the timed calls; each call allocates a 64 MiB
    /// activation and a 32 MiB temporary and frees both before it returns, so at the
    /// end of the benchmark only the weight is live.
    #[test]
    fn the_peak_snapshot_names_what_each_call_held_at_its_peak() {
        let device = Rc::new(SimulatedDevice::new());
        device.set_capacity(1 << 30);
        let d = Rc::clone(&device);
        let step = case("step", move |b| {
            let _weight = d.try_allocate(256 << 20, "model::new").unwrap();
            let d = Rc::clone(&d);
            b.iter(move || {
                let act = d.try_allocate(64 << 20, "model::forward").unwrap();
                let tmp = d.try_allocate(32 << 20, "model::scratch").unwrap();
                d.release(tmp);
                d.release(act);
            });
        });
        let record = run_traced(&device, &step, &MeasurementConfig::quick(), true);
        let m = record.first_measurement().expect("the benchmark passed");
        let peak = m.memory_peak.as_ref().expect("a snapshot at the peak");
        let s = &peak.snapshot;
        assert_eq!(s.allocated_bytes, (256 + 64 + 32) << 20);
        assert_eq!(s.live_blocks, 3);
        let sizes: Vec<u64> = s.largest_blocks.iter().map(|b| b.bytes >> 20).collect();
        assert_eq!(sizes, [256, 64, 32]);
        // Made before the trace started and without history: no frames; the calls'
        // blocks, freed by the end, come back with where they were allocated.
        assert!(s.largest_blocks[0].allocated_at.is_empty());
        assert_eq!(s.largest_blocks[1].allocated_at, ["model::forward"]);
        assert_eq!(s.largest_blocks[2].allocated_at, ["model::scratch"]);
        assert!(peak.calls >= 1 && peak.trace_complete);
        assert!(peak.events_after_peak >= 2, "{peak:?}");
        // At the end only the weight was live: the snapshot is not the end state.
        assert_eq!(device.snapshot().allocated_bytes, 256 << 20);
        assert_eq!(m.memory.unwrap().peak_allocated_bytes, s.allocated_bytes);
        let text = output::summary(&record);
        assert!(text.contains("what held memory at the peak:"), "{text}");
        assert!(text.contains("at model::forward"), "{text}");
        // Without the option no trace is taken.
        let plain = run_on(&device, &step, &MeasurementConfig::quick());
        let m = plain.first_measurement().unwrap();
        assert!(m.memory_peak.is_none() && m.memory_peak_unavailable.is_none());
    }

    #[test]
    fn a_device_without_an_allocator_trace_says_why_there_is_no_peak_snapshot() {
        install_panic_hook();
        let backend: Rc<dyn DeviceBackend> =
            Rc::new(crate::device::TorchDevice::new(tch::Device::Cpu));
        let fingerprint = fingerprint::collect(backend.as_ref());
        let telemetry = Err("no telemetry in tests".to_string());
        let host = HostWatch::new(ThreadRequest::from_env(false, None)).unwrap();
        let add = case("add", |b| {
            let x = tch::Tensor::ones([16], (tch::Kind::Float, tch::Device::Cpu));
            b.iter(|| &x + 1.0);
        });
        let record = run_case(
            &add,
            &backend,
            &MeasurementConfig::quick(),
            &fingerprint,
            Watches {
                gpu: &telemetry,
                host: &host,
            },
            CaseRun {
                process: 2,
                memory_peak: true,
                paired: None,
            },
        );
        let m = record.first_measurement().expect("the benchmark passed");
        assert!(m.memory_peak.is_none());
        let why = m
            .memory_peak_unavailable
            .as_deref()
            .expect("why there is none");
        assert!(why.contains("allocator"), "{why}");
        assert!(output::summary(&record).contains("no allocator snapshot at the peak"));
    }

    #[test]
    fn accumulated_live_tensors_are_named_at_the_oom() {
        let device = Rc::new(SimulatedDevice::new());
        device.set_capacity(1 << 30);
        device.record_history(true);
        let d = Rc::clone(&device);
        let leak = case("leak", move |b| {
            let d = Rc::clone(&d);
            b.iter(move || {
                // A cache that never evicts: 100 MiB more per call until it fails.
                d.try_allocate(100 << 20, "cache::insert")
                    .unwrap_or_else(|oom| panic!("{oom}"));
            });
        });
        let record = run_on(&device, &leak, &MeasurementConfig::quick());
        let f = record.failure().expect("the benchmark ran out of memory");
        assert_eq!(f.kind, FailureKind::OutOfMemory);
        let s = f.memory_snapshot.as_ref().expect("a snapshot at the OOM");
        assert_eq!(s.live_blocks, 10);
        assert_eq!(s.failed_request_bytes, Some(100 << 20));
        assert_eq!(s.cause(), OomCause::LiveMemory);
        assert!(
            s.largest_blocks_share() >= 0.9,
            "{}",
            s.largest_blocks_share()
        );
        assert_eq!(s.largest_blocks[0].allocated_at, ["cache::insert"]);
        assert!(s.suggestion().is_none());
        let m = f.memory_at_failure.expect("stats at the OOM");
        assert_eq!(m.allocated_bytes, 1000 << 20);
        assert!(output::summary(&record).contains("cause: live memory"));
    }

    #[test]
    fn a_fragmented_cache_is_told_apart_and_gets_the_suggestion() {
        let device = Rc::new(SimulatedDevice::new());
        device.set_capacity(1 << 30);
        let d = Rc::clone(&device);
        let fragments = case("fragments", move |b| {
            let mut held = Vec::new();
            while let Ok(id) = d.try_allocate(8 << 20, "") {
                held.push(id);
            }
            for id in held.iter().step_by(2) {
                d.release(*id);
            }
            let d = Rc::clone(&d);
            b.iter(move || d.allocate(200 << 20));
        });
        let record = run_on(&device, &fragments, &smoke());
        let f = record.failure().expect("failed");
        assert_eq!(f.kind, FailureKind::OutOfMemory);
        let s = f.memory_snapshot.as_ref().expect("snapshot");
        assert_eq!(s.cause(), OomCause::Fragmentation);
        assert!(output::summary(&record).contains("expandable_segments:True"));
    }

    #[test]
    fn a_failure_that_is_not_an_oom_takes_no_snapshot() {
        let device = Rc::new(SimulatedDevice::new());
        let record = run_on(
            &device,
            &case("boom", |_| panic!("index out of range")),
            &smoke(),
        );
        let f = record.failure().unwrap();
        assert_eq!(f.kind, FailureKind::Panic);
        assert!(f.memory_snapshot.is_none() && f.memory_snapshot_unavailable.is_none());
    }

    #[test]
    fn probes_on_fresh_devices_find_the_largest_batch() {
        // A training step: 64 MiB of weights, 1 MiB of activations per item.
        fn probe(size: u64) -> CaseFn {
            CaseFn::with_arg(size.to_string(), move |b| {
                let d = DEVICE.with(|d| d.borrow().clone()).expect("device set");
                d.allocate(64 << 20);
                let d2 = Rc::clone(&d);
                b.iter(move || {
                    d2.allocate(size << 20);
                    d2.free(size << 20);
                });
            })
        }
        thread_local! {
            static DEVICE: std::cell::RefCell<Option<Rc<SimulatedDevice>>> =
                const { std::cell::RefCell::new(None) };
        }
        let bench = CapacityBench {
            name: "train",
            unit: "batch",
            start: 8,
            location: "t.rs:1".into(),
            ignore: false,
            probe,
        };
        let limit = 2u64 << 30;
        let options = SearchOptions {
            start: bench.start,
            max_probes: 10,
            resolution: 0.01,
            limit_bytes: Some(limit),
            repeats: 1,
        };
        let mut probes = Vec::new();
        let end = loop {
            match capacity::next_probe(&probes, &options) {
                Next::Probe(size) => {
                    let device = Rc::new(SimulatedDevice::new());
                    device.set_capacity(limit);
                    DEVICE.with(|d| *d.borrow_mut() = Some(Rc::clone(&device)));
                    let config = MeasurementConfig {
                        min_samples: 2,
                        max_samples: 3,
                        warmup_time_s: 0.0,
                        measurement_time_s: 0.001,
                        ..MeasurementConfig::quick()
                    };
                    let record = run_on(&device, &bench.probe_case(size), &config);
                    assert_eq!(record.id, format!("train/{size}"));
                    probes.push(CapacityProbe::from_record(size, &record, 0.0).unwrap());
                }
                Next::Done(end) => break end,
            }
        };
        let r = capacity::CapacityResult::new("train", "batch", "sim", &options, None, probes, end);
        // 64 MiB + n MiB in 2 GiB, each in a segment of its own size: n = 1984.
        assert!(
            r.max_size <= 1984 && r.first_failing.unwrap() > 1984,
            "{:?}",
            r.probes
        );
        assert!(r.probes.len() <= 10);
        let per_item = r.fit.unwrap().per_item_bytes;
        assert!(
            (per_item / f64::from(1 << 20) - 1.0).abs() < 0.05,
            "{per_item}"
        );
    }
}
