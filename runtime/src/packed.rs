//! Sub-byte element types and the tensors XLA packs them into.
//!
//! XLA keeps the 4-bit and 2-bit types packed in its buffers: two `i4`/`ui4`/`f4E2M1FN` or
//! four `i2`/`ui2` elements a byte, element `i` at bit `(i % per_byte) * bits` of byte
//! `i / per_byte` (the low bits first: `[1, 2, 3]` of `i4` is the bytes `0x21 0x03`), the last
//! byte's spare bits zero. Measured on jaxlib 0.12's CPU client; numpy (ml_dtypes) and PJRT host
//! buffers keep one element a byte instead. A kernel takes such a tensor as [`PackedRef`] or
//! [`PackedMut`]: element access by index, iteration, unpacking a block into a wider type, and
//! the packed bytes for a kernel that works on them directly. Every bit pattern of these types
//! is a value, so no safe write can leave an invalid one.

use crate::tensor::{ANY_RANK, ViewError, element_count};
use crate::types::ElementType;
use core::marker::PhantomData;

mod sealed {
    pub trait Sealed {}
}

/// A sub-byte element type: its element type, its width, and its value as the low bits of a
/// byte (`code`). Sealed: only the types of this module implement it.
pub trait Packed: Copy + sealed::Sealed + 'static {
    /// The element type.
    const ELEMENT_TYPE: ElementType;
    /// Bits per element (4 or 2).
    const BITS: u32;
    /// The element whose bits are the low [`BITS`](Packed::BITS) of `code` (the rest ignored).
    fn from_code(code: u8) -> Self;
    /// The element's bits, in the low bits of the byte.
    fn code(self) -> u8;
}

macro_rules! packed_int {
    ($(#[$doc:meta])* $name:ident, $e:ident, $bits:expr, $repr:ty, $min:expr, $max:expr, signed = $signed:expr) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
        #[repr(transparent)]
        pub struct $name(u8);

        impl sealed::Sealed for $name {}

        impl Packed for $name {
            const ELEMENT_TYPE: ElementType = ElementType::$e;
            const BITS: u32 = $bits;
            fn from_code(code: u8) -> Self {
                $name(code & ((1u8 << $bits) - 1))
            }
            fn code(self) -> u8 {
                self.0
            }
        }

        impl $name {
            /// The smallest value.
            pub const MIN: $repr = $min;
            /// The largest value.
            pub const MAX: $repr = $max;

            /// `v`, if the type holds it.
            pub const fn new(v: $repr) -> Option<Self> {
                if v >= Self::MIN && v <= Self::MAX {
                    Some($name((v as u8) & ((1u8 << $bits) - 1)))
                } else {
                    None
                }
            }

            /// The low bits of `v` (two's complement), as ml_dtypes converts: `8` is `-8` in
            /// an `I4`.
            pub const fn wrapping(v: i64) -> Self {
                $name((v as u8) & ((1u8 << $bits) - 1))
            }

            /// The value.
            pub const fn get(self) -> $repr {
                if $signed && self.0 >> ($bits - 1) != 0 {
                    // Sign-extended: the code minus 2^bits, in the type's range.
                    (self.0 as i16 - (1i16 << $bits)) as $repr
                } else {
                    self.0 as $repr
                }
            }
        }

        impl core::fmt::Debug for $name {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                core::fmt::Debug::fmt(&self.get(), f)
            }
        }
    };
}

packed_int!(
    /// A 4-bit signed integer, -8..=7 (MLIR `i4`, XLA `S4`, `ml_dtypes.int4`).
    I4, S4, 4, i8, -8, 7, signed = true
);
packed_int!(
    /// A 4-bit unsigned integer, 0..=15 (MLIR `ui4`, XLA `U4`, `ml_dtypes.uint4`).
    U4, U4, 4, u8, 0, 15, signed = false
);
packed_int!(
    /// A 2-bit signed integer, -2..=1 (MLIR `i2`, XLA `S2`, `ml_dtypes.int2`).
    I2, S2, 2, i8, -2, 1, signed = true
);
packed_int!(
    /// A 2-bit unsigned integer, 0..=3 (MLIR `ui2`, XLA `U2`, `ml_dtypes.uint2`).
    U2, U2, 2, u8, 0, 3, signed = false
);

