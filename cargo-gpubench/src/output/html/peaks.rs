//! Published peak rates of known devices, for "% of peak" columns.
//!
//! Dense (no sparsity) tensor-core peaks from the vendors' data sheets for the SXM
//! parts unless the name says otherwise. A device that is not listed gets no
//! percentage rather than a guess.

/// Peak rates of one device model.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DevicePeaks {
    /// A name the table shows, e.g. `NVIDIA H100 SXM`.
    pub model: &'static str,
    /// Dense peak TFLOP/s per element type, e.g. `("bf16", 989.4)`.
    pub tflops: &'static [(&'static str, f64)],
    /// Peak memory bandwidth, GB/s (10^9 bytes per second).
    pub memory_gb_s: f64,
}

impl DevicePeaks {
    /// The peak dense TFLOP/s for `dtype` (case-insensitive, `bfloat16` = `bf16`).
    pub fn tflops_for(&self, dtype: &str) -> Option<f64> {
        let key = normalise_dtype(dtype)?;
        self.tflops
            .iter()
            .find(|(d, _)| *d == key)
            .map(|&(_, tf)| tf)
    }
}

const HOPPER_SXM: &[(&str, f64)] = &[
    ("fp64", 66.9),
    ("fp32", 66.9),
    ("tf32", 494.7),
    ("bf16", 989.4),
    ("fp16", 989.4),
    ("fp8", 1978.9),
];
const HOPPER_NVL: &[(&str, f64)] = &[
    ("fp64", 60.0),
    ("fp32", 60.0),
    ("tf32", 417.5),
    ("bf16", 835.0),
    ("fp16", 835.0),
    ("fp8", 1670.5),
];
const H100_PCIE: &[(&str, f64)] = &[
    ("fp64", 51.2),
    ("fp32", 51.2),
    ("tf32", 378.0),
    ("bf16", 756.0),
    ("fp16", 756.0),
    ("fp8", 1513.0),
];
const AMPERE_A100: &[(&str, f64)] = &[
    ("fp64", 19.5),
    ("fp32", 19.5),
    ("tf32", 156.0),
    ("bf16", 312.0),
    ("fp16", 312.0),
];

/// Known devices, most specific name first: the first entry whose every pattern
/// occurs in the device name wins.
const KNOWN: &[(&[&str], DevicePeaks)] = &[
    (
        &["H200", "NVL"],
        DevicePeaks {
            model: "NVIDIA H200 NVL",
            tflops: HOPPER_NVL,
            memory_gb_s: 4800.0,
        },
    ),
    (
        &["H200"],
        DevicePeaks {
            model: "NVIDIA H200 SXM",
            tflops: HOPPER_SXM,
            memory_gb_s: 4800.0,
        },
    ),
    (
        &["H100", "NVL"],
        DevicePeaks {
            model: "NVIDIA H100 NVL",
            tflops: HOPPER_NVL,
            memory_gb_s: 3900.0,
        },
    ),
    (
        &["H100", "PCIe"],
        DevicePeaks {
            model: "NVIDIA H100 PCIe",
            tflops: H100_PCIE,
            memory_gb_s: 2000.0,
        },
    ),
    (
        &["H100"],
        DevicePeaks {
            model: "NVIDIA H100 SXM",
            tflops: HOPPER_SXM,
            memory_gb_s: 3350.0,
        },
    ),
    (
        &["A100", "80GB"],
        DevicePeaks {
            model: "NVIDIA A100 80GB",
            tflops: AMPERE_A100,
            memory_gb_s: 2039.0,
        },
    ),
    (
        &["A100"],
        DevicePeaks {
            model: "NVIDIA A100 40GB",
            tflops: AMPERE_A100,
            memory_gb_s: 1555.0,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_devices_have_peaks_and_unknown_ones_none() {
        let h200 = device_peaks("NVIDIA H200").unwrap();
        assert_eq!(h200.tflops_for("bfloat16"), Some(989.4));
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

    #[test]
    fn dtype_is_read_from_ids() {
        assert_eq!(dtype_from_id("matmul_bf16/4096"), Some("bf16"));
        assert_eq!(dtype_from_id("gemm/f32"), Some("fp32"));
        assert_eq!(dtype_from_id("softmax/4096"), None);
        assert_eq!(dtype_from_id("halfway"), None);
    }
}
