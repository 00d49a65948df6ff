//! The host around a benchmark process: libtorch's intra-op threads on the CPU device
//! (how many the harness sets, and why), and the host's readings at the start and end
//! of each benchmark, which flag a process the host could not serve *contended*.
//!
//! On the CPU device the routine's work is split over libtorch's intra-op threads,
//! and their number moves its figures, so it must not move between runs: by default
//! half the CPUs the process may use ([`default_cpu_threads`]), whatever the load;
//! the baseline's count when `cargo gpubench` compares with (or saves over) one that
//! has another ([`BASELINE_CPU_THREADS_VAR`]); unless the user chose:
//! `--cpu-threads` / `GPUBENCH_CPU_THREADS` (at most the CPUs the process may use),
//! their own `OMP_NUM_THREADS`, or `tch::set_num_threads` in the benchmark. The
//! default leaves half the cores to other work, since when other work keeps the
//! cores busy some threads wait for a core and every call waits for the last of them
//! (8 or 16 ms per call for any matmul size on a busy 2-core machine). On a GPU
//! libtorch's default stays; the host is read all the same.

use gpubench_analysis::host::{read_cpus, read_now};
use gpubench_record::host::{
    default_cpu_threads, HostCpus, HostReading, HostTelemetry, ThreadSource,
};
use gpubench_record::protocol::{BASELINE_CPU_THREADS_VAR, CPU_THREADS_VAR};
use gpubench_record::record::ProcessRecord;

/// The intra-op threads this process gives libtorch, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadChoice {
    /// The count the harness sets before each benchmark; `None` leaves libtorch's
    /// (its default, or the user's `OMP_NUM_THREADS`).
    pub set: Option<u32>,
    /// Where the count comes from.
    pub from: ThreadSource,
}

/// What chooses the intra-op threads, as this process found it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadRequest {
    /// Whether the benchmarks run on the CPU device.
    pub on_cpu: bool,
    /// `--cpu-threads` / `GPUBENCH_CPU_THREADS`.
    pub option: Option<u32>,
    /// Whether the user set `OMP_NUM_THREADS` (libtorch reads it itself).
    pub omp_num_threads: bool,
    /// The baseline's count, from `cargo gpubench` ([`BASELINE_CPU_THREADS_VAR`]).
    pub baseline: Option<u32>,
    /// The CPUs this process may use.
    pub available: u32,
}

impl Default for ThreadRequest {
    fn default() -> Self {
        ThreadRequest {
            on_cpu: false,
            option: None,
            omp_num_threads: false,
            baseline: None,
            available: 1,
        }
    }
}

impl ThreadRequest {
    /// What this process asks for on the device `on_cpu` says: `option` as parsed
    /// from `--cpu-threads`, else [`CPU_THREADS_VAR`]; the baseline's count from
    /// [`BASELINE_CPU_THREADS_VAR`]; whether `OMP_NUM_THREADS` is set; and the CPUs
    /// this process may use.
    pub fn from_env(on_cpu: bool, option: Option<u32>) -> Self {
        let count = |var: &str| {
            std::env::var(var)
                .ok()
                .and_then(|v| v.trim().parse::<u32>().ok())
                .filter(|&n| n > 0)
        };
        ThreadRequest {
            on_cpu,
            option: option.or_else(|| count(CPU_THREADS_VAR)),
            omp_num_threads: count("OMP_NUM_THREADS").is_some(),
            baseline: count(BASELINE_CPU_THREADS_VAR),
            available: std::thread::available_parallelism().map_or(1, |n| n.get()) as u32,
        }
    }

