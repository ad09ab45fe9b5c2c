//! The types an op's `#[attr]` parameters can have. One trait per way of passing (by value,
//! [`AttrValue`]; by reference, [`AttrRef`]) gives, for each type, all three things an
//! attribute needs: its type in the schema, its value as the program carries it ([`AttrLit`],
//! for the lowering and for any other front end), and its decoding from XLA's attributes in
//! the handler.

mod dict;

pub use dict::{AttrKind, Dictionary};

use super::{CallCx, NotBool};
use crate::descriptor::Descriptor;
use crate::error::OpError;
use crate::schema::AttrType;
use crate::types::{Element, ElementType};

/// An attribute's value as the program carries it: a typed scalar, bytes (strings and packed
/// descriptors) or an array of scalars. The lowering writes it into the custom call's
/// `backend_config` dictionary.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum AttrLit {
    /// `true` / `false`.
    Bool(bool),
    /// An integer of the given type.
    Int(i128, ElementType),
    /// A float of the given type (an `f32` is widened exactly).
    Float(f64, ElementType),
    /// Arbitrary bytes: a UTF-8 string or a packed descriptor.
    Bytes(Vec<u8>),
    /// `array<i64: 1, 2>`: integers of the given type.
    IntArray(ElementType, Vec<i64>),
    /// `array<f32: 0.5>`: floats of the given type (`f32` widened exactly).
    FloatArray(ElementType, Vec<f64>),
    /// `{a = 1 : i64, ...}`: a nested dictionary (an entry of an `#[attrs]` dictionary).
    Dict(Vec<(String, AttrLit)>),
}

/// A type that a `#[attr]` parameter can have by value: `bool`, an integer or float scalar, or
/// `&[T]` of scalars. Gives the schema's attribute type, the value's [`AttrLit`], and reads the
/// value from XLA's attributes, checking its type.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be an attribute of a custom op",
    label = "not an attribute type",
    note = "attributes are bool, i8..i64, u8..u64, f32, f64, `&str`, `&[T]` of i8..i64, f32 or \
            f64, or `&T` of a descriptor; XLA's FFI passes no f16, bf16, complex or fp8 \
            attribute (take an f32 and convert it in the kernel)"
)]
pub trait AttrValue<'f>: Sized {
    /// The schema's attribute type.
    fn attr_type() -> AttrType;
    /// The value, as the program carries it.
    fn lit(&self) -> AttrLit;
    /// Reads attribute `name` of this type from the call.
    #[doc(hidden)]
    fn decode(attrs: &Dictionary<'f>, name: &str) -> Result<Self, OpError>;
}

macro_rules! int_attr {
    ($($t:ty),*) => {$(
        impl<'f> AttrValue<'f> for $t {
            fn attr_type() -> AttrType {
                AttrType::Scalar { dtype: <$t as Element>::ELEMENT_TYPE }
            }
            fn lit(&self) -> AttrLit {
                AttrLit::Int(i128::from(*self), <$t as Element>::ELEMENT_TYPE)
            }
            fn decode(attrs: &Dictionary<'f>, name: &str) -> Result<Self, OpError> {
                attrs.attr_scalar::<$t>(name)
            }
        }
    )*};
}
int_attr!(i8, i16, i32, i64, u8, u16, u32, u64);

macro_rules! float_attr {
    ($($t:ty),*) => {$(
        impl<'f> AttrValue<'f> for $t {
            fn attr_type() -> AttrType {
                AttrType::Scalar { dtype: <$t as Element>::ELEMENT_TYPE }
            }
            fn lit(&self) -> AttrLit {
                AttrLit::Float(f64::from(*self), <$t as Element>::ELEMENT_TYPE)
            }
            fn decode(attrs: &Dictionary<'f>, name: &str) -> Result<Self, OpError> {
                attrs.attr_scalar::<$t>(name)
            }
        }
    )*};
}
float_attr!(f32, f64);

