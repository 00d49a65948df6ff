//! Published peak rates of known GPU models, as data: dense and sparse tensor-core
//! peaks kept apart, the SM clock the peaks assume, the memory bandwidth and the
//! memory clock it assumes, and the data sheet each comes from; and a benchmark's
//! rate as a share of the peak scaled to the clock it ran at ([`PeakShare`]).
//!
//! Many published tables mix dense and sparse (2:4 structured sparsity, twice the
//! dense figure) peaks; a dense matmul is measured against the dense one. A device
//! that is not listed gets no share rather than a guess.

use serde::{Deserialize, Serialize};

use gpubench_record::measurement::Throughput;
use gpubench_record::record::ProcessRecord;

/// Peak rates of one device model.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DevicePeaks {
    /// A name the table shows, e.g. `NVIDIA H100 SXM`.
    pub model: &'static str,
    /// The data sheet the figures come from (name and address).
    pub source: &'static str,
    /// Dense peak TFLOP/s per element type, e.g. `("bf16", 989.4)`.
    pub dense_tflops: &'static [(&'static str, f64)],
    /// Peak TFLOP/s with 2:4 structured sparsity, per element type (where the
    /// tensor cores have it).
    pub sparse_tflops: &'static [(&'static str, f64)],
    /// The SM clock the FLOP/s peaks assume, MHz: the tensor-core peak is SMs ×
    /// FLOP per clock per SM × this clock (132 × 4096 × 1830 MHz = 989.4 TFLOP/s
    /// bf16 on an H100 or H200 SXM).
    pub boost_sm_mhz: u32,
    /// Peak memory bandwidth, GB/s (10^9 bytes per second).
    pub memory_gb_s: f64,
    /// The memory clock the bandwidth assumes, MHz, as NVML reports it, when known:
    /// the clock the board's memory runs at full speed, at which its data-sheet
    /// bandwidth holds. A bytes share is scaled by the measured memory clock over it.
    pub memory_mhz: Option<u32>,
}

impl DevicePeaks {
    /// The dense peak TFLOP/s for `dtype` (case-insensitive, `bfloat16` = `bf16`).
    pub fn tflops_for(&self, dtype: &str) -> Option<f64> {
        lookup(self.dense_tflops, dtype)
    }

    /// The sparse peak TFLOP/s for `dtype`, where the tensor cores have one.
    pub fn sparse_tflops_for(&self, dtype: &str) -> Option<f64> {
        lookup(self.sparse_tflops, dtype)
    }
}

fn lookup(table: &[(&str, f64)], dtype: &str) -> Option<f64> {
    let key = normalise_dtype(dtype)?;
    table.iter().find(|(d, _)| *d == key).map(|&(_, tf)| tf)
}

const HOPPER_SXM: &[(&str, f64)] = &[
    ("fp64", 66.9),
    ("fp32", 66.9),
    ("tf32", 494.7),
    ("bf16", 989.4),
    ("fp16", 989.4),
    ("fp8", 1978.9),
];
const HOPPER_SXM_SPARSE: &[(&str, f64)] = &[
    ("tf32", 989.4),
    ("bf16", 1978.9),
    ("fp16", 1978.9),
    ("fp8", 3957.8),
];
const HOPPER_NVL: &[(&str, f64)] = &[
    ("fp64", 60.0),
    ("fp32", 60.0),
    ("tf32", 417.5),
    ("bf16", 835.0),
    ("fp16", 835.0),
    ("fp8", 1670.5),
];
const HOPPER_NVL_SPARSE: &[(&str, f64)] = &[
    ("tf32", 835.0),
    ("bf16", 1671.0),
    ("fp16", 1671.0),
    ("fp8", 3341.0),
];
const H100_PCIE: &[(&str, f64)] = &[
    ("fp64", 51.2),
    ("fp32", 51.2),
    ("tf32", 378.0),
    ("bf16", 756.0),
    ("fp16", 756.0),
    ("fp8", 1513.0),
];
const H100_PCIE_SPARSE: &[(&str, f64)] = &[
    ("tf32", 756.0),
    ("bf16", 1513.0),
    ("fp16", 1513.0),
    ("fp8", 3026.0),
];
const AMPERE_A100: &[(&str, f64)] = &[
    ("fp64", 19.5),
    ("fp32", 19.5),
    ("tf32", 156.0),
    ("bf16", 312.0),
    ("fp16", 312.0),
];
const AMPERE_A100_SPARSE: &[(&str, f64)] = &[("tf32", 312.0), ("bf16", 624.0), ("fp16", 624.0)];

