//! The options of `cargo gpubench slurm`: a suite measured over a Slurm array job (or
//! a Kubernetes Indexed Job), one task per `--partition` part, merged and gated by a
//! dependent job.

use std::path::PathBuf;

use clap::builder::BoolishValueParser;
use clap::{ArgAction, Args, Subcommand};

use super::run::TargetArgs;

/// Options of `cargo gpubench slurm`.
#[derive(Debug, Clone, Args)]
pub struct SlurmArgs {
    /// What to do.
    #[command(subcommand)]
    pub action: SlurmAction,
}

/// The actions of `cargo gpubench slurm`.
#[derive(Debug, Clone, Subcommand)]
pub enum SlurmAction {
    /// Build the archive once, submit one array task per part (each on a GPU of its
    /// own) and a dependent job that merges the parts, compares and gates.
    Run(SlurmRunArgs),
    /// Export both revisions' libraries once, submit one array task per part running
    /// `ab --base-libraries … --head-libraries … --partition K/N`, and a merge job
    /// that folds the parts into one paired `ab` run and gates.
    Ab(SlurmAbArgs),
    /// Submit again only the parts whose task did not leave a completed run (failed,
    /// cancelled, pre-empted, timed out, never ran), and a merge of all parts.
    Resubmit(SlurmDirArgs),
    /// Follow the latest submission of DIR: each task's state, then the merge's
    /// summary; exits with the merge's code.
    Follow(SlurmFollowArgs),
    /// Merge the parts of DIR into one run, naming every part without a completed
    /// run with its scheduler state, compare and gate (what the merge job runs; also
    /// by hand after a Kubernetes Job).
    Collect(SlurmFollowArgs),
}

/// What `slurm run` and `slurm ab` share: the parts, the shared directory, the
/// submission, the merge's options and whether to wait.
#[derive(Debug, Clone, Args)]
pub struct SlurmJobArgs {
    /// How many parts (array tasks, one GPU each) the suite is split into
    /// (`--partition count:K/N` in task K).
    #[arg(long, value_name = "N", env = "GPUBENCH_SLURM_PARTS", value_parser = clap::value_parser!(u32).range(1..=10000))]
    pub parts: u32,

    /// The shared directory every node reads and writes: what the tasks measure, the
    /// scripts, each part's output directory, the tasks' logs and the merged run.
    #[arg(long, value_name = "DIR", env = "GPUBENCH_SLURM_DIR")]
    pub dir: PathBuf,

    /// Where the jobs are submitted to and how they are shaped.
    #[command(flatten)]
    pub sbatch: SbatchArgs,

    /// An option of the merge job's `cargo gpubench merge` (the gate: --fail-on,
    /// --baseline, --allow-missing, --summary-file, …); repeat for each, e.g.
    /// `--merge-arg=--fail-on=ambiguous`.
    #[arg(long = "merge-arg", value_name = "ARG", allow_hyphen_values = true)]
    pub merge_args: Vec<String>,

    /// Follow the jobs until the merge has gated, and exit with its code.
    #[arg(long, env = "GPUBENCH_SLURM_WAIT", action = ArgAction::SetTrue, value_parser = BoolishValueParser::new())]
    pub wait: bool,
}

/// Options of `slurm run`.
#[derive(Debug, Clone, Args)]
pub struct SlurmRunArgs {
    /// The parts, the shared directory, the submission.
    #[command(flatten)]
    pub job: SlurmJobArgs,

    /// Measure this archive (from `cargo gpubench archive`) instead of building one.
    #[arg(long, value_name = "FILE", env = "GPUBENCH_ARCHIVE", conflicts_with_all = ["packages", "benches", "manifest_path"])]
    pub archive: Option<PathBuf>,

    /// Which bench targets of which workspace go into the archive.
    #[command(flatten)]
    pub targets: TargetArgs,

    /// Write the parts as a Kubernetes Indexed Job to FILE (for `kubectl apply -f`)
    /// instead of submitting to Slurm.
    #[arg(long, value_name = "FILE", requires = "image")]
    pub kubernetes: Option<PathBuf>,

