//! A set of attributes as XLA passes them (`XLA_FFI_Attrs`): the call's own, or a nested
//! dictionary. Every reader checks the attribute's kind and type before it reads; the handler's
//! `#[attr]` parameters, a `#[state]`'s attributes and a kernel's `#[attrs]` dictionary all read
//! through it.

use super::super::NotBool;
use super::super::abi::{
    XLA_FFI_ATTR_TYPE_ARRAY, XLA_FFI_ATTR_TYPE_DICTIONARY, XLA_FFI_ATTR_TYPE_SCALAR,
    XLA_FFI_ATTR_TYPE_STRING, XLA_FFI_Array, XLA_FFI_Attrs, XLA_FFI_ByteSpan, XLA_FFI_Scalar,
};
use super::super::frame::{element_name, op_err};
use super::super::table::bytes;
use super::{AttrRef, AttrValue};
use crate::descriptor::Descriptor;
use crate::error::{OpError, Refusal};
use crate::types::{Element, ElementType};
use core::ffi::c_void;

/// Attributes by name: the whole set of a call's attributes (a kernel's `#[attrs]` parameter,
/// as XLA's C++ `ffi::Dictionary` of `.Attrs()`), or a nested dictionary attribute.
///
/// Look-ups check the kind and type (`get::<i64>("n")` of an `f32` attribute is a
/// `[wrong_attribute_type]` error, never a reinterpretation); [`len`](Dictionary::len) and
/// [`iter`](Dictionary::iter) see every entry, in XLA's (sorted) order.
#[derive(Clone, Copy)]
pub struct Dictionary<'f> {
    op: &'static str,
    set: &'f XLA_FFI_Attrs,
}

impl core::fmt::Debug for Dictionary<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

/// What kind of value an attribute holds, as [`Dictionary::iter`] reports it.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttrKind {
    /// A scalar of this element type (`bool` is [`ElementType::Bool`]).
    Scalar(ElementType),
    /// An array of scalars of this element type.
    Array(ElementType),
    /// A string (or a packed descriptor).
    Str,
    /// A nested dictionary.
    Dictionary,
    /// A scalar or array of an element type customop does not read, or a kind XLA added
    /// later: its XLA attribute kind.
    Other(i32),
}

impl<'f> Dictionary<'f> {
    /// The attribute set `set` of op `op`, unchecked: for named look-ups, which need only the
    /// entries they find.
    pub(in crate::ffi) fn of(op: &'static str, set: &'f XLA_FFI_Attrs) -> Self {
        Dictionary { op, set }
    }

    /// The same set, checked for what iteration relies on: every entry has a UTF-8 name.
    pub(in crate::ffi) fn checked(self) -> Result<Self, OpError> {
        if self.set.size < 0 || (self.set.size > 0 && self.set.names.is_null()) {
            return Err(self.bad("the attribute set is malformed"));
        }
        for (name, _, _) in self.entries() {
            if name.and_then(|n| core::str::from_utf8(n).ok()).is_none() {
                return Err(self.bad("an attribute name is missing or not UTF-8"));
            }
        }
        Ok(self)
    }

    #[cold]
    fn bad(&self, what: &str) -> OpError {
        op_err(self.op, Refusal::BadAttribute, what)
    }

    /// The number of attributes.
    pub fn len(&self) -> usize {
        self.entries().count()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether attribute `name` is present.
    pub fn contains(&self, name: &str) -> bool {
        self.entries().any(|(n, _, _)| n == Some(name.as_bytes()))
    }

    /// Every attribute's name and kind, in XLA's order.
    pub fn iter(&self) -> impl Iterator<Item = (&'f str, AttrKind)> + 'f {
        self.entries().filter_map(|(name, ty, ptr)| {
            let name = core::str::from_utf8(name?).ok()?;
            Some((name, kind_of(ty, ptr)))
        })
    }

    /// The names, in XLA's order.
    pub fn names(&self) -> impl Iterator<Item = &'f str> + 'f {
        self.iter().map(|(n, _)| n)
    }

    /// The kind of attribute `name`, if present.
    pub fn kind(&self, name: &str) -> Option<AttrKind> {
        let (ty, ptr) = self.attr(name).ok()?;
        Some(kind_of(ty, ptr))
    }

    /// Attribute `name` by value: a scalar, `bool`, or `&[T]` of scalars; missing or of
    /// another type is an error.
    pub fn get<V: AttrValue<'f>>(&self, name: &str) -> Result<V, OpError> {
        V::decode(self, name)
    }

    /// Attribute `name` by reference: `&str`, or a descriptor packed into a string.
    pub fn get_ref<V: AttrRef<'f> + ?Sized>(&self, name: &str) -> Result<V::Decoded, OpError> {
        V::decode(self, name)
    }

