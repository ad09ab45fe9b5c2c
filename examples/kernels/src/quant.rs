//! Quantized kernels: matrix products with 4-bit weights, packed two a byte along `N`, and a
//! scale per group of rows, as LLM inference on CPU keeps them, with the column blocks spread
//! over the pool (`customop::parallel`), and the quantizers that make such weights. No
//! full-size copy of the weights is ever made: each block of a weight row is unpacked into a
//! small buffer next to its use.
//!
//! - `i4` with one `f32` scale per `group` rows (`matmul_i4`, `quantize_i4`);
//! - MXFP4 (the OCP microscaling format): `f4E2M1FN` elements with one `f8E8M0FNU` scale, a
//!   power of two, per 32 rows (`matmul_mxfp4`, `dequantize_mxfp4`, `quantize_mxfp4`).

use customop::prelude::*;
use customop::{F4E2M1FN, F8E8M0FNU, I4, PackedMut, PackedRef, U4, bf16};
use std::borrow::Cow;
pub use tiles::ScaleData;
use tiles::{Codes, Scales, block_matmul};

mod tiles;

/// The rows an MXFP4 scale covers.
const MX_BLOCK: usize = 32;

/// The activation and scale types of `matmul_i4`: `f32` (used as it is) and `bf16` (widened
/// once per call; the products are accumulated in `f32` either way).
pub trait Act: customop::types::Element {
    /// The values as `f32`s.
    fn f32s(v: &[Self]) -> Cow<'_, [f32]>;
    /// Runs `f` on an `f32` view of `out` (`out` itself for `f32`), then stores it.
    fn with_f32s(out: &mut [Self], f: impl FnOnce(&mut [f32]));
    /// The scales as they are (each widened where it is used).
    fn scales(v: &[Self]) -> ScaleData<'_>;
}

impl Act for f32 {
    fn f32s(v: &[f32]) -> Cow<'_, [f32]> {
        Cow::Borrowed(v)
    }
    fn with_f32s(out: &mut [f32], f: impl FnOnce(&mut [f32])) {
        f(out)
    }
    fn scales(v: &[f32]) -> ScaleData<'_> {
        ScaleData::F32(v)
    }
}

impl Act for bf16 {
    fn f32s(v: &[bf16]) -> Cow<'_, [f32]> {
        Cow::Owned(v.iter().map(|b| b.to_f32()).collect())
    }
    fn with_f32s(out: &mut [bf16], f: impl FnOnce(&mut [f32])) {
        let mut wide = vec![0.0f32; out.len()];
        f(&mut wide);
        for (o, w) in out.iter_mut().zip(wide) {
            *o = bf16::from_f32(w);
        }
    }
    fn scales(v: &[bf16]) -> ScaleData<'_> {
        ScaleData::Bf16(v)
    }
}

/// Refuses shapes that do not fit `x: [M, K]`, `w: [K, N]` with `N` even, `scales: [K / group,
/// N]`; returns `(M, K, N, group)`.
fn product_shape(
    op: &str,
    x: &[i64],
    w: &[i64],
    scales: &[i64],
    group: Option<usize>,
) -> Result<(usize, usize, usize, usize), OpError> {
    let d = |s: &[i64], i: usize| usize::try_from(s[i]).unwrap_or(0);
    let (m, k, n, groups) = (d(x, 0), d(x, 1), d(w, 1), d(scales, 0));
    let group = group.unwrap_or(k.checked_div(groups).unwrap_or(0));
    if d(w, 0) != k
        || d(scales, 1) != n
        || group == 0
        || groups.checked_mul(group) != Some(k)
        || n % 2 != 0
    {
        return Err(OpError::invalid_argument(format!(
            "{op}: x is {x:?}, w {w:?}, scales {scales:?}: w must be [K, N] with N even, scales \
             [K / group, N]{}",
            if op.contains("mxfp4") {
                " (group 32)"
            } else {
                ""
            }
        )));
    }
    Ok((m, k, n, group))
}

