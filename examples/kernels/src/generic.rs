//! One op for several element types (`dtypes(T = [...])`) with declared derivatives: `rms_norm_t`,
//! `mean_pool`, `scale_rows`, `gather_rows` and their backward ops; `Real`, the types they compute
//! in (through `f64`).

use customop::prelude::*;

/// The real element types that `rms_norm_t` computes in (through `f64`).
pub trait Real: customop::types::Element {
    /// The value as an `f64`.
    fn to_f64(self) -> f64;
    /// The nearest value to `v`.
    fn from_f64(v: f64) -> Self;
}

impl Real for f32 {
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    fn from_f64(v: f64) -> Self {
        v as f32
    }
}

impl Real for f64 {
    fn to_f64(self) -> f64 {
        self
    }
    fn from_f64(v: f64) -> Self {
        v
    }
}

impl Real for customop::bf16 {
    fn to_f64(self) -> f64 {
        customop::bf16::to_f64(self)
    }
    fn from_f64(v: f64) -> Self {
        customop::bf16_from_f64(v)
    }
}

impl Real for customop::f16 {
    fn to_f64(self) -> f64 {
        customop::f16::to_f64(self)
    }
    fn from_f64(v: f64) -> Self {
        customop::f16_from_f64(v)
    }
}

/// Row-wise RMS norm for several element types in one op: `y = x / sqrt(mean(x^2) + eps)`,
/// computed in `f64` and rounded to `T`. One name, one schema, one target; the handler runs the
/// instantiation for the dtype XLA passes.
///
/// Its gradient is the op `rms_norm_t_bwd` (`vjp = ...`): JAX and PyTorch differentiate
/// through it with that op.
#[custom_op(
    name = "example::rms_norm_t",
    dtypes(T = [f32, f64, customop::bf16, customop::f16]),
    partition(x = [rows, _]),
    vjp = rms_norm_t_bwd,
    jvp = crate::derivatives::rms_norm_t_jvp
)]
pub fn rms_norm_t<T: Real>(
    x: TensorRef<'_, T, 2>,
    #[attr] eps: f32,
    #[out(shape = x)] mut y: TensorMut<'_, T>,
) -> Result<(), OpError> {
    let cols = x.dim(1).max(1);
    for (row, out) in x
        .as_slice()
        .chunks(cols)
        .zip(y.as_mut_slice().chunks_mut(cols))
    {
        let ms = row.iter().map(|v| v.to_f64().powi(2)).sum::<f64>() / cols as f64;
        let inv = 1.0 / (ms + f64::from(eps)).sqrt();
        for (o, v) in out.iter_mut().zip(row) {
            *o = T::from_f64(v.to_f64() * inv);
        }
    }
    Ok(())
}

/// The backward of `rms_norm_t`: with `r = 1 / sqrt(mean(x^2) + eps)` per row,
/// `d_x = r * d_y - r^3 * x * mean(x * d_y)`. It takes the forward input `x`, the attribute
/// `eps` and the cotangent `d_y` of the output `y`, and returns the gradient `d_x` of `x`.
///
/// Its own gradient is `rms_norm_t_bwd_bwd` (second derivatives of `rms_norm_t`).
#[custom_op(
    name = "example::rms_norm_t_bwd",
    dtypes(T = [f32, f64, customop::bf16, customop::f16]),
    partition(x = [rows, _], d_y = [rows, _]),
    vjp = crate::derivatives::rms_norm_t_bwd_bwd,
    jvp = crate::derivatives::rms_norm_t_bwd_jvp
)]
pub fn rms_norm_t_bwd<T: Real>(
    x: TensorRef<'_, T, 2>,
    d_y: TensorRef<'_, T, 2>,
    #[attr] eps: f32,
    #[out(shape = x)] mut d_x: TensorMut<'_, T>,
) -> Result<(), OpError> {
    if d_y.dims() != x.dims() {
        return Err(OpError::invalid_argument(format!(
            "d_y is {:?} but x is {:?}",
            d_y.dims(),
            x.dims()
        )));
    }
    let cols = x.dim(1).max(1);
    let n = cols as f64;
    for ((row, dy), out) in x
        .as_slice()
        .chunks(cols)
        .zip(d_y.as_slice().chunks(cols))
        .zip(d_x.as_mut_slice().chunks_mut(cols))
    {
        let ms = row.iter().map(|v| v.to_f64().powi(2)).sum::<f64>() / n;
        let r = 1.0 / (ms + f64::from(eps)).sqrt();
        let dot = row
            .iter()
            .zip(dy)
            .map(|(a, b)| a.to_f64() * b.to_f64())
            .sum::<f64>()
            / n;
        for ((o, v), g) in out.iter_mut().zip(row).zip(dy) {
            *o = T::from_f64(r * g.to_f64() - r * r * r * v.to_f64() * dot);
        }
    }
    Ok(())
}

