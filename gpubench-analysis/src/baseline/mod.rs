//! Saved baselines: the committed on-disk format ([`file`]), the store under
//! `gpubench/baselines/<name>/` ([`store`]), a run judged against a baseline
//! ([`judge`]) on the metrics of [`metric`], a head judged against its base paired
//! in one process ([`paired`]), the evidence one side lacks ([`missing`]), and
//! whether the outcome should fail CI ([`gate`]).
//!
//! # Format
//!
//! One pretty-printed JSON file per benchmark,
//! `gpubench/baselines/<name>/<file_stem_for_id(id)>.json`, holding
//! `format_version`, `id`, the `fingerprint`, the measurement `config`, the
//! per-iteration times of each process (`processes`: wall, host and, when measured,
//! device; ns; with each energy window's joules per call, `energy_j`, where the GPU
//! has the counter) and the primary timer's `estimates`. Files are made for clean git diffs:
//! keys come from structs, so their order is fixed; every time is rounded to
//! [`SIGNIFICANT_DIGITS`] significant digits (far below the ~1% noise of a GPU timing,
//! and short enough to read), and estimates are computed from the rounded samples, so
//! loading and re-saving a baseline reproduces it byte for byte. A version 1 file (from
//! before processes were kept apart) is read as one process; a comparison with it is
//! ambiguous until it is saved again.

#[cfg(test)]
mod energy_tests;
mod file;
mod gate;
mod judge;
#[cfg(test)]
mod memory_tests;
mod metric;
mod missing;
mod paired;
mod store;
#[cfg(test)]
mod tests;

pub use file::*;
pub use gate::*;
pub use judge::*;
pub use metric::*;
pub use missing::*;
pub use paired::*;
pub use store::*;
