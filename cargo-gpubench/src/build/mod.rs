//! Before anything runs: the bench targets of the workspace ([`discover`]), libtorch
//! found or installed ([`libtorch`], [`setup`], [`cargo_config`]) and the targets built ([`compile`]).
//! For `ab`: base and head found and checked out ([`revision`]), and each revision's
//! bench targets built as libraries to load into one process ([`library`]).

pub(crate) mod cargo_config;
pub mod compile;
pub mod discover;
pub mod library;
pub mod libtorch;
pub mod revision;
pub mod setup;

use std::path::PathBuf;

/// The cargo that runs this subcommand (`CARGO`), else `cargo`.
pub(crate) fn cargo() -> PathBuf {
    PathBuf::from(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}