    /// The choice, in order: a GPU keeps libtorch's default (the option is for the
    /// CPU device); then the option, refused when it is more than the CPUs this
    /// process may use (so many threads only wait for cores, and tens of thousands
    /// take the process past its timeout just starting); the user's
    /// `OMP_NUM_THREADS`; the baseline's count (at most the CPUs); else
    /// [`default_cpu_threads`].
    pub fn choose(self) -> Result<ThreadChoice, String> {
        let available = self.available.max(1);
        let (set, from) = if !self.on_cpu {
            (None, ThreadSource::Libtorch)
        } else if let Some(n) = self.option {
            if n > available {
                return Err(format!(
                    "{CPU_THREADS_VAR}={n} (--cpu-threads) asks for more intra-op threads than \
                     the {available} CPU{} this process may use: the threads beyond them only \
                     wait for a core; set it to at most {available}, or unset it for \
                     {} (half the CPUs)",
                    if available == 1 { "" } else { "s" },
                    default_cpu_threads(available)
                ));
            }
            (Some(n.max(1)), ThreadSource::Option)
        } else if self.omp_num_threads {
            (None, ThreadSource::OmpNumThreads)
        } else if let Some(n) = self.baseline {
            (Some(n.clamp(1, available)), ThreadSource::Baseline)
        } else {
            (Some(default_cpu_threads(available)), ThreadSource::HalfCpus)
        };
        Ok(ThreadChoice { set, from })
    }
}

/// Reads the host around each benchmark of a process and holds its thread choice.
#[derive(Debug, Clone)]
pub struct HostWatch {
    cpus: Result<HostCpus, String>,
    choice: ThreadChoice,
    on_cpu: bool,
}

/// One benchmark's watch, from [`HostWatch::start`] to [`HostWatch::finish`].
#[derive(Debug)]
pub struct Watching {
    start: Result<HostReading, String>,
    /// libtorch's count as the benchmark started.
    threads_before: u32,
}

impl HostWatch {
    /// The watch of a process whose benchmarks run as `request` says; `Err` when the
    /// request is refused ([`ThreadRequest::choose`]).
    pub fn new(request: ThreadRequest) -> Result<Self, String> {
        Ok(HostWatch {
            cpus: read_cpus(),
            choice: request.choose()?,
            on_cpu: request.on_cpu,
        })
    }

    /// Before a benchmark: sets libtorch's intra-op threads (again: a benchmark before
    /// may have changed them) and reads the host.
    pub fn start(&self) -> Watching {
        if let Some(n) = self.choice.set {
            tch::set_num_threads(i32::try_from(n).unwrap_or(i32::MAX));
        }
        Watching {
            threads_before: intra_op_threads(),
            start: read_now(),
        }
    }

    /// After a benchmark: reads the host again and puts what it saw into `process`
    /// (or why there is nothing); returns the intra-op threads the benchmark ran with.
    pub fn finish(&self, watching: Watching, process: &mut ProcessRecord) -> u32 {
        let threads = intra_op_threads();
        let from = if threads != watching.threads_before {
            ThreadSource::Benchmark
        } else {
            self.choice.from
        };
        let end = read_now();
        match (&self.cpus, &watching.start, &end) {
            (Ok(cpus), Ok(start), Ok(end)) => {
                process.host = Some(HostTelemetry {
                    cpus: *cpus,
                    intra_op_threads: threads,
                    threads_from: from,
                    working_threads: if self.on_cpu { threads } else { 1 },
                    start: *start,
                    end: *end,
                });
            }
            (Err(why), _, _) | (_, Err(why), _) | (_, _, Err(why)) => {
                process.host_unavailable = Some(why.clone());
            }
        }
        threads
    }
}

