//! The `Bencher` a benchmark function receives: it declares what to time and hands
//! it to the measurement engine.

use std::hint::black_box;
use std::rc::Rc;
use std::time::Instant;

use gpubench_record::measurement::{Measurement, MeasurementConfig, Throughput};

use crate::device::DeviceBackend;
use crate::engine::{Engine, EngineOptions, Workload};
use crate::shapes::InputShape;
use crate::telemetry::Telemetry;

/// Passed to every `#[gpu_bench]` function; call one of the `iter*` methods once.
///
/// ```no_run
/// use gpubench_core::{gpu_bench, Bencher, Throughput};
/// use tch::{Kind, Tensor};
///
/// // One routine, timed back to back.
/// #[gpu_bench]
/// fn softmax(b: &mut Bencher) {
///     let x = Tensor::randn([64, 4096], (Kind::Float, b.device()));
///     b.throughput(Throughput::Elements(64.0 * 4096.0));
///     b.iter(|| x.softmax(-1, Kind::Float));
/// }
///
/// // Fresh inputs per call, made outside the timing.
/// #[gpu_bench]
/// fn sort_fresh(b: &mut Bencher) {
///     let device = b.device();
///     b.iter_with_setup(
///         || Tensor::randn([1 << 20], (Kind::Float, device)),
///         |x| x.sort(0, false),
///     );
/// }
///
/// // A stream of shapes: the first call at each new shape is a cold call.
/// #[gpu_bench]
/// fn layer_norm_stream(b: &mut Bencher) {
///     let inputs: Vec<Tensor> = [17, 64, 17, 256]
///         .iter()
///         .map(|&n| Tensor::randn([n, 512], (Kind::Float, b.device())))
///         .collect();
///     b.naive_loops(&[20, 100]);
///     b.iter_inputs(inputs, |x| x.layer_norm([512], None::<Tensor>, None::<Tensor>, 1e-5, false));
/// }
///
/// gpubench_core::main!();
/// ```
pub struct Bencher {
    backend: Rc<dyn DeviceBackend>,
    config: MeasurementConfig,
    options: EngineOptions,
    id: String,
    telemetry: Option<Telemetry>,
    pub(crate) measurement: Option<Measurement>,
    pub(crate) eager_compiled: Option<gpubench_record::eager_compiled::EagerCompiled>,
    /// In a paired process, where `b.iter…` hands the routine to the driver.
    pub(crate) paired: Option<crate::paired::Hook>,
    /// Why a routine handed to the driver of a paired process has no measurement.
    pub(crate) not_measured: Option<String>,
    /// In a paired process, the account of this side's own memory, begun when the
    /// side opened.
    pub(crate) own_memory: Option<Rc<crate::engine::OwnMemory>>,
}

impl Bencher {
    /// A bencher for benchmark `id` measuring on `backend`.
    #[doc(hidden)]
    pub fn new(id: &str, backend: Rc<dyn DeviceBackend>, config: MeasurementConfig) -> Self {
        Bencher {
            backend,
            config,
            options: EngineOptions::default(),
            id: id.to_string(),
            telemetry: None,
            measurement: None,
            eager_compiled: None,
            paired: None,
            not_measured: None,
            own_memory: None,
        }
    }

    /// The device the benchmark should put its tensors on (`--device`).
    pub fn device(&self) -> tch::Device {
        self.backend.tch_device()
    }

    /// The benchmark's id, e.g. `matmul/4096`.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Whether this run measures (`--bench`) or only smoke-tests one call.
    pub fn is_measuring(&self) -> bool {
        self.config.mode == gpubench_record::measurement::RunMode::Bench
    }

    /// Declares the work one iteration does, so rates (TFLOP/s, GB/s) are reported.
    pub fn throughput(&mut self, throughput: Throughput) -> &mut Self {
        self.options.throughput = Some(throughput);
        self
    }

    /// Whether to record the diagnostics one process per benchmark is enough for (the
    /// naive loops and the hidden-sync probe); on by default.
    pub(crate) fn diagnostics(&mut self, on: bool) -> &mut Self {
        self.options.diagnostics = on;
        self
    }