const H200_SOURCE: &str =
    "NVIDIA H200 Tensor Core GPU data sheet, https://www.nvidia.com/en-us/data-center/h200/";
const H100_SOURCE: &str =
    "NVIDIA H100 Tensor Core GPU data sheet, https://www.nvidia.com/en-us/data-center/h100/";
const A100_SOURCE: &str =
    "NVIDIA A100 Tensor Core GPU data sheet, https://www.nvidia.com/en-us/data-center/a100/";

/// The H200 SXM's memory clock, MHz: what NVML reports of its HBM3e at full speed
/// (read on an H200, driver 580.159.04; `docs/gpu-validation.md`). Its six 1024-bit
/// stacks at twice that clock move 4.92 TB/s, which the data sheet states as 4.8 TB/s
/// (6.25 Gb/s per pin): the scale is the clock's ratio to this one, so a board at
/// full speed is measured against the data sheet's figure itself.
const H200_MEMORY_MHZ: u32 = 3201;
/// The H100 PCIe's memory clock, MHz: its HBM2e at the A100 80GB's clock, as spec
/// listings give it (e.g. https://cputronic.com/de/gpu/nvidia-h100-pcie; not yet read
/// on such a board here). Five 1024-bit stacks at twice it move 2.04 TB/s, the
/// "greater than 2,000 GB/s" of NVIDIA's H100 PCIe product brief (PB-11133-001).
const H100_PCIE_MEMORY_MHZ: u32 = 1593;

/// Known devices, most specific name first: the first entry whose every pattern
/// occurs in the device name wins. The NVL and PCIe boards' clocks are the ones
/// their data-sheet figures imply (132 or 114 SMs × 4096 bf16 FLOP per clock).
const KNOWN: &[(&[&str], DevicePeaks)] = &[
    (
        &["H200", "NVL"],
        DevicePeaks {
            model: "NVIDIA H200 NVL",
            source: H200_SOURCE,
            dense_tflops: HOPPER_NVL,
            sparse_tflops: HOPPER_NVL_SPARSE,
            boost_sm_mhz: 1545,
            memory_gb_s: 4800.0,
            memory_mhz: None,
        },
    ),
    (
        &["H200"],
        DevicePeaks {
            model: "NVIDIA H200 SXM",
            source: H200_SOURCE,
            dense_tflops: HOPPER_SXM,
            sparse_tflops: HOPPER_SXM_SPARSE,
            boost_sm_mhz: 1830,
            memory_gb_s: 4800.0,
            memory_mhz: Some(H200_MEMORY_MHZ),
        },
    ),
    (
        &["H100", "NVL"],
        DevicePeaks {
            model: "NVIDIA H100 NVL",
            source: H100_SOURCE,
            dense_tflops: HOPPER_NVL,
            sparse_tflops: HOPPER_NVL_SPARSE,
            boost_sm_mhz: 1545,
            memory_gb_s: 3900.0,
            memory_mhz: None,
        },
    ),
    (
        &["H100", "PCIe"],
        DevicePeaks {
            model: "NVIDIA H100 PCIe",
            source: H100_SOURCE,
            dense_tflops: H100_PCIE,
            sparse_tflops: H100_PCIE_SPARSE,
            boost_sm_mhz: 1620,
            memory_gb_s: 2000.0,
            memory_mhz: Some(H100_PCIE_MEMORY_MHZ),
        },
    ),
    (
        &["H100"],
        DevicePeaks {
            model: "NVIDIA H100 SXM",
            source: H100_SOURCE,
            dense_tflops: HOPPER_SXM,
            sparse_tflops: HOPPER_SXM_SPARSE,
            boost_sm_mhz: 1830,
            memory_gb_s: 3350.0,
            memory_mhz: Some(2619),
        },
    ),
    (
        &["A100", "80GB"],
        DevicePeaks {
            model: "NVIDIA A100 80GB",
            source: A100_SOURCE,
            dense_tflops: AMPERE_A100,
            sparse_tflops: AMPERE_A100_SPARSE,
            boost_sm_mhz: 1410,
            memory_gb_s: 2039.0,
            memory_mhz: Some(1593),
        },
    ),
    (
        &["A100"],
        DevicePeaks {
            model: "NVIDIA A100 40GB",
            source: A100_SOURCE,
            dense_tflops: AMPERE_A100,
            sparse_tflops: AMPERE_A100_SPARSE,
            boost_sm_mhz: 1410,
            memory_gb_s: 1555.0,
            memory_mhz: Some(1215),
        },
    ),
];

