//! Makes CUDA available without user link flags.
//!
//! tch links `libtorch_cuda.so`, but the linker's `--as-needed` (the default on
//! Debian and Ubuntu) drops it because no symbol of it is referenced directly; CUDA is
//! then silently absent. Opening it with `RTLD_NOW | RTLD_GLOBAL` before the first
//! torch call registers libtorch's CUDA hooks, exactly as a linked library would.

use std::ffi::CString;
use std::path::PathBuf;
use std::sync::OnceLock;

/// What happened when loading `libtorch_cuda.so`.
///
/// ```no_run
/// use gpubench_core::cuda_loader::{ensure_loaded, CudaLoad};
///
/// match ensure_loaded() {
///     CudaLoad::Loaded(path) => println!("CUDA from {}", path.display()),
///     CudaLoad::Unavailable(why) => println!("no CUDA: {why}"),
/// }
/// ```
#[derive(Debug, Clone)]
pub enum CudaLoad {
    /// Loaded from this path.
    Loaded(PathBuf),
    /// Not loaded, with the reason.
    Unavailable(String),
}

static LOAD: OnceLock<CudaLoad> = OnceLock::new();

/// Loads `libtorch_cuda.so` once, from the libtorch the process already uses.
/// Must run before the first torch call to take effect. [`crate::main()`] calls it; a
/// bench with a `main` of its own (criterion's) calls it first:
///
/// ```no_run
/// // The first line of a `main` of its own, before any torch call:
/// gpubench_core::cuda_loader::ensure_loaded();
/// assert!(tch::Cuda::is_available(), "no CUDA device");
/// ```
pub fn ensure_loaded() -> &'static CudaLoad {
    LOAD.get_or_init(load)
}

fn load() -> CudaLoad {
    let mut candidates = Vec::new();
    if let Some(dir) = crate::shim::libtorch_lib_dir() {
        candidates.push(dir.join("libtorch_cuda.so"));
    }
    candidates.push(PathBuf::from(env!("GPUBENCH_BUILD_LIBTORCH_LIB")).join("libtorch_cuda.so"));
    let mut reasons = Vec::new();
    for path in candidates {
        if !path.exists() {
            reasons.push(format!("{} does not exist", path.display()));
            continue;
        }
        let Ok(c_path) = CString::new(path.as_os_str().as_encoded_bytes()) else {
            continue;
        };
        // SAFETY: dlopen with a valid NUL-terminated path; the handle is kept for
        // the life of the process on purpose.
        let handle = unsafe { libc::dlopen(c_path.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) };
        if !handle.is_null() {
            return CudaLoad::Loaded(path);
        }
        // SAFETY: dlerror returns a thread-local string or null.
        let err = unsafe { libc::dlerror() };
        let msg = if err.is_null() {
            "unknown dlopen error".to_string()
        } else {
            // SAFETY: non-null, NUL-terminated.
            unsafe { std::ffi::CStr::from_ptr(err) }
                .to_string_lossy()
                .into_owned()
        };
        reasons.push(format!("failed to open {}: {msg}", path.display()));
    }
    CudaLoad::Unavailable(reasons.join("; "))
}
