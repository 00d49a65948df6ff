//! A revision's bench code loaded as a library for pairing: the entry points of
//! [`gpubench_record::paired`] looked up and checked, its benchmarks listed, and a
//! benchmark opened with a Rust closure as the driver's `ready` callback.

use std::ffi::{c_char, c_void, CStr, CString};
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use gpubench_record::paired::{
    AbiEnergyWindow, AbiSide, AbiSideV1, FreeFn, ListFn, OpenFn, PairedBenchmark, PairedError,
    PairedRequest, VersionFn, ABI_VERSION, ENERGY_ABI_VERSION, ENERGY_WINDOW_NONE, MIN_ABI_VERSION,
    SYMBOL_FREE, SYMBOL_LIST, SYMBOL_OPEN, SYMBOL_VERSION,
};
use gpubench_record::record::RawRecord;
use thiserror::Error;

/// Why a library cannot take part in a paired process.
#[derive(Debug, Error)]
pub enum LibraryError {
    /// The loader refused it.
    #[error("failed to load {path}: {reason}")]
    Load {
        /// The library.
        path: String,
        /// The loader's words.
        reason: String,
    },
    /// It lacks an entry point (built by a gpubench-core from before `ab`).
    #[error("{path} has no `{symbol}`: its gpubench-core predates pairing in one process")]
    NoEntry {
        /// The library.
        path: String,
        /// The missing symbol.
        symbol: &'static str,
    },
    /// It speaks a version of the ABI this build does not.
    #[error("{path} speaks pairing ABI {found}, this cargo-gpubench {oldest} to {supported}: build both revisions with one gpubench-core version")]
    Version {
        /// The library.
        path: String,
        /// Its version.
        found: u32,
        /// The oldest version this build pairs.
        oldest: u32,
        /// This build's.
        supported: u32,
    },
    /// Its answer was not what the ABI says.
    #[error("{path} answered {what} that cannot be read: {reason}")]
    Answer {
        /// The library.
        path: String,
        /// Which answer.
        what: &'static str,
        /// What is wrong.
        reason: String,
    },
}

/// A loaded library with its entry points.
pub struct PairedLibrary {
    path: PathBuf,
    version: u32,
    list: ListFn,
    open: OpenFn,
    free: FreeFn,
    // Last: the entry points above point into it.
    _library: libloading::Library,
}

/// What opening a benchmark gave.
#[derive(Debug)]
pub enum Opened {
    /// The side's record (passed or failed).
    Record(Box<RawRecord>),
    /// The side could not even start (unknown id, unusable device): why.
    Error(String),
}

impl PairedLibrary {
    /// Loads `path` and checks its ABI version.
    pub fn load(path: &Path) -> Result<Self, LibraryError> {
        let shown = || path.display().to_string();
        // SAFETY: loading runs the library's initialisers; the library is a
        // generated `ab` build of a bench target, made to be loaded here.
        let library =
            unsafe { libloading::Library::new(path) }.map_err(|e| LibraryError::Load {
                path: shown(),
                reason: e.to_string(),
            })?;
        // SAFETY: each symbol is looked up with the type the ABI gives it.
        unsafe {
            let version: VersionFn = symbol(&library, SYMBOL_VERSION, path)?;
            let found = version();
            if !(MIN_ABI_VERSION..=ABI_VERSION).contains(&found) {
                return Err(LibraryError::Version {
                    path: shown(),
                    found,
                    oldest: MIN_ABI_VERSION,
                    supported: ABI_VERSION,
                });
            }
            Ok(PairedLibrary {
                path: path.to_path_buf(),
                version: found,
                list: symbol(&library, SYMBOL_LIST, path)?,
                open: symbol(&library, SYMBOL_OPEN, path)?,
                free: symbol(&library, SYMBOL_FREE, path)?,
                _library: library,
            })
        }
    }

    /// The library's file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The pairing ABI version it speaks.
    pub fn version(&self) -> u32 {
        self.version
    }

    /// Its benchmarks.
    pub fn list(&self) -> Result<Vec<PairedBenchmark>, LibraryError> {
        // SAFETY: the ABI's list function, its result freed by the library.
        let text = unsafe { self.take((self.list)()) };
        if let Ok(e) = serde_json::from_str::<PairedError>(&text) {
            return Err(self.answer("its benchmark list", e.error));
        }
        serde_json::from_str(&text).map_err(|e| self.answer("its benchmark list", e.to_string()))
    }

