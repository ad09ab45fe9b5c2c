//! Element types beyond Rust's primitives: `Complex64` (`cmul`), fp8 with a scale descriptor
//! (`quantize_fp8`, `dequantize_fp8`), `bf16` and `f16`.

use customop::prelude::*;

/// Elementwise complex product `z = a * b` of two complex64 tensors of one shape.
#[custom_op(name = "example::cmul")]
pub fn cmul(
    a: TensorRef<'_, customop::Complex64>,
    b: TensorRef<'_, customop::Complex64>,
    #[out(shape = a)] mut z: TensorMut<'_, customop::Complex64>,
) -> Result<(), OpError> {
    if a.dims() != b.dims() {
        return Err(OpError::invalid_argument(format!(
            "cmul takes two tensors of one shape, got {:?} and {:?}",
            a.dims(),
            b.dims()
        )));
    }
    for ((o, x), y) in z
        .as_mut_slice()
        .iter_mut()
        .zip(a.as_slice())
        .zip(b.as_slice())
    {
        *o = x * y;
    }
    Ok(())
}

/// The scale of an fp8 tensor: `x ≈ f32(q) * scale`.
#[derive(Descriptor, Clone, Copy, Debug, PartialEq)]
#[descriptor(name = "example::Fp8Scale")]
pub struct Fp8Scale {
    /// What one unit of the fp8 value stands for (positive and finite).
    pub scale: f32,
}

impl Fp8Scale {
    fn checked(&self) -> Result<f32, OpError> {
        if self.scale.is_finite() && self.scale > 0.0 {
            Ok(self.scale)
        } else {
            Err(OpError::invalid_argument(format!(
                "the fp8 scale must be positive and finite, got {}",
                self.scale
            )))
        }
    }
}

/// `q = fp8(clamp(x / scale, -448, 448))`: quantizes to f8E4M3FN, saturating at its largest
/// value (448) as fp8 quantizers do; NaN stays NaN. Rounds to nearest, ties to even.
#[custom_op(name = "example::quantize_fp8")]
pub fn quantize_fp8(
    #[external] scale: &Fp8Scale,
    x: TensorRef<'_, f32>,
    #[out(shape = x)] mut q: TensorMut<'_, customop::F8E4M3FN>,
) -> Result<(), OpError> {
    use customop::F8E4M3FN;
    let scale = scale.checked()?;
    let max = F8E4M3FN::MAX.to_f32();
    for (o, &v) in q.as_mut_slice().iter_mut().zip(x.as_slice()) {
        *o = F8E4M3FN::from_f32((v / scale).clamp(-max, max));
    }
    Ok(())
}

/// `y = f32(q) * scale`: the inverse of `quantize_fp8` (up to its rounding).
#[custom_op(name = "example::dequantize_fp8")]
pub fn dequantize_fp8(
    #[external] scale: &Fp8Scale,
    q: TensorRef<'_, customop::F8E4M3FN>,
    #[out(shape = q)] mut y: TensorMut<'_, f32>,
) -> Result<(), OpError> {
    let scale = scale.checked()?;
    for (o, v) in y.as_mut_slice().iter_mut().zip(q.as_slice()) {
        *o = v.to_f32() * scale;
    }
    Ok(())
}

/// `y = bf16(f32(x) * factor)`: computed in f32, rounded to nearest (ties to even) once.
#[custom_op(name = "example::scale_bf16")]
pub fn scale_bf16(
    x: TensorRef<'_, customop::bf16>,
    #[attr] factor: f32,
    #[out(shape = x)] mut y: TensorMut<'_, customop::bf16>,
) -> Result<(), OpError> {
    for (o, v) in y.as_mut_slice().iter_mut().zip(x.as_slice()) {
        *o = customop::bf16::from_f32(v.to_f32() * factor);
    }
    Ok(())
}

/// `y = f16(f32(x) * factor)`: computed in f32, rounded to nearest (ties to even) once.
#[custom_op(name = "example::scale_f16")]
pub fn scale_f16(
    x: TensorRef<'_, customop::f16>,
    #[attr] factor: f32,
    #[out(shape = x)] mut y: TensorMut<'_, customop::f16>,
) -> Result<(), OpError> {
    for (o, v) in y.as_mut_slice().iter_mut().zip(x.as_slice()) {
        *o = customop::f16::from_f32(v.to_f32() * factor);
    }
    Ok(())
}

/// The 8-bit float types, for the conversion ops below: customop's own conversions, which
/// equal ml_dtypes' bit for bit.
pub trait Float8: customop::types::Element {
    /// `x` rounded to the type.
    fn from_f32(x: f32) -> Self;
    /// The value, exactly.
    fn to_f32(self) -> f32;
}

macro_rules! float8_types {
    ($($t:ident),*) => {$(
        impl Float8 for customop::$t {
            fn from_f32(x: f32) -> Self {
                customop::$t::from_f32(x)
            }
            fn to_f32(self) -> f32 {
                customop::$t::to_f32(self)
            }
        }
    )*};
}
float8_types!(
    F8E4M3FN,
    F8E5M2,
    F8E4M3,
    F8E3M4,
    F8E4M3FNUZ,
    F8E5M2FNUZ,
    F8E4M3B11FNUZ,
    F8E8M0FNU
);

/// `y = x` rounded to `y`'s 8-bit float type (written into `y`, whose type picks it).
#[custom_op(
    name = "example::round_f8",
    dtypes(T = [
        customop::F8E4M3FN, customop::F8E5M2, customop::F8E4M3, customop::F8E3M4,
        customop::F8E4M3FNUZ, customop::F8E5M2FNUZ, customop::F8E4M3B11FNUZ, customop::F8E8M0FNU
    ])
)]
pub fn round_f8<T: Float8>(
    x: TensorRef<'_, f32>,
    #[inout] mut y: TensorMut<'_, T>,
) -> Result<(), OpError> {
    if x.dims() != y.dims() {
        return Err(OpError::invalid_argument(format!(
            "round_f8: x is {:?}, y {:?}",
            x.dims(),
            y.dims()
        )));
    }
    for (o, &v) in y.as_mut_slice().iter_mut().zip(x.as_slice()) {
        *o = T::from_f32(v);
    }
    Ok(())
}

/// `y = x` as `f32`, exactly, for any 8-bit float type.
#[custom_op(
    name = "example::widen_f8",
    dtypes(T = [
        customop::F8E4M3FN, customop::F8E5M2, customop::F8E4M3, customop::F8E3M4,
        customop::F8E4M3FNUZ, customop::F8E5M2FNUZ, customop::F8E4M3B11FNUZ, customop::F8E8M0FNU
    ])
)]
pub fn widen_f8<T: Float8>(
    x: TensorRef<'_, T>,
    #[out(shape = x)] mut y: TensorMut<'_, f32>,
) -> Result<(), OpError> {
    for (o, &v) in y.as_mut_slice().iter_mut().zip(x.as_slice()) {
        *o = v.to_f32();
    }
    Ok(())
}
