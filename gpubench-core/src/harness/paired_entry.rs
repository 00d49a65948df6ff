//! The C entry points a revision's bench code exports when `cargo gpubench ab` builds
//! it as a loadable library ([`crate::export_paired`]): its benchmarks, and one of
//! them run as a side of a paired process ([`super::run_paired`]).

use std::ffi::{c_char, c_void, CStr, CString};
use std::panic::{self, AssertUnwindSafe};

use gpubench_record::paired::{PairedBenchmark, PairedError, PairedRequest};

use crate::paired::Hook;

pub use gpubench_record::paired::{ReadyFn, ABI_VERSION};

/// Text for the driver, which frees it with [`free`].
fn to_c(text: String) -> *mut c_char {
    // JSON never holds a NUL byte outside a string escape.
    CString::new(text)
        .unwrap_or_else(|_| CString::new("{\"error\":\"NUL in output\"}").expect("no NUL"))
        .into_raw()
}

/// `gpubench_paired_list`: the benchmarks of this library, as JSON.
pub fn list() -> *mut c_char {
    let listed = match crate::registry::cases() {
        Ok(cases) => serde_json::to_string(
            &cases
                .iter()
                .map(|c| PairedBenchmark {
                    id: c.id.clone(),
                    ignored: c.ignore,
                })
                .collect::<Vec<_>>(),
        ),
        Err(e) => serde_json::to_string(&PairedError {
            error: e.to_string(),
        }),
    };
    to_c(listed.expect("plain data serialises"))
}

/// `gpubench_paired_open`: runs benchmark `request.id` as one side of a paired
/// process, calling `ready` from inside its `b.iter…`; returns its record as JSON,
/// or a [`PairedError`].
///
/// # Safety
/// `request` is a NUL-terminated string; `ready` and `user` are the driver's, valid
/// for the call.
pub unsafe fn open(request: *const c_char, ready: ReadyFn, user: *mut c_void) -> *mut c_char {
    let error = |e: String| {
        to_c(serde_json::to_string(&PairedError { error: e }).expect("plain data serialises"))
    };
    // SAFETY: the caller passes a NUL-terminated string.
    let text = unsafe { CStr::from_ptr(request) }.to_string_lossy();
    let request: PairedRequest = match serde_json::from_str(&text) {
        Ok(r) => r,
        Err(e) => return error(format!("failed to read the pairing request: {e}")),
    };
    let hook = Hook { ready, user };
    match panic::catch_unwind(AssertUnwindSafe(|| super::run_paired(&request, hook))) {
        Ok(Ok(record)) => to_c(record.to_json_pretty()),
        Ok(Err(e)) => error(e),
        Err(_) => error(format!(
            "the harness of benchmark {} panicked outside the benchmark",
            request.id
        )),
    }
}

/// `gpubench_paired_free`.
///
/// # Safety
/// `text` came from [`list`] or [`open`] and is freed once.
pub unsafe fn free(text: *mut c_char) {
    if !text.is_null() {
        // SAFETY: made by `CString::into_raw` in `to_c`.
        drop(unsafe { CString::from_raw(text) });
    }
}

/// Exports the C entry points of `cargo gpubench ab` from a crate that includes a
/// bench target's source: used by the loadable library `ab` generates for each
/// revision, never written by hand.
#[doc(hidden)]
#[macro_export]
macro_rules! export_paired {
    () => {
        /// The pairing ABI this library speaks.
        #[unsafe(no_mangle)]
        pub extern "C" fn gpubench_paired_abi_version() -> u32 {
            $crate::__private::paired::ABI_VERSION
        }

        /// This library's benchmarks, as JSON.
        #[unsafe(no_mangle)]
        pub extern "C" fn gpubench_paired_list() -> *mut ::std::ffi::c_char {
            $crate::__private::paired::list()
        }

        /// Runs one benchmark as a side of a paired process.
        ///
        /// # Safety
        /// As `gpubench_core::__private::paired::open`.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn gpubench_paired_open(
            request: *const ::std::ffi::c_char,
            ready: $crate::__private::paired::ReadyFn,
            user: *mut ::std::ffi::c_void,
        ) -> *mut ::std::ffi::c_char {
            // SAFETY: the caller's promises, passed on.
            unsafe { $crate::__private::paired::open(request, ready, user) }
        }

        /// Frees a string this library returned.
        ///
        /// # Safety
        /// As `gpubench_core::__private::paired::free`.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn gpubench_paired_free(text: *mut ::std::ffi::c_char) {
            // SAFETY: the caller's promises, passed on.
            unsafe { $crate::__private::paired::free(text) }
        }
    };
}
