//! The reference of every subcommand and option, `docs/guide/reference.md`, written
//! from the clap definitions of this folder, so it says what `--help` says. A test
//! regenerates it and fails when the committed file differs.

use clap::{Arg, Command, CommandFactory};

use super::Cli;

/// Where the reference is kept, from the repository's root.
pub(crate) const PATH: &str = "docs/guide/reference.md";

/// The reference in Markdown: the top level, the options every subcommand takes, then
/// each subcommand with its usage, its description, its options (flag, value,
/// environment variable, default, possible values) and what its `--help` adds after
/// them (exit codes, how names are resolved).
pub(crate) fn markdown() -> String {
    let mut cli = Cli::command();
    // Propagates the global options into the subcommands and adds --help/--version,
    // as parsing does.
    cli.build();
    let mut out = String::from(
        "<!-- Generated from the clap definitions of cargo-gpubench/src/cli/ by \
         cargo-gpubench/src/cli/reference.rs: do not edit. To update, run\n     \
         GPUBENCH_BLESS=1 cargo test -p cargo-gpubench --lib cli::reference -->\n\n\
         # Command-line reference\n\n\
         Every subcommand and option of `cargo gpubench`, as `--help` prints them. Each \
         option also reads the environment variable named beside it; an option on the \
         command line wins over its variable.\n\n",
    );
    // `help` is clap's own: `--help` on each command says the same.
    let subs: Vec<&Command> = cli
        .get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
        .collect();
    out.push_str("Subcommands:\n\n");
    for sub in &subs {
        out.push_str(&format!(
            "* [`{}`](#{}): {}\n",
            sub.get_name(),
            anchor(&format!("cargo gpubench {}", sub.get_name())),
            text(&plain(sub.get_about()))
        ));
    }
    out.push('\n');

    // The top level runs benchmarks: its options are `run`'s, listed there once.
    let run = subs.iter().find(|s| s.get_name() == "run");
    let own: Vec<&Arg> = cli
        .get_arguments()
        .filter(|a| !a.is_global_set())
        .filter(|a| !run.is_some_and(|run| run.get_arguments().any(|r| r.get_id() == a.get_id())))
        .collect();
    let note = run.map(|_| {
        "Without a subcommand it runs benchmarks and takes every option of \
         [`run`](#cargo-gpubench-run)."
    });
    command(&mut out, &cli, "cargo gpubench", note, &own);

    let globals: Vec<&Arg> = cli.get_arguments().filter(|a| a.is_global_set()).collect();
    if !globals.is_empty() {
        out.push_str("## Options of every subcommand\n\n");
        out.push_str("They go before or after the subcommand's name.\n\n");
        arguments(&mut out, &globals);
    }

    for sub in subs {
        let own: Vec<&Arg> = sub.get_arguments().filter(|a| !a.is_global_set()).collect();
        let title = format!("cargo gpubench {}", sub.get_name());
        command(&mut out, sub, &title, None, &own);
    }
    while out.ends_with("\n\n") {
        out.pop();
    }
    out
}

/// One command's section: its title, usage, description (and `note`), options and
/// closing help.
fn command(out: &mut String, cmd: &Command, title: &str, note: Option<&str>, args: &[&Arg]) {
    out.push_str(&format!("## {title}\n\n"));
    let usage = cmd.clone().render_usage().to_string();
    let usage: Vec<&str> = usage
        .trim_start()
        .trim_start_matches("Usage:")
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    out.push_str(&format!("```text\n{}\n```\n\n", usage.join("\n")));
    let about = cmd.get_long_about().or(cmd.get_about());
    for paragraph in plain(about).split("\n\n") {
        if !paragraph.trim().is_empty() {
            out.push_str(&text(paragraph.trim()));
            out.push_str("\n\n");
        }
    }
    if let Some(note) = note {
        out.push_str(note);
        out.push_str("\n\n");
    }
    arguments(out, args);
    let after = cmd.get_after_long_help().or(cmd.get_after_help());
    let after = plain(after);
    if !after.trim().is_empty() {
        out.push_str(&format!("```text\n{}\n```\n\n", after.trim_end()));
    }
}

/// The options, grouped under their help headings as `--help` groups them.
fn arguments(out: &mut String, args: &[&Arg]) {
    let args: Vec<&Arg> = args.iter().copied().filter(|a| !a.is_hide_set()).collect();
    let mut headings: Vec<Option<&str>> = Vec::new();
    for arg in &args {
        let heading = heading_of(arg);
        if !headings.contains(&heading) {
            headings.push(heading);
        }
    }
    // Arguments first, then the options without a heading, then the rest, as --help.
    headings.sort_by_key(|h| match h {
        Some("Arguments") => 0,
        None => 1,
        Some(_) => 2,
    });
    for heading in headings {
        out.push_str(&format!("**{}**\n\n", heading.unwrap_or("Options")));
        for arg in args.iter().filter(|a| heading_of(a) == heading) {
            argument(out, arg);
        }
        out.push('\n');
    }
}

/// The heading `--help` lists `arg` under: `Arguments` for a positional one, else its
/// help heading (`None`: the options without one).
fn heading_of(arg: &Arg) -> Option<&str> {
    if arg.is_positional() {
        Some("Arguments")
    } else {
        arg.get_help_heading()
    }
}