/// The peaks of the device named `name` (as CUDA reports it, e.g. `NVIDIA H200`),
/// or `None` for a device not in the table.
pub fn device_peaks(name: &str) -> Option<&'static DevicePeaks> {
    KNOWN
        .iter()
        .find(|(patterns, _)| patterns.iter().all(|p| name.contains(p)))
        .map(|(_, peaks)| peaks)
}

/// The canonical spelling of an element type, or `None` when it is not one.
pub fn normalise_dtype(dtype: &str) -> Option<&'static str> {
    Some(match dtype.to_ascii_lowercase().as_str() {
        "bf16" | "bfloat16" => "bf16",
        "fp16" | "f16" | "half" | "float16" => "fp16",
        "tf32" => "tf32",
        "fp32" | "f32" | "float" | "float32" => "fp32",
        "fp64" | "f64" | "double" | "float64" => "fp64",
        "fp8" | "f8" | "e4m3" | "e5m2" | "float8" => "fp8",
        _ => return None,
    })
}

/// The element type a benchmark id names, e.g. `matmul_bf16/4096` → `bf16`: the last
/// `_`, `/`, `-`, `:` or `.`-separated token that is one.
pub fn dtype_from_id(id: &str) -> Option<&'static str> {
    id.split(['_', '/', '-', ':', '.', ' ', '(', ')', ','])
        .filter_map(normalise_dtype)
        .next_back()
}

/// Whether a benchmark id names 2:4 structured sparsity (`2:4`, as in
/// `matmul_bf16_2:4/8192`): its FLOPs are then measured against the sparse peak,
/// which is twice the dense one, and a dense benchmark never is.
pub fn sparse_from_id(id: &str) -> bool {
    id.contains("2:4")
}

/// A benchmark's rate as a share of its device's peak, the peak scaled to the
/// clock it ran at (the run summary's `peak`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PeakShare {
    /// The device model the peak is of.
    pub model: String,
    /// The data sheet the peak comes from.
    pub source: String,
    /// `flops` or `bytes`: which peak.
    pub kind: PeakKind,
    /// The element type of a FLOP/s peak.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dtype: Option<String>,
    /// The rate at the primary estimate, per second (FLOP/s or B/s).
    pub rate_per_s: f64,
    /// The data sheet's peak, per second: dense for FLOP/s, unless the id names
    /// 2:4 sparsity ([`PeakKind::SparseFlops`]).
    pub datasheet_peak_per_s: f64,
    /// The clock the data sheet's peak assumes, MHz (SM clock for FLOP/s, memory
    /// clock for bytes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub datasheet_clock_mhz: Option<f64>,
    /// The clock measured while the samples ran, MHz (mean SM clock for FLOP/s,
    /// memory clock for bytes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured_clock_mhz: Option<f64>,
    /// The peak scaled to the measured clock, per second; the data sheet's when the
    /// clock is unknown (see `unscaled`).
    pub peak_per_s: f64,
    /// `rate_per_s / peak_per_s` (0.62: 62% of the peak at the clock it ran).
    pub share: f64,
    /// The rate as a share of the data sheet's peak itself.
    pub share_of_datasheet: f64,
    /// Why the peak is not scaled, when it is not (no clock read, or the data
    /// sheet's clock not in the table).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unscaled: Option<String>,
}

/// Which peak a [`PeakShare`] is of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PeakKind {
    /// Dense tensor-core FLOP/s.
    DenseFlops,
    /// Tensor-core FLOP/s with 2:4 structured sparsity ([`sparse_from_id`]).
    SparseFlops,
    /// Memory bandwidth.
    Bytes,
}

impl PeakShare {
    /// The share of `throughput` at `ns_per_iter` on device `device_name`: FLOP/s
    /// against the dense peak of `dtype` scaled to `sm_clock_mhz`, bytes against
    /// the bandwidth scaled to `memory_clock_mhz`. `None` for a device or element
    /// type not in the table, and for elements.
    pub fn of(
        device_name: &str,
        throughput: Throughput,
        ns_per_iter: f64,
        dtype: Option<&str>,
        sm_clock_mhz: Option<f64>,
        memory_clock_mhz: Option<f64>,
    ) -> Option<Self> {
        let clocks = (sm_clock_mhz, memory_clock_mhz);
        Self::at(device_name, throughput, ns_per_iter, dtype, false, clocks)
    }

