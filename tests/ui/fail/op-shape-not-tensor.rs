// A shape rule takes dimensions of tensor inputs only.
use customop::prelude::*;

#[derive(Descriptor)]
#[descriptor(name = "ui::Cfg")]
pub struct Cfg {
    pub scale: f32,
}

#[custom_op(name = "ui::a")]
pub fn op(#[attr] n: i64, x: TensorRef<'_, f32>, #[out(shape = [n.dim(0)])] y: TensorMut<'_, f32>) -> Result<(), OpError> {
    let _ = (n, x, y);
    Ok(())
}

fn main() {}
