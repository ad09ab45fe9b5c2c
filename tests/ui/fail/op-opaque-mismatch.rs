// An Opaque<A> result cannot be passed where an op takes a B: checked by the compiler.
use customop::lower::Module;
use customop::prelude::*;

#[derive(Descriptor)]
#[descriptor(name = "ui::Cfg")]
pub struct Cfg {
    pub scale: f32,
}

#[derive(Descriptor)]
#[descriptor(name = "ui::Other")]
pub struct Other {
    pub y: u32,
}

#[custom_op(name = "ui::make")]
pub fn make(x: TensorRef<'_, f32>) -> Result<Opaque<Cfg>, OpError> {
    let _ = x;
    Ok(Opaque(Cfg { scale: 1.0 }))
}

#[custom_op(name = "ui::take")]
pub fn take(#[external] o: &Other, x: TensorRef<'_, f32>, #[out(shape = x)] y: TensorMut<'_, f32>) -> Result<(), OpError> {
    let _ = (o, x, y);
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut m = Module::new();
    let mut f = m.entry("main", [TensorType::new(ElementType::F32, [2])?])?;
    let x = f.arg(0)?;
    let cfg = make::call(&mut f, &x)?;
    let _ = take::call(&mut f, &cfg, &x)?;
    Ok(())
}