/// A 4-bit float, 2 exponent bits (bias 1) and 1 mantissa bit, finite: ±0, ±0.5, ±1, ±1.5,
/// ±2, ±3, ±4, ±6, no infinities or NaN (MLIR `f4E2M1FN`, XLA `F4E2M1FN`,
/// `ml_dtypes.float4_e2m1fn`; the OCP MXFP4 element). From `f32`: round to nearest, ties to
/// even; beyond ±6 (infinities too) saturates to ±6, and a NaN becomes the zero of the other
/// sign (`-0` from a positive NaN, `+0` from a negative one), as ml_dtypes does.
#[derive(Clone, Copy, Default)]
#[repr(transparent)]
pub struct F4E2M1FN(u8);

impl sealed::Sealed for F4E2M1FN {}

impl Packed for F4E2M1FN {
    const ELEMENT_TYPE: ElementType = ElementType::F4E2M1FN;
    const BITS: u32 = 4;
    fn from_code(code: u8) -> Self {
        F4E2M1FN(code & 0xF)
    }
    fn code(self) -> u8 {
        self.0
    }
}

/// The magnitudes of `F4E2M1FN`'s codes 0..=7.
const F4_VALUES: [f32; 8] = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0];

impl F4E2M1FN {
    /// The largest value, 6.
    pub const MAX: Self = F4E2M1FN(7);

    /// The value with these bits (the low four of `bits`).
    pub const fn from_bits(bits: u8) -> Self {
        F4E2M1FN(bits & 0xF)
    }

    /// The bits.
    pub const fn to_bits(self) -> u8 {
        self.0
    }

    /// `x` rounded to the nearest value (see the type's rules).
    pub fn from_f32(x: f32) -> Self {
        let b = x.to_bits();
        let sign = ((b >> 31) as u8) << 3;
        if x.is_nan() {
            // The type has no NaN: a zero, of the sign opposite the NaN's, as ml_dtypes gives
            // (its conversion goes through a comparison that a NaN fails, which flips it).
            return F4E2M1FN(if sign == 0 { 0x8 } else { 0x0 });
        }
        // Compared by bits, never with the FPU: XLA flushes denormals, and every midpoint of
        // this type is a normal f32 (the smallest, 0.25, is 2^-2).
        let mag = b & 0x7FFF_FFFF;
        let mut code = 7u8;
        for (i, pair) in F4_VALUES.windows(2).enumerate() {
            let mid = ((pair[0] + pair[1]) / 2.0).to_bits();
            if mag < mid || (mag == mid && i % 2 == 0) {
                code = i as u8;
                break;
            }
        }
        F4E2M1FN(sign | code)
    }

    /// The value, exactly.
    pub fn to_f32(self) -> f32 {
        let v = F4_VALUES[(self.0 & 7) as usize];
        if self.0 & 8 != 0 { -v } else { v }
    }
}

impl core::fmt::Debug for F4E2M1FN {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        core::fmt::Debug::fmt(&self.to_f32(), f)
    }
}

impl PartialEq for F4E2M1FN {
    fn eq(&self, other: &Self) -> bool {
        self.to_f32() == other.to_f32()
    }
}

/// Element `i` of the packed `bytes`.
#[inline]
fn read<T: Packed>(bytes: &[u8], i: usize) -> Option<T> {
    let per = (8 / T::BITS) as usize;
    let byte = *bytes.get(i / per)?;
    Some(T::from_code(byte >> ((i % per) as u32 * T::BITS)))
}

/// The dims' element count, checked against the packed byte count `bytes` and the rank.
fn checked_len<T: Packed>(bytes: usize, dims: &[i64], rank: usize) -> Result<usize, ViewError> {
    if rank != ANY_RANK && dims.len() != rank {
        return Err(ViewError {
            message: format!("expected rank {rank}, got shape {dims:?}"),
        });
    }
    let n = element_count(dims)?;
    let need = T::ELEMENT_TYPE.packed_bytes(n).ok_or_else(|| ViewError {
        message: format!("shape {dims:?} overflows"),
    })?;
    if need != bytes {
        return Err(ViewError {
            message: format!(
                "shape {dims:?} of {} packs to {need} bytes, the buffer has {bytes}",
                T::ELEMENT_TYPE
            ),
        });
    }
    Ok(n)
}

