//! The harness protocol: what `cargo gpubench` and a bench executable agree on when the
//! subcommand runs one benchmark in a process of its own (`<exe> --bench --exact <id>`).

/// The environment variable naming the directory the harness writes its record to.
pub const RECORD_DIR_VAR: &str = "GPUBENCH_RECORD_DIR";

/// The environment variable holding which process of a benchmark this is:
/// `1` for the first. From process 2 on the harness leaves out the diagnostics one
/// process already recorded (naive loops, the hidden-sync probe).
pub const PROCESS_VAR: &str = "GPUBENCH_ROUND";

/// The environment variable holding the git commit a record is of, set by `cargo
/// gpubench` when the benchmarks were built elsewhere (a run from an archive); empty
/// for none. Without it the harness asks `git rev-parse HEAD` in its directory.
pub const GIT_COMMIT_VAR: &str = "GPUBENCH_GIT_COMMIT";

/// The environment variable the harness reads `--device` from. `cargo gpubench`
/// lists a bench executable with it set to the device the run measures on, since a
/// benchmark's arguments may depend on the device (`gpubench_core::bench_device`);
/// a bench that is not a gpubench harness ignores it, where it would refuse the
/// argument.
pub const DEVICE_VAR: &str = "GPUBENCH_DEVICE";

/// The environment variable holding the intra-op threads of the baseline a run is
/// compared with (or saves over), set by `cargo gpubench`: a benchmark on the CPU
/// device gets them when neither `GPUBENCH_CPU_THREADS` nor `OMP_NUM_THREADS` sets
/// them, so the run measures as its baseline did. Without it a harness takes
/// [`crate::host::default_cpu_threads`].
pub const BASELINE_CPU_THREADS_VAR: &str = "GPUBENCH_BASELINE_CPU_THREADS";

/// The environment variable (and `--cpu-threads`) that sets libtorch's intra-op
/// threads on the CPU device.
pub const CPU_THREADS_VAR: &str = "GPUBENCH_CPU_THREADS";

/// The environment variable (and the harness's `--capacity-probe`) that makes a
/// harness run the capacity benchmark named by its exact filter once at this size,
/// writing a record with id `<name>/<size>`: one probe of `cargo gpubench capacity`.
pub const CAPACITY_PROBE_VAR: &str = "GPUBENCH_CAPACITY_PROBE";

/// The environment variable (and `--memory-fraction`) that caps the caching
/// allocator at this fraction of the device's memory (CUDA's
/// `setMemoryFraction`), so a capacity search fits in less memory and its probes
/// are quick.
pub const MEMORY_FRACTION_VAR: &str = "GPUBENCH_MEMORY_FRACTION";

/// The environment variable (and `--memory-history`) that records where each block
/// is allocated, so an out-of-memory snapshot names it.
pub const MEMORY_HISTORY_VAR: &str = "GPUBENCH_MEMORY_HISTORY";

/// The environment variable (and `--memory-peak-snapshot`) that traces a stretch of
/// calls after the samples and records the allocator's state at its peak.
pub const MEMORY_PEAK_SNAPSHOT_VAR: &str = "GPUBENCH_MEMORY_PEAK_SNAPSHOT";

/// The exit code of a harness that measured a failure and wrote its record
/// (libtest's code for a failed test).
pub const EXIT_BENCHMARK_FAILED: i32 = 101;

/// The exit code of a harness given bad usage or setup (libtest's).
pub const EXIT_USAGE: i32 = 2;

/// Set (to any value) by `cargo gpubench` when it lists an executable's benchmarks: a
/// gpubench harness then prints [`handshake_line`] first, which tells it apart from
/// a criterion or libtest bench that answers `--list` too.
pub const HANDSHAKE_VAR: &str = "GPUBENCH_HANDSHAKE";

/// The version of this protocol, in the handshake line.
pub const PROTOCOL_VERSION: u32 = 1;

/// The line a gpubench harness prints first on stdout when [`HANDSHAKE_VAR`] is set;
/// it does not end in `: benchmark`, so libtest's terse-list readers skip it.
pub fn handshake_line() -> String {
    format!("gpubench-harness protocol {PROTOCOL_VERSION}")
}

/// Whether `stdout` of a `--list` holds the handshake of a gpubench harness.
pub fn is_handshake(stdout: &str) -> bool {
    stdout.lines().any(|l| l.trim_end() == handshake_line())
}

/// Options of `cargo gpubench` that a bench executable does not take, and that people
/// pass to `cargo bench --` (criterion takes `--save-baseline` and `--baseline`
/// there): a harness given one says it is `cargo gpubench`'s, with the command that
/// takes it, instead of rejecting it as an unknown option.
pub const SUBCOMMAND_OPTIONS: [&str; 9] = [
    "--save-baseline",
    "--baseline",
    "--fail-on",
    "--gate-on",
    "--processes",
    "--out-dir",
    "--baselines-dir",
    "--partition",
    "--no-report",
];
