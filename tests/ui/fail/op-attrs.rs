// `#[attrs]`: one per op, of type `Dictionary<'_>`, not also another kind of parameter.
use customop::prelude::*;
use customop::Dictionary;

#[custom_op(name = "ui::two")]
pub fn two(
    #[attrs] a: Dictionary<'_>,
    #[attrs] b: Dictionary<'_>,
    #[out(shape = [])] y: TensorMut<'_, f32>,
) -> Result<(), OpError> {
    let _ = (a, b, y);
    Ok(())
}

#[custom_op(name = "ui::not_a_dictionary")]
pub fn not_a_dictionary(
    #[attrs] a: &[(String, i64)],
    #[out(shape = [])] y: TensorMut<'_, f32>,
) -> Result<(), OpError> {
    let _ = (a, y);
    Ok(())
}

#[custom_op(name = "ui::both")]
pub fn both(
    #[attrs] #[attr] a: Dictionary<'_>,
    #[out(shape = [])] y: TensorMut<'_, f32>,
) -> Result<(), OpError> {
    let _ = (a, y);
    Ok(())
}

fn main() {}
