//! A head judged against its base measured in the same processes (`cargo gpubench
//! ab`): what [`compare_with_baseline`] makes of the two sides, with the time,
//! kernel-time and energy verdicts resting on the per-process ratios of their pairings
//! ([`crate::compare::compare_paired`]) instead of on two sets of processes.

use super::*;
use crate::compare::{compare_paired, CompareConfig, Comparison, PAIRED_CPU_NOISE_FLOOR};
use crate::processes::Bound;
use crate::RecordAnalysis;
use gpubench_record::kernels::KernelMethod;
use gpubench_record::paired::Pairing;
use gpubench_record::record::RawRecord;

/// Judges `head` against `base`, records of the same benchmarks measured in the same
/// paired processes; a benchmark whose head processes all carry a pairing gets its time
/// (and, where every process has one, kernel-time) verdict from the paired ratios.
/// Counters and the kernel table compare as in a run. Base records that did not
/// pass cannot serve as a baseline and are left out (the caller names them).
pub fn compare_paired_records(
    base: &[RawRecord],
    head: &[RawRecord],
    options: &BaselineCompareOptions,
) -> Result<ComparisonSet, BaselineError> {
    let entries: Vec<BaselineEntry> = base
        .iter()
        .filter_map(|r| BaselineEntry::from_record(r).ok())
        .collect();
    let mut set = compare_with_baseline(head, &entries, options)?;
    for b in &mut set.comparisons {
        let Some(record) = head.iter().find(|r| r.id == b.id) else {
            continue;
        };
        let ComparisonOutcome::Compared {
            comparison,
            metrics,
            ..
        } = &mut b.outcome
        else {
            continue;
        };
        let pairings: Option<Vec<&Pairing>> = record
            .processes
            .iter()
            .filter(|r| r.measurement.is_some())
            .map(|r| r.pairing.as_ref())
            .collect();
        let Some(pairings) = pairings.filter(|p| !p.is_empty()) else {
            continue;
        };
        let ratios: Vec<f64> = pairings.iter().map(|p| p.log_ratio).collect();
        // Work on the CPU device keeps larger biases in a pair than a GPU's does.
        let config = match record.bound() {
            Bound::Cpu => CompareConfig {
                paired_noise_threshold: options
                    .config
                    .paired_noise_threshold
                    .max(PAIRED_CPU_NOISE_FLOOR),
                ..options.config
            },
            _ => options.config,
        };
        *comparison = paired(&ratios, comparison, &config)?;
        // Energy from the ratios of the sides' alternated windows when every process
        // has one (else the two sets of windows stand, judged unpaired), on the
        // larger of the paired and the energy noise thresholds: a window's energy
        // moves with power and temperature more than a paired time does.
        let energy_config = CompareConfig {
            paired_noise_threshold: config
                .paired_noise_threshold
                .max(options.config.energy_noise_threshold),
            ..config
        };
        let energy = metrics
            .iter_mut()
            .filter(|v| v.metric == Metric::Energy)
            .find_map(|v| match &mut v.judged {
                Some(Judged::Timed(e)) => Some(e),
                _ => None,
            });
        if let Some(e) = energy {
            if let Some(c) = paired_energy(&pairings, e, &energy_config) {
                **e = c?;
            }
        }
        // Kernel time by graph replay on one side and by the profiler on the other
        // (a routine that syncs on one side only cannot be captured there) are two
        // measures, not one measure twice: no ratio of them is a change.
        let base_record = base.iter().find(|r| r.id == b.id);
        if let Some(why) = base_record.and_then(|r| methods_differ(r, record)) {
            // No verdict, and no gap either: both sides measured it.
            metrics.retain(|v| v.metric != Metric::Kernel || v.judged.is_none());
            let note = format!("kernel time not compared: {why}");
            comparison.note = Some(match comparison.note.take() {
                Some(n) => format!("{n}; {note}"),
                None => note,
            });
            continue;
        }
        let kernel_ratios: Option<Vec<f64>> = pairings.iter().map(|p| p.kernel_log_ratio).collect();
        let kernel = metrics
            .iter_mut()
            .filter(|v| v.metric == Metric::Kernel)
            .find_map(|v| match &mut v.judged {
                Some(Judged::Timed(k)) => Some(k),
                _ => None,
            });
        if let (Some(ratios), Some(k)) = (kernel_ratios, kernel) {
            **k = paired(&ratios, k, &options.config)?;
        }
    }
    Ok(set)
}

