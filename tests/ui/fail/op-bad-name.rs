// The name is `namespace::op`.
use customop::prelude::*;

#[derive(Descriptor)]
#[descriptor(name = "ui::Cfg")]
pub struct Cfg {
    pub scale: f32,
}

#[custom_op(name = "no namespace")]
pub fn op(x: TensorRef<'_, f32>, #[out(shape = x)] y: TensorMut<'_, f32>) -> Result<(), OpError> {
    let _ = (x, y);
    Ok(())
}

fn main() {}
