//! [`NvmlSource`]: the GPU's telemetry read through NVML, which `nvml-wrapper` loads
//! with `dlopen` at run time, so building and running need no NVIDIA driver; where
//! there is none, opening says why in a few words and nothing else happens.

use nvml_wrapper::bitmasks::device::ThrottleReasons;
use nvml_wrapper::enum_wrappers::device::{Clock, ComputeMode, TemperatureSensor};
use nvml_wrapper::enums::device::UsedGpuMemory;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::{Device, Nvml};

use crate::telemetry::{EnergyCounter, TelemetrySource};
use gpubench_record::telemetry::{
    ClockReading, GpuProcess, GpuState, SlowdownReason, TelemetryReading,
};

/// How the GPU is found again for each reading (a `Device` borrows the library).
#[derive(Debug, Clone)]
enum Locator {
    /// By PCI bus id: what CUDA's device numbering (which `CUDA_VISIBLE_DEVICES` and
    /// `CUDA_DEVICE_ORDER` change) and NVML's agree on.
    PciBusId(String),
    /// By NVML's own index (PCI order, all GPUs of the machine).
    Index(u32),
}

/// One GPU's telemetry through NVML.
pub struct NvmlSource {
    nvml: Nvml,
    locator: Locator,
}

impl std::fmt::Debug for NvmlSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NvmlSource")
            .field("locator", &self.locator)
            .finish()
    }
}

/// Loads NVML; `Err` says, in words for a record, why there is no telemetry.
fn init() -> Result<Nvml, String> {
    Nvml::init().map_err(|e| why_unavailable(&e))
}

/// Words for a record or `doctor` on why NVML could not be used.
pub fn why_unavailable(err: &NvmlError) -> String {
    match err {
        NvmlError::LibloadingError(_) => {
            "no NVIDIA driver/NVML (libnvidia-ml.so.1 could not be loaded)".to_string()
        }
        NvmlError::DriverNotLoaded => {
            "no NVIDIA driver/NVML (the NVIDIA kernel driver is not loaded)".to_string()
        }
        NvmlError::NoPermission => "NVML refused access (no permission)".to_string(),
        other => format!("NVML failed: {other}"),
    }
}

/// The NVIDIA driver's version and the number of GPUs NVML sees.
pub fn driver_and_count() -> Result<(String, u32), String> {
    let nvml = init()?;
    let version = nvml
        .sys_driver_version()
        .map_err(|e| format!("NVML failed to read the driver version: {e}"))?;
    let count = nvml
        .device_count()
        .map_err(|e| format!("NVML failed to count GPUs: {e}"))?;
    Ok((version, count))
}

impl NvmlSource {
    /// The GPU with PCI bus id `pci_bus_id` (as CUDA's `cuDeviceGetPCIBusId` writes
    /// it), else NVML's GPU number `index`. `Err` says why there is no telemetry.
    pub fn open(pci_bus_id: Option<&str>, index: u32) -> Result<Self, String> {
        let nvml = init()?;
        let locator = match pci_bus_id {
            Some(id) => Locator::PciBusId(id.to_string()),
            None => Locator::Index(index),
        };
        let source = NvmlSource { nvml, locator };
        source
            .device()
            .map_err(|e| format!("NVML has no GPU {}: {e}", source.describe()))?;
        Ok(source)
    }

    fn describe(&self) -> String {
        match &self.locator {
            Locator::PciBusId(id) => format!("at PCI bus id {id}"),
            Locator::Index(i) => format!("number {i}"),
        }
    }

    fn device(&self) -> Result<Device<'_>, NvmlError> {
        match &self.locator {
            Locator::PciBusId(id) => self.nvml.device_by_pci_bus_id(id.as_str()),
            Locator::Index(i) => self.nvml.device_by_index(*i),
        }
    }

    /// The GPU's model name.
    pub fn name(&self) -> Option<String> {
        self.device().ok()?.name().ok()
    }
}

fn slowdown_reasons(bits: ThrottleReasons) -> Vec<SlowdownReason> {
    let table = [
        (ThrottleReasons::GPU_IDLE, SlowdownReason::GpuIdle),
        (
            ThrottleReasons::APPLICATIONS_CLOCKS_SETTING,
            SlowdownReason::ApplicationsClocksSetting,
        ),
        (ThrottleReasons::SW_POWER_CAP, SlowdownReason::SwPowerCap),
        (ThrottleReasons::HW_SLOWDOWN, SlowdownReason::HwSlowdown),
        (ThrottleReasons::SYNC_BOOST, SlowdownReason::SyncBoost),
        (
            ThrottleReasons::SW_THERMAL_SLOWDOWN,
            SlowdownReason::SwThermalSlowdown,
        ),
        (
            ThrottleReasons::HW_THERMAL_SLOWDOWN,
            SlowdownReason::HwThermalSlowdown,
        ),
        (
            ThrottleReasons::HW_POWER_BRAKE_SLOWDOWN,
            SlowdownReason::HwPowerBrakeSlowdown,
        ),
        (
            ThrottleReasons::DISPLAY_CLOCK_SETTING,
            SlowdownReason::DisplayClockSetting,
        ),
    ];
    table
        .into_iter()
        .filter(|(bit, _)| bits.contains(*bit))
        .map(|(_, reason)| reason)
        .collect()
}