    /// The nested dictionary attribute `name`.
    pub fn dict(&self, name: &str) -> Result<Dictionary<'f>, OpError> {
        let (ty, ptr) = self.attr(name)?;
        if ty != XLA_FFI_ATTR_TYPE_DICTIONARY {
            return Err(self.wrong(name, XLA_FFI_ATTR_TYPE_DICTIONARY, ty));
        }
        // SAFETY: a DICTIONARY attribute points at an XLA_FFI_Attrs valid for the call.
        let set = unsafe { &*(ptr as *const XLA_FFI_Attrs) };
        Dictionary { op: self.op, set }.checked()
    }

    /// Attribute `name` is of kind `found`, not `expected` (XLA_FFI_AttrType codes). The
    /// message also carries XLA's own words for it, as XLA's C++ `Dictionary::get` writes them
    /// (`Wrong attribute type: expected scalar but got string`), so that tests written against
    /// handlers made with XLA's C++ FFI pass as they are.
    #[cold]
    fn wrong(&self, name: &str, expected: i32, found: i32) -> OpError {
        let (expected, found) = (kind_name(expected), kind_name(found));
        let article = if expected.starts_with('a') { "an" } else { "a" };
        op_err(
            self.op,
            Refusal::WrongAttributeType,
            format!(
                "attribute `{name}` is not {article} {expected} (Wrong attribute type: expected \
                 {expected} but got {found})"
            ),
        )
    }

    /// Attribute `name` holds `found` (an XLA dtype code) where `expected` was declared; `what`
    /// is `scalar` or `array`. With XLA's words for it (`Wrong scalar data type: expected S64
    /// but got F64`).
    #[cold]
    fn wrong_dtype(&self, name: &str, what: &str, expected: ElementType, found: i32) -> OpError {
        let xla = u32::try_from(found)
            .ok()
            .and_then(ElementType::from_xla_code)
            .map_or_else(|| found.to_string(), |e| e.xla_name().to_string());
        let of = if what == "array" { "an array of " } else { "" };
        op_err(
            self.op,
            Refusal::WrongAttributeType,
            format!(
                "attribute `{name}`: expected {of}{expected}, got {} (Wrong {what} data type: \
                 expected {} but got {xla})",
                element_name(found),
                expected.xla_name()
            ),
        )
    }

    /// The entries in XLA's order: each one's name (`None` for a null name span), kind and
    /// value pointer (null where XLA passed no value, or no kinds to read it by).
    pub(in crate::ffi) fn entries(
        self,
    ) -> impl Iterator<Item = (Option<&'f [u8]>, i32, *mut c_void)> + 'f {
        let a: &'f XLA_FFI_Attrs = self.set;
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
        for (key, ty, ptr) in self.entries() {
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
            // XLA's C++ `Dictionary::get` says "Unexpected attribute" for a name it lacks.
            format!(
                "attribute `{name}` is missing from backend_config (Unexpected attribute: {name})"
            ),
        ))
    }

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

    /// The value pointer of scalar attribute `name`, checked to have element type `element`.
    fn scalar_attr(&self, name: &str, element: ElementType) -> Result<*const c_void, OpError> {
        let (ty, ptr) = self.attr(name)?;
        if ty != XLA_FFI_ATTR_TYPE_SCALAR {
            return Err(self.wrong(name, XLA_FFI_ATTR_TYPE_SCALAR, ty));
        }
        // SAFETY: a SCALAR attribute points at an XLA_FFI_Scalar valid for the call.
        let s = unsafe { &*(ptr as *const XLA_FFI_Scalar) };
        if s.dtype as u32 != element.xla_code() || s.value.is_null() {
            return Err(self.wrong_dtype(name, "scalar", element, s.dtype));
        }
        Ok(s.value as *const c_void)
    }

    /// The scalar attribute `name` of type `T` (a mismatch is an error, not garbage); for
    /// `bool` use [`Dictionary::attr_bool`].
    pub(crate) fn attr_scalar<T: Element + NotBool>(&self, name: &str) -> Result<T, OpError> {
        let value = self.scalar_attr(name, T::ELEMENT_TYPE)?;
        // SAFETY: the scalar's value has the checked dtype, and every bit pattern of a
        // `NotBool` type is a value; read unaligned to be safe.
        Ok(unsafe { core::ptr::read_unaligned(value as *const T) })
    }

    /// The boolean attribute `name`.
    pub(crate) fn attr_bool(&self, name: &str) -> Result<bool, OpError> {
        let value = self.scalar_attr(name, ElementType::Bool)?;
        // SAFETY: a PRED scalar is one byte; read it as u8, not as bool, so any byte is fine.
        let byte = unsafe { core::ptr::read(value as *const u8) };
        Ok(byte != 0)
    }

    /// The string attribute `name`, as bytes.
    pub(crate) fn attr_bytes(&self, name: &str) -> Result<&'f [u8], OpError> {
        let (ty, ptr) = self.attr(name)?;
        if ty != XLA_FFI_ATTR_TYPE_STRING {
            return Err(self.wrong(name, XLA_FFI_ATTR_TYPE_STRING, ty));
        }
        // SAFETY: a STRING attribute points at a byte span valid for the call.
        let s = unsafe { &*(ptr as *const XLA_FFI_ByteSpan) };
        // SAFETY: `ptr` points at `len` bytes valid for the call (or is null: no bytes).
        Ok(unsafe { bytes(s.ptr as *const u8, s.len) })
    }

    /// The string attribute `name`, which must be UTF-8.
    pub(crate) fn attr_str(&self, name: &str) -> Result<&'f str, OpError> {
        core::str::from_utf8(self.attr_bytes(name)?).map_err(|_| {
            op_err(
                self.op,
                Refusal::BadAttribute,
                format!("attribute `{name}` is not UTF-8"),
            )
        })
    }

    /// The array attribute `name` of `T`.
    pub(crate) fn attr_array<T: Element + NotBool>(&self, name: &str) -> Result<&'f [T], OpError> {
        let (ty, ptr) = self.attr(name)?;
        if ty != XLA_FFI_ATTR_TYPE_ARRAY {
            return Err(self.wrong(name, XLA_FFI_ATTR_TYPE_ARRAY, ty));
        }
        // SAFETY: an ARRAY attribute points at an XLA_FFI_Array valid for the call.
        let a = unsafe { &*(ptr as *const XLA_FFI_Array) };
        if a.dtype as u32 != T::ELEMENT_TYPE.xla_code() {
            return Err(self.wrong_dtype(name, "array", T::ELEMENT_TYPE, a.dtype));
        }
        if a.size == 0 {
            return Ok(&[]);
        }
        if a.data.is_null() || !(a.data as usize).is_multiple_of(core::mem::align_of::<T>()) {
            return Err(self.bad(&format!("attribute `{name}`: misaligned array")));
        }
        // SAFETY: `size` elements of the checked dtype, aligned, valid for the call.
        Ok(unsafe { core::slice::from_raw_parts(a.data as *const T, a.size) })
    }

    /// The descriptor attribute `name`: wire-format bytes, unpacked with full validation.
    pub(crate) fn attr_descriptor<T: Descriptor>(&self, name: &str) -> Result<T, OpError> {
        T::unpack(self.attr_bytes(name)?).map_err(|e| {
            op_err(
                self.op,
                Refusal::BadDescriptor,
                format!("attribute `{name}` ({}): {e}", e.kind().name()),
            )
        })
    }
}