/// `y = x · dequant(w)`, `x: [M, K]`, `w: [K, N]` in `i4` (two a byte along `N`),
/// `scales: [K / group, N]`: `dequant(w)[k, n] = w[k, n] · scales[k / group, n]`, the group
/// size `K / scales.dim(0)`; `x`, the scales and `y` `f32` or `bf16`, accumulated in `f32`.
#[custom_op(
    name = "example::matmul_i4",
    dtypes(T = [f32, bf16]),
    vjp = matmul_i4_bwd
)]
pub fn matmul_i4<T: Act>(
    x: TensorRef<'_, T, 2>,
    w: PackedRef<'_, I4, 2>,
    scales: TensorRef<'_, T, 2>,
    #[out(shape = [x.dim(0), w.dim(1)])] mut y: TensorMut<'_, T, 2>,
) -> Result<(), OpError> {
    let shape = product_shape("matmul_i4", x.dims(), w.dims(), scales.dims(), None)?;
    let xs = T::f32s(x.as_slice());
    let scales = Scales {
        scales: T::scales(scales.as_slice()),
        zeros: None,
    };
    T::with_f32s(y.as_mut_slice(), |out| {
        block_matmul(&xs, w.bytes(), shape, &I4_CODES, scales, out)
    });
    Ok(())
}

/// The value of each `i4` code (two's complement).
const I4_CODES: Codes = [
    0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, -8.0, -7.0, -6.0, -5.0, -4.0, -3.0, -2.0, -1.0,
];
/// The value of each `ui4` code.
const U4_CODES: Codes = [
    0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0,
];

/// The value of each `f4E2M1FN` code.
const F4: Codes = [
    0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0,
];

/// `y = x · dequant(w)` with zero points, as GPTQ- and AWQ-style checkpoints keep weights:
/// `w: [K, N]` in `ui4`, `dequant(w)[k, n] = (w[k, n] − zeros[g, n]) · scales[g, n]`, `g = k /
/// group`, `scales` and `zeros` `[K / group, N]`. Computed as the product with `w · scales`
/// (the `i4` kernel's loop, on unsigned nibbles) minus, per group, the sum of `x`'s entries over
/// the group times `zeros · scales`: the zero points cost one small product, not a pass over
/// the weights.
#[custom_op(name = "example::matmul_u4_zp", dtypes(T = [f32, bf16]))]
pub fn matmul_u4_zp<T: Act>(
    x: TensorRef<'_, T, 2>,
    w: PackedRef<'_, U4, 2>,
    scales: TensorRef<'_, T, 2>,
    zeros: TensorRef<'_, T, 2>,
    #[out(shape = [x.dim(0), w.dim(1)])] mut y: TensorMut<'_, T, 2>,
) -> Result<(), OpError> {
    let shape = product_shape("matmul_u4_zp", x.dims(), w.dims(), scales.dims(), None)?;
    if zeros.dims() != scales.dims() {
        return Err(OpError::invalid_argument(format!(
            "matmul_u4_zp: zeros are {:?}, the scales {:?}",
            zeros.dims(),
            scales.dims()
        )));
    }
    let xs = T::f32s(x.as_slice());
    let (s, z) = (T::f32s(scales.as_slice()), T::f32s(zeros.as_slice()));
    let zs: Vec<f32> = z.iter().zip(s.iter()).map(|(z, s)| z * s).collect();
    let scales = Scales {
        scales: T::scales(scales.as_slice()),
        zeros: Some(&zs),
    };
    T::with_f32s(y.as_mut_slice(), |out| {
        block_matmul(&xs, w.bytes(), shape, &U4_CODES, scales, out)
    });
    Ok(())
}

