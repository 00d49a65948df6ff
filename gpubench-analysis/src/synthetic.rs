//! Synthetic GPU-like timing samples and records, for calibrating and testing the
//! statistics without a GPU.
//!
//! The model: a steady-state time with log-normal noise (a relative standard deviation
//! of about 1%), plus a small fraction of samples slowed by 1.3–2× (a clock dip, a
//! context switch, another process on the device); and, per process, a shift of the
//! whole process ([`ProcessShift`]): none, a log-normal one (device-bound work varies
//! by under 1% from process to process), or two modes (a launch-bound benchmark lands
//! at one of two host dispatch speeds per process). It is what the verdict rule of
//! [`crate::compare`] is calibrated against.

use rand::Rng;

use gpubench_record::energy::{EnergyMeasurement, EnergyWindow};
use gpubench_record::id::split_id;
use gpubench_record::kernels::{table, ActivityKind, Counters, KernelMeasurement, KernelMethod};
use gpubench_record::measurement::ProcessPolicy;
use gpubench_record::measurement::{Flag, Measurement, MeasurementConfig, Sample, Throughput};
use gpubench_record::record::{Fingerprint, ProcessRecord, RawRecord, RECORD_FORMAT_VERSION};

/// How a whole process's times move against the model's centre.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ProcessShift {
    /// Every process draws from the same distribution.
    None,
    /// Each process's times are scaled by `exp(N(0, sigma))`.
    LogNormal {
        /// Standard deviation of the log of the scale (≈ relative spread).
        sigma: f64,
    },
    /// Each process lands in the slow mode with probability `slow_share` (times
    /// `slow_factor` × the fast mode's), on top of a log-normal shift of `sigma`.
    Modes {
        /// How much slower the slow mode is (1.7: 70%).
        slow_factor: f64,
        /// Probability that a process lands in the slow mode.
        slow_share: f64,
        /// Log-normal shift within a mode.
        sigma: f64,
    },
}

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
    /// How each process shifts as a whole.
    pub process_shift: ProcessShift,
}

