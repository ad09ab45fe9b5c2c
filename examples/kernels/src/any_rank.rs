//! Ops of any rank: RMS normalisation over the last dimension of a tensor of rank ≥ 1, its
//! per-row scale an output of shape `x.shape[:-1]` (`#[out(shape = [..x.dims(..-1)])]`). The
//! four ops mirror JAX's FFI `rms_norm` example: the op with its declared backward
//! (`rms_norm_nd`), and the forward with residuals and the backward from them
//! (`rms_norm_fwd`, `rms_norm_bwd`, complex too) for a `jax.custom_vjp` written in Python.

use crate::Real;
use customop::prelude::*;
use customop::{Complex64, Complex128};

/// A complex number in `f64`: what the RMS kernels compute in, for real types (the imaginary
/// part zero) and complex ones alike, with JAX's example's arithmetic (`x * x`, not `|x|^2`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct C64 {
    re: f64,
    im: f64,
}

impl C64 {
    const fn real(re: f64) -> C64 {
        C64 { re, im: 0.0 }
    }
    fn add(self, o: C64) -> C64 {
        C64 {
            re: self.re + o.re,
            im: self.im + o.im,
        }
    }
    fn sub(self, o: C64) -> C64 {
        C64 {
            re: self.re - o.re,
            im: self.im - o.im,
        }
    }
    fn mul(self, o: C64) -> C64 {
        C64 {
            re: self.re * o.re - self.im * o.im,
            im: self.re * o.im + self.im * o.re,
        }
    }
    fn scale(self, k: f64) -> C64 {
        C64 {
            re: self.re * k,
            im: self.im * k,
        }
    }
    fn recip(self) -> C64 {
        if self.im == 0.0 {
            return C64::real(1.0 / self.re);
        }
        let d = self.re * self.re + self.im * self.im;
        C64 {
            re: self.re / d,
            im: -self.im / d,
        }
    }
    /// The principal square root; a negative real's is NaN, as a real square root's is.
    fn sqrt(self) -> C64 {
        if self.im == 0.0 {
            return C64::real(self.re.sqrt());
        }
        let m = self.re.hypot(self.im);
        let re = ((m + self.re) / 2.0).sqrt();
        let im = ((m - self.re) / 2.0).sqrt().copysign(self.im);
        C64 { re, im }
    }
}

/// The element types the forward with residuals and its backward take: the real ones, and the
/// complex ones JAX's example takes too, each computed as a `C64`.
pub trait Num: customop::types::Element {
    /// The value as a complex number.
    fn to_c(self) -> C64;
    /// `c` as this type (for a real type, NaN where `c` is not real).
    fn from_c(c: C64) -> Self;
}

impl<T: Real> Num for T {
    fn to_c(self) -> C64 {
        C64::real(self.to_f64())
    }
    fn from_c(c: C64) -> Self {
        T::from_f64(if c.im == 0.0 { c.re } else { f64::NAN })
    }
}

impl Num for Complex64 {
    fn to_c(self) -> C64 {
        C64 {
            re: f64::from(self.re),
            im: f64::from(self.im),
        }
    }
    fn from_c(c: C64) -> Self {
        Complex64::new(c.re as f32, c.im as f32)
    }
}

impl Num for Complex128 {
    fn to_c(self) -> C64 {
        C64 {
            re: self.re,
            im: self.im,
        }
    }
    fn from_c(c: C64) -> Self {
        Complex128::new(c.re, c.im)
    }
}

/// `(rows, cols)` of `x` seen as rows of its last dimension; rank 0 is refused.
pub(crate) fn rows_cols(dims: &[i64], what: &str) -> Result<(usize, usize), OpError> {
    let Some((&last, lead)) = dims.split_last() else {
        return Err(OpError::invalid_argument(format!(
            "{what}: `x` has rank 0; it normalises over the last dimension, so rank >= 1"
        )));
    };
    let count = |d: i64| usize::try_from(d).unwrap_or(0);
    Ok((lead.iter().map(|&d| count(d)).product(), count(last)))
}

/// `rms_norm_nd_bwd`'s rule, on the CPU and the GPU: `d_y` has `x`'s shape. Rows and columns.
pub(crate) fn rms_norm_nd_bwd_shapes(x: &[i64], d_y: &[i64]) -> Result<(usize, usize), OpError> {
    let rows_cols = rows_cols(x, "rms_norm_nd_bwd")?;
    if d_y != x {
        return Err(OpError::invalid_argument(format!(
            "d_y is {d_y:?} but x is {x:?}"
        )));
    }
    Ok(rows_cols)
}