/// The backward of `matmul_i4`: with `W = dequant(w)`, `d_x = d_y · Wᵀ` and
/// `d_scales[g, n] = Σ_{k in group g} w[k, n] · Σ_m x[m, k] · d_y[m, n]` (the weights, integers,
/// have no gradient). Straightforward loops: training through quantized weights is rare, and
/// this is the reference a faster one would be checked against.
#[custom_op(name = "example::matmul_i4_bwd", dtypes(T = [f32, bf16]))]
pub fn matmul_i4_bwd<T: Act>(
    x: TensorRef<'_, T, 2>,
    w: PackedRef<'_, I4, 2>,
    scales: TensorRef<'_, T, 2>,
    d_y: TensorRef<'_, T, 2>,
    #[out(shape = x)] mut d_x: TensorMut<'_, T, 2>,
    #[out(shape = scales)] mut d_scales: TensorMut<'_, T, 2>,
) -> Result<(), OpError> {
    let (m, k, n, group) = product_shape("matmul_i4_bwd", x.dims(), w.dims(), scales.dims(), None)?;
    if d_y.dims() != [m as i64, n as i64] {
        return Err(OpError::invalid_argument(format!(
            "matmul_i4_bwd: d_y is {:?}, the product [{m}, {n}]",
            d_y.dims()
        )));
    }
    let (xs, s, dy) = (
        T::f32s(x.as_slice()),
        T::f32s(scales.as_slice()),
        T::f32s(d_y.as_slice()),
    );
    let mut dx = vec![0.0f32; m * k];
    let mut ds = vec![0.0f32; s.len()];
    let mut row = vec![0.0f32; n];
    for kk in 0..k {
        let g = kk / group;
        w.unpack_into(kk * n, &mut row, |q| f32::from(q.get()));
        let sg = &s[g * n..(g + 1) * n];
        for mm in 0..m {
            let dyr = &dy[mm * n..(mm + 1) * n];
            let xv = xs[mm * k + kk];
            let mut acc = 0.0f32;
            for (((d, &q), &sc), dsj) in dyr
                .iter()
                .zip(&row)
                .zip(sg)
                .zip(&mut ds[g * n..(g + 1) * n])
            {
                acc += d * q * sc;
                *dsj += q * xv * d;
            }
            dx[mm * k + kk] = acc;
        }
    }
    T::with_f32s(d_x.as_mut_slice(), |out| out.copy_from_slice(&dx));
    T::with_f32s(d_scales.as_mut_slice(), |out| out.copy_from_slice(&ds));
    Ok(())
}

/// `y = x · dequant(w)` for MXFP4 weights: `w: [K, N]` in `f4E2M1FN`, `scales: [K / 32, N]` in
/// `f8E8M0FNU`: `dequant(w)[k, n] = w[k, n] · 2^(scales[k / 32, n] − 127)`.
#[custom_op(name = "example::matmul_mxfp4")]
pub fn matmul_mxfp4(
    x: TensorRef<'_, f32, 2>,
    w: PackedRef<'_, F4E2M1FN, 2>,
    scales: TensorRef<'_, F8E8M0FNU, 2>,
    #[out(shape = [x.dim(0), w.dim(1)])] mut y: TensorMut<'_, f32, 2>,
) -> Result<(), OpError> {
    let dims = (x.dims(), w.dims(), scales.dims());
    let shape = product_shape("matmul_mxfp4", dims.0, dims.1, dims.2, Some(MX_BLOCK))?;
    // The scales as they are: each applied as a power of two where it is used.
    let scales = Scales {
        scales: ScaleData::E8m0(scales.as_slice()),
        zeros: None,
    };
    block_matmul(
        x.as_slice(),
        w.bytes(),
        shape,
        &F4,
        scales,
        y.as_mut_slice(),
    );
    Ok(())
}

/// `y = dequant(w)` for MXFP4 weights (see `matmul_mxfp4`): each value exactly (a power-of-two
/// scale times a 4-bit float is an f32), NaN where the scale is.
#[custom_op(name = "example::dequantize_mxfp4")]
pub fn dequantize_mxfp4(
    w: PackedRef<'_, F4E2M1FN, 2>,
    scales: TensorRef<'_, F8E8M0FNU, 2>,
    #[out(shape = w)] mut y: TensorMut<'_, f32, 2>,
) -> Result<(), OpError> {
    let (k, n) = (w.dim(0), w.dim(1));
    if scales.dim(1) != n || scales.dim(0).checked_mul(MX_BLOCK) != Some(k) {
        return Err(OpError::invalid_argument(format!(
            "dequantize_mxfp4: w is {:?}, so scales must be [{}, {n}]; got {:?}",
            w.dims(),
            k / MX_BLOCK,
            scales.dims()
        )));
    }
    let s = scales.as_slice();
    for (i, (o, v)) in y.as_mut_slice().iter_mut().zip(w.iter()).enumerate() {
        let (row, col) = (i / n.max(1), i % n.max(1));
        // Exact, also where XLA flushes denormals (a 2^-127 scale is an f32 subnormal).
        *o = s[(row / MX_BLOCK) * n + col].apply(v.to_f32());
    }
    Ok(())
}

