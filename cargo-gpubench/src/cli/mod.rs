//! The command line of `cargo gpubench`: every option also reads a `GPUBENCH_*`
//! environment variable, so CI can set options without editing command lines.

mod ab;
mod archive;
mod capacity;
mod compare;
mod console;
mod history;
mod merge;
#[cfg(test)]
mod reference;
mod run;
mod slurm;
#[cfg(test)]
mod tests;

pub(crate) use ab::{refuse_unsupported_harness_vars, AbArgs};
pub(crate) use archive::ArchiveArgs;
pub(crate) use capacity::CapacityArgs;
pub(crate) use compare::{BaselineArgs, CompareArgs, Format, ReportArgs, VerdictArgs};
pub(crate) use console::ConsoleArgs;
pub(crate) use history::{HistoryArgs, HISTORY_ABOUT, HISTORY_HELP};
pub(crate) use merge::MergeArgs;
pub(crate) use run::{
    OutputArgs, PrebuiltArgs, ProcessArgs, ProcessDefaults, RunArgs, Sources, TargetArgs,
};
pub(crate) use slurm::{SlurmAbArgs, SlurmAction, SlurmArgs, SlurmJobArgs, SlurmRunArgs};

use std::ffi::OsString;
use std::path::PathBuf;

use clap::builder::BoolishValueParser;
use clap::{ArgAction, Args, CommandFactory, Parser, Subcommand};

/// Discover, build and run `#[gpu_bench]` benchmarks, each in its own process.
#[derive(Debug, Parser)]
#[command(
    name = "cargo-gpubench",
    bin_name = "cargo gpubench",
    version,
    about = "Discover, build and run #[gpu_bench] benchmarks, each in its own process.",
    long_about = "Discover, build and run #[gpu_bench] benchmarks, each in its own process.\n\n\
        Bench targets of workspace packages that depend on gpubench-core are built with \
        `cargo bench --no-run`, listed, and every selected benchmark is measured in \
        several processes of its own (process 1 of every benchmark, then process 2, \
        ...), each with a timeout: a machine's speed changes from one process to the \
        next, so the interval of every figure comes from how the processes differ. A \
        crash, panic, out-of-memory or timeout becomes a failed record and the other \
        benchmarks still run. Each run is stored under \
        <target-dir>/gpubench/runs/<run-id>/ (one JSON record per benchmark and a \
        manifest.json), with <target-dir>/gpubench/latest pointing at it, and its HTML \
        report is written to <target-dir>/gpubench/report/index.html (--no-report skips \
        it; `cargo gpubench report` renders it again).\n\n\
        libtorch is found through LIBTORCH, the project's .venv, a torch importable by \
        python3, or the build scripts' native library paths, and put on the loader path \
        of every benchmark process. The harness's own tuning variables (e.g. \
        GPUBENCH_MEASUREMENT_TIME) pass through to benchmark processes.\n\n\
        Baselines: --save-baseline NAME saves the run's measurements as \
        <workspace>/gpubench/baselines/NAME/ (one small JSON file per benchmark, made \
        to be committed to git). A run is compared with --baseline NAME, or by default \
        with the baseline `main` when one is saved (--no-baseline skips it); the \
        terminal table gains a change column, the comparison is stored as \
        runs/<run-id>/comparison.json, and --fail-on decides which verdicts end the \
        run with exit code 4. Comparing and saving in one run compares with the \
        baseline as it was before this run.\n\n\
        Words in the summary. A benchmark: passed, or failed (panic, out of memory, \
        crash, timeout, exit code); device-bound: the host returns long before the \
        device finishes, so the figure is device time; launch-bound: the device waits \
        on the host's dispatch; syncs inside the routine: host dispatch tracks device \
        time (something reads back); unstable: a process's samples never settled within \
        its time bound; unstable across processes: the processes' medians differ by \
        more than 10%; throttled: some samples ran with the GPU's SM clock below 75% \
        of its default or during a hardware, thermal or power-brake slowdown, and are \
        left out of the figures (the count is shown); contended: another process used \
        the GPU while the benchmark ran, so its figures may be slow by what that \
        process took. A comparison notes when its two sides ran at clearly different \
        SM clocks. --flush-l2 measures one call per sample after a flush, at the clock \
        flushed calls settle at over the warm-up: a cold-cache figure, which can \
        differ from calls back to back beyond the cache. A verdict (on time, kernel \
        time or counts): regressed or improved: the whole 90% interval of the change lies beyond the threshold; no \
        change: it lies inside (certain, under the threshold when it also excludes 0: \
        a real change smaller than the threshold); could detect (ab): the smallest \
        change a verdict could have called, its threshold plus its interval's \
        half-width; ambiguous: neither, or too few processes; not \
        compared: recorded on another device model; new: not in the baseline; missing \
        evidence: a baseline benchmark not run or gone, one not compared, or a gated metric \
        a side lacks (it fails the gate unless --allow-missing lets its kind pass). A run: \
        incomplete: its cargo gpubench died before the end.",
    after_long_help = crate::exit_code::HELP,
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    /// What to do; running benchmarks when absent.
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Options of the default action (running benchmarks).
    #[command(flatten)]
    pub run: RunArgs,
    /// `-q`, `-v`, `--color`: how much is printed, and in colour or not.
    #[command(flatten)]
    pub console: ConsoleArgs,
}