/// Why the kernel times of `base` and `head` are not one measure: each side's
/// processes timed its kernels by another method (module docs of
/// [`gpubench_record::kernels`]); `None` when they agree.
fn methods_differ(base: &RawRecord, head: &RawRecord) -> Option<String> {
    let method = |r: &RawRecord| {
        r.measurements().find_map(|m| {
            m.kernel
                .as_ref()
                .map(|k| (k.method, k.not_capturable.clone()))
        })
    };
    let ((b, b_why), (h, h_why)) = (method(base)?, method(head)?);
    if b == h {
        return None;
    }
    let side = |m: KernelMethod, why: Option<String>| match why {
        Some(why) => format!("{} ({why})", m.label()),
        None => m.label().to_string(),
    };
    Some(format!(
        "the base's is timed by {}, the head's by {}",
        side(b, b_why),
        side(h, h_why)
    ))
}

/// The paired verdict of `ratios`, with the sides' typical times of `unpaired`.
fn paired(
    ratios: &[f64],
    unpaired: &Comparison,
    config: &CompareConfig,
) -> Result<Comparison, BaselineError> {
    Ok(compare_paired(
        ratios,
        unpaired.baseline_estimate,
        unpaired.current_estimate,
        config,
    )?)
}

/// The paired verdict on energy per call: from the per-process ratios of the sides'
/// alternated energy windows ([`Pairing::energy_log_ratio`]) of `pairings` (every
/// measured head process's), with the sides' typical energy per call of `unpaired`
/// (the verdict on the two sets of processes). `None` when a process has no energy
/// ratio ([`Pairing::energy_unpaired`] says why): the unpaired verdict then stands.
pub fn paired_energy(
    pairings: &[&Pairing],
    unpaired: &Comparison,
    config: &CompareConfig,
) -> Option<Result<Comparison, BaselineError>> {
    let ratios: Vec<f64> = pairings
        .iter()
        .map(|p| p.energy_log_ratio)
        .collect::<Option<_>>()?;
    (!ratios.is_empty()).then(|| paired(&ratios, unpaired, config))
}

/// Whether every measured process of `record` was paired with the other revision.
pub fn is_paired(record: &RawRecord) -> bool {
    let mut measured = record.processes.iter().filter(|r| r.measurement.is_some());
    let mut any = false;
    let all = measured.all(|r| {
        any = true;
        r.pairing.is_some()
    });
    any && all
}

