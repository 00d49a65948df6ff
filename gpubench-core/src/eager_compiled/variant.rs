//! The two sides of a comparison behind one interface: the eager closure, and a
//! compiled variant built from a trace, a TorchScript file, a closure or an
//! AOTInductor package.

use std::path::Path;
use std::time::Instant;

use gpubench_record::eager_compiled::{VariantInfo, VariantKind};
use gpubench_record::failure::cap_message;
use tch::jit::IValue;
use tch::{CModule, Device, Tensor};

use super::{Compiled, CompiledSource, ModelFn, Request};
use crate::aoti::AotiPackage;
use crate::device::DeviceBackend;

/// What the comparison learns about an input before giving it to a variant.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum InputCheck {
    /// Nothing to say.
    Fine,
    /// The input differs from what the variant was exported for: `note` names it,
    /// and `run` says whether it is still safe to call the variant.
    Mismatch { note: String, run: bool },
}

/// One side of the comparison.
pub(crate) trait Variant {
    /// Calls the model; an error is the variant's own failure (never eager's).
    fn call(&mut self, inputs: &[Tensor]) -> Result<Vec<Tensor>, String>;

    /// Checks `inputs` against what the variant declares it accepts.
    fn check_input(&self, _inputs: &[Tensor]) -> InputCheck {
        InputCheck::Fine
    }
}

/// A Rust closure: the eager model, or a closure labelled as compiled.
pub(crate) struct ClosureVariant<'a> {
    f: ModelFn<'a>,
}

impl<'a> ClosureVariant<'a> {
    pub(crate) fn new(f: ModelFn<'a>) -> Self {
        ClosureVariant { f }
    }
}

impl Variant for ClosureVariant<'_> {
    fn call(&mut self, inputs: &[Tensor]) -> Result<Vec<Tensor>, String> {
        Ok((self.f)(inputs))
    }
}

/// A TorchScript module, traced here or loaded from a file.
struct TorchScriptVariant {
    module: CModule,
    /// Outputs of the traced function, when known: one tensor takes the cheaper
    /// `forward_ts` path.
    single_output: bool,
}

impl Variant for TorchScriptVariant {
    fn call(&mut self, inputs: &[Tensor]) -> Result<Vec<Tensor>, String> {
        if self.single_output {
            return self
                .module
                .forward_ts(inputs)
                .map(|t| vec![t])
                .map_err(|e| cap_message(&e.to_string()));
        }
        let args: Vec<IValue> = inputs
            .iter()
            .map(|t| IValue::Tensor(t.shallow_clone()))
            .collect();
        let out = self
            .module
            .forward_is(&args)
            .map_err(|e| cap_message(&e.to_string()))?;
        ivalue_tensors(out)
    }
}

fn ivalue_tensors(value: IValue) -> Result<Vec<Tensor>, String> {
    match value {
        IValue::Tensor(t) => Ok(vec![t]),
        IValue::TensorList(ts) => Ok(ts),
        IValue::Tuple(items) | IValue::GenericList(items) => {
            let mut out = Vec::new();
            for item in items {
                out.extend(ivalue_tensors(item)?);
            }
            Ok(out)
        }
        other => Err(format!(
            "the module returned {other:?}, not tensors; compare a module that returns tensors"
        )),
    }
}

/// An AOTInductor package, with the input shapes it declares.
struct AotiVariant {
    package: AotiPackage,
    exported: Option<Vec<Vec<Option<i64>>>>,
}

impl Variant for AotiVariant {
    fn call(&mut self, inputs: &[Tensor]) -> Result<Vec<Tensor>, String> {
        self.package.run(inputs).map_err(|e| e.to_string())
    }

    fn check_input(&self, inputs: &[Tensor]) -> InputCheck {
        let Some(exported) = &self.exported else {
            return InputCheck::Fine;
        };
        input_mismatch(exported, inputs)
    }
}

/// Names the first input whose shape differs from the declared one (`None` dims are
/// dynamic). A static package reads its exported size from whatever it is given,
/// so an input with fewer elements than exported would be read past its end: such
/// calls are not made.
pub(crate) fn input_mismatch(exported: &[Vec<Option<i64>>], inputs: &[Tensor]) -> InputCheck {
    if exported.len() != inputs.len() {
        return InputCheck::Mismatch {
            note: format!(
                "{} inputs given, the package was exported for {}",
                inputs.len(),
                exported.len()
            ),
            run: false,
        };
    }
    for (index, (want, t)) in exported.iter().zip(inputs).enumerate() {
        let got = t.size();
        let fits = want.len() == got.len()
            && want
                .iter()
                .zip(&got)
                .all(|(w, g)| w.is_none_or(|w| w == *g));
        if fits {
            continue;
        }
        let shown: Vec<String> = want
            .iter()
            .map(|d| d.map_or_else(|| "*".to_string(), |d| d.to_string()))
            .collect();
        let exported_numel: Option<i64> = want.iter().copied().product();
        let smaller = want.len() != got.len()
            || exported_numel.is_none_or(|n| got.iter().product::<i64>() < n);
        let note = format!(
            "input {index} is {got:?} but the package was exported for [{}]",
            shown.join(", ")
        );
        return if smaller {
            InputCheck::Mismatch {
                note: format!("{note}; not run: the package would read past the end of the input"),
                run: false,
            }
        } else {
            InputCheck::Mismatch { note, run: true }
        };
    }
    InputCheck::Fine
}