/// The subcommands.
// Parsed once per process: the size of the run variant does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run benchmarks (the default); with --exe or --archive, run already-built bench
    /// executables without cargo.
    #[command(after_long_help = crate::exit_code::HELP)]
    Run(RunArgs),
    /// Build the bench targets and bundle them into one file, to run with `run
    /// --archive` on a machine with libtorch but no cargo or sources.
    #[command(long_about = ARCHIVE_ABOUT, after_long_help = ARCHIVE_HELP)]
    Archive(ArchiveArgs),
    /// Judge the working tree (or --head REV) against its merge-base (or --base
    /// REV), each benchmark's two revisions measured side by side in one process.
    #[command(
        long_about = ab::AB_ABOUT,
        after_long_help = ab::AB_HELP,
        mut_arg("processes", |a| a.help(ab::PROCESSES_HELP)),
        mut_arg("quick", |a| a.help(ab::QUICK_HELP))
    )]
    Ab(AbArgs),
    /// Compare two stored baselines or runs, without running anything.
    #[command(
        long_about = "Compare two stored baselines or runs, without running anything: \
            BASELINE is the reference, CURRENT is judged against it, benchmark by \
            benchmark, with the same statistics and --fail-on gate as a run.",
        after_long_help = COMPARE_HELP
    )]
    Compare(CompareArgs),
    /// Render the HTML report of a stored run again (the latest by default).
    #[command(
        long_about = "Render the HTML report of a stored run again, without running \
            anything: RUN's records, and its comparison with the baseline when it was \
            compared, are written to <out-dir>/report/ (index.html and a page per \
            benchmark), replacing the report there.",
        after_long_help = REPORT_HELP
    )]
    Report(ReportArgs),
    /// Fold runs of parts of a suite (e.g. --partition jobs) into one stored run and
    /// one report.
    #[command(
        long_about = "Fold runs of parts of a suite into one new stored run, without \
            running anything: e.g. the runs of the jobs of a CI matrix, each with its own \
            --partition K/N, or runs made on several GPUs. The merged run holds a copy of \
            every input's records (each keeps the device and host that measured it), a \
            manifest listing its benchmarks and the runs it was merged from, and \
            <out-dir>/latest points at it; its HTML report is written to \
            <out-dir>/report/ and its summary printed as a run prints one. Like a run, it \
            is compared with the baseline `main` when one is saved (--baseline NAME \
            picks another, --no-baseline skips): the verdicts are in the summary and the \
            report, and --fail-on decides the exit code.\n\n\
            A benchmark measured by two inputs is refused: merging is for disjoint parts, \
            and results from different device models are never pooled. Inputs split \
            with --partition are checked for missing parts. A run still being written is \
            refused; the merged run is completed only when every input completed, else \
            it is interrupted or incomplete, naming the input. A missing part or an input \
            cut short leaves the merged run without benchmarks of the suite: the merge \
            names them and exits 1, unless --allow-missing not-run lets it pass (against \
            a baseline, their benchmarks are then listed as not run).\n\n\
            The parts of one `ab` (`ab --partition K/N`, the same base and head builds, \
            measured alike) merge into one paired `ab` run, the base's records beside the \
            head's, judged again against its base (no baseline) with --fail-on; an `ab` \
            run with a plain run, or with an `ab` run of another base or head, is refused.",
        after_long_help = MERGE_HELP
    )]
    Merge(MergeArgs),
    /// Show each benchmark's figures over the committed versions of a baseline, with
    /// change points and drift, read from git.
    #[command(long_about = HISTORY_ABOUT, after_long_help = HISTORY_HELP)]
    History(HistoryArgs),
    /// Install the libtorch this build needs into the user's cache, once.
    #[command(
        long_about = "Install libtorch (PyPI's torch wheel, CPU and CUDA 13, with the \
            CUDA headers kernel timing builds against) into a virtual environment in \
            the user's cache: GPUBENCH_CACHE_DIR, else XDG_CACHE_HOME/gpubench, else \
            ~/.cache/gpubench. cargo gpubench finds it there, builds tch against it and \
            runs benchmarks with it, with no environment to set. About 5 GB; needs \
            python3 with venv and access to PyPI."
    )]
    Setup(SetupArgs),
    /// Check the machine: libtorch, CUDA, the NVIDIA driver, each GPU's clocks, modes
    /// and other processes, the host's CPU governor and load.
    #[command(
        long_about = "Check the machine before benchmarking on it: the libtorch benchmarks \
            would load (where, which version, whether it is the one tch needs), whether \
            CUDA is usable, the NVIDIA driver and each GPU through NVML (clocks, \
            persistence mode, compute mode, ECC, slowdown reasons, other processes on \
            it), and the host (CPU frequency governor, load average). Each problem is \
            listed with why it makes results unreliable and what to do.",
        after_long_help = DOCTOR_HELP
    )]
    Doctor(DoctorArgs),
    /// Find the largest size of each capacity benchmark that fits in device memory,
    /// by doubling then bisection, each probe in a fresh process.
    #[command(long_about = capacity::CAPACITY_ABOUT, after_long_help = crate::exit_code::HELP)]
    Capacity(CapacityArgs),
    /// Measure the suite over a Slurm array job, one GPU per part, merged and gated
    /// by a dependent job (or write it as a Kubernetes Indexed Job).
    #[command(after_long_help = crate::exit_code::HELP)]
    Slurm(SlurmArgs),
}

