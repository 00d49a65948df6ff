//! An `ab` comparison for the output tests: a head judged against its base from
//! paired processes, with a change the paired threshold catches, one certain but
//! under the threshold, and unchanged code.

use gpubench_analysis::baseline::compare_paired_records;
use gpubench_analysis::{BaselineEntry, CompareConfig, FailOn};
use gpubench_record::measurement::Flag;
use gpubench_record::paired::{Pairing, Role};
use gpubench_record::record::RawRecord;
use gpubench_record::testing::{sample, RecordBuilder};

use super::{Absences, RunComparison, VerdictSettings};
use crate::store::{Source, SourceKind};

/// The H200's MLP step with a 3% larger batch: +1.75% in every process, within
/// ±0.03%. Regressed under the paired threshold (±1%).
pub(crate) const MLP: &str = "mlp_step/train";
/// +0.6% in every process, within ±0.05%: certain, but under the ±1% threshold.
pub(crate) const MATMUL: &str = "matmul_bf16/4096";
/// Identical code, its per-process ratios 0.3% apart: no change.
pub(crate) const ADD: &str = "add_1m";

/// Each benchmark's base time (ns), head change and the per-process deviations of
/// its log ratio from that change.
const BENCHMARKS: [(&str, f64, f64, [f64; 5]); 3] = [
    (
        MLP,
        16.0e6,
        0.0175,
        [0.0002, -0.0003, 0.0001, 0.0003, -0.0002],
    ),
    (
        MATMUL,
        1.2e6,
        0.006,
        [0.0005, -0.0004, 0.0003, -0.0005, 0.0001],
    ),
    (ADD, 8.0e3, 0.0, [0.003, -0.003, 0.0033, -0.0033, 0.0]),
];

/// One process of a device-bound benchmark on an `NVIDIA H200`: samples of
/// `ns` per iteration times a fixed ±1% pattern.
fn process(id: &str, ns: f64) -> RawRecord {
    let pattern = [1.0, 1.01, 0.99, 1.005, 0.995, 1.002, 0.998, 1.0];
    let samples = (0..16).map(|i| {
        let device = ns * pattern[i % pattern.len()] * 10.0;
        sample(10, device * 1.02, device * 0.3, Some(device))
    });
    RecordBuilder::passed(id)
        .cuda("NVIDIA H200")
        .sync_cost(1e4)
        .samples(samples)
        .flags(&[Flag::DeviceBound])
        .device_timer(true)
        .build()
}

/// Five paired processes of one side of a benchmark: process `k` runs at
/// `ns × speed[k]`, the head's at that times its log ratio.
fn side(id: &str, ns: f64, role: Role, ratios: &[f64]) -> RawRecord {
    let speed = [1.0, 1.004, 0.997, 1.002, 0.999];
    let scale = |k: usize| match role {
        Role::Base => speed[k],
        Role::Head => speed[k] * ratios[k].exp(),
    };
    let mut r = process(id, ns * scale(0));
    for k in 1..ratios.len() {
        r.append_processes(process(id, ns * scale(k))).unwrap();
    }
    for (k, process) in r.processes.iter_mut().enumerate() {
        process.pairing = Some(Pairing {
            role,
            base_first: k % 2 == 0,
            blocks: 12,
            log_ratio: ratios[k],
            kernel_log_ratio: None,
            energy_log_ratio: None,
            energy_blocks: 0,
            energy_unpaired: None,
        });
    }
    r
}

/// The base's and the head's records.
pub(crate) fn ab_records() -> (Vec<RawRecord>, Vec<RawRecord>) {
    let mut base = Vec::new();
    let mut head = Vec::new();
    for (id, ns, change, wobble) in BENCHMARKS {
        let ratios: Vec<f64> = wobble.iter().map(|w| f64::ln_1p(change) + w).collect();
        base.push(side(id, ns, Role::Base, &ratios));
        head.push(side(id, ns, Role::Head, &ratios));
    }
    (base, head)
}

/// The head judged against the base (`abc1234`) under `config`, as `ab` judges it;
/// with the head's records.
pub(crate) fn ab_comparison(config: CompareConfig) -> (Vec<RawRecord>, RunComparison) {
    let (base, head) = ab_records();
    let settings = VerdictSettings {
        config,
        fail_on: FailOn::Regressed,
        allow_device_mismatch: false,
        gate: Default::default(),
        allow_settings_mismatch: false,
        allow_missing: Default::default(),
    };
    let set = compare_paired_records(&base, &head, &settings.options()).unwrap();
    let entries: Vec<BaselineEntry> = base
        .iter()
        .map(|r| BaselineEntry::from_record(r).unwrap())
        .collect();
    let source = Source {
        kind: SourceKind::Revision,
        name: "abc1234".into(),
        path: "/ws".into(),
        default: false,
        device: None,
    };
    let absences = Absences::of_side(&source);
    let c = RunComparison::of_set(set, &head, &entries, source, settings, &absences);
    (head, c)
}