fn file_label(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

/// Builds the compiled variant (tracing `eager` on `first` when asked to), timing
/// the build between device syncs. The info is filled either way; the error is why
/// the variant could not be built.
pub(crate) fn build<'a>(
    compiled: Compiled<'a>,
    eager: &mut ClosureVariant<'_>,
    first: &Request,
    device: &dyn DeviceBackend,
) -> (VariantInfo, Result<Box<dyn Variant + 'a>, String>) {
    let Compiled { label, source } = compiled;
    let (kind, default_label, path) = match &source {
        CompiledSource::Trace => (VariantKind::TorchscriptTrace, "traced".to_string(), None),
        CompiledSource::TorchScript(p) => {
            (VariantKind::TorchscriptFile, file_label(p), Some(p.clone()))
        }
        CompiledSource::Closure(_) => (VariantKind::Closure, "compiled".to_string(), None),
        CompiledSource::Aoti(p) => (VariantKind::AotiPackage, file_label(p), Some(p.clone())),
    };
    let mut info = VariantInfo::new(label.unwrap_or(default_label), kind);
    info.source = path.as_ref().map(|p| p.display().to_string());
    if let CompiledSource::Closure(f) = source {
        return (info, Ok(Box::new(ClosureVariant::new(f))));
    }
    if let CompiledSource::Trace = source {
        if let Err(cause) = check_traceable(eager, first) {
            return (info, Err(cause));
        }
    }
    let tch_device = device.tch_device();
    device.synchronize();
    let t0 = Instant::now();
    let built: Result<Box<dyn Variant + 'a>, String> = match source {
        CompiledSource::Trace => trace(eager, first).map(|v| Box::new(v) as Box<dyn Variant>),
        CompiledSource::TorchScript(p) => {
            load_torchscript(&p, tch_device).map(|v| Box::new(v) as Box<dyn Variant>)
        }
        CompiledSource::Aoti(p) => match AotiPackage::load(&p, tch_device) {
            Ok(package) => {
                info.metadata = package.metadata().clone();
                info.call_spec = package.call_spec().to_vec();
                match package.exported_input_shapes() {
                    Ok(exported) => {
                        info.exported_input_shapes = exported.clone();
                        Ok(Box::new(AotiVariant { package, exported }) as Box<dyn Variant>)
                    }
                    Err(e) => Err(e),
                }
            }
            Err(e) => Err(e.to_string()),
        },
        CompiledSource::Closure(_) => unreachable!("closures return above"),
    };
    device.synchronize();
    info.build_ns = Some(t0.elapsed().as_nanos() as f64);
    (info, built)
}

/// A trace cannot capture parameters that require grad, and the tracer fails inside
/// an op (a panic in tch, with the tracer left running): find out beforehand with
/// one untimed call with grad mode on.
fn check_traceable(eager: &mut ClosureVariant<'_>, first: &Request) -> Result<(), String> {
    let outputs = tch::with_grad(|| (eager.f)(first.tensors()));
    if outputs.iter().any(Tensor::requires_grad) {
        return Err(format!(
            "failed to trace the eager closure on {}: its output requires grad (freeze the model's VarStore with vs.freeze() before tracing)",
            first.shape_label()
        ));
    }
    Ok(())
}

fn trace(eager: &mut ClosureVariant<'_>, first: &Request) -> Result<TorchScriptVariant, String> {
    let mut outputs = 0usize;
    let module =
        CModule::create_by_tracing("gpubench_trace", "forward", first.tensors(), &mut |xs| {
            let out = (eager.f)(xs);
            outputs = out.len();
            out
        })
        .map_err(|e| {
            format!(
                "failed to trace the eager closure on {}: {}",
                first.shape_label(),
                cap_message(&e.to_string())
            )
        })?;
    Ok(TorchScriptVariant {
        module,
        single_output: outputs == 1,
    })
}

fn load_torchscript(path: &Path, device: Device) -> Result<TorchScriptVariant, String> {
    if !path.is_file() {
        return Err(format!(
            "failed to load TorchScript file {}: no such file",
            path.display()
        ));
    }
    let mut module = CModule::load_on_device(path, device).map_err(|e| {
        format!(
            "failed to load TorchScript file {}: {}",
            path.display(),
            cap_message(&e.to_string())
        )
    })?;
    module.set_eval();
    Ok(TorchScriptVariant {
        module,
        single_output: false,
    })
}
