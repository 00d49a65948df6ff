//! The tera templates and stylesheet of the report, embedded at build time from the
//! workspace's top-level `templates/` folder (reached through the `templates` symlink of
//! this crate, which `cargo package` follows), and its renders: summary, benchmark page
//! and history page.
//!
//! Every template ends in `.html`, so tera escapes every `{{ value }}`; templates
//! never use `| safe`.

use serde::Serialize;
use tera::{Context, Tera};

use super::input::ReportError;
use super::view::{BenchmarkView, SummaryView};

/// The stylesheet, written as `report.css`.
pub(super) const CSS: &str = include_str!("../../../templates/report.css");

const TEMPLATES: &[(&str, &str)] = &[
    ("base.html", include_str!("../../../templates/base.html")),
    ("index.html", include_str!("../../../templates/index.html")),
    (
        "benchmark.html",
        include_str!("../../../templates/benchmark.html"),
    ),
    ("guide.html", include_str!("../../../templates/guide.html")),
    (
        "history.html",
        include_str!("../../../templates/history.html"),
    ),
    (
        "macros.html",
        include_str!("../../../templates/macros.html"),
    ),
    // Inlined into index.html by `{% include %}`; its text holds no tera tags.
    ("sort.js.html", include_str!("../../../templates/sort.js")),
];

/// The template engine with every template loaded.
pub(super) fn engine() -> Result<Tera, ReportError> {
    let mut tera = Tera::default();
    tera.add_raw_templates(TEMPLATES.iter().copied())
        .map_err(|e| template_error("(loading)", &e))?;
    Ok(tera)
}

/// The summary page.
pub(super) fn render_index(tera: &Tera, summary: &SummaryView) -> Result<String, ReportError> {
    let mut ctx = Context::new();
    ctx.insert("summary", summary);
    ctx.insert("root", "");
    render(tera, "index.html", &ctx)
}

/// One benchmark's page.
pub(super) fn render_page(
    tera: &Tera,
    summary: &SummaryView,
    bench: &BenchmarkView,
) -> Result<String, ReportError> {
    #[derive(Serialize)]
    struct Header<'a> {
        title: &'a str,
        baseline_name: &'a Option<String>,
        generated_at: &'a Option<String>,
    }
    let mut ctx = Context::new();
    ctx.insert(
        "summary",
        &Header {
            title: &summary.title,
            baseline_name: &summary.baseline_name,
            generated_at: &summary.generated_at,
        },
    );
    ctx.insert("bench", bench);
    ctx.insert("root", "../");
    render(tera, "benchmark.html", &ctx)
}

/// The history page of `cargo gpubench history`; `page` is its view.
pub(super) fn render_history(tera: &Tera, page: &impl Serialize) -> Result<String, ReportError> {
    let mut ctx = Context::new();
    ctx.insert("page", page);
    render(tera, "history.html", &ctx)
}

fn render(tera: &Tera, name: &str, ctx: &Context) -> Result<String, ReportError> {
    tera.render(name, ctx).map_err(|e| template_error(name, &e))
}

fn template_error(name: &str, e: &tera::Error) -> ReportError {
    let mut message = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        message.push_str(": ");
        message.push_str(&s.to_string());
        source = s.source();
    }
    ReportError::Template {
        name: name.to_string(),
        message,
    }
}
