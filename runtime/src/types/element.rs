//! The Rust types of tensor elements: [`Element`] (sealed, checked against each type's byte
//! size) and [`ElementOf`], which the packed sub-byte types share.

use super::{Complex64, Complex128, ElementType};

/// A Rust scalar type that has an [`ElementType`].
///
/// Sealed: only customop implements it, for the types listed in the note below, because the
/// handler builds `&[T]` and `&mut [T]` over XLA's buffers from it. Each implementation is
/// checked at compile time: `size_of::<T>()` is the element type's byte size, and the
/// alignment divides it (a buffer of `n` elements is then exactly `n * size_of::<T>()` bytes).
/// A type alias of one of these types (`type Real = f32`) is the same type and works
/// everywhere.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a tensor element type",
    label = "not an element type",
    note = "tensor elements are bool, i8, i16, i32, i64, u8, u16, u32, u64, f32, f64, \
            half::f16, half::bf16, Complex64 and Complex128 (num_complex::Complex<f32>/<f64>), \
            the float8 types (F8E4M3FN, F8E5M2, F8E4M3, F8E3M4, F8E4M3FNUZ, F8E5M2FNUZ, \
            F8E4M3B11FNUZ, F8E8M0FNU; customop re-exports these crates and types), or \
            an alias of one; the trait is sealed: other types cannot implement it. The packed \
            sub-byte types (I4, U4, I2, U2, F4E2M1FN) are taken as `PackedRef<'_, T>` and \
            `PackedMut<'_, T>`, not `TensorRef`/`TensorMut`"
)]
pub trait Element: Copy + 'static + sealed::Sealed {
    /// The element type of this Rust type.
    const ELEMENT_TYPE: ElementType;
}

mod sealed {
    /// Implemented only here: see [`Element`](super::Element).
    pub trait Sealed {}
}

macro_rules! impl_element {
    ($($t:ty => $e:ident),* $(,)?) => {
        $(
            impl sealed::Sealed for $t {}
            impl Element for $t { const ELEMENT_TYPE: ElementType = ElementType::$e; }
            // The handler's slices over XLA's buffers rely on this (see `Element`).
            const _: () = assert!(
                core::mem::size_of::<$t>() == ElementType::$e.byte_size()
                    && ElementType::$e.byte_size() % core::mem::align_of::<$t>() == 0
            );
        )*
    };
}
impl_element!(
    bool => Bool, i8 => I8, i16 => I16, i32 => I32, i64 => I64,
    u8 => U8, u16 => U16, u32 => U32, u64 => U64, f32 => F32, f64 => F64,
    half::f16 => F16, half::bf16 => BF16, Complex64 => C64, Complex128 => C128,
    crate::float8::F8E4M3FN => F8E4M3FN, crate::float8::F8E5M2 => F8E5M2,
    crate::float8::F8E4M3 => F8E4M3,
    crate::float8::F8E3M4 => F8E3M4,
    crate::float8::F8E4M3FNUZ => F8E4M3FNUZ,
    crate::float8::F8E5M2FNUZ => F8E5M2FNUZ,
    crate::float8::F8E4M3B11FNUZ => F8E4M3B11FNUZ,
    crate::float8::F8E8M0FNU => F8E8M0FNU,
);

/// A type with an element type: every [`Element`], and the packed sub-byte types of
/// [`packed`](crate::packed) (which a kernel takes as `PackedRef`/`PackedMut`). What a
/// declaration's tensor types are read through.
pub trait ElementOf {
    /// The element type.
    const ELEMENT_TYPE: ElementType;
}

impl<T: Element> ElementOf for T {
    const ELEMENT_TYPE: ElementType = <T as Element>::ELEMENT_TYPE;
}

macro_rules! packed_element_of {
    ($($t:ident),*) => {$(
        impl ElementOf for crate::packed::$t {
            const ELEMENT_TYPE: ElementType = <crate::packed::$t as crate::packed::Packed>::ELEMENT_TYPE;
        }
    )*};
}
packed_element_of!(I4, U4, I2, U2, F4E2M1FN);
