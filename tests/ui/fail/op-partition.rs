// `partition(...)`: what it may name, how its lists are written, and which splits would make
// devices compute partial or per-device results.
use customop::prelude::*;

#[derive(Descriptor, Clone, Copy)]
#[descriptor(name = "ui::S")]
pub struct S {
    pub n: u64,
}

// Entries name tensor inputs of fixed rank, with one entry per dimension.
#[custom_op(name = "ui::a", partition(z = [i], y = [i, _], cfg = [i], eps = [i], x = [i, _, _], w = [i]))]
pub fn a(
    #[external] cfg: &S,
    x: TensorRef<'_, f32, 2>,
    w: TensorRef<'_, f32>,
    #[out(shape = x)] y: TensorMut<'_, f32>,
    #[attr] eps: f32,
) -> Result<(), OpError> {
    let _ = (cfg, x, w, y, eps);
    Ok(())
}

// A factor once per tensor, an entry once per input, names or `_` only.
#[custom_op(name = "ui::b", partition(x = [i, i], x = [i, _], v = [2]))]
pub fn b(
    x: TensorRef<'_, f32, 2>,
    v: TensorRef<'_, f32, 1>,
    #[out(shape = x)] y: TensorMut<'_, f32>,
) -> Result<(), OpError> {
    let _ = (x, v, y);
    Ok(())
}

// Every factor reaches every output, once.
#[custom_op(name = "ui::c", partition(x = [rows, cols]))]
pub fn c(
    x: TensorRef<'_, f32, 2>,
    #[out(shape = [x.dim(0)])] y: TensorMut<'_, f32>,
    #[out(shape = [x.dim(0), x.dim(0)])] z: TensorMut<'_, f32>,
) -> Result<(), OpError> {
    let _ = (x, y, z);
    Ok(())
}

// Nothing to split.
#[custom_op(name = "ui::d", partition(x = [_]))]
pub fn d(x: TensorRef<'_, f32, 1>, #[out(shape = x)] y: TensorMut<'_, f32>) -> Result<(), OpError> {
    let _ = (x, y);
    Ok(())
}

// Per-device state or opaque results would escape as if replicated.
#[custom_op(name = "ui::e", partition(x = [i]))]
pub fn e(#[external] s: &mut S, x: TensorRef<'_, f32, 1>) -> Result<Opaque<S>, OpError> {
    let _ = x;
    Ok(Opaque(*s))
}

// Syntax: a list of dimensions after a parameter name; the option once.
#[custom_op(name = "ui::f", partition(x = 3))]
pub fn f(x: TensorRef<'_, f32, 1>) -> Result<(), OpError> {
    let _ = x;
    Ok(())
}

#[custom_op(name = "ui::g", partition(x = [i]), partition(x = [i]))]
pub fn g(x: TensorRef<'_, f32, 1>, #[out(shape = x)] y: TensorMut<'_, f32>) -> Result<(), OpError> {
    let _ = (x, y);
    Ok(())
}

fn main() {}
