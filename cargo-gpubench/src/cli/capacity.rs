//! The options of `cargo gpubench capacity`.

use clap::Args;

use super::{BaselineArgs, OutputArgs, PrebuiltArgs, ProcessArgs, TargetArgs};

/// What `capacity --help` says.
pub(super) const CAPACITY_ABOUT: &str = "Find the largest size (a batch, a sequence length) of each \
    capacity benchmark (`#[gpu_bench(capacity = \"batch\", args = [256])]`) that fits in \
    device memory: from its first `args` value the size doubles until a probe runs out of \
    memory (with two fitting sizes, the fit of memory against size predicts where it runs \
    out and the next probe goes there), then bisection narrows the bracket to \
    --resolution, and the two sizes at the boundary are probed --repeats times: a size \
    fits only when every probe of it fits (one that fails sometimes is reported as flaky). \
    Each probe is the benchmark run at one size in a fresh process, for a few calls; a \
    probe that crashes or hangs past --timeout is a failure of its size. Reported: the largest size that fits, per-item and fixed bytes (a least-squares \
    fit of the probes' peak allocated memory), and the headroom at the declared size. \
    Stored as <out-dir>/capacity/<name>.json; --save-baseline NAME writes \
    <baselines-dir>/../capacity/NAME/<name>.json, and a search is compared with the \
    baseline's (`main` by default): a size the baseline fitted that runs out of memory now is \
    a regression (exit code 4). Exit code 1 when nothing fits, a probe crashed or hung, or \
    a search could not run (the results are saved all the same); 130 on Ctrl-C, after \
    saving the searches that finished and the probes of the one it stopped. One search at \
    a time per output directory: a second one is refused, naming the lock and its pid.";

/// Options of `cargo gpubench capacity`.
#[derive(Debug, Clone, Args)]
pub struct CapacityArgs {
    /// Search only capacity benchmarks whose name contains one of these.
    #[arg(value_name = "FILTER", env = "GPUBENCH_FILTER")]
    pub filters: Vec<String>,
    /// Which bench targets of which workspace.
    #[command(flatten)]
    pub targets: TargetArgs,
    /// The device of every probe, and its time limit.
    #[command(flatten)]
    pub process: ProcessArgs,
    /// Bench executables built elsewhere, instead of the targets.
    #[command(flatten)]
    pub prebuilt: PrebuiltArgs,
    /// What the search prints and where it keeps its results.
    #[command(flatten)]
    pub output: OutputArgs,
    /// Which baseline the searches are compared with and saved as.
    #[command(flatten)]
    pub baselines: BaselineArgs,
    /// Most probe processes per benchmark.
    #[arg(
        long,
        value_name = "N",
        env = "GPUBENCH_MAX_PROBES",
        default_value_t = 16
    )]
    pub max_probes: usize,
    /// Probes of each size at the boundary: the largest size counts as fitting only
    /// when all N of its probes fit, and the first failing size is probed N times to
    /// tell a steady out-of-memory error from a flaky one (once a size both fits and
    /// fails, every size must fit N times).
    #[arg(
        long,
        value_name = "N",
        env = "GPUBENCH_CAPACITY_REPEATS",
        default_value_t = 3
    )]
    pub repeats: u32,
    /// Stop when the largest fitting and smallest failing sizes are within this
    /// fraction of the size (at least one item).
    #[arg(
        long,
        value_name = "FRACTION",
        env = "GPUBENCH_CAPACITY_RESOLUTION",
        default_value_t = 0.01
    )]
    pub resolution: f64,
    /// Cap the device's allocator at this fraction of its memory for every probe
    /// (`torch.cuda.set_per_process_memory_fraction`): a smaller limit makes the
    /// probes quick on a large GPU. Recorded with the result; searches under other
    /// caps are not compared.
    #[arg(
        long,
        value_name = "FRACTION",
        env = "GPUBENCH_CAPACITY_MEMORY_FRACTION"
    )]
    pub memory_fraction: Option<f64>,
}

impl CapacityArgs {
    /// Where the searched benchmarks come from and the results go.
    pub(crate) fn sources(&self) -> super::Sources<'_> {
        super::Sources {
            targets: &self.targets,
            prebuilt: &self.prebuilt,
            out_dir: self.output.out_dir.as_deref(),
            list: false,
        }
    }
}
