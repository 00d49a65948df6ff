//! Tests of [`super`] with sides that stand in for libraries: each call's time from
//! a model, the order of calls logged.

use super::*;

/// A side whose per-call time is `ns` times a factor that is the same for both
/// sides of one process (the process's mode), plus an order effect: a sample right
/// after the other side's reads `after_other` slower. Its energy windows draw
/// `watts` over its calls (`None`: it has no energy counter, as on the CPU), and
/// are logged as `energy`.
struct Fake {
    name: &'static str,
    ns: f64,
    log: std::rc::Rc<std::cell::RefCell<Vec<&'static str>>>,
    mode: f64,
    after_other: f64,
    fail_at: Option<usize>,
    abi: u32,
    watts: Option<f64>,
}

impl PairSide for Fake {
    fn warm_up(&mut self) -> Option<f64> {
        self.log.borrow_mut().push(self.name);
        Some(self.ns * self.mode)
    }
    fn sample(&mut self, iters: u64) -> Option<AbiSample> {
        let mut log = self.log.borrow_mut();
        if self.fail_at == Some(log.len()) {
            return None;
        }
        let after_other = log.last().is_some_and(|last| *last != self.name);
        log.push(self.name);
        let per_call = self.ns
            * self.mode
            * if after_other {
                1.0 + self.after_other
            } else {
                1.0
            };
        Some(AbiSample {
            wall_ns: per_call * iters as f64 + 5_000.0,
            host_ns: per_call * iters as f64 * 0.9,
            device_ns: per_call * iters as f64,
        })
    }
    fn abi_version(&self) -> u32 {
        self.abi
    }
    fn energy_window(&mut self, steps: u32) -> Option<Result<EnergyWindow, String>> {
        let mut log = self.log.borrow_mut();
        if self.fail_at == Some(log.len()) {
            return None;
        }
        log.push(self.name);
        let Some(watts) = self.watts else {
            return Some(Err("no GPU telemetry, so no energy counter".into()));
        };
        // Calls back to back over `steps` steps of 100 ms; the process's mode
        // slows both sides' calls, not the energy one call takes.
        let counted_s = 0.1 * steps as f64;
        let per_call_s = self.ns * self.mode * 1e-9;
        let calls = (counted_s / per_call_s) as u64;
        Some(Ok(EnergyWindow {
            calls,
            synced_s: calls as f64 * per_call_s,
            counted_s,
            steps,
            energy_j: watts / self.mode * counted_s,
        }))
    }
}

fn config() -> MeasurementConfig {
    MeasurementConfig {
        min_samples: 10,
        max_samples: 40,
        measurement_time_s: 5.0,
        ..MeasurementConfig::quick()
    }
}

fn sides(
    base_ns: f64,
    head_ns: f64,
    mode: f64,
) -> (
    Fake,
    Fake,
    std::rc::Rc<std::cell::RefCell<Vec<&'static str>>>,
) {
    let log = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let side = |name, ns| Fake {
        name,
        ns,
        log: log.clone(),
        mode,
        after_other: 0.01,
        fail_at: None,
        abi: gpubench_record::paired::ABI_VERSION,
        watts: Some(400.0),
    };
    (side("base", base_ns), side("head", head_ns), log)
}

#[test]
fn blocks_alternate_in_balanced_order_starting_with_the_side_asked() {
    let (mut base, mut head, log) = sides(1_000.0, 1_000.0, 1.0);
    let a = alternate(&mut base, &mut head, true, &config()).unwrap();
    let log = log.borrow();
    assert_eq!(
        &log[..2],
        ["head", "base"],
        "the second side warms up first"
    );
    assert_eq!(
        &log[2..10],
        ["base", "head", "head", "base", "base", "head", "head", "base"]
    );
    assert_eq!(a.kind, TimeKind::Device);
    // The order effect (1% after the other side's sample) cancels within each
    // block: identical sides read no change.
    assert!(
        a.log_ratios.iter().all(|r| r.abs() < 1e-9),
        "{:?}",
        a.log_ratios
    );

    let (mut base, mut head, log) = sides(1_000.0, 1_000.0, 1.0);
    alternate(&mut base, &mut head, false, &config()).unwrap();
    assert_eq!(&log.borrow()[2..6], ["head", "base", "base", "head"]);
}

#[test]
fn the_ratio_is_the_heads_over_the_bases_whatever_the_processs_mode() {
    for mode in [1.0, 1.6] {
        let (mut base, mut head, _) = sides(1_000.0, 1_050.0, mode);
        let a = alternate(&mut base, &mut head, mode == 1.0, &config()).unwrap();
        assert!(
            (a.log_ratio() - 1.05f64.ln()).abs() < 1e-9,
            "mode {mode}: {}",
            a.log_ratio()
        );
        assert!(a.log_ratios.len() >= 10);
    }
}

#[test]
fn a_side_that_fails_is_named() {
    let (mut base, mut head, _) = sides(1_000.0, 1_000.0, 1.0);
    head.fail_at = Some(4);
    assert_eq!(
        alternate(&mut base, &mut head, true, &config()),
        Err(Role::Head)
    );
}

#[test]
fn calls_per_sample_fill_the_sample_target() {
    let c = MeasurementConfig {
        sample_target_s: 0.01,
        ..config()
    };
    assert_eq!(iters_for(1_000.0, &c), 10_000);
    assert_eq!(iters_for(1e9, &c), 1);
    assert_eq!(
        iters_for(
            1_000.0,
            &MeasurementConfig {
                flush_l2: true,
                ..c
            }
        ),
        1
    );
}