/// `1 / sqrt(mean(row^2) + eps)` (the mean of an empty row is 0; `x * x`, not `|x|^2`, for a
/// complex row, as JAX's example).
fn inv_rms<T: Num>(row: &[T], eps: f32) -> C64 {
    let sum = row
        .iter()
        .fold(C64::real(0.0), |s, v| s.add(v.to_c().mul(v.to_c())));
    let ms = sum.scale(1.0 / row.len().max(1) as f64);
    ms.add(C64::real(f64::from(eps))).sqrt().recip()
}

/// `y = x * r` per row of `cols` elements, `r = 1 / sqrt(mean(row^2) + eps)`; `scale(i, r)`
/// sees each row's `r`.
fn normalise<T: Num>(
    x: &[T],
    y: &mut [T],
    cols: usize,
    eps: f32,
    mut scale: impl FnMut(usize, C64),
) {
    for (i, (row, out)) in x
        .chunks(cols.max(1))
        .zip(y.chunks_mut(cols.max(1)))
        .enumerate()
    {
        let r = inv_rms(row, eps);
        scale(i, r);
        for (o, v) in out.iter_mut().zip(row) {
            *o = T::from_c(v.to_c().mul(r));
        }
    }
}

/// `y = x / sqrt(mean(x^2) + eps)` over the last dimension, for `x` of any rank >= 1.
#[custom_op(
    name = "example::rms_norm_nd",
    dtypes(T = [f32, f64, customop::bf16, customop::f16]),
    vjp = rms_norm_nd_bwd
)]
#[cfg_attr(feature = "cuda", cuda(crate::cuda::rms_norm_nd))]
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
fn backward<T: Num>(
    x: &[T],
    r: impl Fn(usize, &[T]) -> C64,
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
            .fold(C64::real(0.0), |s, (a, b)| s.add(a.to_c().mul(b.to_c())))
            .scale(1.0 / cols as f64);
        let r3_dot = r.mul(r).mul(r).mul(dot);
        for ((o, v), g) in out.iter_mut().zip(row).zip(dy) {
            *o = T::from_c(r.mul(g.to_c()).sub(r3_dot.mul(v.to_c())));
        }
    }
}

/// The backward of `rms_norm_nd`, any rank: takes `x`, `eps` and the cotangent `d_y`.
#[custom_op(
    name = "example::rms_norm_nd_bwd",
    dtypes(T = [f32, f64, customop::bf16, customop::f16])
)]
#[cfg_attr(feature = "cuda", cuda(crate::cuda::rms_norm_nd_bwd))]
pub fn rms_norm_nd_bwd<T: Real>(
    x: TensorRef<'_, T>,
    d_y: TensorRef<'_, T>,
    #[attr] eps: f32,
    #[out(shape = x)] mut d_x: TensorMut<'_, T>,
) -> Result<(), OpError> {
    let (_, cols) = rms_norm_nd_bwd_shapes(x.dims(), d_y.dims())?;
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
/// `1 / sqrt(mean(x^2) + eps)`, of shape `x.shape[:-1]`; complex values too (JAX's example
/// takes them: `x * x`, the principal square root).
#[custom_op(
    name = "example::rms_norm_fwd",
    dtypes(T = [f32, f64, customop::bf16, customop::f16, Complex64, Complex128])
)]
pub fn rms_norm_fwd<T: Num>(
    x: TensorRef<'_, T>,
    #[attr] eps: f32,
    #[out(shape = x)] mut y: TensorMut<'_, T>,
    #[out(shape = [..x.dims(..-1)])] mut res: TensorMut<'_, T>,
) -> Result<(), OpError> {
    let (_, cols) = rows_cols(x.dims(), "rms_norm_fwd")?;
    let res = res.as_mut_slice();
    // Rows of no element (a last dimension of 0) have no chunk below: each scale is that of an
    // empty row.
    res.fill(T::from_c(inv_rms::<T>(&[], eps)));
    normalise(x.as_slice(), y.as_mut_slice(), cols, eps, |i, r| {
        res[i] = T::from_c(r);
    });
    Ok(())
}

/// The backward from the residual (JAX's `rms_norm_bwd(res, x, ct_y)`): `ct_x` from the per-row
/// scale `res` (shape `x.shape[:-1]`), `x` and the cotangent `ct_y`.
#[custom_op(
    name = "example::rms_norm_bwd",
    dtypes(T = [f32, f64, customop::bf16, customop::f16, Complex64, Complex128])
)]
pub fn rms_norm_bwd<T: Num>(
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
        |i, _| res[i].to_c(),
        ct_y.as_slice(),
        ct_x.as_mut_slice(),
        cols,
    );
    Ok(())
}
