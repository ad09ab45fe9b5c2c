//! Ops whose backward ops declare backwards of their own, so that second derivatives (double
//! backward, Hessians in reverse mode, grad of grad) compose from ops written here:
//! `rms_norm_t_bwd`'s backward (`rms_norm_t_bwd_bwd`), and `softplus`, elementwise, with its
//! first and second backward. Tangent ops (`jvp = ...`) give forward mode, and forward over
//! reverse (`jacfwd(jacrev(f))`, `hessian`): `rms_norm_t_jvp` and `rms_norm_t_bwd_jvp`,
//! `softplus_jvp` and `softplus_bwd_jvp`.

use customop::prelude::*;

use crate::Real;

/// The backward of `rms_norm_t_bwd`. Per row, with `n` columns, `r = 1 / sqrt(mean(x^2) + eps)`,
/// `g` the row of `d_y` and `u` that of `d_d_x` (the cotangent of `rms_norm_t_bwd`'s output
/// `d_x = r g - r^3 x (x.g) / n`):
/// - `d_d_y = r u - r^3 (x.u) x / n`,
/// - `d_x = 3 r^5 (x.u)(x.g) x / n^2 - r^3 ((u.g) x + (x.g) u + (x.u) g) / n`.
#[custom_op(
    name = "example::rms_norm_t_bwd_bwd",
    dtypes(T = [f32, f64, customop::bf16, customop::f16]),
    partition(x = [rows, _], d_y = [rows, _], d_d_x = [rows, _])
)]
pub fn rms_norm_t_bwd_bwd<T: Real>(
    x: TensorRef<'_, T, 2>,
    d_y: TensorRef<'_, T, 2>,
    d_d_x: TensorRef<'_, T, 2>,
    #[attr] eps: f32,
    #[out(shape = x)] mut d_x: TensorMut<'_, T>,
    #[out(shape = d_y)] mut d_d_y: TensorMut<'_, T>,
) -> Result<(), OpError> {
    one_shape(&[
        ("x", x.dims()),
        ("d_y", d_y.dims()),
        ("d_d_x", d_d_x.dims()),
    ])?;
    let cols = x.dim(1).max(1);
    let n = cols as f64;
    let rows = x
        .as_slice()
        .chunks(cols)
        .zip(d_y.as_slice().chunks(cols))
        .zip(d_d_x.as_slice().chunks(cols));
    let outs = d_x
        .as_mut_slice()
        .chunks_mut(cols)
        .zip(d_d_y.as_mut_slice().chunks_mut(cols));
    for (((x, g), u), (dx, ddy)) in rows.zip(outs) {
        let (r, r3, r5) = inv_rms_powers(x, n, eps);
        let (xg, xu, ug) = (dot(x, g), dot(x, u), dot(u, g));
        for i in 0..x.len() {
            let (xi, gi, ui) = (x[i].to_f64(), g[i].to_f64(), u[i].to_f64());
            ddy[i] = T::from_f64(r * ui - r3 * xu * xi / n);
            dx[i] = T::from_f64(
                3.0 * r5 * xu * xg * xi / (n * n) - r3 * (ug * xi + xg * ui + xu * gi) / n,
            );
        }
    }
    Ok(())
}

/// `a . b`, in `f64`.
fn dot<T: Real>(a: &[T], b: &[T]) -> f64 {
    a.iter().zip(b).map(|(p, q)| p.to_f64() * q.to_f64()).sum()
}

/// A row's `r = 1 / sqrt(mean(x^2) + eps)` (`n` columns), and `r^3` and `r^5`.
fn inv_rms_powers<T: Real>(x: &[T], n: f64, eps: f32) -> (f64, f64, f64) {
    let r = 1.0 / (dot(x, x) / n + f64::from(eps)).sqrt();
    (r, r * r * r, r * r * r * r * r)
}

/// Refuses tensors that must have one shape but do not, naming each one's.
fn one_shape(tensors: &[(&str, &[i64])]) -> Result<(), OpError> {
    let Some((_, first)) = tensors.first() else {
        return Ok(());
    };
    if tensors.iter().all(|(_, d)| d == first) {
        return Ok(());
    }
    let each: Vec<String> = tensors.iter().map(|(n, d)| format!("{n} {d:?}")).collect();
    Err(OpError::invalid_argument(format!(
        "{} must have one shape",
        each.join(", ")
    )))
}

