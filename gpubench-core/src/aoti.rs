//! AOTInductor packages (`.pt2`, made by `torch._inductor.aoti_compile_and_package`)
//! loaded and run from Rust through libtorch's `AOTIModelPackageLoader` (via the
//! C++ shim), with their metadata and call spec.
//!
//! A package is compiled for one device type and, unless exported with dynamic
//! dimensions, for one input shape. A static package does not check what it is
//! given: it reads its exported size from whatever input arrives and returns its
//! exported output shape. [`AotiPackage::exported_input_shapes`] reads the shapes
//! a package declares (written by `examples/python/export_aoti.py`), so a caller can
//! name such inputs instead of trusting the outputs.

use std::collections::BTreeMap;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::path::{Path, PathBuf};

use tch::{Device, Tensor};
use thiserror::Error;

/// The metadata key under which a package declares its exported input shapes: JSON,
/// one list per input, `null` for a dynamic dimension, e.g. `[[1, null, 64]]`.
pub const INPUT_SHAPES_KEY: &str = "gpubench.input_shapes";
/// The metadata key AOTInductor writes the package's device type under.
pub const DEVICE_KEY: &str = "AOTI_DEVICE_KEY";

const ERR_LEN: usize = 4096;

extern "C" {
    fn gpubench_aoti_load(
        path: *const c_char,
        device_index: c_int,
        err: *mut c_char,
        err_len: usize,
    ) -> *mut c_void;
    fn gpubench_aoti_run(
        handle: *mut c_void,
        inputs: *const *mut c_void,
        n_inputs: usize,
        ctx: *mut c_void,
        on_output: extern "C" fn(*mut c_void, *mut c_void),
        err: *mut c_char,
        err_len: usize,
    ) -> c_int;
    fn gpubench_aoti_metadata(
        handle: *mut c_void,
        ctx: *mut c_void,
        on_entry: extern "C" fn(*mut c_void, *const c_char, usize, *const c_char, usize),
        err: *mut c_char,
        err_len: usize,
    ) -> c_int;
    fn gpubench_aoti_call_spec(
        handle: *mut c_void,
        ctx: *mut c_void,
        on_spec: extern "C" fn(*mut c_void, *const c_char, usize),
        err: *mut c_char,
        err_len: usize,
    ) -> c_int;
    fn gpubench_aoti_free(handle: *mut c_void);
}

/// Errors loading or running a package.
#[derive(Debug, Error)]
pub enum AotiError {
    /// The file does not exist.
    #[error("failed to load AOTInductor package {path}: no such file")]
    Missing {
        /// The package path.
        path: String,
    },
    /// libtorch could not load it (not a package, built for another libtorch, a
    /// device that is not available).
    #[error("failed to load AOTInductor package {path}: {cause}")]
    Load {
        /// The package path.
        path: String,
        /// libtorch's message, capped.
        cause: String,
    },
    /// The package was compiled for another device type than the one asked for.
    #[error("failed to load AOTInductor package {path}: it was compiled for {package} and the benchmark runs on {requested}")]
    WrongDevice {
        /// The package path.
        path: String,
        /// The package's device type (`cpu`, `cuda`).
        package: String,
        /// The device asked for.
        requested: String,
    },
    /// An input is on another device than the package's.
    #[error("failed to run AOTInductor package {path}: input {index} is on {found}, the package runs on {expected}")]
    InputDevice {
        /// The package path.
        path: String,
        /// The input's position.
        index: usize,
        /// The input's device.
        found: String,
        /// The package's device.
        expected: String,
    },
    /// The run raised an error.
    #[error("failed to run AOTInductor package {path}: {cause}")]
    Run {
        /// The package path.
        path: String,
        /// libtorch's message, capped.
        cause: String,
    },
}

/// A loaded AOTInductor package.
pub struct AotiPackage {
    handle: *mut c_void,
    path: PathBuf,
    device: Device,
    metadata: BTreeMap<String, String>,
    call_spec: Vec<String>,
}

