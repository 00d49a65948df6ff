//! Numerical agreement of two sets of outputs: count, shape and dtype first (the
//! loudest disagreements), then NaN/Inf placement, max absolute and relative
//! difference, allclose with dtype-aware tolerances, and RMSE against an optional
//! float64 reference.

use gpubench_record::eager_compiled::{OutputAgreement, ReferenceRmse};
use tch::{Kind, Tensor};

use super::{kind_label, Tolerance};

/// How a compiled output set compares with eager's.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct OutputsVerdict {
    /// Per output pair (as many as both have).
    pub outputs: Vec<OutputAgreement>,
    /// The loudest problem in words, when there is one.
    pub mismatch: Option<String>,
    /// Whether the outputs agree.
    pub agrees: bool,
}

/// PyTorch's accuracy check against a float64 reference accepts a compiled RMSE up
/// to this multiple of eager's (`torch._dynamo.utils.same`).
const RMSE_MULTIPLIER: f64 = 2.0;

/// Compares `compiled` with `eager` output by output. `reference` holds the float64
/// reference outputs when there is one.
pub(crate) fn compare_outputs(
    eager: &[Tensor],
    compiled: &[Tensor],
    tolerance: Option<Tolerance>,
    reference: Option<&[Tensor]>,
) -> OutputsVerdict {
    let mut mismatch = None;
    if eager.len() != compiled.len() {
        mismatch = Some(format!(
            "compiled returned {} outputs where eager returned {}",
            compiled.len(),
            eager.len()
        ));
    }
    let outputs: Vec<OutputAgreement> = eager
        .iter()
        .zip(compiled)
        .enumerate()
        .map(|(i, (e, c))| {
            let tol = tolerance.unwrap_or_else(|| Tolerance::for_kind(e.kind()));
            let r = reference.and_then(|r| r.get(i));
            compare_tensors(i, e, c, tol, r)
        })
        .collect();
    if mismatch.is_none() {
        mismatch = outputs.iter().find_map(describe_mismatch);
    }
    let agrees = mismatch.is_none() && outputs.iter().all(output_agrees);
    OutputsVerdict {
        outputs,
        mismatch,
        agrees,
    }
}

/// Within tolerance, or no less accurate than eager against the reference.
fn output_agrees(o: &OutputAgreement) -> bool {
    o.eager_shape == o.compiled_shape
        && o.eager_dtype == o.compiled_dtype
        && o.non_finite_mismatch == 0
        && (o.allclose || o.reference.is_some_and(|r| r.within))
}

fn with_output(index: usize, what: String) -> String {
    if index == 0 {
        what
    } else {
        format!("output {index}: {what}")
    }
}

/// Shape, then dtype, then non-finite placement: the problems that need no
/// tolerance to call.
fn describe_mismatch(o: &OutputAgreement) -> Option<String> {
    let what = if o.eager_shape != o.compiled_shape {
        format!(
            "compiled returned {:?} where eager returned {:?}",
            o.compiled_shape, o.eager_shape
        )
    } else if o.eager_dtype != o.compiled_dtype {
        format!(
            "compiled returned {} where eager returned {}",
            o.compiled_dtype, o.eager_dtype
        )
    } else if o.non_finite_mismatch > 0 {
        format!(
            "{} elements are NaN or infinite in one output and not the other",
            o.non_finite_mismatch
        )
    } else {
        return None;
    };
    Some(with_output(o.index, what))
}

/// A float64 view of `t` (complex tensors as their real and imaginary parts).
fn as_f64(t: &Tensor) -> Tensor {
    let t = match t.kind() {
        Kind::ComplexHalf | Kind::ComplexFloat | Kind::ComplexDouble => t.view_as_real(),
        _ => t.shallow_clone(),
    };
    t.to_kind(Kind::Double)
}

fn count(mask: &Tensor) -> u64 {
    mask.sum(Kind::Int64).int64_value(&[]).max(0) as u64
}

