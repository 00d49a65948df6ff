//! How the GPU's work of two calls differs: new, gone, slower and faster kernels and
//! counter changes; and the kernel tables of several processes merged into one. The
//! tables and counters themselves are the record's ([`gpubench_record::kernels`]).

use serde::{Deserialize, Serialize};

use gpubench_record::kernels::*;

/// A kernel is called slower or faster when its time per call moved by more than this
/// (profiled kernel times move by a few percent between processes).
pub const KERNEL_CHANGE: f64 = 0.05;

/// How a kernel's row moved against the baseline's row of the same kernel.
pub trait KernelStatMoves {
    /// Whether its launches per call differ from `was`'s (the others row has no
    /// launches of its own to compare).
    fn count_moved(&self, was: &KernelStat) -> bool;

    /// Its time per call relative to `was`'s (`0.12`: 12% slower), when that moved by
    /// more than [`KERNEL_CHANGE`].
    fn time_moved(&self, was: &KernelStat) -> Option<f64>;
}

impl KernelStatMoves for KernelStat {
    /// Whether its launches per call differ from `was`'s (the others row has no
    /// launches of its own to compare).
    fn count_moved(&self, was: &KernelStat) -> bool {
        self.kind != ActivityKind::Others && (was.count_per_call - self.count_per_call).abs() > 1e-9
    }

    /// Its time per call relative to `was`'s (`0.12`: 12% slower), when that moved by
    /// more than [`KERNEL_CHANGE`].
    fn time_moved(&self, was: &KernelStat) -> Option<f64> {
        let r = self.ns_per_call / was.ns_per_call - 1.0;
        (was.ns_per_call > 0.0 && r.abs() > KERNEL_CHANGE).then_some(r)
    }
}

/// A counter that differs between a baseline and a run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CounterChange {
    /// Which counter.
    pub counter: Counter,
    /// Per call in the baseline.
    pub baseline: f64,
    /// Per call now.
    pub current: f64,
}

impl CounterChange {
    /// Whether the count went up.
    pub fn is_increase(&self) -> bool {
        self.current > self.baseline
    }

    /// `+1 kernel per call`, `new sync: 1 per call`, `-2 allocations per call`.
    pub fn describe(&self) -> String {
        let d = self.current - self.baseline;
        if self.baseline == 0.0 && self.current > 0.0 {
            return format!(
                "new {}: {} per call",
                self.counter.noun(),
                count_text(self.current)
            );
        }
        let noun = if (d.abs() - 1.0).abs() < 1e-9 {
            self.counter.noun()
        } else {
            self.counter.nouns()
        };
        let sign = if d > 0.0 { "+" } else { "-" };
        format!("{sign}{} {noun} per call", count_text(d.abs()))
    }
}

/// A whole number without decimals, anything else with two.
pub fn count_text(x: f64) -> String {
    if (x - x.round()).abs() < 1e-9 {
        format!("{}", x.round() as i64)
    } else {
        format!("{x:.2}")
    }
}

/// The counters whose per-call values differ, in [`Counter::ALL`]'s order; a counter
/// one side did not count is left out.
pub fn counter_changes(baseline: &Counters, current: &Counters) -> Vec<CounterChange> {
    Counter::ALL
        .into_iter()
        .filter_map(|c| {
            let (b, n) = (baseline.per_call(c)?, current.per_call(c)?);
            ((b - n).abs() > 1e-9).then_some(CounterChange {
                counter: c,
                baseline: b,
                current: n,
            })
        })
        .collect()
}

/// How one kernel differs between a baseline and a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "change", rename_all = "snake_case")]
pub enum KernelChange {
    /// Only this run launches it.
    New {
        /// The kernel.
        name: String,
        /// Its time per call now, ns.
        ns_per_call: f64,
    },
    /// Only the baseline launched it.
    Gone {
        /// The kernel.
        name: String,
        /// Its time per call in the baseline, ns.
        ns_per_call: f64,
    },
    /// Both launch it; its time or count per call moved.
    Changed {
        /// The kernel.
        name: String,
        /// Time per call in the baseline, ns.
        baseline_ns: f64,
        /// Time per call now, ns.
        current_ns: f64,
        /// Launches per call in the baseline.
        baseline_count: f64,
        /// Launches per call now.
        current_count: f64,
    },
}

