//! Which inputs and outputs have a derivative: decided by their declared types, once, in Rust
//! (`f16`, `bf16`, `f32`, `f64`, or a type parameter that allows only those), and read by JAX
//! and torch from the manifest. Each op here has a derivative in `w` and none in another input
//! or output, which JAX and torch refuse by name when a derivative is asked through it:
//!
//! - `mulw`: `x` is a type parameter that also allows `i32`, so even at `f32` it has none;
//! - `wnorm`: `x` is complex;
//! - `fp8_affine`: `q` is an fp8 input and `r` an fp8 output.

use customop::F8E4M3FN;
use customop::prelude::*;

/// Refuses tensors of different shapes.
fn same_shape(op: &str, a: &[i64], b: &[i64]) -> Result<(), OpError> {
    if a == b {
        Ok(())
    } else {
        Err(OpError::invalid_argument(format!(
            "{op} takes tensors of one shape, got {a:?} and {b:?}"
        )))
    }
}

/// `y = x * w` elementwise, `x` of `f32` or `i32`, `w` and `y` of `f32`. Its gradient is in `w`
/// only: `x`'s type parameter allows `i32`, so `x` has none, at any type.
#[custom_op(
    name = "example::mulw",
    dtypes(T = [f32, i32]),
    vjp = mulw_bwd,
    jvp = mulw_jvp
)]
pub fn mulw<T: customop::Element + Into<f64>>(
    x: TensorRef<'_, T>,
    w: TensorRef<'_, f32>,
    #[out(shape = w)] mut y: TensorMut<'_, f32>,
) -> Result<(), OpError> {
    same_shape("mulw", x.dims(), w.dims())?;
    for ((o, &a), &b) in y
        .as_mut_slice()
        .iter_mut()
        .zip(x.as_slice())
        .zip(w.as_slice())
    {
        *o = (a.into() * f64::from(b)) as f32;
    }
    Ok(())
}

/// The backward of `mulw`: `d_w = d_y * x`.
#[custom_op(name = "example::mulw_bwd", dtypes(T = [f32, i32]))]
pub fn mulw_bwd<T: customop::Element + Into<f64>>(
    x: TensorRef<'_, T>,
    d_y: TensorRef<'_, f32>,
    #[out(shape = d_y)] d_w: TensorMut<'_, f32>,
) -> Result<(), OpError> {
    mulw(x, d_y, d_w)
}

/// The tangent op of `mulw`: `t_y = x * t_w`.
#[custom_op(name = "example::mulw_jvp", dtypes(T = [f32, i32]))]
pub fn mulw_jvp<T: customop::Element + Into<f64>>(
    x: TensorRef<'_, T>,
    t_w: TensorRef<'_, f32>,
    #[out(shape = t_w)] t_y: TensorMut<'_, f32>,
) -> Result<(), OpError> {
    mulw(x, t_w, t_y)
}

/// `y = |x| * w` elementwise, `x` complex, `w` and `y` `f32`: a gradient in `w` only.
#[custom_op(name = "example::wnorm", vjp = wnorm_bwd, jvp = wnorm_jvp)]
pub fn wnorm(
    x: TensorRef<'_, customop::Complex64>,
    w: TensorRef<'_, f32>,
    #[out(shape = w)] mut y: TensorMut<'_, f32>,
) -> Result<(), OpError> {
    same_shape("wnorm", x.dims(), w.dims())?;
    for ((o, a), &b) in y
        .as_mut_slice()
        .iter_mut()
        .zip(x.as_slice())
        .zip(w.as_slice())
    {
        *o = a.norm() * b;
    }
    Ok(())
}

/// The backward of `wnorm`: `d_w = d_y * |x|`.
#[custom_op(name = "example::wnorm_bwd")]
pub fn wnorm_bwd(
    x: TensorRef<'_, customop::Complex64>,
    d_y: TensorRef<'_, f32>,
    #[out(shape = d_y)] d_w: TensorMut<'_, f32>,
) -> Result<(), OpError> {
    wnorm(x, d_y, d_w)
}

/// The tangent op of `wnorm`: `t_y = |x| * t_w`.
#[custom_op(name = "example::wnorm_jvp")]
pub fn wnorm_jvp(
    x: TensorRef<'_, customop::Complex64>,
    t_w: TensorRef<'_, f32>,
    #[out(shape = t_w)] t_y: TensorMut<'_, f32>,
) -> Result<(), OpError> {
    wnorm(x, t_w, t_y)
}

/// `y = f32(q) * w` elementwise and `r = fp8(y)` (f8E4M3FN, rounded to nearest, ties to even):
/// a gradient in `w` through `y` only; `q` and `r` are fp8, which has no derivative.
#[custom_op(name = "example::fp8_affine", vjp = fp8_affine_bwd, jvp = fp8_affine_jvp)]
pub fn fp8_affine(
    q: TensorRef<'_, F8E4M3FN>,
    w: TensorRef<'_, f32>,
    #[out(shape = w)] mut y: TensorMut<'_, f32>,
    #[out(shape = w)] mut r: TensorMut<'_, F8E4M3FN>,
) -> Result<(), OpError> {
    same_shape("fp8_affine", q.dims(), w.dims())?;
    let ins = q.as_slice().iter().zip(w.as_slice());
    for ((y, r), (a, &b)) in y.as_mut_slice().iter_mut().zip(r.as_mut_slice()).zip(ins) {
        *y = a.to_f32() * b;
        *r = F8E4M3FN::from_f32(*y);
    }
    Ok(())
}

/// `f32(q) * v`, elementwise, into `out`.
fn scale_by_fp8(q: &[F8E4M3FN], v: &[f32], out: &mut [f32]) {
    for ((o, a), &b) in out.iter_mut().zip(q).zip(v) {
        *o = a.to_f32() * b;
    }
}

/// The backward of `fp8_affine`: `d_w = d_y * f32(q)` (it takes no cotangent of `r`).
#[custom_op(name = "example::fp8_affine_bwd")]
pub fn fp8_affine_bwd(
    q: TensorRef<'_, F8E4M3FN>,
    d_y: TensorRef<'_, f32>,
    #[out(shape = d_y)] mut d_w: TensorMut<'_, f32>,
) -> Result<(), OpError> {
    same_shape("fp8_affine_bwd", q.dims(), d_y.dims())?;
    scale_by_fp8(q.as_slice(), d_y.as_slice(), d_w.as_mut_slice());
    Ok(())
}

/// The tangent op of `fp8_affine`: `t_y = f32(q) * t_w` (no tangent of `r`).
#[custom_op(name = "example::fp8_affine_jvp")]
pub fn fp8_affine_jvp(
    q: TensorRef<'_, F8E4M3FN>,
    t_w: TensorRef<'_, f32>,
    #[out(shape = t_w)] mut t_y: TensorMut<'_, f32>,
) -> Result<(), OpError> {
    same_shape("fp8_affine_jvp", q.dims(), t_w.dims())?;
    scale_by_fp8(q.as_slice(), t_w.as_slice(), t_y.as_mut_slice());
    Ok(())
}
