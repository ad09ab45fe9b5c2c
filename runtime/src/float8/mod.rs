//! The 8-bit float formats XLA's FFI carries, as `ml_dtypes` (and, where it has them, torch)
//! defines them:
//!
//! | type | exponent, mantissa bits | bias | special values | largest |
//! |---|---|---|---|---|
//! | [`F8E4M3FN`] | 4, 3 | 7 | NaN `S.1111.111`; no infinities | 448 |
//! | [`F8E5M2`] | 5, 2 | 15 | IEEE: ±∞ `S.11111.00`, NaNs | 57344 |
//! | [`F8E4M3`] | 4, 3 | 7 | IEEE: ±∞ `S.1111.000`, NaNs | 240 |
//! | [`F8E3M4`] | 3, 4 | 3 | IEEE: ±∞ `S.111.0000`, NaNs | 15.5 |
//! | [`F8E4M3FNUZ`] | 4, 3 | 8 | NaN `1.0000.000` only; no −0, no infinities | 240 |
//! | [`F8E5M2FNUZ`] | 5, 2 | 16 | as above | 57344 |
//! | [`F8E4M3B11FNUZ`] | 4, 3 | 11 | as above | 30 |
//! | [`F8E8M0FNU`] | 8, 0, no sign | 127 | NaN `0xFF`; no zero, no sign: `2^(e − 127)` | 2^127 |
//!
//! Each is one byte, `#[repr(transparent)]` over its bits, so a tensor of them is XLA's buffer
//! as it is. Conversions from `f32`/`f64` are those of ml_dtypes, bit for bit (tested on every
//! value and every midpoint): round to nearest, ties to even; beyond the largest finite value,
//! infinity where the format has one and NaN where it has none; a NaN keeps its sign where the
//! format has one (`F8E4M3FN`, the IEEE ones), and the FNUZ formats, which have no −0, round a
//! negative value to `+0`. [`F8E8M0FNU`] (the MX block scale) holds powers of two only: a
//! value rounds to the nearer power in its binade, a tie (`1.5 · 2^k`) up; below `2^−127` is
//! `2^−127`, zero, negatives and beyond `2^127` are NaN. Conversions to `f32`/`f64` are exact.

use core::cmp::Ordering;
use core::fmt;

mod codec;
#[cfg(test)]
mod tests;

use codec::{
    Codec, E3M4, E4M3, E4M3B11FNUZ, E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ, E8M0, all_ones_exponent,
    narrow, narrow_round, widen,
};

/// Calls `$m!` with the paths of the eight 8-bit float types (one list for the traits every
/// one of them implements alike).
macro_rules! with_float8_types {
    ($m:ident) => {
        $m!(
            crate::float8::F8E4M3FN,
            crate::float8::F8E5M2,
            crate::float8::F8E4M3,
            crate::float8::F8E3M4,
            crate::float8::F8E4M3FNUZ,
            crate::float8::F8E5M2FNUZ,
            crate::float8::F8E4M3B11FNUZ,
            crate::float8::F8E8M0FNU
        );
    };
}
pub(crate) use with_float8_types;

/// The bits of `x` rounded into the 8-bit float type `element`; `None` if `element` is not
/// one.
pub fn bits_of(element: crate::types::ElementType, x: f64) -> Option<u8> {
    use crate::types::ElementType as E;
    Some(match element {
        E::F8E4M3FN => E4M3FN.encode(x),
        E::F8E5M2 => E5M2.encode(x),
        E::F8E4M3 => E4M3.encode(x),
        E::F8E3M4 => E3M4.encode(x),
        E::F8E4M3FNUZ => E4M3FNUZ.encode(x),
        E::F8E5M2FNUZ => E5M2FNUZ.encode(x),
        E::F8E4M3B11FNUZ => E4M3B11FNUZ.encode(x),
        E::F8E8M0FNU => E8M0.encode(x),
        _ => return None,
    })
}

/// The value of `bits` of the 8-bit float type `element` (exact); `None` if `element` is not
/// one.
pub fn value_of(element: crate::types::ElementType, bits: u8) -> Option<f64> {
    use crate::types::ElementType as E;
    Some(match element {
        E::F8E4M3FN => Codec::decode(&E4M3FN, bits),
        E::F8E5M2 => Codec::decode(&E5M2, bits),
        E::F8E4M3 => Codec::decode(&E4M3, bits),
        E::F8E3M4 => Codec::decode(&E3M4, bits),
        E::F8E4M3FNUZ => Codec::decode(&E4M3FNUZ, bits),
        E::F8E5M2FNUZ => Codec::decode(&E5M2FNUZ, bits),
        E::F8E4M3B11FNUZ => Codec::decode(&E4M3B11FNUZ, bits),
        E::F8E8M0FNU => Codec::decode(&E8M0, bits),
        _ => return None,
    })
}

