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

/// One field of every primitive field type a descriptor takes: what the contract test packs
/// through every front end (`lib.pack`, `customop run` from JSON and TOML) and reads back from
/// the handler (`field_values`).
#[derive(Descriptor, Clone, Copy, Debug, PartialEq)]
#[descriptor(name = "example::FieldTypes")]
pub struct FieldTypes {
    pub flag: bool,
    pub int8: i8,
    pub int16: i16,
    pub int32: i32,
    pub int64: i64,
    pub uint8: u8,
    pub uint16: u16,
    pub uint32: u32,
    pub uint64: u64,
    pub half: customop::f16,
    pub brain: customop::bf16,
    pub single: f32,
    pub double: f64,
    pub f8e4m3fn: customop::F8E4M3FN,
    pub f8e5m2: customop::F8E5M2,
    pub f8e4m3: customop::F8E4M3,
    pub f8e3m4: customop::F8E3M4,
    pub f8e4m3fnuz: customop::F8E4M3FNUZ,
    pub f8e5m2fnuz: customop::F8E5M2FNUZ,
    pub f8e4m3b11fnuz: customop::F8E4M3B11FNUZ,
    pub f8e8m0fnu: customop::F8E8M0FNU,
}

/// The fields of `f` as the handler unpacked them: `ints` the bool and the eight integers (in
/// declaration order; `uint64` as its bits), `bits` the twelve floats' bits (in declaration
/// order, each widened to 64 bits), copied, never converted: XLA runs kernels with denormals
/// flushed, and a conversion would read a subnormal as zero. `x` is not read: it gives torch a
/// tensor to dispatch on.
#[custom_op(name = "example::field_values")]
pub fn field_values(
    #[external] f: &FieldTypes,
    x: TensorRef<'_, f32>,
    #[out(shape = [9])] mut ints: TensorMut<'_, i64, 1>,
    #[out(shape = [12])] mut bits: TensorMut<'_, u64, 1>,
) -> Result<(), OpError> {
    let _ = x;
    ints.as_mut_slice().copy_from_slice(&[
        i64::from(f.flag),
        i64::from(f.int8),
        i64::from(f.int16),
        i64::from(f.int32),
        f.int64,
        i64::from(f.uint8),
        i64::from(f.uint16),
        i64::from(f.uint32),
        f.uint64 as i64,
    ]);
    bits.as_mut_slice().copy_from_slice(&[
        u64::from(f.half.to_bits()),
        u64::from(f.brain.to_bits()),
        u64::from(f.single.to_bits()),
        f.double.to_bits(),
        u64::from(f.f8e4m3fn.to_bits()),
        u64::from(f.f8e5m2.to_bits()),
        u64::from(f.f8e4m3.to_bits()),
        u64::from(f.f8e3m4.to_bits()),
        u64::from(f.f8e4m3fnuz.to_bits()),
        u64::from(f.f8e5m2fnuz.to_bits()),
        u64::from(f.f8e4m3b11fnuz.to_bits()),
        u64::from(f.f8e8m0fnu.to_bits()),
    ]);
    Ok(())
}
