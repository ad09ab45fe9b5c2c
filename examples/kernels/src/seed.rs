//! The seed model's op: a kernel that takes an opaque external structure (`#[external] &Blob`)
//! and a tensor, with a side effect.

use crate::probe;
use customop::prelude::*;

/// The seed model's opaque structure: a 32-byte payload (56 bytes packed).
#[derive(Descriptor, Clone, Copy, Debug, PartialEq)]
#[descriptor(name = "my_lib::Blob")]
pub struct Blob {
    /// Multiplies each row sum.
    pub gain: f32,
    /// Added after rounding.
    pub bias: i32,
    /// Carried, not used by the arithmetic.
    pub seed: u64,
    /// A tag.
    pub tag: [u8; 16],
}

/// The seed op: `y[i] = saturate_i8(round(gain * sum_j x[i, j]) + bias)`. Rows are
/// independent, so on a device mesh each device may take a block of rows.
#[custom_op(
    name = "my_custom_library::custom_op_external",
    side_effect,
    partition(x = [rows, _])
)]
#[cfg_attr(feature = "cuda", cuda(crate::cuda::custom_op_external))]
pub fn custom_op_external(
    #[external] blob: &Blob,
    x: TensorRef<'_, f32, 2>,
    #[out(shape = [x.dim(0)])] mut y: TensorMut<'_, i8>,
) -> Result<(), OpError> {
    probe::record(x.dim(0));
    let cols = x.dim(1);
    for (i, out) in y.as_mut_slice().iter_mut().enumerate() {
        let row = &x.as_slice()[i * cols..(i + 1) * cols];
        let sum: f32 = row.iter().sum();
        let v = (blob.gain * sum).round() as i64 + i64::from(blob.bias);
        *out = v.clamp(i64::from(i8::MIN), i64::from(i8::MAX)) as i8;
    }
    Ok(())
}
