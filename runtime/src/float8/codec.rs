//! The formats' codecs: encoding from `f64` (round to nearest, ties to even, each format's
//! specials), exact decoding, and the bit-level widening and narrowing between `f32` and `f64`
//! that keep conversions exact where XLA flushes denormals.

/// Where a format keeps its special values.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Special {
    /// IEEE-like: the all-ones exponent is ±∞ (mantissa 0) or NaN; overflow is ∞.
    Ieee,
    /// Finite: `S.1…1` is NaN; overflow and ∞ are NaN (sign kept).
    Fn,
    /// Finite, unsigned zero: `1000 0000` is the only NaN, there is no −0; overflow, ∞ and NaN
    /// are that NaN.
    Fnuz,
}

/// The parameters of a sign-magnitude 8-bit binary float format.
pub(super) struct Format {
    pub(super) mantissa_bits: u32,
    bias: i32,
    /// The largest finite magnitude's bits.
    pub(super) max_finite: u8,
    special: Special,
}

/// The magnitude bits of a format's infinity (`Ieee`) or all-ones exponent.
pub(super) const fn all_ones_exponent(mantissa_bits: u32) -> u8 {
    0x7F & !((1u8 << mantissa_bits) - 1)
}

impl Format {
    /// The magnitude bits of the canonical NaN (the quiet NaN for IEEE formats).
    pub(super) const fn nan(&self) -> u8 {
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
    pub(super) const fn encode(&self, x: f64) -> u8 {
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
    pub(super) fn decode(&self, bits: u8) -> f64 {
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
    pub(super) const fn min_positive(&self) -> u8 {
        1 << self.mantissa_bits
    }

    /// The bits of 1.
    pub(super) const fn one(&self) -> u8 {
        (self.bias as u8) << self.mantissa_bits
    }
}

pub(super) const E4M3FN: Format = Format {
    mantissa_bits: 3,
    bias: 7,
    max_finite: 0x7E,
    special: Special::Fn,
};
pub(super) const E5M2: Format = Format {
    mantissa_bits: 2,
    bias: 15,
    max_finite: 0x7B,
    special: Special::Ieee,
};
pub(super) const E4M3: Format = Format {
    mantissa_bits: 3,
    bias: 7,
    max_finite: 0x77,
    special: Special::Ieee,
};
pub(super) const E3M4: Format = Format {
    mantissa_bits: 4,
    bias: 3,
    max_finite: 0x6F,
    special: Special::Ieee,
};
pub(super) const E4M3FNUZ: Format = Format {
    mantissa_bits: 3,
    bias: 8,
    max_finite: 0x7F,
    special: Special::Fnuz,
};
pub(super) const E5M2FNUZ: Format = Format {
    mantissa_bits: 2,
    bias: 16,
    max_finite: 0x7F,
    special: Special::Fnuz,
};
pub(super) const E4M3B11FNUZ: Format = Format {
    mantissa_bits: 3,
    bias: 11,
    max_finite: 0x7F,
    special: Special::Fnuz,
};

/// `x` as an `f64`, exactly, from its bits alone. No floating-point operation: XLA runs kernels
/// with denormals flushed to zero, and `x as f64` would read a subnormal `f32` (`2^-127`, the
/// smallest [`F8E8M0FNU`]) as 0 there.
pub(super) const fn widen(x: f32) -> f64 {
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
pub(super) const fn narrow(v: f64) -> f32 {
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
pub(super) const fn narrow_round(v: f64) -> f32 {
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
pub(super) fn pow2(k: i32) -> f64 {
    f64::from_bits(((1023 + k) as u64) << 52)
}

/// The decoding of a format (encoding is each format's `const fn encode`): the sign-magnitude
/// ones and `E8M0`.
pub(super) trait Codec {
    fn decode(&self, bits: u8) -> f64;
}

impl Codec for Format {
    fn decode(&self, bits: u8) -> f64 {
        Format::decode(self, bits)
    }
}

/// `F8E8M0FNU`: an unsigned power of two, `2^(bits − 127)`, `0xFF` NaN.
pub(super) struct E8M0;

impl E8M0 {
    pub(super) const fn encode(&self, x: f64) -> u8 {
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

    pub(super) fn decode(&self, bits: u8) -> f64 {
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
