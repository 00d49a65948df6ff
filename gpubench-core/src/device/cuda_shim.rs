//! The CUDA side of the C++ shim: CUDA-graph capture and replay of a routine, and the
//! Kineto (CUPTI) profiler's record of its kernels, copies and syncs; the caching
//! allocator's snapshot, history and memory cap. It is a shared
//! library of its own, embedded in the executable and opened from memory once
//! `libtorch_cuda.so` is loaded, so an executable built here starts on machines
//! without CUDA and the GPU machine needs nothing but its libtorch.

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::sync::OnceLock;

use gpubench_record::kernels::ActivityKind;

use super::DeviceProfile;
use crate::cuda_loader::{self, CudaLoad};
use crate::shim::call;

/// The ABI version of `shim/cuda_shim.cpp` this build expects.
const ABI_VERSION: c_int = 4;

#[cfg(gpubench_cuda_shim)]
static LIBRARY: &[u8] = include_bytes!(env!("GPUBENCH_CUDA_SHIM"));

type ErrFn = unsafe extern "C" fn(*mut c_char, usize) -> c_int;
type StateFn = unsafe extern "C" fn(*mut c_void, *mut c_char, usize) -> c_int;
type EnterFn = unsafe extern "C" fn(c_int, *mut c_char, usize) -> *mut c_void;
type ReplayFn = unsafe extern "C" fn(*mut c_void, c_int, *mut c_char, usize) -> c_int;
type FreeStateFn = unsafe extern "C" fn(*mut c_void);
type StopFn = unsafe extern "C" fn(*mut c_char, usize) -> *mut c_char;
type FreeTextFn = unsafe extern "C" fn(*mut c_char);
type SnapshotFn = unsafe extern "C" fn(c_int, c_int, c_int, *mut c_char, usize) -> *mut c_char;
type FractionFn = unsafe extern "C" fn(c_int, f64, *mut c_char, usize) -> c_int;
type TraceStopFn = unsafe extern "C" fn(c_int, c_int, c_int, *mut c_char, usize) -> *mut c_char;

/// The library's entry points.
pub struct CudaShim {
    capture_enter: EnterFn,
    capture_begin: StateFn,
    capture_end: StateFn,
    capture_replay: ReplayFn,
    capture_free: FreeStateFn,
    capture_abandon: FreeStateFn,
    profile_start: ErrFn,
    profile_stop: StopFn,
    free_text: FreeTextFn,
    memory_snapshot: SnapshotFn,
    memory_record_history: ErrFn,
    memory_set_fraction: FractionFn,
    memory_trace_start: ErrFn,
    memory_trace_stop: TraceStopFn,
}

static SHIM: OnceLock<Result<CudaShim, String>> = OnceLock::new();

/// The loaded library, or why it cannot be (no CUDA, built without it).
pub fn get() -> Result<&'static CudaShim, String> {
    SHIM.get_or_init(load).as_ref().map_err(Clone::clone)
}

#[cfg(not(gpubench_cuda_shim))]
fn load() -> Result<CudaShim, String> {
    Err(format!(
        "kernel timing was not built in: {}; install the CUDA headers beside libtorch \
         (`cargo gpubench setup` does, as does scripts/env.sh) and rebuild",
        env!("GPUBENCH_CUDA_SHIM_MISSING")
    ))
}

