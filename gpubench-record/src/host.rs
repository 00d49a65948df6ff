//! The host's CPUs around a benchmark process as a record's process holds them: how
//! many threads other work kept runnable, the load average, the CPUs there are, the
//! rule that calls a process *contended* when the host could not serve its threads,
//! and how many intra-op threads libtorch gets on the CPU device ([`free_cores`]).
//! Reading them from the host is `gpubench-analysis`'s (`host` probes).
//!
//! # Why
//!
//! On a busy host a benchmark's figure can be the scheduler's, not the routine's: with
//! other work runnable on every core, libtorch's intra-op pool splits a CPU matmul
//! over threads of which some the scheduler has paused, and each call waits for the
//! last one to run again. On a 2-core machine beside a parallel build CPU matmuls took
//! about 8 or 16 ms per call whatever their size: a 256³ f32 matmul 15.9 ms on
//! libtorch's 2 threads, 481 µs on one. So the harness reads the host at the start and
//! the end of every benchmark process, as it reads the GPU ([`crate::telemetry`]),
//! flags a process whose threads and the others' did not fit on the CPUs, and on the
//! CPU device gives libtorch only the cores the host has free ([`free_cores`]).

use serde::{Deserialize, Serialize};

/// The CPUs of the host and of this process: what does not change while it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostCpus {
    /// CPUs online on the host (the `cpuN` lines of `/proc/stat`): what the runnable
    /// threads are counted over.
    pub online: u32,
    /// CPUs this process may use (its affinity and CPU quota:
    /// `std::thread::available_parallelism`).
    pub available: u32,
}

/// The host at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct HostReading {
    /// Threads runnable on the host other than this process's: `procs_running` of
    /// `/proc/stat` less this process's own running threads, the median of a short
    /// burst of reads.
    pub others_runnable: u32,
    /// The one-minute load average (`/proc/loadavg`); recorded, not judged (see the
    /// module docs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_average: Option<f64>,
}

/// Where libtorch's intra-op thread count came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ThreadSource {
    /// The cores the host had free when the run started ([`free_cores`]): the default
    /// on the CPU device of records written before [`ThreadSource::HalfCpus`]. It
    /// followed the load, so consecutive runs got different counts.
    FreeCores,
    /// Half the CPUs the process may use, at least one ([`default_cpu_threads`]): the
    /// default on the CPU device, which the load does not move.
    HalfCpus,
    /// The count of the baseline the run is compared with (or saves over), so the two
    /// compare ([`crate::protocol::BASELINE_CPU_THREADS_VAR`]).
    Baseline,
    /// `--cpu-threads` / `GPUBENCH_CPU_THREADS`.
    Option,
    /// The user's `OMP_NUM_THREADS`, which libtorch reads itself.
    OmpNumThreads,
    /// The benchmark set its own (`tch::set_num_threads`).
    Benchmark,
    /// libtorch's own default, which gpubench leaves alone on a GPU.
    Libtorch,
}

impl ThreadSource {
    /// Words for notes: `the cores the host had free`.
    pub fn label(self) -> &'static str {
        match self {
            ThreadSource::FreeCores => "the cores the host had free",
            ThreadSource::HalfCpus => "half the CPUs it may use",
            ThreadSource::Baseline => "the baseline's",
            ThreadSource::Option => "GPUBENCH_CPU_THREADS",
            ThreadSource::OmpNumThreads => "OMP_NUM_THREADS",
            ThreadSource::Benchmark => "set by the benchmark",
            ThreadSource::Libtorch => "libtorch's default",
        }
    }
}

/// What the host's CPUs did during one benchmark process, and the threads it ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostTelemetry {
    /// The host's and this process's CPUs.
    pub cpus: HostCpus,
    /// libtorch's intra-op threads when the benchmark finished
    /// (`tch::get_num_threads`).
    pub intra_op_threads: u32,
    /// Where that count came from.
    pub threads_from: ThreadSource,
    /// Threads of this process that the routine keeps busy on the host: the intra-op
    /// threads on the CPU device, the one thread that dispatches on a GPU.
    pub working_threads: u32,
    /// The reading when the process started on the benchmark.
    pub start: HostReading,
    /// The reading when it finished.
    pub end: HostReading,
}

impl HostTelemetry {
    /// The most threads of other work runnable at either reading.
    pub fn most_others_runnable(&self) -> u32 {
        self.start.others_runnable.max(self.end.others_runnable)
    }

    /// `1 intra-op thread (the cores the host had free)`.
    pub fn threads_text(&self) -> String {
        threads_text(self.intra_op_threads, self.threads_from)
    }

    /// `the host's 2 CPUs were oversubscribed: 4 runnable threads of other work beside
    /// this benchmark's 1`, when [`HostTelemetry::contended`].
    pub fn contention_text(&self) -> Option<String> {
        self.contended()
            .then(|| contention_text(self.cpus, self.most_others_runnable(), self.working_threads))
    }

    /// Whether the host could not serve this process's threads: at the start or the
    /// end, other work's runnable threads and this process's working threads were
    /// more than the host's CPUs, or its working threads more than the CPUs it may
    /// use. Some of its threads then waited for a core, and the figures include the
    /// wait.
    pub fn contended(&self) -> bool {
        oversubscribed(self.cpus, self.most_others_runnable(), self.working_threads)
    }
}

/// `the host's 2 CPUs were oversubscribed: 4 runnable threads of other work beside
/// this benchmark's 1`.
pub fn contention_text(cpus: HostCpus, others: u32, working: u32) -> String {
    let online = cpus.online;
    let mut text = format!(
        "the host's {online} CPU{} {} oversubscribed: {others} runnable thread{} of other \
         work beside this benchmark's {working}",
        plural(online),
        if online == 1 { "was" } else { "were" },
        plural(others),
    );
    if working > cpus.available {
        text.push_str(&format!(
            ", more than the {} CPU{} it may use",
            cpus.available,
            plural(cpus.available)
        ));
    }
    text
}

/// The intra-op threads on the CPU device when nothing else chooses: half the CPUs
/// the process may use (`available`), at least one. Fixed for a machine whatever its
/// load, so runs compare; and on a shared host the other half is left to other work,
/// so a moderate load does not make the benchmark's threads wait for a core.
pub fn default_cpu_threads(available: u32) -> u32 {
    available.div_ceil(2).max(1)
}

/// `1 intra-op thread (the cores the host had free)`.
pub fn threads_text(count: u32, from: ThreadSource) -> String {
    format!(
        "{count} intra-op thread{} ({})",
        plural(count),
        from.label()
    )
}

fn plural(n: u32) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// Whether `working` threads of this process and `others` runnable threads of other
/// work are more than `cpus` can run at once (see [`HostTelemetry::contended`]).
pub fn oversubscribed(cpus: HostCpus, others: u32, working: u32) -> bool {
    others.saturating_add(working) > cpus.online || working > cpus.available
}

/// The intra-op threads the host can serve: the CPUs this process may use that other
/// work's `others` runnable threads leave free on the host, at least 1.
pub fn free_cores(cpus: HostCpus, others: u32) -> u32 {
    cpus.online
        .saturating_sub(others)
        .min(cpus.available)
        .max(1)
}