#[test]
fn a_side_alone_stops_like_a_run() {
    let (mut base, _, log) = sides(1_000.0, 1_000.0, 1.0);
    assert!(alone(&mut base, &config()));
    let n = log.borrow().len();
    assert!((11..=41).contains(&n), "{n} calls");
}

#[test]
fn energy_windows_alternate_in_balanced_blocks_after_the_samples() {
    for base_first in [true, false] {
        let (mut base, mut head, log) = sides(1_000.0, 1_000.0, 1.0);
        alternate(&mut base, &mut head, base_first, &config()).unwrap();
        let samples = log.borrow().len();
        let e = pair_energy(&mut base, &mut head, base_first);
        let log = log.borrow();
        let (x, y) = if base_first {
            ("base", "head")
        } else {
            ("head", "base")
        };
        assert_eq!(
            &log[samples..],
            [x, y, y, x, x, y, y, x],
            "{ENERGY_BLOCKS} blocks x y y x"
        );
        assert_eq!(e.log_ratios.len(), ENERGY_BLOCKS);
        assert!(e.log_ratio().is_some_and(|r| r.abs() < 1e-9), "{e:?}");
    }
}

#[test]
fn a_side_doing_a_tenth_more_work_per_call_reads_ln_1_1_in_energy() {
    for (mode, base_first) in [(1.0, true), (1.6, false)] {
        // The same power over 10% longer calls: 10% more energy per call.
        let (mut base, mut head, _) = sides(1_000.0, 1_100.0, mode);
        let a = alternate(&mut base, &mut head, base_first, &config()).unwrap();
        let e = pair_energy(&mut base, &mut head, base_first);
        let ratio = e.log_ratio().expect("a paired energy ratio");
        assert!((ratio - 1.1f64.ln()).abs() < 1e-3, "mode {mode}: {ratio}");
        let (base_records, head_records) = crate::compare::paired_fixture::ab_records();
        let record = |role| match role {
            Role::Base => &base_records[0],
            Role::Head => &head_records[0],
        };
        let (p, _) = pairing(
            record(Role::Base),
            record(Role::Head),
            base_first,
            Some(&a),
            Some(&e),
        )
        .expect("both sides passed");
        assert_eq!(p.energy_log_ratio, Some(ratio));
        assert_eq!(p.energy_blocks, ENERGY_BLOCKS as u32);
        assert_eq!(p.energy_unpaired, None);
    }
}

#[test]
fn a_version_1_library_pairs_its_samples_without_energy_windows() {
    let (mut base, mut head, log) = sides(1_000.0, 1_050.0, 1.0);
    base.abi = 1;
    let a = alternate(&mut base, &mut head, true, &config()).unwrap();
    let samples = log.borrow().len();
    let e = pair_energy(&mut base, &mut head, true);
    assert_eq!(log.borrow().len(), samples, "no window was asked for");
    assert_eq!(e.log_ratio(), None);
    let why = e.unpaired.clone().unwrap_or_default();
    assert!(why.contains("base's library speaks pairing ABI 1"), "{why}");
    let (base_records, head_records) = crate::compare::paired_fixture::ab_records();
    let record = |role| match role {
        Role::Base => &base_records[0],
        Role::Head => &head_records[0],
    };
    let (_, h) = pairing(
        record(Role::Base),
        record(Role::Head),
        true,
        Some(&a),
        Some(&e),
    )
    .expect("both sides passed");
    assert!(
        (h.log_ratio - 1.05f64.ln()).abs() < 1e-9,
        "the samples are paired"
    );
    assert_eq!(h.energy_log_ratio, None);
    assert_eq!(h.energy_unpaired.as_deref(), Some(why.as_str()));
}

#[test]
fn a_side_without_an_energy_counter_gives_no_ratio_and_no_failure() {
    let (mut base, mut head, log) = sides(1_000.0, 1_000.0, 1.0);
    base.watts = None;
    head.watts = None;
    let a = alternate(&mut base, &mut head, false, &config()).unwrap();
    let samples = log.borrow().len();
    let e = pair_energy(&mut base, &mut head, false);
    assert_eq!(log.borrow().len(), samples + 1, "the first refusal ends it");
    assert_eq!(e.log_ratio(), None);
    let why = e.unpaired.clone().unwrap_or_default();
    assert!(
        why.contains("the head has no energy window: no GPU telemetry"),
        "{why}"
    );
    let (base_records, head_records) = crate::compare::paired_fixture::ab_records();
    let record = |role| match role {
        Role::Base => &base_records[0],
        Role::Head => &head_records[0],
    };
    let (b, _) = pairing(
        record(Role::Base),
        record(Role::Head),
        false,
        Some(&a),
        Some(&e),
    )
    .expect("a side without energy still pairs");
    assert_eq!(b.energy_log_ratio, None);
    assert!(b.energy_unpaired.is_some());

    // A side that fails in its windows ends them, naming it.
    let (mut base, mut head, log) = sides(1_000.0, 1_000.0, 1.0);
    alternate(&mut base, &mut head, true, &config()).unwrap();
    head.fail_at = Some(log.borrow().len() + 1);
    let e = pair_energy(&mut base, &mut head, true);
    assert_eq!(
        e.unpaired.as_deref(),
        Some("the head failed in its energy windows")
    );
}
