//! The two 8-bit float formats XLA's FFI carries: [`F8E4M3FN`] and [`F8E5M2`] (the OCP FP8
//! formats, as `ml_dtypes.float8_e4m3fn`, `ml_dtypes.float8_e5m2`, `torch.float8_e4m3fn` and
//! `torch.float8_e5m2` define them).
//!
//! Each is one byte, `#[repr(transparent)]` over its bits, so a tensor of them is XLA's buffer
//! as it is. Conversions from `f32`/`f64` round to nearest, ties to even, as XLA's `convert`
//! and ml_dtypes do; a value beyond the largest finite one becomes NaN in `F8E4M3FN` (which has
//! no infinities) and infinity in `F8E5M2`. Conversions to `f32`/`f64` are exact.

use core::cmp::Ordering;
use core::fmt;

/// The parameters of an 8-bit binary float format: exponent bits, mantissa bits, bias, and
/// whether the all-ones exponent is infinity/NaN (IEEE-like) or only `S.1111.111` is NaN.
struct Format {
    mantissa_bits: u32,
    bias: i32,
    /// The largest finite magnitude's bits.
    max_finite: u8,
    /// The magnitude bits a value beyond `max_finite` rounds to (NaN for e4m3fn, ∞ for e5m2).
    overflow: u8,
    /// The magnitude bits of the canonical NaN.
    nan: u8,
    /// Whether the format has infinities (`S.11111.00` in e5m2).
    has_inf: bool,
}

const E4M3FN: Format = Format {
    mantissa_bits: 3,
    bias: 7,
    max_finite: 0x7E,
    overflow: 0x7F,
    nan: 0x7F,
    has_inf: false,
};

const E5M2: Format = Format {
    mantissa_bits: 2,
    bias: 15,
    max_finite: 0x7B,
    overflow: 0x7C,
    nan: 0x7E,
    has_inf: true,
};