/// A read-only tensor of a packed type: its dimensions, and its elements packed as XLA
/// keeps them (see the module).
#[derive(Clone, Copy, Debug)]
pub struct PackedRef<'a, T: Packed, const RANK: usize = ANY_RANK> {
    bytes: &'a [u8],
    dims: &'a [i64],
    len: usize,
    _t: PhantomData<T>,
}

impl<'a, T: Packed, const RANK: usize> PackedRef<'a, T, RANK> {
    /// A view of `bytes`, the packed elements of a tensor of `dims`: the byte count must be
    /// what `dims` packs to, and the rank `RANK` (unless any).
    pub fn new(bytes: &'a [u8], dims: &'a [i64]) -> Result<Self, ViewError> {
        let len = checked_len::<T>(bytes.len(), dims, RANK)?;
        Ok(PackedRef {
            bytes,
            dims,
            len,
            _t: PhantomData,
        })
    }

    /// The dimensions.
    pub fn dims(&self) -> &'a [i64] {
        self.dims
    }

    /// Dimension `i` as a `usize` (0 past the rank).
    pub fn dim(&self, i: usize) -> usize {
        self.dims.get(i).map_or(0, |&d| d.max(0) as usize)
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Element `i` (row-major), if there is one.
    #[inline]
    pub fn get(&self, i: usize) -> Option<T> {
        if i < self.len {
            read(self.bytes, i)
        } else {
            None
        }
    }

    /// The elements in order.
    pub fn iter(&self) -> impl Iterator<Item = T> + 'a {
        let bytes = self.bytes;
        (0..self.len).filter_map(move |i| read(bytes, i))
    }

    /// Elements `start..start + out.len()` converted by `f` into `out` (a block unpacked to a
    /// wider type: `|q: I4| f32::from(q.get())`); `false`, and nothing written, if the block
    /// runs past the end.
    pub fn unpack_into<U>(&self, start: usize, out: &mut [U], f: impl Fn(T) -> U) -> bool {
        if start
            .checked_add(out.len())
            .is_none_or(|end| end > self.len)
        {
            return false;
        }
        for (k, o) in out.iter_mut().enumerate() {
            if let Some(v) = read(self.bytes, start + k) {
                *o = f(v);
            }
        }
        true
    }

    /// The packed bytes, as XLA keeps them.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }
}

/// A writable tensor of a packed type (an output): element writes by index, and the packed
/// bytes.
#[derive(Debug)]
pub struct PackedMut<'a, T: Packed, const RANK: usize = ANY_RANK> {
    bytes: &'a mut [u8],
    dims: &'a [i64],
    len: usize,
    _t: PhantomData<T>,
}

impl<'a, T: Packed, const RANK: usize> PackedMut<'a, T, RANK> {
    /// A view of `bytes` as the packed elements of a tensor of `dims` (see [`PackedRef::new`]).
    pub fn new(bytes: &'a mut [u8], dims: &'a [i64]) -> Result<Self, ViewError> {
        let len = checked_len::<T>(bytes.len(), dims, RANK)?;
        Ok(PackedMut {
            bytes,
            dims,
            len,
            _t: PhantomData,
        })
    }