/// The lowest value of an 8-bit float type that has no infinities (the start of a max), as
/// an `f64`; `None` for the others, whose start is `-∞`.
pub fn lowest(element: crate::types::ElementType) -> Option<f64> {
    use crate::types::ElementType as E;
    Some(match element {
        E::F8E4M3FN => F8E4M3FN::MIN.to_f64(),
        E::F8E4M3FNUZ => F8E4M3FNUZ::MIN.to_f64(),
        E::F8E5M2FNUZ => F8E5M2FNUZ::MIN.to_f64(),
        E::F8E4M3B11FNUZ => F8E4M3B11FNUZ::MIN.to_f64(),
        E::F8E8M0FNU => F8E8M0FNU::MIN_POSITIVE.to_f64(),
        _ => return None,
    })
}

macro_rules! float8 {
    ($(#[$doc:meta])* $name:ident, $format:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Default)]
        #[repr(transparent)]
        pub struct $name(u8);

        impl $name {
            /// The value with these bits.
            pub const fn from_bits(bits: u8) -> Self {
                $name(bits)
            }

            /// The bits.
            pub const fn to_bits(self) -> u8 {
                self.0
            }

            /// `x` rounded to the nearest value (see the module's rules). Exact under flushed
            /// denormals too: the conversion reads bits, never the FPU.
            pub const fn from_f32(x: f32) -> Self {
                $name($format.encode(widen(x)))
            }

            /// `x` rounded to the nearest value (see the module's rules).
            pub const fn from_f64(x: f64) -> Self {
                $name($format.encode(x))
            }

            /// The value as an `f32` (exact, also under flushed denormals).
            pub fn to_f32(self) -> f32 {
                narrow(Codec::decode(&$format, self.0))
            }

            /// The value as an `f64` (exact).
            pub fn to_f64(self) -> f64 {
                Codec::decode(&$format, self.0)
            }

            /// Whether this is a NaN.
            pub fn is_nan(self) -> bool {
                self.to_f64().is_nan()
            }
        }

        impl From<$name> for f32 {
            fn from(x: $name) -> f32 {
                x.to_f32()
            }
        }

        impl From<$name> for f64 {
            fn from(x: $name) -> f64 {
                x.to_f64()
            }
        }

        /// Compares values as floats: NaN is unequal to everything, `-0 == +0`.
        impl PartialEq for $name {
            fn eq(&self, other: &Self) -> bool {
                self.to_f64() == other.to_f64()
            }
        }

        impl PartialOrd for $name {
            fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
                self.to_f64().partial_cmp(&other.to_f64())
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Debug::fmt(&self.to_f32(), f)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&self.to_f32(), f)
            }
        }
    };
}

/// The constants of a signed format.
macro_rules! signed_constants {
    ($name:ident, $format:ident) => {
        impl $name {
            /// `0`.
            pub const ZERO: Self = $name(0);
            /// `1`.
            pub const ONE: Self = $name($format.one());
            /// The largest finite value.
            pub const MAX: Self = $name($format.max_finite);
            /// The lowest finite value (`-MAX`).
            pub const MIN: Self = $name(0x80 | $format.max_finite);
            /// The smallest positive normal value.
            pub const MIN_POSITIVE: Self = $name($format.min_positive());
            /// The canonical NaN.
            pub const NAN: Self = $name($format.nan());
        }
    };
}

/// The infinities of an IEEE-like format.
macro_rules! infinities {
    ($name:ident, $format:ident) => {
        impl $name {
            /// Positive infinity.
            pub const INFINITY: Self = $name(all_ones_exponent($format.mantissa_bits));
            /// Negative infinity.
            pub const NEG_INFINITY: Self = $name(0x80 | all_ones_exponent($format.mantissa_bits));
        }
    };
}

float8!(
    /// An 8-bit float with 4 exponent bits (bias 7) and 3 mantissa bits, finite only: no
    /// infinities, NaN is `S.1111.111`, the largest value 448. MLIR `f8E4M3FN`, XLA
    /// `F8E4M3FN`, `ml_dtypes.float8_e4m3fn`, `torch.float8_e4m3fn`.
    F8E4M3FN,
    E4M3FN
);
signed_constants!(F8E4M3FN, E4M3FN);

