//! AOTInductor packages as the compiled variant, on the CPU: a tiny model exported
//! by the project's PyTorch (static and dynamic), loaded from Rust and compared with
//! the same model in tch over a stream of sequence lengths.
//!
//! Exporting takes tens of seconds per package, so the packages are cached under
//! `target/gpubench-test-packages/<hash of the script>/`.

mod eager_compiled_common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use eager_compiled_common::{run_on_cpu, serial, smoke_config};
use gpubench_core::__private::aoti::{AotiError, AotiPackage};
use gpubench_core::eager_compiled::{Compiled, EagerVsCompiled};
use gpubench_record::eager_compiled::{FlagKind, VariantKind};
use tch::nn::{self, Module};
use tch::{Device, Kind, Tensor};

/// The tiny model in PyTorch, its weights written as safetensors for tch to load,
/// and two packages: static at length 8, dynamic over the sequence length.
const EXPORT_SCRIPT: &str = r#"
import json, struct, sys
import torch

out = sys.argv[1]
torch.manual_seed(0)

class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(4, 16)
        self.fc2 = torch.nn.Linear(16, 4)

    def forward(self, x):
        return self.fc2(torch.nn.functional.gelu(self.fc1(x)))

def save_safetensors(tensors, path):
    header, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        data = t.detach().contiguous().to(torch.float32).numpy().tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)

model = Tiny().eval()
save_safetensors(model.state_dict(), f"{out}/tiny.safetensors")
x = torch.randn(1, 8, 4)
with torch.no_grad():
    ep = torch.export.export(model, (x,))
    torch._inductor.aoti_compile_and_package(
        ep, package_path=f"{out}/tiny_static.pt2",
        inductor_configs={"aot_inductor.metadata": {"gpubench.input_shapes": json.dumps([[1, 8, 4]])}})
    seq = torch.export.Dim("seq", min=2, max=4096)
    ep = torch.export.export(model, (x,), dynamic_shapes={"x": {1: seq}})
    torch._inductor.aoti_compile_and_package(
        ep, package_path=f"{out}/tiny_dynamic.pt2",
        inductor_configs={"aot_inductor.metadata": {"gpubench.input_shapes": json.dumps([[1, None, 4]])}})
"#;

fn fnv1a(text: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

fn python() -> PathBuf {
    if let Some(p) = std::env::var_os("GPUBENCH_PYTHON") {
        return PathBuf::from(p);
    }
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.venv/bin/python");
    assert!(
        venv.exists(),
        "no Python with torch: set GPUBENCH_PYTHON or `source scripts/env.sh` (it installs the project venv)"
    );
    venv
}

/// The directory holding the exported packages, exporting them on first use.
fn packages() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let target = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .parent()
            .expect("target/tmp has a parent")
            .to_path_buf();
        let dir = target
            .join("gpubench-test-packages")
            .join(format!("{:016x}", fnv1a(EXPORT_SCRIPT)));
        if dir.join("tiny_dynamic.pt2").is_file() {
            return dir;
        }
        // Export into a fresh directory and rename it into place, so a run that
        // was interrupted (or one racing this one) never leaves half a cache.
        std::fs::create_dir_all(dir.parent().unwrap()).unwrap();
        let work = tempfile::tempdir_in(dir.parent().unwrap()).unwrap();
        let script = work.path().join("export.py");
        std::fs::write(&script, EXPORT_SCRIPT).unwrap();
        let out = Command::new(python())
            .arg(&script)
            .arg(work.path())
            .output()
            .expect("python runs");
        assert!(
            out.status.success(),
            "failed to export the test packages: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let staged = work.keep();
        if std::fs::rename(&staged, &dir).is_err() {
            // Another run finished first; use its packages.
            let _ = std::fs::remove_dir_all(&staged);
        }
        assert!(dir.join("tiny_dynamic.pt2").is_file());
        dir
    })
}

/// The tiny model in tch with the exported weights.
struct Tiny {
    _vs: nn::VarStore,
    net: nn::Sequential,
}

impl Tiny {
    fn load(weights: &Path) -> Self {
        let mut vs = nn::VarStore::new(Device::Cpu);
        let root = vs.root();
        let net = nn::seq()
            .add(nn::linear(&root / "fc1", 4, 16, Default::default()))
            .add_fn(|x| x.gelu("none"))
            .add(nn::linear(&root / "fc2", 16, 4, Default::default()));
        vs.load(weights).expect("the exported weights load");
        vs.freeze();
        Tiny { _vs: vs, net }
    }
}

fn stream(lengths: &[i64]) -> Vec<Tensor> {
    tch::manual_seed(3);
    lengths
        .iter()
        .map(|&n| Tensor::randn([1, n, 4], (Kind::Float, Device::Cpu)))
        .collect()
}

