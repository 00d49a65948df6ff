//! What the GPU did in one call of a routine: its kernel time (the GPU's own work
//! without host gaps), the table of its kernels, copies and memsets, and exact counts
//! per call; and how two of them differ (new, gone, slower and faster kernels, counter
//! changes).
//!
//! Kernel time is stable where host timing is not: on an H200, CUDA-graph replay of an
//! add of 1M floats varied by 1.2% over 8 processes while eager back-to-back calls
//! varied by 63%. The counts are exact: one more kernel per call is a change no noise
//! can hide.

use serde::{Deserialize, Serialize};

/// Kernels kept by name in a table; the rest are summed in one row.
pub const TABLE_ROWS: usize = 20;
/// The name of the row that sums the kernels beyond [`TABLE_ROWS`].
pub const OTHERS: &str = "(others)";
/// A kernel is called slower or faster when its time per call moved by more than this
/// (profiled kernel times move by a few percent between processes).
pub const KERNEL_CHANGE: f64 = 0.05;

/// How a kernel time was taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KernelMethod {
    /// CUDA-graph replay of captured calls, between device events: the kernels back
    /// to back, as the GPU runs them with no host in the way.
    GraphReplay,
    /// The sum of the kernels', copies' and memsets' durations from the profiler
    /// (CUPTI), for a routine that cannot be captured in a graph.
    Profiler,
}

impl KernelMethod {
    /// Words for tables.
    pub fn label(self) -> &'static str {
        match self {
            KernelMethod::GraphReplay => "CUDA-graph replay",
            KernelMethod::Profiler => "profiler",
        }
    }
}

/// What a row of the kernel table is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActivityKind {
    /// A kernel.
    Kernel,
    /// A memory copy.
    Memcpy,
    /// A memset.
    Memset,
    /// The kernels beyond the table's rows, summed.
    Others,
}

impl ActivityKind {
    /// Words for tables.
    pub fn label(self) -> &'static str {
        match self {
            ActivityKind::Kernel => "kernel",
            ActivityKind::Memcpy => "memcpy",
            ActivityKind::Memset => "memset",
            ActivityKind::Others => "others",
        }
    }
}

/// One row of a call's kernel table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelStat {
    /// The kernel's name as the driver reports it, or [`OTHERS`].
    pub name: String,
    /// Kernel, copy or memset.
    pub kind: ActivityKind,
    /// Launches per call.
    pub count_per_call: f64,
    /// Time per call, all its launches together, ns.
    pub ns_per_call: f64,
}

impl KernelStat {
    /// Whether its launches per call differ from `was`'s (the others row has no
    /// launches of its own to compare).
    pub fn count_moved(&self, was: &KernelStat) -> bool {
        self.kind != ActivityKind::Others && (was.count_per_call - self.count_per_call).abs() > 1e-9
    }

    /// Its time per call relative to `was`'s (`0.12`: 12% slower), when that moved by
    /// more than [`KERNEL_CHANGE`].
    pub fn time_moved(&self, was: &KernelStat) -> Option<f64> {
        let r = self.ns_per_call / was.ns_per_call - 1.0;
        (was.ns_per_call > 0.0 && r.abs() > KERNEL_CHANGE).then_some(r)
    }
}

/// Exact counts per call of a routine, from a profiled stretch of calls.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Counters {
    /// Calls the counts are over.
    pub calls: u64,
    /// Kernel launches.
    pub kernels: u64,
    /// Memory copies.
    pub memcpys: u64,
    /// Memsets.
    pub memsets: u64,
    /// Host–device synchronisations the routine made (stream, device and event
    /// syncs; a `.item()` is one).
    pub syncs: u64,
    /// Allocations from the caching allocator, when it keeps statistics (CUDA).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocations: Option<u64>,
    /// Bytes those allocations asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocated_bytes: Option<u64>,
}

/// The counters [`Counters`] holds, in the order tables show them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Counter {
    /// Kernel launches.
    Kernels,
    /// Memory copies.
    Memcpys,
    /// Memsets.
    Memsets,
    /// Host–device synchronisations.
    Syncs,
    /// Caching-allocator allocations.
    Allocations,
    /// Bytes allocated.
    AllocatedBytes,
}

