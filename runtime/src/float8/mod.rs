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

#[cfg(test)]
mod tests;

/// Where a format keeps its special values.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Special {
    /// IEEE-like: the all-ones exponent is ±∞ (mantissa 0) or NaN; overflow is ∞.
    Ieee,
    /// Finite: `S.1…1` is NaN; overflow and ∞ are NaN (sign kept).
    Fn,
    /// Finite, unsigned zero: `1000 0000` is the only NaN, there is no −0; overflow, ∞ and NaN
    /// are that NaN.
    Fnuz,
}

/// The parameters of a sign-magnitude 8-bit binary float format.
struct Format {
    mantissa_bits: u32,
    bias: i32,
    /// The largest finite magnitude's bits.
    max_finite: u8,
    special: Special,
}

/// The magnitude bits of a format's infinity (`Ieee`) or all-ones exponent.
const fn all_ones_exponent(mantissa_bits: u32) -> u8 {
    0x7F & !((1u8 << mantissa_bits) - 1)
}

impl Format {
    /// The magnitude bits of the canonical NaN (the quiet NaN for IEEE formats).
    const fn nan(&self) -> u8 {
        match self.special {
            Special::Ieee => {
                all_ones_exponent(self.mantissa_bits) | (1 << (self.mantissa_bits - 1))
            }
            Special::Fn => 0x7F,
            Special::Fnuz => 0x80,
        }
    }

    /// What a value beyond the largest finite one becomes, with sign bit `sign`.
    const fn overflow(&self, sign: u8) -> u8 {
        match self.special {
            Special::Ieee => sign | all_ones_exponent(self.mantissa_bits),
            Special::Fn => sign | 0x7F,
            Special::Fnuz => 0x80,
        }
    }

    /// A NaN with sign bit `sign` (the FNUZ NaN has none).
    const fn nan_with(&self, sign: u8) -> u8 {
        match self.special {
            Special::Fnuz => 0x80,
            _ => sign | self.nan(),
        }
    }

    /// `x` rounded to nearest, ties to even.
    const fn encode(&self, x: f64) -> u8 {
        let bits = x.to_bits();
        let sign = ((bits >> 63) as u8) << 7;
        let exp_field = ((bits >> 52) & 0x7FF) as i32;
        let frac = bits & ((1u64 << 52) - 1);
        if exp_field == 0x7FF {
            return if frac != 0 {
                self.nan_with(sign)
            } else {
                self.overflow(sign)
            };
        }
        // Zero (or an f64 subnormal: far below half the smallest 8-bit subnormal) keeps its
        // sign where the format has −0.
        let zero = if matches!(self.special, Special::Fnuz) {
            0
        } else {
            sign
        };
        if exp_field == 0 {
            return zero;
        }
        // |x| = m * 2^(e), m a 53-bit integer with its leading bit set; 2^p <= |x| < 2^(p+1).
        let m = frac | (1u64 << 52);
        let p = exp_field - 1023;
        let e = p - 52;
        // The 8-bit format's unit in the last place at this magnitude.
        let min_normal_exp = 1 - self.bias;
        let ulp_exp = if p > min_normal_exp {
            p
        } else {
            min_normal_exp
        } - self.mantissa_bits as i32;
        let shift = ulp_exp - e; // > 0: x is m >> shift ulps.
        let n: u64 = if shift <= 0 {
            // Never happens for an 8-bit format (ulp_exp >= p - mantissa_bits > e).
            m
        } else if shift >= 54 {
            // m / 2^shift < 1/2: rounds to zero.
            0
        } else {
            let q = m >> shift;
            let rem = m & ((1u64 << shift) - 1);
            let half = 1u64 << (shift - 1);
            if rem > half || (rem == half && q & 1 == 1) {
                q + 1
            } else {
                q
            }
        };
        // Normal: n in [2^mb, 2^(mb+1)], and the encoding is contiguous, so a carry into the
        // next binade lands on the right bits; subnormal: n in [0, 2^mb].
        let code: i64 = if p >= min_normal_exp {
            (((p + self.bias) as i64) << self.mantissa_bits) + n as i64
                - (1i64 << self.mantissa_bits)
        } else {
            n as i64
        };
        if code > self.max_finite as i64 {
            self.overflow(sign)
        } else if code == 0 {
            zero
        } else {
            sign | code as u8
        }
    }

