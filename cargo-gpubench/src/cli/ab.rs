//! The options of `cargo gpubench ab`: which two revisions, and the selection,
//! measurement and verdict options a run has.

use std::path::PathBuf;

use clap::builder::BoolishValueParser;
use clap::{ArgAction, Args};
use gpubench_analysis::compare::DEFAULT_PAIRED_NOISE_THRESHOLD;

use super::compare::{parse_noise_threshold, Format, VerdictArgs};
use super::run::{MeasureArgs, ProcessArgs, SelectArgs, TargetArgs};

/// Options of `cargo gpubench ab`.
#[derive(Debug, Clone, Args)]
pub struct AbArgs {
    /// The revision judged against: a commit, branch or tag [default: the merge-base
    /// of HEAD with the default branch (origin/HEAD, else origin/main, origin/master,
    /// main, master)].
    #[arg(
        long,
        value_name = "REV",
        env = "GPUBENCH_AB_BASE",
        help_heading = "Revisions"
    )]
    pub base: Option<String>,

    /// The revision judged [default: the working tree, uncommitted changes included].
    #[arg(
        long,
        value_name = "REV",
        env = "GPUBENCH_AB_HEAD",
        help_heading = "Revisions"
    )]
    pub head: Option<String>,

    /// Measure base and head in processes of their own, interleaved (base, head, head,
    /// base, …), instead of together in one process: what `ab` does by itself when
    /// pairing cannot work. Their verdicts are then a run's, host-bound work needing
    /// a change beyond --host-noise-threshold.
    #[arg(
        long,
        env = "GPUBENCH_AB_SEPARATE_PROCESSES",
        action = ArgAction::SetTrue,
        value_parser = BoolishValueParser::new(),
        help_heading = "Revisions"
    )]
    pub separate_processes: bool,

    /// Build both revisions as loadable libraries into DIR (`base/` and `head/`, each
    /// with its `libraries.json`) and stop, to run them with --base-libraries and
    /// --head-libraries on a machine without cargo, git or the sources.
    #[arg(
        long,
        value_name = "DIR",
        env = "GPUBENCH_AB_EXPORT_LIBRARIES",
        conflicts_with_all = ["base_libraries", "separate_processes"],
        help_heading = "Revisions"
    )]
    pub export_libraries: Option<PathBuf>,

    /// Run from the base's libraries that --export-libraries wrote (DIR/base), with
    /// --head-libraries: no build, no git.
    #[arg(
        long,
        value_name = "DIR",
        env = "GPUBENCH_AB_BASE_LIBRARIES",
        requires = "head_libraries",
        conflicts_with_all = ["base", "head", "separate_processes", "packages", "benches", "manifest_path"],
        help_heading = "Revisions"
    )]
    pub base_libraries: Option<PathBuf>,

    /// Run from the head's libraries that --export-libraries wrote (DIR/head).
    #[arg(
        long,
        value_name = "DIR",
        env = "GPUBENCH_AB_HEAD_LIBRARIES",
        requires = "base_libraries",
        help_heading = "Revisions"
    )]
    pub head_libraries: Option<PathBuf>,

    /// Which benchmarks run.
    #[command(flatten)]
    pub select: SelectArgs,

    /// Measure only part K of N of the selected benchmarks (of the head's), e.g. one
    /// task of a cluster job: `count:K/N` or `hash:K/N` as for a run; the parts'
    /// runs merge into one paired `ab` run (`cargo gpubench merge`).
    #[arg(long, value_name = "count:K/N|hash:K/N", env = "GPUBENCH_PARTITION", value_parser = super::run::parse_partition)]
    pub partition: Option<crate::execute::partition::Partition>,

    /// Which bench targets of which workspace.
    #[command(flatten)]
    pub targets: TargetArgs,

    /// Where each process runs, and its time limit.
    #[command(flatten)]
    pub process: ProcessArgs,

    /// How each process measures (`--processes` and `--quick` have `ab`'s own help,
    /// `PROCESSES_HELP` and `QUICK_HELP`, with its own defaults).
    #[command(flatten)]
    pub measure: MeasureArgs,

    /// Output format on stdout.
    #[arg(
        long,
        value_enum,
        value_name = "FORMAT",
        env = "GPUBENCH_FORMAT",
        default_value_t = Format::Human
    )]
    pub format: Format,

    /// Where the run is stored [default: `<target-dir>/gpubench`, or ./target/gpubench
    /// with --base-libraries].
    #[arg(long, value_name = "DIR", env = "GPUBENCH_OUT_DIR")]
    pub out_dir: Option<PathBuf>,

    /// Do not write the HTML report (`<out-dir>/report/index.html`).
    #[arg(long, env = "GPUBENCH_NO_REPORT", action = ArgAction::SetTrue, value_parser = BoolishValueParser::new())]
    pub no_report: bool,

    /// Noise threshold of a paired verdict (base and head in the same processes),
    /// for every benchmark in place of --noise-threshold, --host-noise-threshold and
    /// --cpu-noise-threshold, which are for drift between processes that pairing
    /// cancels (those apply when base and head run in processes of their own). The
    /// threshold is still at least 1.5 times the spread of the per-process ratios.
    #[arg(
        long,
        value_name = "FRACTION",
        env = "GPUBENCH_PAIRED_NOISE_THRESHOLD",
        default_value_t = DEFAULT_PAIRED_NOISE_THRESHOLD,
        value_parser = parse_noise_threshold,
        help_heading = "Baselines"
    )]
    pub paired_noise_threshold: f64,

    /// How the comparison of head with base decides and gates.
    #[command(flatten)]
    pub verdicts: VerdictArgs,
}