impl Default for GpuLikeSamples {
    /// 1 ms per iteration, 1% noise, 2% of samples 1.3–2× slower, no shift between
    /// processes.
    fn default() -> Self {
        GpuLikeSamples {
            base_ns: 1e6,
            rel_noise: 0.01,
            outlier_fraction: 0.02,
            outlier_slowdown: (1.3, 2.0),
            process_shift: ProcessShift::None,
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

    /// `n` per-iteration times, ns, of one process with no shift.
    pub fn draw<R: Rng>(&self, n: usize, rng: &mut R) -> Vec<f64> {
        (0..n).map(|_| self.draw_one(rng)).collect()
    }

    /// The model with [`ProcessShift`] `shift`.
    pub fn with_shift(&self, shift: ProcessShift) -> Self {
        GpuLikeSamples {
            process_shift: shift,
            ..*self
        }
    }

    /// One process's scale factor under the model's [`ProcessShift`].
    pub fn process_scale<R: Rng>(&self, rng: &mut R) -> f64 {
        match self.process_shift {
            ProcessShift::None => 1.0,
            ProcessShift::LogNormal { sigma } => (sigma * standard_normal(rng)).exp(),
            ProcessShift::Modes {
                slow_factor,
                slow_share,
                sigma,
            } => {
                let mode = if rng.gen::<f64>() < slow_share {
                    slow_factor
                } else {
                    1.0
                };
                mode * (sigma * standard_normal(rng)).exp()
            }
        }
    }

    /// `processes` groups of `n` per-iteration times, ns: each group one process,
    /// shifted as a whole by the model's [`ProcessShift`].
    pub fn draw_processes<R: Rng>(&self, processes: usize, n: usize, rng: &mut R) -> Vec<Vec<f64>> {
        (0..processes)
            .map(|_| {
                let scale = self.process_scale(rng);
                (0..n).map(|_| scale * self.draw_one(rng)).collect()
            })
            .collect()
    }

    /// A passed record of one process of `n` samples of 10 iterations each on a CUDA
    /// device named `device_name`: device times from the model, wall time 2% above
    /// device time, host dispatch at 30% of it, flagged device-bound.
    pub fn record<R: Rng>(&self, id: &str, device_name: &str, n: usize, rng: &mut R) -> RawRecord {
        self.record_processes(id, device_name, 1, n, rng)
    }

    /// A passed record of `processes` processes of `n` samples each, as
    /// [`GpuLikeSamples::record`] makes one, each process shifted by the model's
    /// [`ProcessShift`].
    pub fn record_processes<R: Rng>(
        &self,
        id: &str,
        device_name: &str,
        processes: usize,
        n: usize,
        rng: &mut R,
    ) -> RawRecord {
        let iters = 10u64;
        let measured = (0..processes)
            .map(|p| {
                let scale = self.process_scale(rng);
                let samples = (0..n)
                    .map(|_| {
                        let device = scale * self.draw_one(rng) * iters as f64;
                        let wall = device * 1.02;
                        Sample {
                            iters,
                            wall_ns: wall,
                            host_ns: 0.3 * wall,
                            device_ns: Some(device),
                            clock: None,
                        }
                    })
                    .collect();
                ProcessRecord {
                    process: p as u32 + 1,
                    measurement: Some(Measurement {
                        sync_cost_ns: 10_000.0,
                        throughput: Some(Throughput::Flops(1e9)),
                        flags: vec![Flag::DeviceBound],
                        device_timer: true,
                        ..Measurement::of_samples(samples)
                    }),
                    ..ProcessRecord::first(format!("2026-01-01T00:00:{:02}Z", p % 60))
                }
            })
            .collect();
        let mut fingerprint = Fingerprint::unknown("cuda:0", "2026-01-01T00:00:00Z".into());
        fingerprint.device.name = device_name.to_string();
        let (name, arg) = split_id(id);
        RawRecord {
            format_version: RECORD_FORMAT_VERSION,
            id: id.to_string(),
            name: name.to_string(),
            arg: arg.map(str::to_string),
            fingerprint,
            config: MeasurementConfig {
                processes: ProcessPolicy::fixed(processes as u32),
                ..MeasurementConfig::standard()
            },
            processes: measured,
        }
    }
}

/// What the GPU does per call in a synthetic record: kernel time from a model, the
/// kernels of one call and their counts. Attach it with [`SyntheticKernels::attach`].
#[derive(Debug, Clone, PartialEq)]
pub struct SyntheticKernels {
    /// Kernel time per call, ns, with its own noise and process shift.
    pub model: GpuLikeSamples,
    /// The kernels of one call (their times are scaled to the model's centre).
    pub kernels: Vec<(String, f64)>,
    /// Host–device syncs per call.
    pub syncs: u64,
    /// Allocations per call.
    pub allocations: u64,
}

impl SyntheticKernels {
    /// One kernel of `ns` per call, no syncs, one allocation; kernel time varies by
    /// 0.3% within a process and 0.5% between processes (the H200's CUDA-graph replay
    /// varied by 1–3%).
    pub fn one(name: &str, ns: f64) -> Self {
        SyntheticKernels {
            model: GpuLikeSamples {
                base_ns: ns,
                rel_noise: 0.003,
                outlier_fraction: 0.0,
                ..GpuLikeSamples::default()
            }
            .with_shift(ProcessShift::LogNormal { sigma: 0.005 }),
            kernels: vec![(name.to_string(), ns)],
            syncs: 0,
            allocations: 1,
        }
    }

    /// The same work with its kernel time times `factor`.
    pub fn scaled(&self, factor: f64) -> Self {
        SyntheticKernels {
            model: self.model.scaled(factor),
            kernels: self
                .kernels
                .iter()
                .map(|(n, ns)| (n.clone(), ns * factor))
                .collect(),
            ..self.clone()
        }
    }

    /// The same work plus one kernel `name` of `ns` per call.
    pub fn with_kernel(&self, name: &str, ns: f64) -> Self {
        let mut k = self.clone();
        k.kernels.push((name.to_string(), ns));
        k.model = k.model.scaled((self.total() + ns) / self.total());
        k
    }

    fn total(&self) -> f64 {
        self.kernels.iter().map(|(_, ns)| ns).sum()
    }

    /// Gives every passed process of `record` a CUDA-graph kernel measurement of 10
    /// samples from the model; the first process also gets the kernel table and the
    /// counters, as the harness writes them.
    pub fn attach<R: Rng>(&self, record: &mut RawRecord, rng: &mut R) {
        let calls = 100u64;
        for (i, process) in record.processes.iter_mut().enumerate() {
            let Some(m) = process.measurement.as_mut() else {
                continue;
            };
            let scale = self.model.process_scale(rng);
            let first = i == 0;
            m.kernel = Some(KernelMeasurement {
                method: KernelMethod::GraphReplay,
                not_capturable: None,
                samples_ns: (0..10).map(|_| scale * self.model.draw_one(rng)).collect(),
                kernels: if first {
                    let rows: Vec<(String, ActivityKind, u64, f64)> = self
                        .kernels
                        .iter()
                        .map(|(n, ns)| (n.clone(), ActivityKind::Kernel, calls, ns * calls as f64))
                        .collect();
                    table(&rows, calls)
                } else {
                    Vec::new()
                },
                counters: first.then_some(Counters {
                    calls,
                    kernels: self.kernels.len() as u64 * calls,
                    memcpys: 0,
                    memsets: 0,
                    syncs: self.syncs * calls,
                    allocations: Some(self.allocations * calls),
                    allocated_bytes: Some(self.allocations * calls * 4096),
                }),
                l2: None,
                clock: None,
            });
        }
    }
}

/// A standard normal draw (Box–Muller).
/// Energy per call as the harness records it: each process's windows around a
/// process level drawn log-normally about `joules`, each window log-normally about
/// its process's level. The H200's 8192² bf16 matmul ([`SyntheticEnergy::h200_matmul`]):
/// 1.17 J, processes 0.6% apart, windows 3%.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SyntheticEnergy {
    /// The centre of energy per call, J.
    pub joules: f64,
    /// Standard deviation of the log of a process's level.
    pub process_sigma: f64,
    /// Standard deviation of the log of a window around its process's level.
    pub window_sigma: f64,
    /// Windows per process.
    pub windows: usize,
}

impl SyntheticEnergy {
    /// The H200's 8192² bf16 matmul, three 1 s windows a process (the harness's).
    pub fn h200_matmul() -> Self {
        SyntheticEnergy {
            joules: 1.17,
            process_sigma: 0.006,
            window_sigma: 0.03,
            windows: 3,
        }
    }

