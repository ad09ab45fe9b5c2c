// Array attributes are slices of i8..i64, f32 or f64: no u8 (XLA's dense arrays have no
// unsigned element types).
use customop::prelude::*;

#[custom_op(name = "ui::a")]
pub fn op(
    x: TensorRef<'_, f32>,
    #[out(shape = x)] y: TensorMut<'_, f32>,
    #[attr] taps: &[u8],
) -> Result<(), OpError> {
    let _ = (x, y, taps);
    Ok(())
}

fn main() {}