    /// Whether to take the allocator's state at the peak of a traced stretch of calls
    /// after the samples (`--memory-peak-snapshot`).
    pub(crate) fn memory_peak(&mut self, on: bool) -> &mut Self {
        self.options.memory_peak = on;
        self
    }

    /// Reads the GPU's clock after every sample through `telemetry`.
    pub(crate) fn telemetry(&mut self, telemetry: Option<Telemetry>) -> &mut Self {
        self.telemetry = telemetry;
        self
    }

    /// Iteration counts of the "what a naive timer would have said" loops
    /// (default: one loop of 20 when it costs at most a second).
    pub fn naive_loops(&mut self, counts: &[u64]) -> &mut Self {
        self.options.naive_loops = Some(counts.to_vec());
        self
    }

    /// Times `routine`. Its return value (tensors included) is kept alive until
    /// after the closing device sync, and is never optimised away.
    pub fn iter<O, R>(&mut self, routine: R)
    where
        R: FnMut() -> O,
    {
        let mut workload = Repeat {
            routine,
            last: None,
        };
        self.run(&mut workload);
    }

    /// Times `routine` on fresh inputs made by `setup`; `setup` is never timed.
    pub fn iter_with_setup<I, O, S, R>(&mut self, setup: S, routine: R)
    where
        S: FnMut() -> I,
        R: FnMut(I) -> O,
    {
        let mut workload = WithSetup {
            setup,
            routine,
            inputs: Vec::new(),
            last: None,
        };
        self.run(&mut workload);
    }

    /// Times `routine` over a stream of `inputs` taken in turn; the first call at
    /// each new input shape is timed on its own as a cold call.
    pub fn iter_inputs<I, O, R>(&mut self, inputs: Vec<I>, routine: R)
    where
        I: InputShape,
        R: FnMut(&I) -> O,
    {
        assert!(
            !inputs.is_empty(),
            "benchmark {}: iter_inputs needs at least one input",
            self.id
        );
        let mut workload = Stream {
            inputs,
            routine,
            cursor: 0,
            last: None,
        };
        self.run(&mut workload);
    }

    /// Compares an eager and a compiled variant of the same model for speed,
    /// numerical agreement and per-shape cold cost (see [`crate::eager_compiled`]). The
    /// compiled variant's steady state becomes this benchmark's measurement and the
    /// side-by-side result its record's `eager_compiled`. A compiled variant that
    /// cannot be built or run fails the benchmark, with the side-by-side result still
    /// recorded.
    pub fn eager_compiled(
        &mut self,
        variants: crate::eager_compiled::EagerVsCompiled<'_>,
    ) -> &gpubench_record::eager_compiled::EagerCompiled {
        assert!(
            self.measurement.is_none(),
            "benchmark {} called b.iter or b.eager_compiled twice: a benchmark measures one routine",
            self.id
        );
        let outcome = variants
            .run(self.backend.as_ref(), &self.config, &self.options)
            .unwrap_or_else(|e| panic!("benchmark {}: {e}", self.id));
        let failure = outcome.failure();
        self.measurement = outcome.measurement;
        let record = self.eager_compiled.insert(outcome.record);
        if let Some(failure) = failure {
            panic!("{failure}");
        }
        record
    }

    /// The measurement, once an `iter*` method has run.
    pub fn measurement(&self) -> Option<&Measurement> {
        self.measurement.as_ref()
    }

    /// The measurement engine's settings.
    pub fn config(&self) -> &MeasurementConfig {
        &self.config
    }

