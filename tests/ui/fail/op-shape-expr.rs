// Shape expressions are checked when the op is declared, each mistake once, at the name it is
// about: attributes that are not integers (also behind an alias), `.len()` of a scalar, an
// external's dimension, a literal division by zero, an unknown name, and a partition factor on
// a dimension that an expression computes, a descriptor's field.
use customop::prelude::*;

#[derive(Descriptor)]
#[descriptor(name = "ui::Cfg")]
pub struct Cfg {
    pub scale: f32,
}

type Real = f32;

#[custom_op(name = "ui::a")]
pub fn a(
    x: TensorRef<'_, f32, 2>,
    #[attr] eps: Real,
    #[out(shape = [x.dim(0) * eps])] y: TensorMut<'_, f32>,
) -> Result<(), OpError> {
    let _ = (x, eps, y);
    Ok(())
}

#[custom_op(name = "ui::b")]
pub fn b(
    #[external] cfg: &Cfg,
    x: TensorRef<'_, f32, 2>,
    #[attr] k: i64,
    #[attr] label: &str,
    #[out(shape = [k.len(), cfg.dim(0), x.dim(1) / 0, label, q])] y: TensorMut<'_, f32>,
) -> Result<(), OpError> {
    let _ = (cfg, x, k, label, y);
    Ok(())
}

#[custom_op(name = "ui::c", partition(x = [rows, _]))]
pub fn c(
    x: TensorRef<'_, f32, 2>,
    #[attr] k: i64,
    #[out(shape = [x.dim(0) / k])] y: TensorMut<'_, f32, 1>,
) -> Result<(), OpError> {
    let _ = (x, k, y);
    Ok(())
}

#[custom_op(name = "ui::e")]
pub fn e(
    x: TensorRef<'_, f32, 2>,
    #[attr] cfg: &Cfg,
    #[out(shape = [cfg.scale])] y: TensorMut<'_, f32>,
) -> Result<(), OpError> {
    let _ = (x, cfg, y);
    Ok(())
}

// Right: integer attributes (an alias of one too) and array lengths.
type Count = u32;

#[custom_op(name = "ui::d")]
pub fn d(
    x: TensorRef<'_, f32, 2>,
    #[attr] k: Count,
    #[attr] taps: &[i64],
    #[out(shape = [ceil_div(x.dim(1), k) + taps.len(), max(x.dim(0), 1)])] y: TensorMut<'_, f32>,
) -> Result<(), OpError> {
    let _ = (x, k, taps, y);
    Ok(())
}

fn main() {}