/// Mean pooling along the rows of `x`, for `f32` and `f64`: windows of `k` elements every
/// `stride` (no padding), `(n - k) / stride + 1` of them. Differentiable: its backward is
/// `mean_pool_bwd`.
#[custom_op(
    name = "example::mean_pool",
    dtypes(T = [f32, f64]),
    partition(x = [rows, _]),
    vjp = mean_pool_bwd
)]
pub fn mean_pool<T: Real>(
    x: TensorRef<'_, T, 2>,
    #[attr] k: i64,
    #[attr] stride: i64,
    #[out(shape = [x.dim(0), (x.dim(1) - k) / stride + 1])] mut y: TensorMut<'_, T, 2>,
) -> Result<(), OpError> {
    let (k, stride) = pool_window(k, stride)?;
    // The shape rule's division rounds toward zero: a row shorter than a window still gets
    // one output, which no window fills.
    if x.dim(1) < k {
        return Err(OpError::invalid_argument(format!(
            "rows of {} elements are shorter than a window of k = {k}",
            x.dim(1)
        )));
    }
    let (n, m) = (x.dim(1).max(1), y.dim(1).max(1));
    for (row, out) in x.as_slice().chunks(n).zip(y.as_mut_slice().chunks_mut(m)) {
        for (j, o) in out.iter_mut().enumerate() {
            let window = &row[j * stride..j * stride + k];
            *o = T::from_f64(window.iter().map(|v| v.to_f64()).sum::<f64>() / k as f64);
        }
    }
    Ok(())
}

/// The window of `mean_pool`, checked: `k` and `stride` positive.
fn pool_window(k: i64, stride: i64) -> Result<(usize, usize), OpError> {
    match (usize::try_from(k), usize::try_from(stride)) {
        (Ok(k), Ok(s)) if k > 0 && s > 0 => Ok((k, s)),
        _ => Err(OpError::invalid_argument(format!(
            "k = {k} and stride = {stride} must be positive"
        ))),
    }
}

/// The backward of `mean_pool`: each output's cotangent spread evenly over its window,
/// `d_x[i, j * stride + t] += d_y[i, j] / k`.
#[custom_op(
    name = "example::mean_pool_bwd",
    dtypes(T = [f32, f64]),
    partition(x = [rows, _], d_y = [rows, _])
)]
pub fn mean_pool_bwd<T: Real>(
    x: TensorRef<'_, T, 2>,
    d_y: TensorRef<'_, T, 2>,
    #[attr] k: i64,
    #[attr] stride: i64,
    #[out(shape = x)] mut d_x: TensorMut<'_, T, 2>,
) -> Result<(), OpError> {
    let (k, stride) = pool_window(k, stride)?;
    let (n, m) = (x.dim(1).max(1), d_y.dim(1).max(1));
    let windows = (x.dim(1) >= k).then(|| (x.dim(1) - k) / stride + 1);
    if d_y.dim(0) != x.dim(0) || windows != Some(d_y.dim(1)) {
        return Err(OpError::invalid_argument(format!(
            "d_y is {:?}, not the pooled shape of x {:?}",
            d_y.dims(),
            x.dims()
        )));
    }
    for (dy, out) in d_y
        .as_slice()
        .chunks(m)
        .zip(d_x.as_mut_slice().chunks_mut(n))
    {
        let mut acc = vec![0f64; n];
        for (j, g) in dy.iter().enumerate() {
            for a in &mut acc[j * stride..j * stride + k] {
                *a += g.to_f64() / k as f64;
            }
        }
        for (o, a) in out.iter_mut().zip(acc) {
            *o = T::from_f64(a);
        }
    }
    Ok(())
}

/// `y[i, j] = x[i, j] * w[i]` for `f32` and `f64`, differentiable in both inputs
/// (`scale_rows_bwd` returns `d_x` and `d_w`).
#[custom_op(
    name = "example::scale_rows",
    dtypes(T = [f32, f64]),
    partition(x = [rows, _], w = [rows]),
    vjp = scale_rows_bwd
)]
pub fn scale_rows<T: Real>(
    x: TensorRef<'_, T, 2>,
    w: TensorRef<'_, T, 1>,
    #[out(shape = x)] mut y: TensorMut<'_, T>,
) -> Result<(), OpError> {
    if w.dim(0) != x.dim(0) {
        return Err(OpError::invalid_argument(format!(
            "scale_rows: {} rows but {} weights",
            x.dim(0),
            w.dim(0)
        )));
    }
    let cols = x.dim(1).max(1);
    for ((row, wi), out) in x
        .as_slice()
        .chunks(cols)
        .zip(w.as_slice())
        .zip(y.as_mut_slice().chunks_mut(cols))
    {
        for (o, v) in out.iter_mut().zip(row) {
            *o = T::from_f64(v.to_f64() * wi.to_f64());
        }
    }
    Ok(())
}