    /// The exact value of `bits`.
    fn decode(&self, bits: u8) -> f64 {
        let negative = bits & 0x80 != 0;
        let magnitude = bits & 0x7F;
        let exp_field = (magnitude >> self.mantissa_bits) as i32;
        let mantissa = (magnitude & ((1u8 << self.mantissa_bits) - 1)) as f64;
        let all_ones: i32 = 0x7F >> self.mantissa_bits;
        let value = match self.special {
            Special::Ieee if exp_field == all_ones => {
                if mantissa == 0.0 {
                    f64::INFINITY
                } else {
                    f64::NAN
                }
            }
            Special::Fn if magnitude == 0x7F => f64::NAN,
            Special::Fnuz if bits == 0x80 => return f64::NAN,
            _ => {
                let scale = (1u32 << self.mantissa_bits) as f64;
                if exp_field == 0 {
                    mantissa / scale * pow2(1 - self.bias)
                } else {
                    (1.0 + mantissa / scale) * pow2(exp_field - self.bias)
                }
            }
        };
        if negative { -value } else { value }
    }

    /// The smallest positive normal value's bits.
    const fn min_positive(&self) -> u8 {
        1 << self.mantissa_bits
    }

    /// The bits of 1.
    const fn one(&self) -> u8 {
        (self.bias as u8) << self.mantissa_bits
    }
}

const E4M3FN: Format = Format {
    mantissa_bits: 3,
    bias: 7,
    max_finite: 0x7E,
    special: Special::Fn,
};
const E5M2: Format = Format {
    mantissa_bits: 2,
    bias: 15,
    max_finite: 0x7B,
    special: Special::Ieee,
};
const E4M3: Format = Format {
    mantissa_bits: 3,
    bias: 7,
    max_finite: 0x77,
    special: Special::Ieee,
};
const E3M4: Format = Format {
    mantissa_bits: 4,
    bias: 3,
    max_finite: 0x6F,
    special: Special::Ieee,
};
const E4M3FNUZ: Format = Format {
    mantissa_bits: 3,
    bias: 8,
    max_finite: 0x7F,
    special: Special::Fnuz,
};
const E5M2FNUZ: Format = Format {
    mantissa_bits: 2,
    bias: 16,
    max_finite: 0x7F,
    special: Special::Fnuz,
};
const E4M3B11FNUZ: Format = Format {
    mantissa_bits: 3,
    bias: 11,
    max_finite: 0x7F,
    special: Special::Fnuz,
};

/// `x` as an `f64`, exactly, from its bits alone. No floating-point operation: XLA runs kernels
/// with denormals flushed to zero, and `x as f64` would read a subnormal `f32` (`2^-127`, the
/// smallest [`F8E8M0FNU`]) as 0 there.
const fn widen(x: f32) -> f64 {
    let b = x.to_bits();
    let sign = ((b >> 31) as u64) << 63;
    let exp = ((b >> 23) & 0xFF) as i64;
    let frac = (b & 0x7F_FFFF) as u64;
    let bits = if exp == 0xFF {
        sign | (0x7FFu64 << 52) | (frac << 29)
    } else if exp != 0 {
        sign | (((exp - 127 + 1023) as u64) << 52) | (frac << 29)
    } else if frac == 0 {
        sign
    } else {
        // frac * 2^-149, its top bit at k: 2^(k - 149) * (frac / 2^k).
        let k = 63 - frac.leading_zeros() as i64;
        let mantissa = (frac - (1u64 << k)) << (52 - k);
        sign | (((k - 149 + 1023) as u64) << 52) | mantissa
    };
    f64::from_bits(bits)
}