/// What `archive --help` says.
pub(crate) const ARCHIVE_ABOUT: &str = "Build the bench targets (as a run would, with the same \
    --manifest-path, -p and --bench), list each one's benchmarks, and write one file \
    holding the gpubench bench executables, the shared libraries build scripts left \
    in the target directory, the workspace's saved baselines \
    (gpubench/baselines/), and a manifest: the git commit, the libtorch version \
    built against, and every executable's benchmarks. Copy it to a machine with \
    that libtorch and run `cargo-gpubench run --archive FILE` there: no cargo, \
    Rust toolchain or sources needed. The file is written under a temporary name \
    beside FILE and renamed at the end, so FILE is never half written.";

/// Exit codes of `archive`, for `--help`.
pub(crate) const ARCHIVE_HELP: &str = "\
Exit codes:
  0    the archive was written
  2    usage error: an unknown package or bench target, no gpubench harness among them
  3    the bench targets failed to build
  5    setup error: libtorch not found, cargo or a bench executable could not be run,
       the archive could not be written (a file already at FILE is left as it was)
  130  interrupted (Ctrl-C or SIGTERM) before the archive was written";

/// Exit codes of `doctor`, for `--help`.
pub(crate) const DOCTOR_HELP: &str = "\
Exit codes:
  0    nothing found that would make results unreliable
  5    a problem was found (each is listed with why it matters and what to do):
       no usable libtorch or not the version tch needs, no CUDA device or NVIDIA
       driver/NVML (on a machine with a driver, or with --device cuda), persistence mode off, another process on a GPU, a GPU slowed
       by heat or power, a CPU governor other than `performance`, a busy host";

/// Options of `doctor`.
#[derive(Debug, Clone, Args)]
pub struct DoctorArgs {
    /// The device the benchmarks are to run on: cuda or cuda:N makes a missing GPU,
    /// driver or CUDA build a problem; cpu checks the host alone. By default a
    /// machine without an NVIDIA driver is taken as a CPU-only machine, and one with
    /// a driver as a GPU machine.
    #[arg(long, value_name = "DEVICE", env = "GPUBENCH_DEVICE", value_parser = crate::execute::devices::parse_label)]
    pub device: Option<String>,
}

