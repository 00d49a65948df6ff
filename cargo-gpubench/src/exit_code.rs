//! The exit codes of `cargo gpubench`, and the error of a usage mistake (which error
//! ends a run with which code is
//! [`crate::error`]).
//!
//! | code | meaning |
//! |------|---------|
//! | 0    | every selected benchmark passed (or `--list` succeeded), and the `--fail-on` gate did not trip |
//! | 1    | at least one benchmark failed: panic, out of memory, crash, timeout, bad exit code |
//! | 2    | usage error or bad input: a bad option, not in a cargo workspace, an unknown package or bench target, no benchmark matched, two benchmarks share an id, a bad or unknown baseline name, a file where a baseline's directory goes, a corrupt or newer baseline, record, manifest or comparison file, a file that is not a gpubench archive or a damaged or newer one |
//! | 3    | the bench targets failed to build |
//! | 4    | regression found: the comparison with the baseline tripped the `--fail-on` gate, on a verdict or on missing evidence (a baseline benchmark not run, gone or not compared, a gated metric one side lacks) that `--allow-missing` does not let pass |
//! | 5    | setup error: libtorch not found (or not the version an archive was built against), cargo or a bench executable could not be run, another run holds the lock, results or the HTML report could not be written; `doctor` found something that makes results unreliable |
//! | 130  | interrupted (Ctrl-C or SIGTERM); finished records and the manifest are kept |
//!
//! CI can gate on these: 1 and 4 are verdicts about the code measured, 2, 3 and 5 are
//! problems with the invocation or the machine.
//!
//! When several verdicts apply, the first of 130, 1, 4, 0 wins: an interrupted run
//! says so; a failed benchmark (1) wins over a regression (4), because a benchmark
//! that did not run cannot be judged and fixing it comes first (the summary still
//! lists every regression). Errors (2, 3, 5) end the invocation with their own code
//! whatever the verdicts, except an HTML report that could not be written: it exits 5
//! only when no verdict (130, 1, 4) applies, since the records are stored and the
//! verdict about them matters more. See [`Exit::of_verdicts`]. `cargo gpubench compare` uses
//! the same codes (1 when the judged side holds a failed benchmark), and so does
//! `cargo gpubench merge` (1 when the merged run holds one or lacks benchmarks of the
//! suite — an input cut short, a `--partition` part missing — unless `--allow-missing
//! not-run`; 130 when an input was interrupted).

/// How a `cargo gpubench` invocation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Everything selected passed.
    Success,
    /// At least one benchmark failed.
    BenchmarkFailed,
    /// Bad options or input.
    Usage,
    /// The bench targets did not build.
    BuildFailed,
    /// The comparison with the baseline tripped the `--fail-on` gate.
    RegressionFound,
    /// The machine or environment is not set up to run benchmarks.
    Setup,
    /// Stopped by Ctrl-C or SIGTERM.
    Interrupted,
}

impl Exit {
    /// The process exit code.
    pub fn code(self) -> u8 {
        match self {
            Exit::Success => 0,
            Exit::BenchmarkFailed => 1,
            Exit::Usage => 2,
            Exit::BuildFailed => 3,
            Exit::RegressionFound => 4,
            Exit::Setup => 5,
            Exit::Interrupted => 130,
        }
    }

    /// The verdict of a run (or of `compare`) that ended without an error: the first
    /// of interrupted, a failed benchmark, a tripped `--fail-on` gate, success.
    pub fn of_verdicts(interrupted: bool, failed: bool, gate_tripped: bool) -> Exit {
        if interrupted {
            Exit::Interrupted
        } else if failed {
            Exit::BenchmarkFailed
        } else if gate_tripped {
            Exit::RegressionFound
        } else {
            Exit::Success
        }
    }

    /// A word for JSON, e.g. `regression_found`.
    pub fn word(self) -> &'static str {
        match self {
            Exit::Success => "success",
            Exit::BenchmarkFailed => "benchmark_failed",
            Exit::Usage => "usage",
            Exit::BuildFailed => "build_failed",
            Exit::RegressionFound => "regression_found",
            Exit::Setup => "setup",
            Exit::Interrupted => "interrupted",
        }
    }
}

/// The exit-code table of `--help`.
pub(crate) const HELP: &str = "\
Exit codes:
  0    every selected benchmark passed (or --list succeeded) and the --fail-on gate
       did not trip
  1    at least one benchmark failed (panic, out of memory, crash, timeout, bad exit code)
  2    usage error or bad input: bad option, not in a cargo workspace, unknown
       package or bench target, no benchmark matched, two benchmarks share an id,
       a bad or unknown baseline name, a file where a baseline's directory goes, a
       corrupt or newer baseline, record, manifest or comparison file, a file that
       is not a gpubench archive or a damaged or newer one
  3    the bench targets failed to build
  4    regression found: the comparison with the baseline tripped --fail-on
       (default: a benchmark regressed), or evidence is missing (a baseline
       benchmark not run, gone or not compared, a gated metric one side lacks)
       that --allow-missing does not let pass
  5    setup error: libtorch not found or not the version an archive was built against,
       cargo or a bench executable could not be run,
       another run holds the lock, results or the HTML report could not be written;
       `doctor`: something found would make results unreliable
  130  interrupted (Ctrl-C or SIGTERM); finished records and the manifest are kept

When several apply: 130 wins over 1, 1 (a benchmark failed) over 4 (regression
found), 4 over 0; the summary lists failures and regressions either way. A report
that could not be written exits 5 only when none of them applies.";

/// A mistake in how `cargo gpubench` was invoked that the option parser cannot see,
/// e.g. a `--exe` path that does not exist.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct UsageError(pub String);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_distinct_and_match_the_help_text() {
        let all = [
            Exit::Success,
            Exit::BenchmarkFailed,
            Exit::Usage,
            Exit::BuildFailed,
            Exit::RegressionFound,
            Exit::Setup,
            Exit::Interrupted,
        ];
        let mut codes: Vec<u8> = all.iter().map(|e| e.code()).collect();
        codes.dedup();
        assert_eq!(codes.len(), all.len());
        for code in codes {
            assert!(
                HELP.lines()
                    .any(|l| l.trim_start().starts_with(&format!("{code} "))),
                "exit code {code} is not documented in --help"
            );
        }
    }

    #[test]
    fn failures_win_over_regressions_and_interruptions_over_both() {
        assert_eq!(Exit::of_verdicts(false, false, false), Exit::Success);
        assert_eq!(Exit::of_verdicts(false, false, true), Exit::RegressionFound);
        assert_eq!(Exit::of_verdicts(false, true, true), Exit::BenchmarkFailed);
        assert_eq!(Exit::of_verdicts(true, true, true), Exit::Interrupted);
        assert!(HELP.contains("1 (a benchmark failed) over 4 (regression\nfound)"));
    }
}
