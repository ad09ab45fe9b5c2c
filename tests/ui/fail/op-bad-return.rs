// A kernel returns Result<(), OpError> so that its errors reach XLA.
use customop::prelude::*;

#[derive(Descriptor)]
#[descriptor(name = "ui::Cfg")]
pub struct Cfg {
    pub scale: f32,
}

#[custom_op(name = "ui::a")]
pub fn op(x: TensorRef<'_, f32>, #[out(shape = x)] y: TensorMut<'_, f32>) {
    let _ = (x, y);
}

fn main() {}
