//! What `cargo gpubench` prints, end to end against the stand-in harness
//! (`support/fake_harness.rs`): the `--format json` documents (the summaries'
//! `format_version`, the error object) against `docs/schema/`.
#![cfg(unix)]

mod support;

use support::fake_harness::{passed_record, Fake};
use support::{cargo_gpubench, prepare_record, run, Ran};

/// A schema of `docs/schema/`.
fn schema(name: &str) -> jsonschema::Validator {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../docs/schema")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap();
    jsonschema::validator_for(&serde_json::from_str(&text).unwrap())
        .unwrap_or_else(|e| panic!("{} is not a schema: {e}", path.display()))
}

fn assert_valid(schema_name: &str, doc: &serde_json::Value) {
    let v = schema(schema_name);
    let errors: Vec<String> = v
        .iter_errors(doc)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{doc} does not match {schema_name}:\n{}",
        errors.join("\n")
    );
}

fn json(ran: &Ran) -> serde_json::Value {
    serde_json::from_str(&ran.stdout)
        .unwrap_or_else(|e| panic!("stdout is not one JSON document ({e}):\n{}", ran.stdout))
}

/// Five processes a benchmark: the fake's host-bound figures get a verdict only from
/// five on each side.
const FIVE: [&str; 3] = ["--quick", "--processes", "5"];

/// A fake whose baseline `main` holds `passes` and `matmul/64`, and whose `passes`
/// now takes twice as long (beyond the ±50% that is noise on host-bound work).
fn regressed() -> Fake {
    let fake = Fake::new();
    run(fake
        .command()
        .args(FIVE)
        .args(["--save-baseline", "main", "passes", "matmul/64"]))
    .expect_code(0);
    let mut slower = passed_record("passes");
    for s in &mut slower.rounds[0].measurement.as_mut().unwrap().samples {
        s.wall_ns *= 2.0;
        s.host_ns *= 2.0;
    }
    prepare_record(&fake.dir.path().join("bin"), &slower, false);
    fake
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

    // A baseline that is not saved, nothing matched, an unknown side of compare.
    let work = fake.dir.path().join("work");
    let cases: [(Ran, &str); 3] = [
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