/// libtorch's intra-op threads now.
fn intra_op_threads() -> u32 {
    u32::try_from(tch::get_num_threads()).unwrap_or(1).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cpu() -> ThreadRequest {
        ThreadRequest {
            on_cpu: true,
            available: 2,
            ..ThreadRequest::default()
        }
    }

    #[test]
    fn the_cpu_device_gets_half_the_cpus_whatever_the_load_unless_chosen() {
        // Nothing chosen: half the CPUs, at least one, the same in every run.
        let c = cpu().choose().unwrap();
        assert_eq!((c.set, c.from), (Some(1), ThreadSource::HalfCpus));
        let big = ThreadRequest {
            available: 16,
            ..cpu()
        };
        assert_eq!(big.choose().unwrap().set, Some(8));
        let one = ThreadRequest {
            available: 1,
            ..cpu()
        };
        assert_eq!(one.choose().unwrap().set, Some(1));
        // The baseline's count, so the run compares with it; never more than the CPUs.
        let baseline = ThreadRequest {
            baseline: Some(2),
            ..cpu()
        };
        let c = baseline.choose().unwrap();
        assert_eq!((c.set, c.from), (Some(2), ThreadSource::Baseline));
        let wider = ThreadRequest {
            baseline: Some(8),
            ..cpu()
        };
        assert_eq!(wider.choose().unwrap().set, Some(2));
        // The user's OMP_NUM_THREADS: libtorch reads it, the harness leaves it.
        let omp = ThreadRequest {
            omp_num_threads: true,
            ..baseline
        };
        let c = omp.choose().unwrap();
        assert_eq!((c.set, c.from), (None, ThreadSource::OmpNumThreads));
        // GPUBENCH_CPU_THREADS over everything.
        let option = ThreadRequest {
            option: Some(2),
            ..omp
        };
        let c = option.choose().unwrap();
        assert_eq!((c.set, c.from), (Some(2), ThreadSource::Option));
    }

    #[test]
    fn more_threads_than_cpus_are_refused_naming_the_variable_and_the_fix() {
        let huge = ThreadRequest {
            option: Some(99999),
            ..cpu()
        };
        let why = huge.choose().unwrap_err();
        assert!(
            why.starts_with("GPUBENCH_CPU_THREADS=99999 (--cpu-threads)")
                && why.contains("the 2 CPUs this process may use")
                && why.contains("set it to at most 2"),
            "{why}"
        );
        // On a GPU the option is not used, so not refused either.
        let gpu = ThreadRequest {
            on_cpu: false,
            ..huge
        };
        assert_eq!(gpu.choose().unwrap().from, ThreadSource::Libtorch);
    }

    #[test]
    fn each_benchmark_starts_with_the_choice_and_one_that_sets_its_own_is_recorded_so() {
        // libtorch's thread count is the process's: not while an engine test measures.
        let _serial = crate::engine_tests::SERIAL
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let watch = HostWatch::new(ThreadRequest {
            option: Some(2),
            ..cpu()
        })
        .unwrap();
        let watching = watch.start();
        assert_eq!(tch::get_num_threads(), 2);
        tch::set_num_threads(1);
        let mut process = ProcessRecord::first("2026-01-01T00:00:00Z".into());
        assert_eq!(watch.finish(watching, &mut process), 1);
        let host = process.host.expect("the host reads on Linux");
        assert_eq!(host.threads_from, ThreadSource::Benchmark);
        assert_eq!((host.intra_op_threads, host.working_threads), (1, 1));
        // The next benchmark starts with the choice again.
        let watching = watch.start();
        assert_eq!(tch::get_num_threads(), 2);
        let mut process = ProcessRecord::first("2026-01-01T00:00:01Z".into());
        assert_eq!(watch.finish(watching, &mut process), 2);
        assert_eq!(process.host.unwrap().threads_from, ThreadSource::Option);
        // On a GPU one thread works on the host, whatever libtorch's pool holds.
        let gpu = HostWatch::new(ThreadRequest::default()).unwrap();
        let watching = gpu.start();
        let mut process = ProcessRecord::first("2026-01-01T00:00:02Z".into());
        gpu.finish(watching, &mut process);
        let host = process.host.unwrap();
        assert_eq!(
            (host.working_threads, host.threads_from),
            (1, ThreadSource::Libtorch)
        );
    }

    #[test]
    fn a_gpu_keeps_libtorchs_default() {
        let gpu = ThreadRequest {
            on_cpu: false,
            option: Some(3),
            baseline: Some(2),
            available: 4,
            ..ThreadRequest::default()
        };
        let c = gpu.choose().unwrap();
        assert_eq!((c.set, c.from), (None, ThreadSource::Libtorch));
    }
}