impl Format {
    /// `x` rounded to nearest, ties to even.
    const fn encode(&self, x: f64) -> u8 {
        let bits = x.to_bits();
        let sign = ((bits >> 63) as u8) << 7;
        let exp_field = ((bits >> 52) & 0x7FF) as i32;
        let frac = bits & ((1u64 << 52) - 1);
        if exp_field == 0x7FF {
            return if frac != 0 {
                sign | self.nan
            } else if self.has_inf {
                sign | self.overflow
            } else {
                sign | self.nan
            };
        }
        if exp_field == 0 {
            // Zero, or an f64 subnormal: far below half the smallest 8-bit subnormal.
            return sign;
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
            // Never happens for a finite 8-bit format (ulp_exp >= p - mantissa_bits > e).
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
            sign | self.overflow
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
        let value = if self.has_inf && exp_field == all_ones {
            if mantissa == 0.0 {
                f64::INFINITY
            } else {
                f64::NAN
            }
        } else if !self.has_inf && magnitude == 0x7F {
            f64::NAN
        } else {
            let scale = (1u32 << self.mantissa_bits) as f64;
            if exp_field == 0 {
                mantissa / scale * pow2(1 - self.bias)
            } else {
                (1.0 + mantissa / scale) * pow2(exp_field - self.bias)
            }
        };
        if negative { -value } else { value }
    }
}

/// `2^k` for the small exponents of 8-bit floats (exact).
fn pow2(k: i32) -> f64 {
    f64::from_bits(((1023 + k) as u64) << 52)
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

            /// `x` rounded to the nearest value, ties to even (see the module's overflow rule).
            pub const fn from_f32(x: f32) -> Self {
                $name($format.encode(x as f64))
            }

            /// `x` rounded to the nearest value, ties to even (see the module's overflow rule).
            pub const fn from_f64(x: f64) -> Self {
                $name($format.encode(x))
            }

            /// The value as an `f32` (exact).
            pub fn to_f32(self) -> f32 {
                $format.decode(self.0) as f32
            }

            /// The value as an `f64` (exact).
            pub fn to_f64(self) -> f64 {
                $format.decode(self.0)
            }

            /// Whether this is a NaN.
            pub fn is_nan(self) -> bool {
                self.to_f64().is_nan()
            }

            /// `0`.
            pub const ZERO: Self = $name(0);
            /// `1`.
            pub const ONE: Self = $name(($format.bias as u8) << $format.mantissa_bits);
            /// The largest finite value.
            pub const MAX: Self = $name($format.max_finite);
            /// The lowest finite value (`-MAX`).
            pub const MIN: Self = $name(0x80 | $format.max_finite);
            /// The smallest positive normal value.
            pub const MIN_POSITIVE: Self = $name(1 << $format.mantissa_bits);
            /// The canonical NaN.
            pub const NAN: Self = $name($format.nan);
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

float8!(
    /// An 8-bit float with 4 exponent bits (bias 7) and 3 mantissa bits, finite only: no
    /// infinities, NaN is `S.1111.111`, the largest value 448. MLIR `f8E4M3FN`, XLA
    /// `F8E4M3FN`, `ml_dtypes.float8_e4m3fn`, `torch.float8_e4m3fn`.
    F8E4M3FN,
    E4M3FN
);

float8!(
    /// An 8-bit float with 5 exponent bits (bias 15) and 2 mantissa bits, IEEE-like: infinities
    /// `S.11111.00`, NaNs `S.11111.xx`, the largest finite value 57344. MLIR `f8E5M2`, XLA
    /// `F8E5M2`, `ml_dtypes.float8_e5m2`, `torch.float8_e5m2`.
    F8E5M2,
    E5M2
);

impl F8E5M2 {
    /// Positive infinity.
    pub const INFINITY: Self = F8E5M2(0x7C);
    /// Negative infinity.
    pub const NEG_INFINITY: Self = F8E5M2(0xFC);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constants_have_the_formats_values() {
        assert_eq!(F8E4M3FN::ONE.to_f32(), 1.0);
        assert_eq!(F8E4M3FN::MAX.to_f32(), 448.0);
        assert_eq!(F8E4M3FN::MIN.to_f32(), -448.0);
        assert_eq!(F8E4M3FN::MIN_POSITIVE.to_f32(), 2f32.powi(-6));
        assert_eq!(F8E4M3FN::from_bits(1).to_f32(), 2f32.powi(-9));
        assert!(F8E4M3FN::NAN.is_nan() && F8E4M3FN::from_bits(0xFF).is_nan());
        assert_eq!(F8E5M2::ONE.to_f32(), 1.0);
        assert_eq!(F8E5M2::MAX.to_f32(), 57344.0);
        assert_eq!(F8E5M2::MIN_POSITIVE.to_f32(), 2f32.powi(-14));
        assert_eq!(F8E5M2::from_bits(1).to_f32(), 2f32.powi(-16));
        assert_eq!(F8E5M2::INFINITY.to_f32(), f32::INFINITY);
        assert_eq!(F8E5M2::NEG_INFINITY.to_f32(), f32::NEG_INFINITY);
        assert!(F8E5M2::NAN.is_nan());
    }

    #[test]
    fn every_finite_value_round_trips() {
        for b in 0..=255u8 {
            for (x, back) in [
                (
                    F8E4M3FN::from_bits(b).to_f32(),
                    F8E4M3FN::from_f32(F8E4M3FN::from_bits(b).to_f32()).to_bits(),
                ),
                (
                    F8E5M2::from_bits(b).to_f32(),
                    F8E5M2::from_f32(F8E5M2::from_bits(b).to_f32()).to_bits(),
                ),
            ] {
                if !x.is_nan() {
                    assert_eq!(back, b, "{x}");
                }
            }
        }
    }

    #[test]
    fn rounding_ties_to_even_and_overflow() {
        // Between 1 (0x38) and 1.125 (0x39): the tie goes to the even mantissa.
        assert_eq!(F8E4M3FN::from_f32(1.0625).to_bits(), 0x38);
        assert_eq!(F8E4M3FN::from_f32(1.0626).to_bits(), 0x39);
        assert_eq!(F8E4M3FN::from_f32(1.1875).to_bits(), 0x3A);
        // 448 is the largest; half-way to the next binade step (464) and beyond is NaN.
        assert_eq!(F8E4M3FN::from_f32(463.0).to_bits(), 0x7E);
        assert!(F8E4M3FN::from_f32(465.0).is_nan());
        assert!(F8E4M3FN::from_f32(f32::INFINITY).is_nan());
        assert_eq!(F8E4M3FN::from_f32(-1e-30).to_bits(), 0x80);
        assert_eq!(F8E5M2::from_f32(1e9).to_bits(), 0x7C);
        assert_eq!(F8E5M2::from_f32(-1e9).to_bits(), 0xFC);
        assert!(F8E5M2::from_f32(f32::NAN).to_f32().is_nan());
        // Subnormal rounding: 1.5 * 2^-16 ties to 2^-15 (even).
        assert_eq!(F8E5M2::from_f32(1.5 * 2f32.powi(-16)).to_bits(), 2);
        // The largest subnormal rounds up into the smallest normal.
        assert_eq!(F8E4M3FN::from_f32(0.99 * 2f32.powi(-6)).to_bits(), 0x08);
    }

    #[test]
    fn layout_is_one_byte() {
        assert_eq!(core::mem::size_of::<F8E4M3FN>(), 1);
        assert_eq!(core::mem::align_of::<F8E5M2>(), 1);
    }
}
