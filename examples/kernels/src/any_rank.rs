//! Ops of any rank: RMS normalisation over the last dimension of a tensor of rank ≥ 1, its
//! per-row scale an output of shape `x.shape[:-1]` (`#[out(shape = [..x.dims(..-1)])]`). The
//! four ops mirror JAX's FFI `rms_norm` example: the op with its declared backward
//! (`rms_norm_nd`), and the forward with residuals and the backward from them
//! (`rms_norm_fwd`, `rms_norm_bwd`) for a `jax.custom_vjp` written in Python.

use crate::Real;
use customop::prelude::*;

/// `(rows, cols)` of `x` seen as rows of its last dimension; rank 0 is refused.
fn rows_cols(dims: &[i64], what: &str) -> Result<(usize, usize), OpError> {
    let Some((&last, lead)) = dims.split_last() else {
        return Err(OpError::invalid_argument(format!(
            "{what}: `x` has rank 0; it normalises over the last dimension, so rank >= 1"
        )));
    };
    let count = |d: i64| usize::try_from(d).unwrap_or(0);
    Ok((lead.iter().map(|&d| count(d)).product(), count(last)))
}

/// `1 / sqrt(mean(row^2) + eps)` (the mean of an empty row is 0).
fn inv_rms<T: Real>(row: &[T], eps: f32) -> f64 {
    let ms = row.iter().map(|v| v.to_f64().powi(2)).sum::<f64>() / row.len().max(1) as f64;
    1.0 / (ms + f64::from(eps)).sqrt()
}

/// `y = x * r` per row of `cols` elements, `r = 1 / sqrt(mean(row^2) + eps)`; `scale(i, r)`
/// sees each row's `r`.
fn normalise<T: Real>(
    x: &[T],
    y: &mut [T],
    cols: usize,
    eps: f32,
    mut scale: impl FnMut(usize, f64),
) {
    for (i, (row, out)) in x
        .chunks(cols.max(1))
        .zip(y.chunks_mut(cols.max(1)))
        .enumerate()
    {
        let r = inv_rms(row, eps);
        scale(i, r);
        for (o, v) in out.iter_mut().zip(row) {
            *o = T::from_f64(v.to_f64() * r);
        }
    }
}

/// `y = x / sqrt(mean(x^2) + eps)` over the last dimension, for `x` of any rank >= 1.
#[custom_op(
    name = "example::rms_norm_nd",
    dtypes(T = [f32, f64, customop::bf16, customop::f16]),
    vjp = rms_norm_nd_bwd
)]
pub fn rms_norm_nd<T: Real>(
    x: TensorRef<'_, T>,
    #[attr] eps: f32,
    #[out(shape = x)] mut y: TensorMut<'_, T>,
) -> Result<(), OpError> {
    let (_, cols) = rows_cols(x.dims(), "rms_norm_nd")?;
    normalise(x.as_slice(), y.as_mut_slice(), cols, eps, |_, _| {});
    Ok(())
}

/// `d_x = r * d_y - r^3 * x * mean(x * d_y)` per row, `r = 1 / sqrt(mean(x^2) + eps)`.
fn backward<T: Real>(
    x: &[T],
    r: impl Fn(usize, &[T]) -> f64,
    d_y: &[T],
    d_x: &mut [T],
    cols: usize,
) {
    let cols = cols.max(1);
    for (i, ((row, dy), out)) in x
        .chunks(cols)
        .zip(d_y.chunks(cols))
        .zip(d_x.chunks_mut(cols))
        .enumerate()
    {
        let r = r(i, row);
        let dot = row
            .iter()
            .zip(dy)
            .map(|(a, b)| a.to_f64() * b.to_f64())
            .sum::<f64>()
            / cols as f64;
        for ((o, v), g) in out.iter_mut().zip(row).zip(dy) {
            *o = T::from_f64(r * g.to_f64() - r * r * r * v.to_f64() * dot);
        }
    }
}

/// The backward of `rms_norm_nd`, any rank: takes `x`, `eps` and the cotangent `d_y`.
#[custom_op(
    name = "example::rms_norm_nd_bwd",
    dtypes(T = [f32, f64, customop::bf16, customop::f16])
)]
pub fn rms_norm_nd_bwd<T: Real>(
    x: TensorRef<'_, T>,
    d_y: TensorRef<'_, T>,
    #[attr] eps: f32,
    #[out(shape = x)] mut d_x: TensorMut<'_, T>,
) -> Result<(), OpError> {
    let (_, cols) = rows_cols(x.dims(), "rms_norm_nd_bwd")?;
    if d_y.dims() != x.dims() {
        return Err(OpError::invalid_argument(format!(
            "d_y is {:?} but x is {:?}",
            d_y.dims(),
            x.dims()
        )));
    }
    backward(
        x.as_slice(),
        |_, row| inv_rms(row, eps),
        d_y.as_slice(),
        d_x.as_mut_slice(),
        cols,
    );
    Ok(())
}

/// The forward with its residual: `y` as `rms_norm_nd`, and `res`, the per-row scale
/// `1 / sqrt(mean(x^2) + eps)`, of shape `x.shape[:-1]`.
#[custom_op(
    name = "example::rms_norm_fwd",
    dtypes(T = [f32, f64, customop::bf16, customop::f16])
)]
pub fn rms_norm_fwd<T: Real>(
    x: TensorRef<'_, T>,
    #[attr] eps: f32,
    #[out(shape = x)] mut y: TensorMut<'_, T>,
    #[out(shape = [..x.dims(..-1)])] mut res: TensorMut<'_, T>,
) -> Result<(), OpError> {
    let (_, cols) = rows_cols(x.dims(), "rms_norm_fwd")?;
    let res = res.as_mut_slice();
    // Rows of no element (a last dimension of 0) have no chunk below: each scale is that of an
    // empty row.
    res.fill(T::from_f64(inv_rms::<T>(&[], eps)));
    normalise(x.as_slice(), y.as_mut_slice(), cols, eps, |i, r| {
        res[i] = T::from_f64(r);
    });
    Ok(())
}

/// The backward from the residual (JAX's `rms_norm_bwd(res, x, ct_y)`): `ct_x` from the per-row
/// scale `res` (shape `x.shape[:-1]`), `x` and the cotangent `ct_y`.
#[custom_op(
    name = "example::rms_norm_bwd",
    dtypes(T = [f32, f64, customop::bf16, customop::f16])
)]
pub fn rms_norm_bwd<T: Real>(
    res: TensorRef<'_, T>,
    x: TensorRef<'_, T>,
    ct_y: TensorRef<'_, T>,
    #[out(shape = x)] mut ct_x: TensorMut<'_, T>,
) -> Result<(), OpError> {
    let (rows, cols) = rows_cols(x.dims(), "rms_norm_bwd")?;
    let lead = &x.dims()[..x.rank() - 1];
    if res.dims() != lead || ct_y.dims() != x.dims() {
        return Err(OpError::invalid_argument(format!(
            "rms_norm_bwd: x is {:?}, so res must be {lead:?} and ct_y {:?}; got {:?} and {:?}",
            x.dims(),
            x.dims(),
            res.dims(),
            ct_y.dims()
        )));
    }
    let res = res.as_slice();
    debug_assert_eq!(res.len(), rows);
    backward(
        x.as_slice(),
        |i, _| res[i].to_f64(),
        ct_y.as_slice(),
        ct_x.as_mut_slice(),
        cols,
    );
    Ok(())
}
