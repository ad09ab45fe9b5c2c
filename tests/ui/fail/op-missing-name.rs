// `name` is required.
use customop::prelude::*;

#[derive(Descriptor)]
#[descriptor(name = "ui::Cfg")]
pub struct Cfg {
    pub scale: f32,
}

#[custom_op(side_effect)]
pub fn op(x: TensorRef<'_, f32>, #[out(shape = x)] y: TensorMut<'_, f32>) -> Result<(), OpError> {
    let _ = (x, y);
    Ok(())
}

fn main() {}