/// The logistic function, `1 / (1 + e^-v)`, without overflow for large `|v|`.
fn sigmoid(v: f64) -> f64 {
    if v >= 0.0 {
        1.0 / (1.0 + (-v).exp())
    } else {
        let e = v.exp();
        e / (1.0 + e)
    }
}

/// `y = ln(1 + e^x)` elementwise, any rank, computed as `max(x, 0) + ln(1 + e^-|x|)` (no
/// overflow). Its gradient is `softplus_bwd`, whose own gradient is `softplus_bwd_bwd`.
#[custom_op(
    name = "example::softplus",
    dtypes(T = [f32, f64]),
    vjp = softplus_bwd,
    jvp = softplus_jvp
)]
pub fn softplus<T: Real>(
    x: TensorRef<'_, T>,
    #[out(shape = x)] mut y: TensorMut<'_, T>,
) -> Result<(), OpError> {
    for (o, v) in y.as_mut_slice().iter_mut().zip(x.as_slice()) {
        let v = v.to_f64();
        *o = T::from_f64(v.max(0.0) + (-v.abs()).exp().ln_1p());
    }
    Ok(())
}

/// The backward of `softplus`: `d_x = d_y * sigmoid(x)`.
#[custom_op(
    name = "example::softplus_bwd",
    dtypes(T = [f32, f64]),
    vjp = softplus_bwd_bwd,
    jvp = softplus_bwd_jvp
)]
pub fn softplus_bwd<T: Real>(
    x: TensorRef<'_, T>,
    d_y: TensorRef<'_, T>,
    #[out(shape = x)] mut d_x: TensorMut<'_, T>,
) -> Result<(), OpError> {
    one_shape(&[("x", x.dims()), ("d_y", d_y.dims())])?;
    for ((o, v), g) in d_x
        .as_mut_slice()
        .iter_mut()
        .zip(x.as_slice())
        .zip(d_y.as_slice())
    {
        *o = T::from_f64(g.to_f64() * sigmoid(v.to_f64()));
    }
    Ok(())
}

/// The backward of `softplus_bwd`, with `s = sigmoid(x)` and `u = d_d_x` the cotangent of its
/// output: `d_x = u * d_y * s * (1 - s)`, `d_d_y = u * s`.
#[custom_op(name = "example::softplus_bwd_bwd", dtypes(T = [f32, f64]))]
pub fn softplus_bwd_bwd<T: Real>(
    x: TensorRef<'_, T>,
    d_y: TensorRef<'_, T>,
    d_d_x: TensorRef<'_, T>,
    #[out(shape = x)] mut d_x: TensorMut<'_, T>,
    #[out(shape = d_y)] mut d_d_y: TensorMut<'_, T>,
) -> Result<(), OpError> {
    one_shape(&[
        ("x", x.dims()),
        ("d_y", d_y.dims()),
        ("d_d_x", d_d_x.dims()),
    ])?;
    let (x, g, u) = (x.as_slice(), d_y.as_slice(), d_d_x.as_slice());
    let (dx, ddy) = (d_x.as_mut_slice(), d_d_y.as_mut_slice());
    for i in 0..x.len() {
        let s = sigmoid(x[i].to_f64());
        let (gi, ui) = (g[i].to_f64(), u[i].to_f64());
        dx[i] = T::from_f64(ui * gi * s * (1.0 - s));
        ddy[i] = T::from_f64(ui * s);
    }
    Ok(())
}

/// The tangent op of `softplus`: `t_y = t_x * sigmoid(x)`.
#[custom_op(name = "example::softplus_jvp", dtypes(T = [f32, f64]))]
pub fn softplus_jvp<T: Real>(
    x: TensorRef<'_, T>,
    t_x: TensorRef<'_, T>,
    #[out(shape = x)] t_y: TensorMut<'_, T>,
) -> Result<(), OpError> {
    // The same arithmetic as softplus_bwd's: d_y * sigmoid(x), with t_x for d_y.
    softplus_bwd(x, t_x, t_y)
}

