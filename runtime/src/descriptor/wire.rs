//! How each field type is written in a descriptor's payload.

use super::error::{DescriptorError, ErrorKind};
use super::layout::TypeLayout;

/// A type that can be a descriptor field with a fixed layout: primitives, `bool`, arrays of
/// fixed types, field-less enums and fixed-layout descriptors (all through
/// `#[derive(Descriptor)]` for your own types).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a descriptor field: add `#[derive(Descriptor)]` to it, \
               without `Vec`/`String` fields",
    label = "not a fixed-layout descriptor field type",
    note = "descriptor fields are bool, i8..i64, u8..u64, f16, bf16, f32, f64, the fp8 types \
            (F8E4M3FN, F8E5M2, F8E4M3, F8E3M4, F8E4M3FNUZ, F8E5M2FNUZ, F8E4M3B11FNUZ, \
            F8E8M0FNU), [T; N], Vec<T>, String, field-less enums with an explicit repr, and \
            other descriptors of fixed layout (a descriptor with `Vec` or `String` tails cannot \
            be nested); a field is at least a byte, so the packed sub-byte types (I4, U4, I2, \
            U2, F4E2M1FN) are not fields: store their bits in a u8 or an array of u8"
)]
pub trait Wire: Sized {
    /// Bytes in the fixed part (a multiple of `ALIGN`).
    const SIZE: usize;
    /// Alignment relative to the payload's start.
    const ALIGN: usize;
    /// The type, for the layout and the canonical string.
    fn describe() -> TypeLayout;
    /// Writes the value into `out` (exactly `SIZE` bytes, zeroed).
    fn write(&self, out: &mut [u8]);
    /// Reads a value from `bytes` (exactly `SIZE` bytes), validating it.
    fn read(bytes: &[u8]) -> Result<Self, DescriptorError>;
    /// Whether every byte pattern of `SIZE` bytes is a valid value (integers, floats and arrays
    /// of them): such values are read without checks.
    const PLAIN: bool = false;
    #[doc(hidden)]
    /// Reads a value of a `PLAIN` type (exactly `SIZE` bytes); other types never call it.
    #[inline]
    fn read_plain(bytes: &[u8]) -> Self {
        let _ = bytes;
        Self::placeholder()
    }
    #[doc(hidden)]
    /// Reads `[Self; N]` of a `PLAIN` type from exactly `N * SIZE` bytes.
    #[inline]
    fn read_plain_array<const N: usize>(bytes: &[u8]) -> [Self; N] {
        core::array::from_fn(|i| Self::read_plain(&bytes[i * Self::SIZE..(i + 1) * Self::SIZE]))
    }
    #[doc(hidden)]
    /// Any value of the type: stands in for an array element that failed to read, so that
    /// arrays are read in one pass (the array's read then returns the error).
    fn placeholder() -> Self;
}

/// A field-less enum with an explicit integer `repr` (the derive implements it, and [`Wire`]).
pub trait WireEnum: Wire {
    /// The enum's variants' discriminants, in declaration order.
    const DISCRIMINANTS: &'static [i64];
}

macro_rules! wire_int {
    ($($t:ty => $kind:ident),* $(,)?) => {$(
        impl Wire for $t {
            const SIZE: usize = core::mem::size_of::<$t>();
            const ALIGN: usize = core::mem::size_of::<$t>();
            fn describe() -> TypeLayout { TypeLayout::$kind }
            #[inline]
            fn write(&self, out: &mut [u8]) {
                out.copy_from_slice(&self.to_le_bytes());
            }
            #[inline]
            fn read(bytes: &[u8]) -> Result<Self, DescriptorError> {
                let mut a = [0u8; core::mem::size_of::<$t>()];
                a.copy_from_slice(bytes);
                Ok(<$t>::from_le_bytes(a))
            }
            #[inline]
            fn placeholder() -> Self { 0 as $t }
            const PLAIN: bool = true;
            #[inline]
            fn read_plain(bytes: &[u8]) -> Self {
                let mut a = [0u8; core::mem::size_of::<$t>()];
                a.copy_from_slice(bytes);
                <$t>::from_le_bytes(a)
            }
        }
    )*};
}

