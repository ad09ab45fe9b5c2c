// Each mistake is reported once and nothing else: an option after a bad one is still read (no
// false "missing option `name`"), and the companion module is still generated (with defaults
// where options are wrong), so code that uses it keeps compiling.
use customop::lower::Module;
use customop::prelude::*;

// A bad option does not hide the `name` after it.
#[custom_op(target = 3, name = "ui::a")]
pub fn a(x: TensorRef<'_, f32>, #[out(shape = x)] y: TensorMut<'_, f32>) -> Result<(), OpError> {
    let _ = (x, y);
    Ok(())
}

#[custom_op(side_efect, name = "ui::b", side_effect = true)]
pub fn b(x: TensorRef<'_, f32>, #[out(shape = x)] y: TensorMut<'_, f32>) -> Result<(), OpError> {
    let _ = (x, y);
    Ok(())
}

// An ill-typed `name` is not also missing; the companion gets a placeholder name.
#[custom_op(name = ui::c)]
pub fn c(x: TensorRef<'_, f32>, #[out(shape = x)] y: TensorMut<'_, f32>) -> Result<(), OpError> {
    let _ = (x, y);
    Ok(())
}

// A parameter that cannot be classified still is an argument of `call`; an output whose shape
// rule does not parse is not also missing one.
#[custom_op(name = "ui::d")]
pub fn d(
    x: TensorRef<'_, f32>,
    n: Vec<f32>,
    #[out(shape = [x.dim(0) +])] y: TensorMut<'_, f32>,
) -> Result<(), OpError> {
    let _ = (x, n, y);
    Ok(())
}

// A descriptor with a bad option still is a descriptor.
#[derive(Descriptor)]
#[descriptor(nmae = "ui::Cfg")]
pub struct Cfg {
    pub scale: f32,
}

#[custom_op(name = "ui::e")]
pub fn e(#[external] cfg: &Cfg, x: TensorRef<'_, f32>) -> Result<Opaque<Cfg>, OpError> {
    let _ = x;
    Ok(Opaque(Cfg { scale: cfg.scale }))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let _ = (a::NAME, b::schema_string(), c::schema(), d::TARGET);
    let mut m = Module::new();
    let mut f = m.entry("main", [TensorType::new(ElementType::F32, [3])?])?;
    let x = f.arg(0)?;
    let y: customop::lower::Value = a::call(&mut f, &x)?;
    let y = b::call(&mut f, &y)?;
    let y = c::call(&mut f, &y)?;
    let y = d::call(&mut f, &y, vec![1.0])?;
    let cfg = f.external::<Cfg>("cfg")?;
    let _: customop::lower::DescriptorValue<Cfg> = e::call(&mut f, &cfg, &y)?;
    Ok(())
}
