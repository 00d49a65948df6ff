//! The intra-op threads a run's CPU work is measured on: the count of the baseline it
//! compares with (or saves over), so the two compare whatever the load; the user's
//! own count checked before anything runs; and the one note where they must differ.

use std::collections::BTreeMap;

use gpubench_analysis::baseline::BaselineEntry;
use gpubench_record::host::default_cpu_threads;
use gpubench_record::protocol::{BASELINE_CPU_THREADS_VAR, CPU_THREADS_VAR};

use crate::exit_code::UsageError;

/// What the user's environment says of the threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct UserThreads {
    /// `GPUBENCH_CPU_THREADS`.
    pub option: Option<u32>,
    /// `OMP_NUM_THREADS`.
    pub omp: Option<u32>,
    /// The CPUs this process may use.
    pub available: u32,
}

impl UserThreads {
    /// As this process finds them; `Err` names `GPUBENCH_CPU_THREADS` when it is no
    /// count, or more than the CPUs (each process would refuse it, or start that
    /// many threads).
    pub(super) fn from_env() -> Result<Self, UsageError> {
        let available = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
        let option = match std::env::var(CPU_THREADS_VAR) {
            Err(_) => None,
            Ok(v) => match v.trim().parse::<u32>() {
                Ok(n) if n >= 1 => Some(n),
                _ => {
                    return Err(UsageError(format!(
                        "{CPU_THREADS_VAR}=`{v}` is not a number of intra-op threads: set it \
                         to a count from 1 to {available} (the CPUs this process may use), or \
                         unset it"
                    )))
                }
            },
        };
        let omp = std::env::var("OMP_NUM_THREADS")
            .ok()
            .and_then(|v| v.trim().parse::<u32>().ok())
            .filter(|&n| n > 0);
        let user = UserThreads {
            option,
            omp,
            available,
        };
        user.check()?;
        Ok(user)
    }

    /// Refuses a `GPUBENCH_CPU_THREADS` beyond the CPUs, as the harness does.
    pub(super) fn check(&self) -> Result<(), UsageError> {
        match self.option {
            Some(n) if n > self.available => Err(UsageError(format!(
                "{CPU_THREADS_VAR}={n} asks for more intra-op threads than the {} CPU{} this \
                 process may use: the threads beyond them only wait for a core (and so many \
                 take each process past its timeout just starting); set it to at most {}, \
                 or unset it for {} (half the CPUs, or the baseline's)",
                self.available,
                if self.available == 1 { "" } else { "s" },
                self.available,
                default_cpu_threads(self.available)
            ))),
            _ => Ok(()),
        }
    }
}

/// The threads a run gives its CPU work, and what to say of them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(super) struct RunThreads {
    /// The count passed to every process in [`BASELINE_CPU_THREADS_VAR`]; `None`
    /// leaves the harness's own choice.
    pub baseline_count: Option<u32>,
    /// The one note where this run's count must differ from the baseline's.
    pub note: Option<String>,
}

impl RunThreads {
    /// The environment variable and value for every benchmark process, if any.
    pub(super) fn env(&self) -> Option<(&'static str, String)> {
        self.baseline_count
            .map(|n| (BASELINE_CPU_THREADS_VAR, n.to_string()))
    }
}

/// The intra-op threads of `entries`' CPU work (the baseline `name`): the count most of
/// them ran on (the smaller on a tie); `None` when none ran on the CPU device.
pub(super) fn baseline_count(entries: &[BaselineEntry]) -> Option<u32> {
    let mut counts: BTreeMap<u32, usize> = BTreeMap::new();
    for n in entries
        .iter()
        .filter_map(|e| e.config.as_ref()?.cpu_threads)
    {
        *counts.entry(n).or_default() += 1;
    }
    let most = counts.values().copied().max()?;
    counts.into_iter().find(|&(_, c)| c == most).map(|(n, _)| n)
}

/// The run's threads: the baseline `name`'s count `was` (from [`baseline_count`]) unless
/// the user chose their own, with a note, said once, where the count must differ.
pub(super) fn for_run(name: &str, was: Option<u32>, user: UserThreads) -> RunThreads {
    let Some(was) = was else {
        return RunThreads::default();
    };
    let threads = |n: u32| format!("{n} intra-op thread{}", if n == 1 { "" } else { "s" });
    let chosen = match (user.option, user.omp) {
        (Some(n), _) => Some((n, CPU_THREADS_VAR)),
        (None, Some(n)) => Some((n, "OMP_NUM_THREADS")),
        (None, None) => None,
    };
    if let Some((n, var)) = chosen {
        let note = (n != was).then(|| {
            format!(
                "{var}={n} measures CPU work on {}, the baseline `{name}` on {}: its CPU \
                 benchmarks are not compared (unset {var} to measure on the baseline's {was})",
                threads(n),
                threads(was)
            )
        });
        return RunThreads {
            baseline_count: None,
            note,
        };
    }
    if was > user.available {
        return RunThreads {
            baseline_count: Some(user.available),
            note: Some(format!(
                "the baseline `{name}` measured CPU work on {}, more than the {} CPU{} this \
                 process may use: measured on {}, its CPU benchmarks are not compared (save a \
                 baseline on this machine, or judge with `cargo gpubench ab`)",
                threads(was),
                user.available,
                if user.available == 1 { "" } else { "s" },
                threads(user.available)
            )),
        };
    }
    RunThreads {
        baseline_count: Some(was),
        note: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(option: Option<u32>, omp: Option<u32>) -> UserThreads {
        UserThreads {
            option,
            omp,
            available: 2,
        }
    }

    #[test]
    fn a_run_measures_on_its_baselines_threads_unless_the_user_chose() {
        // The baseline's count is passed on, whatever the host has free now.
        let run = for_run("main", Some(2), user(None, None));
        assert_eq!(run.baseline_count, Some(2));
        assert_eq!(run.note, None);
        assert_eq!(
            run.env(),
            Some(("GPUBENCH_BASELINE_CPU_THREADS", "2".to_string()))
        );
        // No baseline (or none of its work on the CPU): the harness's default.
        assert_eq!(
            for_run("main", None, user(None, None)),
            RunThreads::default()
        );
        // The user's count wins; the note says once what it costs and the fix.
        let run = for_run("main", Some(1), user(Some(2), None));
        assert_eq!(run.baseline_count, None);
        assert_eq!(
            run.note.as_deref(),
            Some(
                "GPUBENCH_CPU_THREADS=2 measures CPU work on 2 intra-op threads, the baseline \
                 `main` on 1 intra-op thread: its CPU benchmarks are not compared (unset \
                 GPUBENCH_CPU_THREADS to measure on the baseline's 1)"
            )
        );
        assert_eq!(for_run("main", Some(2), user(Some(2), None)).note, None);
        let omp = for_run("main", Some(1), user(None, Some(2)));
        assert!(omp.note.unwrap().starts_with("OMP_NUM_THREADS=2"));
        // A baseline from a wider machine: as many as there are, said so.
        let run = for_run("main", Some(8), user(None, None));
        assert_eq!(run.baseline_count, Some(2));
        assert!(run.note.unwrap().contains("more than the 2 CPUs"));
    }

    #[test]
    fn more_threads_than_cpus_are_refused_naming_the_variable() {
        let why = user(Some(99999), None).check().unwrap_err().0;
        assert!(
            why.starts_with(
                "GPUBENCH_CPU_THREADS=99999 asks for more intra-op threads than the 2 CPUs"
            ) && why.contains("set it to at most 2"),
            "{why}"
        );
        assert!(user(Some(2), None).check().is_ok());
    }
}
