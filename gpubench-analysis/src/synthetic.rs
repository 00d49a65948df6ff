//! Synthetic GPU-like timing samples and records, for calibrating and testing the
//! statistics without a GPU.
//!
//! The model: a steady-state time with log-normal noise (a relative standard deviation
//! of about 1%), plus a small fraction of samples slowed by 1.3–2× (a clock dip, a
//! context switch, another process on the device). It is what the verdict rule of
//! [`crate::compare`] is calibrated against.

use rand::Rng;

use crate::record::{
    Fingerprint, Measurement, MeasurementConfig, RawRecord, Sample, StopReason, Throughput,
    RECORD_FORMAT_VERSION,
};

/// A generator of per-iteration times, ns.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GpuLikeSamples {
    /// Median of the undisturbed samples, ns.
    pub base_ns: f64,
    /// Standard deviation of the log of a sample: about its relative noise.
    pub rel_noise: f64,
    /// Fraction of samples that are slowed down.
    pub outlier_fraction: f64,
    /// Slowed samples are multiplied by a factor drawn uniformly from this range.
    pub outlier_slowdown: (f64, f64),
}

impl Default for GpuLikeSamples {
    /// 1 ms per iteration, 1% noise, 2% of samples 1.3–2× slower.
    fn default() -> Self {
        GpuLikeSamples {
            base_ns: 1e6,
            rel_noise: 0.01,
            outlier_fraction: 0.02,
            outlier_slowdown: (1.3, 2.0),
        }
    }
}

impl GpuLikeSamples {
    /// The same model with every time multiplied by `factor` (1.05: a 5% slowdown).
    pub fn scaled(&self, factor: f64) -> Self {
        GpuLikeSamples {
            base_ns: self.base_ns * factor,
            ..*self
        }
    }

    /// One per-iteration time, ns.
    pub fn draw_one<R: Rng>(&self, rng: &mut R) -> f64 {
        let mut x = self.base_ns * (self.rel_noise * standard_normal(rng)).exp();
        if rng.gen::<f64>() < self.outlier_fraction {
            let (lo, hi) = self.outlier_slowdown;
            x *= lo + (hi - lo) * rng.gen::<f64>();
        }
        x
    }

    /// `n` per-iteration times, ns.
    pub fn draw<R: Rng>(&self, n: usize, rng: &mut R) -> Vec<f64> {
        (0..n).map(|_| self.draw_one(rng)).collect()
    }

    /// A passed record of `n` samples of 10 iterations each on a CUDA device named
    /// `device_name`: device times from the model, wall time 2% above device time,
    /// host dispatch at 30% of it.
    pub fn record<R: Rng>(&self, id: &str, device_name: &str, n: usize, rng: &mut R) -> RawRecord {
        let iters = 10u64;
        let samples = (0..n)
            .map(|_| {
                let device = self.draw_one(rng) * iters as f64;
                let wall = device * 1.02;
                Sample {
                    iters,
                    wall_ns: wall,
                    host_ns: 0.3 * wall,
                    device_ns: Some(device),
                }
            })
            .collect();
        let mut fingerprint = Fingerprint::unknown("cuda:0", "2026-01-01T00:00:00Z".into());
        fingerprint.device.name = device_name.to_string();
        let (name, arg) = match id.split_once('/') {
            Some((n, a)) => (n.to_string(), Some(a.to_string())),
            None => (id.to_string(), None),
        };
        RawRecord {
            format_version: RECORD_FORMAT_VERSION,
            id: id.to_string(),
            name,
            arg,
            fingerprint,
            config: MeasurementConfig::standard(),
            measurement: Some(Measurement {
                sync_cost_ns: 10_000.0,
                cold: Vec::new(),
                warmup: Vec::new(),
                samples,
                naive: Vec::new(),
                throughput: Some(Throughput::Flops(1e9)),
                memory: None,
                stop_reason: StopReason::Converged,
                flags: Vec::new(),
                device_timer: true,
            }),
            failure: None,
            comparison: None,
        }
    }
}

/// A standard normal draw (Box–Muller).
fn standard_normal<R: Rng>(rng: &mut R) -> f64 {
    // 1 - u lies in (0, 1], so the logarithm is finite.
    let u1 = 1.0 - rng.gen::<f64>();
    let u2 = rng.gen::<f64>();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::{median, rel_noise};
    use rand::SeedableRng;
    use rand_pcg::Pcg64Mcg;

    #[test]
    fn samples_have_the_requested_centre_noise_and_outliers() {
        let model = GpuLikeSamples::default();
        let mut rng = Pcg64Mcg::seed_from_u64(1);
        let xs = model.draw(20_000, &mut rng);
        assert!((median(&xs) / model.base_ns - 1.0).abs() < 0.001);
        assert!((rel_noise(&xs) - 0.01).abs() < 0.001, "{}", rel_noise(&xs));
        let slow = xs.iter().filter(|&&x| x > 1.2 * model.base_ns).count();
        let frac = slow as f64 / xs.len() as f64;
        assert!((0.015..0.025).contains(&frac), "{frac}");
    }

    #[test]
    fn records_carry_the_model_in_device_time() {
        let mut rng = Pcg64Mcg::seed_from_u64(2);
        let r = GpuLikeSamples::default().record("mm/64", "Synthetic GPU", 40, &mut rng);
        assert_eq!((r.name.as_str(), r.arg.as_deref()), ("mm", Some("64")));
        let m = r.measurement.unwrap();
        assert_eq!(m.samples.len(), 40);
        assert!((median(&m.primary_per_iter()) / 1e6 - 1.0).abs() < 0.01);
    }
}
