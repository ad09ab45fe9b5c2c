// One op for several element types: the companion's `call` takes any listed type, the handler
// runs the instantiation for the dtype XLA passes (two type parameters: every combination).
use customop::lower::Module;
use customop::prelude::*;

pub trait Num: customop::types::Element + Into<f64> {}
impl Num for f32 {}
impl Num for i32 {}

type Real = f64;
impl Num for Real {}

#[custom_op(name = "ui::scaled_sum", dtypes(T = [f32, Real], U = [i32, f32]))]
pub fn scaled_sum<T: Num, U: Num>(
    x: TensorRef<'_, T, 1>,
    w: TensorRef<'_, U, 1>,
    #[attr] k: i64,
    #[out(shape = [x.dim(0) * k])] mut y: TensorMut<'_, T, 1>,
    #[out(shape = [1])] mut total: TensorMut<'_, f64, 1>,
) -> Result<(), OpError> {
    let s: f64 = x
        .as_slice()
        .iter()
        .zip(w.as_slice())
        .map(|(a, b)| (*a).into() * (*b).into())
        .sum();
    total.as_mut_slice()[0] = s;
    let _ = (&mut y, k);
    Ok(())
}

pub fn run() -> Result<(), Box<dyn std::error::Error>> {
    let mut m = Module::new();
    let mut f = m.entry(
        "main",
        [
            TensorType::new(ElementType::F64, [3])?,
            TensorType::new(ElementType::I32, [3])?,
        ],
    )?;
    let (x, w) = (f.arg(0)?, f.arg(1)?);
    let out = scaled_sum::call(&mut f, &x, &w, 2)?;
    assert_eq!(out.y.ty().to_string(), "tensor<6xf64>");
    assert_eq!(out.total.ty().to_string(), "tensor<1xf64>");
    let s = scaled_sum::schema_string();
    assert_eq!(
        s,
        "ui::scaled_sum(Tensor x, Tensor w, *, int k) -> (Tensor, Tensor)"
    );
    Ok(())
}
