// An #[external] type must derive Descriptor.
use customop::prelude::*;

#[derive(Descriptor)]
#[descriptor(name = "ui::Cfg")]
pub struct Cfg {
    pub scale: f32,
}

pub struct Plain {
    pub x: u32,
}

#[custom_op(name = "ui::a")]
pub fn op(#[external] p: &Plain, x: TensorRef<'_, f32>, #[out(shape = x)] y: TensorMut<'_, f32>) -> Result<(), OpError> {
    let _ = (p, x, y);
    Ok(())
}

fn main() {}
