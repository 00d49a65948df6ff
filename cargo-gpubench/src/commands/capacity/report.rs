//! How capacity searches are shown: the `--format json` document, the Markdown
//! table, and the HTML page with a chart per search.

use std::fmt::Write as _;

use gpubench_analysis::capacity::{
    self, CapacityFinding, CapacityResult, CapacityVerdict, SearchEnd,
};
use gpubench_record::units::format_bytes;

pub(super) fn verdict_word(v: CapacityVerdict) -> &'static str {
    match v {
        CapacityVerdict::Regressed => "regressed",
        CapacityVerdict::Improved => "improved",
        CapacityVerdict::NoChange => "no change",
        CapacityVerdict::NotComparable => "not comparable",
    }
}

/// The `--format json` document (`docs/schema/capacity.schema.json`): every search,
/// the verdicts against the baseline, what it lacked, and the searches that failed.
pub(super) fn json_document(
    results: &[CapacityResult],
    findings: &[capacity::CapacityFinding],
    missing: &[String],
    failed: &[(String, String)],
) -> serde_json::Value {
    serde_json::json!({
        "results": results,
        "findings": findings,
        "missing": missing,
        "failed": failed.iter().map(|(n, e)| serde_json::json!({"name": n, "error": e})).collect::<Vec<_>>(),
    })
}