/// The backward of `scale_rows`: `d_x = d_y * w[i]`, `d_w[i] = sum_j d_y[i, j] * x[i, j]`.
#[custom_op(
    name = "example::scale_rows_bwd",
    dtypes(T = [f32, f64]),
    partition(x = [rows, _], w = [rows], d_y = [rows, _])
)]
pub fn scale_rows_bwd<T: Real>(
    x: TensorRef<'_, T, 2>,
    w: TensorRef<'_, T, 1>,
    d_y: TensorRef<'_, T, 2>,
    #[out(shape = x)] mut d_x: TensorMut<'_, T>,
    #[out(shape = w)] mut d_w: TensorMut<'_, T>,
) -> Result<(), OpError> {
    if w.dim(0) != x.dim(0) || d_y.dims() != x.dims() {
        return Err(OpError::invalid_argument(format!(
            "scale_rows_bwd: x {:?}, w {:?}, d_y {:?}",
            x.dims(),
            w.dims(),
            d_y.dims()
        )));
    }
    let (dx, dw) = (d_x.as_mut_slice(), d_w.as_mut_slice());
    // Row by row, so that every d_w[i] is written also when rows are empty.
    for (i, (wi, dwi)) in w.as_slice().iter().zip(dw.iter_mut()).enumerate() {
        let span = i * x.dim(1)..(i + 1) * x.dim(1);
        let (row, dy) = (&x.as_slice()[span.clone()], &d_y.as_slice()[span.clone()]);
        let mut acc = 0f64;
        for ((o, v), g) in dx[span].iter_mut().zip(row).zip(dy) {
            *o = T::from_f64(g.to_f64() * wi.to_f64());
            acc += g.to_f64() * v.to_f64();
        }
        *dwi = T::from_f64(acc);
    }
    Ok(())
}

/// `y[k, :] = x[idx[k], :]`, an embedding lookup, for `f32` and `f64`. Differentiable in `x`;
/// `idx` is an integer tensor, so it has no gradient (`None` in torch, a `float0` zero in
/// JAX) and the backward returns none for it.
#[custom_op(name = "example::gather_rows", dtypes(T = [f32, f64]), vjp = gather_rows_bwd)]
pub fn gather_rows<T: Real>(
    x: TensorRef<'_, T, 2>,
    idx: TensorRef<'_, i32, 1>,
    #[out(shape = [idx.dim(0), x.dim(1)])] mut y: TensorMut<'_, T>,
) -> Result<(), OpError> {
    let (rows, cols) = (x.dim(0), x.dim(1));
    let out = y.as_mut_slice();
    for (k, &i) in idx.as_slice().iter().enumerate() {
        let r = row_of("gather_rows", k, i, rows)?;
        out[k * cols..(k + 1) * cols].copy_from_slice(&x.as_slice()[r * cols..(r + 1) * cols]);
    }
    Ok(())
}

/// The backward of `gather_rows`: `d_x[idx[k], :] += d_y[k, :]` (zero elsewhere).
#[custom_op(name = "example::gather_rows_bwd", dtypes(T = [f32, f64]))]
pub fn gather_rows_bwd<T: Real>(
    x: TensorRef<'_, T, 2>,
    idx: TensorRef<'_, i32, 1>,
    d_y: TensorRef<'_, T, 2>,
    #[out(shape = x)] mut d_x: TensorMut<'_, T>,
) -> Result<(), OpError> {
    let (rows, cols) = (x.dim(0), x.dim(1));
    if d_y.dim(0) != idx.dim(0) || d_y.dim(1) != cols {
        return Err(OpError::invalid_argument(format!(
            "gather_rows_bwd: d_y {:?} for {} indices of rows of {cols}",
            d_y.dims(),
            idx.dim(0)
        )));
    }
    let mut acc = vec![0f64; rows * cols];
    for (k, &i) in idx.as_slice().iter().enumerate() {
        let r = row_of("gather_rows_bwd", k, i, rows)?;
        for (a, g) in acc[r * cols..(r + 1) * cols]
            .iter_mut()
            .zip(&d_y.as_slice()[k * cols..(k + 1) * cols])
        {
            *a += g.to_f64();
        }
    }
    for (o, a) in d_x.as_mut_slice().iter_mut().zip(acc) {
        *o = T::from_f64(a);
    }
    Ok(())
}

/// Index `idx[k] = i` as a row of a tensor of `rows` rows, or the op's refusal.
fn row_of(op: &str, k: usize, i: i32, rows: usize) -> Result<usize, OpError> {
    usize::try_from(i)
        .ok()
        .filter(|&r| r < rows)
        .ok_or_else(|| {
            OpError::invalid_argument(format!(
                "{op}: idx[{k}] = {i} is not a row of x (0..{rows})"
            ))
        })
}
