//! The bash of a `run:` script, as far as finding its `cargo gpubench` commands needs:
//! words and quotes, line continuations, `;`/`&&`/`||`/`|` and the keywords of `if`,
//! redirections, variable and array assignments, and the expansion of `$NAME`,
//! `${NAME}` and `"${NAME[@]}"` in a command's words. A variable assigned in several
//! branches holds each value, and a command is expanded once for every combination,
//! so each branch's command line is checked. What the checks cannot expand (command
//! substitution, `$?`, an unknown variable) in a gpubench command is an error.

use std::collections::BTreeMap;

/// A simple command: its words as written (quotes kept).
pub type Command = Vec<String>;

/// A variable's possible values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// `NAME=word` (the word as written).
    Scalar(String),
    /// `NAME=(word ...)` (the words as written).
    Array(Vec<String>),
}

/// A script split into simple commands, with what it assigns.
#[derive(Debug, Clone, Default)]
pub struct Script {
    /// The commands, in order, without keywords, assignments or redirections.
    pub commands: Vec<Command>,
    /// Every value each variable is given anywhere in the script.
    pub assigned: BTreeMap<String, Vec<Value>>,
}

const KEYWORDS: &[&str] = &[
    "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "!", "{", "}",
];

/// Ends the command whose words were read: keywords, assignments and redirections
/// out, assignments recorded.
fn finish(words: &mut Vec<String>, out: &mut Script) {
    let mut cmd: Command = Vec::new();
    let mut iter = words.drain(..);
    while let Some(w) = iter.next() {
        if is_redirection(&w) {
            // `>> file`: the target goes too; `2>&1` has none.
            if !w.contains('&') {
                iter.next();
            }
            continue;
        }
        if cmd.is_empty() {
            if KEYWORDS.contains(&w.as_str()) {
                continue;
            }
            if let Some(name) = assignment_name(&w) {
                let value = match w.strip_prefix(&format!("{name}=(")) {
                    Some(items) => {
                        Value::Array(split_words(items.strip_suffix(')').unwrap_or(items)))
                    }
                    None => Value::Scalar(w[name.len() + 1..].to_string()),
                };
                out.assigned
                    .entry(name.to_string())
                    .or_default()
                    .push(value);
                continue;
            }
        }
        cmd.push(w);
    }
    if !cmd.is_empty() {
        out.commands.push(cmd);
    }
}

/// Splits `script` into commands.
pub fn parse(script: &str) -> Result<Script, String> {
    let mut out = Script::default();
    let mut words: Vec<String> = Vec::new();
    let mut chars = script.chars().peekable();
    let mut word = String::new();
    let mut in_word = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'\n') => {
                chars.next();
            }
            '\\' => {
                word.push(c);
                if let Some(n) = chars.next() {
                    word.push(n);
                }
                in_word = true;
            }
            '#' if !in_word => {
                for n in chars.by_ref() {
                    if n == '\n' {
                        break;
                    }
                }
                finish(&mut words, &mut out);
            }
            ' ' | '\t' => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\n' | ';' | '&' | '|' => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
                // `2>&1` is a redirection, not a separator.
                if c == '&' && words.last().is_some_and(|w| w.ends_with('>')) {
                    let last = words.last_mut().unwrap();
                    last.push('&');
                    while let Some(d) = chars.peek().copied().filter(char::is_ascii_digit) {
                        last.push(d);
                        chars.next();
                    }
                    continue;
                }
                if (c == '&' || c == '|') && chars.peek() == Some(&c) {
                    chars.next();
                }
                finish(&mut words, &mut out);
            }
            '\'' => {
                word.push(c);
                loop {
                    let n = chars.next().ok_or("an unclosed ' quote")?;
                    word.push(n);
                    if n == '\'' {
                        break;
                    }
                }
                in_word = true;
            }
            '"' => {
                word.push(c);
                read_double_quoted(&mut chars, &mut word)?;
                in_word = true;
            }
            '$' if chars.peek() == Some(&'(') => {
                word.push(c);
                read_balanced(&mut chars, &mut word, '(', ')')?;
                in_word = true;
            }
            '$' if chars.peek() == Some(&'{') => {
                word.push(c);
                read_balanced(&mut chars, &mut word, '{', '}')?;
                in_word = true;
            }
            '(' if in_word && word.ends_with('=') && assignment_name(&word).is_some() => {
                // NAME=( ... ): the array's words, up to the closing parenthesis.
                word.push(c);
                read_balanced_rest(&mut chars, &mut word, '(', ')')?;
            }
            '>' | '<' => {
                if in_word && !word.chars().all(|d| d.is_ascii_digit()) {
                    words.push(std::mem::take(&mut word));
                }
                word.push(c);
                if chars.peek() == Some(&'>') {
                    word.push(chars.next().unwrap());
                }
                words.push(std::mem::take(&mut word));
                in_word = false;
            }
            _ => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(word);
    }
    finish(&mut words, &mut out);
    Ok(out)
}

