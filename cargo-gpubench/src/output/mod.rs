//! What a user reads: the run's summary as data, printed as JSON ([`json`]), the
//! terminal table ([`terminal`]), the Markdown summary for pull requests
//! ([`markdown`]) and the HTML report ([`html`]), each laid out from one view model
//! ([`view`]); how much is printed, and in colour or not, is [`crate::console`].

pub(crate) mod eager_compiled;
pub(crate) mod exports;
pub(crate) mod history;
pub mod html;
pub(crate) mod json;
pub(crate) mod markdown;
pub(crate) mod terminal;
pub(crate) mod view;
