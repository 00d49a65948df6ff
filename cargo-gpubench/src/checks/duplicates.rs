//! The check that no block of more than [`MAX_LINES`] lines is written twice in the
//! `src/` of the workspace's crates (in one file, two files or two crates), tests
//! included: white space folded, blank lines and comments left out.

use std::collections::HashMap;

use super::sources::{code, workspace_sources, Crate};

/// The longest block that may stand twice.
const MAX_LINES: usize = 10;

/// A block that stands in two places: `(file, first line, last line)` each, and how
/// many counted lines it has.
#[derive(Debug, PartialEq)]
struct Repeat {
    first: (String, usize, usize),
    again: (String, usize, usize),
    lines: usize,
}

impl std::fmt::Display for Repeat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (a, a0, a1) = &self.first;
        let (b, b0, b1) = &self.again;
        write!(f, "{a}:{a0}-{a1} ~ {b}:{b0}-{b1} ({} lines)", self.lines)
    }
}

/// A file's lines that count: `(line number, text with white space folded)`.
fn counted_lines(code: &str) -> Vec<(usize, String)> {
    code.lines()
        .enumerate()
        .map(|(n, l)| (n + 1, l.split_whitespace().collect::<Vec<_>>().join(" ")))
        .filter(|(_, l)| !l.is_empty())
        .collect()
}

/// Every block of more than [`MAX_LINES`] counted lines of `files` (`(name, code)`)
/// that stands earlier too, as long as it runs.
fn repeats(files: &[(String, String)]) -> Vec<Repeat> {
    let window = MAX_LINES + 1;
    let lines: Vec<Vec<(usize, String)>> = files.iter().map(|(_, c)| counted_lines(c)).collect();
    let block = |file: usize, at: usize| -> Vec<&str> {
        lines[file][at..at + window]
            .iter()
            .map(|(_, l)| l.as_str())
            .collect()
    };
    // Where each block of `window` lines first stands.
    let mut first: HashMap<Vec<&str>, (usize, usize)> = HashMap::new();
    let mut found = Vec::new();
    for (file, these) in lines.iter().enumerate() {
        let mut at = 0;
        while at + window <= these.len() {
            let here = block(file, at);
            match first.get(&here).copied() {
                Some((other, start)) if (other, start) != (file, at) => {
                    // As long as the two places go on alike.
                    let mut len = window;
                    while at + len < these.len()
                        && start + len < lines[other].len()
                        && (other, start + len) != (file, at)
                        && lines[other][start + len].1 == these[at + len].1
                    {
                        len += 1;
                    }
                    let span = |f: usize, s: usize| {
                        (files[f].0.clone(), lines[f][s].0, lines[f][s + len - 1].0)
                    };
                    found.push(Repeat {
                        first: span(other, start),
                        again: span(file, at),
                        lines: len,
                    });
                    at += len;
                }
                Some(_) => at += 1,
                None => {
                    first.insert(here, (file, at));
                    at += 1;
                }
            }
        }
    }
    found
}

/// Blocks in files that other work under way rewrites (issue 37: cargo-gpubench's
/// command-line options with the one settings type, the terminal's tests with the
/// one view model): `(file, file)` of each, a block that stands in three places
/// paired with its first. An entry that no longer occurs fails the check, so the
/// list only shrinks.
const KNOWN: &[(&str, &str)] = &[
    // The one settings type read back from two clap structs of the same options: the
    // bench executable's and cargo-gpubench's, which cannot share one (cargo-gpubench
    // does not link gpubench-core, and gpubench-record has no clap).
    ("gpubench-core/src/cli.rs", "cargo-gpubench/src/cli/run.rs"),
];

#[test]
fn no_block_of_more_than_ten_lines_is_written_twice() {
    let mut files = Vec::new();
    for (name, src) in workspace_sources() {
        let krate = Crate::read(&src);
        for file in &krate.files {
            let path = format!("{name}/src/{}", file.relative.display());
            files.push((path, code(&file.text)));
        }
    }
    let found = repeats(&files);
    let is_known = |r: &Repeat| {
        let (a, b) = (r.first.0.as_str(), r.again.0.as_str());
        KNOWN.contains(&(a, b)) || KNOWN.contains(&(b, a))
    };
    let new: Vec<String> = found
        .iter()
        .filter(|r| !is_known(r))
        .map(Repeat::to_string)
        .collect();
    assert!(
        new.is_empty(),
        "blocks written twice (fold each into one piece both places use):\n{}",
        new.join("\n")
    );
    for (a, b) in KNOWN {
        assert!(
            found.iter().any(|r| is_known(r)
                && [r.first.0.as_str(), r.again.0.as_str()].contains(a)
                && [r.first.0.as_str(), r.again.0.as_str()].contains(b)),
            "{a} and {b} no longer share a block: take them out of KNOWN"
        );
    }
}

#[test]
fn the_check_finds_a_planted_block_and_leaves_short_ones_alone() {
    let body: Vec<String> = (0..11).map(|n| format!("let x{n} = f({n});")).collect();
    let eleven = body.join("\n");
    let ten = body[..10].join("\n");
    let indented = body
        .iter()
        .map(|l| format!("        {}", l.replace(' ', "  ")))
        .collect::<Vec<_>>()
        .join("\n\n// a comment line is not code\n");
    let krate = Crate::of(&[
        ("lib.rs", "mod a;\nmod b;\n#[cfg(test)]\nmod tests;\n"),
        ("a.rs", &format!("fn a() {{\n{eleven}\n}}\n")),
        (
            "b.rs",
            &format!("fn b() {{\n    {ten}\n}}\nfn c() {{\n{indented}\n}}\n"),
        ),
        // Tests count too.
        ("tests.rs", &format!("fn t() {{\n{eleven}\n}}\n")),
    ]);
    let files: Vec<(String, String)> = krate
        .files
        .iter()
        .map(|f| (f.relative.display().to_string(), code(&f.text)))
        .collect();
    let found = repeats(&files);
    assert_eq!(
        found,
        [
            Repeat {
                first: ("a.rs".into(), 2, 13),
                again: ("b.rs".into(), 14, 45),
                lines: 12,
            },
            Repeat {
                first: ("a.rs".into(), 2, 13),
                again: ("tests.rs".into(), 2, 13),
                lines: 12,
            }
        ],
        "the eleven lines and the closing brace after them: {found:?}"
    );
    assert_eq!(found[0].to_string(), "a.rs:2-13 ~ b.rs:14-45 (12 lines)");
}
