//! Shape rules and errors: outputs shaped like an input or computed from dimensions and
//! attributes (`avg_pool`, `concat_rows`, `top_k`), several outputs, bool masks, a kernel that
//! returns an error (`checked_sqrt`) or panics (`unlucky`), attributes before tensors.

use crate::seed::Blob;
use customop::prelude::*;

/// Fails on negative inputs: the kernel's error reaches XLA.
#[custom_op(name = "example::checked_sqrt")]
pub fn checked_sqrt(
    x: TensorRef<'_, f32>,
    #[out(shape = x)] mut y: TensorMut<'_, f32>,
) -> Result<(), OpError> {
    for (o, &v) in y.as_mut_slice().iter_mut().zip(x.as_slice()) {
        if v < 0.0 {
            return Err(OpError::invalid_argument(format!("negative input {v}")));
        }
        *o = v.sqrt();
    }
    Ok(())
}

/// Splits `x` by a boolean mask: `kept = x` where `mask`, else 0; `dropped` the rest. A `bool`
/// tensor input and two outputs (the handler checks mask bytes, and that no result overlaps
/// another).
#[custom_op(name = "example::masked_split")]
pub fn masked_split(
    x: TensorRef<'_, f32>,
    mask: TensorRef<'_, bool>,
    #[out(shape = x)] mut kept: TensorMut<'_, f32>,
    #[out(shape = x)] mut dropped: TensorMut<'_, f32>,
) -> Result<(), OpError> {
    if mask.dims() != x.dims() {
        return Err(OpError::invalid_argument(format!(
            "mask shape {:?} is not x's {:?}",
            mask.dims(),
            x.dims()
        )));
    }
    let rows = x.as_slice().iter().zip(mask.as_slice());
    for ((&v, &m), (k, d)) in rows.zip(kept.as_mut_slice().iter_mut().zip(dropped.as_mut_slice())) {
        (*k, *d) = if m { (v, 0.0) } else { (0.0, v) };
    }
    Ok(())
}

/// 1-D average pooling along the rows of `x`: windows of `k` elements every `stride`, with
/// `pad` zeros on each side counted in the average. The output length is computed from the
/// input's and the attributes: `(n + 2 * pad - k) / stride + 1`.
#[custom_op(name = "example::avg_pool")]
pub fn avg_pool(
    x: TensorRef<'_, f32, 2>,
    #[attr] k: i64,
    #[attr] stride: i64,
    #[attr] pad: i64,
    #[out(shape = [x.dim(0), (x.dim(1) + 2 * pad - k) / stride + 1])] mut y: TensorMut<'_, f32, 2>,
) -> Result<(), OpError> {
    if k <= 0 || stride <= 0 || pad < 0 {
        return Err(OpError::invalid_argument(format!(
            "k = {k} and stride = {stride} must be positive, pad = {pad} not negative"
        )));
    }
    let (n, m) = (x.dim(1) as i64, y.dim(1));
    let rows = x.as_slice().chunks_exact(x.dim(1).max(1));
    for (row, out) in rows.zip(y.as_mut_slice().chunks_exact_mut(m.max(1))) {
        for (j, o) in out.iter_mut().enumerate() {
            let start = j as i64 * stride - pad;
            let sum: f32 = (start..start + k)
                .filter(|&i| 0 <= i && i < n)
                .map(|i| row[i as usize])
                .sum();
            *o = sum / k as f32;
        }
    }
    Ok(())
}

/// `a` on top of `b`: their rows, one after the other (`a.dim(0) + b.dim(0)` rows).
#[custom_op(name = "example::concat_rows")]
pub fn concat_rows(
    a: TensorRef<'_, f32, 2>,
    b: TensorRef<'_, f32, 2>,
    #[out(shape = [a.dim(0) + b.dim(0), a.dim(1)])] mut y: TensorMut<'_, f32, 2>,
) -> Result<(), OpError> {
    if a.dim(1) != b.dim(1) {
        return Err(OpError::invalid_argument(format!(
            "a has {} columns, b {}",
            a.dim(1),
            b.dim(1)
        )));
    }
    let (top, bottom) = y.as_mut_slice().split_at_mut(a.len());
    top.copy_from_slice(a.as_slice());
    bottom.copy_from_slice(b.as_slice());
    Ok(())
}

/// The `k` largest elements of `x`, largest first (ties: the lower index first), and their
/// indices. The outputs' length is the attribute `k`.
#[custom_op(name = "example::top_k")]
pub fn top_k(
    x: TensorRef<'_, f32, 1>,
    #[attr] k: i32,
    #[out(shape = [k])] mut values: TensorMut<'_, f32, 1>,
    #[out(shape = [k])] mut indices: TensorMut<'_, i32, 1>,
) -> Result<(), OpError> {
    let k = usize::try_from(k).unwrap_or(0);
    if k > x.len() || x.len() > i32::MAX as usize {
        return Err(OpError::invalid_argument(format!(
            "k = {k}, but x has {} elements",
            x.len()
        )));
    }
    let mut order: Vec<usize> = (0..x.len()).collect();
    let xs = x.as_slice();
    order.sort_by(|&i, &j| xs[j].total_cmp(&xs[i]).then(i.cmp(&j)));
    for ((v, ix), &i) in values
        .as_mut_slice()
        .iter_mut()
        .zip(indices.as_mut_slice())
        .zip(&order[..k])
    {
        *v = xs[i];
        *ix = i as i32;
    }
    Ok(())
}

/// Panics when the first element is 13: the panic becomes an XLA error, not a crash.
#[custom_op(name = "example::unlucky")]
pub fn unlucky(
    x: TensorRef<'_, f32>,
    #[out(shape = x)] mut y: TensorMut<'_, f32>,
) -> Result<(), OpError> {
    if x.as_slice().first() == Some(&13.0) {
        panic!("unlucky number 13");
    }
    y.as_mut_slice().copy_from_slice(x.as_slice());
    Ok(())
}

/// `y = x`, taking the 56-byte `Blob` too: the op of the lowering benchmarks (a chain of N).
#[custom_op(name = "example::passthrough")]
pub fn passthrough(
    #[external] blob: &Blob,
    x: TensorRef<'_, f32>,
    #[out(shape = x)] mut y: TensorMut<'_, f32>,
) -> Result<(), OpError> {
    let _ = blob;
    y.as_mut_slice().copy_from_slice(x.as_slice());
    Ok(())
}

/// `y = 2 x`, declared with an explicit `target` and `crate` path (the options that the other
/// ops leave at their defaults).
#[custom_op(
    name = "example::doubled",
    target = "example_doubled_target",
    crate = "::customop"
)]
pub fn doubled(
    x: TensorRef<'_, f64>,
    #[out(shape = x)] mut y: TensorMut<'_, f64>,
) -> Result<(), OpError> {
    for (o, v) in y.as_mut_slice().iter_mut().zip(x.as_slice()) {
        *o = 2.0 * v;
    }
    Ok(())
}

/// `y = x + k`, its attribute declared before its tensor: torch's schema puts attributes after
/// `*`, so a native torch kernel finds `k` after `x` on its stack.
#[custom_op(name = "example::shift_by")]
pub fn shift_by(
    #[attr] k: i64,
    x: TensorRef<'_, f32>,
    #[out(shape = x)] mut y: TensorMut<'_, f32>,
) -> Result<(), OpError> {
    for (o, &v) in y.as_mut_slice().iter_mut().zip(x.as_slice()) {
        *o = v + k as f32;
    }
    Ok(())
}