impl KernelChange {
    /// The kernel's name.
    pub fn name(&self) -> &str {
        match self {
            KernelChange::New { name, .. }
            | KernelChange::Gone { name, .. }
            | KernelChange::Changed { name, .. } => name,
        }
    }

    /// `kernel `X` +12%`, `new kernel `Y``, `kernel `Z` gone`.
    pub fn describe(&self) -> String {
        match self {
            KernelChange::New { name, .. } => format!("new kernel `{name}`"),
            KernelChange::Gone { name, .. } => format!("kernel `{name}` gone"),
            KernelChange::Changed {
                name,
                baseline_ns,
                current_ns,
                baseline_count,
                current_count,
            } => {
                let mut parts = Vec::new();
                if (baseline_count - current_count).abs() > 1e-9 {
                    parts.push(format!(
                        "{} → {} launches per call",
                        count_text(*baseline_count),
                        count_text(*current_count)
                    ));
                }
                if *baseline_ns > 0.0 {
                    let r = current_ns / baseline_ns - 1.0;
                    if r.abs() > KERNEL_CHANGE {
                        parts.push(format!("{:+.0}%", r * 100.0));
                    }
                }
                format!("kernel `{name}` {}", parts.join(", "))
            }
        }
    }
}

/// The kernels that are new, gone, or whose count per call moved or whose time per
/// call moved by more than [`KERNEL_CHANGE`], largest time first. The [`OTHERS`] rows
/// are compared by time only.
pub fn kernel_changes(baseline: &[KernelStat], current: &[KernelStat]) -> Vec<KernelChange> {
    let key = |k: &KernelStat| (k.kind, k.name.clone());
    let mut out = Vec::new();
    for k in current {
        match baseline.iter().find(|b| key(b) == key(k)) {
            None if k.kind != ActivityKind::Others => out.push(KernelChange::New {
                name: k.name.clone(),
                ns_per_call: k.ns_per_call,
            }),
            Some(b) if k.count_moved(b) || k.time_moved(b).is_some() => {
                out.push(KernelChange::Changed {
                    name: k.name.clone(),
                    baseline_ns: b.ns_per_call,
                    current_ns: k.ns_per_call,
                    baseline_count: b.count_per_call,
                    current_count: k.count_per_call,
                })
            }
            None | Some(_) => {}
        }
    }
    for b in baseline {
        if b.kind != ActivityKind::Others && !current.iter().any(|k| key(k) == key(b)) {
            out.push(KernelChange::Gone {
                name: b.name.clone(),
                ns_per_call: b.ns_per_call,
            });
        }
    }
    let size = |c: &KernelChange| match c {
        KernelChange::New { ns_per_call, .. } | KernelChange::Gone { ns_per_call, .. } => {
            *ns_per_call
        }
        KernelChange::Changed {
            baseline_ns,
            current_ns,
            ..
        } => (current_ns - baseline_ns).abs(),
    };
    out.sort_by(|a, b| size(b).total_cmp(&size(a)));
    out
}

