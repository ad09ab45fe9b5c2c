//! Element types and static tensor types, shared by the schema, the builder and the handlers.
//!
//! Nothing here depends on MLIR: a kernel cdylib uses the same types to check XLA's buffers.

use core::fmt;

#[cfg(test)]
mod book;
mod element;
mod names;
mod tensor_type;

pub use element::{Element, ElementOf};
pub use tensor_type::{ShapeError, TensorType};

/// The element type of a tensor.
///
/// Each variant names the MLIR spelling ([`ElementType::mlir_name`]) and the XLA FFI
/// data type code ([`ElementType::xla_code`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ElementType {
    /// `i1`: a boolean (one byte in XLA buffers).
    Bool,
    /// `i8`.
    I8,
    /// `i16`.
    I16,
    /// `i32`.
    I32,
    /// `i64`.
    I64,
    /// `ui8`.
    U8,
    /// `ui16`.
    U16,
    /// `ui32`.
    U32,
    /// `ui64`.
    U64,
    /// `f32`.
    F32,
    /// `f64`.
    F64,
    /// `f16`: IEEE binary16 ([`half::f16`]).
    F16,
    /// `bf16`: bfloat16 ([`half::bf16`]).
    BF16,
    /// `complex<f32>` ([`Complex64`], XLA's C64).
    C64,
    /// `complex<f64>` ([`Complex128`], XLA's C128).
    C128,
    /// `f8E4M3FN`: 8-bit float, 4 exponent and 3 mantissa bits, no infinities
    /// ([`F8E4M3FN`](crate::float8::F8E4M3FN)).
    F8E4M3FN,
    /// `f8E5M2`: 8-bit float, 5 exponent and 2 mantissa bits ([`F8E5M2`](crate::float8::F8E5M2)).
    F8E5M2,
    /// `f8E4M3`: an IEEE-like 8-bit float, 4 exponent and 3 mantissa bits ([`F8E4M3`](crate::float8::F8E4M3)).
    F8E4M3,
    /// `f8E3M4`: an IEEE-like 8-bit float, 3 exponent and 4 mantissa bits ([`F8E3M4`](crate::float8::F8E3M4)).
    F8E3M4,
    /// `f8E4M3FNUZ`: 8-bit float, 4 exponent and 3 mantissa bits, bias 8, no −0 or infinities ([`F8E4M3FNUZ`](crate::float8::F8E4M3FNUZ)).
    F8E4M3FNUZ,
    /// `f8E5M2FNUZ`: 8-bit float, 5 exponent and 2 mantissa bits, bias 16, no −0 or infinities ([`F8E5M2FNUZ`](crate::float8::F8E5M2FNUZ)).
    F8E5M2FNUZ,
    /// `f8E4M3B11FNUZ`: 8-bit float, 4 exponent and 3 mantissa bits, bias 11, no −0 or infinities ([`F8E4M3B11FNUZ`](crate::float8::F8E4M3B11FNUZ)).
    F8E4M3B11FNUZ,
    /// `f8E8M0FNU`: an unsigned 8-bit power of two (the MX block scale) ([`F8E8M0FNU`](crate::float8::F8E8M0FNU)).
    F8E8M0FNU,
    /// `i4`: a 4-bit signed integer, two per byte in XLA's buffers ([`I4`](crate::packed::I4)).
    S4,
    /// `ui4`: a 4-bit unsigned integer, two per byte ([`U4`](crate::packed::U4)).
    U4,
    /// `i2`: a 2-bit signed integer, four per byte ([`I2`](crate::packed::I2)).
    S2,
    /// `ui2`: a 2-bit unsigned integer, four per byte ([`U2`](crate::packed::U2)).
    U2,
    /// `f4E2M1FN`: a 4-bit float, 2 exponent and 1 mantissa bits, two per byte ([`F4E2M1FN`](crate::packed::F4E2M1FN)).
    F4E2M1FN,
}

/// `complex<f32>`: two `f32`s, real part first (`num_complex::Complex<f32>`, `#[repr(C)]`).
pub type Complex64 = num_complex::Complex<f32>;
/// `complex<f64>`: two `f64`s, real part first (`num_complex::Complex<f64>`, `#[repr(C)]`).
pub type Complex128 = num_complex::Complex<f64>;