fn c_error(buf: &[c_char]) -> String {
    // SAFETY: the shim always NUL-terminates within the buffer it was given.
    let msg = unsafe { CStr::from_ptr(buf.as_ptr()) };
    gpubench_record::failure::cap_message(&msg.to_string_lossy())
}

fn device_label(device: Device) -> String {
    match device {
        Device::Cpu => "cpu".into(),
        Device::Cuda(i) => format!("cuda:{i}"),
        other => format!("{other:?}").to_lowercase(),
    }
}

fn device_type(device: Device) -> &'static str {
    match device {
        Device::Cpu => "cpu",
        Device::Cuda(_) => "cuda",
        Device::Mps => "mps",
        Device::Vulkan => "vulkan",
    }
}

extern "C" fn push_output(ctx: *mut c_void, tensor: *mut c_void) {
    // SAFETY: ctx is the `Vec<Tensor>` passed by `run`; the tensor is a fresh
    // heap-allocated at::Tensor whose ownership moves to the Rust `Tensor`.
    let outputs = unsafe { &mut *(ctx as *mut Vec<Tensor>) };
    outputs.push(unsafe { Tensor::from_ptr(tensor as *mut torch_sys::C_tensor) });
}

extern "C" fn push_entry(
    ctx: *mut c_void,
    key: *const c_char,
    key_len: usize,
    value: *const c_char,
    value_len: usize,
) {
    // SAFETY: ctx is the map passed by `load`; the strings live for the call.
    let map = unsafe { &mut *(ctx as *mut BTreeMap<String, String>) };
    let read = |p: *const c_char, n: usize| {
        // SAFETY: `p` points at `n` bytes owned by the C++ caller.
        let bytes = unsafe { std::slice::from_raw_parts(p as *const u8, n) };
        String::from_utf8_lossy(bytes).into_owned()
    };
    map.insert(read(key, key_len), read(value, value_len));
}

extern "C" fn push_spec(ctx: *mut c_void, spec: *const c_char, len: usize) {
    // SAFETY: ctx is the vector passed by `load`; the string lives for the call.
    let specs = unsafe { &mut *(ctx as *mut Vec<String>) };
    let bytes = unsafe { std::slice::from_raw_parts(spec as *const u8, len) };
    specs.push(String::from_utf8_lossy(bytes).into_owned());
}

impl AotiPackage {
    /// Loads the package at `path` to run on `device`. A package compiled for
    /// another device type is refused (running CUDA tensors through CPU code would
    /// read device memory from the host).
    pub fn load(path: &Path, device: Device) -> Result<Self, AotiError> {
        let shown = path.display().to_string();
        if !path.is_file() {
            return Err(AotiError::Missing { path: shown });
        }
        let c_path = CString::new(path.as_os_str().to_string_lossy().as_bytes()).map_err(|_| {
            AotiError::Load {
                path: shown.clone(),
                cause: "the path contains a NUL byte".into(),
            }
        })?;
        let index = match device {
            Device::Cuda(i) => i as c_int,
            _ => -1,
        };
        let mut err = vec![0 as c_char; ERR_LEN];
        // SAFETY: NUL-terminated path, sized error buffer; null on failure.
        let handle =
            unsafe { gpubench_aoti_load(c_path.as_ptr(), index, err.as_mut_ptr(), ERR_LEN) };
        if handle.is_null() {
            return Err(AotiError::Load {
                path: shown,
                cause: c_error(&err),
            });
        }
        let mut package = AotiPackage {
            handle,
            path: path.to_path_buf(),
            device,
            metadata: BTreeMap::new(),
            call_spec: Vec::new(),
        };
        let mut metadata = BTreeMap::new();
        // SAFETY: live handle; the callback only pushes into `metadata`.
        let rc = unsafe {
            gpubench_aoti_metadata(
                handle,
                &mut metadata as *mut _ as *mut c_void,
                push_entry,
                err.as_mut_ptr(),
                ERR_LEN,
            )
        };
        if rc != 0 {
            return Err(AotiError::Load {
                path: shown,
                cause: format!("failed to read its metadata: {}", c_error(&err)),
            });
        }
        let mut call_spec = Vec::new();
        // SAFETY: as above.
        let rc = unsafe {
            gpubench_aoti_call_spec(
                handle,
                &mut call_spec as *mut _ as *mut c_void,
                push_spec,
                err.as_mut_ptr(),
                ERR_LEN,
            )
        };
        if rc != 0 {
            return Err(AotiError::Load {
                path: shown,
                cause: format!("failed to read its call spec: {}", c_error(&err)),
            });
        }
        package.metadata = metadata;
        package.call_spec = call_spec;
        if let Some(kind) = package.metadata.get(DEVICE_KEY) {
            if kind != device_type(device) {
                return Err(AotiError::WrongDevice {
                    path: shown,
                    package: kind.clone(),
                    requested: device_label(device),
                });
            }
        }
        Ok(package)
    }

