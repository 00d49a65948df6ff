//! What `cargo gpubench` prints, end to end against the stand-in harness
//! (`support/fake_harness.rs`): `--skip` in a run and in `--list`, how much `-q` and
//! `-v` print, when the summary is coloured, where the Markdown links the report, and
//! the `--format json` documents (the summaries' `format_version`, the error object)
//! against `docs/schema/`.
#![cfg(unix)]

use crate::support::fake_harness::{passed_record, Fake};
use crate::support::{assert_valid, cargo_gpubench, prepare_record, run, schema, Ran};

const ESC: char = '\u{1b}';

fn json(ran: &Ran) -> serde_json::Value {
    serde_json::from_str(&ran.stdout)
        .unwrap_or_else(|e| panic!("stdout is not one JSON document ({e}):\n{}", ran.stdout))
}

/// Five processes a benchmark (the fake's records are of the CPU device, whose work
/// gets a verdict from two a side).
const FIVE: [&str; 3] = ["--quick", "--processes", "5"];

/// A fake whose baseline `main` holds `passes` and `matmul/64`, and whose `passes`
/// now takes twice as long.
fn regressed() -> Fake {
    let fake = Fake::new();
    run(fake
        .command()
        .args(FIVE)
        .args(["--save-baseline", "main", "passes", "matmul/64"]))
    .expect_code(0);
    let mut slower = passed_record("passes");
    for s in &mut slower.processes[0].measurement.as_mut().unwrap().samples {
        s.wall_ns *= 2.0;
        s.host_ns *= 2.0;
    }
    prepare_record(&fake.dir.path().join("bin"), &slower, false);
    fake
}

#[test]
fn skip_leaves_benchmarks_out_of_a_run_and_of_the_list() {
    let fake = Fake::new();
    let ran = run(fake
        .command()
        .args([
            "--list",
            "--skip",
            "matmul",
            "--skip=exits",
            "--skip",
            "fake/p",
        ])
        .env("GPUBENCH_SKIP", "ignored: the flag wins"))
    .expect_code(0);
    assert_eq!(
        ran.stdout,
        "fake/aborts\nfake/no_record\nfake/sleeps\nfake/slow_ignored (ignored)\n"
    );
    // Exactly with --exact: `passes` goes, `matmul/64` (not equal to `matmul`) stays.
    let ran = run(fake.command().args([
        "--quick",
        "--exact",
        "passes",
        "matmul/64",
        "--skip",
        "matmul",
        "--skip",
        "passes",
    ]))
    .expect_code(0);
    assert!(ran.stdout.contains("fake/matmul/64"), "{}", ran.stdout);
    assert!(!ran.stdout.contains("fake/passes"), "{}", ran.stdout);
    assert!(!fake.calls().contains("--exact passes"), "{}", fake.calls());
    // From the environment when no --skip is given.
    let ran = run(fake.command().arg("--list").env("GPUBENCH_SKIP", "fake/pa")).expect_code(0);
    assert_eq!(
        ran.stdout,
        "fake/aborts\nfake/exits_2\nfake/matmul/64\nfake/no_record\nfake/sleeps\nfake/slow_ignored (ignored)\n"
    );
    let ran = run(fake.command().args(["passes", "--skip", "pass"])).expect_code(2);
    assert!(
        ran.stderr
            .contains("--skip `pass` left out all 1 benchmark(s) the filter matched"),
        "{}",
        ran.stderr
    );
}

