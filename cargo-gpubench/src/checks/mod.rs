//! Checks on the workspace's own sources, run as unit tests so they fail CI: each
//! crate's modules import only lower layers (where its `lib.rs` has a layer table),
//! no crate's modules import each other in a circle, and no block of code is written
//! twice.

mod circles;
mod duplicates;
mod layering;
mod sources;
