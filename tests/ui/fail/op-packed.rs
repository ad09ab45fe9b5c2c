// Packed sub-byte types: taken as `PackedRef`/`PackedMut`, never `TensorRef`, and not in place.
use customop::prelude::*;
use customop::I4;

#[custom_op(name = "ui::dense_view")]
pub fn dense_view(
    x: TensorRef<'_, I4>,
    #[out(shape = x)] y: TensorMut<'_, i32>,
) -> Result<(), OpError> {
    let _ = (x, y);
    Ok(())
}

#[custom_op(name = "ui::in_place")]
pub fn in_place(#[inout] x: PackedMut<'_, I4>) -> Result<(), OpError> {
    let _ = x;
    Ok(())
}

fn main() {}
