//! Every attribute of a call as one dictionary (`#[attrs]`), as XLA's C++ `ffi::Dictionary`
//! gives a handler that reads `.Attrs()`: look-up by name with typed getters, the count,
//! iteration and nested dictionaries.

use customop::Dictionary;
use customop::attr::AttrKind;
use customop::prelude::*;

/// `secret` is the call's `i64` attribute `secret` (a missing one, or one of another type, is
/// the call's error); `count` is the number of attributes the call carries, `secret` included.
#[custom_op(name = "example::dictionary_attr")]
pub fn dictionary_attr(
    #[attrs] attrs: Dictionary<'_>,
    #[out(shape = [])] mut secret: TensorMut<'_, i64>,
    #[out(shape = [])] mut count: TensorMut<'_, i64>,
) -> Result<(), OpError> {
    secret.as_mut_slice()[0] = attrs.get::<i64>("secret")?;
    count.as_mut_slice()[0] = attrs.len() as i64;
    Ok(())
}

/// A named attribute beside the dictionary: `out = x * scale + sum`, where `sum` adds every
/// other number the call carries: integer and float scalars, the elements of `i64` and `f64`
/// arrays, and (recursively) the numbers of nested dictionaries; strings are counted in
/// `strings`. An attribute of a kind it does not know is refused by name.
#[custom_op(name = "example::sum_attrs")]
pub fn sum_attrs(
    x: TensorRef<'_, f64>,
    #[attr] scale: f64,
    #[attrs] attrs: Dictionary<'_>,
    #[out(shape = x)] mut out: TensorMut<'_, f64>,
    #[out(shape = [])] mut strings: TensorMut<'_, i64>,
) -> Result<(), OpError> {
    let mut n_strings = 0;
    let sum = sum_numbers(&attrs, &["scale"], &mut n_strings)?;
    for (o, v) in out.as_mut_slice().iter_mut().zip(x.as_slice()) {
        *o = v * scale + sum;
    }
    strings.as_mut_slice()[0] = n_strings;
    Ok(())
}

/// The sum of the numbers of `d` but those named in `skip`; counts its strings.
fn sum_numbers(d: &Dictionary<'_>, skip: &[&str], strings: &mut i64) -> Result<f64, OpError> {
    let mut sum = 0.0;
    for (name, kind) in d.iter() {
        if skip.contains(&name) {
            continue;
        }
        sum += match kind {
            AttrKind::Scalar(ElementType::I64) => d.get::<i64>(name)? as f64,
            AttrKind::Scalar(ElementType::I32) => f64::from(d.get::<i32>(name)?),
            AttrKind::Scalar(ElementType::F64) => d.get::<f64>(name)?,
            AttrKind::Scalar(ElementType::F32) => f64::from(d.get::<f32>(name)?),
            AttrKind::Scalar(ElementType::Bool) => f64::from(u8::from(d.get::<bool>(name)?)),
            AttrKind::Array(ElementType::I64) => {
                d.get::<&[i64]>(name)?.iter().map(|&v| v as f64).sum()
            }
            AttrKind::Array(ElementType::F64) => d.get::<&[f64]>(name)?.iter().sum(),
            AttrKind::Str => {
                d.get_ref::<str>(name)?;
                *strings += 1;
                0.0
            }
            AttrKind::Dictionary => sum_numbers(&d.dict(name)?, &[], strings)?,
            other => {
                return Err(OpError::invalid_argument(format!(
                    "attribute `{name}` is {other:?}, which sum_attrs does not add"
                )));
            }
        };
    }
    Ok(sum)
}

/// The sum of an `i32` array attribute (JAX's `array_attr` example): an array of another
/// element type is refused by name.
#[custom_op(name = "example::array_attr")]
pub fn array_attr(
    #[attr] array: &[i32],
    #[out(shape = [])] mut res: TensorMut<'_, i32>,
) -> Result<(), OpError> {
    res.as_mut_slice()[0] = array.iter().fold(0i32, |s, &v| s.wrapping_add(v));
    Ok(())
}

/// JAX's `counter` example: how many times this process called it before with `index` (a
/// count per index, kept for the process, jitted calls included).
#[custom_op(name = "example::counter")]
pub fn counter(
    #[attr] index: i64,
    #[out(shape = [])] mut n: TensorMut<'_, i32, 0>,
) -> Result<(), OpError> {
    static COUNTS: std::sync::Mutex<std::collections::BTreeMap<i64, i32>> =
        std::sync::Mutex::new(std::collections::BTreeMap::new());
    let mut counts = COUNTS.lock().unwrap_or_else(|e| e.into_inner());
    let c = counts.entry(index).or_insert(0);
    n.as_mut_slice()[0] = *c;
    *c = c.saturating_add(1);
    Ok(())
}
