//! The harness protocol: what `cargo gpubench` and a bench executable agree on when the
//! subcommand runs one benchmark in a process of its own (`<exe> --bench --exact <id>`).

/// The environment variable naming the directory the harness writes its record to.
pub const RECORD_DIR_VAR: &str = "GPUBENCH_RECORD_DIR";

/// The environment variable holding which round (process) of a benchmark this is:
/// `1` for the first. From round 2 on the harness leaves out the diagnostics one
/// process already recorded (naive loops, the hidden-sync probe).
pub const ROUND_VAR: &str = "GPUBENCH_ROUND";

/// The exit code of a harness that measured a failure and wrote its record
/// (libtest's code for a failed test).
pub const EXIT_BENCHMARK_FAILED: i32 = 101;

/// The exit code of a harness given bad usage or setup (libtest's).
pub const EXIT_USAGE: i32 = 2;
