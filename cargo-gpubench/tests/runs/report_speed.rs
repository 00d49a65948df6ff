//! How long rendering a large report takes: 200 benchmarks of 100 samples each,
//! compared with a baseline. Prints the time; fails only when it is far beyond the
//! target of a few seconds (debug builds are several times slower than release).

use std::time::{Duration, Instant};

use cargo_gpubench::testing::output::html::render;

#[test]
fn rendering_200_benchmarks_takes_seconds() {
    let input = crate::fixtures::large_input(200);
    let dir = tempfile::tempdir().unwrap();
    let start = Instant::now();
    let index = render(&input, dir.path()).unwrap();
    let elapsed = start.elapsed();
    let profile = if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    };
    println!(
        "rendered {} benchmarks ({} files) in {:.2} s ({profile} build)",
        index.pages.len(),
        index.files.len(),
        elapsed.as_secs_f64()
    );
    assert_eq!(index.pages.len(), 200);
    let limit = if cfg!(debug_assertions) {
        Duration::from_secs(120)
    } else {
        Duration::from_secs(20)
    };
    assert!(elapsed < limit, "rendering 200 benchmarks took {elapsed:?}");
}
