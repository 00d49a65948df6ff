//! The host around a benchmark process: libtorch's intra-op threads on the CPU device
//! (how many the harness sets, and why), and the host's readings at the start and end
//! of each benchmark, which flag a process the host could not serve *contended*.
//!
//! On the CPU device the routine's work is split over libtorch's intra-op threads.
//! When other work keeps the cores busy, some of those threads wait for a core and
//! every call waits for the last of them: the figure becomes the scheduler's (8 or
//! 16 ms per call for any matmul size on a busy 2-core machine). So the harness gives
//! libtorch only the cores the host has free ([`gpubench_record::host::free_cores`])
//! unless the user chose: `--cpu-threads` / `GPUBENCH_CPU_THREADS`, their own
//! `OMP_NUM_THREADS`, or `tch::set_num_threads` in the benchmark. On a GPU libtorch's
//! default stays; the host is read all the same.

use gpubench_analysis::host::{free_cores_now, read_cpus, read_now};
use gpubench_record::host::{HostCpus, HostReading, HostTelemetry, ThreadSource};
use gpubench_record::protocol::{CPU_THREADS_VAR, FREE_CORES_VAR};
use gpubench_record::record::Round;

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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ThreadRequest {
    /// Whether the benchmarks run on the CPU device.
    pub on_cpu: bool,
    /// `--cpu-threads` / `GPUBENCH_CPU_THREADS`.
    pub option: Option<u32>,
    /// Whether the user set `OMP_NUM_THREADS` (libtorch reads it itself).
    pub omp_num_threads: bool,
    /// The run's free cores, from `cargo gpubench`
    /// ([`gpubench_record::protocol::FREE_CORES_VAR`]).
    pub run_free_cores: Option<u32>,
}

impl ThreadRequest {
    /// What this process asks for on the device `on_cpu` says: `option` as parsed
    /// from `--cpu-threads`, else [`CPU_THREADS_VAR`]; the run's free cores from
    /// [`FREE_CORES_VAR`]; and whether `OMP_NUM_THREADS` is set.
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
            run_free_cores: count(FREE_CORES_VAR),
        }
    }

    /// The choice, in order: a GPU keeps libtorch's default (the option is for the
    /// CPU device); then the option; the user's `OMP_NUM_THREADS`; the run's free
    /// cores; else the cores `free_now` finds free on the host now (called only
    /// then).
    pub fn choose(self, free_now: impl FnOnce() -> u32) -> ThreadChoice {
        let (set, from) = if !self.on_cpu {
            (None, ThreadSource::Libtorch)
        } else if let Some(n) = self.option {
            (Some(n.max(1)), ThreadSource::Option)
        } else if self.omp_num_threads {
            (None, ThreadSource::OmpNumThreads)
        } else if let Some(n) = self.run_free_cores {
            (Some(n.max(1)), ThreadSource::FreeCores)
        } else {
            (Some(free_now().max(1)), ThreadSource::FreeCores)
        };
        ThreadChoice { set, from }
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
    /// The watch of a process whose benchmarks run as `request` says.
    pub fn new(request: ThreadRequest) -> Self {
        HostWatch {
            cpus: read_cpus(),
            choice: request.choose(free_cores_now),
            on_cpu: request.on_cpu,
        }
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

    /// After a benchmark: reads the host again and puts what it saw into `round`
    /// (or why there is nothing); returns the intra-op threads the benchmark ran with.
    pub fn finish(&self, watching: Watching, round: &mut Round) -> u32 {
        let threads = intra_op_threads();
        let from = if threads != watching.threads_before {
            ThreadSource::Benchmark
        } else {
            self.choice.from
        };
        let end = read_now();
        match (&self.cpus, &watching.start, &end) {
            (Ok(cpus), Ok(start), Ok(end)) => {
                round.host = Some(HostTelemetry {
                    cpus: *cpus,
                    intra_op_threads: threads,
                    threads_from: from,
                    working_threads: if self.on_cpu { threads } else { 1 },
                    start: *start,
                    end: *end,
                });
            }
            (Err(why), _, _) | (_, Err(why), _) | (_, _, Err(why)) => {
                round.host_unavailable = Some(why.clone());
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
            ..ThreadRequest::default()
        }
    }

    fn never() -> u32 {
        panic!("the host is read only when nothing else chose")
    }

    #[test]
    fn the_cpu_device_gets_the_free_cores_unless_the_user_chose() {
        // Nothing chosen: the cores the host has free now.
        let c = cpu().choose(|| 1);
        assert_eq!((c.set, c.from), (Some(1), ThreadSource::FreeCores));
        // cargo gpubench's count for the whole run wins over a reading now.
        let run = ThreadRequest {
            run_free_cores: Some(2),
            ..cpu()
        };
        assert_eq!(run.choose(never).set, Some(2));
        // The user's OMP_NUM_THREADS: libtorch reads it, the harness leaves it.
        let omp = ThreadRequest {
            omp_num_threads: true,
            ..run
        };
        let c = omp.choose(never);
        assert_eq!((c.set, c.from), (None, ThreadSource::OmpNumThreads));
        // GPUBENCH_CPU_THREADS over everything.
        let option = ThreadRequest {
            option: Some(3),
            ..omp
        };
        let c = option.choose(never);
        assert_eq!((c.set, c.from), (Some(3), ThreadSource::Option));
        // Never fewer than one.
        assert_eq!(cpu().choose(|| 0).set, Some(1));
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
        });
        let watching = watch.start();
        assert_eq!(tch::get_num_threads(), 2);
        tch::set_num_threads(1);
        let mut round = Round::first("2026-01-01T00:00:00Z".into());
        assert_eq!(watch.finish(watching, &mut round), 1);
        let host = round.host.expect("the host reads on Linux");
        assert_eq!(host.threads_from, ThreadSource::Benchmark);
        assert_eq!((host.intra_op_threads, host.working_threads), (1, 1));
        // The next benchmark starts with the choice again.
        let watching = watch.start();
        assert_eq!(tch::get_num_threads(), 2);
        let mut round = Round::first("2026-01-01T00:00:01Z".into());
        assert_eq!(watch.finish(watching, &mut round), 2);
        assert_eq!(round.host.unwrap().threads_from, ThreadSource::Option);
        // On a GPU one thread works on the host, whatever libtorch's pool holds.
        let gpu = HostWatch::new(ThreadRequest::default());
        let watching = gpu.start();
        let mut round = Round::first("2026-01-01T00:00:02Z".into());
        gpu.finish(watching, &mut round);
        let host = round.host.unwrap();
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
            omp_num_threads: false,
            run_free_cores: Some(2),
        };
        let c = gpu.choose(never);
        assert_eq!((c.set, c.from), (None, ThreadSource::Libtorch));
    }
}