fn watts(milliwatts: u32) -> f64 {
    f64::from(milliwatts) / 1000.0
}

fn clock_reading(device: &Device<'_>) -> Result<ClockReading, String> {
    let sm_clock_mhz = device
        .clock_info(Clock::SM)
        .map_err(|e| format!("NVML failed to read the SM clock: {e}"))?;
    Ok(ClockReading {
        sm_clock_mhz,
        temperature_c: device.temperature(TemperatureSensor::Gpu).ok(),
        slowdown: device
            .current_throttle_reasons()
            .map(slowdown_reasons)
            .unwrap_or_default(),
        power_w: device.power_usage().ok().map(watts),
    })
}

impl TelemetrySource for NvmlSource {
    fn state(&self) -> GpuState {
        let Ok(device) = self.device() else {
            return GpuState::default();
        };
        GpuState {
            driver_version: self.nvml.sys_driver_version().ok(),
            sm_clock_mhz: device.clock_info(Clock::SM).ok(),
            memory_clock_mhz: device.clock_info(Clock::Memory).ok(),
            max_sm_clock_mhz: device.max_clock_info(Clock::SM).ok(),
            default_sm_clock_mhz: device.default_applications_clock(Clock::SM).ok(),
            power_limit_w: device.enforced_power_limit().ok().map(watts),
            persistence_mode: device.is_in_persistent_mode().ok(),
            compute_mode: device.compute_mode().ok().map(|m| {
                match m {
                    ComputeMode::Default => "default",
                    ComputeMode::ExclusiveThread => "exclusive_thread",
                    ComputeMode::Prohibited => "prohibited",
                    ComputeMode::ExclusiveProcess => "exclusive_process",
                }
                .to_string()
            }),
            ecc_enabled: device.is_ecc_enabled().ok().map(|e| e.currently_enabled),
        }
    }

    fn read(&self) -> Result<TelemetryReading, String> {
        let device = self
            .device()
            .map_err(|e| format!("NVML lost GPU {}: {e}", self.describe()))?;
        let processes = device
            .running_compute_processes()
            .map(|ps| {
                ps.into_iter()
                    .map(|p| GpuProcess {
                        pid: p.pid,
                        used_memory_bytes: match p.used_gpu_memory {
                            UsedGpuMemory::Used(b) => Some(b),
                            UsedGpuMemory::Unavailable => None,
                        },
                    })
                    .collect()
            })
            .unwrap_or_default();
        Ok(TelemetryReading {
            clock: clock_reading(&device)?,
            memory_clock_mhz: device.clock_info(Clock::Memory).ok(),
            power_limit_w: device.enforced_power_limit().ok().map(watts),
            processes,
        })
    }

    fn read_clock(&self) -> Result<ClockReading, String> {
        let device = self
            .device()
            .map_err(|e| format!("NVML lost GPU {}: {e}", self.describe()))?;
        clock_reading(&device)
    }

    fn energy_counter(&self) -> Result<Box<dyn EnergyCounter>, String> {
        let mut counter = NvmlEnergy {
            source: NvmlSource {
                nvml: init()?,
                locator: self.locator.clone(),
            },
        };
        counter.read_mj()?;
        Ok(Box::new(counter))
    }
}

/// The GPU's total-energy counter through a handle of NVML's own, for a thread that
/// polls it.
struct NvmlEnergy {
    source: NvmlSource,
}

impl EnergyCounter for NvmlEnergy {
    fn read_mj(&mut self) -> Result<u64, String> {
        let device = self
            .source
            .device()
            .map_err(|e| format!("NVML lost GPU {}: {e}", self.source.describe()))?;
        device
            .total_energy_consumption()
            .map_err(|e| format!("NVML failed to read the energy counter: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_nvml_slowdown_bit_has_a_reason() {
        let all = slowdown_reasons(ThrottleReasons::all());
        assert_eq!(all.len(), 9, "{all:?}");
        assert_eq!(
            slowdown_reasons(ThrottleReasons::SW_POWER_CAP | ThrottleReasons::HW_SLOWDOWN),
            vec![SlowdownReason::SwPowerCap, SlowdownReason::HwSlowdown]
        );
        assert!(slowdown_reasons(ThrottleReasons::NONE).is_empty());
    }

    /// On a machine without the NVIDIA driver (CI, this crate's CPU tests) opening
    /// fails with a short reason and no panic; with one it reads a clock.
    #[test]
    fn opening_either_reads_or_says_why_not() {
        match NvmlSource::open(None, 0) {
            Ok(source) => assert!(source.read_clock().is_ok()),
            Err(why) => assert!(
                why.contains("NVML") || why.contains("NVIDIA"),
                "an unclear reason: {why}"
            ),
        }
    }
}
