//! Reading the host's CPUs from `/proc` around a benchmark process (the types and the
//! contention rule are the record's, [`gpubench_record::host`]), and their summary over
//! a benchmark's processes.
//!
//! # What is read
//!
//! `procs_running` of `/proc/stat` counts the threads runnable on the host at that
//! instant; this process's own running threads (`/proc/self/task/*/stat`) are taken
//! off, so what is left is other work. One instant can catch a thread that runs for a
//! moment, so a reading is the median of a short burst ([`BURST_READS`]). The load
//! average is recorded beside it but not judged: it keeps counting this run's own
//! earlier benchmark processes for a minute after they ended.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use gpubench_record::host::*;

/// Reads of the runnable threads per [`HostReading`]; their median is the reading.
pub const BURST_READS: usize = 7;
/// The pause between two reads of a burst.
pub const BURST_PAUSE: Duration = Duration::from_millis(1);

/// This host's and this process's CPUs; `Err` says why they could not be read.
pub fn read_cpus() -> Result<HostCpus, String> {
    let stat = std::fs::read_to_string("/proc/stat")
        .map_err(|e| format!("no host readings: failed to read /proc/stat: {e}"))?;
    let available = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
    let online = match online_cpus(&stat) {
        0 => available,
        n => n,
    };
    Ok(HostCpus { online, available })
}

/// Reads the host now (a burst of [`BURST_READS`] reads, [`BURST_PAUSE`] apart);
/// `Err` says why it could not.
pub fn read_now() -> Result<HostReading, String> {
    let mut others = Vec::with_capacity(BURST_READS);
    for i in 0..BURST_READS {
        if i > 0 {
            std::thread::sleep(BURST_PAUSE);
        }
        let stat = std::fs::read_to_string("/proc/stat")
            .map_err(|e| format!("no host readings: failed to read /proc/stat: {e}"))?;
        let running =
            procs_running(&stat).ok_or("no host readings: /proc/stat has no procs_running line")?;
        others.push(running.saturating_sub(own_running_threads()));
    }
    others.sort_unstable();
    let load_average = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| load_average(&s));
    Ok(HostReading {
        others_runnable: others[others.len() / 2],
        load_average,
    })
}

/// What the host did while a benchmark ran, over its processes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostSummary {
    /// The first process's host and process CPUs.
    pub cpus: HostCpus,
    /// The first process's intra-op threads.
    pub intra_op_threads: u32,
    /// Where they came from.
    pub threads_from: ThreadSource,
    /// Processes whose host was read.
    pub processes: usize,
    /// Those the host could not serve ([`HostTelemetry::contended`]).
    pub contended_processes: usize,
    /// The most runnable threads of other work at a reading of a contended process
    /// (of any process when none was).
    pub most_others_runnable: u32,
    /// The working threads of that process.
    pub working_threads: u32,
}

impl HostSummary {
    /// The summary of `processes`' readings; `None` when none was read.
    pub fn of<'a>(processes: impl IntoIterator<Item = &'a HostTelemetry>) -> Option<Self> {
        let all: Vec<&HostTelemetry> = processes.into_iter().collect();
        let first = all.first()?;
        let contended: Vec<&&HostTelemetry> = all.iter().filter(|h| h.contended()).collect();
        let worst = (if contended.is_empty() {
            all.iter().collect::<Vec<_>>()
        } else {
            contended.clone()
        })
        .into_iter()
        .max_by_key(|h| h.most_others_runnable())
        .copied()
        .unwrap_or(first);
        Some(HostSummary {
            cpus: first.cpus,
            intra_op_threads: first.intra_op_threads,
            threads_from: first.threads_from,
            processes: all.len(),
            contended_processes: contended.len(),
            most_others_runnable: worst.most_others_runnable(),
            working_threads: worst.working_threads,
        })
    }

    /// `1 intra-op thread (the cores the host had free)`.
    pub fn threads_text(&self) -> String {
        threads_text(self.intra_op_threads, self.threads_from)
    }

    /// `contended in 2 of 3 processes: the host's 2 CPUs were oversubscribed: ...`,
    /// when a process was contended.
    pub fn contention_text(&self) -> Option<String> {
        (self.contended_processes > 0).then(|| {
            format!(
                "contended in {} of {} process{}: {}",
                self.contended_processes,
                self.processes,
                if self.processes == 1 { "" } else { "es" },
                contention_text(self.cpus, self.most_others_runnable, self.working_threads)
            )
        })
    }
}

/// The cores the host has free now for this process ([`free_cores`] of a reading
/// now); 1 when the host cannot be read.
pub fn free_cores_now() -> u32 {
    match (read_cpus(), read_now()) {
        (Ok(cpus), Ok(now)) => free_cores(cpus, now.others_runnable),
        _ => 1,
    }
}

/// `procs_running` of `/proc/stat`: threads runnable on the host now, the reader
/// included.
pub fn procs_running(stat: &str) -> Option<u32> {
    stat.lines()
        .find_map(|l| l.strip_prefix("procs_running "))
        .and_then(|v| v.trim().parse().ok())
}

/// CPUs online: the `cpuN` lines of `/proc/stat` (the `cpu` line is their sum).
pub fn online_cpus(stat: &str) -> u32 {
    stat.lines()
        .filter(|l| {
            l.strip_prefix("cpu")
                .and_then(|rest| rest.split(' ').next())
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        })
        .count() as u32
}

/// The one-minute load average, the first field of `/proc/loadavg`.
pub fn load_average(loadavg: &str) -> Option<f64> {
    loadavg.split_whitespace().next()?.parse().ok()
}

