//! Safe wrappers over the C++ shim (device events, allocator statistics, library
//! location). Every call returns a `Result` whose error is the C++ exception text.

use std::ffi::{c_char, c_int, c_long, c_void, CStr};

const ERR_LEN: usize = 1024;

#[repr(C)]
#[derive(Default)]
struct RawMemoryStats {
    allocated_current: i64,
    allocated_peak: i64,
    reserved_current: i64,
    reserved_peak: i64,
    num_alloc_retries: i64,
    num_ooms: i64,
}

extern "C" {
    fn gpubench_cuda_set_device(device: c_int, err: *mut c_char, err_len: usize) -> c_int;
    fn gpubench_cuda_synchronize(device: c_int, err: *mut c_char, err_len: usize) -> c_int;
    fn gpubench_event_create(err: *mut c_char, err_len: usize) -> *mut c_void;
    fn gpubench_event_record(
        ev: *mut c_void,
        device: c_int,
        err: *mut c_char,
        err_len: usize,
    ) -> c_int;
    fn gpubench_event_elapsed_ms(
        start: *mut c_void,
        end: *mut c_void,
        ms: *mut f64,
        err: *mut c_char,
        err_len: usize,
    ) -> c_int;
    fn gpubench_event_destroy(ev: *mut c_void);
    fn gpubench_memory_stats(
        device: c_int,
        out: *mut RawMemoryStats,
        err: *mut c_char,
        err_len: usize,
    ) -> c_int;
    fn gpubench_memory_reset_peak(device: c_int, err: *mut c_char, err_len: usize) -> c_int;
    fn gpubench_allocation_counts(
        device: c_int,
        count: *mut u64,
        bytes: *mut u64,
        err: *mut c_char,
        err_len: usize,
    ) -> c_int;
    fn gpubench_memory_reset_accumulated(device: c_int, err: *mut c_char, err_len: usize) -> c_int;
    fn gpubench_memory_empty_cache(err: *mut c_char, err_len: usize) -> c_int;
    fn gpubench_memory_info(
        device: c_int,
        free: *mut u64,
        total: *mut u64,
        err: *mut c_char,
        err_len: usize,
    ) -> c_int;
    fn gpubench_cuda_runtime_version() -> c_long;
    fn gpubench_cudnn_version() -> c_long;
    fn gpubench_libtorch_lib_dir(out: *mut c_char, out_len: usize) -> c_int;
    fn gpubench_torch_version() -> *const c_char;
}

/// The libtorch version whose headers the shim was compiled against.
pub fn torch_version() -> String {
    // SAFETY: returns a static NUL-terminated string literal.
    unsafe { CStr::from_ptr(gpubench_torch_version()) }
        .to_string_lossy()
        .into_owned()
}

/// A frame line of the shim's as a person reads it: a Rust symbol the C++ demangler
/// left mangled (the `v0` scheme of Rust's standard library) demangled, without its
/// hash.
pub(crate) fn readable_frame(line: &str) -> String {
    let (name, rest) = line.split_once(' ').unwrap_or((line, ""));
    if !(name.starts_with("_R") || name.starts_with("_ZN")) {
        return unescape_legacy(line);
    }
    match rustc_demangle::try_demangle(name) {
        Ok(d) if rest.is_empty() => format!("{d:#}"),
        Ok(d) => format!("{d:#} {rest}"),
        Err(_) => line.to_string(),
    }
}