wire_int!(
    i8 => I8, i16 => I16, i32 => I32, i64 => I64,
    u16 => U16, u32 => U32, u64 => U64,
    f32 => F32, f64 => F64,
);

/// The half floats: their little-endian bits; every bit pattern is a value (NaNs included).
macro_rules! wire_half {
    ($($t:ty => $kind:ident),* $(,)?) => {$(
        impl Wire for $t {
            const SIZE: usize = 2;
            const ALIGN: usize = 2;
            const PLAIN: bool = true;
            fn describe() -> TypeLayout { TypeLayout::$kind }
            #[inline]
            fn write(&self, out: &mut [u8]) {
                out.copy_from_slice(&self.to_le_bytes());
            }
            #[inline]
            fn read(bytes: &[u8]) -> Result<Self, DescriptorError> {
                Ok(Self::read_plain(bytes))
            }
            #[inline]
            fn read_plain(bytes: &[u8]) -> Self {
                let mut a = [0u8; 2];
                a.copy_from_slice(bytes);
                <$t>::from_le_bytes(a)
            }
            #[inline]
            fn placeholder() -> Self { <$t>::ZERO }
        }
    )*};
}

wire_half!(half::f16 => F16, half::bf16 => BF16);

/// The 8-bit floats: their bits, one byte; every bit pattern is a value (NaNs included).
macro_rules! wire_float8 {
    ($(crate::float8::$t:ident),* $(,)?) => {$(
        impl Wire for crate::float8::$t {
            const SIZE: usize = 1;
            const ALIGN: usize = 1;
            const PLAIN: bool = true;
            fn describe() -> TypeLayout { TypeLayout::$t }
            #[inline]
            fn write(&self, out: &mut [u8]) {
                out[0] = self.to_bits();
            }
            #[inline]
            fn read(bytes: &[u8]) -> Result<Self, DescriptorError> {
                Ok(Self::read_plain(bytes))
            }
            #[inline]
            fn read_plain(bytes: &[u8]) -> Self {
                Self::from_bits(bytes[0])
            }
            #[inline]
            fn placeholder() -> Self { Self::from_bits(0) }
        }
    )*};
}

crate::float8::with_float8_types!(wire_float8);

/// `u8`, whose arrays (tags, names, raw bytes) are read with one copy.
impl Wire for u8 {
    const SIZE: usize = 1;
    const ALIGN: usize = 1;
    const PLAIN: bool = true;
    fn describe() -> TypeLayout {
        TypeLayout::U8
    }
    #[inline]
    fn write(&self, out: &mut [u8]) {
        out[0] = *self;
    }
    #[inline]
    fn read(bytes: &[u8]) -> Result<Self, DescriptorError> {
        Ok(bytes[0])
    }
    #[inline]
    fn read_plain(bytes: &[u8]) -> Self {
        bytes[0]
    }
    #[inline]
    fn read_plain_array<const N: usize>(bytes: &[u8]) -> [Self; N] {
        let mut out = [0u8; N];
        out.copy_from_slice(bytes);
        out
    }
    #[inline]
    fn placeholder() -> Self {
        0
    }
}

impl Wire for bool {
    const SIZE: usize = 1;
    const ALIGN: usize = 1;
    fn describe() -> TypeLayout {
        TypeLayout::Bool
    }
    #[inline]
    fn write(&self, out: &mut [u8]) {
        out[0] = *self as u8;
    }
    #[inline]
    fn read(bytes: &[u8]) -> Result<Self, DescriptorError> {
        match bytes[0] {
            0 => Ok(false),
            1 => Ok(true),
            byte => Err(DescriptorError::field_error(ErrorKind::InvalidBool {
                byte,
            })),
        }
    }
    #[inline]
    fn placeholder() -> Self {
        false
    }
}

