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
