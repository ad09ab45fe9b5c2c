// Names the companion module generates (`Outputs`, `call`, `schema`, `NAME`, ...) do not shadow
// the user's own: a descriptor named `Outputs` works as an external and as an opaque result of
// ops that have several results.
use customop::lower::Module;
use customop::prelude::*;

#[derive(Descriptor, Clone, Copy, Debug, PartialEq)]
#[descriptor(name = "ui::Outputs")]
pub struct Outputs {
    pub n: u32,
}

#[derive(Descriptor, Clone, Copy, Debug, PartialEq)]
#[descriptor(name = "ui::Schema")]
#[allow(non_camel_case_types)]
pub struct schema {
    pub k: f32,
}

#[custom_op(name = "ui::count")]
pub fn count(
    #[external] state: &mut Outputs,
    #[attr] cfg: &schema,
    x: TensorRef<'_, f32>,
    #[out(shape = x)] mut y: TensorMut<'_, f32>,
) -> Result<(), OpError> {
    state.n += 1;
    for (o, v) in y.as_mut_slice().iter_mut().zip(x.as_slice()) {
        *o = v * cfg.k;
    }
    Ok(())
}

#[custom_op(name = "ui::summarise")]
pub fn summarise(
    x: TensorRef<'_, f32>,
    #[out(shape = [1])] mut total: TensorMut<'_, f32>,
) -> Result<Opaque<Outputs>, OpError> {
    total.as_mut_slice()[0] = x.as_slice().iter().sum();
    Ok(Opaque(Outputs { n: x.len() as u32 }))
}

pub fn run() -> Result<(), Box<dyn std::error::Error>> {
    let mut m = Module::new();
    let mut f = m.entry("main", [TensorType::new(ElementType::F32, [3])?])?;
    let x = f.arg(0)?;
    let state = f.external::<Outputs>("state")?;
    let out: count::Outputs = count::call(&mut f, &state, &schema { k: 2.0 }, &x)?;
    let sum: summarise::Outputs = summarise::call(&mut f, &out.y)?;
    let _: &customop::lower::DescriptorValue<Outputs> = &sum.result;
    f.ret(&[&out.y, out.state.value(), &sum.total, sum.result.value()])?;
    assert!(m.to_text()?.contains("descriptor = \"ui::Outputs\""));
    assert_eq!(count::schema().name, "ui::count");
    Ok(())
}
