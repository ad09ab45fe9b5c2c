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

#[test]
fn the_other_formats_have_their_values() {
    assert_eq!(F8E4M3::MAX.to_f32(), 240.0);
    assert_eq!(F8E4M3::INFINITY.to_bits(), 0x78);
    assert_eq!(F8E4M3::NAN.to_bits(), 0x7C);
    assert_eq!(F8E4M3::from_f32(1e9).to_bits(), 0x78);
    assert_eq!(F8E3M4::MAX.to_f32(), 15.5);
    assert_eq!(F8E3M4::ONE.to_f32(), 1.0);
    assert_eq!(F8E3M4::INFINITY.to_f32(), f32::INFINITY);
    assert_eq!(F8E4M3FNUZ::MAX.to_f32(), 240.0);
    assert_eq!(F8E5M2FNUZ::MAX.to_f32(), 57344.0);
    assert_eq!(F8E4M3B11FNUZ::MAX.to_f32(), 30.0);
    assert_eq!(F8E4M3B11FNUZ::MIN.to_f32(), -30.0);
    for nan in [f32::NAN, -f32::NAN, f32::INFINITY, 1e9, -1e9] {
        assert_eq!(F8E4M3FNUZ::from_f32(nan).to_bits(), 0x80, "{nan}");
    }
    // No negative zero: -0 and negative underflow are +0.
    assert_eq!(F8E5M2FNUZ::from_f32(-0.0).to_bits(), 0);
    assert_eq!(F8E5M2FNUZ::from_f32(-1e-30).to_bits(), 0);
    assert!(F8E4M3B11FNUZ::from_bits(0x80).is_nan());
    assert_eq!(F8E4M3FN::from_f32(-f32::NAN).to_bits(), 0xFF);
}

#[test]
fn e8m0_holds_powers_of_two() {
    assert_eq!(F8E8M0FNU::ONE.to_f32(), 1.0);
    assert_eq!(F8E8M0FNU::MAX.to_f64(), 2f64.powi(127));
    assert_eq!(F8E8M0FNU::MIN_POSITIVE.to_f64(), 2f64.powi(-127));
    assert_eq!(F8E8M0FNU::pow2(3).map(|v| v.to_f32()), Some(8.0));
    assert_eq!(F8E8M0FNU::pow2(128), None);
    // A tie (1.5 * 2^k) rounds up; just below it, down.
    assert_eq!(F8E8M0FNU::from_f32(3.0).to_f32(), 4.0);
    assert_eq!(F8E8M0FNU::from_f32(2.999_999_8).to_f32(), 2.0);
    for bad in [0.0, -0.0, -1.0, f32::NAN, f32::INFINITY, 3.0e38] {
        assert!(F8E8M0FNU::from_f32(bad).is_nan(), "{bad}");
    }
    assert_eq!(F8E8M0FNU::from_f32(1e-45).to_bits(), 0);
    for b in 0..=254u8 {
        assert_eq!(
            F8E8M0FNU::from_f64(F8E8M0FNU::from_bits(b).to_f64()).to_bits(),
            b
        );
    }
}

#[test]
fn every_value_of_every_format_round_trips() {
    fn check(decode: impl Fn(u8) -> f64, encode: impl Fn(f64) -> u8, name: &str) {
        for b in 0..=255u8 {
            let x = decode(b);
            if !x.is_nan() {
                assert_eq!(encode(x), b, "{name}: {x}");
            }
        }
    }
    check(
        |b| F8E4M3::from_bits(b).to_f64(),
        |x| F8E4M3::from_f64(x).to_bits(),
        "e4m3",
    );
    check(
        |b| F8E3M4::from_bits(b).to_f64(),
        |x| F8E3M4::from_f64(x).to_bits(),
        "e3m4",
    );
    check(
        |b| F8E4M3FNUZ::from_bits(b).to_f64(),
        |x| F8E4M3FNUZ::from_f64(x).to_bits(),
        "e4m3fnuz",
    );
    check(
        |b| F8E5M2FNUZ::from_bits(b).to_f64(),
        |x| F8E5M2FNUZ::from_f64(x).to_bits(),
        "e5m2fnuz",
    );
    check(
        |b| F8E4M3B11FNUZ::from_bits(b).to_f64(),
        |x| F8E4M3B11FNUZ::from_f64(x).to_bits(),
        "e4m3b11fnuz",
    );
}

#[test]
fn widening_and_narrowing_by_bits_are_exact() {
    // Every f32 class: zeros, subnormals (the smallest, 2^-127, the largest), normals, ∞, NaN.
    let cases = [
        0.0f32,
        -0.0,
        f32::from_bits(1),
        -f32::from_bits(1),
        2f32.powi(-127),
        f32::from_bits(0x007F_FFFF),
        f32::MIN_POSITIVE,
        1.0,
        -3.5,
        f32::MAX,
        f32::INFINITY,
        f32::NEG_INFINITY,
    ];
    for x in cases {
        let w = widen(x);
        assert_eq!(w, f64::from(x), "{x:e}");
        assert_eq!(w.is_sign_negative(), x.is_sign_negative(), "{x:e}");
        assert_eq!(narrow(w).to_bits(), x.to_bits(), "{x:e}");
    }
    assert!(widen(f32::NAN).is_nan() && narrow(f64::NAN).is_nan());
    for b in 0..=254u8 {
        assert_eq!(
            F8E8M0FNU::from_bits(b).to_f32() as f64,
            F8E8M0FNU::from_bits(b).to_f64()
        );
    }
}

#[test]
fn a_scale_applies_exactly_and_rounds_below_the_normals() {
    let s = F8E8M0FNU::pow2(-127).unwrap();
    assert_eq!(s.apply(6.0), 6.0 * f32::from_bits(1 << 22));
    assert_eq!(F8E8M0FNU::pow2(3).unwrap().apply(-1.5), -12.0);
    assert!(F8E8M0FNU::NAN.apply(1.0).is_nan());
    // Below 2^-149 rounds to 0, a tie to even; past f32's range, infinity.
    assert_eq!(
        F8E8M0FNU::pow2(-127)
            .unwrap()
            .apply(2f32.powi(-23))
            .to_bits(),
        0
    );
    assert_eq!(
        F8E8M0FNU::pow2(-127)
            .unwrap()
            .apply(1.5 * 2f32.powi(-22))
            .to_bits(),
        2
    );
    assert_eq!(F8E8M0FNU::MAX.apply(4.0), f32::INFINITY);
    for x in [1.0f32, -0.5, 3.0e-39, 1.0e30, 7.0] {
        for k in [-127, -100, -1, 0, 5, 60] {
            let want = f64::from(x) * 2f64.powi(k);
            assert_eq!(F8E8M0FNU::pow2(k).unwrap().apply(x), want as f32, "{x} {k}");
        }
    }
}
