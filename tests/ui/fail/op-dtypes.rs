// `dtypes(...)`: each mistake once, at its cause.
use customop::prelude::*;

#[derive(Descriptor)]
#[descriptor(name = "ui::Cfg")]
pub struct Cfg {
    pub scale: f32,
}

// `U` is listed but not declared; `T` lists f64 twice.
#[custom_op(name = "ui::a", dtypes(T = [f32, f64, f64], U = [i32]))]
pub fn a<T: Copy>(x: TensorRef<'_, T>, #[out(shape = x)] y: TensorMut<'_, T>) -> Result<(), OpError> {
    let _ = (x, y);
    Ok(())
}

// `T` types only an output: nothing in a call says what it is.
#[custom_op(name = "ui::b", dtypes(T = [f32]))]
pub fn b<T: Copy>(x: TensorRef<'_, f32>, #[out(shape = x)] y: TensorMut<'_, T>) -> Result<(), OpError> {
    let _ = (x, y);
    Ok(())
}

// An attribute typed by `T`, and an empty list for `V`.
#[custom_op(name = "ui::c", dtypes(T = [f32], V = []))]
pub fn c<T: Copy, V: Copy>(
    x: TensorRef<'_, T>,
    v: TensorRef<'_, V>,
    #[attr] eps: T,
    #[out(shape = x)] y: TensorMut<'_, T>,
) -> Result<(), OpError> {
    let _ = (x, v, eps, y);
    Ok(())
}

// A listed type that is not an element type is reported at that type.
#[custom_op(name = "ui::d", dtypes(T = [f32, String]))]
pub fn d<T: Copy>(x: TensorRef<'_, T>, #[out(shape = x)] y: TensorMut<'_, T>) -> Result<(), OpError> {
    let _ = (x, y);
    Ok(())
}

fn main() {}