impl ElementType {
    /// Every element type, in declaration order.
    pub const ALL: [ElementType; 28] = [
        ElementType::Bool,
        ElementType::I8,
        ElementType::I16,
        ElementType::I32,
        ElementType::I64,
        ElementType::U8,
        ElementType::U16,
        ElementType::U32,
        ElementType::U64,
        ElementType::F32,
        ElementType::F64,
        ElementType::F16,
        ElementType::BF16,
        ElementType::C64,
        ElementType::C128,
        ElementType::F8E4M3FN,
        ElementType::F8E5M2,
        ElementType::F8E4M3,
        ElementType::F8E3M4,
        ElementType::F8E4M3FNUZ,
        ElementType::F8E5M2FNUZ,
        ElementType::F8E4M3B11FNUZ,
        ElementType::F8E8M0FNU,
        ElementType::S4,
        ElementType::U4,
        ElementType::S2,
        ElementType::U2,
        ElementType::F4E2M1FN,
    ];

    /// The size of one element in bytes, in XLA's buffers.
    pub const fn byte_size(self) -> usize {
        match self {
            ElementType::Bool
            | ElementType::I8
            | ElementType::U8
            | ElementType::F8E4M3FN
            | ElementType::F8E5M2
            | ElementType::F8E4M3
            | ElementType::F8E3M4
            | ElementType::F8E4M3FNUZ
            | ElementType::F8E5M2FNUZ
            | ElementType::F8E4M3B11FNUZ
            | ElementType::F8E8M0FNU => 1,
            // One per byte on the host (numpy, PJRT host buffers); packed in XLA's device
            // buffers (`packed_bytes`).
            ElementType::S4
            | ElementType::U4
            | ElementType::S2
            | ElementType::U2
            | ElementType::F4E2M1FN => 1,
            ElementType::I16 | ElementType::U16 | ElementType::F16 | ElementType::BF16 => 2,
            ElementType::I32 | ElementType::U32 | ElementType::F32 => 4,
            ElementType::I64 | ElementType::U64 | ElementType::F64 | ElementType::C64 => 8,
            ElementType::C128 => 16,
        }
    }

    /// Whether this is a real floating-point type (`f16`, `bf16`, `f32`, `f64`, the fp8 types);
    /// complex types are not (see [`ElementType::is_complex`]).
    pub const fn is_float(self) -> bool {
        matches!(
            self,
            ElementType::F16
                | ElementType::BF16
                | ElementType::F32
                | ElementType::F64
                | ElementType::F8E4M3FN
                | ElementType::F8E5M2
                | ElementType::F8E4M3
                | ElementType::F8E3M4
                | ElementType::F8E4M3FNUZ
                | ElementType::F8E5M2FNUZ
                | ElementType::F8E4M3B11FNUZ
                | ElementType::F8E8M0FNU
                | ElementType::F4E2M1FN
        )
    }

    /// Whether a tensor of this type has a derivative (a gradient, a tangent): `f16`, `bf16`,
    /// `f32` and `f64`. The one rule every layer applies: the compile-time check of a declared
    /// backward or tangent op, the manifest's `derivatives` (what JAX and torch read), and so
    /// the front ends' refusals. The 8- and 4-bit floats and the complex types have none.
    pub const fn is_differentiable(self) -> bool {
        matches!(
            self,
            ElementType::F16 | ElementType::BF16 | ElementType::F32 | ElementType::F64
        )
    }

    /// The number of bits of one element: 4 and 2 for the packed types, else 8 times the
    /// byte size.
    pub const fn bits(self) -> u32 {
        match self {
            ElementType::S4 | ElementType::U4 | ElementType::F4E2M1FN => 4,
            ElementType::S2 | ElementType::U2 => 2,
            e => 8 * e.byte_size() as u32,
        }
    }

    /// Whether XLA packs several elements of this type into a byte in its buffers (the 4- and
    /// 2-bit types): a kernel takes them as [`PackedRef`](crate::packed::PackedRef) and
    /// [`PackedMut`](crate::packed::PackedMut).
    pub const fn is_packed(self) -> bool {
        self.bits() < 8
    }

    /// The bytes `n` elements take in XLA's buffers: packed little-end first (element `i` at
    /// bit `(i % per_byte) * bits` of byte `i / per_byte`), the last byte's spare bits zero.
    /// `None` on overflow.
    pub const fn packed_bytes(self, n: usize) -> Option<usize> {
        match n.checked_mul(self.bits() as usize) {
            Some(bits) => Some(bits.div_ceil(8)),
            None => None,
        }
    }

    /// Whether this is a complex type (`complex<f32>`, `complex<f64>`).
    pub const fn is_complex(self) -> bool {
        matches!(self, ElementType::C64 | ElementType::C128)
    }

    /// The type of a complex type's real and imaginary parts (`f32` for `complex<f32>`).
    pub const fn complex_part(self) -> Option<ElementType> {
        match self {
            ElementType::C64 => Some(ElementType::F32),
            ElementType::C128 => Some(ElementType::F64),
            _ => None,
        }
    }