impl AbArgs {
    /// How the head is judged against the base: the verdict options, with the paired
    /// noise threshold.
    pub fn settings(&self) -> crate::compare::VerdictSettings {
        let mut settings = self.verdicts.settings();
        settings.config.paired_noise_threshold = self.paired_noise_threshold;
        settings
    }
}

/// The bench executable's memory options (read from their variables, which a run's
/// processes inherit) that `ab` does not honour: its paired processes measure base
/// and head through their libraries, where no harness reads them.
const UNSUPPORTED_HARNESS_VARS: [(&str, &str); 2] = [
    (
        gpubench_record::protocol::MEMORY_HISTORY_VAR,
        "--memory-history",
    ),
    (
        gpubench_record::protocol::MEMORY_PEAK_SNAPSHOT_VAR,
        "--memory-peak-snapshot",
    ),
];

/// Refuses the harness's memory options set for `ab` (`var` reads the
/// environment), rather than run without them as if they held.
pub(crate) fn refuse_unsupported_harness_vars(
    var: impl Fn(&str) -> Option<std::ffi::OsString>,
) -> Result<(), crate::exit_code::UsageError> {
    let set = |name: &str| {
        var(name).is_some_and(|v| {
            let v = v.to_string_lossy().trim().to_ascii_lowercase();
            !matches!(v.as_str(), "" | "0" | "false" | "no" | "n" | "off")
        })
    };
    match UNSUPPORTED_HARNESS_VARS.iter().find(|(name, _)| set(name)) {
        None => Ok(()),
        Some((name, flag)) => Err(crate::exit_code::UsageError(format!(
            "{name} is set ({flag} of the bench executables), but `cargo gpubench ab` does \
             not honour it: its processes measure base and head through their libraries, \
             which take no allocator history or snapshots. Unset it for `ab`, and run \
             `cargo gpubench` on one revision with it to see what holds memory"
        ))),
    }
}

/// `ab`'s `--processes`, whose default is not a run's
/// ([`gpubench_record::measurement::ProcessPolicy::paired`]).
pub(super) const PROCESSES_HELP: &str = "Processes per benchmark, each giving one paired ratio \
    of head to base: N, or MIN..MAX to let `ab` decide [default: 5..10, going past 5 \
    while the paired change's interval is wider than ±1%; 5 with --quick]";