/// The per-process change of time (`head / base − 1`) of a paired record, in process
/// order, for charts and tables.
pub fn paired_changes(record: &RawRecord) -> Vec<f64> {
    record
        .processes
        .iter()
        .filter_map(|r| r.pairing.as_ref())
        .map(|p| p.log_ratio.exp_m1())
        .collect()
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand_pcg::Pcg64Mcg;

    use super::*;
    use crate::compare::{Verdict, DEFAULT_PAIRED_NOISE_THRESHOLD};
    use crate::synthetic::{GpuLikeSamples, ProcessShift, SyntheticKernels};
    use gpubench_record::paired::Role;

    /// Base and head of a launch-bound benchmark in the same 5 processes: each
    /// process's host mode (two modes 1.7x apart) is shared by both sides, the head
    /// `factor` slower within every process.
    fn pair(factor: f64, seed: u64) -> (RawRecord, RawRecord) {
        let mut rng = Pcg64Mcg::seed_from_u64(seed);
        let model = GpuLikeSamples {
            base_ns: 8_000.0,
            ..GpuLikeSamples::default()
        }
        .with_shift(ProcessShift::Modes {
            slow_factor: 1.7,
            slow_share: 0.4,
            sigma: 0.0,
        });
        let mut base = model.record_processes("add", "NVIDIA H200", 5, 30, &mut rng);
        let mut head = base.clone();
        for (b, h) in base.processes.iter_mut().zip(head.processes.iter_mut()) {
            let m = h.measurement.as_mut().unwrap();
            for s in &mut m.samples {
                s.wall_ns *= factor;
                s.host_ns *= factor;
                s.device_ns = s.device_ns.map(|d| d * factor);
            }
            m.flags.clear();
            b.measurement.as_mut().unwrap().flags.clear();
            let pairing = |role| Pairing {
                role,
                base_first: b.process % 2 == 1,
                blocks: 12,
                log_ratio: factor.ln(),
                kernel_log_ratio: None,
                energy_log_ratio: None,
                energy_blocks: 0,
                energy_unpaired: None,
            };
            b.pairing = Some(pairing(Role::Base));
            h.pairing = Some(pairing(Role::Head));
        }
        (base, head)
    }

    #[test]
    fn the_paired_ratios_judge_what_two_sets_of_processes_cannot() {
        let (base, head) = pair(1.05, 1);
        // Judged as two sets of processes, host-bound work needs a change beyond 50%.
        let entries = [BaselineEntry::from_record(&base).unwrap()];
        let unpaired = compare_with_baseline(
            std::slice::from_ref(&head),
            &entries,
            &BaselineCompareOptions::default(),
        )
        .unwrap();
        assert_ne!(unpaired.comparisons[0].verdict(), Some(Verdict::Regressed));
        // Paired, the 5% in every process is plain.
        let set = compare_paired_records(
            std::slice::from_ref(&base),
            std::slice::from_ref(&head),
            &Default::default(),
        )
        .unwrap();
        assert_eq!(set.comparisons[0].verdict(), Some(Verdict::Regressed));
        let ComparisonOutcome::Compared { comparison, .. } = &set.comparisons[0].outcome else {
            panic!("{set:?}");
        };
        assert!((comparison.change.point - 0.05).abs() < 1e-9);
        assert_eq!(comparison.baseline_processes, 5);
        assert!(is_paired(&head));
        assert_eq!(paired_changes(&head).len(), 5);

        let (base, head) = pair(1.0, 2);
        let set = compare_paired_records(&[base], &[head], &Default::default()).unwrap();
        assert_eq!(set.comparisons[0].verdict(), Some(Verdict::NoChange));
    }

    #[test]
    fn cpu_work_is_paired_on_a_wider_threshold() {
        // Identical code on a busy 2-core CI machine: every process's ratio about
        // -1.6%, as measured there.
        let wobble = [-0.016, -0.012, -0.021, -0.015, -0.018];
        let (mut base, mut head) = pair(1.0, 8);
        for ((b, h), w) in base
            .processes
            .iter_mut()
            .zip(&mut head.processes)
            .zip(wobble)
        {
            for r in [b, h] {
                r.pairing.as_mut().unwrap().log_ratio = f64::ln_1p(w);
            }
        }
        let judged = |base: &RawRecord, head: &RawRecord| {
            let set = compare_paired_records(
                std::slice::from_ref(base),
                std::slice::from_ref(head),
                &Default::default(),
            )
            .unwrap();
            let ComparisonOutcome::Compared { comparison, .. } = set.comparisons[0].outcome.clone()
            else {
                panic!("{set:?}");
            };
            comparison
        };
        // On a GPU that is a change beyond ±1%.
        assert_eq!(judged(&base, &head).verdict, Verdict::Improved);
        for r in [&mut base, &mut head] {
            r.fingerprint.device.kind = "cpu".into();
        }
        let c = judged(&base, &head);
        assert_eq!(c.verdict, Verdict::NoChange, "{c:?}");
        assert!((c.noise_threshold - PAIRED_CPU_NOISE_FLOOR).abs() < 1e-12);
        // A planted 2x is still regressed.
        for r in [&mut base, &mut head] {
            for process in &mut r.processes {
                process.pairing.as_mut().unwrap().log_ratio = 2f64.ln();
            }
        }
        // Ratios that vary a little, so the interval has a width.
        for (i, process) in head.processes.iter_mut().enumerate() {
            process.pairing.as_mut().unwrap().log_ratio += 0.01 * i as f64;
        }
        assert_eq!(judged(&base, &head).verdict, Verdict::Regressed);
    }

    #[test]
    fn kernel_times_by_two_methods_are_not_compared() {
        // The head added a read-back: its routine cannot be captured, so its kernel
        // time comes from the profiler while the base's comes from graph replay.
        let (mut base, mut head) = pair(1.0, 6);
        let mut rng = Pcg64Mcg::seed_from_u64(7);
        let kernels = SyntheticKernels::one("gemm", 50_000.0);
        kernels.attach(&mut base, &mut rng);
        kernels.scaled(0.95).attach(&mut head, &mut rng);
        for (b, h) in base.processes.iter_mut().zip(&mut head.processes) {
            for r in [b, h] {
                r.pairing.as_mut().unwrap().kernel_log_ratio = Some(0.95f64.ln());
            }
        }
        let judged = |head: &RawRecord| {
            let set = compare_paired_records(
                std::slice::from_ref(&base),
                std::slice::from_ref(head),
                &Default::default(),
            )
            .unwrap();
            let outcome = &set.comparisons[0].outcome;
            let Some(comparison) = outcome.time().cloned() else {
                panic!("{set:?}");
            };
            let kernel = outcome
                .judged(Metric::Kernel)
                .and_then(Judged::timed)
                .cloned();
            (comparison, kernel)
        };
        let (_, kernel) = judged(&head);
        assert_eq!(
            kernel.map(|k| k.verdict),
            Some(Verdict::Improved),
            "one method"
        );
        for r in &mut head.processes {
            let k = r.measurement.as_mut().unwrap().kernel.as_mut().unwrap();
            k.method = KernelMethod::Profiler;
            k.not_capturable = Some("the routine synchronised".into());
        }
        let (comparison, kernel) = judged(&head);
        assert!(kernel.is_none(), "no verdict across methods: {kernel:?}");
        let note = comparison.note.unwrap_or_default();
        assert!(
            note.contains("kernel time not compared")
                && note.contains("CUDA-graph replay")
                && note.contains("profiler (the routine synchronised)"),
            "{note}"
        );
    }

    #[test]
    fn kernel_time_is_judged_on_the_paired_threshold_too() {
        // The H200's MLP step: +1.75% in every process, kernel time alike.
        let factor = 1.0175f64;
        let (mut base, mut head) = pair(factor, 4);
        let mut rng = Pcg64Mcg::seed_from_u64(5);
        let kernels = SyntheticKernels::one("gemm", 50_000.0);
        kernels.attach(&mut base, &mut rng);
        kernels.scaled(factor).attach(&mut head, &mut rng);
        let wobble = [0.0002, -0.0003, 0.0001, 0.0003, -0.0002];
        for ((b, h), w) in base
            .processes
            .iter_mut()
            .zip(&mut head.processes)
            .zip(wobble)
        {
            for r in [b, h] {
                r.pairing.as_mut().unwrap().kernel_log_ratio = Some(factor.ln() + w);
            }
        }
        let judge = |paired_noise_threshold| {
            let options = BaselineCompareOptions {
                config: CompareConfig {
                    paired_noise_threshold,
                    ..CompareConfig::default()
                },
                ..BaselineCompareOptions::default()
            };
            let set = compare_paired_records(
                std::slice::from_ref(&base),
                std::slice::from_ref(&head),
                &options,
            )
            .unwrap();
            let outcome = &set.comparisons[0].outcome;
            let Some(comparison) = outcome.time().cloned() else {
                panic!("{set:?}");
            };
            let kernel = outcome
                .judged(Metric::Kernel)
                .and_then(Judged::timed)
                .cloned()
                .expect("kernel time compared");
            (comparison, kernel)
        };
        let (time, kernel) = judge(DEFAULT_PAIRED_NOISE_THRESHOLD);
        assert!(time.paired && kernel.paired, "{kernel:?}");
        assert_eq!(time.verdict, Verdict::Regressed, "{time:?}");
        assert_eq!(kernel.verdict, Verdict::Regressed, "{kernel:?}");
        assert!(kernel.detectable.unwrap() < 0.0105, "{kernel:?}");
        // Under a run's ±2% both would be no change, certain but under the threshold.
        let (time, kernel) = judge(0.02);
        assert_eq!(time.verdict, Verdict::NoChange, "{time:?}");
        assert_eq!(kernel.verdict, Verdict::NoChange, "{kernel:?}");
        assert!(time.certain_under_threshold && kernel.certain_under_threshold);
    }

    #[test]
    fn a_record_without_pairings_is_judged_as_two_sets_of_processes() {
        let (base, mut head) = pair(1.05, 3);
        for r in &mut head.processes {
            r.pairing = None;
        }
        assert!(!is_paired(&head));
        let set = compare_paired_records(
            std::slice::from_ref(&base),
            std::slice::from_ref(&head),
            &Default::default(),
        )
        .unwrap();
        let entries = [BaselineEntry::from_record(&base).unwrap()];
        let unpaired =
            compare_with_baseline(&[head], &entries, &BaselineCompareOptions::default()).unwrap();
        assert_eq!(set, unpaired);
    }

    #[test]
    fn energy_ratios_of_every_process_give_a_paired_energy_verdict() {
        let (_, mut head) = pair(1.0, 9);
        // The two matmuls alternated in one process: paired ratios with a
        // 1.5% spread; here 10% more work per call in every process.
        let spread = [0.012, -0.015, 0.004, -0.008, 0.011];
        for (r, w) in head.processes.iter_mut().zip(spread) {
            let p = r.pairing.as_mut().unwrap();
            p.energy_log_ratio = Some(1.1f64.ln() + w);
            p.energy_blocks = 2;
        }
        let unpaired = compare_paired(&[0.0, 0.3, -0.3], 1.0, 1.0, &CompareConfig::default())
            .expect("a comparison to take the typical figures from");
        let pairings: Vec<&Pairing> = head.processes.iter().flat_map(|r| &r.pairing).collect();
        let c = paired_energy(&pairings, &unpaired, &CompareConfig::default())
            .expect("every process has a ratio")
            .unwrap();
        assert!(c.paired);
        assert_eq!(c.verdict, Verdict::Regressed, "{c:?}");
        assert!((c.change.point - 0.1).abs() < 0.01, "{c:?}");
        // The same energy with no change: no change.
        for (r, w) in head.processes.iter_mut().zip(spread) {
            r.pairing.as_mut().unwrap().energy_log_ratio = Some(w * 0.1);
        }
        let pairings: Vec<&Pairing> = head.processes.iter().flat_map(|r| &r.pairing).collect();
        let c = paired_energy(&pairings, &unpaired, &CompareConfig::default())
            .unwrap()
            .unwrap();
        assert_eq!(c.verdict, Verdict::NoChange, "{c:?}");
        // One process without a ratio (its library too old): no paired verdict.
        head.processes[2].pairing.as_mut().unwrap().energy_log_ratio = None;
        let pairings: Vec<&Pairing> = head.processes.iter().flat_map(|r| &r.pairing).collect();
        assert!(paired_energy(&pairings, &unpaired, &CompareConfig::default()).is_none());
    }
}
