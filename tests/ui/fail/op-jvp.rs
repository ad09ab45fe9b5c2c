// `jvp = ...`: each mistake in a pairing once, at the forward's `jvp` option.
use customop::prelude::*;

// The tangent op forgets the tangent of `w` (the derivative would drop w's part).
#[custom_op(name = "ui::a", jvp = a_jvp)]
pub fn a(x: TensorRef<'_, f32>, w: TensorRef<'_, f32>, #[out(shape = x)] y: TensorMut<'_, f32>) -> Result<(), OpError> {
    let _ = (x, w, y);
    Ok(())
}
#[custom_op(name = "ui::a_jvp")]
pub fn a_jvp(x: TensorRef<'_, f32>, t_x: TensorRef<'_, f32>, #[out(shape = x)] t_y: TensorMut<'_, f32>) -> Result<(), OpError> {
    let _ = (x, t_x, t_y);
    Ok(())
}

// The output tangent's element type is not the output's.
#[custom_op(name = "ui::b", jvp = b_jvp)]
pub fn b(x: TensorRef<'_, f32>, #[out(shape = x)] y: TensorMut<'_, f32>) -> Result<(), OpError> {
    let _ = (x, y);
    Ok(())
}
#[custom_op(name = "ui::b_jvp")]
pub fn b_jvp(t_x: TensorRef<'_, f32>, #[out(shape = t_x)] t_y: TensorMut<'_, f64>) -> Result<(), OpError> {
    let _ = (t_x, t_y);
    Ok(())
}

// A cotangent where a tangent belongs.
#[custom_op(name = "ui::c", jvp = c_jvp)]
pub fn c(x: TensorRef<'_, f32>, #[out(shape = x)] y: TensorMut<'_, f32>) -> Result<(), OpError> {
    let _ = (x, y);
    Ok(())
}
#[custom_op(name = "ui::c_jvp")]
pub fn c_jvp(d_x: TensorRef<'_, f32>, #[out(shape = d_x)] t_y: TensorMut<'_, f32>) -> Result<(), OpError> {
    let _ = (d_x, t_y);
    Ok(())
}

// The output tangent's shape is not the output's.
#[custom_op(name = "ui::d", jvp = d_jvp)]
pub fn d(x: TensorRef<'_, f32, 2>, #[out(shape = [x.dim(0)])] y: TensorMut<'_, f32, 1>) -> Result<(), OpError> {
    let _ = (x, y);
    Ok(())
}
#[custom_op(name = "ui::d_jvp")]
pub fn d_jvp(t_x: TensorRef<'_, f32, 2>, #[out(shape = t_x)] t_y: TensorMut<'_, f32>) -> Result<(), OpError> {
    let _ = (t_x, t_y);
    Ok(())
}

// No tangent of the output.
#[custom_op(name = "ui::e", jvp = e_jvp)]
pub fn e(x: TensorRef<'_, f32>, #[out(shape = x)] y: TensorMut<'_, f32>) -> Result<(), OpError> {
    let _ = (x, y);
    Ok(())
}
#[custom_op(name = "ui::e_jvp")]
pub fn e_jvp(t_x: TensorRef<'_, f32>, #[out(shape = t_x)] s: TensorMut<'_, f32>) -> Result<(), OpError> {
    let _ = (t_x, s);
    Ok(())
}

// An op with state has no forward-mode rule.
#[derive(Descriptor)]
#[descriptor(name = "ui::State")]
pub struct State {
    pub n: u64,
}
#[custom_op(name = "ui::f", jvp = f_jvp)]
pub fn f(#[external] s: &mut State, x: TensorRef<'_, f32>, #[out(shape = x)] y: TensorMut<'_, f32>) -> Result<(), OpError> {
    let _ = (s, x, y);
    Ok(())
}
#[custom_op(name = "ui::f_jvp")]
pub fn f_jvp(t_x: TensorRef<'_, f32>, #[out(shape = t_x)] t_y: TensorMut<'_, f32>) -> Result<(), OpError> {
    let _ = (t_x, t_y);
    Ok(())
}

// Not a path.
#[custom_op(name = "ui::g", jvp = "g_jvp")]
pub fn g(x: TensorRef<'_, f32>, #[out(shape = x)] y: TensorMut<'_, f32>) -> Result<(), OpError> {
    let _ = (x, y);
    Ok(())
}

fn main() {}