impl Counter {
    /// Every counter.
    pub const ALL: [Counter; 6] = [
        Counter::Kernels,
        Counter::Memcpys,
        Counter::Memsets,
        Counter::Syncs,
        Counter::Allocations,
        Counter::AllocatedBytes,
    ];

    /// The singular noun, for "1 more kernel per call".
    pub fn noun(self) -> &'static str {
        match self {
            Counter::Kernels => "kernel",
            Counter::Memcpys => "memcpy",
            Counter::Memsets => "memset",
            Counter::Syncs => "sync",
            Counter::Allocations => "allocation",
            Counter::AllocatedBytes => "byte allocated",
        }
    }

    /// The plural noun.
    pub fn nouns(self) -> &'static str {
        match self {
            Counter::Kernels => "kernels",
            Counter::Memcpys => "memcpys",
            Counter::Memsets => "memsets",
            Counter::Syncs => "syncs",
            Counter::Allocations => "allocations",
            Counter::AllocatedBytes => "bytes allocated",
        }
    }
}

impl Counters {
    /// The total of `counter` over the calls, when counted.
    pub fn total(&self, counter: Counter) -> Option<u64> {
        match counter {
            Counter::Kernels => Some(self.kernels),
            Counter::Memcpys => Some(self.memcpys),
            Counter::Memsets => Some(self.memsets),
            Counter::Syncs => Some(self.syncs),
            Counter::Allocations => self.allocations,
            Counter::AllocatedBytes => self.allocated_bytes,
        }
    }

    /// `counter` per call, when counted.
    pub fn per_call(&self, counter: Counter) -> Option<f64> {
        let total = self.total(counter)?;
        (self.calls > 0).then(|| total as f64 / self.calls as f64)
    }
}

/// What one process measured of the GPU's work per call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelMeasurement {
    /// How the kernel time was taken.
    pub method: KernelMethod,
    /// Why the routine could not be captured in a CUDA graph, when it could not (the
    /// kernel time then comes from the profiler).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_capturable: Option<String>,
    /// Kernel time per call of each sample (a stretch of graph replays, or of profiled
    /// calls), ns.
    pub samples_ns: Vec<f64>,
    /// The kernels, copies and memsets of one call, most time first, the ones beyond
    /// [`TABLE_ROWS`] summed in an [`OTHERS`] row; empty in a process that did not
    /// profile (the first process of a benchmark does).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kernels: Vec<KernelStat>,
    /// Exact counts per call, from the process that profiled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counters: Option<Counters>,
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

/// A table of one call from `(name, kind, launches, total ns)` over `calls` calls:
/// per-call figures, most time first, the rows beyond [`TABLE_ROWS`] summed.
pub fn table(rows: &[(String, ActivityKind, u64, f64)], calls: u64) -> Vec<KernelStat> {
    let calls = calls.max(1) as f64;
    let mut by_name: Vec<KernelStat> = Vec::new();
    for (name, kind, count, ns) in rows {
        match by_name
            .iter_mut()
            .find(|k| k.name == *name && k.kind == *kind)
        {
            Some(k) => {
                k.count_per_call += *count as f64 / calls;
                k.ns_per_call += ns / calls;
            }
            None => by_name.push(KernelStat {
                name: name.clone(),
                kind: *kind,
                count_per_call: *count as f64 / calls,
                ns_per_call: ns / calls,
            }),
        }
    }
    by_name.sort_by(|a, b| {
        b.ns_per_call
            .total_cmp(&a.ns_per_call)
            .then_with(|| a.name.cmp(&b.name))
    });
    if by_name.len() > TABLE_ROWS {
        let rest = by_name.split_off(TABLE_ROWS);
        by_name.push(KernelStat {
            name: OTHERS.to_string(),
            kind: ActivityKind::Others,
            count_per_call: rest.iter().map(|k| k.count_per_call).sum(),
            ns_per_call: rest.iter().map(|k| k.ns_per_call).sum(),
        });
    }
    by_name
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
