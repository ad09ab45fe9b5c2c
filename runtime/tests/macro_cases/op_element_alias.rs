// Element types come from the `Element` trait, not from their spelling: aliases (and paths)
// of element types work in tensors and outputs, and attribute types are checked by traits too.
use customop::lower::Module;
use customop::prelude::*;

type Real = f32;
mod precision {
    pub type Wide = f64;
}
type Count = i64;

#[custom_op(name = "ui::scale_by")]
pub fn scale_by(
    x: TensorRef<'_, Real, 1>,
    #[out(shape = x)] mut y: TensorMut<'_, precision::Wide>,
    #[attr] factor: Real,
    #[attr] offsets: &[Count],
) -> Result<(), OpError> {
    let shift = offsets.iter().sum::<Count>() as precision::Wide;
    for (o, v) in y.as_mut_slice().iter_mut().zip(x.as_slice()) {
        *o = f64::from(*v * factor) + shift;
    }
    Ok(())
}

pub fn run() -> Result<(), Box<dyn std::error::Error>> {
    let s = scale_by::schema();
    assert_eq!(
        scale_by::schema_string(),
        "ui::scale_by(Tensor x, *, float factor, int[] offsets) -> Tensor"
    );
    let json = s.to_json();
    assert!(json.contains(r#""dtype":"f32""#), "{json}");
    assert!(json.contains(r#""dtype":"f64""#), "{json}");

    let mut m = Module::new();
    let mut f = m.entry("main", [TensorType::new(ElementType::F32, [3])?])?;
    let x = f.arg(0)?;
    let y = scale_by::call(&mut f, &x, 2.0, &[1, 2])?;
    assert_eq!(y.ty().to_string(), "tensor<3xf64>");
    f.ret(&[&y])?;
    let text = m.to_text()?;
    assert!(text.contains("factor = 2.000000e+00 : f32"), "{text}");
    assert!(text.contains("offsets = array<i64: 1, 2>"), "{text}");

    let (xs, mut ys) = ([1.0f32, 2.0, 3.0], [0.0f64; 3]);
    scale_by(
        TensorRef::new(&xs, &[3])?,
        TensorMut::new(&mut ys, &[3])?,
        0.5,
        &[1, 1],
    )?;
    assert_eq!(ys, [2.5, 3.0, 3.5]);
    Ok(())
}
