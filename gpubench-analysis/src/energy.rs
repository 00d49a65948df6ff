//! Energy per call from the GPU's total-energy counter: the windowing arithmetic
//! that turns readings of a counter that steps every ~100 ms into energy over a
//! known time, the idle power, and what the processes of a benchmark add up to.
//!
//! A reading only says the energy up to the counter's last step, so the difference of
//! two readings is off by up to a step at each end (10% of a 1 s window on an H200).
//! The host therefore reads the counter every millisecond or so while the calls run,
//! and counts from the first step it saw to the last one: the energy between two
//! steps is exact, and each step's time is known to half the gap between the readings
//! around it. A window's power over those steps, times the synced time of its calls,
//! over its calls, is the energy per call.

use serde::{Deserialize, Serialize};

use gpubench_record::energy::{EnergyMeasurement, EnergyWindow};
use gpubench_record::measurement::Measurement;

use crate::stats::median;

/// One reading of the energy counter, as the host took it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CounterReading {
    /// When it was read, s after the window (or the idle reading) started.
    pub at_s: f64,
    /// The counter, mJ.
    pub energy_mj: u64,
}

/// The counter's steps in `readings`: energy between the first step seen and the
/// last (J), the time between them (s) and the steps in between. `Err` says why the
/// readings cannot be counted: too few of them, a counter that went backwards (a
/// wrap or a driver reset), or fewer than two steps seen (a window shorter than a
/// step).
pub fn counted_steps(readings: &[CounterReading]) -> Result<(f64, f64, u32), String> {
    if readings.len() < 2 {
        return Err("the energy counter was read fewer than twice".into());
    }
    let mut edges: Vec<(f64, u64)> = Vec::new();
    for pair in readings.windows(2) {
        let (before, after) = (pair[0], pair[1]);
        if after.energy_mj < before.energy_mj {
            return Err(format!(
                "the energy counter went backwards (from {} to {} mJ): it wrapped or was reset",
                before.energy_mj, after.energy_mj
            ));
        }
        if after.energy_mj > before.energy_mj {
            // The step fell between the two readings.
            edges.push((0.5 * (before.at_s + after.at_s), after.energy_mj));
        }
    }
    let (Some(&(t_first, e_first)), Some(&(t_last, e_last))) = (edges.first(), edges.last()) else {
        return Err("the energy counter never stepped while it was read".into());
    };
    let counted_s = t_last - t_first;
    if edges.len() < 2 || counted_s <= 0.0 {
        return Err(format!(
            "the energy counter stepped only once in {:.0} ms: the window was shorter than two steps",
            1e3 * (readings[readings.len() - 1].at_s - readings[0].at_s)
        ));
    }
    Ok((
        (e_last - e_first) as f64 / 1e3,
        counted_s,
        (edges.len() - 1) as u32,
    ))
}

/// The window of `calls` back-to-back calls whose synced time was `synced_s`, with
/// the counter read as `readings` while they ran.
pub fn window(
    readings: &[CounterReading],
    calls: u64,
    synced_s: f64,
) -> Result<EnergyWindow, String> {
    if calls == 0 || synced_s <= 0.0 {
        return Err("the window made no calls".into());
    }
    let (energy_j, counted_s, steps) = counted_steps(readings)?;
    Ok(EnergyWindow {
        calls,
        synced_s,
        counted_s,
        steps,
        energy_j,
    })
}

/// The board's power from `readings` taken with nothing running, W.
pub fn idle_power(readings: &[CounterReading]) -> Result<f64, String> {
    let (energy_j, counted_s, _) = counted_steps(readings)?;
    Ok(energy_j / counted_s)
}

/// The energy of a benchmark over its processes: what the run summary shows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnergySummary {
    /// Energy per call, J: the median over processes of each process's median window.
    pub joules_per_call: f64,
    /// Each process's median energy per call, J, in process order.
    pub per_process_joules: Vec<f64>,
    /// Average power while the calls ran, W (median over processes).
    pub power_w: f64,
    /// The board's idle power read when each process started, W (median), when read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_w: Option<f64>,
    /// Windows over every process.
    pub windows: usize,
    /// Mean time a window counted, from its first counter step to its last, s.
    pub window_s: f64,
    /// Counter steps seen over every window.
    pub steps: u32,
    /// Spread of the windows inside a process: the standard deviation of each
    /// window's energy per call relative to its process's median, pooled (0.03: 3%).
    pub window_spread: f64,
}