    /// [`PeakShare::of`] of the benchmark `id`: FLOP/s against the peak of the
    /// element type it names ([`dtype_from_id`]), the sparse one where it names 2:4
    /// sparsity ([`sparse_from_id`]).
    pub fn of_id(
        device_name: &str,
        throughput: Throughput,
        ns_per_iter: f64,
        id: &str,
        sm_clock_mhz: Option<f64>,
        memory_clock_mhz: Option<f64>,
    ) -> Option<Self> {
        Self::at(
            device_name,
            throughput,
            ns_per_iter,
            dtype_from_id(id),
            sparse_from_id(id),
            (sm_clock_mhz, memory_clock_mhz),
        )
    }

    /// The share against the dense or `sparse` peak of `dtype`, at the SM and
    /// memory `clocks`.
    fn at(
        device_name: &str,
        throughput: Throughput,
        ns_per_iter: f64,
        dtype: Option<&str>,
        sparse: bool,
        (sm_clock_mhz, memory_clock_mhz): (Option<f64>, Option<f64>),
    ) -> Option<Self> {
        let peaks = device_peaks(device_name)?;
        let rate = throughput.rate(ns_per_iter);
        if !(rate.is_finite() && rate > 0.0) {
            return None;
        }
        let (kind, dtype, datasheet, assumed, measured, what) = match throughput {
            Throughput::Flops(_) => {
                let dtype = dtype?;
                let (kind, tflops) = flops_peak(peaks, dtype, sparse)?;
                (
                    kind,
                    Some(dtype.to_string()),
                    tflops * 1e12,
                    Some(f64::from(peaks.boost_sm_mhz)),
                    sm_clock_mhz,
                    "SM",
                )
            }
            Throughput::Bytes(_) => (
                PeakKind::Bytes,
                None,
                peaks.memory_gb_s * 1e9,
                peaks.memory_mhz.map(f64::from),
                memory_clock_mhz,
                "memory",
            ),
            Throughput::Elements(_) => return None,
        };
        let (peak, unscaled) = match (assumed, measured) {
            (Some(a), Some(m)) if a > 0.0 && m > 0.0 => (datasheet * m / a, None),
            (None, _) => (
                datasheet,
                Some(format!(
                    "the {what} clock the data sheet's peak assumes is not in the table"
                )),
            ),
            (Some(_), _) => (
                datasheet,
                Some(format!("the {what} clock was not read while it ran")),
            ),
        };
        Some(PeakShare {
            model: peaks.model.to_string(),
            source: peaks.source.to_string(),
            kind,
            dtype,
            rate_per_s: rate,
            datasheet_peak_per_s: datasheet,
            datasheet_clock_mhz: assumed,
            measured_clock_mhz: measured,
            peak_per_s: peak,
            share: rate / peak,
            share_of_datasheet: rate / datasheet,
            unscaled,
        })
    }
}

/// The FLOP/s peak of `dtype`, dense or `sparse`, TFLOP/s, where the table has it.
fn flops_peak(peaks: &DevicePeaks, dtype: &str, sparse: bool) -> Option<(PeakKind, f64)> {
    if sparse {
        Some((PeakKind::SparseFlops, peaks.sparse_tflops_for(dtype)?))
    } else {
        Some((PeakKind::DenseFlops, peaks.tflops_for(dtype)?))
    }
}

/// One process of a side, as its shares of the peak need it: the time per call of
/// each sample, and the clocks it ran at.
#[derive(Debug, Clone, Copy)]
pub struct ProcessClocks<'a> {
    /// Time per call of each sample, ns.
    pub ns_per_iter: &'a [f64],
    /// The SM clock read after each sample, MHz, when the GPU was read.
    pub sm_clock_mhz: Option<&'a [u32]>,
    /// The process's memory clock, MHz (the mean of its readings), when read.
    pub memory_clock_mhz: Option<f64>,
}

/// The memory clock of one process, MHz: the mean of its readings at start and end,
/// when read.
pub fn process_memory_clock_mhz(process: &ProcessRecord) -> Option<f64> {
    let t = process.telemetry.as_ref()?;
    let clocks: Vec<f64> = [&t.start, &t.end]
        .into_iter()
        .filter_map(|r| r.memory_clock_mhz)
        .map(f64::from)
        .collect();
    (!clocks.is_empty()).then(|| clocks.iter().sum::<f64>() / clocks.len() as f64)
}

