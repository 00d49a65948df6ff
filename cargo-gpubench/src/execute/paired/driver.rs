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
//!
//! Energy is paired the same way after the samples ([`pair_energy`]): the sides'
//! energy windows (calls back to back over [`ENERGY_WINDOW_STEPS`] steps of the GPU's
//! energy counter) alternate in [`ENERGY_BLOCKS`] blocks `x y y x`, each block gives
//! `ln(head / base)` of the sides' mean joules per call, and each side keeps its
//! windows as its record's energy (instead of windows of its own taken alone).

use gpubench_analysis::sampling::{self, PerCall, Side, StoppingRule, BLOCK};
use gpubench_analysis::stats::median;
use gpubench_record::energy::EnergyWindow;
use gpubench_record::measurement::{MeasurementConfig, StopReason, TimeKind};
use gpubench_record::paired::{
    AbiEnergyWindow, AbiSample, AbiSide, Pairing, Role, ENERGY_ABI_VERSION, ENERGY_WINDOW_NONE,
    ENERGY_WINDOW_TAKEN,
};
use gpubench_record::record::RawRecord;
use std::path::Path;

/// A side the driver can warm and sample.
pub trait PairSide {
    /// Cold calls and warm-up; the per-call estimate (ns), or `None` when it failed.
    fn warm_up(&mut self) -> Option<f64>;
    /// One synced sample of `iters` calls, or `None` when it failed.
    fn sample(&mut self, iters: u64) -> Option<AbiSample>;
    /// The pairing ABI version its library speaks.
    fn abi_version(&self) -> u32;
    /// One energy window counting `steps` steps of the energy counter: `Err` says
    /// why it has none (no counter); `None` when the side failed.
    fn energy_window(&mut self, steps: u32) -> Option<Result<EnergyWindow, String>>;
}

/// A library's side, valid while its `ready` call lasts, the directory its code
/// runs in (its revision's checkout), entered before each of its calls, and the
/// pairing ABI version its library speaks.
pub struct LibrarySide<'a>(pub &'a AbiSide, pub Option<&'a Path>, pub u32);

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

    fn abi_version(&self) -> u32 {
        self.2
    }

    fn energy_window(&mut self, steps: u32) -> Option<Result<EnergyWindow, String>> {
        enter(self.1);
        let mut out = AbiEnergyWindow::default();
        // SAFETY: as above; the side's `energy_window` is its own where its library
        // speaks energy windows, else the library loader's stand-in that has none.
        let rc = unsafe { (self.0.energy_window)(self.0.ctx, steps, &mut out) };
        match rc {
            ENERGY_WINDOW_TAKEN => Some(Ok(out.window())),
            ENERGY_WINDOW_NONE => Some(Err(out.reason())),
            _ => None,
        }
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

/// Blocks of four alternated energy windows a paired process takes: 8 windows of
/// [`ENERGY_WINDOW_STEPS`] steps, about 2.8 s on an H200 (whose counter steps every
/// 100 ms; a window waits for a first step, then counts 3), where each side measured
/// 3 windows alone before (about 2.1 s).
pub const ENERGY_BLOCKS: usize = 2;

/// Counter steps each energy window counts, as a run's windows do: each step's time
/// is known to half the time between two reads of the counter.
pub const ENERGY_WINDOW_STEPS: u32 = 3;

/// What alternating the sides' energy windows gave.
#[derive(Debug, Clone, PartialEq)]
pub struct EnergyPairing {
    /// `ln(head / base)` of the mean joules per call of each block, in the order taken.
    pub log_ratios: Vec<f64>,
    /// Why there is no ratio (a side without energy windows or an energy counter).
    pub unpaired: Option<String>,
}

impl EnergyPairing {
    /// No paired energy, because of `why`.
    pub fn unpaired(why: impl Into<String>) -> Self {
        EnergyPairing {
            log_ratios: Vec::new(),
            unpaired: Some(why.into()),
        }
    }

    /// The process's figure: the median of its blocks' log ratios, when every block
    /// it began was whole.
    pub fn log_ratio(&self) -> Option<f64> {
        (self.unpaired.is_none() && !self.log_ratios.is_empty()).then(|| median(&self.log_ratios))
    }
}

/// Alternates the energy windows of `base` and `head`, after their samples, in
/// [`ENERGY_BLOCKS`] blocks of `first, second, second, first` (the first side as
/// in [`alternate`]). Only when both libraries speak energy windows; the first side
/// that has none (no energy counter, as on the CPU) or fails ends it, saying why.
pub fn pair_energy(
    base: &mut dyn PairSide,
    head: &mut dyn PairSide,
    base_first: bool,
) -> EnergyPairing {
    for (role, side) in [(Role::Base, &*base), (Role::Head, &*head)] {
        if side.abi_version() < ENERGY_ABI_VERSION {
            return EnergyPairing::unpaired(format!(
                "the {}'s library speaks pairing ABI {}, which has no energy windows: \
                 each side measured its energy alone",
                role.as_str(),
                side.abi_version()
            ));
        }
    }
    let (first_role, head_side) = if base_first {
        (Role::Base, Side::Second)
    } else {
        (Role::Head, Side::First)
    };
    let mut log_ratios = Vec::with_capacity(ENERGY_BLOCKS);
    for _ in 0..ENERGY_BLOCKS {
        let mut block = [(Side::First, 0.0); 4];
        for (slot, side) in block.iter_mut().zip(BLOCK) {
            let role = if (side == Side::First) == (first_role == Role::Base) {
                Role::Base
            } else {
                Role::Head
            };
            let s: &mut dyn PairSide = match role {
                Role::Base => &mut *base,
                Role::Head => &mut *head,
            };
            match s.energy_window(ENERGY_WINDOW_STEPS) {
                Some(Ok(w)) => *slot = (side, w.joules_per_call()),
                Some(Err(why)) => {
                    return EnergyPairing::unpaired(format!(
                        "the {} has no energy window: {why}",
                        role.as_str()
                    ))
                }
                None => {
                    return EnergyPairing::unpaired(format!(
                        "the {} failed in its energy windows",
                        role.as_str()
                    ))
                }
            }
        }
        let ratio = sampling::mean_ratio(&block, head_side);
        if !(ratio.is_finite() && ratio > 0.0) {
            return EnergyPairing::unpaired(format!(
                "an energy block's ratio of head to base was {ratio}"
            ));
        }
        log_ratios.push(ratio.ln());
    }
    EnergyPairing {
        log_ratios,
        unpaired: None,
    }
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
/// else from the two records' own figures in this process (`blocks` 0), with the
/// energy ratio of the alternated energy windows, `energy`. `None` when a side has
/// no measurement.
pub fn pairing(
    base: &RawRecord,
    head: &RawRecord,
    base_first: bool,
    alternation: Option<&Alternation>,
    energy: Option<&EnergyPairing>,
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
    let energy_log_ratio = energy.and_then(EnergyPairing::log_ratio);
    let energy_unpaired = match energy {
        _ if energy_log_ratio.is_some() => None,
        Some(e) => e.unpaired.clone(),
        None => Some("the sides' samples were not alternated, nor their energy windows".into()),
    };
    let of = |role| Pairing {
        role,
        base_first,
        blocks,
        log_ratio,
        kernel_log_ratio,
        energy_log_ratio,
        energy_blocks: if energy_log_ratio.is_some() {
            energy.map_or(0, |e| e.log_ratios.len() as u32)
        } else {
            0
        },
        energy_unpaired: energy_unpaired.clone(),
    };
    Some((of(Role::Base), of(Role::Head)))
}

#[cfg(test)]
mod tests;