    /// The container image of the Kubernetes Job (it must hold libtorch; the
    /// cargo-gpubench the tasks run is taken from the shared directory).
    #[arg(long, value_name = "IMAGE", requires = "kubernetes")]
    pub image: Option<String>,

    /// The PersistentVolumeClaim mounted at --dir in every pod of the Kubernetes Job.
    #[arg(
        long,
        value_name = "NAME",
        default_value = "gpubench-shared",
        requires = "kubernetes"
    )]
    pub volume_claim: String,

    /// The options of each task's `cargo-gpubench run --archive` (filters,
    /// measurement options, --device), after `--`.
    #[arg(last = true, value_name = "RUN OPTIONS")]
    pub run_args: Vec<String>,
}

/// Options of `slurm ab`.
#[derive(Debug, Clone, Args)]
pub struct SlurmAbArgs {
    /// The parts, the shared directory, the submission.
    #[command(flatten)]
    pub job: SlurmJobArgs,

    /// The revision judged against, as `ab --base` takes it.
    #[arg(long, value_name = "REV", env = "GPUBENCH_AB_BASE")]
    pub base: Option<String>,

    /// The revision judged, as `ab --head` takes it [default: the working tree].
    #[arg(long, value_name = "REV", env = "GPUBENCH_AB_HEAD")]
    pub head: Option<String>,

    /// Measure the libraries `ab --export-libraries DIR` wrote (DIR/base, DIR/head,
    /// reachable from every node) instead of exporting them here.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["base", "head", "packages", "benches", "manifest_path"])]
    pub libraries: Option<PathBuf>,

    /// Which bench targets of which workspace are built.
    #[command(flatten)]
    pub targets: TargetArgs,

    /// The options of each task's `cargo-gpubench ab` (filters, measurement
    /// options, --device, --paired-noise-threshold), after `--`.
    #[arg(last = true, value_name = "AB OPTIONS")]
    pub ab_args: Vec<String>,
}

/// How the jobs are submitted.
#[derive(Debug, Clone, Args)]
pub struct SbatchArgs {
    /// The Slurm partition (queue) to submit to (sbatch --partition).
    #[arg(long, value_name = "NAME", env = "GPUBENCH_SLURM_PARTITION")]
    pub slurm_partition: Option<String>,

    /// The account the jobs are charged to (sbatch --account).
    #[arg(long, value_name = "NAME", env = "GPUBENCH_SLURM_ACCOUNT")]
    pub account: Option<String>,

    /// The time limit of each task and of the merge (sbatch --time, e.g. 1:00:00).
    #[arg(long, value_name = "LIMIT", env = "GPUBENCH_SLURM_TIME")]
    pub time: Option<String>,

    /// At most this many tasks run at once (the array's `%K`).
    #[arg(long, value_name = "K", env = "GPUBENCH_SLURM_MAX_RUNNING", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_running: Option<u32>,

    /// The GPUs of one task (sbatch --gres).
    #[arg(
        long,
        value_name = "GRES",
        default_value = "gpu:1",
        env = "GPUBENCH_SLURM_GRES"
    )]
    pub gres: String,

    /// A line for the array job's script, as `#SBATCH LINE` (e.g. `--constraint=h100`);
    /// repeat for each.
    #[arg(long = "sbatch", value_name = "LINE", allow_hyphen_values = true)]
    pub extra: Vec<String>,

    /// The cargo-gpubench the tasks and the merge run [default: this one; it must be
    /// reachable at that path on every node].
    #[arg(long, value_name = "PATH", env = "GPUBENCH_SLURM_BIN")]
    pub bin: Option<PathBuf>,
}

/// Options of `slurm resubmit`.
#[derive(Debug, Clone, Args)]
pub struct SlurmDirArgs {
    /// The shared directory of a `slurm run`.
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,

    /// Follow the jobs until the merge has gated, and exit with its code.
    #[arg(long, env = "GPUBENCH_SLURM_WAIT", action = ArgAction::SetTrue, value_parser = BoolishValueParser::new())]
    pub wait: bool,
}

/// Options of `slurm follow` and `slurm collect`.
#[derive(Debug, Clone, Args)]
pub struct SlurmFollowArgs {
    /// The shared directory of a `slurm run`.
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
}
