//! End-to-end tests on real cargo workspaces that build with tch: the fixture
//! workspaces, archives, `ab` on a two-commit repository and in the README's
//! layout, plain cargo after setup, the README's benchmark and the CI gate on a planted slowdown. One test binary, so
//! the crate and its dependencies are linked once.

#[path = "../support/mod.rs"]
mod support;

use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

/// The machine the tests share. The tests that judge timings (a planted slowdown's
/// verdict, `ab`'s) hold it alone, so no build runs beside their measurements, as when
/// each file was a test binary of its own; the others share it.
static MACHINE: RwLock<()> = RwLock::new(());

/// The machine to one test alone, for measuring (a failed test's hold is released).
fn measuring() -> RwLockWriteGuard<'static, ()> {
    MACHINE.write().unwrap_or_else(|e| e.into_inner())
}

/// The machine beside other tests that build and run but judge no timing.
fn sharing() -> RwLockReadGuard<'static, ()> {
    MACHINE.read().unwrap_or_else(|e| e.into_inner())
}

mod ab_build;
mod ab_layout;
mod archive;
mod fixture_workspace;
mod plain_cargo;
mod planted_slowdown;
mod readme_workspace;
