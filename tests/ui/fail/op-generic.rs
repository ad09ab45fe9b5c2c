// A generic op lists the element types of each type parameter in `dtypes(...)`; one that does
// not is refused (and has no companion module, whose items could not name `T`).
use customop::prelude::*;

#[derive(Descriptor)]
#[descriptor(name = "ui::Cfg")]
pub struct Cfg {
    pub scale: f32,
}

#[custom_op(name = "ui::a")]
pub fn op<T: Copy>(x: TensorRef<'_, f32>, #[out(shape = x)] y: TensorMut<'_, f32>) -> Result<(), OpError> {
    let _ = (x, y);
    Ok(())
}

fn main() {}