/// `v`, a value an `f32` holds exactly (every 8-bit float's is), as that `f32`, from its bits
/// alone (no floating-point operation: see [`widen`]; `v as f32` would flush `2^-127` to 0).
const fn narrow(v: f64) -> f32 {
    let b = v.to_bits();
    let sign = ((b >> 63) as u32) << 31;
    let exp = ((b >> 52) & 0x7FF) as i64;
    let frac = b & ((1u64 << 52) - 1);
    let bits = if exp == 0x7FF {
        if frac == 0 {
            sign | 0x7F80_0000
        } else {
            sign | 0x7FC0_0000
        }
    } else if exp == 0 {
        sign
    } else {
        let p = exp - 1023;
        if p >= -126 {
            sign | (((p + 127) as u32) << 23) | ((frac >> 29) as u32)
        } else if p >= -149 {
            sign | (((frac | (1u64 << 52)) >> (29 + (-126 - p))) as u32)
        } else {
            sign
        }
    };
    f32::from_bits(bits)
}

/// `v` rounded to the nearest `f32`, ties to even (overflow to ±∞), from its bits alone (see
/// [`widen`]: under flushed denormals, `v as f32` would give 0 for a result below 2^-126).
const fn narrow_round(v: f64) -> f32 {
    let b = v.to_bits();
    let sign = ((b >> 63) as u32) << 31;
    let exp = ((b >> 52) & 0x7FF) as i64;
    let frac = b & ((1u64 << 52) - 1);
    if exp == 0x7FF {
        return f32::from_bits(sign | if frac == 0 { 0x7F80_0000 } else { 0x7FC0_0000 });
    }
    if exp == 0 {
        return f32::from_bits(sign);
    }
    let p = exp - 1023;
    // The f32 unit in the last place at this magnitude, as a shift of the 53-bit mantissa.
    let m = frac | (1u64 << 52);
    let shift = if p >= -126 { 29 } else { 29 + (-126 - p) };
    let n = if shift >= 64 {
        0
    } else {
        let q = m >> shift;
        let rem = m & ((1u64 << shift) - 1);
        let half = 1u64 << (shift - 1);
        if rem > half || (rem == half && q & 1 == 1) {
            q + 1
        } else {
            q
        }
    };
    // Normal: n in [2^23, 2^24], a carry landing on the next exponent; subnormal: n <= 2^23.
    let bits = if p >= -126 {
        (((p + 127) as u64) << 23) + n - (1u64 << 23)
    } else {
        n
    };
    if bits >= 0x7F80_0000 {
        f32::from_bits(sign | 0x7F80_0000)
    } else {
        f32::from_bits(sign | bits as u32)
    }
}

/// `2^k` for the exponents of 8-bit floats, `|k| <= 1022` (exact).
fn pow2(k: i32) -> f64 {
    f64::from_bits(((1023 + k) as u64) << 52)
}

/// The decoding of a format (encoding is each format's `const fn encode`): the sign-magnitude
/// ones and `E8M0`.
trait Codec {
    fn decode(&self, bits: u8) -> f64;
}

impl Codec for Format {
    fn decode(&self, bits: u8) -> f64 {
        Format::decode(self, bits)
    }
}

/// `F8E8M0FNU`: an unsigned power of two, `2^(bits − 127)`, `0xFF` NaN.
struct E8M0;

impl E8M0 {
    const fn encode(&self, x: f64) -> u8 {
        let bits = x.to_bits();
        let exp_field = ((bits >> 52) & 0x7FF) as i32;
        // NaN, ±∞, zero and negatives: no such value.
        if bits >> 63 != 0 || exp_field == 0x7FF || bits == 0 {
            return 0xFF;
        }
        if exp_field == 0 {
            // An f64 subnormal: far below 2^-127, which is the smallest value.
            return 0;
        }
        // 2^p <= x < 2^(p+1); the upper half of the binade (a tie included) rounds up.
        let p = exp_field - 1023;
        let up = (bits >> 51) & 1;
        let code = p + 127 + up as i32;
        if code > 254 {
            0xFF
        } else if code < 0 {
            0
        } else {
            code as u8
        }
    }

    fn decode(&self, bits: u8) -> f64 {
        if bits == 0xFF {
            f64::NAN
        } else {
            pow2(bits as i32 - 127)
        }
    }
}

impl Codec for E8M0 {
    fn decode(&self, bits: u8) -> f64 {
        E8M0::decode(self, bits)
    }
}

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