/// The weights `w: [K, N]` quantized to `i4` with one `f32` scale per `group` rows of each
/// column: `scale = max|w| / 7` over the group (1 for an all-zero group), `q = w / scale`
/// rounded to nearest, ties to even (in `[-7, 7]`).
#[custom_op(name = "example::quantize_i4")]
pub fn quantize_i4(
    w: TensorRef<'_, f32, 2>,
    #[attr] group: i64,
    #[out(shape = w)] mut q: PackedMut<'_, I4, 2>,
    #[out(shape = [w.dim(0) / group, w.dim(1)])] mut scales: TensorMut<'_, f32, 2>,
) -> Result<(), OpError> {
    let (k, n) = (w.dim(0), w.dim(1));
    let g = usize::try_from(group).unwrap_or(0);
    if g == 0 || k % g != 0 {
        return Err(OpError::invalid_argument(format!(
            "quantize_i4: group {group} does not divide the {k} rows"
        )));
    }
    let ws = w.as_slice();
    if let Some(bad) = ws.iter().position(|v| !v.is_finite()) {
        return Err(OpError::invalid_argument(format!(
            "quantize_i4: w[{bad}] is {}: only finite weights have a scale",
            ws[bad]
        )));
    }
    let s = scales.as_mut_slice();
    for (gi, srow) in s.chunks_exact_mut(n.max(1)).enumerate() {
        for (j, sc) in srow.iter_mut().enumerate() {
            let max = (gi * g..(gi + 1) * g).fold(0f32, |a, r| a.max(ws[r * n + j].abs()));
            *sc = if max > 0.0 { max / 7.0 } else { 1.0 };
        }
    }
    let s = &*s;
    q.fill_with(|i| {
        let (r, j) = (i / n, i % n);
        let v = (ws[i] / s[(r / g) * n + j]).round_ties_even();
        I4::wrapping(v.clamp(-8.0, 7.0) as i64)
    });
    Ok(())
}

/// The weights `w: [K, N]` quantized to MXFP4 (OCP MX v1.0): per 32 rows of each column, the
/// scale `2^(floor(log2(max|w|)) − 2)` (2 is `f4E2M1FN`'s largest exponent; `2^−127` for an
/// all-zero block) as `f8E8M0FNU`, and each value divided by it and rounded to `f4E2M1FN`
/// (nearest, ties to even, saturating at ±6).
#[custom_op(name = "example::quantize_mxfp4")]
pub fn quantize_mxfp4(
    w: TensorRef<'_, f32, 2>,
    #[out(shape = w)] mut q: PackedMut<'_, F4E2M1FN, 2>,
    #[out(shape = [w.dim(0) / 32, w.dim(1)])] mut scales: TensorMut<'_, F8E8M0FNU, 2>,
) -> Result<(), OpError> {
    let (k, n) = (w.dim(0), w.dim(1));
    if k % MX_BLOCK != 0 {
        return Err(OpError::invalid_argument(format!(
            "quantize_mxfp4: {k} rows are not blocks of {MX_BLOCK}"
        )));
    }
    let ws = w.as_slice();
    if let Some(bad) = ws.iter().position(|v| !v.is_finite()) {
        return Err(OpError::invalid_argument(format!(
            "quantize_mxfp4: w[{bad}] is {}: only finite weights have a scale",
            ws[bad]
        )));
    }
    let s = scales.as_mut_slice();
    for (b, srow) in s.chunks_exact_mut(n.max(1)).enumerate() {
        for (j, sc) in srow.iter_mut().enumerate() {
            let rows = b * MX_BLOCK..(b + 1) * MX_BLOCK;
            let max = rows.fold(0f32, |a, r| a.max(ws[r * n + j].abs()));
            // floor(log2(max)) of a normal f32 is its unbiased exponent; 0 for a zero block.
            let e = if max.is_normal() {
                ((max.to_bits() >> 23) & 0xFF) as i32 - 127
            } else {
                -125
            };
            *sc = F8E8M0FNU::pow2((e - 2).clamp(-127, 127)).unwrap_or(F8E8M0FNU::NAN);
        }
    }
    // Divided by a scale 2^k as multiplied by 2^-k, a normal f32 for every scale made here
    // (k <= 125), exact: a division by 2^-127, an f32 subnormal, would read it as 0 under
    // XLA's flushed denormals.
    let inverse: Vec<F8E8M0FNU> = s
        .iter()
        .map(|c| F8E8M0FNU::from_bits(254u8.saturating_sub(c.to_bits())))
        .collect();
    q.fill_with(|i| {
        let (r, j) = (i / n, i % n);
        F4E2M1FN::from_f32(inverse[(r / MX_BLOCK) * n + j].apply(ws[i]))
    });
    Ok(())
}
