//! Progress on stderr while benchmarks run: a bar with the current benchmark and how
//! many processes remain when stderr is a terminal, and one line per finished process
//! (a process of a benchmark) always (so CI logs show progress too); neither with `-q`.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Progress of a run.
#[derive(Debug)]
pub(crate) struct Progress {
    bar: Option<ProgressBar>,
    /// Whether a line is printed per finished process (not with `-q`).
    lines: bool,
    total: usize,
    done: usize,
}

impl Progress {
    /// Progress over `total` processes (more may be added); the bar shows only when
    /// `bar_wanted` and stderr is a terminal, and nothing shows with `-q`.
    pub(crate) fn new(total: usize, bar_wanted: bool) -> Self {
        let lines = !crate::console::get().quiet();
        let bar = (lines && bar_wanted && std::io::stderr().is_terminal()).then(|| {
            let bar =
                ProgressBar::with_draw_target(Some(total as u64), ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template("{spinner} [{pos}/{len}] {wide_msg} {elapsed:>4}")
                    .expect("the template is valid"),
            );
            bar.enable_steady_tick(Duration::from_millis(200));
            bar
        });
        Progress {
            bar,
            lines,
            total,
            done: 0,
        }
    }

    /// `n` more processes will run.
    pub(crate) fn add(&mut self, n: usize) {
        self.set_total(self.total + n);
    }

    /// `n` of the processes counted will not run (their benchmark failed or needs no
    /// more).
    pub(crate) fn drop_planned(&mut self, n: usize) {
        self.set_total(self.total.saturating_sub(n).max(self.done));
    }

    /// `n` of the processes counted will not run, counted as finished rather than
    /// taken off the total, so the total a user was shown never shrinks (`ab`, whose
    /// benchmarks all have a floor of processes).
    pub(crate) fn skip(&mut self, n: usize) {
        self.done = (self.done + n).min(self.total);
        if let Some(bar) = &self.bar {
            bar.set_position(self.done as u64);
        }
    }

    fn set_total(&mut self, total: usize) {
        self.total = total;
        if let Some(bar) = &self.bar {
            bar.set_length(total as u64);
        }
    }

    /// Process `process` of `name` starts (on device `on`, when a run has several).
    pub(crate) fn start(&self, name: &str, process: u32, on: Option<&str>) {
        if let Some(bar) = &self.bar {
            let after = self.total.saturating_sub(self.done + 1);
            bar.set_message(format!(
                "{name} process {process}{} (then {after} more)",
                on_words(on)
            ));
        }
    }

    /// Process `process` of a benchmark finished (on device `on`, when a run has several)
    /// with `status` (`passed`, `failed`, ...) after `seconds`; `reason` says why it
    /// failed.
    pub(crate) fn finish_one(
        &mut self,
        name: &str,
        process: u32,
        on: Option<&str>,
        status: &str,
        reason: Option<&str>,
        seconds: f64,
    ) {
        self.done += 1;
        let mut line = format!(
            "{status:>11} [{}/{}] {name} process {process}{} ({seconds:.1} s)",
            self.done,
            self.total,
            on_words(on)
        );
        if let Some(reason) = reason {
            line.push_str(": ");
            line.push_str(reason);
        }
        match &self.bar {
            Some(bar) => {
                bar.println(line);
                bar.inc(1);
            }
            None if self.lines => eprintln!("{line}"),
            None => {}
        }
    }

    /// Removes the bar.
    pub(crate) fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// ` on cuda:1`, or nothing.
fn on_words(on: Option<&str>) -> String {
    on.map(|d| format!(" on {d}")).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn processes_that_will_not_run_can_be_skipped_without_shrinking_the_total() {
        let mut p = Progress::new(10, false);
        p.finish_one("a", 1, None, "failed", None, 0.1);
        // The rest of `a`'s floor will not run.
        p.skip(4);
        assert_eq!((p.done, p.total), (5, 10));
        p.add(1);
        p.finish_one("b", 1, None, "passed", None, 0.1);
        assert_eq!((p.done, p.total), (6, 11));
        p.skip(100);
        assert_eq!(p.done, p.total, "never past the total");
    }
}
