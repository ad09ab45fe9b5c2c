//! Custom ops in a plain library crate: the example kernel cdylib links it, and its ops must
//! appear in the cdylib's manifest (registries that the linker drops are a classic failure).
//! `affine` takes one attribute of every kind.

use customop::prelude::*;

/// `y = factor * x + len(label) + sum(offsets) + (flag ? 1 : 0) + small`, elementwise.
#[custom_op(name = "example_lib::affine")]
pub fn affine(
    x: TensorRef<'_, f32>,
    #[out(shape = x)] mut y: TensorMut<'_, f32>,
    #[attr] factor: f64,
    #[attr] label: &str,
    #[attr] offsets: &[i64],
    #[attr] flag: bool,
    #[attr] small: u8,
) -> Result<(), OpError> {
    let add = label.len() as f64
        + offsets.iter().sum::<i64>() as f64
        + f64::from(u8::from(flag))
        + f64::from(small);
    for (o, &v) in y.as_mut_slice().iter_mut().zip(x.as_slice()) {
        *o = (factor * f64::from(v) + add) as f32;
    }
    Ok(())
}
