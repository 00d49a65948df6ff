//! Where a benchmark ran: device, libraries, host and commit.

use std::ffi::{c_char, c_int, CString};

use gpubench_record::record::Fingerprint;

use crate::device::DeviceBackend;
use crate::shim;

/// The fingerprint of a run on `backend`.
pub fn collect(backend: &dyn DeviceBackend) -> Fingerprint {
    let device = backend.identity();
    let on_cuda = device.kind == "cuda";
    Fingerprint {
        device,
        cuda_version: on_cuda
            .then(shim::cuda_runtime_version)
            .flatten()
            .map(|v| format!("{}.{}", v / 1000, (v % 1000) / 10)),
        cudnn_version: on_cuda
            .then(shim::cudnn_version)
            .flatten()
            .map(|v| v.to_string()),
        libtorch_version: shim::torch_version(),
        tch_version: "0.24.0".into(),
        gpubench_version: env!("CARGO_PKG_VERSION").into(),
        cpu_model: cpu_model(),
        os: format!("{} {}", std::env::consts::OS, std::env::consts::ARCH),
        git_commit: git_commit(),
        timestamp: now_rfc3339(),
        // Filled from the GPU's telemetry by the harness, which opens it once.
        gpu: None,
    }
}

/// The current time, RFC 3339 in UTC.
pub fn now_rfc3339() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// The host CPU's model name.
pub fn cpu_model() -> Option<String> {
    let info = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    info.lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
}

/// `GPUBENCH_GIT_COMMIT` (set by cargo-gpubench), else `git rev-parse HEAD`.
fn git_commit() -> Option<String> {
    if let Ok(c) = std::env::var(gpubench_record::protocol::GIT_COMMIT_VAR) {
        return (!c.is_empty()).then_some(c);
    }
    let out = std::process::Command::new("git")
        .args(["rev-parse", "HEAD"])
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
        .filter(|s| !s.is_empty())
}

/// The CUDA device's marketing name from the driver API (`cuDeviceGetName`).
pub fn cuda_device_name(index: usize) -> Option<String> {
    cuda_device_string(index, "cuDeviceGetName", 256)
}

/// The CUDA device's PCI bus id (`0000:18:00.0`) from the driver API
/// (`cuDeviceGetPCIBusId`): how NVML finds the same GPU whatever
/// `CUDA_VISIBLE_DEVICES` and `CUDA_DEVICE_ORDER` did to CUDA's numbering.
pub fn cuda_device_pci_bus_id(index: usize) -> Option<String> {
    cuda_device_string(index, "cuDeviceGetPCIBusId", 64)
}

/// A string property of CUDA device `index` from driver API function `getter`
/// (`CUresult getter(char*, int, CUdevice)`), read through `dlsym` so no CUDA
/// headers or link flags are needed.
fn cuda_device_string(index: usize, getter: &str, capacity: usize) -> Option<String> {
    type CuInit = unsafe extern "C" fn(u32) -> c_int;
    type CuDeviceGet = unsafe extern "C" fn(*mut c_int, c_int) -> c_int;
    type CuDeviceGetString = unsafe extern "C" fn(*mut c_char, c_int, c_int) -> c_int;
    let lib = CString::new("libcuda.so.1").ok()?;
    // SAFETY: dlopen/dlsym with valid C strings; the symbols have the driver API's
    // documented signatures (both getters write a NUL-terminated string of at most
    // `len` bytes).
    unsafe {
        let handle = libc::dlopen(lib.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL);
        if handle.is_null() {
            return None;
        }
        let sym = |name: &str| {
            let c = CString::new(name).ok()?;
            let p = libc::dlsym(handle, c.as_ptr());
            (!p.is_null()).then_some(p)
        };
        let init: CuInit = std::mem::transmute(sym("cuInit")?);
        let get: CuDeviceGet = std::mem::transmute(sym("cuDeviceGet")?);
        let get_string: CuDeviceGetString = std::mem::transmute(sym(getter)?);
        if init(0) != 0 {
            return None;
        }
        let mut dev: c_int = 0;
        if get(&mut dev, index as c_int) != 0 {
            return None;
        }
        let mut buf = vec![0 as c_char; capacity];
        if get_string(buf.as_mut_ptr(), buf.len() as c_int, dev) != 0 {
            return None;
        }
        Some(
            std::ffi::CStr::from_ptr(buf.as_ptr())
                .to_string_lossy()
                .into_owned(),
        )
    }
}
