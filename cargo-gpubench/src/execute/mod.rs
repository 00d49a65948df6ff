//! Running benchmarks: which benchmarks an executable holds ([`listing`]), which of
//! them run ([`select`]) and which part of them this machine runs ([`partition`]),
//! on which devices ([`devices`]) and in which order ([`schedule`]), each round in a
//! process of its own ([`runner`] over [`process`]), and progress while they run
//! ([`progress`]); base and head paired in one process ([`paired`]).

pub mod devices;
pub mod listing;
pub mod paired;
pub mod partition;
pub mod process;
pub mod progress;
pub mod runner;
pub mod schedule;
pub mod select;