float8!(
    /// An 8-bit float with 5 exponent bits (bias 15) and 2 mantissa bits, IEEE-like: infinities
    /// `S.11111.00`, NaNs `S.11111.xx`, the largest finite value 57344. MLIR `f8E5M2`, XLA
    /// `F8E5M2`, `ml_dtypes.float8_e5m2`, `torch.float8_e5m2`.
    F8E5M2,
    E5M2
);
signed_constants!(F8E5M2, E5M2);
infinities!(F8E5M2, E5M2);

float8!(
    /// An 8-bit float with 4 exponent bits (bias 7) and 3 mantissa bits, IEEE-like: infinities
    /// `S.1111.000`, NaNs `S.1111.xxx`, the largest finite value 240. MLIR `f8E4M3`, XLA
    /// `F8E4M3`, `ml_dtypes.float8_e4m3`.
    F8E4M3,
    E4M3
);
signed_constants!(F8E4M3, E4M3);
infinities!(F8E4M3, E4M3);

float8!(
    /// An 8-bit float with 3 exponent bits (bias 3) and 4 mantissa bits, IEEE-like: infinities
    /// `S.111.0000`, the largest finite value 15.5. MLIR `f8E3M4`, XLA `F8E3M4`,
    /// `ml_dtypes.float8_e3m4`.
    F8E3M4,
    E3M4
);
signed_constants!(F8E3M4, E3M4);
infinities!(F8E3M4, E3M4);

float8!(
    /// An 8-bit float with 4 exponent bits (bias 8) and 3 mantissa bits, finite with an
    /// unsigned zero: `0x80` is the only NaN, the largest value 240. MLIR `f8E4M3FNUZ`, XLA
    /// `F8E4M3FNUZ`, `ml_dtypes.float8_e4m3fnuz`, `torch.float8_e4m3fnuz`.
    F8E4M3FNUZ,
    E4M3FNUZ
);
signed_constants!(F8E4M3FNUZ, E4M3FNUZ);

float8!(
    /// An 8-bit float with 5 exponent bits (bias 16) and 2 mantissa bits, finite with an
    /// unsigned zero: `0x80` is the only NaN, the largest value 57344. MLIR `f8E5M2FNUZ`, XLA
    /// `F8E5M2FNUZ`, `ml_dtypes.float8_e5m2fnuz`, `torch.float8_e5m2fnuz`.
    F8E5M2FNUZ,
    E5M2FNUZ
);
signed_constants!(F8E5M2FNUZ, E5M2FNUZ);

float8!(
    /// An 8-bit float with 4 exponent bits (bias 11) and 3 mantissa bits, finite with an
    /// unsigned zero: `0x80` is the only NaN, the largest value 30. MLIR `f8E4M3B11FNUZ`, XLA
    /// `F8E4M3B11FNUZ`, `ml_dtypes.float8_e4m3b11fnuz`.
    F8E4M3B11FNUZ,
    E4M3B11FNUZ
);
signed_constants!(F8E4M3B11FNUZ, E4M3B11FNUZ);

float8!(
    /// An 8-bit unsigned power of two, `2^(bits − 127)` for bits `0..=254`, `0xFF` NaN: no zero,
    /// no sign, no infinities (the OCP MX formats' block scale). MLIR `f8E8M0FNU`, XLA
    /// `F8E8M0FNU`, `ml_dtypes.float8_e8m0fnu`, `torch.float8_e8m0fnu`.
    F8E8M0FNU,
    E8M0
);

impl F8E8M0FNU {
    /// `1` (`2^0`).
    pub const ONE: Self = F8E8M0FNU(127);
    /// The largest value, `2^127`.
    pub const MAX: Self = F8E8M0FNU(254);
    /// The smallest value, `2^−127`.
    pub const MIN_POSITIVE: Self = F8E8M0FNU(0);
    /// NaN.
    pub const NAN: Self = F8E8M0FNU(0xFF);

    /// `x · 2^(e − 127)`, this scale applied to `x`, rounded to nearest, ties to even: exact
    /// whenever the result is a normal `f32`, and computed from bits, so also under flushed
    /// denormals (a scale of `2^−127` is an `f32` subnormal that XLA's threads read as 0);
    /// NaN if this is NaN.
    pub fn apply(self, x: f32) -> f32 {
        narrow_round(widen(x) * self.to_f64())
    }

    /// `2^k`, for `k` in `-127..=127`.
    pub const fn pow2(k: i32) -> Option<Self> {
        if k >= -127 && k <= 127 {
            Some(F8E8M0FNU((k + 127) as u8))
        } else {
            None
        }
    }
}