#[test]
fn quiet_prints_the_verdict_lines_and_nothing_on_progress() {
    let fake = regressed();
    let ran = run(fake
        .command()
        .args(["-q"])
        .args(FIVE)
        .args(["passes", "matmul/64", "panics"]))
    .expect_code(1);
    let lines: Vec<&str> = ran.stdout.lines().collect();
    // In run order: `matmul/64` did not change, so it has no line.
    assert_eq!(
        lines[0],
        "fake/panics: failed (panic: panicked at benches/suite.rs:3: boom)"
    );
    assert!(
        lines[1].starts_with("fake/passes: time regressed +100.0% ["),
        "{}",
        ran.stdout
    );
    assert!(
        lines[2].starts_with("3 benchmarks: 2 passed, 1 failed in "),
        "{}",
        ran.stdout
    );
    assert!(
        lines[3].starts_with("compared with baseline `main`")
            && lines[4].starts_with("regression found"),
        "{}",
        ran.stdout
    );
    assert_eq!(lines.len(), 5, "{}", ran.stdout);
    // No progress, no notes, no report line; the table's header is gone too.
    assert_no_progress(&ran.stderr);
    assert!(!ran.stdout.contains("benchmark  "), "{}", ran.stdout);

    // Quiet before the subcommand, from the environment too.
    let ran = run(cargo_gpubench()
        .current_dir(fake.dir.path().join("work"))
        .args(["-q", "compare", "main", "latest"]))
    .expect_code(1);
    assert!(
        ran.stdout.contains("\nfake/passes: time regressed"),
        "{}",
        ran.stdout
    );
    let ran = run(fake
        .command()
        .args(FIVE)
        .arg("passes")
        .env("GPUBENCH_QUIET", "1"))
    .expect_code(4);
    assert_no_progress(&ran.stderr);
    assert!(
        ran.stdout.starts_with("fake/passes: time regressed"),
        "{}",
        ran.stdout
    );
    // Without -q the same run says all of these.
    let ran = run(fake.command().args(FIVE).arg("passes")).expect_code(4);
    for said in [
        "passed [1/5] fake/passes",
        "gpubench: running 1 benchmark",
        "report: ",
    ] {
        assert!(ran.stderr.contains(said), "{said}: {}", ran.stderr);
    }
}

/// Nothing of what a run says on stderr while it runs and when it ends.
fn assert_no_progress(stderr: &str) {
    for line in stderr.lines() {
        assert!(
            !line.contains(" [1/")
                && !line.starts_with("gpubench: running")
                && !line.starts_with("gpubench: note:")
                && !line.starts_with("report: "),
            "{line:?} in a quiet run's stderr:\n{stderr}"
        );
    }
}

#[test]
fn verbose_shows_each_process_command_and_median() {
    let fake = Fake::new();
    let ran = run(fake.command().args(["-v", "--quick", "--exact", "passes"])).expect_code(0);
    let exe = fake.exe().display().to_string();
    for process in 1..=3 {
        let line = format!("gpubench: process {process} of fake/passes: ");
        let at = ran
            .stderr
            .find(&line)
            .unwrap_or_else(|| panic!("no {line:?} in\n{}", ran.stderr));
        let command = ran.stderr[at + line.len()..].lines().next().unwrap();
        assert!(
            command.contains(&format!("GPUBENCH_ROUND={process} "))
                && command.contains(&format!("{exe} --bench --exact passes --quick")),
            "{command}"
        );
    }
    assert!(
        ran.stdout.contains(
            "processes (the median of each, in the order they ran):\n  fake/passes: 10.04 µs, 10.04 µs, 10.04 µs\n"
        ),
        "{}",
        ran.stdout
    );
    let ran = run(fake.command().args(["--quick", "--exact", "passes"])).expect_code(0);
    assert!(!ran.stderr.contains("process 1 of"), "{}", ran.stderr);
    assert!(
        !ran.stdout.contains("processes (the median"),
        "{}",
        ran.stdout
    );
}

