//! Markdown's building blocks for the summary: tables and lists that fold into
//! `<details>` past a screen's worth, and text, code spans and link targets escaped so
//! that nothing a benchmark name or a message holds can format or break them.

use std::fmt::Write as _;

/// Rows a table has before its unremarkable ones (no change; passed, without a
/// baseline) fold into `<details>`: ten rows are about a screen of a pull request,
/// and past that a regression drowns among rows that say nothing happened. The others
/// (regressed, improved, ambiguous, failed, new, ...) always stay in view.
pub(crate) const TABLE_ROWS_SHOWN: usize = 10;

/// Items a list (failures, notes, new benchmarks, ...) shows before it folds into
/// `<details>` with its count: a handful reads at a glance, more is a list to open.
pub(crate) const LIST_ITEMS_SHOWN: usize = 5;

/// A table row, and whether it may fold away (see [`TABLE_ROWS_SHOWN`]).
pub(super) struct Row {
    pub(super) line: String,
    pub(super) unremarkable: bool,
}

/// `rows` under `head` (the header and rule lines). Past [`TABLE_ROWS_SHOWN`] rows
/// the unremarkable ones move, in order, to a second table folded in `<details>`
/// whose summary `folded` words from their count; the others stay in view.
pub(super) fn fold_table(
    out: &mut String,
    head: &str,
    rows: &[Row],
    folded: impl Fn(usize) -> String,
) {
    let lines = |keep: &dyn Fn(&Row) -> bool| -> String {
        rows.iter()
            .filter(|r| keep(r))
            .map(|r| format!("{}\n", r.line))
            .collect()
    };
    let quiet = rows.iter().filter(|r| r.unremarkable).count();
    if rows.len() <= TABLE_ROWS_SHOWN || quiet == 0 {
        let _ = write!(out, "{head}{}", lines(&|_| true));
        return;
    }
    if quiet < rows.len() {
        let _ = writeln!(out, "{head}{}", lines(&|r| !r.unremarkable));
    }
    let _ = write!(
        out,
        "<details><summary>{}</summary>\n\n{head}{}\n</details>\n",
        folded(quiet),
        lines(&|r| r.unremarkable)
    );
}

/// A bulleted list under `heading` (bold Markdown, e.g. `**Failed:**`), folded into
/// `<details>` with `label` and the count past [`LIST_ITEMS_SHOWN`] items; nothing
/// when `items` is empty. Each item is one line of Markdown without its `- `.
pub(crate) fn list(out: &mut String, heading: &str, label: &str, items: &[String]) {
    let body: String = items.iter().map(|i| format!("- {i}\n")).collect();
    fold(out, heading, label, items.len(), &body);
}

/// `names` run together after `heading` (`**New** (not in the baseline): a, b`),
/// folded as [`list`] folds.
pub(super) fn inline_list(out: &mut String, heading: &str, label: &str, names: &[String]) {
    let body = format!("{}\n", names.join(", "));
    if names.len() <= LIST_ITEMS_SHOWN {
        if !names.is_empty() {
            let _ = write!(out, "\n{heading} {body}");
        }
        return;
    }
    fold(out, heading, label, names.len(), &body);
}

/// Notes each quoted on its own, `> **Note:** …` (with `word`), or, past
/// [`LIST_ITEMS_SHOWN`], one folded list of them.
pub(super) fn quoted(out: &mut String, word: &str, label: &str, items: &[String]) {
    if items.len() <= LIST_ITEMS_SHOWN {
        for item in items {
            let _ = writeln!(out, "\n> **{word}:** {item}");
        }
    } else {
        let body: String = items.iter().map(|i| format!("- {i}\n")).collect();
        details(out, label, items.len(), &body);
    }
}

/// `body` under `heading`, or folded past [`LIST_ITEMS_SHOWN`] items.
fn fold(out: &mut String, heading: &str, label: &str, n: usize, body: &str) {
    if n == 0 {
        return;
    }
    if n <= LIST_ITEMS_SHOWN {
        let _ = write!(out, "\n{heading}\n\n{body}");
    } else {
        details(out, label, n, body);
    }
}

/// `body` folded in `<details>`, its summary `label (n)`: plain text, since GitHub
/// shows a summary's Markdown as it is.
fn details(out: &mut String, label: &str, n: usize, body: &str) {
    let _ = write!(
        out,
        "\n<details><summary>{label} ({n})</summary>\n\n{body}\n</details>\n"
    );
}

/// `url` as a Markdown link target: what would end the link or break the line is
/// percent-encoded.
pub(super) fn link_target(url: &str) -> String {
    let mut out = String::with_capacity(url.len());
    for c in url.trim().chars() {
        match c {
            ' ' => out.push_str("%20"),
            '(' => out.push_str("%28"),
            ')' => out.push_str("%29"),
            '<' => out.push_str("%3C"),
            '>' => out.push_str("%3E"),
            '\n' | '\r' => {}
            _ => out.push(c),
        }
    }
    out
}

/// `s` as Markdown text whose backticked names (kernel names) stay code spans.
pub(super) fn backticked(s: &str) -> String {
    s.split('`')
        .enumerate()
        .map(|(i, part)| if i % 2 == 1 { code(part) } else { text(part) })
        .collect()
}

/// `s` as an inline code span, whatever backticks it holds.
pub(crate) fn code(s: &str) -> String {
    let longest = s.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    let pad = if longest > 0 { " " } else { "" };
    format!("{fence}{pad}{s}{pad}{fence}")
}

/// `s` as an inline code span in a table cell, where a pipe must be escaped even
/// inside code.
pub(crate) fn cell_code(s: &str) -> String {
    code(&s.replace('|', "\\|"))
}

/// `s` as plain Markdown text: characters that would format or break a table are
/// escaped, a line break becomes a space, other control bytes (a terminal's escape
/// sequences) are dropped, and an `@` is followed by a zero-width space, so a commit
/// subject's `@here` or `@someone` notifies nobody.
pub(crate) fn text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '|' | '#' => {
                out.push('\\');
                out.push(c);
            }
            '\n' | '\r' => out.push(' '),
            '@' => out.push_str("@\u{200B}"),
            c if c.is_control() && c != '\t' => {}
            _ => out.push(c),
        }
    }
    out
}
