//! The driver of a paired process: base and head of one benchmark opened in one
//! process (each waiting inside its `b.iter…`), both warmed, their samples
//! alternated in balanced blocks, and each side's record given the pairing.
//!
//! The order is balanced twice over: within a process every block is `x y y x`
//! ([`gpubench_analysis::sampling`], whose docs say why an order effect cancels in
//! a block's ratio and not in adjacent samples'), and the first side `x` (which also
//! warms and sets up first) is the base in odd processes and the head in even ones.
//! Each block gives one ratio, `ln(head / base)` of the two sides' mean per-call
//! time in it (device time when both sides have it, else synced wall time). The
//! process's figure is the median over its blocks.
//!
//! Stopping follows a run's rule ([`gpubench_analysis::sampling::StoppingRule`]) on
//! the blocks' ratios instead of one side's samples.

use gpubench_analysis::sampling::{self, PerCall, Side, StoppingRule};
use gpubench_analysis::stats::median;
use gpubench_record::measurement::{MeasurementConfig, StopReason, TimeKind};
use gpubench_record::paired::{AbiSample, AbiSide, Pairing, Role};
use gpubench_record::record::RawRecord;
use std::path::Path;

/// A side the driver can warm and sample.
pub trait PairSide {
    /// Cold calls and warm-up; the per-call estimate (ns), or `None` when it failed.
    fn warm_up(&mut self) -> Option<f64>;
    /// One synced sample of `iters` calls, or `None` when it failed.
    fn sample(&mut self, iters: u64) -> Option<AbiSample>;
}

/// A library's side, valid while its `ready` call lasts, and the directory its
/// code runs in (its revision's checkout), entered before each of its calls.
pub struct LibrarySide<'a>(pub &'a AbiSide, pub Option<&'a Path>);

/// Makes `dir` the process's working directory, so a side reads files by relative
/// path from its own checkout; outside any timed region.
pub fn enter(dir: Option<&Path>) {
    if let Some(dir) = dir {
        if let Err(e) = std::env::set_current_dir(dir) {
            eprintln!("warning: failed to enter {}: {e}", dir.display());
        }
    }
}

impl PairSide for LibrarySide<'_> {
    fn warm_up(&mut self) -> Option<f64> {
        enter(self.1);
        // SAFETY: the side's own function and context, during its `ready` call.
        let estimate = unsafe { (self.0.warm_up)(self.0.ctx) };
        (estimate >= 0.0).then_some(estimate)
    }

    fn sample(&mut self, iters: u64) -> Option<AbiSample> {
        enter(self.1);
        let mut out = AbiSample::default();
        // SAFETY: as above; `out` is ours and writable.
        let rc = unsafe { (self.0.sample)(self.0.ctx, iters, &mut out) };
        (rc == 0).then_some(out)
    }
}

/// What alternating two sides gave.
#[derive(Debug, Clone, PartialEq)]
pub struct Alternation {
    /// `ln(head / base)` per call of each block, in the order taken.
    pub log_ratios: Vec<f64>,
    /// Why sampling stopped.
    pub stopped: StopReason,
    /// The timer the ratios rest on.
    pub kind: TimeKind,
}

impl Alternation {
    /// The process's figure: the median of its blocks' log ratios.
    pub fn log_ratio(&self) -> f64 {
        median(&self.log_ratios)
    }
}

/// Calls per sample for a side whose call takes `estimate_ns`: a sample lasts the
/// sample target, as in a run (one call with `--flush-l2`, which flushes before it).
pub fn iters_for(estimate_ns: f64, config: &MeasurementConfig) -> u64 {
    if config.flush_l2 {
        return 1;
    }
    ((config.sample_target_s * 1e9 / estimate_ns.max(1.0)).round() as u64).max(1)
}