/// A legacy-mangled Rust name the C++ demangler split into paths but left its
/// escapes in (`{{closure}}` as `_$u7b$$u7b$closure$u7d$$u7d$`).
fn unescape_legacy(line: &str) -> String {
    if !line.contains('$') {
        return line.to_string();
    }
    const ESCAPES: [(&str, &str); 12] = [
        ("$u7b$", "{"),
        ("$u7d$", "}"),
        ("$LT$", "<"),
        ("$GT$", ">"),
        ("$u20$", " "),
        ("$RF$", "&"),
        ("$BP$", "*"),
        ("$C$", ","),
        ("$u27$", "'"),
        ("$u5b$", "["),
        ("$u5d$", "]"),
        ("$u7e$", "~"),
    ];
    // The name is everything before the first space (an escaped name has none), then
    // ` (file:line)`. Each `::`-component escaped by the legacy scheme drops the `_`
    // that let it start with `$`, and has its own `::` written as `..`.
    let (name, rest) = match line.split_once(' ') {
        Some((name, rest)) => (name, Some(rest)),
        None => (line, None),
    };
    let mut out = name
        .split("::")
        .map(|part| {
            let part = part
                .strip_prefix('_')
                .filter(|p| p.starts_with('$'))
                .unwrap_or(part);
            if part.contains('$') {
                part.replace("..", "::")
            } else {
                part.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("::");
    for (from, to) in ESCAPES {
        out = out.replace(from, to);
    }
    match rest {
        Some(rest) => format!("{out} {rest}"),
        None => out,
    }
}

/// The shim's snapshot or trace text with every frame line (`F\t...`) readable.
pub(crate) fn readable_frames(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        match line.strip_prefix("F\t") {
            Some(frame) => {
                out.push_str("F\t");
                out.push_str(&readable_frame(frame));
            }
            None => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

/// Calls a shim function that reports errors through a buffer.
pub(crate) fn call(f: impl FnOnce(*mut c_char, usize) -> c_int) -> Result<(), String> {
    let mut buf = vec![0 as c_char; ERR_LEN];
    if f(buf.as_mut_ptr(), ERR_LEN) == 0 {
        Ok(())
    } else {
        // SAFETY: the shim always NUL-terminates within ERR_LEN.
        let msg = unsafe { CStr::from_ptr(buf.as_ptr()) };
        Err(gpubench_record::failure::cap_message(
            &msg.to_string_lossy(),
        ))
    }
}

/// Makes `device` this thread's current CUDA device, so calls that take no device
/// act on it rather than on device 0.
pub fn cuda_set_device(device: usize) -> Result<(), String> {
    // SAFETY: plain values and a sized buffer.
    call(|e, l| unsafe { gpubench_cuda_set_device(device as c_int, e, l) })
}

/// Blocks until all work queued on `device` has finished.
pub fn cuda_synchronize(device: usize) -> Result<(), String> {
    // SAFETY: plain values and a sized buffer.
    call(|e, l| unsafe { gpubench_cuda_synchronize(device as c_int, e, l) })
}

/// A CUDA event with timing enabled, recorded on the device's current stream.
pub struct CudaEvent {
    raw: *mut c_void,
}

impl CudaEvent {
    /// Creates an event.
    pub fn new() -> Result<Self, String> {
        let mut raw = std::ptr::null_mut();
        // SAFETY: the shim returns null on error and fills the buffer.
        call(|e, l| unsafe {
            raw = gpubench_event_create(e, l);
            c_int::from(raw.is_null())
        })?;
        Ok(CudaEvent { raw })
    }

    /// Records the event on `device`'s current stream.
    pub fn record(&self, device: usize) -> Result<(), String> {
        // SAFETY: `raw` is a live event owned by self.
        call(|e, l| unsafe { gpubench_event_record(self.raw, device as c_int, e, l) })
    }

    /// Milliseconds between `self` and `end`, waiting for `end` to complete.
    pub fn elapsed_ms(&self, end: &CudaEvent) -> Result<f64, String> {
        let mut ms = 0.0;
        // SAFETY: both events are live; `ms` outlives the call.
        call(|e, l| unsafe { gpubench_event_elapsed_ms(self.raw, end.raw, &mut ms, e, l) })?;
        Ok(ms)
    }
}

impl Drop for CudaEvent {
    fn drop(&mut self) {
        // SAFETY: `raw` was created by gpubench_event_create and is dropped once.
        unsafe { gpubench_event_destroy(self.raw) }
    }
}

/// The caching allocator's statistics for a device.
pub fn memory_stats(device: usize) -> Result<gpubench_record::measurement::MemoryStats, String> {
    let mut raw = RawMemoryStats::default();
    // SAFETY: `raw` is repr(C) and matches the shim's struct.
    call(|e, l| unsafe { gpubench_memory_stats(device as c_int, &mut raw, e, l) })?;
    let u = |x: i64| x.max(0) as u64;
    Ok(gpubench_record::measurement::MemoryStats {
        peak_allocated_bytes: u(raw.allocated_peak),
        peak_reserved_bytes: u(raw.reserved_peak),
        allocated_bytes: u(raw.allocated_current),
        reserved_bytes: u(raw.reserved_current),
        alloc_retries: u(raw.num_alloc_retries),
        num_ooms: u(raw.num_ooms),
        reserved_shared: false,
    })
}

/// Resets the allocator's peak and accumulated statistics for `device`.
pub fn memory_reset_peak(device: usize) -> Result<(), String> {
    // SAFETY: plain values and a sized buffer.
    call(|e, l| unsafe { gpubench_memory_reset_peak(device as c_int, e, l) })
}

/// Allocations and their bytes from the caching allocator of `device` since
/// [`memory_reset_accumulated`].
pub fn allocation_counts(device: usize) -> Result<(u64, u64), String> {
    let (mut count, mut bytes) = (0u64, 0u64);
    // SAFETY: outputs outlive the call.
    call(|e, l| unsafe {
        gpubench_allocation_counts(device as c_int, &mut count, &mut bytes, e, l)
    })?;
    Ok((count, bytes))
}

/// Resets the caching allocator's accumulated counts for `device`.
pub fn memory_reset_accumulated(device: usize) -> Result<(), String> {
    // SAFETY: plain values and a sized buffer.
    call(|e, l| unsafe { gpubench_memory_reset_accumulated(device as c_int, e, l) })
}

/// Returns cached, unused blocks to the driver.
pub fn memory_empty_cache() -> Result<(), String> {
    // SAFETY: sized buffer only.
    call(|e, l| unsafe { gpubench_memory_empty_cache(e, l) })
}

/// Free and total bytes of `device`.
pub fn memory_info(device: usize) -> Result<(u64, u64), String> {
    let (mut free, mut total) = (0u64, 0u64);
    // SAFETY: outputs outlive the call.
    call(|e, l| unsafe { gpubench_memory_info(device as c_int, &mut free, &mut total, e, l) })?;
    Ok((free, total))
}

/// CUDA runtime version libtorch was built with (e.g. 13000), if CUDA is loaded.
pub fn cuda_runtime_version() -> Option<i64> {
    // SAFETY: no arguments; errors are mapped to -1 in C++.
    let v = unsafe { gpubench_cuda_runtime_version() };
    (v > 0).then_some(v as i64)
}

/// cuDNN version (e.g. 91000), if available.
pub fn cudnn_version() -> Option<i64> {
    // SAFETY: as above.
    let v = unsafe { gpubench_cudnn_version() };
    (v > 0).then_some(v as i64)
}

/// The directory the loader took libc10.so from.
pub fn libtorch_lib_dir() -> Option<std::path::PathBuf> {
    let mut buf = vec![0 as c_char; 4096];
    // SAFETY: the shim writes a NUL-terminated string within the buffer.
    let rc = unsafe { gpubench_libtorch_lib_dir(buf.as_mut_ptr(), buf.len()) };
    if rc != 0 {
        return None;
    }
    // SAFETY: NUL-terminated by the shim.
    let s = unsafe { CStr::from_ptr(buf.as_ptr()) };
    Some(std::path::PathBuf::from(s.to_string_lossy().into_owned()))
}

#[cfg(test)]
mod traceback_tests {
    use std::ffi::{c_char, c_int, CStr};

    extern "C" {
        fn gpubench_traceback_frames(
            max_frames: c_int,
            err: *mut c_char,
            err_len: usize,
        ) -> *mut c_char;
        fn gpubench_traceback_frames_on_thread(
            max_frames: c_int,
            err: *mut c_char,
            err_len: usize,
        ) -> *mut c_char;
        fn gpubench_text_free(p: *mut c_char);
    }

    /// The frame lines `gather` returns, each made readable.
    fn frames_of(
        gather: unsafe extern "C" fn(c_int, *mut c_char, usize) -> *mut c_char,
    ) -> Vec<String> {
        let mut text = std::ptr::null_mut();
        // SAFETY: the shim returns null on error and fills the buffer.
        super::call(|e, l| unsafe {
            text = gather(8, e, l);
            c_int::from(text.is_null())
        })
        .expect("the shim gathers and names a traceback");
        // SAFETY: a NUL-terminated buffer from the shim, freed by it below.
        let lines = unsafe { CStr::from_ptr(text) }
            .to_string_lossy()
            .lines()
            .map(super::readable_frame)
            .collect();
        // SAFETY: allocated by the shim's malloc, freed once.
        unsafe { gpubench_text_free(text) };
        lines
    }

    /// The frames of a C++ traceback gathered from here, named as the allocator's
    /// history names an allocation's.
    #[inline(never)]
    fn frames_from_a_named_caller() -> Vec<String> {
        std::hint::black_box(frames_of(gpubench_traceback_frames))
    }

    #[test]
    fn a_cpp_traceback_comes_back_with_named_frames() {
        let frames = frames_from_a_named_caller();
        assert!(
            frames
                .iter()
                .any(|f| f.contains("traceback_tests::frames_from_a_named_caller")),
            "{frames:?}"
        );
        // Every frame has a name or a library and offset; libtorch's and the shim's
        // own are left out.
        for f in &frames {
            assert!(!f.is_empty() && !f.contains("??"), "{frames:?}");
            assert!(
                !f.starts_with("torch::")
                    && !f.starts_with("gpubench_traceback")
                    && !f.contains("gpubench::"),
                "{frames:?}"
            );
        }
        // Rust's hashes are gone, and the standard library's `v0` names demangled.
        assert!(
            frames
                .iter()
                .all(|f| !f.contains("::h") && !f.starts_with("_R")),
            "{frames:?}"
        );
    }

    #[test]
    fn a_thread_with_no_frame_of_the_callers_says_so_in_one_line() {
        // As on libtorch's autograd thread: the runtime's thread start (libc,
        // libstdc++) and library frames only, none of them shown as the caller's.
        let frames = frames_of(gpubench_traceback_frames_on_thread);
        assert_eq!(
            frames,
            ["(only libtorch's and the runtime's frames)"],
            "{frames:?}"
        );
        // A thread of the caller's own keeps its frames, without the runtime's.
        let frames = std::thread::spawn(frames_from_a_named_caller)
            .join()
            .unwrap();
        assert!(
            frames
                .iter()
                .any(|f| f.contains("traceback_tests::frames_from_a_named_caller")),
            "{frames:?}"
        );
        assert!(
            frames
                .iter()
                .all(|f| !f.starts_with("libc.so") && !f.starts_with("libstdc++.so")),
            "{frames:?}"
        );
    }

    #[test]
    fn rust_symbols_the_cpp_demangler_leaves_are_demangled() {
        assert_eq!(
            super::readable_frame("_ZN4core3ops8function6FnOnce9call_once17h0123456789abcdefE"),
            "core::ops::function::FnOnce::call_once"
        );
        assert_eq!(super::readable_frame("main (x.rs:3)"), "main (x.rs:3)");
        assert_eq!(
            super::readable_frame("bench::step::_$u7b$$u7b$closure$u7d$$u7d$"),
            "bench::step::{{closure}}"
        );
        // A trait impl's legacy path, as libtorch's symbolizer names it on a release
        // binary: its `::` escaped as `..` and its leading `_` kept.
        assert_eq!(
            super::readable_frame(
                "_$LT$alloc..vec..Vec$LT$T$GT$$u20$as$u20$alloc..vec..spec_from_iter_nested..\
                 SpecFromIterNested$LT$T$C$I$GT$$GT$::from_iter"
            ),
            "<alloc::vec::Vec<T> as alloc::vec::spec_from_iter_nested::SpecFromIterNested<T,I>>\
             ::from_iter"
        );
        assert_eq!(
            super::readable_frame(
                "_$LT$core..iter..adapters..map..Map$LT$I$C$F$GT$$u20$as$u20$core..iter..traits..\
                 iterator..Iterator$GT$::fold (lib.rs:3)"
            ),
            "<core::iter::adapters::map::Map<I,F> as core::iter::traits::iterator::Iterator>::fold \
             (lib.rs:3)"
        );
        assert_eq!(
            super::readable_frames("S\t1\t0x0\nF\t_ZN3foo3bar17h0123456789abcdefE (a.rs:1)\n"),
            "S\t1\t0x0\nF\tfoo::bar (a.rs:1)\n"
        );
    }
}
