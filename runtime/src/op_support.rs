//! Helpers that `#[custom_op]`'s generated lowerings call (through `__private`).

use crate::descriptor::Descriptor;
use crate::lower::{Attr, BuildError, Value};
use crate::types::{ElementType, TensorType};

/// Checks a tensor operand's element type and (when the signature fixes it) rank.
pub fn check_operand(
    op: &str,
    param: &str,
    v: &Value,
    element: ElementType,
    rank: Option<usize>,
) -> Result<(), BuildError> {
    if v.element() != element {
        return Err(BuildError::new(format!(
            "{op}: parameter `{param}` takes a tensor of {element}, got {}",
            v.ty()
        )));
    }
    if let Some(r) = rank
        && v.ty().rank() != r
    {
        return Err(BuildError::new(format!(
            "{op}: parameter `{param}` takes a rank-{r} tensor, got {}",
            v.ty()
        )));
    }
    Ok(())
}

/// Dimension `dim` of tensor parameter `param`, for an output's shape rule.
pub fn dim_of(
    op: &str,
    output: &str,
    param: &str,
    v: &Value,
    dim: usize,
) -> Result<i64, BuildError> {
    v.shape().get(dim).copied().ok_or_else(|| {
        BuildError::new(format!(
            "{op}: the shape of output `{output}` takes dimension {dim} of `{param}`, but `{param}` is {}",
            v.ty()
        ))
    })
}

/// The tensor type of an output with element type `element` and `shape`.
pub fn output_type(
    op: &str,
    output: &str,
    element: ElementType,
    shape: Vec<i64>,
) -> Result<TensorType, BuildError> {
    TensorType::new(element, shape)
        .map_err(|e| BuildError::new(format!("{op}: output `{output}`: {e}")))
}

/// The `tensor<Nxui8>` type that holds a packed `T` (fixed layouts only).
pub fn descriptor_type<T: Descriptor>(op: &str, what: &str) -> Result<TensorType, BuildError> {
    match T::PACKED_SIZE {
        Some(n) => Ok(TensorType::from_parts(ElementType::U8, vec![n as i64])),
        None => Err(BuildError::new(format!(
            "{op}: {what} `{}` has variable-length tails; as a tensor it needs a fixed packed size",
            T::NAME
        ))),
    }
}

/// An array attribute, `array<T: a, b, c>`, of scalars.
pub fn array_attr<T: ArrayElement>(values: &[T]) -> Attr {
    let mut s = format!("array<{}", T::MLIR);
    for (i, v) in values.iter().enumerate() {
        s.push_str(if i == 0 { ": " } else { ", " });
        v.write(&mut s);
    }
    s.push('>');
    Attr::Raw(s)
}

/// Scalars that can be array attribute elements.
pub trait ArrayElement {
    /// The MLIR element type.
    const MLIR: &'static str;
    /// Writes the value as an MLIR literal.
    fn write(&self, out: &mut String);
}

macro_rules! int_array_element {
    ($($t:ty => $m:literal),*) => {$(
        impl ArrayElement for $t {
            const MLIR: &'static str = $m;
            fn write(&self, out: &mut String) {
                out.push_str(&self.to_string());
            }
        }
    )*};
}
int_array_element!(i8 => "i8", i16 => "i16", i32 => "i32", i64 => "i64");

impl ArrayElement for f32 {
    const MLIR: &'static str = "f32";
    fn write(&self, out: &mut String) {
        let _ = crate::lower::attr::write_f32(out, *self);
    }
}

impl ArrayElement for f64 {
    const MLIR: &'static str = "f64";
    fn write(&self, out: &mut String) {
        let _ = crate::lower::attr::write_f64(out, *self);
    }
}