impl<'f> AttrValue<'f> for bool {
    fn attr_type() -> AttrType {
        AttrType::Bool
    }
    fn lit(&self) -> AttrLit {
        AttrLit::Bool(*self)
    }
    fn decode(attrs: &Dictionary<'f>, name: &str) -> Result<Self, OpError> {
        attrs.attr_bool(name)
    }
}

/// The element types of array attributes (`&[T]`): i8, i16, i32, i64, f32, f64.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be an element of an array attribute",
    label = "not an array attribute element",
    note = "array attributes are `&[T]` of i8, i16, i32, i64, f32 or f64"
)]
pub trait ArrayAttrElement: Element + NotBool {
    /// The elements as the program carries them.
    fn lit(values: &[Self]) -> AttrLit;
}
macro_rules! int_array_element {
    ($($t:ty),*) => {$(
        impl ArrayAttrElement for $t {
            fn lit(values: &[Self]) -> AttrLit {
                AttrLit::IntArray(
                    <$t as Element>::ELEMENT_TYPE,
                    values.iter().map(|&v| i64::from(v)).collect(),
                )
            }
        }
    )*};
}
int_array_element!(i8, i16, i32, i64);
macro_rules! float_array_element {
    ($($t:ty),*) => {$(
        impl ArrayAttrElement for $t {
            fn lit(values: &[Self]) -> AttrLit {
                AttrLit::FloatArray(
                    <$t as Element>::ELEMENT_TYPE,
                    values.iter().map(|&v| f64::from(v)).collect(),
                )
            }
        }
    )*};
}
float_array_element!(f32, f64);

impl<'f, T: ArrayAttrElement> AttrValue<'f> for &'f [T] {
    fn attr_type() -> AttrType {
        AttrType::Array {
            dtype: T::ELEMENT_TYPE,
        }
    }
    fn lit(&self) -> AttrLit {
        T::lit(self)
    }
    fn decode(attrs: &Dictionary<'f>, name: &str) -> Result<Self, OpError> {
        attrs.attr_array::<T>(name)
    }
}

/// A type that a `#[attr]` parameter can point at, `&V`: `str`, or a descriptor (packed into
/// the attribute, unpacked with full validation). `Decoded` is what the handler keeps for the
/// kernel's reference.
#[diagnostic::on_unimplemented(
    message = "`&{Self}` cannot be an attribute of a custom op",
    label = "neither `str` nor a descriptor",
    note = "a reference attribute is `&str` or `&T` with `T: Descriptor` (add \
            `#[derive(Descriptor)]` to `{Self}`)"
)]
pub trait AttrRef<'f> {
    /// What the handler holds.
    type Decoded: core::ops::Deref<Target = Self>;
    /// The schema's attribute type.
    fn attr_type() -> AttrType;
    /// The value, as the program carries it.
    fn lit(&self) -> AttrLit;
    /// Reads attribute `name` from the call.
    #[doc(hidden)]
    fn decode(attrs: &Dictionary<'f>, name: &str) -> Result<Self::Decoded, OpError>;
}

impl<'f> AttrRef<'f> for str {
    type Decoded = &'f str;
    fn attr_type() -> AttrType {
        AttrType::Str
    }
    fn lit(&self) -> AttrLit {
        AttrLit::Bytes(self.as_bytes().to_vec())
    }
    fn decode(attrs: &Dictionary<'f>, name: &str) -> Result<&'f str, OpError> {
        attrs.attr_str(name)
    }
}

/// An attribute type a shape rule can read as a size: the integer types. (`#[custom_op]`
/// bounds every by-value attribute that a shape rule names by it.)
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an integer attribute, and a shape rule reads this attribute",
    label = "not an integer type",
    note = "shape rules take integer attributes (i8..i64, u8..u64) and the lengths of array \
            attributes (`taps.len()`)"
)]
pub trait IntegerAttr {}

macro_rules! integer_attr {
    ($($t:ty),*) => {$(impl IntegerAttr for $t {})*};
}
integer_attr!(i8, i16, i32, i64, u8, u16, u32, u64);