fn read_double_quoted(
    chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
    word: &mut String,
) -> Result<(), String> {
    loop {
        let n = chars.next().ok_or("an unclosed \" quote")?;
        word.push(n);
        match n {
            '\\' => word.push(chars.next().ok_or("a \\ at the end")?),
            '"' => return Ok(()),
            '$' if chars.peek() == Some(&'(') => read_balanced(chars, word, '(', ')')?,
            _ => {}
        }
    }
}

/// Reads `open ... close` (the opening one next), nested and quoted.
fn read_balanced(
    chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
    word: &mut String,
    open: char,
    close: char,
) -> Result<(), String> {
    word.push(chars.next().expect("the caller peeked the opening one"));
    read_balanced_rest(chars, word, open, close)
}

/// Reads up to the `close` matching an `open` already read.
fn read_balanced_rest(
    chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
    word: &mut String,
    open: char,
    close: char,
) -> Result<(), String> {
    let mut depth = 1;
    while depth > 0 {
        let n = chars.next().ok_or(format!("an unclosed {open}"))?;
        word.push(n);
        match n {
            '"' => read_double_quoted(chars, word)?,
            '\'' => loop {
                let q = chars.next().ok_or("an unclosed ' quote")?;
                word.push(q);
                if q == '\'' {
                    break;
                }
            },
            '\\' => word.push(chars.next().ok_or("a \\ at the end")?),
            _ if n == open => depth += 1,
            _ if n == close => depth -= 1,
            _ => {}
        }
    }
    Ok(())
}

fn split_words(text: &str) -> Vec<String> {
    parse(text)
        .map(|s| s.commands.into_iter().flatten().collect())
        .unwrap_or_default()
}

fn is_redirection(w: &str) -> bool {
    let w = w.trim_start_matches(|c: char| c.is_ascii_digit());
    w.starts_with('>') || w.starts_with('<')
}