/// Options of `setup`.
#[derive(Debug, Clone, Args)]
pub struct SetupArgs {
    /// The virtual environment to make [default: <cache>/torch-<version>].
    #[arg(long, value_name = "DIR", env = "GPUBENCH_SETUP_VENV")]
    pub venv: Option<PathBuf>,
    /// The Python that makes it.
    #[arg(
        long,
        value_name = "PYTHON",
        env = "GPUBENCH_SETUP_PYTHON",
        default_value = "python3"
    )]
    pub python: OsString,
    /// Leave out the CUDA headers wheel (no kernel timing is built then).
    #[arg(long, env = "GPUBENCH_SETUP_NO_CUDA_HEADERS", action = ArgAction::SetTrue, value_parser = BoolishValueParser::new())]
    pub no_cuda_headers: bool,
    /// Install again even when it is there, or when a libtorch of the right version
    /// is already at hand (LIBTORCH, the project's .venv, python3's torch).
    #[arg(long, env = "GPUBENCH_SETUP_FORCE", action = ArgAction::SetTrue, value_parser = BoolishValueParser::new())]
    pub force: bool,
    /// Use this libtorch (a directory with lib/ and include/, such as a torch
    /// package's) and install nothing.
    #[arg(long, value_name = "DIR", env = "GPUBENCH_SETUP_LIBTORCH", conflicts_with_all = ["venv", "force"])]
    pub libtorch: Option<PathBuf>,
    /// Leave the workspace's .cargo/config.toml alone. By default setup writes the
    /// libtorch there (LIBTORCH in [env], an rpath in [build] rustflags), so plain
    /// `cargo bench` and `cargo test` build and run with it in the environment cargo
    /// gpubench builds with.
    #[arg(long, env = "GPUBENCH_SETUP_NO_CARGO_CONFIG", action = ArgAction::SetTrue, value_parser = BoolishValueParser::new())]
    pub no_cargo_config: bool,
}

impl SetupArgs {
    /// What the setup stage is asked to do.
    pub fn options(&self) -> crate::build::setup::SetupOptions {
        crate::build::setup::SetupOptions {
            venv: self.venv.clone(),
            python: self.python.clone(),
            no_cuda_headers: self.no_cuda_headers,
            force: self.force,
            libtorch: self.libtorch.clone(),
            no_cargo_config: self.no_cargo_config,
        }
    }
}

/// How `report` resolves its argument, and its exit codes.
pub(crate) const REPORT_HELP: &str = "\
RUN is resolved like the sides of `cargo gpubench compare` (see its --help):
latest (the default), run:ID, an id or the start of one, or a run directory's path.
A saved baseline is not a run and is refused.

Exit codes:
  0    the report was written (with --open, whether or not a browser opened)
  2    bad input: an unknown or ambiguous run, a corrupt or newer file
  5    a file could not be read, or the report could not be written";

/// How `merge` resolves its arguments, and its exit codes.
pub(crate) const MERGE_HELP: &str = "\
Each RUN is one of:
  PATH            anything with a '/' (e.g. ./artifacts/part-1): a run directory
                  (it holds manifest.json), or an output directory (its latest run)
  latest, run:ID  a run stored under --out-dir, resolved like the sides of
  ID              `cargo gpubench compare` (see its --help); a baseline is refused

Exit codes:
  0    merged; every benchmark of the merged run passed (and none tripped the
       --fail-on gate against the baseline)
  1    the merged run holds a failed benchmark, or lacks benchmarks of the suite:
       an input cut short or a --partition part missing (--allow-missing not-run
       lets that pass)
  2    bad input: an unknown run, a benchmark in two inputs (or measured on two
       device models), a run still being written, an `ab` run with a plain run
       or with an `ab` of other revisions, a corrupt or newer file, a --baseline
       that is not saved
  4    compared with the baseline, a benchmark tripped the --fail-on gate
       (regressed, by default)
  5    a file could not be read or written, another run holds the output
       directory's lock, or the HTML report could not be written
  130  an input was interrupted (Ctrl-C), so the merged run is too";

