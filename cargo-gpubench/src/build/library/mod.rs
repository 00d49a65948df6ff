//! A revision's bench targets built as loadable libraries for `cargo gpubench ab`:
//! each bench target becomes a `cdylib` crate that includes its source and exports
//! the C entry points of [`gpubench_record::paired`], so a driver process can load
//! base and head side by side. A bench executable cannot be loaded that way (tch's
//! C++ error slot is a thread-local whose TLS model is wrong in an executable
//! loaded as a library); a `cdylib` can.
//!
//! | step | where |
//! |---|---|
//! | read the revision, write the crates: [`prepare`] → [`LibraryPlan`] | [`plan`], [`manifest`] |
//! | build them: [`LibraryPlan::command`], [`LibraryPlan::build`] → [`LibraryBuild`] | [`compile`], [`messages`] |
//! | why a revision's libraries could not be built: [`LibraryError`] | [`error`] |
//! | when pairing in one process cannot work: bench executables | [`fallback`] |
//! | copy them out for one run, under the target directory's build lock | [`run_copy`] |
//! | carry them to a machine without cargo | [`export`] |
//!
//! The crates of one revision form a workspace of their own under the target
//! directory, written by every `ab` under the build lock and removed once built
//! ([`LibraryPlan::remove_crates`]):
//!
//! ```text
//! <target-dir>/gpubench/ab/libs/<revision-key>/   `working-tree` or 12 hex digits
//!     Cargo.toml             [workspace] of the members, with the revision's
//!                            [patch], [replace] and [profile] and its resolver
//!     Cargo.lock             the revision's, so versions resolve as its build does
//!     <package>-<target>/
//!         Cargo.toml         package gpubench-ab-<revision-key>-<package>-<target>
//!         lib.rs             #[path = "<bench source>"] mod bench; export_paired!()
//! ```
//!
//! They are built with `cargo build --profile bench` (the profile `cargo bench`
//! uses) into the workspace's own target directory, so both revisions reuse the
//! dependency builds a run made (tch and torch-sys take minutes); the package name
//! carries the revision key so the two revisions' libraries are different files.
//! Cargo runs in the revision's workspace root, so its `.cargo/config.toml` applies.
//!
//! A bench source included as a module behaves as it does as a crate root, with
//! these exceptions, which fail the library's build or change what the code reads
//! (then `ab` falls back to separate processes, [`fallback`]):
//! * `crate::` paths name the library's root, not the bench file's: a bench whose
//!   modules reach each other through `crate::` does not compile as a library.
//! * `env!`/`option_env!` read cargo's variables about the package
//!   (`CARGO_MANIFEST_DIR`, `CARGO_PKG_*`, `CARGO_CRATE_NAME`) as the bench target
//!   sees them (`lib.rs` shadows those macros), but `std::env!` written out, other
//!   variables, and `OUT_DIR` of the package's build script read the library's.
//! * Crate-level attributes of the bench file (`#![feature]`, `#![no_std]`) do not
//!   apply to the crate.
//! * The package's features are the default ones, as in `cargo bench` without
//!   `--features`.

pub mod compile;
pub mod error;
pub mod export;
pub mod fallback;
pub mod manifest;
pub mod messages;
pub mod plan;
pub mod run_copy;

use std::path::PathBuf;

pub use compile::LibraryBuild;
pub use error::LibraryError;
pub use plan::{prepare, LibraryPlan, PlannedLibrary};

/// Where the libraries' crates go, under the target directory.
pub const LIBS_DIR: &str = "gpubench/ab/libs";

/// A bench target built as a loadable library.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct BenchLibrary {
    /// Its package.
    pub package: String,
    /// The bench target's name.
    pub target: String,
    /// The `cdylib`, for [`crate::execute::paired::library::PairedLibrary::load`].
    pub path: PathBuf,
}
