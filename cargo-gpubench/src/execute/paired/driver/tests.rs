//! Tests of [`super`] with sides that stand in for libraries: each call's time from
//! a model, the order of calls logged.

use super::*;

/// A side whose per-call time is `ns` times a factor that is the same for both
/// sides of one process (the process's mode), plus an order effect: a sample right
/// after the other side's reads `after_other` slower.
struct Fake {
    name: &'static str,
    ns: f64,
    log: std::rc::Rc<std::cell::RefCell<Vec<&'static str>>>,
    mode: f64,
    after_other: f64,
    fail_at: Option<usize>,
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