pub(super) fn markdown(
    results: &[CapacityResult],
    findings: &[CapacityFinding],
    missing: &[String],
) -> String {
    let mut s = String::from(
        "## Capacity\n\n| benchmark | largest that fits | first out of memory | per item | fixed | headroom | probes | vs baseline |\n|---|---:|---:|---:|---:|---:|---:|---|\n",
    );
    for r in results {
        let f = findings.iter().find(|f| f.name == r.name);
        let _ = writeln!(
            s,
            "| `{}` | {} {} | {} | {} | {} | {} | {} | {} |",
            r.name,
            r.unit,
            r.max_size,
            r.first_failing.map_or("–".into(), |h| h.to_string()),
            r.fit.map_or("–".into(), |f| format_bytes(
                f.per_item_bytes.max(0.0).round() as u64
            )),
            r.fit
                .map_or("–".into(), |f| format_bytes(f.fixed_bytes.max(0.0) as u64)),
            r.headroom_bytes.map_or("–".into(), format_bytes),
            r.probes.len(),
            f.map_or("–".into(), |f| format!(
                "{}: {}",
                verdict_word(f.verdict),
                f.reason
            )),
        );
    }
    // What the table has no column for: flaky sizes, probes that crashed or hung,
    // a search that was interrupted or found nothing fitting.
    for r in results {
        let lines = r.report_lines();
        let notes: Vec<&str> = lines
            .iter()
            .skip(1)
            .filter(|l| l.starts_with("  flaky") || l.starts_with("  the probe at"))
            .map(|l| l.trim())
            .collect();
        let end = match r.end {
            SearchEnd::Interrupted => Some("the search was interrupted"),
            SearchEnd::NothingFits => Some("nothing fits, not even 1"),
            SearchEnd::Failed => Some("the search stopped on an error"),
            SearchEnd::Converged | SearchEnd::OutOfProbes => None,
        };
        if notes.is_empty() && end.is_none() {
            continue;
        }
        let _ = writeln!(s, "\n`{}`:", r.name);
        for note in end.into_iter().chain(notes) {
            let _ = writeln!(s, "* {note}");
        }
    }
    for m in missing {
        let _ = writeln!(s, "\nmissing: {m}");
    }
    s
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A page of every result: its lines, finding and chart (`charts`, one per result).
pub(super) fn html_page(
    results: &[CapacityResult],
    charts: &[String],
    findings: &[CapacityFinding],
    missing: &[String],
) -> String {
    let mut s = String::from(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>gpubench capacity</title>\
         <style>body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto}pre{background:#f4f4f4;padding:.5rem}</style>\
         </head><body><h1>Capacity</h1>",
    );
    for (r, chart) in results.iter().zip(charts) {
        let _ = write!(s, "<h2 id=\"{0}\">{0}</h2><pre>", escape(&r.name));
        for line in r.report_lines() {
            let _ = writeln!(s, "{}", escape(&line));
        }
        s.push_str("</pre>");
        if let Some(f) = findings.iter().find(|f| f.name == r.name) {
            let _ = write!(
                s,
                "<p>Against the baseline: <b>{}</b>: {}</p>",
                verdict_word(f.verdict),
                escape(&f.reason)
            );
        }
        s.push_str(chart);
    }
    for m in missing {
        let _ = write!(s, "<p>Missing: {}</p>", escape(m));
    }
    s.push_str("</body></html>\n");
    s
}

/// Peak allocated memory against size: the fitting probes, the fit line, and the
/// limit (failing probes marked on it).
pub(super) fn chart_svg(r: &CapacityResult) -> String {
    let (w, h, pad) = (640.0, 360.0, 56.0);
    let max_x = r.probes.iter().map(|p| p.size).max().unwrap_or(1).max(1) as f64 * 1.05;
    let max_y = r
        .probes
        .iter()
        .filter_map(|p| p.peak_allocated_bytes)
        .max()
        .unwrap_or(1)
        .max(r.limit_bytes.unwrap_or(0))
        .max(1) as f64
        * 1.1;
    let x = |v: f64| pad + v / max_x * (w - 2.0 * pad);
    let y = |v: f64| h - pad - v / max_y * (h - 2.0 * pad);
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" font-family=\"sans-serif\" font-size=\"12\">\
         <rect width=\"{w}\" height=\"{h}\" fill=\"white\"/>\
         <line x1=\"{pad}\" y1=\"{0}\" x2=\"{1}\" y2=\"{0}\" stroke=\"black\"/><line x1=\"{pad}\" y1=\"{pad}\" x2=\"{pad}\" y2=\"{0}\" stroke=\"black\"/>\
         <text x=\"{2}\" y=\"{3}\" text-anchor=\"middle\">{4}</text><text x=\"12\" y=\"{pad}\">peak allocated ({5} at top)</text>",
        h - pad,
        w - pad,
        w / 2.0,
        h - 16.0,
        escape(&r.unit),
        format_bytes(max_y as u64),
    );
    if let Some(limit) = r.limit_bytes {
        let _ = write!(
            s,
            "<line x1=\"{pad}\" y1=\"{0}\" x2=\"{1}\" y2=\"{0}\" stroke=\"#c00\" stroke-dasharray=\"4 3\"/><text x=\"{2}\" y=\"{3}\" fill=\"#c00\">limit {4}</text>",
            y(limit as f64),
            w - pad,
            pad + 4.0,
            y(limit as f64) - 4.0,
            format_bytes(limit)
        );
    }
    if let Some(f) = r.fit {
        let _ = write!(
            s,
            "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#06c\"/>",
            x(0.0),
            y(f.at(0.0)),
            x(max_x),
            y(f.at(max_x))
        );
    }
    for p in &r.probes {
        match p.peak_allocated_bytes {
            Some(b) => {
                let _ = write!(s, "<circle cx=\"{}\" cy=\"{}\" r=\"4\" fill=\"#06c\"><title>{} {}: {}</title></circle>", x(p.size as f64), y(b as f64), escape(&r.unit), p.size, format_bytes(b));
            }
            None => {
                let cy = y(r.limit_bytes.unwrap_or(max_y as u64) as f64);
                let why = p
                    .failure
                    .as_deref()
                    .map_or("out of memory", |f| f.lines().next().unwrap_or_default());
                let _ = write!(s, "<text x=\"{}\" y=\"{}\" fill=\"#c00\" text-anchor=\"middle\">✕<title>{} {}: {}</title></text>", x(p.size as f64), cy + 4.0, escape(&r.unit), p.size, escape(why));
            }
        }
    }
    let _ = write!(
        s,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
        w - pad,
        h - pad + 16.0,
        max_x as u64
    );
    s.push_str("</svg>\n");
    s
}
