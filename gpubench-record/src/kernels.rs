//! What the GPU did in one call of a routine, as a record holds it: its kernel time
//! (the GPU's own work without host gaps), the table of its kernels, copies and
//! memsets, and exact counts per call. How two of them differ is
//! `gpubench-analysis`'s (`kernels`).
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
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
    /// The L2 cache the kernel timer's calls started with; absent in older records
    /// (warm there: graph replays ran back to back).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub l2: Option<crate::cache::L2State>,
    /// The GPU's clock read after each replay with `--flush-l2`, where the replays
    /// are paced as the samples are (a sync, a flush and a clock read around each),
    /// so a reader sees whether kernel and device time ran at the same clock; absent
    /// without the flush (replays back to back), without GPU telemetry and in older
    /// records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock: Option<ReplayClock>,
}

/// The SM clock read after each paced replay of a kernel-time measurement, summed
/// up: the regime the kernel timer ran in, beside the samples' own clocks.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ReplayClock {
    /// Clock reads, one after each replay.
    pub reads: u32,
    /// Mean SM clock over the reads, MHz.
    pub sm_mhz_mean: f64,
    /// Lowest SM clock read, MHz.
    pub sm_mhz_min: u32,
    /// Highest SM clock read, MHz.
    pub sm_mhz_max: u32,
    /// Reads with NVML's software power cap among the slowdown reasons: replays the
    /// board's power limit held down.
    pub power_capped: u32,
    /// Reads the throttle rule calls throttled (the samples leave such samples out;
    /// the replays are kept, and this says how many ran so).
    pub throttled: u32,
}

impl ReplayClock {
    /// The share of the reads that ran power-capped, 0 to 1.
    pub fn power_capped_share(&self) -> f64 {
        if self.reads == 0 {
            return 0.0;
        }
        f64::from(self.power_capped) / f64::from(self.reads)
    }
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
