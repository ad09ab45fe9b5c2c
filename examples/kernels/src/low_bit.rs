//! Packed sub-byte tensors (`PackedRef`, `PackedMut`): 4- and 2-bit integers and the 4-bit
//! float `f4E2M1FN`, two or four a byte as XLA keeps them. Widening and narrowing ops whose
//! results tests compare with ml_dtypes.

use customop::prelude::*;
use customop::{F4E2M1FN, I2, I4, U2, U4};

/// The packed integer types, widened.
pub trait PackedInt: customop::packed::Packed {
    /// The value.
    fn to_i32(self) -> i32;
}

impl PackedInt for I4 {
    fn to_i32(self) -> i32 {
        i32::from(self.get())
    }
}
impl PackedInt for U4 {
    fn to_i32(self) -> i32 {
        i32::from(self.get())
    }
}
impl PackedInt for I2 {
    fn to_i32(self) -> i32 {
        i32::from(self.get())
    }
}
impl PackedInt for U2 {
    fn to_i32(self) -> i32 {
        i32::from(self.get())
    }
}

/// `y = x` as `i32`, for any packed integer type.
#[custom_op(name = "example::unpack_int", dtypes(T = [I4, U4, I2, U2]))]
pub fn unpack_int<T: PackedInt>(
    x: PackedRef<'_, T>,
    #[out(shape = x)] mut y: TensorMut<'_, i32>,
) -> Result<(), OpError> {
    for (o, v) in y.as_mut_slice().iter_mut().zip(x.iter()) {
        *o = v.to_i32();
    }
    Ok(())
}

/// `y = x` as `i4`, keeping the low four bits (two's complement), as ml_dtypes converts.
#[custom_op(name = "example::pack_i4")]
pub fn pack_i4(
    x: TensorRef<'_, i32>,
    #[out(shape = x)] mut y: PackedMut<'_, I4>,
) -> Result<(), OpError> {
    let x = x.as_slice();
    y.fill_with(|i| I4::wrapping(i64::from(x[i])));
    Ok(())
}

/// `y = x` rounded to `f4E2M1FN` (ties to even, saturating at ±6, NaN to -0: ml_dtypes' rules).
#[custom_op(name = "example::round_f4")]
pub fn round_f4(
    x: TensorRef<'_, f32>,
    #[out(shape = x)] mut y: PackedMut<'_, F4E2M1FN>,
) -> Result<(), OpError> {
    let x = x.as_slice();
    y.fill_with(|i| F4E2M1FN::from_f32(x[i]));
    Ok(())
}

/// `y = x` as `f32`, exactly.
#[custom_op(name = "example::widen_f4")]
pub fn widen_f4(
    x: PackedRef<'_, F4E2M1FN>,
    #[out(shape = x)] mut y: TensorMut<'_, f32>,
) -> Result<(), OpError> {
    let n = y.len();
    x.unpack_into(0, &mut y.as_mut_slice()[..n], F4E2M1FN::to_f32);
    Ok(())
}