    fn run(&mut self, workload: &mut dyn Workload) {
        assert!(
            self.measurement.is_none(),
            "benchmark {} called b.iter twice: a benchmark measures one routine",
            self.id
        );
        let engine = Engine::new(self.backend.as_ref(), &self.config)
            .with_telemetry(self.telemetry.as_ref())
            .with_own_memory(self.own_memory.as_deref());
        match self.paired.take() {
            // Smoke runs make one call: nothing to alternate.
            Some(hook) if self.is_measuring() => {
                match crate::paired::measure(&engine, workload, &self.options, hook) {
                    Ok(m) => self.measurement = Some(m),
                    Err(why) => self.not_measured = Some(why),
                }
            }
            _ => self.measurement = Some(engine.measure(workload, &self.options)),
        }
    }
}

struct Repeat<R, O> {
    routine: R,
    last: Option<O>,
}

impl<R: FnMut() -> O, O> Workload for Repeat<R, O> {
    fn run(&mut self, iters: u64) -> Instant {
        for _ in 0..iters {
            self.last = Some(black_box((self.routine)()));
        }
        Instant::now()
    }
    fn run_discarding(&mut self, iters: u64) -> Instant {
        self.last = None;
        for _ in 0..iters {
            drop(black_box((self.routine)()));
        }
        Instant::now()
    }
    fn release(&mut self) {
        self.last = None;
    }
}

struct WithSetup<S, R, I, O> {
    setup: S,
    routine: R,
    inputs: Vec<I>,
    last: Option<O>,
}

impl<S: FnMut() -> I, R: FnMut(I) -> O, I, O> Workload for WithSetup<S, R, I, O> {
    fn makes_inputs(&self) -> bool {
        true
    }
    fn prepare(&mut self, iters: u64) {
        self.inputs.clear();
        self.inputs.extend((0..iters).map(|_| (self.setup)()));
    }
    fn run(&mut self, _iters: u64) -> Instant {
        for input in self.inputs.drain(..) {
            self.last = Some(black_box((self.routine)(black_box(input))));
        }
        Instant::now()
    }
    fn run_discarding(&mut self, _iters: u64) -> Instant {
        self.last = None;
        for input in self.inputs.drain(..) {
            drop(black_box((self.routine)(black_box(input))));
        }
        Instant::now()
    }
    fn release(&mut self) {
        self.last = None;
    }
}

struct Stream<I, R, O> {
    inputs: Vec<I>,
    routine: R,
    cursor: usize,
    last: Option<O>,
}

impl<I, R, O> Stream<I, R, O>
where
    I: InputShape,
{
    /// Index of the first input of each distinct shape, in stream order.
    fn first_of_each_shape(&self) -> Vec<(usize, String)> {
        let mut seen = std::collections::HashSet::new();
        self.inputs
            .iter()
            .enumerate()
            .filter_map(|(i, x)| {
                let key = x.shape_key();
                seen.insert(key.clone()).then_some((i, key))
            })
            .collect()
    }
}

impl<I: InputShape, R: FnMut(&I) -> O, O> Workload for Stream<I, R, O> {
    fn cycle(&self) -> u64 {
        self.inputs.len() as u64
    }
    fn run(&mut self, iters: u64) -> Instant {
        for _ in 0..iters {
            let input = &self.inputs[self.cursor];
            self.last = Some(black_box((self.routine)(input)));
            self.cursor = (self.cursor + 1) % self.inputs.len();
        }
        Instant::now()
    }
    fn run_discarding(&mut self, iters: u64) -> Instant {
        self.last = None;
        for _ in 0..iters {
            drop(black_box((self.routine)(&self.inputs[self.cursor])));
            self.cursor = (self.cursor + 1) % self.inputs.len();
        }
        Instant::now()
    }
    fn release(&mut self) {
        self.last = None;
    }
    fn cold_labels(&self) -> Vec<String> {
        self.first_of_each_shape()
            .into_iter()
            .enumerate()
            .map(|(n, (_, key))| {
                if n == 0 {
                    format!("first call, shape {key}")
                } else {
                    format!("new shape {key}")
                }
            })
            .collect()
    }
    fn run_cold(&mut self, which: usize) -> Instant {
        let (index, _) = self.first_of_each_shape()[which].clone();
        self.last = Some(black_box((self.routine)(&self.inputs[index])));
        Instant::now()
    }
}