impl EnergySummary {
    /// The summary of `measurements`' energy; `None` when none has any.
    pub fn of<'a>(measurements: impl IntoIterator<Item = &'a Measurement>) -> Option<Self> {
        let processes: Vec<&EnergyMeasurement> = measurements
            .into_iter()
            .filter_map(|m| m.energy.as_ref())
            .filter(|e| !e.windows.is_empty())
            .collect();
        if processes.is_empty() {
            return None;
        }
        let per_process_joules: Vec<f64> = processes
            .iter()
            .map(|e| median(&e.joules_per_call()))
            .collect();
        let power: Vec<f64> = processes.iter().map(|e| median(&e.power_w())).collect();
        let idle: Vec<f64> = processes.iter().filter_map(|e| e.idle_w).collect();
        let windows: Vec<&EnergyWindow> = processes.iter().flat_map(|e| &e.windows).collect();
        let mut squares = 0.0;
        for (e, mid) in processes.iter().zip(&per_process_joules) {
            for j in e.joules_per_call() {
                squares += (j / mid - 1.0).powi(2);
            }
        }
        let dof = windows.len().saturating_sub(processes.len());
        Some(EnergySummary {
            joules_per_call: median(&per_process_joules),
            per_process_joules,
            power_w: median(&power),
            idle_w: (!idle.is_empty()).then(|| median(&idle)),
            windows: windows.len(),
            window_s: windows.iter().map(|w| w.counted_s).sum::<f64>() / windows.len() as f64,
            steps: windows.iter().map(|w| w.steps).sum(),
            window_spread: if dof > 0 {
                (squares / dof as f64).sqrt()
            } else {
                0.0
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A counter stepping every `step_s` at `watts`, read every `every_s` from `from_s`
    /// to `to_s` (the counter's steps fall at multiples of `step_s`).
    fn readings(
        watts: f64,
        step_s: f64,
        every_s: f64,
        from_s: f64,
        to_s: f64,
    ) -> Vec<CounterReading> {
        let mut out = Vec::new();
        let mut t = from_s;
        while t <= to_s {
            let last_step = (t / step_s).floor() * step_s;
            out.push(CounterReading {
                at_s: t - from_s,
                energy_mj: (1e3 * watts * last_step).round() as u64 + 5_000_000,
            });
            t += every_s;
        }
        out
    }

    #[test]
    fn a_counter_stepping_every_100_ms_gives_the_power_to_a_fraction_of_a_percent() {
        // 0.37 s of 700 W read every ms from an odd phase: 3 whole steps counted.
        let r = readings(700.0, 0.1, 0.001, 0.0333, 0.4033);
        let w = window(&r, 250, 0.37).unwrap();
        assert_eq!(w.steps, 3);
        assert!((w.counted_s - 0.3).abs() < 0.0011, "{}", w.counted_s);
        assert!((w.energy_j - 210.0).abs() < 1e-9, "{}", w.energy_j);
        assert!((w.power_w() / 700.0 - 1.0).abs() < 0.005, "{}", w.power_w());
        // 700 W for 0.37 s over 250 calls.
        let expected = 700.0 * 0.37 / 250.0;
        assert!((w.joules_per_call() / expected - 1.0).abs() < 0.005);
    }

    #[test]
    fn a_naive_difference_would_be_a_step_off_and_the_steps_are_not() {
        // Read every 30 ms: each step's time is known to 15 ms, the energy exactly.
        let r = readings(400.0, 0.1, 0.03, 0.01, 0.95);
        let (j, s, steps) = counted_steps(&r).unwrap();
        assert_eq!(steps, 8);
        assert!((j - 400.0 * 0.8).abs() < 1e-9);
        assert!((s - 0.8).abs() <= 0.03, "{s}");
        let naive = (r.last().unwrap().energy_mj - r[0].energy_mj) as f64
            / 1e3
            / (r.last().unwrap().at_s - r[0].at_s);
        assert!((naive / 400.0 - 1.0).abs() > 0.02, "{naive}");
    }

    #[test]
    fn a_window_shorter_than_two_steps_is_refused() {
        let once = readings(700.0, 0.1, 0.001, 0.05, 0.12);
        let why = window(&once, 10, 0.07).unwrap_err();
        assert!(why.contains("shorter than two steps"), "{why}");
        let never = readings(700.0, 0.1, 0.001, 0.01, 0.09);
        let why = window(&never, 10, 0.08).unwrap_err();
        assert!(why.contains("never stepped"), "{why}");
        assert!(window(&[], 10, 0.1).is_err());
        assert!(window(&readings(700.0, 0.1, 0.001, 0.0, 0.5), 0, 0.5).is_err());
    }

    #[test]
    fn a_counter_that_wraps_or_goes_back_is_refused() {
        let mut r = readings(300.0, 0.1, 0.001, 0.0, 0.5);
        let i = r.len() / 2;
        r[i].energy_mj = 12;
        let why = window(&r, 10, 0.5).unwrap_err();
        assert!(why.contains("went backwards"), "{why}");
    }

    #[test]
    fn idle_power_comes_from_the_steps_too() {
        let r = readings(83.0, 0.1, 0.001, 0.02, 0.25);
        assert!((idle_power(&r).unwrap() / 83.0 - 1.0).abs() < 0.01);
        assert!(idle_power(&r[..5]).is_err());
    }

    fn process(joules: &[f64]) -> Measurement {
        let mut m = gpubench_record::testing::measurement(1e6);
        m.energy = Some(EnergyMeasurement {
            windows: joules
                .iter()
                .map(|&j| EnergyWindow {
                    calls: 100,
                    synced_s: 0.35,
                    counted_s: 0.3,
                    steps: 3,
                    energy_j: j * 100.0 * 0.3 / 0.35,
                })
                .collect(),
            idle_w: Some(80.0),
            idle_unavailable: None,
        });
        m
    }

    #[test]
    fn the_summary_takes_medians_over_processes_and_pools_the_window_spread() {
        let a = process(&[1.0, 1.02, 0.98]);
        let b = process(&[1.1, 1.1, 1.1]);
        let c = process(&[1.04, 1.04, 1.04]);
        let s = EnergySummary::of([&a, &b, &c]).unwrap();
        assert!((s.joules_per_call - 1.04).abs() < 1e-9);
        assert_eq!(s.per_process_joules.len(), 3);
        assert_eq!(s.windows, 9);
        assert_eq!(s.steps, 27);
        assert_eq!(s.idle_w, Some(80.0));
        // Only the first process spreads: (0.02² · 2) / (9 − 3).
        assert!((s.window_spread - (0.0008f64 / 6.0).sqrt()).abs() < 1e-6);
        assert!(
            (s.power_w - 1.04 * 100.0 / 0.35).abs() < 1e-6,
            "{}",
            s.power_w
        );
        let none = gpubench_record::testing::measurement(1e6);
        assert!(EnergySummary::of([&none]).is_none());
    }
}
