// Runs of an input's dimensions in a shape rule (`..x.dims(a..b)`): spread, half-open, within a
// fixed rank, of a tensor input, and never with `partition`.
use customop::prelude::*;

#[custom_op(name = "ui::not_spread")]
pub fn not_spread(
    x: TensorRef<'_, f32>,
    #[out(shape = [x.dims(..-1)])] y: TensorMut<'_, f32>,
) -> Result<(), OpError> {
    let _ = (x, y);
    Ok(())
}

#[custom_op(name = "ui::beyond_rank")]
pub fn beyond_rank(
    x: TensorRef<'_, f32, 2>,
    #[out(shape = [..x.dims(..-3)])] y: TensorMut<'_, f32>,
) -> Result<(), OpError> {
    let _ = (x, y);
    Ok(())
}

#[custom_op(name = "ui::of_an_attribute")]
pub fn of_an_attribute(
    x: TensorRef<'_, f32>,
    #[attr] k: i64,
    #[out(shape = [..k.dims(..)])] y: TensorMut<'_, f32>,
) -> Result<(), OpError> {
    let _ = (x, k, y);
    Ok(())
}

#[custom_op(name = "ui::inclusive")]
pub fn inclusive(
    x: TensorRef<'_, f32>,
    #[out(shape = [..x.dims(0..=1)])] y: TensorMut<'_, f32>,
) -> Result<(), OpError> {
    let _ = (x, y);
    Ok(())
}

#[custom_op(name = "ui::partitioned", partition(x = [rows, _]))]
pub fn partitioned(
    x: TensorRef<'_, f32, 2>,
    #[out(shape = [..x.dims(..-1)])] y: TensorMut<'_, f32>,
) -> Result<(), OpError> {
    let _ = (x, y);
    Ok(())
}

fn main() {}