fn max_or_zero(t: &Tensor) -> f64 {
    if t.numel() == 0 {
        0.0
    } else {
        t.max().double_value(&[])
    }
}

/// Compares one output pair.
pub(crate) fn compare_tensors(
    index: usize,
    eager: &Tensor,
    compiled: &Tensor,
    tol: Tolerance,
    reference: Option<&Tensor>,
) -> OutputAgreement {
    let eager_shape = eager.size();
    let compiled_shape = compiled.size();
    let e = as_f64(eager);
    let c = as_f64(compiled);
    let e_finite = e.isfinite();
    let c_finite = c.isfinite();
    let eager_non_finite = count(&e_finite.logical_not());
    let compiled_non_finite = count(&c_finite.logical_not());
    let mut out = OutputAgreement {
        index,
        eager_shape: eager_shape.clone(),
        compiled_shape: compiled_shape.clone(),
        eager_dtype: kind_label(eager.kind()).to_string(),
        compiled_dtype: kind_label(compiled.kind()).to_string(),
        max_abs_diff: None,
        max_rel_diff: None,
        rtol: tol.rtol,
        atol: tol.atol,
        allclose: false,
        eager_non_finite,
        compiled_non_finite,
        non_finite_mismatch: 0,
        reference: None,
    };
    if eager_shape != compiled_shape {
        return out;
    }
    let c = c.to_device(e.device());
    let c_finite = c_finite.to_device(e.device());
    let both_finite = e_finite.logical_and(&c_finite);
    let same = e
        .eq_tensor(&c)
        .logical_or(&e.isnan().logical_and(&c.isnan()));
    out.non_finite_mismatch = count(&both_finite.logical_not().logical_and(&same.logical_not()));
    let diff = (&c - &e).abs().masked_fill(&both_finite.logical_not(), 0.0);
    let e_abs = e.abs();
    let rel = (&diff / &e_abs).masked_fill(&diff.eq(0.0), 0.0);
    out.max_abs_diff = Some(max_or_zero(&diff));
    out.max_rel_diff = Some(max_or_zero(&rel));
    let outside = diff.gt_tensor(&(e_abs * tol.rtol + tol.atol));
    out.allclose = out.non_finite_mismatch == 0 && count(&outside) == 0;
    if let Some(r) = reference.filter(|r| r.size() == eager_shape) {
        let r = as_f64(r).to_device(e.device());
        let rmse = |x: &Tensor| -> f64 {
            if x.numel() == 0 {
                return 0.0;
            }
            (x - &r)
                .square()
                .mean(Kind::Double)
                .sqrt()
                .double_value(&[])
        };
        let eager_rmse = rmse(&e);
        let compiled_rmse = rmse(&c);
        out.reference = Some(ReferenceRmse {
            eager_rmse,
            compiled_rmse,
            rmse_ratio: (eager_rmse > 0.0).then(|| compiled_rmse / eager_rmse),
            within: compiled_rmse <= RMSE_MULTIPLIER * eager_rmse + tol.atol / 10.0,
        });
    }
    out
}

/// Eager run twice on the same input: the largest absolute difference, whether the
/// runs were bitwise identical, and whether they agree within tolerance.
pub(crate) fn repeat_agreement(
    first: &[Tensor],
    second: &[Tensor],
    tolerance: Option<Tolerance>,
) -> (f64, bool, bool) {
    let verdict = compare_outputs(first, second, tolerance, None);
    let max_abs = verdict
        .outputs
        .iter()
        .map(|o| o.max_abs_diff.unwrap_or(f64::INFINITY))
        .fold(0.0, f64::max);
    let identical = first.len() == second.len()
        && first
            .iter()
            .zip(second)
            .all(|(a, b)| a.size() == b.size() && a.kind() == b.kind() && a.equal(b));
    (max_abs, identical, verdict.agrees)
}