/// Warms `base` and `head` (the second side first) and alternates their samples in
/// blocks of `first, second, second, first` until the stopping rule ends it. `Err` names the side that failed (its record says how).
pub fn alternate(
    base: &mut dyn PairSide,
    head: &mut dyn PairSide,
    base_first: bool,
    config: &MeasurementConfig,
) -> Result<Alternation, Role> {
    let (first_role, second_role) = if base_first {
        (Role::Base, Role::Head)
    } else {
        (Role::Head, Role::Base)
    };
    // The second side warms up first, so the first block's first sample follows a
    // sample of its own side, as in every later block.
    let mut base_estimate = 0.0;
    let mut head_estimate = 0.0;
    for role in [second_role, first_role] {
        match role {
            Role::Base => base_estimate = base.warm_up().ok_or(role)?,
            Role::Head => head_estimate = head.warm_up().ok_or(role)?,
        }
    }
    let base_iters = iters_for(base_estimate, config);
    let head_iters = iters_for(head_estimate, config);
    let role_of = |side: Side| match side {
        Side::First => first_role,
        Side::Second => second_role,
    };
    let head_side = if base_first {
        Side::Second
    } else {
        Side::First
    };
    let alternated = sampling::alternate(&StoppingRule::of(config), head_side, |side| {
        let role = role_of(side);
        let (s, iters): (&mut dyn PairSide, u64) = match role {
            Role::Base => (&mut *base, base_iters),
            Role::Head => (&mut *head, head_iters),
        };
        let sample = s.sample(iters).ok_or(role)?;
        Ok(PerCall {
            device_ns: sample
                .device_ns
                .is_finite()
                .then(|| sample.device_ns / iters as f64),
            wall_ns: sample.wall_ns / iters as f64,
        })
    })?;
    Ok(Alternation {
        log_ratios: alternated.ratios.iter().map(|r| r.ln()).collect(),
        stopped: alternated.stopped,
        kind: alternated.kind,
    })
}

/// Measures one side alone, when the other never handed over its routine (it
/// measured itself, as an eager-versus-compiled benchmark does, or failed first): a
/// run's loop, on its own samples. `false` when it failed.
pub fn alone(side: &mut dyn PairSide, config: &MeasurementConfig) -> bool {
    let Some(estimate) = side.warm_up() else {
        return false;
    };
    let iters = iters_for(estimate, config);
    let mut sampling = StoppingRule::of(config).start();
    loop {
        let Some(s) = side.sample(iters) else {
            return false;
        };
        let ns = if s.device_ns.is_finite() {
            s.device_ns
        } else {
            s.wall_ns
        };
        if sampling.add(Some(ns / iters as f64)).is_some() {
            return true;
        }
    }
}

/// The pairing each side's process keeps: from the alternation when there was one,
/// else from the two records' own figures in this process (`blocks` 0). `None` when
/// a side has no measurement.
pub fn pairing(
    base: &RawRecord,
    head: &RawRecord,
    base_first: bool,
    alternation: Option<&Alternation>,
) -> Option<(Pairing, Pairing)> {
    if !(base.passed() && head.passed()) {
        return None;
    }
    let typical = |r: &RawRecord, kind: TimeKind| -> Option<f64> {
        let groups = r.groups(kind);
        let all: Vec<f64> = groups.into_iter().flatten().collect();
        (!all.is_empty()).then(|| median(&all)).filter(|m| *m > 0.0)
    };
    let (log_ratio, blocks) = match alternation {
        Some(a) if !a.log_ratios.is_empty() => (a.log_ratio(), a.log_ratios.len() as u32),
        _ => {
            let kind = match (base.primary_kind(), head.primary_kind()) {
                (TimeKind::Device, TimeKind::Device) => TimeKind::Device,
                _ => TimeKind::Wall,
            };
            ((typical(head, kind)? / typical(base, kind)?).ln(), 0)
        }
    };
    let kernel_log_ratio = match (
        typical(base, TimeKind::Kernel),
        typical(head, TimeKind::Kernel),
    ) {
        (Some(b), Some(h)) => Some((h / b).ln()),
        _ => None,
    };
    let of = |role| Pairing {
        role,
        base_first,
        blocks,
        log_ratio,
        kernel_log_ratio,
        energy_log_ratio: None,
    };
    Some((of(Role::Base), of(Role::Head)))
}

#[cfg(test)]
mod tests;
