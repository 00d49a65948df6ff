//! Usage mistakes a user makes before anything runs, each a usage error (exit code
//! 2) that says the fix: no workspace around the current directory, a filter one
//! typo away from a benchmark's name.
#![cfg(unix)]

use crate::support::fake_harness::Fake;
use crate::support::{cargo_gpubench, run};

#[test]
fn outside_a_workspace_is_a_usage_error_that_says_where_to_run() {
    let dir = tempfile::tempdir().unwrap();
    let ran = run(cargo_gpubench().current_dir(dir.path()).arg("gpubench")).expect_code(2);
    assert!(
        ran.stderr
            .contains("is not in a cargo workspace (no Cargo.toml in it or above it)")
            && ran.stderr.contains("--manifest-path"),
        "{}",
        ran.stderr
    );
}

#[test]
fn a_filter_that_matches_nothing_suggests_the_closest_name() {
    let fake = Fake::new();
    let ran = run(fake.command().args(["--no-report", "matmlu"])).expect_code(2);
    assert!(
        ran.stderr
            .contains("no benchmark matches the filter `matmlu`")
            && ran.stderr.contains("did you mean `matmul`?"),
        "{}",
        ran.stderr
    );
    let ran = run(fake.command().args(["--no-report", "--exact", "matmul/46"])).expect_code(2);
    assert!(
        ran.stderr.contains("did you mean `matmul/64`?"),
        "{}",
        ran.stderr
    );
}
