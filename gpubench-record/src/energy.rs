//! Energy per call as the record keeps it: windows of back-to-back calls timed
//! between steps of the GPU's total-energy counter, and the board's idle power read
//! when the process started.
//!
//! NVML's counter (millijoules) steps every ~100 ms on an H200, so a window shorter
//! than a step reads nothing or one step. A window is therefore counted from one step
//! the host saw to a later one, and its calls are counted over the synced stretch that
//! holds those steps (`gpubench-analysis`'s `energy` module does the arithmetic).

use serde::{Deserialize, Serialize};

/// One window of back-to-back calls and the counter steps seen inside it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct EnergyWindow {
    /// Calls made in the window.
    pub calls: u64,
    /// Synced wall time of the calls, s (`sync; t0; calls; sync; t1`).
    pub synced_s: f64,
    /// Time from the first counter step seen to the last, s: what the energy covers.
    pub counted_s: f64,
    /// Counter steps between the first seen and the last.
    pub steps: u32,
    /// Energy the counter gained between those steps, J.
    pub energy_j: f64,
}

impl EnergyWindow {
    /// Average power between the counted steps, W.
    pub fn power_w(&self) -> f64 {
        self.energy_j / self.counted_s
    }

    /// Energy per call, J: the average power times the synced time of one call.
    pub fn joules_per_call(&self) -> f64 {
        self.power_w() * self.synced_s / self.calls.max(1) as f64
    }
}

/// The energy of one process's calls.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnergyMeasurement {
    /// The windows, in time order.
    pub windows: Vec<EnergyWindow>,
    /// The board's power with nothing running, read when the process started, W.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_w: Option<f64>,
    /// Why there is no idle power, when there is none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_unavailable: Option<String>,
}

impl EnergyMeasurement {
    /// Energy per call of each window, J.
    pub fn joules_per_call(&self) -> Vec<f64> {
        self.windows
            .iter()
            .map(EnergyWindow::joules_per_call)
            .collect()
    }

    /// Average power of each window, W.
    pub fn power_w(&self) -> Vec<f64> {
        self.windows.iter().map(EnergyWindow::power_w).collect()
    }
}
