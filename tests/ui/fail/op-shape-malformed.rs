// A shape rule is a list of dimension expressions: `<<`, other methods and other functions
// are not part of them.
use customop::prelude::*;

#[derive(Descriptor)]
#[descriptor(name = "ui::Cfg")]
pub struct Cfg {
    pub scale: f32,
}

#[custom_op(name = "ui::a")]
pub fn op(x: TensorRef<'_, f32>, #[out(shape = [x.dim(0) << 1])] y: TensorMut<'_, f32>) -> Result<(), OpError> {
    let _ = (x, y);
    Ok(())
}

#[custom_op(name = "ui::b")]
pub fn b(x: TensorRef<'_, f32>, #[out(shape = [x.shape()])] y: TensorMut<'_, f32>) -> Result<(), OpError> {
    let _ = (x, y);
    Ok(())
}

#[custom_op(name = "ui::c")]
pub fn c(x: TensorRef<'_, f32>, #[out(shape = [min(x.dim(0), 2, 3)])] y: TensorMut<'_, f32>) -> Result<(), OpError> {
    let _ = (x, y);
    Ok(())
}

#[custom_op(name = "ui::d")]
pub fn d(x: TensorRef<'_, f32>, #[out(shape = [x.dim(n)])] y: TensorMut<'_, f32>) -> Result<(), OpError> {
    let _ = (x, y);
    Ok(())
}

fn main() {}