/// Each sample's share of its device's peak at the clock its process ran (FLOP/s
/// over the peak of the element type benchmark `id` names, dense or 2:4 sparse,
/// scaled to the process's mean SM clock, as the summary's share is; bytes/s over
/// the bandwidth scaled to the process's memory clock), one group per process: what
/// a comparison judges the share of peak on (`baseline::Metric::Peak`), each
/// process by the median of its group. The mean over a process's readings, not each
/// sample's own: one reading after a sample is an instant, which would add its
/// noise to the sample's. Empty processes stay empty groups. The reason, as a lower-case fragment, when there is
/// no share at a measured clock: no FLOPs or bytes declared, a device or element type
/// not in the table, a clock not read or not in the table.
pub fn sample_shares(
    device_name: &str,
    throughput: Option<Throughput>,
    id: &str,
    processes: &[ProcessClocks],
) -> Result<Vec<Vec<f64>>, String> {
    let Some(throughput) = throughput else {
        return Err("it declares no FLOPs or bytes per call (`Bencher::throughput`)".into());
    };
    let Some(peaks) = device_peaks(device_name) else {
        return Err(format!(
            "its device ({device_name}) is not in the peak table"
        ));
    };
    let (work, datasheet, assumed) = match throughput {
        Throughput::Flops(flops) => {
            let sparse = sparse_from_id(id);
            let peak = dtype_from_id(id).and_then(|d| flops_peak(peaks, d, sparse));
            let Some((_, tflops)) = peak else {
                return Err(format!(
                    "its id names no element type (e.g. `bf16`) whose {} peak the table \
                     has for the {}",
                    if sparse { "2:4 sparse" } else { "dense" },
                    peaks.model
                ));
            };
            (flops, tflops * 1e12, f64::from(peaks.boost_sm_mhz))
        }
        Throughput::Bytes(bytes) => {
            let Some(mhz) = peaks.memory_mhz else {
                return Err(format!(
                    "the memory clock the {}'s data-sheet bandwidth assumes is not in the \
                     peak table, so its share cannot be put at the clock it ran",
                    peaks.model
                ));
            };
            (bytes, peaks.memory_gb_s * 1e9, f64::from(mhz))
        }
        Throughput::Elements(_) => {
            return Err("it declares elements per call, which have no peak".into());
        }
    };
    processes
        .iter()
        .map(|p| {
            let clock = match throughput {
                Throughput::Bytes(_) => p
                    .memory_clock_mhz
                    .ok_or("the memory clock was not read while it ran")?,
                _ => p
                    .sm_clock_mhz
                    .filter(|c| c.len() == p.ns_per_iter.len())
                    .and_then(|c| gpubench_record::telemetry::mean_clock_mhz(&[c.to_vec()]))
                    .ok_or("the SM clock was not read after each sample")?,
            };
            if clock.is_nan() || clock <= 0.0 {
                return Err("a clock read as 0 MHz".to_string());
            }
            let peak = datasheet * clock / assumed;
            Ok(p.ns_per_iter
                .iter()
                .map(|&ns| work / (ns * 1e-9) / peak)
                .collect())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_devices_have_peaks_and_unknown_ones_none() {
        let h200 = device_peaks("NVIDIA H200").unwrap();
        assert_eq!(h200.tflops_for("bfloat16"), Some(989.4));
        assert_eq!(h200.sparse_tflops_for("bf16"), Some(1978.9));
        assert_eq!(h200.sparse_tflops_for("fp64"), None);
        assert!(h200.source.contains("H200"));
        assert_eq!(
            device_peaks("NVIDIA H100 PCIe").unwrap().model,
            "NVIDIA H100 PCIe"
        );
        assert_eq!(
            device_peaks("NVIDIA H100 80GB HBM3").unwrap().model,
            "NVIDIA H100 SXM"
        );
        assert!(device_peaks("AMD EPYC 7B13").is_none());
        assert!(device_peaks("NVIDIA GeForce RTX 4090").is_none());
        assert_eq!(h200.tflops_for("int8"), None);
    }

    /// Every model's sparse peak is twice its dense one, and its bf16 dense peak is
    /// its SMs × 4096 (Hopper) or 2048 (Ampere) FLOP per clock at its clock.
    #[test]
    fn the_table_keeps_dense_and_sparse_apart_and_matches_its_clock() {
        for (_, p) in KNOWN {
            for &(dtype, sparse) in p.sparse_tflops {
                let dense = p.tflops_for(dtype).unwrap();
                assert!((sparse / dense - 2.0).abs() < 0.01, "{} {dtype}", p.model);
            }
            let (sms, per_clock) = match p.model {
                m if m.contains("A100") => (108.0, 2048.0),
                m if m.contains("PCIe") => (114.0, 4096.0),
                _ => (132.0, 4096.0),
            };
            let implied = sms * per_clock * f64::from(p.boost_sm_mhz) * 1e6 / 1e12;
            let bf16 = p.tflops_for("bf16").unwrap();
            assert!(
                (implied / bf16 - 1.0).abs() < 0.01,
                "{}: {implied}",
                p.model
            );
        }
    }

    /// Where the table has the memory clock, the bandwidth is the board's HBM bus
    /// (1024 bits a stack: six on an H200, five on the others) at twice that clock
    /// (double data rate), within the rounding of the data sheets' figures: the
    /// H200's 4.8 TB/s and the H100 PCIe's 2,000 GB/s lie 2.4% and 2.0% under it.
    #[test]
    fn the_memory_clock_matches_the_bandwidth() {
        let mut checked = 0;
        for (_, p) in KNOWN {
            let Some(mhz) = p.memory_mhz else { continue };
            let (bus_bits, within) = match p.model {
                m if m.contains("H200") => (6144.0, 0.025),
                m if m.contains("PCIe") => (5120.0, 0.021),
                _ => (5120.0, 0.005),
            };
            let gb_s = bus_bits / 8.0 * 2.0 * f64::from(mhz) * 1e6 / 1e9;
            assert!(
                gb_s >= p.memory_gb_s && (gb_s / p.memory_gb_s - 1.0).abs() < within,
                "{}: {gb_s}",
                p.model
            );
            checked += 1;
        }
        assert_eq!(checked, 5);
    }

    /// A 2:4 sparse matmul is measured against the sparse peak, twice the dense
    /// one, and only an id that names `2:4` is.
    #[test]
    fn an_id_that_names_2_4_sparsity_is_measured_against_the_sparse_peak() {
        let flops = Throughput::Flops(2.0 * 8192f64.powi(3));
        let share =
            |id| PeakShare::of_id("NVIDIA H200", flops, 1.395e6, id, Some(1707.0), None).unwrap();
        let dense = share("matmul_bf16/8192");
        let sparse = share("matmul_bf16_2:4/8192");
        assert_eq!(dense.kind, PeakKind::DenseFlops);
        assert_eq!(sparse.kind, PeakKind::SparseFlops);
        assert!((sparse.datasheet_peak_per_s - 1978.9e12).abs() < 1e6);
        assert!((dense.share / sparse.share - 2.0).abs() < 0.001);
        assert!(!sparse_from_id("sparse_attention/4096"));
        // fp64 has no sparse peak: no share rather than the dense one.
        let fp64 = PeakShare::of_id("NVIDIA H200", flops, 1e6, "gemm_fp64_2:4", None, None);
        assert!(fp64.is_none());
        // The shares a comparison judges follow the same rule.
        let times = [1.395e6];
        let process = [ProcessClocks {
            ns_per_iter: &times,
            sm_clock_mhz: Some(&[1707]),
            memory_clock_mhz: None,
        }];
        let of = |id| sample_shares("NVIDIA H200", Some(flops), id, &process).unwrap()[0][0];
        assert!((of("matmul_bf16/8192") - dense.share).abs() < 1e-9);
        assert!((of("matmul_bf16_2:4/8192") - sparse.share).abs() < 1e-9);
        let e = sample_shares("NVIDIA H200", Some(flops), "gemm_fp64_2:4", &process);
        assert!(e.unwrap_err().contains("2:4 sparse peak"));
    }

    /// A process's shares are at its mean SM clock, as the summary's share is, not
    /// at each sample's own reading; a process without readings has none.
    #[test]
    fn a_process_shares_are_at_its_mean_sm_clock() {
        let flops = Some(Throughput::Flops(1e12));
        let times = [1e6, 1e6];
        let clocks = [1500, 1900];
        let process = |sm_clock_mhz| ProcessClocks {
            ns_per_iter: &times,
            sm_clock_mhz,
            memory_clock_mhz: None,
        };
        let shares = sample_shares("NVIDIA H200", flops, "mm_bf16", &[process(Some(&clocks))]);
        let at_1700 = 1e15 / (989.4e12 * 1700.0 / 1830.0);
        assert!(shares.unwrap()[0]
            .iter()
            .all(|s| (s - at_1700).abs() < 1e-9));
        let none = sample_shares("NVIDIA H200", flops, "mm_bf16", &[process(None)]);
        assert!(none.unwrap_err().contains("SM clock was not read"));
    }

    #[test]
    fn dtype_is_read_from_ids() {
        assert_eq!(dtype_from_id("matmul_bf16/4096"), Some("bf16"));
        assert_eq!(dtype_from_id("gemm/f32"), Some("fp32"));
        assert_eq!(dtype_from_id("softmax/4096"), None);
        assert_eq!(dtype_from_id("halfway"), None);
    }

    /// An 8192² bf16 matmul (2·8192³ FLOP) in 1.395 ms at a measured 1707 MHz, by
    /// hand: 788.2 TFLOP/s against 989.4 × 1707 / 1830 = 922.9 TFLOP/s is 85.4%.
    #[test]
    fn the_share_is_the_hand_computation_at_the_measured_clock() {
        let flops = 2.0 * 8192f64.powi(3);
        let s = PeakShare::of(
            "NVIDIA H200",
            Throughput::Flops(flops),
            1.395e6,
            Some("bf16"),
            Some(1707.0),
            None,
        )
        .unwrap();
        let by_hand = (flops / 1.395e-3) / (989.4e12 * 1707.0 / 1830.0);
        assert!(
            (s.share / by_hand - 1.0).abs() < 0.01,
            "{} vs {by_hand}",
            s.share
        );
        assert!((s.share - 0.854).abs() < 0.001, "{}", s.share);
        assert!((s.share_of_datasheet - 0.7966).abs() < 0.001);
        assert_eq!(s.kind, PeakKind::DenseFlops);
        assert!(s.unscaled.is_none());
        // No clock read: the data sheet's peak, and it says so.
        let plain = PeakShare::of(
            "NVIDIA H200",
            Throughput::Flops(flops),
            1.395e6,
            Some("bf16"),
            None,
            None,
        )
        .unwrap();
        assert_eq!(plain.share, plain.share_of_datasheet);
        assert!(plain.unscaled.unwrap().contains("not read"));
        // Bytes on an H200: scaled to its memory clock, the data sheet's bandwidth
        // at full speed (3201 MHz), less at a lower clock.
        let copy = |memory_mhz| {
            PeakShare::of(
                "NVIDIA H200",
                Throughput::Bytes(2e9),
                1e6,
                None,
                None,
                Some(memory_mhz),
            )
            .unwrap()
        };
        let full = copy(3201.0);
        assert!((full.share - 2e12 / 4.8e12).abs() < 1e-9);
        assert!(full.unscaled.is_none());
        assert_eq!(full.datasheet_clock_mhz, Some(3201.0));
        let slow = copy(1600.5);
        assert!((slow.share - 2e12 / 2.4e12).abs() < 1e-9);
        assert!((slow.share_of_datasheet - 2e12 / 4.8e12).abs() < 1e-9);
        // A board whose memory clock the table lacks: the data sheet's peak, and why.
        let nvl = PeakShare::of(
            "NVIDIA H200 NVL",
            Throughput::Bytes(2e9),
            1e6,
            None,
            None,
            Some(3201.0),
        )
        .unwrap();
        assert!((nvl.share - 2e12 / 4.8e12).abs() < 1e-9);
        assert!(nvl.unscaled.unwrap().contains("not in the table"));
        let a100 = PeakShare::of(
            "NVIDIA A100-SXM4-80GB",
            Throughput::Bytes(1e9),
            1e6,
            None,
            None,
            Some(1593.0 / 2.0),
        )
        .unwrap();
        assert!((a100.share - 1e12 / (2039e9 / 2.0)).abs() < 1e-9);
        assert!(
            PeakShare::of("NVIDIA H200", Throughput::Flops(1e9), 1e6, None, None, None).is_none()
        );
        assert!(PeakShare::of("AMD EPYC", Throughput::Bytes(1e9), 1e6, None, None, None).is_none());
    }
}
