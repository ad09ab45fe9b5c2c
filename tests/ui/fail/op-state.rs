// A #[state] parameter is `&T` with `T: OpState`, one per op.
use customop::prelude::*;

pub struct Table(Vec<f32>);

impl OpState for Table {
    fn build(attrs: &StateAttrs<'_, '_>) -> Result<Self, OpError> {
        let n: i64 = attrs.get("n")?;
        Ok(Table(vec![0.0; n as usize]))
    }
}

pub struct NotState;

#[custom_op(name = "ui::mut_state")]
pub fn mut_state(x: TensorRef<'_, f32>, #[attr] n: i64, #[state] t: &mut Table, #[out(shape = x)] y: TensorMut<'_, f32>) -> Result<(), OpError> {
    let _ = (x, n, t, y);
    Ok(())
}

#[custom_op(name = "ui::two_states")]
pub fn two_states(x: TensorRef<'_, f32>, #[attr] n: i64, #[state] a: &Table, #[state] b: &Table, #[out(shape = x)] y: TensorMut<'_, f32>) -> Result<(), OpError> {
    let _ = (x, n, a, b, y);
    Ok(())
}

#[custom_op(name = "ui::not_state")]
pub fn not_state(x: TensorRef<'_, f32>, #[state] s: &NotState, #[out(shape = x)] y: TensorMut<'_, f32>) -> Result<(), OpError> {
    let _ = (x, s, y);
    Ok(())
}

fn main() {}