    /// Runs `request` as one side; `ready` is called with the side once its body
    /// waits in `b.iter…` (never, when it measured itself or failed first). A panic
    /// in `ready` is held across the library's frames and resumed here.
    pub fn open(
        &self,
        request: &PairedRequest,
        ready: &mut dyn FnMut(&AbiSide),
    ) -> Result<Opened, LibraryError> {
        struct User<'a> {
            ready: &'a mut dyn FnMut(&AbiSide),
            version: u32,
            panic: Option<Box<dyn std::any::Any + Send>>,
        }
        unsafe extern "C" fn trampoline(user: *mut c_void, side: *const AbiSide) {
            // SAFETY: `user` is the `User` below, alive for the call.
            let user = unsafe { &mut *user.cast::<User<'_>>() };
            if user.panic.is_some() {
                return;
            }
            // A version-1 side ends before `energy_window`: only its first fields are
            // read, and its energy windows answer that it has none.
            let v1;
            let side = if user.version >= ENERGY_ABI_VERSION {
                // SAFETY: the library's side, whole in its version, valid for the call.
                unsafe { &*side }
            } else {
                // SAFETY: as above, of the fields a version-1 side has.
                let old = unsafe { *side.cast::<AbiSideV1>() };
                v1 = AbiSide {
                    ctx: old.ctx,
                    warm_up: old.warm_up,
                    sample: old.sample,
                    energy_window: no_energy_window,
                };
                &v1
            };
            // Unwinding into the library's frames would abort the process.
            if let Err(p) = panic::catch_unwind(AssertUnwindSafe(|| (user.ready)(side))) {
                user.panic = Some(p);
            }
        }
        let json = CString::new(serde_json::to_string(request).expect("plain data serialises"))
            .expect("JSON holds no NUL");
        let mut user = User {
            ready,
            version: self.version,
            panic: None,
        };
        // SAFETY: the ABI's open function with a NUL-terminated request, a callback
        // of the ABI's type and its user pointer, alive for the call.
        let text = unsafe {
            self.take((self.open)(
                json.as_ptr(),
                trampoline,
                (&mut user as *mut User<'_>).cast(),
            ))
        };
        if let Some(p) = user.panic.take() {
            panic::resume_unwind(p);
        }
        if let Ok(e) = serde_json::from_str::<PairedError>(&text) {
            return Ok(Opened::Error(e.error));
        }
        RawRecord::from_json(
            &text,
            &format!("the record {} answered", self.path.display()),
        )
        .map(|r| Opened::Record(Box::new(r)))
        .map_err(|e| self.answer("a record", e.to_string()))
    }

    /// Copies a string the library returned and frees it.
    ///
    /// # Safety
    /// `text` came from this library's list or open.
    unsafe fn take(&self, text: *mut c_char) -> String {
        if text.is_null() {
            return String::new();
        }
        // SAFETY: a NUL-terminated string of the library's, freed once, by it.
        let copy = unsafe { CStr::from_ptr(text) }
            .to_string_lossy()
            .into_owned();
        unsafe { (self.free)(text) };
        copy
    }

    fn answer(&self, what: &'static str, reason: String) -> LibraryError {
        LibraryError::Answer {
            path: self.path.display().to_string(),
            what,
            reason,
        }
    }
}

/// The energy window of a version-1 side, which has none.
unsafe extern "C" fn no_energy_window(
    _ctx: *mut c_void,
    _steps: u32,
    out: *mut AbiEnergyWindow,
) -> i32 {
    let why = format!(
        "its library speaks pairing ABI {MIN_ABI_VERSION}, which has no energy windows \
         (built by a gpubench-core from before ABI {ENERGY_ABI_VERSION})"
    );
    // SAFETY: the driver passes a valid, writable window.
    unsafe { *out = AbiEnergyWindow::none(&why) };
    ENERGY_WINDOW_NONE
}

/// Looks up `name` as a `T`.
///
/// # Safety
/// `T` is the type the ABI gives the symbol.
unsafe fn symbol<T: Copy>(
    library: &libloading::Library,
    name: &'static str,
    path: &Path,
) -> Result<T, LibraryError> {
    // SAFETY: the caller's promise on `T`.
    unsafe { library.get::<T>(name.as_bytes()) }
        .map(|s| *s)
        .map_err(|_| LibraryError::NoEntry {
            path: path.display().to_string(),
            symbol: name,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_version_1_sides_energy_window_answers_none_saying_why() {
        let mut out = AbiEnergyWindow::default();
        // SAFETY: the stand-in reads no context and writes `out`, ours.
        let code = unsafe { no_energy_window(std::ptr::null_mut(), 3, &mut out) };
        assert_eq!(code, ENERGY_WINDOW_NONE);
        assert!(
            out.reason()
                .contains("pairing ABI 1, which has no energy windows"),
            "{}",
            out.reason()
        );
    }
}