/// The tangent op of `softplus_bwd` (`d_x = d_y * sigmoid(x)`), with `s = sigmoid(x)`:
/// `t_d_x = t_d_y * s + d_y * s * (1 - s) * t_x`.
#[custom_op(name = "example::softplus_bwd_jvp", dtypes(T = [f32, f64]))]
pub fn softplus_bwd_jvp<T: Real>(
    x: TensorRef<'_, T>,
    d_y: TensorRef<'_, T>,
    t_x: TensorRef<'_, T>,
    t_d_y: TensorRef<'_, T>,
    #[out(shape = x)] mut t_d_x: TensorMut<'_, T>,
) -> Result<(), OpError> {
    one_shape(&[
        ("x", x.dims()),
        ("d_y", d_y.dims()),
        ("t_x", t_x.dims()),
        ("t_d_y", t_d_y.dims()),
    ])?;
    let (x, g, tx, tg) = (
        x.as_slice(),
        d_y.as_slice(),
        t_x.as_slice(),
        t_d_y.as_slice(),
    );
    for (i, o) in t_d_x.as_mut_slice().iter_mut().enumerate() {
        let s = sigmoid(x[i].to_f64());
        *o = T::from_f64(tg[i].to_f64() * s + g[i].to_f64() * s * (1.0 - s) * tx[i].to_f64());
    }
    Ok(())
}

/// The tangent op of `rms_norm_t`. Its Jacobian, `r I - r^3 x x^T / n` per row, is symmetric:
/// the tangent is `rms_norm_t_bwd`'s arithmetic with `t_x` for `d_y`.
#[custom_op(
    name = "example::rms_norm_t_jvp",
    dtypes(T = [f32, f64, customop::bf16, customop::f16]),
    partition(x = [rows, _], t_x = [rows, _])
)]
pub fn rms_norm_t_jvp<T: Real>(
    x: TensorRef<'_, T, 2>,
    t_x: TensorRef<'_, T, 2>,
    #[attr] eps: f32,
    #[out(shape = x)] t_y: TensorMut<'_, T>,
) -> Result<(), OpError> {
    crate::rms_norm_t_bwd(x, t_x, eps, t_y)
}

/// The tangent op of `rms_norm_t_bwd` (`d_x = r g - r^3 x (x.g) / n` per row, `g = d_y`): with
/// `t = t_x`, `c = (x.g) / n`, `t_d_x = rms_norm_t_bwd(x, t_d_y)
/// - r^3 ((x.t) g + (t.g) x) / n + 3 r^5 c (x.t) x / n - r^3 c t`.
#[custom_op(
    name = "example::rms_norm_t_bwd_jvp",
    dtypes(T = [f32, f64, customop::bf16, customop::f16]),
    partition(x = [rows, _], d_y = [rows, _], t_x = [rows, _], t_d_y = [rows, _])
)]
pub fn rms_norm_t_bwd_jvp<T: Real>(
    x: TensorRef<'_, T, 2>,
    d_y: TensorRef<'_, T, 2>,
    t_x: TensorRef<'_, T, 2>,
    t_d_y: TensorRef<'_, T, 2>,
    #[attr] eps: f32,
    #[out(shape = x)] mut t_d_x: TensorMut<'_, T>,
) -> Result<(), OpError> {
    one_shape(&[
        ("x", x.dims()),
        ("d_y", d_y.dims()),
        ("t_x", t_x.dims()),
        ("t_d_y", t_d_y.dims()),
    ])?;
    let cols = x.dim(1).max(1);
    let n = cols as f64;
    let rows = x
        .as_slice()
        .chunks(cols)
        .zip(d_y.as_slice().chunks(cols))
        .zip(
            t_x.as_slice()
                .chunks(cols)
                .zip(t_d_y.as_slice().chunks(cols)),
        );
    for (((x, g), (t, tg)), out) in rows.zip(t_d_x.as_mut_slice().chunks_mut(cols)) {
        let (r, r3, r5) = inv_rms_powers(x, n, eps);
        let (c, c_tg, xt, tgv) = (dot(x, g) / n, dot(x, tg) / n, dot(x, t), dot(t, g));
        for i in 0..x.len() {
            let (xi, gi, ti, tgi) = (x[i].to_f64(), g[i].to_f64(), t[i].to_f64(), tg[i].to_f64());
            let linear = r * tgi - r3 * xi * c_tg;
            let curvature =
                -r3 * (xt * gi + tgv * xi) / n + 3.0 * r5 * c * xt * xi / n - r3 * c * ti;
            out[i] = T::from_f64(linear + curvature);
        }
    }
    Ok(())
}