#[cfg(gpubench_cuda_shim)]
fn load() -> Result<CudaShim, String> {
    if let CudaLoad::Unavailable(why) = cuda_loader::ensure_loaded() {
        return Err(format!("libtorch_cuda could not be loaded: {why}"));
    }
    let handle = open_from_memory(LIBRARY)?;
    let sym = |name: &str| -> Result<*mut c_void, String> {
        let c = CString::new(name).expect("symbol names have no NUL");
        // SAFETY: a live handle and a NUL-terminated name.
        let p = unsafe { libc::dlsym(handle, c.as_ptr()) };
        if p.is_null() {
            Err(format!("the CUDA shim has no symbol {name}"))
        } else {
            Ok(p)
        }
    };
    // SAFETY: each symbol is an `extern "C"` function of shim/cuda_shim.cpp with the
    // signature it is cast to here; the version check guards against another build.
    unsafe {
        let version = std::mem::transmute::<*mut c_void, unsafe extern "C" fn() -> c_int>(sym(
            "gpubench_cuda_shim_version",
        )?);
        if version() != ABI_VERSION {
            return Err("the CUDA shim is from another build of gpubench".into());
        }
        Ok(CudaShim {
            capture_enter: std::mem::transmute::<*mut c_void, EnterFn>(sym(
                "gpubench_capture_enter",
            )?),
            capture_begin: std::mem::transmute::<*mut c_void, StateFn>(sym(
                "gpubench_capture_begin",
            )?),
            capture_end: std::mem::transmute::<*mut c_void, StateFn>(sym("gpubench_capture_end")?),
            capture_replay: std::mem::transmute::<*mut c_void, ReplayFn>(sym(
                "gpubench_capture_replay",
            )?),
            capture_abandon: std::mem::transmute::<*mut c_void, FreeStateFn>(sym(
                "gpubench_capture_abandon",
            )?),
            capture_free: std::mem::transmute::<*mut c_void, FreeStateFn>(sym(
                "gpubench_capture_free",
            )?),
            profile_start: std::mem::transmute::<*mut c_void, ErrFn>(sym(
                "gpubench_profile_start",
            )?),
            profile_stop: std::mem::transmute::<*mut c_void, StopFn>(sym("gpubench_profile_stop")?),
            free_text: std::mem::transmute::<*mut c_void, FreeTextFn>(sym(
                "gpubench_cuda_shim_free",
            )?),
            memory_snapshot: std::mem::transmute::<*mut c_void, SnapshotFn>(sym(
                "gpubench_memory_snapshot",
            )?),
            memory_record_history: std::mem::transmute::<*mut c_void, ErrFn>(sym(
                "gpubench_memory_record_history",
            )?),
            memory_set_fraction: std::mem::transmute::<*mut c_void, FractionFn>(sym(
                "gpubench_memory_set_fraction",
            )?),
            memory_trace_start: std::mem::transmute::<*mut c_void, ErrFn>(sym(
                "gpubench_memory_trace_start",
            )?),
            memory_trace_stop: std::mem::transmute::<*mut c_void, TraceStopFn>(sym(
                "gpubench_memory_trace_stop",
            )?),
        })
    }
}

/// Writes `bytes` to an anonymous in-memory file and opens it as a shared library.
#[cfg(gpubench_cuda_shim)]
fn open_from_memory(bytes: &[u8]) -> Result<*mut c_void, String> {
    use std::io::Write;
    use std::os::fd::{AsRawFd, FromRawFd};
    let name = CString::new("gpubench-cuda-shim").expect("no NUL");
    // SAFETY: memfd_create with a valid name; the fd is owned by the File below.
    let fd = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(format!(
            "failed to create an in-memory file for the CUDA shim: {}",
            std::io::Error::last_os_error()
        ));
    }
    // SAFETY: fd is a fresh descriptor nothing else owns.
    let mut file = unsafe { std::fs::File::from_raw_fd(fd) };
    file.write_all(bytes)
        .map_err(|e| format!("failed to write the CUDA shim: {e}"))?;
    let path = CString::new(format!("/proc/self/fd/{}", file.as_raw_fd())).expect("no NUL");
    // SAFETY: dlopen of a valid path; the handle lives for the process on purpose (the
    // mapping outlives the descriptor, which closes when `file` drops).
    let handle = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    if handle.is_null() {
        // SAFETY: dlerror returns a thread-local string or null.
        let err = unsafe { libc::dlerror() };
        let msg = if err.is_null() {
            "unknown dlopen error".to_string()
        } else {
            // SAFETY: non-null and NUL-terminated.
            unsafe { CStr::from_ptr(err) }
                .to_string_lossy()
                .into_owned()
        };
        return Err(format!("failed to open the CUDA shim: {msg}"));
    }
    Ok(handle)
}

/// A capture of a routine's work on a CUDA device, made current on a side stream.
pub struct Capture {
    raw: *mut c_void,
}

impl CudaShim {
    /// Makes a side stream of `device` current (until [`CudaShim::capture_end`]).
    pub fn capture_enter(&self, device: usize) -> Result<Capture, String> {
        let mut raw = std::ptr::null_mut();
        // SAFETY: the shim returns null on error and fills the buffer.
        call(|e, l| unsafe {
            raw = (self.capture_enter)(device as c_int, e, l);
            c_int::from(raw.is_null())
        })?;
        Ok(Capture { raw })
    }

