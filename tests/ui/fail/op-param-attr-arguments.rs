// Parameter attributes given arguments they do not take, or a `= value` form: each refused
// where it is written, none ignored.
use customop::prelude::*;
use customop::Dictionary;

#[custom_op(name = "ui::a")]
pub fn a(#[attrs(all)] d: Dictionary<'_>, x: TensorRef<'_, f32>, #[out(shape = x)] y: TensorMut<'_, f32>) -> Result<(), OpError> {
    let _ = (d, x, y);
    Ok(())
}

#[custom_op(name = "ui::b")]
pub fn b(#[inout(keep)] x: TensorMut<'_, f32>) -> Result<(), OpError> {
    let _ = x;
    Ok(())
}

#[custom_op(name = "ui::c")]
pub fn c(#[attr(eps)] eps: f32, x: TensorRef<'_, f32>, #[out(shape = x)] y: TensorMut<'_, f32>) -> Result<(), OpError> {
    let _ = (eps, x, y);
    Ok(())
}

#[custom_op(name = "ui::d")]
pub fn d(#[attr = 1] eps: f32, x: TensorRef<'_, f32>, #[out = x] y: TensorMut<'_, f32>) -> Result<(), OpError> {
    let _ = (eps, x, y);
    Ok(())
}

fn main() {}
