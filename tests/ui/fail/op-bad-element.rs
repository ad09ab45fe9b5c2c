// Tensor element types are the scalar types XLA has.
use customop::prelude::*;

#[derive(Descriptor)]
#[descriptor(name = "ui::Cfg")]
pub struct Cfg {
    pub scale: f32,
}

#[custom_op(name = "ui::a")]
pub fn op(x: TensorRef<'_, char>, #[out(shape = [3])] y: TensorMut<'_, f32>) -> Result<(), OpError> {
    let _ = (x, y);
    Ok(())
}

fn main() {}