    /// The dimensions.
    pub fn dims(&self) -> &'a [i64] {
        self.dims
    }

    /// Dimension `i` as a `usize` (0 past the rank).
    pub fn dim(&self, i: usize) -> usize {
        self.dims.get(i).map_or(0, |&d| d.max(0) as usize)
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Element `i`, if there is one (iteration and blocks: [`as_ref`](PackedMut::as_ref)).
    pub fn get(&self, i: usize) -> Option<T> {
        self.as_ref().get(i)
    }

    /// Writes element `i`. Panics if `i` is not below [`len`](PackedMut::len), as a slice
    /// index does (in a kernel, the handler turns the panic into the call's error).
    #[inline]
    pub fn set(&mut self, i: usize, v: T) {
        assert!(i < self.len, "index {i} of a packed tensor of {}", self.len);
        let per = (8 / T::BITS) as usize;
        let shift = (i % per) as u32 * T::BITS;
        let mask = ((1u8 << T::BITS) - 1) << shift;
        let b = &mut self.bytes[i / per];
        *b = (*b & !mask) | ((v.code() << shift) & mask);
    }

    /// Writes `f(k)` to every element `k`, whole bytes at a time, spare bits zero.
    pub fn fill_with(&mut self, f: impl Fn(usize) -> T) {
        let per = (8 / T::BITS) as usize;
        for (j, b) in self.bytes.iter_mut().enumerate() {
            let mut byte = 0u8;
            for k in 0..per {
                let i = j * per + k;
                if i < self.len {
                    byte |= f(i).code() << (k as u32 * T::BITS);
                }
            }
            *b = byte;
        }
    }

    /// The packed bytes, to write directly (every bit pattern is a value).
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        self.bytes
    }

    /// A read-only view of the same elements.
    pub fn as_ref(&self) -> PackedRef<'_, T, RANK> {
        PackedRef {
            bytes: self.bytes,
            dims: self.dims,
            len: self.len,
            _t: PhantomData,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xlas_order_low_bits_first() {
        // jaxlib 0.12 packs int4 [1, 2, 3, -1, -8, 7, 0, 5, 6] as 21 f3 78 50 06.
        let bytes = [0x21u8, 0xf3, 0x78, 0x50, 0x06];
        let dims = [9i64];
        let t = PackedRef::<I4>::new(&bytes, &dims).unwrap();
        let v: Vec<i8> = t.iter().map(I4::get).collect();
        assert_eq!(v, vec![1, 2, 3, -1, -8, 7, 0, 5, 6]);
        let mut out = [0u8; 5];
        let mut m = PackedMut::<I4>::new(&mut out, &dims).unwrap();
        m.fill_with(|i| I4::wrapping(i64::from(v[i])));
        assert_eq!(out, bytes);
        // int2 [1, -1, -2, 0, 1, 1, -2]: 2d 25.
        let two = PackedRef::<I2>::new(&[0x2d, 0x25], &[7]).unwrap();
        assert_eq!(
            two.iter().map(I2::get).collect::<Vec<_>>(),
            vec![1, -1, -2, 0, 1, 1, -2]
        );
    }

    #[test]
    fn views_check_their_byte_count_and_writes_stay_inside() {
        assert!(PackedRef::<U4>::new(&[0; 2], &[5]).is_err());
        assert!(PackedRef::<U4>::new(&[0; 3], &[5]).is_ok());
        assert!(PackedRef::<U2, 2>::new(&[0; 1], &[4]).is_err());
        let mut b = [0xFFu8; 2];
        let dims = [3i64];
        let mut m = PackedMut::<U4>::new(&mut b, &dims).unwrap();
        m.set(2, U4::new(5).unwrap());
        assert_eq!(m.get(2).map(U4::get), Some(5));
        assert_eq!(m.get(3), None);
        assert!(!m.as_ref().unpack_into(2, &mut [0u8; 2], |q| q.get()));
        assert!(
            std::panic::catch_unwind(move || {
                let mut b = [0u8; 1];
                let dims = [2i64];
                let mut m = PackedMut::<U4>::new(&mut b, &dims).unwrap();
                m.set(2, U4::default());
            })
            .is_err()
        );
    }

    #[test]
    fn ints_hold_their_ranges_and_wrap_as_ml_dtypes() {
        assert_eq!(
            (I4::MIN, I4::MAX, U4::MAX, I2::MIN, U2::MAX),
            (-8, 7, 15, -2, 3)
        );
        assert_eq!(I4::new(8), None);
        assert_eq!(I4::wrapping(8).get(), -8);
        assert_eq!(I4::wrapping(-9).get(), 7);
        assert_eq!(I4::wrapping(100).get(), 4);
        for v in -8..=7 {
            assert_eq!(I4::new(v).map(I4::get), Some(v));
        }
    }

    #[test]
    fn f4_rounds_ties_to_even_and_saturates() {
        let cases = [
            (0.25f32, 0x0u8),
            (0.26, 0x1),
            (1.25, 0x2),
            (1.75, 0x4),
            (2.5, 0x4),
            (5.0, 0x6),
            (7.0, 0x7),
            (f32::INFINITY, 0x7),
            (-0.25, 0x8),
            (-100.0, 0xF),
            (f32::NAN, 0x8),
            (-f32::NAN, 0x0),
        ];
        for (x, code) in cases {
            assert_eq!(F4E2M1FN::from_f32(x).to_bits(), code, "{x}");
        }
        for c in 0..16u8 {
            let v = F4E2M1FN::from_bits(c);
            assert_eq!(F4E2M1FN::from_f32(v.to_f32()).to_f32(), v.to_f32());
        }
    }
}