/// A descriptor the handler unpacked, for a kernel's `&T` attribute.
#[derive(Debug)]
pub struct Unpacked<T>(T);

impl<T> core::ops::Deref for Unpacked<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<'f, T: Descriptor> AttrRef<'f> for T {
    type Decoded = Unpacked<T>;
    fn attr_type() -> AttrType {
        AttrType::Descriptor {
            descriptor: T::layout().clone(),
        }
    }
    fn lit(&self) -> AttrLit {
        AttrLit::Bytes(self.pack())
    }
    fn decode(attrs: &Dictionary<'f>, name: &str) -> Result<Unpacked<T>, OpError> {
        attrs.attr_descriptor::<T>(name).map(Unpacked)
    }
}

/// The call's attributes.
impl<'f> CallCx<'f> {
    /// All of the call's attributes, for named look-ups.
    pub(crate) fn attrs(&self) -> Dictionary<'f> {
        Dictionary::of(self.op, &self.frame.attrs)
    }

    /// The integer scalar attribute `name` as an `i64`, for shape rules (see
    /// [`Dictionary::attr_int`]).
    pub(crate) fn attr_int(&self, name: &str) -> Option<i64> {
        self.attrs().attr_int(name)
    }

    /// The number of elements of the array attribute `name`, for shape rules.
    pub(crate) fn attr_len(&self, name: &str) -> Option<i64> {
        self.attrs().attr_len(name)
    }

    /// The call's attributes in XLA's order: name, kind and value pointer.
    pub(in crate::ffi) fn attr_entries(
        &self,
    ) -> impl Iterator<Item = (Option<&'f [u8]>, i32, *mut core::ffi::c_void)> + 'f {
        self.attrs().entries()
    }

    /// Refuses an attribute of the call that is not one of `declared` (the op's attribute
    /// names), naming every such one, as XLA's own binding does ("Wrong number of
    /// attributes"): a misspelt attribute is an error, not ignored.
    pub(crate) fn expect_attributes<'n>(
        &self,
        declared: impl Iterator<Item = &'n str> + Clone,
    ) -> Result<(), OpError> {
        let mut unknown: Vec<String> = Vec::new();
        for (name, _, _) in self.attr_entries() {
            let key = name.unwrap_or(&[]);
            if !declared.clone().any(|d| d.as_bytes() == key) {
                unknown.push(format!("`{}`", String::from_utf8_lossy(key)));
            }
        }
        if unknown.is_empty() {
            return Ok(());
        }
        let names: Vec<String> = declared.map(|d| format!("`{d}`")).collect();
        Err(super::frame::op_err(
            self.op,
            crate::error::Refusal::UnknownAttribute,
            format!(
                "the call carries attribute{} {} that the op does not declare (it takes {})",
                if unknown.len() == 1 { "" } else { "s" },
                unknown.join(", "),
                if names.is_empty() {
                    "none".to_string()
                } else {
                    names.join(", ")
                }
            ),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_keep_type_and_value() {
        assert_eq!(
            AttrValue::lit(&-3i8),
            AttrLit::Int(-3, ElementType::I8),
            "an i8 keeps its type"
        );
        assert_eq!(
            AttrValue::lit(&u64::MAX),
            AttrLit::Int(i128::from(u64::MAX), ElementType::U64)
        );
        assert_eq!(
            AttrValue::lit(&0.1f32),
            AttrLit::Float(f64::from(0.1f32), ElementType::F32),
            "an f32 widens exactly"
        );
        assert_eq!(AttrValue::lit(&true), AttrLit::Bool(true));
        let xs: &[i16] = &[1, -2];
        assert_eq!(
            AttrValue::lit(&xs),
            AttrLit::IntArray(ElementType::I16, vec![1, -2])
        );
        let fs: &[f64] = &[0.25];
        assert_eq!(
            AttrValue::lit(&fs),
            AttrLit::FloatArray(ElementType::F64, vec![0.25])
        );
        assert_eq!(AttrRef::lit("ab"), AttrLit::Bytes(b"ab".to_vec()));
    }
}