    /// The same with `factor` times the energy per call.
    pub fn scaled(&self, factor: f64) -> Self {
        SyntheticEnergy {
            joules: self.joules * factor,
            ..*self
        }
    }

    /// One process's energy per call of each window, J.
    pub fn process<R: Rng>(&self, rng: &mut R) -> Vec<f64> {
        let level = self.joules * (self.process_sigma * standard_normal(rng)).exp();
        (0..self.windows)
            .map(|_| level * (self.window_sigma * standard_normal(rng)).exp())
            .collect()
    }

    /// Gives every measured process of `record` its energy windows, as a 1 s window
    /// of 600 back-to-back calls counted over 0.9 s of counter steps would read (the
    /// matmul's 700 W).
    pub fn plant<R: Rng>(&self, record: &mut RawRecord, rng: &mut R) {
        for m in record
            .processes
            .iter_mut()
            .filter_map(|p| p.measurement.as_mut())
        {
            let (calls, synced_s, counted_s) = (600, 1.0, 0.9);
            m.energy_unavailable = None;
            m.energy = Some(EnergyMeasurement {
                windows: self
                    .process(rng)
                    .into_iter()
                    .map(|j| EnergyWindow {
                        calls,
                        synced_s,
                        counted_s,
                        steps: 9,
                        energy_j: j * calls as f64 * counted_s / synced_s,
                    })
                    .collect(),
                idle_w: Some(83.0),
                idle_unavailable: None,
            });
        }
    }
}

fn standard_normal<R: Rng>(rng: &mut R) -> f64 {
    // 1 - u lies in (0, 1], so the logarithm is finite.
    let u1 = 1.0 - rng.gen::<f64>();
    let u2 = rng.gen::<f64>();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// Gives every sample of `record` the SM clock `sm_mhz` (read after it ran, not
/// throttled nor power-capped) and every process the work per call `throughput`.
pub fn set_clock_and_work(record: &mut RawRecord, sm_mhz: u32, throughput: Option<Throughput>) {
    for m in record
        .processes
        .iter_mut()
        .filter_map(|x| x.measurement.as_mut())
    {
        m.throughput = throughput;
        for s in &mut m.samples {
            s.clock = Some(gpubench_record::measurement::SampleClock {
                sm_mhz,
                temperature_c: None,
                throttled: false,
                power_capped: false,
                power_w: None,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::processes::ProcessStats;
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
        let m = r.first_measurement().unwrap();
        assert_eq!(m.samples.len(), 40);
        assert!((median(&m.primary_per_iter()) / 1e6 - 1.0).abs() < 0.01);
    }

    #[test]
    fn processes_shift_as_a_whole() {
        let mut rng = Pcg64Mcg::seed_from_u64(3);
        let model = GpuLikeSamples::default().with_shift(ProcessShift::Modes {
            slow_factor: 1.7,
            slow_share: 0.5,
            sigma: 0.0,
        });
        let groups = model.draw_processes(40, 31, &mut rng);
        let p = ProcessStats::from_groups(&groups);
        let [fast, slow] = p.modes.expect("two modes");
        assert!((slow.centre / fast.centre - 1.7).abs() < 0.02, "{p:?}");
        assert!((10..=30).contains(&fast.processes), "{p:?}");
        let calm = GpuLikeSamples::default().with_shift(ProcessShift::LogNormal { sigma: 0.0075 });
        let p = ProcessStats::from_groups(&calm.draw_processes(200, 31, &mut rng));
        assert!((p.between.unwrap() - 0.0075).abs() < 0.0015, "{p:?}");
        let r = calm.record_processes("mm", "GPU", 3, 10, &mut rng);
        assert_eq!(r.processes.len(), 3);
        assert_eq!(r.config.processes, ProcessPolicy::fixed(3));
        assert_eq!(r.primary_groups().len(), 3);
    }
}
