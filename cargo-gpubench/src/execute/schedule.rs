//! Which process each device runs next: process 1 of every benchmark in order, each to
//! the first device free, then the further processes of a device's own benchmarks,
//! fewest processes first. A device runs one process at a time and a benchmark stays on
//! the device of its first process, so its record names one GPU.
//!
//! With one device this is the order a run has always had: process 1 of every
//! benchmark, then process 2 of those that need one, and so on, so drift and machine
//! state hit every benchmark alike.

/// One process to run: process `process` of benchmark `bench` (an index into the run's
/// benchmarks).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Job {
    /// The benchmark's index.
    pub bench: usize,
    /// Its process, from 1.
    pub process: u32,
}

/// The state of a run's benchmarks across its devices.
#[derive(Debug)]
pub(crate) struct Schedule {
    /// The first benchmark no device has taken yet.
    next_new: usize,
    /// Per benchmark: the device slot that runs it, once taken.
    owner: Vec<Option<usize>>,
    /// Per benchmark: processes started.
    processes: Vec<u32>,
    /// Per benchmark: whether a process of it is running.
    running: Vec<bool>,
    /// Per benchmark: whether it needs no more processes.
    done: Vec<bool>,
}

impl Schedule {
    /// A schedule over `benchmarks` benchmarks, none started.
    pub(crate) fn new(benchmarks: usize) -> Self {
        Schedule {
            next_new: 0,
            owner: vec![None; benchmarks],
            processes: vec![0; benchmarks],
            running: vec![false; benchmarks],
            done: vec![false; benchmarks],
        }
    }

    /// The next process for device `slot`, which has none running; `None` when it has
    /// nothing left to run (and never will again: only it adds processes to its own
    /// benchmarks).
    pub(crate) fn next(&mut self, slot: usize) -> Option<Job> {
        debug_assert!(
            !(0..self.owner.len()).any(|i| self.owner[i] == Some(slot) && self.running[i]),
            "device slot {slot} asked for a job while one of its own runs"
        );
        let bench = if self.next_new < self.owner.len() {
            let i = self.next_new;
            self.next_new += 1;
            self.owner[i] = Some(slot);
            i
        } else {
            (0..self.owner.len())
                .filter(|&i| self.owner[i] == Some(slot) && !self.done[i] && !self.running[i])
                .min_by_key(|&i| (self.processes[i], i))?
        };
        self.processes[bench] += 1;
        self.running[bench] = true;
        Some(Job {
            bench,
            process: self.processes[bench],
        })
    }

    /// `job` finished; `done` when its benchmark needs no more processes.
    pub(crate) fn finished(&mut self, job: Job, done: bool) {
        self.running[job.bench] = false;
        self.done[job.bench] = done;
    }

    /// The device slot that runs benchmark `bench`, once one has taken it.
    #[cfg(test)]
    fn owner(&self, bench: usize) -> Option<usize> {
        self.owner[bench]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the schedule to the end with `devices` devices taking turns, each
    /// benchmark needing `needs[i]` processes; returns the jobs in the order they
    /// started, with their device.
    fn drain(needs: &[u32], devices: usize) -> Vec<(usize, Job)> {
        let mut s = Schedule::new(needs.len());
        let mut order = Vec::new();
        let mut idle = vec![false; devices];
        while idle.iter().any(|i| !i) {
            for (slot, idle) in idle.iter_mut().enumerate() {
                if *idle {
                    continue;
                }
                match s.next(slot) {
                    Some(job) => {
                        order.push((slot, job));
                        s.finished(job, job.process >= needs[job.bench]);
                    }
                    None => *idle = true,
                }
            }
        }
        order
    }

    #[test]
    fn one_device_runs_process_one_of_all_then_process_two_of_those_that_need_it() {
        let order: Vec<(usize, u32)> = drain(&[3, 1, 2], 1)
            .into_iter()
            .map(|(_, j)| (j.bench, j.process))
            .collect();
        assert_eq!(order, [(0, 1), (1, 1), (2, 1), (0, 2), (2, 2), (0, 3)]);
    }

    #[test]
    fn a_benchmark_stays_on_the_device_of_its_first_process() {
        let order = drain(&[3, 3, 2, 1, 3], 2);
        for bench in 0..5 {
            let slots: Vec<usize> = order
                .iter()
                .filter(|(_, j)| j.bench == bench)
                .map(|(slot, _)| *slot)
                .collect();
            assert!(slots.windows(2).all(|w| w[0] == w[1]), "{bench}: {slots:?}");
        }
        // Every process of every benchmark ran, once.
        let mut processes: Vec<(usize, u32)> =
            order.iter().map(|(_, j)| (j.bench, j.process)).collect();
        processes.sort();
        let want: Vec<(usize, u32)> = [3, 3, 2, 1, 3]
            .iter()
            .enumerate()
            .flat_map(|(b, &n)| (1..=n).map(move |r| (b, r)))
            .collect();
        assert_eq!(processes, want);
    }

    #[test]
    fn new_benchmarks_go_to_whichever_device_asks_first() {
        let mut s = Schedule::new(3);
        assert_eq!(
            s.next(1),
            Some(Job {
                bench: 0,
                process: 1
            })
        );
        assert_eq!(
            s.next(0),
            Some(Job {
                bench: 1,
                process: 1
            })
        );
        // Device 1 is still busy with benchmark 0; device 0 finishes and takes the next.
        s.finished(
            Job {
                bench: 1,
                process: 1,
            },
            false,
        );
        assert_eq!(
            s.next(0),
            Some(Job {
                bench: 2,
                process: 1
            })
        );
        s.finished(
            Job {
                bench: 2,
                process: 1,
            },
            true,
        );
        // Process 2 of its own benchmark, never of device 1's.
        assert_eq!(
            s.next(0),
            Some(Job {
                bench: 1,
                process: 2
            })
        );
        s.finished(
            Job {
                bench: 1,
                process: 2,
            },
            true,
        );
        assert_eq!(s.next(0), None);
        assert_eq!(
            (s.owner(0), s.owner(1), s.owner(2)),
            (Some(1), Some(0), Some(0))
        );
        s.finished(
            Job {
                bench: 0,
                process: 1,
            },
            false,
        );
        assert_eq!(
            s.next(1),
            Some(Job {
                bench: 0,
                process: 2
            })
        );
    }
}