impl<T: Wire, const N: usize> Wire for [T; N] {
    const SIZE: usize = T::SIZE * N;
    const ALIGN: usize = T::ALIGN;
    fn describe() -> TypeLayout {
        TypeLayout::Array {
            len: N,
            element: Box::new(T::describe()),
        }
    }
    #[inline]
    fn write(&self, out: &mut [u8]) {
        if T::SIZE == 0 {
            return;
        }
        for (v, chunk) in self.iter().zip(out.chunks_exact_mut(T::SIZE)) {
            v.write(chunk);
        }
    }
    #[inline]
    fn read(bytes: &[u8]) -> Result<Self, DescriptorError> {
        if T::PLAIN {
            // Every byte pattern is a value: one pass, nothing to check.
            return Ok(T::read_plain_array::<N>(bytes));
        }
        let mut err = None;
        let out = core::array::from_fn(|i| match T::read(&bytes[i * T::SIZE..(i + 1) * T::SIZE]) {
            Ok(v) => v,
            Err(e) => {
                if err.is_none() {
                    err = Some(e.in_field(&format!("[{i}]")));
                }
                T::placeholder()
            }
        });
        match err {
            None => Ok(out),
            Some(e) => Err(e),
        }
    }
    #[inline]
    fn placeholder() -> Self {
        core::array::from_fn(|_| T::placeholder())
    }
    const PLAIN: bool = T::PLAIN;
    #[inline]
    fn read_plain(bytes: &[u8]) -> Self {
        T::read_plain_array::<N>(bytes)
    }
}

/// Writes a fixed field at `offset` of the payload.
#[inline]
pub fn write_field<T: Wire>(v: &T, payload: &mut [u8], offset: usize) {
    v.write(&mut payload[offset..offset + T::SIZE]);
}

/// Reads a fixed field at `offset` of the payload (the caller checked the fixed part's length),
/// naming the field in any error.
#[inline]
pub fn read_field<T: Wire>(
    payload: &[u8],
    offset: usize,
    name: &str,
) -> Result<T, DescriptorError> {
    T::read(&payload[offset..offset + T::SIZE]).map_err(|e| e.in_field(name))
}

/// Validates a fixed field at `offset` without keeping its value: nothing to do for a `PLAIN`
/// type (every bit pattern is a value), a full read for the others (bool, enums, nested).
#[inline]
pub fn check_field<T: Wire>(
    payload: &[u8],
    offset: usize,
    name: &str,
) -> Result<(), DescriptorError> {
    if T::PLAIN {
        return Ok(());
    }
    read_field::<T>(payload, offset, name).map(drop)
}

/// Checks that the payload's padding bytes in `from..to` are zero.
#[inline]
pub fn check_zero(payload: &[u8], from: usize, to: usize) -> Result<(), DescriptorError> {
    match payload[from..to].iter().position(|&b| b != 0) {
        None => Ok(()),
        Some(i) => Err(DescriptorError::field_error(ErrorKind::NonzeroPadding {
            offset: from + i,
        })),
    }
}

const fn align_up(at: usize, align: usize) -> usize {
    at.div_ceil(align) * align
}

/// The end of a `Vec<T>` tail of `len` elements starting at `at`.
pub fn tail_len_vec<T: Wire>(at: usize, len: usize) -> usize {
    align_up(align_up(at, 4) + 4, T::ALIGN.max(1)) + len * T::SIZE
}

/// The end of a `String` tail of `len` bytes starting at `at`.
pub fn tail_len_string(at: usize, len: usize) -> usize {
    align_up(at, 4) + 4 + len
}

/// Writes a `Vec<T>` tail at `at` (padding, u32 count, padding, elements); returns its end.
pub fn write_vec_tail<T: Wire>(v: &[T], payload: &mut [u8], at: usize) -> usize {
    let count_at = align_up(at, 4);
    payload[count_at..count_at + 4].copy_from_slice(&(v.len() as u32).to_le_bytes());
    let mut p = align_up(count_at + 4, T::ALIGN.max(1));
    for x in v {
        x.write(&mut payload[p..p + T::SIZE]);
        p += T::SIZE;
    }
    p
}

