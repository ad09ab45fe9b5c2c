// `#[external(borrow)]` takes `&T` of a `repr_c` descriptor.
use customop::prelude::*;

#[derive(Descriptor)]
#[descriptor(name = "ui::Plain")]
pub struct Plain {
    pub a: u32,
}

#[derive(Descriptor)]
#[descriptor(name = "ui::InPlace", repr_c)]
#[repr(C)]
pub struct Flat {
    pub a: u32,
}

#[custom_op(name = "ui::a")]
pub fn a(
    #[external(borrow)] p: &Plain,
    x: TensorRef<'_, f32>,
    #[out(shape = x)] y: TensorMut<'_, f32>,
) -> Result<(), OpError> {
    let _ = (p, x, y);
    Ok(())
}

#[custom_op(name = "ui::b")]
pub fn b(
    #[external(borrow)] p: &mut Flat,
    x: TensorRef<'_, f32>,
    #[out(shape = x)] y: TensorMut<'_, f32>,
) -> Result<(), OpError> {
    let _ = (p, x, y);
    Ok(())
}

#[custom_op(name = "ui::c")]
pub fn c(
    #[external(borow)] p: &Flat,
    x: TensorRef<'_, f32>,
    #[out(shape = x)] y: TensorMut<'_, f32>,
) -> Result<(), OpError> {
    let _ = (p, x, y);
    Ok(())
}

fn main() {}