/// `ab`'s `--quick`.
pub(super) const QUICK_HELP: &str = "Shorter warm-up and measurement bounds and 5 processes \
    per benchmark (for smoke runs and CI)";

/// What `ab --help` says at length.
pub(super) const AB_ABOUT: &str = "Judge a change by its base and head revisions measured side \
    by side: each benchmark's two revisions run in the same process, their samples \
    alternated in balanced blocks (base, head, head, base), so whatever a process adds \
    — the host's dispatch speed, which differs from one process to the next by up to \
    60% on a cloud GPU machine, the clocks it starts at — is shared by both and \
    cancels in their ratio. Each process gives one ratio of head to base; the change, \
    its interval and the verdict come from those ratios over several processes (a \
    paired t-test on their logarithms), with the paired noise threshold \
    (--paired-noise-threshold, 1%) for every benchmark: the drift between processes \
    that the other noise thresholds allow for cancels. Each verdict comes with the \
    smallest change the run could have detected, and a change that is certain but \
    under the threshold is shown as such (its verdict stays no change).\n\n\
    The head is the working tree (or --head REV), the base the merge-base with the \
    default branch (or --base REV), checked out as a git worktree beside the \
    repository (.<repo>.gpubench-ab-<commit>, so relative paths that leave the \
    repository resolve as in the checkout) and removed when `ab` ends; each revision \
    runs in its own checkout. When the two are the same code (one commit, no \
    uncommitted change) there is nothing to compare: `ab` says so and exits 0. Each \
    `ab` loads its own copies of the libraries it built (their SHA-256 in its \
    records), so two `ab`s never measure each other's code. Each revision's bench \
    targets are built as loadable libraries sharing the target directory (the second \
    build reuses the first's dependencies). When that cannot work (a revision whose \
    gpubench-core predates pairing, a library that fails to build or load), base and \
    head run in processes of their own, interleaved, and are judged as a run is judged against a baseline; \
    the output says why. Benchmarks only one revision has are listed: a benchmark the \
    head lacks is missing evidence (gone), one the base lacks is new (every one, when \
    the base has no benchmarks).\n\n\
    The run is stored like a run (the head's records, the base's under base/), with \
    its report and summary; --fail-on and --gate-on gate the exit code as for a run.";

/// Exit codes of `ab`, for `--help`.
pub(super) const AB_HELP: &str = "\
Exit codes:
  0    every benchmark passed on both revisions and the --fail-on gate did not trip
  1    a benchmark failed (on either revision)
  2    usage error or bad input: a bad option, an unknown revision, no git repository,
       no benchmark matched, GPUBENCH_MEMORY_HISTORY or GPUBENCH_MEMORY_PEAK_SNAPSHOT
       set (ab does not honour them)
  3    a revision's bench targets failed to build as executables (a library that
       fails to build only means they are not paired)
  4    the head regressed against the base (the --fail-on gate tripped), or
       evidence is missing that --allow-missing does not let pass
  5    setup error: libtorch not found, git or cargo could not be run, results or
       the report could not be written
  130  interrupted (Ctrl-C or SIGTERM)";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_harness_memory_options_are_refused_for_ab_when_set() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| std::ffi::OsString::from(v))
            }
        };
        assert!(refuse_unsupported_harness_vars(env(&[])).is_ok());
        assert!(refuse_unsupported_harness_vars(env(&[
            ("GPUBENCH_MEMORY_HISTORY", "0"),
            ("GPUBENCH_MEMORY_PEAK_SNAPSHOT", "false"),
        ]))
        .is_ok());
        let e = refuse_unsupported_harness_vars(env(&[("GPUBENCH_MEMORY_PEAK_SNAPSHOT", "1")]))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("GPUBENCH_MEMORY_PEAK_SNAPSHOT is set (--memory-peak-snapshot")
                && e.contains("does not honour it")
                && e.contains("Unset it"),
            "{e}"
        );
        let e = refuse_unsupported_harness_vars(env(&[("GPUBENCH_MEMORY_HISTORY", "yes")]))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("GPUBENCH_MEMORY_HISTORY is set"), "{e}");
    }
}
