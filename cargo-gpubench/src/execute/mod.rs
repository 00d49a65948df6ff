//! Running benchmarks: which benchmarks an executable holds ([`listing`]), which of
//! them run ([`select`]) and which part of them this machine runs ([`partition`]),
//! on which devices ([`devices`]) and in which order ([`schedule`]), each process in a
//! process of its own ([`runner`] over [`process`]), and progress while they run
//! ([`progress`]); base and head paired in one process ([`paired`]).

pub(crate) mod devices;
pub(crate) mod listing;
pub mod paired;
pub(crate) mod partition;
pub(crate) mod process;
pub(crate) mod progress;
pub(crate) mod runner;
pub(crate) mod schedule;
pub(crate) mod select;