#[test]
fn colour_follows_color_cargo_term_color_and_no_color_and_never_reaches_documents() {
    let fake = regressed();
    let summary = fake.dir.path().join("summary.md");
    let colours = |args: &[&str], env: &[(&str, &str)]| -> bool {
        let mut cmd = fake.command();
        cmd.args(FIVE)
            .args(["--fail-on", "never", "passes"])
            .args(args);
        for (k, v) in env {
            cmd.env(k, v);
        }
        for k in ["NO_COLOR", "CLICOLOR_FORCE", "CARGO_TERM_COLOR", "CLICOLOR"] {
            if !env.iter().any(|(e, _)| e == &k) {
                cmd.env_remove(k);
            }
        }
        let ran = run(&mut cmd).expect_code(0);
        ran.stdout.contains(ESC)
    };
    // A pipe is not a terminal: no colour unless asked.
    assert!(!colours(&[], &[]));
    assert!(colours(&["--color", "always"], &[]));
    assert!(colours(&[], &[("GPUBENCH_COLOR", "always")]));
    assert!(colours(&[], &[("CARGO_TERM_COLOR", "always")]));
    assert!(!colours(
        &[],
        &[("GPUBENCH_COLOR", "never"), ("CARGO_TERM_COLOR", "always")]
    ));
    // `auto` goes by the environment's rules: CLICOLOR_FORCE asks, NO_COLOR forbids.
    assert!(colours(&[], &[("CLICOLOR_FORCE", "1")]));
    assert!(!colours(&[], &[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")]));
    assert!(colours(&["--color=always"], &[("NO_COLOR", "1")]));
    // Never in JSON, Markdown or the summary file, whatever was asked.
    for format in ["json", "markdown"] {
        assert!(
            !colours(&["--color", "always", "--format", format], &[]),
            "{format}"
        );
    }
    let file = summary.display().to_string();
    assert!(colours(
        &["--color", "always", "--summary-file", &file],
        &[]
    ));
    let md = std::fs::read_to_string(&summary).unwrap();
    assert!(md.contains("regressed") && !md.contains(ESC), "{md}");
}

#[test]
fn json_documents_carry_their_format_version_and_errors_are_json_too() {
    let fake = regressed();
    let ran = run(fake
        .command()
        .args(FIVE)
        .args(["--format", "json", "passes"]))
    .expect_code(4);
    let doc = json(&ran);
    assert_eq!(doc["format_version"], 1);
    assert_valid("run-summary.schema.json", &doc);
    let ran = run(cargo_gpubench()
        .current_dir(fake.dir.path().join("work"))
        .args(["compare", "main", "latest", "--format", "json"]))
    .expect_code(4);
    let doc = json(&ran);
    assert_eq!(doc["format_version"], 1);
    assert_eq!(doc["exit"]["verdict"], "regression_found");
    assert_valid("compare-summary.schema.json", &doc);

    // A baseline that is not saved, nothing matched, an unknown side of compare, an
    // unknown run to merge.
    let work = fake.dir.path().join("work");
    let cases: [(Ran, &str); 4] = [
        (
            run(fake
                .command()
                .args(["--format", "json", "--baseline", "nope", "passes"])),
            "nope",
        ),
        (
            run(fake
                .command()
                .args(["--format=json", "nothing_is_called_this"])),
            "nothing_is_called_this",
        ),
        (
            run(cargo_gpubench()
                .current_dir(&work)
                .args(["compare", "main", "gone", "--format", "json"])),
            "`gone`",
        ),
        (
            run(cargo_gpubench()
                .current_dir(&work)
                .args(["merge", "run:nope", "--format", "json"])),
            "`run:nope`",
        ),
    ];
    for (ran, named) in cases {
        let ran = ran.expect_code(2);
        let doc = json(&ran);
        assert_valid("error.schema.json", &doc);
        assert_eq!(doc["error"]["exit_code"], 2, "{doc}");
        assert_eq!(doc["error"]["exit"], "usage", "{doc}");
        let message = doc["error"]["message"].as_str().unwrap();
        assert!(message.contains(named), "{message}");
        // stderr says the same for people.
        assert!(
            ran.stderr.contains(&format!("error: {message}")),
            "{}",
            ran.stderr
        );
    }
    // The error schema can fail: a summary is not an error.
    assert!(!schema("error.schema.json").is_valid(&doc));
    // Without --format json an error is only on stderr.
    let ran = run(fake.command().args(["--baseline", "nope", "passes"])).expect_code(2);
    assert_eq!(ran.stdout, "");
}

#[test]
fn the_markdown_links_the_report_on_its_first_line() {
    let fake = Fake::new();
    let second_line = |ran: Ran| {
        ran.expect_code(0)
            .stdout
            .lines()
            .nth(2)
            .unwrap()
            .to_string()
    };
    let markdown = ["--quick", "--format", "markdown", "--exact", "passes"];
    let url = "https://ci.example.com/artifacts/report/index.html";
    assert_eq!(
        second_line(run(fake
            .command()
            .args(markdown)
            .args(["--report-url", url]))),
        format!("Charts and every figure: [the HTML report]({url}).")
    );
    assert_eq!(
        second_line(run(fake
            .command()
            .args(markdown)
            .env("GPUBENCH_REPORT_URL", url))),
        format!("Charts and every figure: [the HTML report]({url}).")
    );
    let local = second_line(run(fake.command().args(markdown)));
    let index = fake.out_dir().join("report/index.html");
    assert!(index.is_file());
    assert_eq!(
        local,
        format!(
            "The HTML report is at `{}` on the machine that ran this (`--report-url` links it here).",
            index.display()
        )
    );
    let none = second_line(run(fake.command().args(markdown).arg("--no-report")));
    assert!(none.starts_with("**Device:**"), "{none}");
    // The JSON says where it is too.
    let ran =
        run(fake
            .command()
            .args(["--quick", "--format", "json", "passes", "--report-url", url]))
        .expect_code(0);
    assert_eq!(json(&ran)["report_url"], url);
}
