//! Running benchmarks: which benchmarks an executable holds ([`listing`]), which of
//! them run ([`select`]) and which part of them this machine runs ([`partition`]),
//! each round in a process of its own ([`runner`] over
//! [`process`]), and progress while they run ([`progress`]).

pub mod listing;
pub mod partition;
pub mod process;
pub mod progress;
pub mod runner;
pub mod select;