/// The state letter of a `/proc/<pid>/task/<tid>/stat` line (`R` running, `S`
/// sleeping, ...): the field after the command, which is in parentheses and may hold
/// spaces and parentheses itself.
pub fn task_state(stat: &str) -> Option<char> {
    let (_, after) = stat.rsplit_once(')')?;
    after.trim_start().chars().next()
}

/// This process's threads that are running or runnable now.
fn own_running_threads() -> u32 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    tasks
        .filter_map(Result::ok)
        .filter_map(|t| std::fs::read_to_string(t.path().join("stat")).ok())
        .filter(|s| task_state(s) == Some('R'))
        .count() as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = "cpu  4705 356 584 3699 23 23 0 0 0 0\n\
        cpu0 1393 280 290 1840 12 12 0 0 0 0\n\
        cpu1 3312 76 294 1859 11 11 0 0 0 0\n\
        intr 114930548 113199788 3 0 5 263 0 4\n\
        ctxt 1990473\n\
        btime 1062191376\n\
        processes 2915\n\
        procs_running 5\n\
        procs_blocked 0\n";

    fn cpus(online: u32, available: u32) -> HostCpus {
        HostCpus { online, available }
    }

    fn telemetry(start: u32, end: u32, working: u32) -> HostTelemetry {
        let reading = |others| HostReading {
            others_runnable: others,
            load_average: Some(4.0),
        };
        HostTelemetry {
            cpus: cpus(2, 2),
            intra_op_threads: working,
            threads_from: ThreadSource::FreeCores,
            working_threads: working,
            start: reading(start),
            end: reading(end),
        }
    }

    #[test]
    fn proc_files_are_read_as_the_kernel_writes_them() {
        assert_eq!(procs_running(STAT), Some(5));
        assert_eq!(online_cpus(STAT), 2);
        assert_eq!(procs_running("cpu 1 2 3\n"), None);
        assert_eq!(load_average("3.98 2.93 2.18 5/118 688\n"), Some(3.98));
        assert_eq!(load_average(""), None);
        // The command may hold spaces and parentheses: the state follows the last one.
        assert_eq!(task_state("4242 (tokio (rt) 1) R 1 4242 4242 0"), Some('R'));
        assert_eq!(task_state("4243 (bench) S 1 4242"), Some('S'));
        assert_eq!(task_state("garbage"), None);
    }

    #[test]
    fn the_cpu_device_gets_the_cores_other_work_leaves_free_and_at_least_one() {
        // An idle 2-core host: both cores.
        assert_eq!(free_cores(cpus(2, 2), 0), 2);
        // A parallel build keeping one core busy: one.
        assert_eq!(free_cores(cpus(2, 2), 1), 1);
        // Four `yes > /dev/null` on two cores: none free, and one thread still runs.
        assert_eq!(free_cores(cpus(2, 2), 4), 1);
        // A process allowed 4 of 64 CPUs on a host whose other work uses 30: its 4.
        assert_eq!(free_cores(cpus(64, 4), 30), 4);
        // ... and of 62 busy, the 2 left.
        assert_eq!(free_cores(cpus(64, 4), 62), 2);
    }

    #[test]
    fn a_process_is_contended_when_its_threads_and_the_others_do_not_fit() {
        // Idle host, two threads on two CPUs: fits.
        assert!(!telemetry(0, 0, 2).contended());
        // One other runnable thread and one of ours: fits.
        assert!(!telemetry(1, 0, 1).contended());
        // A build that started while it measured, seen at the end only.
        assert!(telemetry(0, 2, 1).contended());
        // Four busy threads from the start.
        assert!(telemetry(4, 4, 1).contended());
        assert_eq!(telemetry(0, 0, 2).contention_text(), None);
        assert_eq!(
            telemetry(4, 3, 1).contention_text().unwrap(),
            "the host's 2 CPUs were oversubscribed: 4 runnable threads of other work \
             beside this benchmark's 1"
        );
        assert_eq!(
            telemetry(0, 0, 1).threads_text(),
            "1 intra-op thread (the cores the host had free)"
        );
        let summary = HostSummary::of([&telemetry(0, 0, 1), &telemetry(3, 4, 1)]).unwrap();
        assert_eq!(
            summary.contention_text().unwrap(),
            "contended in 1 of 2 processes: the host's 2 CPUs were oversubscribed: 4 \
             runnable threads of other work beside this benchmark's 1"
        );
        let quiet = HostSummary::of([&telemetry(0, 0, 2)]).unwrap();
        assert_eq!(quiet.contention_text(), None);
        assert_eq!(
            quiet.threads_text(),
            "2 intra-op threads (the cores the host had free)"
        );
        assert!(HostSummary::of([]).is_none());
        // Its own threads alone more than the CPUs it may use.
        assert!(oversubscribed(cpus(2, 2), 0, 4));
        assert!(oversubscribed(cpus(64, 2), 0, 3));
        assert!(!oversubscribed(cpus(64, 2), 30, 2));
    }

    #[test]
    fn this_host_reads() {
        // Linux only; elsewhere the harness records why there is no reading.
        if !std::path::Path::new("/proc/stat").exists() {
            return;
        }
        let c = read_cpus().expect("/proc/stat reads");
        assert!(c.online >= 1 && c.available >= 1, "{c:?}");
        let r = read_now().expect("/proc/stat reads");
        assert!(r.load_average.is_some_and(|l| l >= 0.0), "{r:?}");
    }
}
