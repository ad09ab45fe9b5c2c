//! The types an op's `#[attr]` parameters can have. One trait per way of passing (by value,
//! [`AttrValue`]; by reference, [`AttrRef`]) gives, for each type, all three things an
//! attribute needs: its type in the schema, its value as the program carries it ([`AttrLit`],
//! for the lowering and for any other front end), and its decoding from XLA's attributes in
//! the handler.

use super::abi::{
    XLA_FFI_ATTR_TYPE_ARRAY, XLA_FFI_ATTR_TYPE_SCALAR, XLA_FFI_ATTR_TYPE_STRING, XLA_FFI_Array,
    XLA_FFI_Attrs, XLA_FFI_ByteSpan, XLA_FFI_Scalar,
};
use super::frame::{element_name, op_err};
use super::table::bytes;
use super::{CallCx, NotBool};
use crate::descriptor::Descriptor;
use crate::error::OpError;
use crate::error::Refusal;
use crate::schema::AttrType;
use crate::types::{Element, ElementType};
use core::ffi::c_void;

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
    fn decode(cx: &CallCx<'f>, name: &str) -> Result<Self, OpError>;
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
            fn decode(cx: &CallCx<'f>, name: &str) -> Result<Self, OpError> {
                cx.attr_scalar::<$t>(name)
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
            fn decode(cx: &CallCx<'f>, name: &str) -> Result<Self, OpError> {
                cx.attr_scalar::<$t>(name)
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
    fn decode(cx: &CallCx<'f>, name: &str) -> Result<Self, OpError> {
        cx.attr_bool(name)
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
    fn decode(cx: &CallCx<'f>, name: &str) -> Result<Self, OpError> {
        cx.attr_array::<T>(name)
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
    fn decode(cx: &CallCx<'f>, name: &str) -> Result<Self::Decoded, OpError>;
}

impl<'f> AttrRef<'f> for str {
    type Decoded = &'f str;
    fn attr_type() -> AttrType {
        AttrType::Str
    }
    fn lit(&self) -> AttrLit {
        AttrLit::Bytes(self.as_bytes().to_vec())
    }
    fn decode(cx: &CallCx<'f>, name: &str) -> Result<&'f str, OpError> {
        cx.attr_str(name)
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
    fn decode(cx: &CallCx<'f>, name: &str) -> Result<Unpacked<T>, OpError> {
        cx.attr_descriptor::<T>(name).map(Unpacked)
    }
}

/// Reading attributes from the frame: each accessor checks the attribute's kind and type.
impl<'f> CallCx<'f> {
    /// The integer scalar attribute `name` (of any integer type) as an `i64`, for shape rules;
    /// `None` when it is absent, not an integer, or a `u64` beyond `i64`.
    pub(crate) fn attr_int(&self, name: &str) -> Option<i64> {
        let (ty, ptr) = self.attr(name).ok()?;
        if ty != XLA_FFI_ATTR_TYPE_SCALAR {
            return None;
        }
        // SAFETY: a SCALAR attribute points at an XLA_FFI_Scalar valid for the call.
        let s = unsafe { &*(ptr as *const XLA_FFI_Scalar) };
        let element = u32::try_from(s.dtype)
            .ok()
            .and_then(ElementType::from_xla_code)?;
        if s.value.is_null() {
            return None;
        }
        macro_rules! read {
            ($t:ty) => {
                // SAFETY: the scalar's value is one `$t` (its checked dtype), valid for the
                // call; read unaligned, and every bit pattern of an integer is a value.
                i64::try_from(unsafe { core::ptr::read_unaligned(s.value as *const $t) }).ok()
            };
        }
        match element {
            ElementType::I8 => read!(i8),
            ElementType::I16 => read!(i16),
            ElementType::I32 => read!(i32),
            ElementType::I64 => read!(i64),
            ElementType::U8 => read!(u8),
            ElementType::U16 => read!(u16),
            ElementType::U32 => read!(u32),
            ElementType::U64 => read!(u64),
            _ => None,
        }
    }

    /// The number of elements of the array attribute `name`, for shape rules.
    pub(crate) fn attr_len(&self, name: &str) -> Option<i64> {
        let (ty, ptr) = self.attr(name).ok()?;
        if ty != XLA_FFI_ATTR_TYPE_ARRAY {
            return None;
        }
        // SAFETY: an ARRAY attribute points at an XLA_FFI_Array valid for the call.
        let a = unsafe { &*(ptr as *const XLA_FFI_Array) };
        i64::try_from(a.size).ok()
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
        Err(op_err(
            self.op,
            Refusal::UnknownAttribute,
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

    /// The call's attributes in XLA's order: each one's name (`None` for a null name span),
    /// kind and value pointer (null where XLA passed no value, or no kinds to read it by).
    /// Only the names are required.
    pub(super) fn attr_entries(
        &self,
    ) -> impl Iterator<Item = (Option<&'f [u8]>, i32, *mut c_void)> + 'f {
        let a: &'f XLA_FFI_Attrs = &self.frame.attrs;
        let n = if a.size > 0 && !a.names.is_null() {
            a.size as usize
        } else {
            0
        };
        (0..n).map(move |i| {
            // SAFETY: `size` entries of `names` (and of `types` and `attrs` where those are
            // not null) are valid for the call.
            let (span, ty, ptr) = unsafe {
                (
                    *a.names.add(i),
                    if a.types.is_null() {
                        0
                    } else {
                        *a.types.add(i)
                    },
                    if a.attrs.is_null() || a.types.is_null() {
                        core::ptr::null_mut()
                    } else {
                        *a.attrs.add(i)
                    },
                )
            };
            let name = (!span.is_null()).then(|| {
                // SAFETY: a name is a byte span valid for the call.
                let span = unsafe { &*span };
                // SAFETY: `ptr` points at `len` bytes (or is null: no bytes).
                unsafe { bytes(span.ptr as *const u8, span.len) }
            });
            (name, ty, ptr)
        })
    }

    fn attr(&self, name: &str) -> Result<(i32, *mut c_void), OpError> {
        for (key, ty, ptr) in self.attr_entries() {
            if key == Some(name.as_bytes()) {
                if ptr.is_null() {
                    break;
                }
                return Ok((ty, ptr));
            }
        }
        Err(op_err(
            self.op,
            Refusal::MissingAttribute,
            format!("attribute `{name}` is missing from backend_config"),
        ))
    }

    /// The value pointer of scalar attribute `name`, checked to have element type `element`.
    fn scalar_attr(&self, name: &str, element: ElementType) -> Result<*const c_void, OpError> {
        let (ty, ptr) = self.attr(name)?;
        if ty != XLA_FFI_ATTR_TYPE_SCALAR {
            return Err(op_err(
                self.op,
                Refusal::WrongAttributeType,
                format!("attribute `{name}` is not a scalar"),
            ));
        }
        // SAFETY: a SCALAR attribute points at an XLA_FFI_Scalar valid for the call.
        let s = unsafe { &*(ptr as *const XLA_FFI_Scalar) };
        if s.dtype as u32 != element.xla_code() || s.value.is_null() {
            return Err(op_err(
                self.op,
                Refusal::WrongAttributeType,
                format!(
                    "attribute `{name}`: expected {element}, got {}",
                    element_name(s.dtype)
                ),
            ));
        }
        Ok(s.value as *const c_void)
    }

    /// The scalar attribute `name` of type `T` (a mismatch is an error, not garbage); for
    /// `bool` use [`CallCx::attr_bool`].
    pub fn attr_scalar<T: Element + NotBool>(&self, name: &str) -> Result<T, OpError> {
        let value = self.scalar_attr(name, T::ELEMENT_TYPE)?;
        // SAFETY: the scalar's value has the checked dtype, and every bit pattern of a
        // `NotBool` type is a value; read unaligned to be safe.
        Ok(unsafe { core::ptr::read_unaligned(value as *const T) })
    }

    /// The boolean attribute `name`.
    pub fn attr_bool(&self, name: &str) -> Result<bool, OpError> {
        let value = self.scalar_attr(name, ElementType::Bool)?;
        // SAFETY: a PRED scalar is one byte; read it as u8, not as bool, so any byte is fine.
        let byte = unsafe { core::ptr::read(value as *const u8) };
        Ok(byte != 0)
    }

    /// The string attribute `name`, as bytes.
    pub fn attr_bytes(&self, name: &str) -> Result<&'f [u8], OpError> {
        let (ty, ptr) = self.attr(name)?;
        if ty != XLA_FFI_ATTR_TYPE_STRING {
            return Err(op_err(
                self.op,
                Refusal::WrongAttributeType,
                format!("attribute `{name}` is not a string"),
            ));
        }
        // SAFETY: a STRING attribute points at a byte span valid for the call.
        let s = unsafe { &*(ptr as *const XLA_FFI_ByteSpan) };
        if s.ptr.is_null() {
            return Ok(&[]);
        }
        // SAFETY: `ptr` points at `len` bytes valid for the call.
        Ok(unsafe { core::slice::from_raw_parts(s.ptr as *const u8, s.len) })
    }

    /// The string attribute `name`, which must be UTF-8.
    pub fn attr_str(&self, name: &str) -> Result<&'f str, OpError> {
        core::str::from_utf8(self.attr_bytes(name)?).map_err(|_| {
            op_err(
                self.op,
                Refusal::BadAttribute,
                format!("attribute `{name}` is not UTF-8"),
            )
        })
    }

    /// The array attribute `name` of `T`.
    pub fn attr_array<T: Element>(&self, name: &str) -> Result<&'f [T], OpError> {
        let (ty, ptr) = self.attr(name)?;
        if ty != XLA_FFI_ATTR_TYPE_ARRAY {
            return Err(op_err(
                self.op,
                Refusal::WrongAttributeType,
                format!("attribute `{name}` is not an array"),
            ));
        }
        // SAFETY: an ARRAY attribute points at an XLA_FFI_Array valid for the call.
        let a = unsafe { &*(ptr as *const XLA_FFI_Array) };
        if a.dtype as u32 != T::ELEMENT_TYPE.xla_code() {
            return Err(op_err(
                self.op,
                Refusal::WrongAttributeType,
                format!(
                    "attribute `{name}`: expected an array of {}, got {}",
                    T::ELEMENT_TYPE,
                    element_name(a.dtype)
                ),
            ));
        }
        if a.size == 0 {
            return Ok(&[]);
        }
        if a.data.is_null() || (a.data as usize) % core::mem::align_of::<T>() != 0 {
            return Err(op_err(
                self.op,
                Refusal::BadAttribute,
                format!("attribute `{name}`: misaligned array"),
            ));
        }
        // SAFETY: `size` elements of the checked dtype, aligned, valid for the call.
        Ok(unsafe { core::slice::from_raw_parts(a.data as *const T, a.size) })
    }

    /// The descriptor attribute `name`: wire-format bytes, unpacked with full validation.
    pub fn attr_descriptor<T: Descriptor>(&self, name: &str) -> Result<T, OpError> {
        T::unpack(self.attr_bytes(name)?).map_err(|e| {
            op_err(
                self.op,
                Refusal::BadDescriptor,
                format!("attribute `{name}` ({}): {e}", e.kind().name()),
            )
        })
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
