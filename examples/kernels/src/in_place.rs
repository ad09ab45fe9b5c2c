//! Tensors updated in place (`#[inout]`): an input and a result in one buffer, aliased in the
//! program (`output_operand_aliases`), so that a donated buffer under `jax.jit` is updated
//! without a copy. The kernel sees a `TensorMut` that holds the input's values.

use customop::prelude::*;

/// `x *= factor`, in place.
#[custom_op(name = "example::scale_in_place")]
pub fn scale_in_place(
    #[inout] mut x: TensorMut<'_, f32>,
    #[attr] factor: f32,
) -> Result<(), OpError> {
    for v in x.as_mut_slice() {
        *v *= factor;
    }
    Ok(())
}

/// Row `at` of a cache (`[rows, width]`) overwritten with `row`, in place: the one-token write
/// of a KV cache. `at` outside the cache is the call's error, and the cache is left as it was.
#[custom_op(name = "example::cache_write")]
pub fn cache_write(
    #[inout] mut cache: TensorMut<'_, f32, 2>,
    row: TensorRef<'_, f32, 1>,
    #[attr] at: i64,
) -> Result<(), OpError> {
    let (rows, width) = (cache.dim(0), cache.dim(1));
    if row.len() != width {
        return Err(OpError::invalid_argument(format!(
            "cache_write: the row has {} elements, the cache's rows {width}",
            row.len()
        )));
    }
    let r = usize::try_from(at)
        .ok()
        .filter(|&r| r < rows)
        .ok_or_else(|| {
            OpError::invalid_argument(format!("cache_write: row {at} is outside 0..{rows}"))
        })?;
    cache.as_mut_slice()[r * width..(r + 1) * width].copy_from_slice(row.as_slice());
    Ok(())
}

/// pytorch/extension-cpp's `myadd_out(Tensor a, Tensor b, Tensor(a!) out) -> ()`: `out = a + b`,
/// written into `out`, which is updated in place and not returned. Like every op that updates a
/// tensor in place, it has no derivative: torch refuses a call whose inputs require grad (as its
/// own `out=` functions do), JAX a gradient through it.
#[custom_op(name = "example::myadd_out")]
#[cfg_attr(feature = "cuda", cuda(crate::cuda::myadd_out))]
pub fn myadd_out(
    a: TensorRef<'_, f32>,
    b: TensorRef<'_, f32>,
    #[inout] mut out: TensorMut<'_, f32>,
) -> Result<(), OpError> {
    myadd_out_shapes(a.dims(), b.dims(), out.dims())?;
    for ((o, &x), &y) in out
        .as_mut_slice()
        .iter_mut()
        .zip(a.as_slice())
        .zip(b.as_slice())
    {
        *o = x + y;
    }
    Ok(())
}

/// `myadd_out`'s rule, on the CPU and the GPU: `a`, `b` and `out` of one shape.
pub(crate) fn myadd_out_shapes(a: &[i64], b: &[i64], out: &[i64]) -> Result<(), OpError> {
    if a != b || a != out {
        return Err(OpError::invalid_argument(format!(
            "myadd_out: a is {a:?}, b {b:?}, out {out:?}: all of one shape"
        )));
    }
    Ok(())
}

/// A histogram over `[lo, hi)` accumulated in place, `counts[bin(v)] += 1` for each value of
/// `x` (values outside are not counted), and `total` (a scalar, in place too) `+=` their sum.
#[custom_op(name = "example::histogram_add")]
pub fn histogram_add(
    x: TensorRef<'_, f32>,
    #[inout] mut counts: TensorMut<'_, i64, 1>,
    #[inout] mut total: TensorMut<'_, f64, 0>,
    #[attr] lo: f32,
    #[attr] hi: f32,
) -> Result<(), OpError> {
    let bins = counts.len();
    if bins == 0 || lo.partial_cmp(&hi) != Some(core::cmp::Ordering::Less) {
        return Err(OpError::invalid_argument(
            "histogram_add: needs at least one bin and lo < hi",
        ));
    }
    let width = f64::from(hi) - f64::from(lo);
    let mut sum = 0.0;
    let counts = counts.as_mut_slice();
    for &v in x.as_slice() {
        if v >= lo && v < hi {
            let b = (((f64::from(v) - f64::from(lo)) / width) * bins as f64) as usize;
            counts[b.min(bins - 1)] += 1;
            sum += f64::from(v);
        }
    }
    total.as_mut_slice()[0] += sum;
    Ok(())
}

/// `mask = !mask`, in place: a `bool` tensor updated in place, whose input bytes the handler
/// checks (0 or 1) before the kernel reads them as `bool`s.
#[custom_op(name = "example::toggle")]
pub fn toggle(#[inout] mut mask: TensorMut<'_, bool>) -> Result<(), OpError> {
    for m in mask.as_mut_slice() {
        *m = !*m;
    }
    Ok(())
}

/// JAX's `aliasing` example: its input as its result, updated in place and left as it is (the
/// result is the input's buffer where XLA aliases them, else a copy of it), for every element
/// type that is not packed and every rank.
#[custom_op(
    name = "example::aliasing",
    dtypes(T = [
        bool, i8, i16, i32, i64, u8, u16, u32, u64, customop::f16, customop::bf16, f32, f64,
        customop::Complex64, customop::Complex128
    ])
)]
pub fn aliasing<T: customop::types::Element>(#[inout] x: TensorMut<'_, T>) -> Result<(), OpError> {
    let _ = x;
    Ok(())
}
