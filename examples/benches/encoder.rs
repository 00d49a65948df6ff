//! Eager versus compiled for a small transformer encoder serving 13 requests whose
//! sequence length changes per request: speedup, agreement per length (also against
//! a float64 copy of the model), per-length cold calls, and whether compiling pays
//! off at this traffic.
//!
//! * `encoder_traced`: eager tch against a TorchScript trace of the same closure.
//! * `encoder_aoti/static`, `encoder_aoti/dynamic`: eager tch (with the weights the
//!   packages were exported with) against AOTInductor packages exported by
//!   `examples/python/export_aoti.py` at one sequence length (static) or any
//!   (dynamic). Packages are read from `$GPUBENCH_AOTI_DIR` (default
//!   `examples/packages/`); when there are none these benchmarks are left out and
//!   the bench says how to make them.

use std::path::PathBuf;

use gpubench_core::eager_compiled::{Compiled, EagerVsCompiled};
use gpubench_core::{gpu_bench, Bencher};
use gpubench_examples::encoder::{request_stream, Encoder, EncoderConfig};
use tch::nn::VarStore;
use tch::{Device, Tensor};

/// Sequence lengths of the 13 requests: 7 distinct, some repeated.
const LENGTHS: [i64; 13] = [64, 17, 128, 64, 33, 17, 256, 90, 128, 33, 200, 64, 17];

/// Where `export_aoti.py` writes by default.
fn packages_dir() -> PathBuf {
    std::env::var_os("GPUBENCH_AOTI_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("packages"))
}

fn device_name(device: Device) -> &'static str {
    if device.is_cuda() {
        "cuda"
    } else {
        "cpu"
    }
}

/// The model in float32 for eager and tracing, and a float64 copy as the reference.
fn models(device: Device, weights: Option<&PathBuf>) -> (VarStore, Encoder, VarStore, Encoder) {
    let config = EncoderConfig::for_device(device);
    tch::manual_seed(0);
    let mut vs = VarStore::new(device);
    let encoder = Encoder::new(&vs.root(), config);
    if let Some(path) = weights {
        vs.load(path).unwrap_or_else(|e| {
            panic!(
                "failed to load the encoder weights {}: {e} (re-run examples/python/export_aoti.py)",
                path.display()
            )
        });
    }
    vs.freeze();
    let mut vs64 = VarStore::new(device);
    let encoder64 = Encoder::new(&vs64.root(), config);
    vs64.copy(&vs).expect("same parameters");
    vs64.double();
    vs64.freeze();
    (vs, encoder, vs64, encoder64)
}

#[gpu_bench]
fn encoder_traced(b: &mut Bencher) {
    let device = b.device();
    let (_vs, encoder, _vs64, encoder64) = models(device, None);
    let stream = request_stream(&LENGTHS, encoder.config().d_model, device);
    b.eager_compiled(
        EagerVsCompiled::new(|xs: &[Tensor]| encoder.forward(&xs[0]))
            .compiled(Compiled::trace())
            .reference_f64(|xs: &[Tensor]| encoder64.forward(&xs[0]))
            .inputs(stream),
    );
}

#[gpu_bench(args = ["static", "dynamic"])]
fn encoder_aoti(b: &mut Bencher, shapes: &str) {
    let device = b.device();
    let dir = packages_dir();
    let name = device_name(device);
    let weights = dir.join(format!("encoder_{name}.safetensors"));
    let package = dir.join(format!("encoder_{name}_{shapes}.pt2"));
    assert!(
        package.is_file() && weights.is_file(),
        "failed to find {} and {}: run `$GPUBENCH_PYTHON examples/python/export_aoti.py` on a machine with {name}",
        package.display(),
        weights.display()
    );
    let (_vs, encoder, _vs64, encoder64) = models(device, Some(&weights));
    let stream = request_stream(&LENGTHS, encoder.config().d_model, device);
    b.eager_compiled(
        EagerVsCompiled::new(|xs: &[Tensor]| encoder.forward(&xs[0]))
            .compiled(Compiled::aoti(&package).label(&format!("aoti {shapes}")))
            .reference_f64(|xs: &[Tensor]| encoder64.forward(&xs[0]))
            .inputs(stream),
    );
}

/// The harness reads its own command line; to leave out the package benchmarks
/// when no package was ever exported, it is run again with `--skip encoder_aoti`.
fn main() {
    const RERUN: &str = "GPUBENCH_ENCODER_SKIPPED_AOTI";
    let dir = packages_dir();
    let any_package = ["cpu", "cuda"]
        .iter()
        .any(|d| dir.join(format!("encoder_{d}_dynamic.pt2")).is_file());
    if any_package || std::env::var_os(RERUN).is_some() {
        return gpubench_core::main();
    }
    eprintln!(
        "note: no AOTInductor packages in {}: the encoder_aoti benchmarks are left out. Make them with\n    \
         $GPUBENCH_PYTHON examples/python/export_aoti.py   (scripts/env.sh sets GPUBENCH_PYTHON; about a minute per package)\n\
         or point GPUBENCH_AOTI_DIR at a directory holding them.",
        dir.display()
    );
    let exe = std::env::current_exe().expect("the bench knows its own path");
    let status = std::process::Command::new(exe)
        .args(std::env::args_os().skip(1))
        .args(["--skip", "encoder_aoti"])
        .env(RERUN, "1")
        .status()
        .expect("the bench can run itself");
    std::process::exit(status.code().unwrap_or(101));
}