    /// Whether this is a signed or unsigned integer type (not `Bool`).
    pub const fn is_integer(self) -> bool {
        matches!(
            self,
            ElementType::I8
                | ElementType::I16
                | ElementType::I32
                | ElementType::I64
                | ElementType::U8
                | ElementType::U16
                | ElementType::U32
                | ElementType::U64
                | ElementType::S4
                | ElementType::U4
                | ElementType::S2
                | ElementType::U2
        )
    }

    /// Whether this is an unsigned integer type.
    pub const fn is_unsigned(self) -> bool {
        matches!(
            self,
            ElementType::U8
                | ElementType::U16
                | ElementType::U32
                | ElementType::U64
                | ElementType::U4
                | ElementType::U2
        )
    }
}

/// Whether a tensor that may be any of `allowed` (one fixed type, or a type parameter's list)
/// gets a derivative: every one of them has one ([`ElementType::is_differentiable`]). A type
/// parameter that also allows an integer type has none at any instance, so that one backward
/// op serves every instance: its `d_x` would have no type at `i32`.
pub(crate) const fn differentiable_types(allowed: &[ElementType]) -> bool {
    let mut i = 0;
    while i < allowed.len() {
        if !allowed[i].is_differentiable() {
            return false;
        }
        i += 1;
    }
    !allowed.is_empty()
}

impl ElementType {}

impl fmt::Display for ElementType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.mlir_name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tensor_type_prints_as_mlir() {
        let t = TensorType::new(ElementType::F32, [3, 3]).unwrap();
        assert_eq!(t.to_string(), "tensor<3x3xf32>");
        assert_eq!(
            TensorType::scalar(ElementType::U8).to_string(),
            "tensor<ui8>"
        );
        assert_eq!(
            TensorType::new(ElementType::U8, [56]).unwrap().to_string(),
            "tensor<56xui8>"
        );
    }

    #[test]
    fn negative_or_overflowing_shapes_are_rejected() {
        assert!(TensorType::new(ElementType::F32, [3, -1]).is_err());
        assert!(TensorType::new(ElementType::F32, [i64::MAX, 2]).is_err());
    }

    #[test]
    fn xla_codes_round_trip() {
        for t in ElementType::ALL {
            assert_eq!(ElementType::from_xla_code(t.xla_code()), Some(t));
        }
        assert_eq!(ElementType::from_xla_code(0), None);
        assert_eq!(ElementType::from_xla_code(17), None); // TOKEN: not an element type
        assert_eq!(ElementType::from_xla_code(28), Some(ElementType::F8E4M3));
        assert_eq!(ElementType::from_xla_code(21), Some(ElementType::S4));
        assert_eq!(ElementType::from_xla_code(30), None); // S1: no StableHLO type but i1 (pred)
    }

    #[test]
    fn complex_types_are_two_parts_real_first() {
        // The handler's slices over XLA's C64/C128 buffers rely on this layout.
        assert_eq!(core::mem::size_of::<Complex64>(), 8);
        assert_eq!(core::mem::align_of::<Complex64>(), 4);
        assert_eq!(core::mem::offset_of!(Complex64, re), 0);
        assert_eq!(core::mem::offset_of!(Complex64, im), 4);
        assert_eq!(core::mem::size_of::<Complex128>(), 16);
        assert_eq!(core::mem::align_of::<Complex128>(), 8);
        assert_eq!(core::mem::offset_of!(Complex128, re), 0);
        assert_eq!(core::mem::offset_of!(Complex128, im), 8);
        let z = [Complex64::new(1.5, -2.0)];
        // SAFETY: a Complex64 is 8 initialised bytes (asserted above); u8 has alignment 1.
        let bytes = unsafe { core::slice::from_raw_parts(z.as_ptr() as *const u8, 8) };
        assert_eq!(bytes[..4], 1.5f32.to_le_bytes());
        assert_eq!(bytes[4..], (-2.0f32).to_le_bytes());
    }

    #[test]
    fn kinds_partition_the_types() {
        for t in ElementType::ALL {
            let kinds = [
                t.is_float(),
                t.is_complex(),
                t.is_integer(),
                t == ElementType::Bool,
            ];
            assert_eq!(kinds.iter().filter(|&&k| k).count(), 1, "{t}");
            assert_eq!(t.complex_part().is_some(), t.is_complex(), "{t}");
        }
        assert_eq!(ElementType::BF16.kind_name(), "float");
        assert_eq!(ElementType::C64.kind_name(), "complex");
        assert_eq!(ElementType::F8E4M3FN.byte_size(), 1);
        assert_eq!(ElementType::C128.byte_size(), 16);
    }
}