/// The kind of an entry of XLA kind `ty` whose value is at `ptr`.
fn kind_of(ty: i32, ptr: *mut c_void) -> AttrKind {
    let element = |code: i32| {
        u32::try_from(code)
            .ok()
            .and_then(ElementType::from_xla_code)
    };
    if ptr.is_null() {
        return AttrKind::Other(ty);
    }
    match ty {
        XLA_FFI_ATTR_TYPE_SCALAR => {
            // SAFETY: a SCALAR attribute points at an XLA_FFI_Scalar valid for the call.
            let s = unsafe { &*(ptr as *const XLA_FFI_Scalar) };
            element(s.dtype).map_or(AttrKind::Other(ty), AttrKind::Scalar)
        }
        XLA_FFI_ATTR_TYPE_ARRAY => {
            // SAFETY: an ARRAY attribute points at an XLA_FFI_Array valid for the call.
            let a = unsafe { &*(ptr as *const XLA_FFI_Array) };
            element(a.dtype).map_or(AttrKind::Other(ty), AttrKind::Array)
        }
        XLA_FFI_ATTR_TYPE_STRING => AttrKind::Str,
        XLA_FFI_ATTR_TYPE_DICTIONARY => AttrKind::Dictionary,
        other => AttrKind::Other(other),
    }
}

/// XLA's name of an attribute kind (`XLA_FFI_AttrType`), as its C++ FFI prints it.
fn kind_name(kind: i32) -> &'static str {
    match kind {
        XLA_FFI_ATTR_TYPE_ARRAY => "array",
        XLA_FFI_ATTR_TYPE_DICTIONARY => "dictionary",
        XLA_FFI_ATTR_TYPE_SCALAR => "scalar",
        XLA_FFI_ATTR_TYPE_STRING => "string",
        _ => "attribute of an unknown kind",
    }
}
