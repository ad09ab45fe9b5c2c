//! Correctly rounded conversions from `f64` to the 16-bit floats.
//!
//! `half` 2.7's `bf16::from_f64` and `f16::from_f64` (re-exported as `customop::bf16` and
//! `customop::f16`) drop the low bits of the `f64` before rounding, so a value just past a
//! midpoint rounds the wrong way: `bf16::from_f64(-1.0664064580225094)` is `-1.0625`, where
//! the nearest bf16 is `-1.0703125`. These round to nearest, ties to even, as IEEE 754 and
//! `ml_dtypes` do: through `f32` rounded *to odd* (inexact results keep a sticky 1 in their
//! last bit), which has more than two bits beyond either 16-bit format's precision, then
//! `half`'s correctly rounded `f32` conversion. A kernel that computes in `f64` converts its
//! results with these.

use half::{bf16, f16};

/// `x` rounded to `f32` toward zero, with the last bit set when that was inexact ("round to
/// odd"): a later rounding to a format with at least two fewer bits then rounds as `x` itself
/// would have.
fn f32_round_to_odd(x: f64) -> f32 {
    let nearest = x as f32;
    let back = f64::from(nearest);
    if back == x || x.is_nan() {
        return nearest;
    }
    let mut bits = nearest.to_bits();
    if back.abs() > x.abs() {
        // Rounded away from zero (past `f32::MAX`, to infinity, included): one step back.
        bits -= 1;
    }
    f32::from_bits(bits | 1)
}

/// The `bf16` nearest `x` (ties to even; beyond the largest finite value, infinity).
pub fn bf16_from_f64(x: f64) -> bf16 {
    bf16::from_f32(f32_round_to_odd(x))
}

/// The `f16` nearest `x` (ties to even; beyond the largest finite value, infinity).
pub fn f16_from_f64(x: f64) -> f16 {
    f16::from_f32(f32_round_to_odd(x))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_just_past_a_midpoint_round_away_from_it() {
        // The case `half` gets wrong: past the midpoint -1.06640625 between -1.0625 and
        // -1.0703125 (bf16's spacing there is 2^-7).
        let x = -1.0664064580225094;
        assert_eq!(half::bf16::from_f64(x).to_f64(), -1.0625);
        assert_eq!(bf16_from_f64(x).to_f64(), -1.0703125);
        // A tie rounds to even, either way.
        assert_eq!(bf16_from_f64(-1.06640625).to_f64(), -1.0625);
        assert_eq!(bf16_from_f64(1.0 + 3.0 / 256.0).to_f64(), 1.015625);
        // f16 (spacing 2^-10 at 1): the midpoint plus 2^-40.
        let x = 1.0 + 2f64.powi(-11) + 2f64.powi(-40);
        assert_eq!(f16_from_f64(x).to_f64(), 1.0 + 2f64.powi(-10));
        assert_eq!(f16_from_f64(1.0 + 2f64.powi(-11)).to_f64(), 1.0);
    }

    #[test]
    fn the_ends_of_the_ranges() {
        assert!(bf16_from_f64(f64::INFINITY).is_infinite());
        assert!(bf16_from_f64(f64::NAN).is_nan());
        assert!(bf16_from_f64(1e300).is_infinite());
        assert_eq!(bf16_from_f64(-0.0).to_bits(), 0x8000);
        assert_eq!(bf16_from_f64(1e-300).to_bits(), 0);
        assert_eq!(f16_from_f64(65519.99).to_f64(), 65504.0);
        assert!(f16_from_f64(65520.0).is_infinite());
        // The smallest f16 subnormal is 2^-24; half of it rounds to even (zero), a hair more
        // to it.
        assert_eq!(f16_from_f64(2f64.powi(-25)).to_bits(), 0);
        assert_eq!(f16_from_f64(2f64.powi(-25) * (1.0 + 1e-12)).to_bits(), 1);
    }
}
