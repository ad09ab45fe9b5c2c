// Attributes are scalars, strings, arrays of scalars or descriptors.
use customop::prelude::*;

#[derive(Descriptor)]
#[descriptor(name = "ui::Cfg")]
pub struct Cfg {
    pub scale: f32,
}

#[custom_op(name = "ui::a")]
pub fn op(x: TensorRef<'_, f32>, #[out(shape = x)] y: TensorMut<'_, f32>, #[attr] v: Vec<f32>) -> Result<(), OpError> {
    let _ = (x, y, v);
    Ok(())
}

fn main() {}
