// `vjp = ...`: each mistake in a pairing once, at the forward's `vjp` option.
use customop::prelude::*;

#[derive(Descriptor)]
#[descriptor(name = "ui::State")]
pub struct State {
    pub n: u64,
}

// The backward forgets the gradient of `w`.
#[custom_op(name = "ui::a", vjp = a_bwd)]
pub fn a(x: TensorRef<'_, f32>, w: TensorRef<'_, f32>, #[out(shape = x)] y: TensorMut<'_, f32>) -> Result<(), OpError> {
    let _ = (x, w, y);
    Ok(())
}
#[custom_op(name = "ui::a_bwd")]
pub fn a_bwd(x: TensorRef<'_, f32>, d_y: TensorRef<'_, f32>, #[out(shape = x)] d_x: TensorMut<'_, f32>) -> Result<(), OpError> {
    let _ = (x, d_y, d_x);
    Ok(())
}

// The gradient's element type is not the input's.
#[custom_op(name = "ui::b", vjp = b_bwd)]
pub fn b(x: TensorRef<'_, f32>, #[out(shape = x)] y: TensorMut<'_, f32>) -> Result<(), OpError> {
    let _ = (x, y);
    Ok(())
}
#[custom_op(name = "ui::b_bwd")]
pub fn b_bwd(d_y: TensorRef<'_, f32>, #[out(shape = d_y)] d_x: TensorMut<'_, f64>) -> Result<(), OpError> {
    let _ = (d_y, d_x);
    Ok(())
}

// A backward parameter that names nothing of the forward.
#[custom_op(name = "ui::c", vjp = c_bwd)]
pub fn c(x: TensorRef<'_, f32>, #[out(shape = x)] y: TensorMut<'_, f32>) -> Result<(), OpError> {
    let _ = (x, y);
    Ok(())
}
#[custom_op(name = "ui::c_bwd")]
pub fn c_bwd(dy: TensorRef<'_, f32>, #[out(shape = dy)] d_x: TensorMut<'_, f32>) -> Result<(), OpError> {
    let _ = (dy, d_x);
    Ok(())
}

// The gradient's shape is not the input's.
#[custom_op(name = "ui::d", vjp = d_bwd)]
pub fn d(x: TensorRef<'_, f32, 2>, #[out(shape = [x.dim(0)])] y: TensorMut<'_, f32, 1>) -> Result<(), OpError> {
    let _ = (x, y);
    Ok(())
}
#[custom_op(name = "ui::d_bwd")]
pub fn d_bwd(d_y: TensorRef<'_, f32, 1>, #[out(shape = d_y)] d_x: TensorMut<'_, f32>) -> Result<(), OpError> {
    let _ = (d_y, d_x);
    Ok(())
}

// An attribute of another type than the forward's.
#[custom_op(name = "ui::e", vjp = e_bwd)]
pub fn e(x: TensorRef<'_, f32>, #[attr] eps: f32, #[out(shape = x)] y: TensorMut<'_, f32>) -> Result<(), OpError> {
    let _ = (x, eps, y);
    Ok(())
}
#[custom_op(name = "ui::e_bwd")]
pub fn e_bwd(d_y: TensorRef<'_, f32>, #[attr] eps: f64, #[out(shape = d_y)] d_x: TensorMut<'_, f32>) -> Result<(), OpError> {
    let _ = (d_y, eps, d_x);
    Ok(())
}

// A `&mut` external: its new state has no cotangent.
#[custom_op(name = "ui::f", vjp = f_bwd)]
pub fn f(#[external] s: &mut State, x: TensorRef<'_, f32>, #[out(shape = x)] y: TensorMut<'_, f32>) -> Result<(), OpError> {
    let _ = (s, x, y);
    Ok(())
}
#[custom_op(name = "ui::f_bwd")]
pub fn f_bwd(d_y: TensorRef<'_, f32>, #[out(shape = d_y)] d_x: TensorMut<'_, f32>) -> Result<(), OpError> {
    let _ = (d_y, d_x);
    Ok(())
}

// A gradient of an integer input.
#[custom_op(name = "ui::g", vjp = g_bwd)]
pub fn g(i: TensorRef<'_, i32>, #[out(shape = i)] y: TensorMut<'_, f32>) -> Result<(), OpError> {
    let _ = (i, y);
    Ok(())
}
#[custom_op(name = "ui::g_bwd")]
pub fn g_bwd(i: TensorRef<'_, i32>, #[out(shape = i)] d_i: TensorMut<'_, i32>) -> Result<(), OpError> {
    let _ = (i, d_i);
    Ok(())
}

// A residual of another rank than the forward's input.
#[custom_op(name = "ui::j", vjp = j_bwd)]
pub fn j(x: TensorRef<'_, f32, 2>, #[out(shape = x)] y: TensorMut<'_, f32, 2>) -> Result<(), OpError> {
    let _ = (x, y);
    Ok(())
}
#[custom_op(name = "ui::j_bwd")]
pub fn j_bwd(x: TensorRef<'_, f32, 1>, d_y: TensorRef<'_, f32, 2>, #[out(shape = x)] d_x: TensorMut<'_, f32>) -> Result<(), OpError> {
    let _ = (x, d_y, d_x);
    Ok(())
}

// A forward with an opaque result: the result has no cotangent.
#[custom_op(name = "ui::k", vjp = k_bwd)]
pub fn k(x: TensorRef<'_, f32>) -> Result<Opaque<State>, OpError> {
    let _ = x;
    Ok(Opaque(State { n: 0 }))
}
#[custom_op(name = "ui::k_bwd")]
pub fn k_bwd(x: TensorRef<'_, f32>, #[out(shape = x)] d_x: TensorMut<'_, f32>) -> Result<(), OpError> {
    let _ = (x, d_x);
    Ok(())
}

// The cotangent of an integer output, which has none.
#[custom_op(name = "ui::l", vjp = l_bwd)]
pub fn l(
    x: TensorRef<'_, f32>,
    #[out(shape = x)] y: TensorMut<'_, f32>,
    #[out(shape = x)] n: TensorMut<'_, i32>,
) -> Result<(), OpError> {
    let _ = (x, y, n);
    Ok(())
}
#[custom_op(name = "ui::l_bwd")]
pub fn l_bwd(
    x: TensorRef<'_, f32>,
    d_y: TensorRef<'_, f32>,
    d_n: TensorRef<'_, i32>,
    #[out(shape = x)] d_x: TensorMut<'_, f32>,
) -> Result<(), OpError> {
    let _ = (x, d_y, d_n, d_x);
    Ok(())
}

// Not an op, and not a path.
#[custom_op(name = "ui::h", vjp = no_such_bwd)]
pub fn h(x: TensorRef<'_, f32>, #[out(shape = x)] y: TensorMut<'_, f32>) -> Result<(), OpError> {
    let _ = (x, y);
    Ok(())
}
#[custom_op(name = "ui::i", vjp = "i_bwd")]
pub fn i(x: TensorRef<'_, f32>, #[out(shape = x)] y: TensorMut<'_, f32>) -> Result<(), OpError> {
    let _ = (x, y);
    Ok(())
}

fn main() {}