    /// Runs the package on `inputs` (on the package's device) and returns its outputs.
    pub fn run(&self, inputs: &[Tensor]) -> Result<Vec<Tensor>, AotiError> {
        for (index, t) in inputs.iter().enumerate() {
            if device_type(t.device()) != device_type(self.device) {
                return Err(AotiError::InputDevice {
                    path: self.path.display().to_string(),
                    index,
                    found: device_label(t.device()),
                    expected: device_label(self.device),
                });
            }
        }
        let ptrs: Vec<*mut c_void> = inputs.iter().map(|t| t.as_ptr() as *mut c_void).collect();
        let mut outputs: Vec<Tensor> = Vec::new();
        let mut err = vec![0 as c_char; ERR_LEN];
        // SAFETY: the inputs outlive the call and are only read (the shim copies the
        // at::Tensor handles); outputs arrive through `push_output`.
        let rc = unsafe {
            gpubench_aoti_run(
                self.handle,
                ptrs.as_ptr(),
                ptrs.len(),
                &mut outputs as *mut _ as *mut c_void,
                push_output,
                err.as_mut_ptr(),
                ERR_LEN,
            )
        };
        if rc != 0 {
            return Err(AotiError::Run {
                path: self.path.display().to_string(),
                cause: c_error(&err),
            });
        }
        Ok(outputs)
    }

    /// The package's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The package's metadata (AOTInductor's, plus what the exporter added).
    pub fn metadata(&self) -> &BTreeMap<String, String> {
        &self.metadata
    }

    /// The call spec: the input and output tree specs, as AOTInductor serialises them.
    pub fn call_spec(&self) -> &[String] {
        &self.call_spec
    }

    /// The input shapes the package declares under [`INPUT_SHAPES_KEY`] (`None` per
    /// dynamic dimension): `None` when it declares none, an error when the entry
    /// cannot be read.
    pub fn exported_input_shapes(&self) -> Result<Option<Vec<Vec<Option<i64>>>>, String> {
        let Some(text) = self.metadata.get(INPUT_SHAPES_KEY) else {
            return Ok(None);
        };
        serde_json::from_str(text).map(Some).map_err(|e| {
            format!(
                "failed to read {INPUT_SHAPES_KEY} of {}: {e} (expected e.g. [[1, null, 64]])",
                self.path.display()
            )
        })
    }
}

impl Drop for AotiPackage {
    fn drop(&mut self) {
        // SAFETY: the handle came from gpubench_aoti_load and is freed once.
        unsafe { gpubench_aoti_free(self.handle) }
    }
}

impl std::fmt::Debug for AotiPackage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AotiPackage")
            .field("path", &self.path)
            .field("device", &self.device)
            .field("metadata", &self.metadata)
            .finish()
    }
}
