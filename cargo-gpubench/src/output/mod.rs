//! What a user reads: the terminal table and the JSON document ([`terminal`]), the
//! Markdown summary for pull requests ([`markdown`]) and the HTML report ([`html`]).

pub mod html;
pub mod markdown;
pub mod terminal;
