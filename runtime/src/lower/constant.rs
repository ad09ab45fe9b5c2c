//! `stablehlo.constant`: tensors of literal elements, written as exact hex bytes (or a nested
//! list for booleans).

use super::ops::err;
use super::{Attr, BuildError, FuncBuilder, Value};
use crate::types::{Element, ElementType, TensorType};

/// `items` (row-major) as MLIR's nested list literal for `shape`: `[[a, b], [c, d]]`.
fn nested_list(items: &[&str], shape: &[i64]) -> String {
    match shape.split_first() {
        None => items.concat(),
        Some((&n, rest)) => {
            let stride = rest.iter().product::<i64>().max(0) as usize;
            let parts: Vec<String> = (0..n.max(0) as usize)
                .map(|i| nested_list(&items[i * stride..(i + 1) * stride], rest))
                .collect();
            format!("[{}]", parts.join(", "))
        }
    }
}

fn hex_literal(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(4 + bytes.len() * 2);
    s.push_str("\"0x");
    for b in bytes {
        s.push_str(&format!("{b:02X}"));
    }
    s.push('"');
    s
}

impl FuncBuilder<'_> {
    /// `stablehlo.constant` with the given elements (row-major) and shape.
    pub fn constant<T: Element + ConstantElement>(
        &mut self,
        shape: &[i64],
        values: &[T],
    ) -> Result<Value, BuildError> {
        let ty = TensorType::new(T::ELEMENT_TYPE, shape)?;
        if ty.element_count() as usize != values.len() {
            return err(
                "stablehlo.constant",
                format!(
                    "{ty} has {} elements, got {} values",
                    ty.element_count(),
                    values.len()
                ),
            );
        }
        let mut bytes = Vec::with_capacity(values.len() * T::ELEMENT_TYPE.byte_size());
        for v in values {
            v.append_le(&mut bytes);
        }
        // Raw little-endian bytes in hex are exact and compact; `i1` has no byte form there,
        // so booleans are written as a flat list.
        let literal = if T::ELEMENT_TYPE == ElementType::Bool {
            let items: Vec<&str> = bytes
                .iter()
                .map(|&b| if b == 1 { "true" } else { "false" })
                .collect();
            nested_list(&items, ty.shape())
        } else {
            hex_literal(&bytes)
        };
        let attrs = vec![("value", Attr::Raw(format!("dense<{literal}> : {ty}")))];
        self.single("stablehlo.constant", &[], ty, attrs)
    }
}

/// Element types that [`FuncBuilder::constant`] can write.
pub trait ConstantElement {
    /// Appends the value's little-endian bytes (one byte for `bool`).
    fn append_le(&self, out: &mut Vec<u8>);
}

macro_rules! constant_element {
    ($($t:ty),*) => {$(
        impl ConstantElement for $t {
            fn append_le(&self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
        }
    )*};
}
constant_element!(
    i8,
    i16,
    i32,
    i64,
    u8,
    u16,
    u32,
    u64,
    f32,
    f64,
    half::f16,
    half::bf16
);

/// Real part then imaginary part, as XLA lays out complex numbers.
impl<T: ConstantElement> ConstantElement for num_complex::Complex<T> {
    fn append_le(&self, out: &mut Vec<u8>) {
        self.re.append_le(out);
        self.im.append_le(out);
    }
}

macro_rules! constant_byte {
    ($($t:ty),*) => {$(
        impl ConstantElement for $t {
            fn append_le(&self, out: &mut Vec<u8>) {
                out.push(self.to_bits());
            }
        }
    )*};
}
crate::float8::with_float8_types!(constant_byte);

impl ConstantElement for bool {
    fn append_le(&self, out: &mut Vec<u8>) {
        out.push(*self as u8);
    }
}
