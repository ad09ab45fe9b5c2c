// `#[inout]`: on a `TensorMut`, with no derivative, and no partition of an op that has one.
use customop::prelude::*;

#[custom_op(name = "ui::on_a_ref")]
pub fn on_a_ref(#[inout] x: TensorRef<'_, f32>) -> Result<(), OpError> {
    let _ = x;
    Ok(())
}

#[custom_op(name = "ui::bwd")]
pub fn bwd(
    x: TensorRef<'_, f32>,
    d_y: TensorRef<'_, f32>,
    #[out(shape = x)] d_x: TensorMut<'_, f32>,
) -> Result<(), OpError> {
    let _ = (x, d_y, d_x);
    Ok(())
}

#[custom_op(name = "ui::with_vjp", vjp = bwd)]
pub fn with_vjp(#[inout] x: TensorMut<'_, f32>) -> Result<(), OpError> {
    let _ = x;
    Ok(())
}

#[custom_op(name = "ui::split", partition(x = [rows]))]
pub fn split(#[inout] x: TensorMut<'_, f32, 1>) -> Result<(), OpError> {
    let _ = x;
    Ok(())
}

// Left out of the rule, each device's copy would pass for the whole.
#[custom_op(name = "ui::left_out", partition(x = [rows]))]
pub fn left_out(
    x: TensorRef<'_, f32, 1>,
    #[inout] counts: TensorMut<'_, i64, 1>,
) -> Result<(), OpError> {
    let _ = (x, counts);
    Ok(())
}

fn main() {}
