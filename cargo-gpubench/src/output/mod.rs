//! What a user reads: the run's summary as data, printed as JSON ([`json`]), the
//! terminal table ([`terminal`]), the Markdown summary for pull requests
//! ([`markdown`]) and the HTML report ([`html`]), each laid out from one view model
//! ([`view`]); how much is printed, and in colour or not, is [`crate::console`].

pub mod eager_compiled;
pub mod exports;
pub mod history;
pub mod html;
pub mod json;
pub mod markdown;
pub mod terminal;
pub mod view;