/// `NAME` of a `NAME=...` word.
fn assignment_name(w: &str) -> Option<&str> {
    let (name, _) = w.split_once('=')?;
    let mut chars = name.chars();
    let first = chars.next()?;
    ((first.is_ascii_alphabetic() || first == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_'))
    .then_some(name)
}

/// A command's words expanded as bash would, once for each combination of the
/// values its variables may hold: `script` for assignments, `env` for the rest.
pub fn expand(
    cmd: &Command,
    script: &Script,
    env: &[(String, String)],
) -> Result<Vec<Vec<String>>, String> {
    let mut names: Vec<String> = Vec::new();
    for w in cmd {
        for name in referenced(w)? {
            if !names.contains(&name) {
                names.push(name);
            }
        }
    }
    let mut choices: Vec<Vec<(String, Value)>> = vec![Vec::new()];
    for name in &names {
        let values: Vec<Value> = match script.assigned.get(name) {
            Some(v) => v.clone(),
            None => match env.iter().rev().find(|(k, _)| k == name) {
                Some((_, v)) => vec![Value::Scalar(quote(v))],
                None => return Err(format!("${name} is neither assigned nor in the env")),
            },
        };
        choices = choices
            .into_iter()
            .flat_map(|chosen| {
                values.iter().map(move |v| {
                    let mut c = chosen.clone();
                    c.push((name.clone(), v.clone()));
                    c
                })
            })
            .collect();
    }
    choices
        .iter()
        .map(|chosen| {
            let mut argv = Vec::new();
            for w in cmd {
                argv.extend(expand_word(w, chosen)?);
            }
            Ok(argv)
        })
        .collect()
}

/// `value` single-quoted, so expanding it takes it as it is.
fn quote(value: &str) -> String {
    format!("'{}'", value.replace('\'', r"'\''"))
}

/// The variable names `$NAME`, `${NAME}` and `${NAME[@]}` in `w`.
fn referenced(w: &str) -> Result<Vec<String>, String> {
    let mut names = Vec::new();
    let chars: Vec<char> = w.chars().collect();
    let mut i = 0;
    let mut single = false;
    while i < chars.len() {
        match chars[i] {
            '\'' => single = !single,
            '\\' if !single => i += 1,
            '$' if !single => {
                let (name, used) = variable_at(&chars[i + 1..]).ok_or_else(|| {
                    format!("cannot expand {w:?}: only $NAME, ${{NAME}} and \"${{NAME[@]}}\" are")
                })?;
                names.push(name.trim_end_matches("[@]").to_string());
                i += used;
            }
            _ => {}
        }
        i += 1;
    }
    Ok(names)
}

/// The variable after a `$`, and how many characters it took.
fn variable_at(rest: &[char]) -> Option<(String, usize)> {
    if rest.first() == Some(&'{') {
        let end = rest.iter().position(|&c| c == '}')?;
        let name: String = rest[1..end].iter().collect();
        let bare = name.strip_suffix("[@]").unwrap_or(&name);
        return valid_name(bare).then_some((name.clone(), end + 1));
    }
    let len = rest
        .iter()
        .take_while(|c| c.is_ascii_alphanumeric() || **c == '_')
        .count();
    let name: String = rest[..len].iter().collect();
    valid_name(&name).then_some((name, len))
}

fn valid_name(name: &str) -> bool {
    name.chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// One word as bash expands it: quotes removed, variables replaced, unquoted values
/// split on whitespace, a quoted `${NAME[@]}` one word per element.
fn expand_word(w: &str, vars: &[(String, Value)]) -> Result<Vec<String>, String> {
    let lookup = |name: &str| {
        vars.iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
            .ok_or_else(|| format!("${name} has no value"))
    };
    // The words so far; `None` until the word has any text (an unquoted empty
    // variable makes no word).
    let mut out: Vec<String> = Vec::new();
    let mut current: Option<String> = None;
    let chars: Vec<char> = w.chars().collect();
    let mut i = 0;
    let mut double = false;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\'' if !double => {
                let end = chars[i + 1..]
                    .iter()
                    .position(|&q| q == '\'')
                    .ok_or("an unclosed ' quote")?;
                current
                    .get_or_insert_with(String::new)
                    .extend(&chars[i + 1..i + 1 + end]);
                i += end + 1;
            }
            '"' => {
                double = !double;
                current.get_or_insert_with(String::new);
            }
            '\\' => {
                i += 1;
                if let Some(&n) = chars.get(i) {
                    current.get_or_insert_with(String::new).push(n);
                }
            }
            '$' => {
                let (name, used) = variable_at(&chars[i + 1..]).ok_or("cannot expand a $")?;
                i += used;
                let is_all = name.ends_with("[@]");
                match lookup(name.trim_end_matches("[@]"))? {
                    Value::Array(items) if is_all && double => {
                        // "${a[@]}": the elements, each a word of its own.
                        let mut items = items
                            .iter()
                            .map(|item| expand_word(item, vars))
                            .collect::<Result<Vec<_>, _>>()?
                            .into_iter()
                            .flatten();
                        if let Some(first) = items.next() {
                            current.get_or_insert_with(String::new).push_str(&first);
                            for item in items {
                                out.extend(current.take());
                                current = Some(item);
                            }
                        }
                    }
                    Value::Array(_) => {
                        return Err(format!(
                            "${name} is an array: write \"${{{}[@]}}\"",
                            name.trim_end_matches("[@]")
                        ))
                    }
                    Value::Scalar(raw) => {
                        let value = expand_word(&raw, vars)?.join(" ");
                        if double {
                            current.get_or_insert_with(String::new).push_str(&value);
                        } else {
                            let mut parts = value.split_whitespace();
                            if let Some(first) = parts.next() {
                                current.get_or_insert_with(String::new).push_str(first);
                            }
                            for part in parts {
                                out.extend(current.take());
                                current = Some(part.to_string());
                            }
                        }
                    }
                }
            }
            _ => current.get_or_insert_with(String::new).push(c),
        }
        i += 1;
    }
    if double {
        return Err(format!("an unclosed \" quote in {w:?}"));
    }
    out.extend(current);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn commands_split_at_separators_keywords_and_continuations() {
        let script = parse(
            "set +e\nif [ -f a ]; then cat a >> \"$OUT\"; fi\n\
             ./x run --a 1 \\\n  --b \"two words\" 2>&1 | tee log && echo 'done; ok' # note\n\
             cp \"$(command -v cargo-gpubench)\" .\n",
        )
        .unwrap();
        let cmds: Vec<String> = script.commands.iter().map(|c| c.join(" ")).collect();
        assert_eq!(
            cmds,
            [
                "set +e",
                "[ -f a ]",
                "cat a",
                "./x run --a 1 --b \"two words\"",
                "tee log",
                "echo 'done; ok'",
                "cp \"$(command -v cargo-gpubench)\" .",
            ]
        );
    }

    #[test]
    fn every_branch_of_an_assignment_is_expanded() {
        let script = parse(
            "if [ \"$E\" = push ]; then\n  save=(--save main --fail-on never)\nelse\n  \
             save=(--fail-on regressed)\nfi\nx merge \"${save[@]}\" --part \"hash:$K/$N\" $FLAGS\n",
        )
        .unwrap();
        let cmd = script.commands.last().unwrap();
        let argvs = expand(
            cmd,
            &script,
            &env(&[("K", "2"), ("N", "4"), ("FLAGS", "-a -b")]),
        )
        .unwrap();
        assert_eq!(
            argvs,
            [
                vec![
                    "x",
                    "merge",
                    "--save",
                    "main",
                    "--fail-on",
                    "never",
                    "--part",
                    "hash:2/4",
                    "-a",
                    "-b"
                ],
                vec![
                    "x",
                    "merge",
                    "--fail-on",
                    "regressed",
                    "--part",
                    "hash:2/4",
                    "-a",
                    "-b"
                ],
            ]
        );
    }

    #[test]
    fn what_cannot_be_expanded_is_an_error() {
        let script = parse("x $(date) \"$UNSET\" ${save} $?\nsave=(a b)\n").unwrap();
        let cmd = &script.commands[0];
        for w in cmd.iter().skip(1) {
            let one = vec!["x".to_string(), w.clone()];
            assert!(expand(&one, &script, &[]).is_err(), "{w} expanded");
        }
    }
}
