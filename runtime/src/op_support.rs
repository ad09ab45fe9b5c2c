//! Helpers that `#[custom_op]`'s generated lowerings call (through `__private`).

pub use crate::lower::call_op;

use crate::descriptor::Descriptor;
use crate::lower::{Attr, BuildError, Desc, Value};
use crate::types::Element;

/// The results of [`call_op`](crate::lower::call_op), taken in order by a generated `call`: a
/// [`Value`] for a tensor output, a [`Desc`] for an opaque result or an updated external.
#[derive(Debug)]
pub struct Results(std::vec::IntoIter<Value>);

impl Results {
    /// The results `call_op` returned.
    pub fn new(values: Vec<Value>) -> Results {
        Results(values.into_iter())
    }

    fn next(&mut self) -> Result<Value, BuildError> {
        self.0
            .next()
            .ok_or_else(|| BuildError::new("custom_call made too few results"))
    }

    /// The next result, a tensor.
    pub fn value(&mut self) -> Result<Value, BuildError> {
        self.next()
    }

    /// The next result, the packed bytes of a `T` (the op's schema says which results are).
    pub fn desc<T: Descriptor>(&mut self) -> Result<Desc<T>, BuildError> {
        self.next().map(Desc::wrap)
    }
}

/// The value of a `#[attr]` parameter as a `backend_config` entry: scalars and `bool` typed,
/// `&str` and descriptors (packed, wire format v1) as strings, `&[T]` as `array<T: ...>`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be an attribute of a custom op",
    label = "not an attribute type",
    note = "attributes are bool, i8..i64, u8..u64, f32, f64, `&str`, `&[T]` of i8..i64, f32 or \
            f64, or `&T` of a descriptor"
)]
pub trait IntoAttr {
    /// The attribute.
    fn into_attr(self) -> Attr;
}

impl IntoAttr for bool {
    fn into_attr(self) -> Attr {
        Attr::Bool(self)
    }
}

impl IntoAttr for f32 {
    fn into_attr(self) -> Attr {
        Attr::F32(self)
    }
}

impl IntoAttr for f64 {
    fn into_attr(self) -> Attr {
        Attr::F64(self)
    }
}

macro_rules! int_attr {
    ($($t:ty),*) => {$(
        impl IntoAttr for $t {
            fn into_attr(self) -> Attr {
                Attr::Int(i128::from(self), <$t as Element>::ELEMENT_TYPE.mlir_name())
            }
        }
    )*};
}
int_attr!(i8, i16, i32, i64, u8, u16, u32, u64);

impl IntoAttr for &str {
    fn into_attr(self) -> Attr {
        Attr::Str(self.as_bytes().to_vec())
    }
}

impl<T: ArrayElement> IntoAttr for &[T] {
    fn into_attr(self) -> Attr {
        array_attr(self)
    }
}

impl<T: Descriptor> IntoAttr for &T {
    fn into_attr(self) -> Attr {
        Attr::Str(self.pack())
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
