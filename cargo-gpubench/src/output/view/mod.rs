//! The view model every output renders: what a run's summary and its comparison say,
//! in words and tones, built once here and laid out by the terminal
//! ([`crate::output::terminal`]), Markdown ([`crate::output::markdown`]) and the HTML
//! report ([`crate::output::html`]). [`metrics`] is each metric's verdict (the one
//! place that reads a comparison's per-metric fields), [`words`] the comparison in
//! words, [`table`] the cells of a row, [`notes`] the notes under the tables, [`drifts`] what the
//! baseline's history adds.

pub mod drifts;
pub mod metrics;
pub mod notes;
pub mod table;
pub mod words;

#[cfg(test)]
mod tests;
