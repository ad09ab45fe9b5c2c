//! The quick start's op, in a crate of its own.

use customop::prelude::*;

/// `y = factor * x + offset`'s parameters.
#[derive(Descriptor, Clone, Copy, Debug, PartialEq)]
#[descriptor(name = "quick::Gain")]
pub struct Gain {
    pub factor: f32,
    pub offset: f32,
}

/// y = factor * x + offset
#[custom_op(name = "quick::apply_gain")]
pub fn apply_gain(
    #[external] gain: &Gain,
    x: TensorRef<'_, f32>,
    #[out(shape = x)] mut y: TensorMut<'_, f32>,
) -> Result<(), OpError> {
    for (o, v) in y.as_mut_slice().iter_mut().zip(x.as_slice()) {
        *o = gain.factor * v + gain.offset;
    }
    Ok(())
}
