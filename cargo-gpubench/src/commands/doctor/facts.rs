//! What the doctor reads of the machine: libtorch, CUDA's devices, the NVIDIA driver
//! and each GPU's state, the host's CPU governor and load.

use std::ffi::{c_int, CString};
use std::path::{Path, PathBuf};

use gpubench_analysis::nvml::{driver_and_count, NvmlSource};
use gpubench_analysis::telemetry::TelemetrySource;
use gpubench_record::telemetry::{GpuState, TelemetryReading};

use crate::build::libtorch::{self, libtorch_version};

/// What libtorch the benchmarks would load.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LibtorchFacts {
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
pub(crate) struct GpuFacts {
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
pub(crate) struct Facts {
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
    pub(crate) fn gather(workspace: &Path) -> Self {
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