/// The kernel tables of several processes as one: each row's figures averaged over
/// the processes (a row a process lacks counts as zero there), most time first.
pub fn merge_tables(tables: &[&[KernelStat]]) -> Vec<KernelStat> {
    let n = tables.len().max(1) as f64;
    let mut out: Vec<KernelStat> = Vec::new();
    for t in tables {
        for k in *t {
            match out
                .iter_mut()
                .find(|o| o.name == k.name && o.kind == k.kind)
            {
                Some(o) => {
                    o.count_per_call += k.count_per_call / n;
                    o.ns_per_call += k.ns_per_call / n;
                }
                None => out.push(KernelStat {
                    count_per_call: k.count_per_call / n,
                    ns_per_call: k.ns_per_call / n,
                    ..k.clone()
                }),
            }
        }
    }
    out.sort_by(|a, b| b.ns_per_call.total_cmp(&a.ns_per_call));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat(name: &str, count: f64, ns: f64) -> KernelStat {
        KernelStat {
            name: name.into(),
            kind: ActivityKind::Kernel,
            count_per_call: count,
            ns_per_call: ns,
        }
    }

    fn counters(kernels: u64, syncs: u64) -> Counters {
        Counters {
            calls: 10,
            kernels,
            memcpys: 0,
            memsets: 0,
            syncs,
            allocations: Some(10),
            allocated_bytes: Some(40_960),
        }
    }

    #[test]
    fn counter_changes_are_exact_and_worded() {
        assert!(counter_changes(&counters(20, 0), &counters(20, 0)).is_empty());
        let c = counter_changes(&counters(20, 0), &counters(30, 10));
        assert_eq!(c.len(), 2);
        assert_eq!(c[0].describe(), "+1 kernel per call");
        assert_eq!(c[1].describe(), "new sync: 1 per call");
        assert!(c.iter().all(CounterChange::is_increase));
        let fewer = counter_changes(&counters(30, 0), &counters(10, 0));
        assert_eq!(fewer[0].describe(), "-2 kernels per call");
        assert!(!fewer[0].is_increase());
        // A counter one side did not count is no change.
        let mut cpu = counters(20, 0);
        cpu.allocations = None;
        assert!(counter_changes(&counters(20, 0), &cpu).is_empty());
    }

    #[test]
    fn kernel_changes_name_new_gone_slower_and_more_launches() {
        let was = [
            stat("add", 1.0, 2000.0),
            stat("mul", 1.0, 1000.0),
            stat("old", 1.0, 50.0),
        ];
        let now = [
            stat("add", 1.0, 2300.0),
            stat("mul", 2.0, 2000.0),
            stat("new", 1.0, 400.0),
        ];
        let c = kernel_changes(&was, &now);
        let words: Vec<String> = c.iter().map(KernelChange::describe).collect();
        assert_eq!(
            words,
            [
                "kernel `mul` 1 → 2 launches per call, +100%",
                "new kernel `new`",
                "kernel `add` +15%",
                "kernel `old` gone",
            ]
        );
        // Within 5% is no change.
        assert!(kernel_changes(
            &was,
            &[stat("add", 1.0, 2050.0), was[1].clone(), was[2].clone()]
        )
        .is_empty());
    }

    #[test]
    fn tables_sum_per_call_and_fold_the_tail() {
        let mut rows: Vec<(String, ActivityKind, u64, f64)> = (0..25)
            .map(|i| {
                (
                    format!("k{i:02}"),
                    ActivityKind::Kernel,
                    10,
                    1000.0 * (25 - i) as f64,
                )
            })
            .collect();
        rows.push(("k00".into(), ActivityKind::Kernel, 10, 1000.0));
        rows.push(("copy".into(), ActivityKind::Memcpy, 10, 100.0));
        let t = table(&rows, 10);
        assert_eq!(t.len(), TABLE_ROWS + 1);
        assert_eq!(t[0].name, "k00");
        assert_eq!((t[0].count_per_call, t[0].ns_per_call), (2.0, 2600.0));
        let others = t.last().unwrap();
        assert_eq!(
            (others.name.as_str(), others.kind),
            (OTHERS, ActivityKind::Others)
        );
        // k20..k24 (500, 400, 300, 200, 100 ns per call) and the copy (10 ns).
        assert_eq!(others.count_per_call, 6.0);
        assert!((others.ns_per_call - 1510.0).abs() < 1e-9, "{others:?}");
        let merged = merge_tables(&[&t[..2], &t[1..3]]);
        assert_eq!(merged[0].name, "k01");
        assert_eq!(merged[0].ns_per_call, t[1].ns_per_call);
    }
}