/// Writes a `String` tail at `at` (padding, u32 byte length, bytes); returns its end.
pub fn write_string_tail(s: &str, payload: &mut [u8], at: usize) -> usize {
    let count_at = align_up(at, 4);
    payload[count_at..count_at + 4].copy_from_slice(&(s.len() as u32).to_le_bytes());
    let p = count_at + 4;
    payload[p..p + s.len()].copy_from_slice(s.as_bytes());
    p + s.len()
}

/// Reads the padding and u32 length that start a tail at `at`; returns `(length, data start)`.
fn read_tail_head(
    payload: &[u8],
    at: usize,
    align: usize,
) -> Result<(usize, usize), DescriptorError> {
    let count_at = align_up(at, 4);
    let too_short = |needed| {
        DescriptorError::field_error(ErrorKind::TooShort {
            needed: super::HEADER_SIZE + needed,
            got: super::HEADER_SIZE + payload.len(),
        })
    };
    if payload.len() < count_at + 4 {
        return Err(too_short(count_at + 4));
    }
    check_zero(payload, at, count_at)?;
    let mut a = [0u8; 4];
    a.copy_from_slice(&payload[count_at..count_at + 4]);
    let len = u32::from_le_bytes(a) as usize;
    let data = align_up(count_at + 4, align);
    if payload.len() < data {
        return Err(too_short(data));
    }
    check_zero(payload, count_at + 4, data)?;
    Ok((len, data))
}

/// The elements of a tail of `size`-byte elements aligned to `align` at `at`: `(data start,
/// count, end)`, the count checked against the bytes that remain.
pub(super) fn tail_span(
    payload: &[u8],
    at: usize,
    size: usize,
    align: usize,
) -> Result<(usize, usize, usize), DescriptorError> {
    let (len, data) = read_tail_head(payload, at, align.max(1))?;
    let available = payload.len() - data;
    // A zero-size element still costs one byte of budget, so a count never exceeds the input.
    match len.checked_mul(size.max(1)) {
        Some(n) if n <= available => Ok((data, len, data + len * size)),
        _ => Err(DescriptorError::field_error(ErrorKind::TailLength {
            len: len as u64,
            available,
        })),
    }
}

/// Reads a `Vec<T>` tail at `at`; returns it and its end. Allocates only for elements that the
/// remaining bytes hold.
pub fn read_vec_tail<T: Wire>(
    payload: &[u8],
    at: usize,
    name: &str,
) -> Result<(Vec<T>, usize), DescriptorError> {
    let (data, len, end) =
        tail_span(payload, at, T::SIZE, T::ALIGN).map_err(|e| e.in_field(name))?;
    if T::PLAIN {
        let out = payload[data..end]
            .chunks_exact(T::SIZE.max(1))
            .take(len)
            .map(T::read_plain)
            .collect();
        return Ok((out, end));
    }
    let mut out = Vec::with_capacity(len);
    let mut p = data;
    for i in 0..len {
        out.push(
            T::read(&payload[p..p + T::SIZE])
                .map_err(|e| e.in_field(&format!("[{i}]")).in_field(name))?,
        );
        p += T::SIZE;
    }
    Ok((out, p))
}

/// Reads a `String` tail at `at`; returns it and its end.
pub fn read_string_tail(
    payload: &[u8],
    at: usize,
    name: &str,
) -> Result<(String, usize), DescriptorError> {
    let (len, data) = read_tail_head(payload, at, 1).map_err(|e| e.in_field(name))?;
    let available = payload.len() - data;
    if len > available {
        return Err(DescriptorError::field_error(ErrorKind::TailLength {
            len: len as u64,
            available,
        })
        .in_field(name));
    }
    let bytes = &payload[data..data + len];
    match core::str::from_utf8(bytes) {
        Ok(s) => Ok((s.to_string(), data + len)),
        Err(e) => Err(DescriptorError::field_error(ErrorKind::InvalidUtf8 {
            at: e.valid_up_to(),
        })
        .in_field(name)),
    }
}
