//! Where a benchmark's panic happened, in words that point at the bench code: a panic
//! inside a dependency (tch's generated wrappers unwrap libtorch's errors) is named by
//! the crate's own path and the first frame of the caller's code, not by a path into
//! cargo's registry.

use std::path::Path;

/// The crates whose frames are not the user's: the standard library, the panic
/// machinery, libtorch's bindings and this harness.
const LIBRARY_CRATES: &[&str] = &[
    "std",
    "core",
    "alloc",
    "backtrace",
    "panic_unwind",
    "tch",
    "torch_sys",
    "gpubench_core",
    "gpubench_record",
    "gpubench_analysis",
    "inventory",
];

/// "at FILE:LINE" for a panic location, with a dependency's path shortened to its
/// crate and version (`tch-0.24.0/src/wrappers/tensor_generated.rs:5719`); when the
/// location lies in a dependency, "…, called from `CALLER` (FILE:LINE)" names the
/// first frame of the bench code on the stack, where there is one.
pub(crate) fn describe(file: &str, line: u32) -> String {
    let Some(short) = dependency_path(file) else {
        return format!("at {file}:{line}");
    };
    match first_own_frame() {
        Some(caller) => format!("in {short}:{line}, called from {caller}"),
        None => format!("in {short}:{line}"),
    }
}

/// `crate-version/path` when `file` lies in cargo's registry or git checkouts (a
/// dependency), `None` for the user's own files.
fn dependency_path(file: &str) -> Option<String> {
    let path = Path::new(file);
    let parts: Vec<_> = path.components().collect();
    // registry/src/<index>/<crate-version>/… or git/checkouts/<repo>/<rev>/…
    let (at, skip) = parts.iter().enumerate().find_map(|(i, c)| {
        let s = c.as_os_str();
        (s == "registry")
            .then_some((i, 3))
            .or((s == "git").then_some((i, 2)))
    })?;
    let rest = parts.get(at + skip..)?;
    if rest.len() < 2 {
        return None;
    }
    let joined: std::path::PathBuf = rest.iter().collect();
    Some(joined.display().to_string())
}

/// The first frame on the current stack whose function is not in a library crate:
/// "`name`" plus " (file:line)" when debug info has the line.
fn first_own_frame() -> Option<String> {
    let mut found = None;
    backtrace::trace(|frame| {
        backtrace::resolve_frame(frame, |symbol| {
            if found.is_some() {
                return;
            }
            let Some(name) = symbol.name() else { return };
            // `{:#}`: without legacy hashes or v0's crate disambiguators.
            let name = as_written(&without_hash(&format!("{name:#}")));
            // A library's function inlined into the user's code can carry a name
            // without its crate (line tables only): its file still says whose it is.
            let libraries = symbol.filename().is_some_and(|f| {
                f.starts_with("/rustc/") || dependency_path(&f.to_string_lossy()).is_some()
            });
            if !is_own(&name) || libraries {
                return;
            }
            let place = match (symbol.filename(), symbol.lineno()) {
                (Some(f), Some(l)) => format!(" ({}:{l})", f.display()),
                _ => String::new(),
            };
            found = Some(format!("`{name}`{place}"));
        });
        found.is_none()
    });
    found
}

/// `a::b::c::h0123456789abcdef` → `a::b::c` (legacy mangling's hash).
fn without_hash(name: &str) -> String {
    match name.rsplit_once("::h") {
        Some((head, hash)) if hash.len() == 16 && hash.chars().all(|c| c.is_ascii_hexdigit()) => {
            head.to_string()
        }
        _ => name.to_string(),
    }
}

/// The bench function's own name where the optimiser inlined it into the wrapper
/// `#[gpu_bench]` generates (`m::__gpubench_cases_f::{{closure}}` → `m::f`).
fn as_written(name: &str) -> String {
    const WRAPPERS: &[&str] = &["__gpubench_cases_", "__gpubench_capacity_"];
    let mut out = Vec::new();
    for part in name.split("::") {
        if part == "{{closure}}"
            && out
                .last()
                .is_some_and(|p: &String| p.starts_with("__gpubench_"))
        {
            continue;
        }
        match WRAPPERS.iter().find_map(|w| part.strip_prefix(w)) {
            Some(bench) => out.push(format!("__gpubench_{bench}")),
            None => out.push(part.to_string()),
        }
    }
    out.iter()
        .map(|p| p.strip_prefix("__gpubench_").unwrap_or(p))
        .collect::<Vec<_>>()
        .join("::")
}

/// Whether a demangled function name belongs to the user's code: not a library
/// crate's, not the runtime's (`__libc_start_main`, `_start`), not a closure shim.
fn is_own(name: &str) -> bool {
    let path = name
        .trim_start_matches(['<', '&'])
        .trim_start_matches("mut ");
    let Some((krate, _)) = path.split_once("::") else {
        return false;
    };
    // A name without its crate's path (debug info of line tables only names an
    // inlined function `trace_unsynchronized<gpubench_core::…>`) is no crate's.
    let is_crate = krate.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    is_crate && !krate.is_empty() && !krate.starts_with('_') && !LIBRARY_CRATES.contains(&krate)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dependency_path_is_shortened_to_the_crate_and_version() {
        let registry = "/home/u/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/\
                        tch-0.24.0/src/wrappers/tensor_generated.rs";
        assert_eq!(
            dependency_path(registry).as_deref(),
            Some("tch-0.24.0/src/wrappers/tensor_generated.rs")
        );
        let git = "/home/u/.cargo/git/checkouts/tch-rs-0123/abcdef0/src/lib.rs";
        assert_eq!(
            dependency_path(git).as_deref(),
            Some("tch-rs-0123/abcdef0/src/lib.rs")
        );
        assert_eq!(dependency_path("benches/suite.rs"), None);
        assert_eq!(dependency_path("/w/my-bench/benches/suite.rs"), None);
    }

    #[test]
    fn the_users_frames_are_told_from_the_libraries() {
        assert!(is_own("my_bench::matmul_sweep::{{closure}}"));
        assert!(is_own("<my_bench::Model as tch::nn::Module>::forward"));
        assert!(!is_own(
            "<tch::wrappers::tensor::Tensor as core::ops::arith::Add>::add"
        ));
        assert!(!is_own("gpubench_core::bencher::Bencher::iter"));
        assert!(!is_own("std::panicking::begin_panic_handler"));
        assert!(!is_own("__libc_start_main"));
        assert!(!is_own("main"));
        assert!(!is_own(
            "trace_unsynchronized<gpubench_core::panic_site::first_own_frame::{closure_env#0}>"
        ));
        assert_eq!(
            without_hash("my_bench::f::h0123456789abcdef"),
            "my_bench::f".to_string()
        );
        assert_eq!(without_hash("my_bench::hx"), "my_bench::hx".to_string());
        assert_eq!(
            as_written("fixture_benches::__gpubench_cases_torch_error::{{closure}}"),
            "fixture_benches::torch_error"
        );
        assert_eq!(as_written("m::f::{{closure}}"), "m::f::{{closure}}");
    }

    #[test]
    fn a_panic_in_the_users_own_file_keeps_its_location() {
        assert_eq!(describe("benches/suite.rs", 12), "at benches/suite.rs:12");
    }
}