    /// Starts capturing the side stream's work into a graph.
    pub fn capture_begin(&self, c: &Capture) -> Result<(), String> {
        // SAFETY: a live capture.
        call(|e, l| unsafe { (self.capture_begin)(c.raw, e, l) })
    }

    /// Ends the capture (whatever happened) and restores the previous stream; `Err`
    /// says why the work could not be captured.
    pub fn capture_end(&self, c: &Capture) -> Result<(), String> {
        // SAFETY: a live capture.
        call(|e, l| unsafe { (self.capture_end)(c.raw, e, l) })
    }

    /// Replays the graph `times` times on the current stream.
    pub fn capture_replay(&self, c: &Capture, times: u32) -> Result<(), String> {
        let times = c_int::try_from(times).unwrap_or(c_int::MAX);
        // SAFETY: a live capture.
        call(|e, l| unsafe { (self.capture_replay)(c.raw, times, e, l) })
    }

    /// Undoes what a capture that did not end left in the process (the CUDA
    /// generators in capture mode, the allocator's pool, the last error) and drops
    /// its graph.
    pub fn capture_abandon(&self, c: &Capture) {
        // SAFETY: a live capture.
        unsafe { (self.capture_abandon)(c.raw) }
    }

    /// Frees a capture and its graph.
    pub fn capture_free(&self, c: Capture) {
        // SAFETY: the capture is consumed, so freed once.
        unsafe { (self.capture_free)(c.raw) }
    }

    /// Starts the Kineto profiler on CUDA activities.
    pub fn profile_start(&self) -> Result<(), String> {
        // SAFETY: sized buffer only.
        call(|e, l| unsafe { (self.profile_start)(e, l) })
    }

    /// Stops the profiler and returns what the device did.
    pub fn profile_stop(&self) -> Result<DeviceProfile, String> {
        // SAFETY: sized buffer only.
        let text = self.call_for_text(|e, l| unsafe { (self.profile_stop)(e, l) })?;
        Ok(parse_profile(&text))
    }

    /// Calls a shim function that returns a text it allocated, or null with the error
    /// in the buffer; copies the text out and frees it.
    fn call_for_text(
        &self,
        f: impl FnOnce(*mut c_char, usize) -> *mut c_char,
    ) -> Result<String, String> {
        let mut text = std::ptr::null_mut();
        call(|e, l| {
            text = f(e, l);
            c_int::from(text.is_null())
        })?;
        // SAFETY: a NUL-terminated buffer from the shim, freed by it below.
        let out = unsafe { CStr::from_ptr(text) }
            .to_string_lossy()
            .into_owned();
        // SAFETY: allocated by the shim's malloc, freed once.
        unsafe { (self.free_text)(text) };
        Ok(out)
    }
}

impl CudaShim {
    /// The caching allocator's segments and blocks on `device` as the shim lists them
    /// (see `gpubench_record::memory_snapshot::parse_shim_snapshot`), with frames
    /// for the largest live blocks when history is recorded.
    pub fn memory_snapshot(&self, device: usize) -> Result<String, String> {
        let blocks = gpubench_record::memory_snapshot::LARGEST_BLOCKS_KEPT as c_int;
        let frames = gpubench_record::memory_snapshot::FRAMES_KEPT as c_int;
        // SAFETY: plain values and a sized buffer.
        let text = self.call_for_text(|e, l| unsafe {
            (self.memory_snapshot)(device as c_int, blocks, frames, e, l)
        })?;
        Ok(crate::shim::readable_frames(&text))
    }

    /// Starts tracing every allocation and free, with where each block is allocated.
    pub fn memory_trace_start(&self) -> Result<(), String> {
        // SAFETY: sized buffer only.
        call(|e, l| unsafe { (self.memory_trace_start)(e, l) })
    }

    /// The state of `device` with the trace since [`Self::memory_trace_start`] (see
    /// `gpubench_analysis::memory_trace::parse_shim_trace`); stops the trace, keeping
    /// the history of live blocks when `keep_history`.
    pub fn memory_trace_stop(&self, device: usize, keep_history: bool) -> Result<String, String> {
        let frames = gpubench_record::memory_snapshot::FRAMES_KEPT as c_int;
        let history = c_int::from(keep_history);
        // SAFETY: plain values and a sized buffer.
        let text = self.call_for_text(|e, l| unsafe {
            (self.memory_trace_stop)(device as c_int, frames, history, e, l)
        })?;
        Ok(crate::shim::readable_frames(&text))
    }