/// How `compare` resolves its arguments, and its exit codes.
pub(crate) const COMPARE_HELP: &str = "\
How BASELINE and CURRENT are resolved:
  baseline:NAME   the saved baseline NAME (<baselines-dir>/NAME/)
  run:ID          the stored run ID (<out-dir>/runs/ID/); also run:latest, run:PATH
  latest          the newest run (what <out-dir>/latest points at)
  PATH            anything with a '/' (e.g. ./dir): a run directory (it holds
                  manifest.json), an output directory (its latest run), or a
                  directory of baseline files; one holding none of them is refused
  NAME            a saved baseline NAME, or a stored run whose id is NAME or starts
                  with NAME; when both exist it is ambiguous and refused: write
                  baseline:NAME or run:NAME

Exit codes:
  0    compared; the --fail-on gate did not trip
  1    CURRENT holds a failed benchmark (wins over 4)
  2    bad input: an unknown or ambiguous name, a corrupt or newer file, a side
       with nothing to compare
  4    the --fail-on gate tripped: a regression was found, or evidence is missing
       (a BASELINE benchmark CURRENT did not run or lacks, one not compared, a
       gated metric a side lacks) that --allow-missing does not let pass
  5    a file could not be read or written";

impl Cli {
    /// Parses the command line as cargo passes it: `cargo gpubench ...` runs
    /// `cargo-gpubench gpubench ...`, so a leading `gpubench` is dropped.
    pub fn parse_from_cargo<I, T>(args: I) -> Result<Cli, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString>,
    {
        let mut args: Vec<OsString> = args.into_iter().map(Into::into).collect();
        if args.get(1).is_some_and(|a| a == "gpubench") {
            args.remove(1);
        }
        Cli::try_parse_from(console_flags_after_subcommand(args))
    }

    /// The `--format` of the subcommand, for those that have one (a run, `ab`,
    /// `compare`, `merge`, `history`, `capacity`).
    pub fn format(&self) -> Option<Format> {
        match &self.command {
            None => Some(self.run.output.format),
            Some(Command::Run(args)) => Some(args.output.format),
            Some(Command::Ab(args)) => Some(args.format),
            Some(Command::Compare(args)) => Some(args.store.format),
            Some(Command::Merge(args)) => Some(args.store.format),
            Some(Command::History(args)) => Some(args.store.format),
            Some(Command::Capacity(args)) => Some(args.output.format),
            Some(
                Command::Archive(_)
                | Command::Report(_)
                | Command::Setup(_)
                | Command::Doctor(_)
                | Command::Slurm(_),
            ) => None,
        }
    }
}

/// `cargo gpubench -q compare A B` as `cargo gpubench compare -q A B`: the console
/// flags are global, but any argument before a subcommand makes clap read the
/// subcommand's name as a FILTER of a run (`args_conflicts_with_subcommands`, which
/// keeps `--quick compare` from being silently ignored). So console flags leading the
/// line move behind the subcommand they precede; anything else is left as it is.
fn console_flags_after_subcommand(mut args: Vec<OsString>) -> Vec<OsString> {
    let mut end = 1;
    while let Some(arg) = args.get(end).and_then(|a| a.to_str()) {
        end += match arg {
            "-q" | "--quiet" | "-v" | "--verbose" | "-qv" | "-vq" => 1,
            "--color" => 2,
            _ if arg.starts_with("--color=") => 1,
            _ => break,
        };
    }
    let names: Vec<String> = Cli::command()
        .get_subcommands()
        .map(|c| c.get_name().to_string())
        .collect();
    let is_subcommand = args
        .get(end)
        .and_then(|a| a.to_str())
        .is_some_and(|a| names.iter().any(|n| n == a));
    if end > 1 && is_subcommand {
        let flags: Vec<OsString> = args.drain(1..end).collect();
        args.splice(2..2, flags);
    }
    args
}

/// The environment variables this command line reads. Benchmark processes do not
/// inherit them: the options reach the harness as explicit arguments, so a variable
/// meant for the subcommand (e.g. `GPUBENCH_IGNORED`) cannot change what the harness
/// lists or runs behind its back.
pub(crate) fn option_env_vars() -> Vec<String> {
    fn collect(cmd: &clap::Command, out: &mut Vec<String>) {
        for arg in cmd.get_arguments() {
            if let Some(env) = arg.get_env() {
                out.push(env.to_string_lossy().into_owned());
            }
        }
        for sub in cmd.get_subcommands() {
            collect(sub, out);
        }
    }
    let mut out = Vec::new();
    collect(&Cli::command(), &mut out);
    out.sort();
    out.dedup();
    out
}
