//! What the hardware says it is: the CUDA device's name and PCI bus id (from the
//! driver API), the host CPU's model.

use std::ffi::{c_char, c_int, CString};

/// The host CPU's model name.
pub fn cpu_model() -> Option<String> {
    let info = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    info.lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
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