    /// Records the C++ stack of every allocation from now on.
    pub fn memory_record_history(&self) -> Result<(), String> {
        // SAFETY: sized buffer only.
        call(|e, l| unsafe { (self.memory_record_history)(e, l) })
    }

    /// Caps the caching allocator of `device` at `fraction` of its memory.
    pub fn memory_set_fraction(&self, device: usize, fraction: f64) -> Result<(), String> {
        // SAFETY: plain values and a sized buffer.
        call(|e, l| unsafe { (self.memory_set_fraction)(device as c_int, fraction, e, l) })
    }
}

/// Kineto's activity types (`kineto/ActivityType.h`) the profile reads.
const GPU_MEMCPY: u32 = 3;
const GPU_MEMSET: u32 = 4;
const CONCURRENT_KERNEL: u32 = 5;
const CUDA_RUNTIME: u32 = 7;

/// Whether a CUDA runtime call waits for the device: the synchronize calls, and a
/// plain (not async) copy.
fn is_sync_call(name: &str) -> bool {
    name.ends_with("Synchronize") || name == "cudaMemcpy"
}

/// The shim's profile text (`type\tdevice\tduration_ns\tname` per line) as a profile.
pub fn parse_profile(text: &str) -> DeviceProfile {
    let mut p = DeviceProfile::default();
    for line in text.lines() {
        let mut f = line.splitn(4, '\t');
        let (Some(kind), Some(_device), Some(dur), Some(name)) =
            (f.next(), f.next(), f.next(), f.next())
        else {
            continue;
        };
        let (Ok(kind), Ok(dur)) = (kind.parse::<u32>(), dur.parse::<f64>()) else {
            continue;
        };
        let kind = match kind {
            CONCURRENT_KERNEL => ActivityKind::Kernel,
            GPU_MEMCPY => ActivityKind::Memcpy,
            GPU_MEMSET => ActivityKind::Memset,
            CUDA_RUNTIME => {
                if is_sync_call(name) {
                    p.syncs += 1;
                }
                continue;
            }
            _ => continue,
        };
        match p.activities.iter_mut().find(|a| a.1 == kind && a.0 == name) {
            Some(a) => {
                a.2 += 1;
                a.3 += dur;
            }
            None => p.activities.push((name.to_string(), kind, 1, dur)),
        }
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_profile_counts_kernels_copies_and_syncs() {
        let text = "5\t1\t2300\tvoid add_kernel<float>(...)\n\
                    5\t1\t2200\tvoid add_kernel<float>(...)\n\
                    3\t1\t900\tMemcpy DtoH (Device -> Pageable)\n\
                    7\t0\t5000\tcudaStreamSynchronize\n\
                    7\t0\t3000\tcudaLaunchKernel\n\
                    7\t0\t8000\tcudaDeviceSynchronize\n\
                    0\t0\t100\taten::add\n\
                    garbage line\n";
        let p = parse_profile(text);
        assert_eq!(p.syncs, 2);
        assert_eq!(p.count(ActivityKind::Kernel), 2);
        assert_eq!(p.count(ActivityKind::Memcpy), 1);
        assert_eq!(p.activities[0].3, 4500.0);
        assert_eq!(p.busy_ns(), 5400.0);
    }

    #[test]
    #[cfg(gpubench_cuda_shim)]
    fn the_shim_loads_from_memory_where_libtorch_cuda_does() {
        // With the CUDA wheel it loads even on a machine without a GPU.
        match cuda_loader::ensure_loaded() {
            CudaLoad::Loaded(_) => {
                get().expect("the CUDA shim loads once libtorch_cuda is loaded");
            }
            CudaLoad::Unavailable(_) => {
                let why = get().err().expect("no CUDA shim without libtorch_cuda");
                assert!(why.contains("libtorch_cuda"), "{why}");
            }
        }
    }

    #[test]
    #[cfg(not(gpubench_cuda_shim))]
    fn without_the_shim_kernel_timing_says_it_was_not_built_in() {
        let why = get().err().expect("not built");
        assert!(why.starts_with("kernel timing was not built in"), "{why}");
    }
}
