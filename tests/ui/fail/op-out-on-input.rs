// #[out] goes on a TensorMut.
use customop::prelude::*;

#[derive(Descriptor)]
#[descriptor(name = "ui::Cfg")]
pub struct Cfg {
    pub scale: f32,
}

#[custom_op(name = "ui::a")]
pub fn op(#[out(shape = [3])] x: TensorRef<'_, f32>) -> Result<(), OpError> {
    let _ = x;
    Ok(())
}

fn main() {}
