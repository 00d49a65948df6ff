//! Before anything runs: the bench targets of the workspace ([`discover`]), libtorch
//! found or installed ([`libtorch`], [`setup`]) and the targets built ([`compile`]).

pub mod compile;
pub mod discover;
pub mod libtorch;
pub mod setup;