const LENGTHS: [i64; 7] = [8, 13, 5, 8, 32, 13, 3];

#[test]
fn the_dynamic_package_agrees_with_eager_over_a_shape_stream() {
    let _serial = serial();
    let dir = packages();
    let tiny = Tiny::load(&dir.join("tiny.safetensors"));
    let outcome = run_on_cpu(
        EagerVsCompiled::new(|xs: &[Tensor]| tiny.net.forward(&xs[0]))
            .compiled(Compiled::aoti(dir.join("tiny_dynamic.pt2")).label("aoti dynamic"))
            .inputs(stream(&LENGTHS)),
        &smoke_config(),
    );
    let c = &outcome.record;
    assert_eq!(c.compiled.kind, VariantKind::AotiPackage);
    assert!(c.compiled.build_ns.unwrap() > 0.0, "load time is recorded");
    assert_eq!(
        c.compiled
            .metadata
            .get("AOTI_DEVICE_KEY")
            .map(String::as_str),
        Some("cpu")
    );
    assert_eq!(c.compiled.call_spec.len(), 2, "input and output specs");
    assert_eq!(
        c.compiled.exported_input_shapes,
        Some(vec![vec![Some(1), None, Some(4)]])
    );
    assert!(c.agrees(), "{:#?}", c.agreement);
    assert_eq!(c.agreement.len(), 5, "five distinct lengths");
    assert!(c.requests.iter().all(|r| r.compiled.is_some()));
    assert!(outcome.measurement.is_some());
}

#[test]
fn the_static_package_disagrees_at_every_other_length_with_the_mismatch_named() {
    let _serial = serial();
    let dir = packages();
    let tiny = Tiny::load(&dir.join("tiny.safetensors"));
    let outcome = run_on_cpu(
        EagerVsCompiled::new(|xs: &[Tensor]| tiny.net.forward(&xs[0]))
            .compiled(Compiled::aoti(dir.join("tiny_static.pt2")))
            .inputs(stream(&LENGTHS)),
        &smoke_config(),
    );
    let c = &outcome.record;
    assert_eq!(c.compiled.label, "tiny_static");
    for row in &c.agreement {
        if row.shape == "[1, 8, 4] f32" {
            assert!(row.agrees, "the exported length agrees: {row:#?}");
            continue;
        }
        assert!(!row.agrees, "{row:#?}");
        let msg = row.mismatch.as_deref().unwrap_or_default();
        assert!(msg.contains("exported for [1, 8, 4]"), "{msg}");
        let length: i64 = row.shape[4..]
            .split(',')
            .next()
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(msg.contains(&format!("[1, {length}, 4]")), "{msg}");
        if length > 8 {
            // Run anyway: the package silently returns its exported shape.
            assert!(
                msg.contains(&format!(
                    "compiled returned [1, 8, 4] where eager returned [1, {length}, 4]"
                )),
                "{msg}"
            );
        } else {
            assert!(msg.contains("not run"), "{msg}");
        }
    }
    assert_eq!(
        c.flag(FlagKind::OutputsDisagree),
        Some(
            &gpubench_record::eager_compiled::EagerCompiledFlag::OutputsDisagree {
                shapes: 4,
                of: 5
            }
        )
    );
}

#[test]
fn packages_that_cannot_run_here_are_errors_not_crashes() {
    let _serial = serial();
    let dir = packages();
    match AotiPackage::load(&dir.join("missing.pt2"), Device::Cpu) {
        Err(AotiError::Missing { path }) => assert!(path.ends_with("missing.pt2")),
        other => panic!("{other:?}"),
    }
    let garbage = dir.join("tiny.safetensors");
    match AotiPackage::load(&garbage, Device::Cpu) {
        Err(e @ AotiError::Load { .. }) => {
            assert!(
                e.to_string()
                    .starts_with("failed to load AOTInductor package"),
                "{e}"
            )
        }
        other => panic!("{other:?}"),
    }
    // A CPU package on a CUDA device is refused before any tensor reaches it.
    match AotiPackage::load(&dir.join("tiny_static.pt2"), Device::Cuda(0)) {
        Err(AotiError::WrongDevice { package, .. }) => assert_eq!(package, "cpu"),
        Err(AotiError::Load { .. }) => {} // no CUDA in this libtorch build at all
        other => panic!("{other:?}"),
    }
    // The comparison records such a package as a failed variant.
    let outcome = run_on_cpu(
        EagerVsCompiled::new(|xs: &[Tensor]| xs[0].shallow_clone())
            .compiled(Compiled::aoti(&garbage))
            .input(Tensor::zeros([1, 8, 4], (Kind::Float, Device::Cpu))),
        &smoke_config(),
    );
    assert!(outcome.failure().is_some());
    assert!(outcome.record.has_flag(FlagKind::CompiledFailed));
}
