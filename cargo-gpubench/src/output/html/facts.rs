//! A labelled fact of a benchmark page (label, value, detail), as kernels and the
//! page list them.

use serde::Serialize;

/// A label and a value, with an optional explanation.
#[derive(Debug, Clone, Serialize)]
pub(super) struct Fact {
    /// What.
    pub label: String,
    /// The figure.
    pub value: String,
    /// A smaller note (interval, meaning), or empty.
    pub detail: String,
}

pub(super) fn fact(label: &str, value: impl Into<String>, detail: impl Into<String>) -> Fact {
    Fact {
        label: label.into(),
        value: value.into(),
        detail: detail.into(),
    }
}