/// One option: its flags and value, its help, then its variable, default and values.
fn argument(out: &mut String, arg: &Arg) {
    let mut flag = String::new();
    if let Some(short) = arg.get_short() {
        flag.push_str(&format!("-{short}"));
    }
    if let Some(long) = arg.get_long() {
        if !flag.is_empty() {
            flag.push_str(", ");
        }
        flag.push_str(&format!("--{long}"));
    }
    let takes_value = arg.get_action().takes_values();
    if takes_value {
        let names: Vec<String> = match arg.get_value_names() {
            Some(names) => names.iter().map(|n| n.to_string()).collect(),
            None => vec![arg.get_id().as_str().to_uppercase()],
        };
        let value = names
            .iter()
            .map(|n| format!("<{n}>"))
            .collect::<Vec<_>>()
            .join(" ");
        if arg.is_positional() {
            flag = value;
        } else {
            flag.push(' ');
            flag.push_str(&value);
        }
        let many = arg.get_num_args().is_some_and(|n| n.max_values() > 1);
        if many || matches!(arg.get_action(), clap::ArgAction::Append) {
            flag.push_str("...");
        }
    }
    let help = plain(arg.get_long_help().or(arg.get_help()));
    let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
    out.push_str(&format!("* `{flag}`"));
    if !help.is_empty() {
        out.push_str(&format!(": {}", text(&help)));
    }
    let mut facts = Vec::new();
    if let Some(env) = arg.get_env().filter(|_| !arg.is_hide_env_set()) {
        facts.push(format!("env `{}`", env.to_string_lossy()));
    }
    let defaults: Vec<String> = arg
        .get_default_values()
        .iter()
        .map(|v| v.to_string_lossy().into_owned())
        .collect();
    if takes_value && !defaults.is_empty() && !arg.is_hide_default_value_set() {
        facts.push(format!("default `{}`", defaults.join(",")));
    }
    let values: Vec<String> = arg
        .get_possible_values()
        .iter()
        .filter(|v| !v.is_hide_set())
        .map(|v| format!("`{}`", v.get_name()))
        .collect();
    if takes_value && !values.is_empty() && !arg.is_hide_possible_values_set() {
        facts.push(format!("one of {}", values.join(", ")));
    }
    if !facts.is_empty() {
        out.push_str(&format!(" ({})", facts.join("; ")));
    }
    out.push('\n');
}

/// A help string without styles.
fn plain(s: Option<&clap::builder::StyledStr>) -> String {
    s.map(|s| s.to_string()).unwrap_or_default()
}

/// Help text as Markdown: outside `code spans`, `<`, `>` and `*` are escaped, so
/// `<run-id>` is not taken for an HTML tag nor `*` for emphasis.
fn text(s: &str) -> String {
    s.split('`')
        .enumerate()
        .map(|(i, part)| {
            if i % 2 == 1 {
                format!("`{part}`")
            } else {
                part.replace('<', "&lt;")
                    .replace('>', "&gt;")
                    .replace('*', "\\*")
            }
        })
        .collect()
}

/// The anchor GitHub gives a heading: lower case, spaces as dashes, no punctuation.
fn anchor(title: &str) -> String {
    title
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn committed_path() -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .expect("cargo-gpubench is inside the workspace")
            .join(PATH)
    }

    #[test]
    fn the_committed_reference_is_the_one_the_command_line_makes() {
        let made = markdown();
        let path = committed_path();
        if std::env::var_os("GPUBENCH_BLESS").is_some() {
            std::fs::write(&path, &made).unwrap();
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        if committed != made {
            let line = committed
                .lines()
                .zip(made.lines())
                .position(|(a, b)| a != b)
                .unwrap_or(committed.lines().count().min(made.lines().count()));
            panic!(
                "{} differs from the command line's --help (first at line {}: committed {:?}, \
                 made {:?}): run `GPUBENCH_BLESS=1 cargo test -p cargo-gpubench --lib \
                 cli::reference` and commit the file",
                path.display(),
                line + 1,
                committed.lines().nth(line),
                made.lines().nth(line),
            );
        }
    }

    #[test]
    fn every_option_of_every_subcommand_is_in_the_reference() {
        let made = markdown();
        let mut cli = Cli::command();
        cli.build();
        for sub in cli.get_subcommands().filter(|s| s.get_name() != "help") {
            let title = format!("## cargo gpubench {}\n", sub.get_name());
            let section = &made[made
                .find(&title)
                .unwrap_or_else(|| panic!("no section {title:?}"))..];
            let section = &section[title.len()..];
            let section = &section[..section.find("\n## ").unwrap_or(section.len())];
            for arg in sub
                .get_arguments()
                .filter(|a| !a.is_hide_set() && !a.is_global_set())
            {
                if let Some(long) = arg.get_long() {
                    assert!(
                        section.contains(&format!("--{long}")),
                        "{title} lacks --{long}"
                    );
                }
                if let Some(env) = arg.get_env() {
                    assert!(
                        section.contains(&format!("env `{}`", env.to_string_lossy())),
                        "{title} lacks the variable of --{:?}",
                        arg.get_long()
                    );
                }
                let help = plain(arg.get_long_help().or(arg.get_help()));
                let first = help
                    .split_whitespace()
                    .take(4)
                    .collect::<Vec<_>>()
                    .join(" ");
                assert!(section.contains(&text(&first)), "{title} lacks {first:?}");
            }
        }
    }

    #[test]
    fn help_text_becomes_markdown_outside_code_spans_only() {
        assert_eq!(
            text("runs/<id>/ and `a<b>` *"),
            "runs/&lt;id&gt;/ and `a<b>` \\*"
        );
        assert_eq!(anchor("cargo gpubench run"), "cargo-gpubench-run");
    }
}
