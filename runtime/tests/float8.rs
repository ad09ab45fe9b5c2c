//! customop's fp8 types against ml_dtypes (jax's own dtypes), the independent reference: every
//! one of the 256 values of each format decodes to the same f32, and a sweep of f32 values
//! (every fp8 value, the midpoints between neighbours and one f32 ulp either side, the
//! overflow boundary, infinities, NaN, subnormals and pseudo-random bit patterns) rounds to the
//! same bits. NaNs compare as NaNs (their payload and sign are not part of the contract).
//! And `customop::round`'s f64 to bf16/f16 rounding against ml_dtypes and numpy on a million
//! values, every midpoint's neighbours among them.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use customop::{F8E4M3FN, F8E5M2};
use customop_xla::Harness;
use serde_json::json;

fn ml_dtypes<T: serde::de::DeserializeOwned>(function: &str, args: serde_json::Value) -> T {
    let v = Harness::get()
        .py_call("tests.dtype_helpers", function, args)
        .unwrap();
    serde_json::from_value(v).unwrap()
}

struct Format {
    name: &'static str,
    decode: fn(u8) -> f32,
    encode: fn(f32) -> u8,
}

const FORMATS: [Format; 2] = [
    Format {
        name: "float8_e4m3fn",
        decode: |b| F8E4M3FN::from_bits(b).to_f32(),
        encode: |x| F8E4M3FN::from_f32(x).to_bits(),
    },
    Format {
        name: "float8_e5m2",
        decode: |b| F8E5M2::from_bits(b).to_f32(),
        encode: |x| F8E5M2::from_f32(x).to_bits(),
    },
];

#[test]
fn every_fp8_value_decodes_as_ml_dtypes_does() {
    for f in FORMATS {
        let want: Vec<u32> = ml_dtypes("fp8_to_f32_bits", json!([f.name]));
        assert_eq!(want.len(), 256);
        for (b, &w) in want.iter().enumerate() {
            let got = (f.decode)(b as u8);
            let w = f32::from_bits(w);
            if w.is_nan() {
                assert!(got.is_nan(), "{} 0x{b:02x}: {got}, ml_dtypes NaN", f.name);
            } else {
                assert_eq!(
                    got.to_bits(),
                    w.to_bits(),
                    "{} 0x{b:02x}: {got} vs {w}",
                    f.name
                );
            }
        }
    }
}

#[test]
fn f32_values_round_to_fp8_as_ml_dtypes_does() {
    for f in FORMATS {
        let mut xs: Vec<f32> = Vec::new();
        let values: Vec<f32> = (0..=255u8)
            .map(f.decode)
            .filter(|v| v.is_finite())
            .collect();
        let mut sorted = values.clone();
        sorted.sort_by(|a, b| a.partial_cmp(b).unwrap());
        for w in sorted.windows(2) {
            let mid = (w[0] + w[1]) / 2.0; // exact: fp8 values have few bits
            for d in [-1i32, 0, 1] {
                xs.push(f32::from_bits((mid.to_bits() as i32 + d) as u32));
            }
        }
        xs.extend(&values);
        let max = sorted[sorted.len() - 1];
        for k in 0..64 {
            xs.push(max * (1.0 + k as f32 / 32.0));
            xs.push(-max * (1.0 + k as f32 / 32.0));
        }
        xs.extend([
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            f32::MAX,
            f32::MIN_POSITIVE,
        ]);
        xs.extend([1e-40f32, -1e-45, 0.0, -0.0]);
        // Pseudo-random bit patterns (a fixed LCG), and random values in the formats' range.
        let mut s: u64 = 0x2545_F491_4F6C_DD1D;
        for _ in 0..20_000 {
            s = s
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let bits = (s >> 32) as u32;
            xs.push(f32::from_bits(bits));
            xs.push((bits as f32 / u32::MAX as f32 - 0.5) * 2.0 * max);
        }
        let bits: Vec<u32> = xs.iter().map(|x| x.to_bits()).collect();
        let want: Vec<u8> = ml_dtypes("f32_bits_to_fp8", json!([f.name, bits]));
        assert_eq!(want.len(), xs.len());
        for (x, w) in xs.iter().zip(want) {
            let got = (f.encode)(*x);
            if (f.decode)(w).is_nan() {
                assert!(
                    (f.decode)(got).is_nan(),
                    "{} {x:e}: 0x{got:02x}, ml_dtypes NaN",
                    f.name
                );
            } else {
                assert_eq!(
                    got, w,
                    "{} {x:e}: 0x{got:02x} vs ml_dtypes 0x{w:02x}",
                    f.name
                );
            }
        }
    }
}

#[test]
fn f64_values_round_to_bf16_and_f16_as_ml_dtypes_does() {
    let path = customop_xla::workspace_root().join("target/round-16bit-reference.bin");
    let n: usize = ml_dtypes(
        "f64_to_16bit_reference",
        json!([path.to_str().unwrap(), 1_000_000]),
    );
    assert!(n >= 1_000_000, "{n} values");
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(bytes.len(), n * 12);
    let (xs, rest) = bytes.split_at(n * 8);
    let (bf, hf) = rest.split_at(n * 2);
    let u16s = |b: &[u8]| -> Vec<u16> {
        b.chunks_exact(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]))
            .collect()
    };
    let (bf, hf) = (u16s(bf), u16s(hf));
    let mut half_wrong = 0;
    for (i, c) in xs.chunks_exact(8).enumerate() {
        let x = f64::from_le_bytes(c.try_into().unwrap());
        let b = customop::bf16_from_f64(x).to_bits();
        assert_eq!(
            b, bf[i],
            "bf16 of {x:e}: 0x{b:04x}, ml_dtypes 0x{:04x}",
            bf[i]
        );
        let h = customop::f16_from_f64(x).to_bits();
        assert_eq!(h, hf[i], "f16 of {x:e}: 0x{h:04x}, numpy 0x{:04x}", hf[i]);
        if customop::bf16::from_f64(x).to_bits() != bf[i] {
            half_wrong += 1;
        }
    }
    // What the correct rounding fixes: `half`'s own conversion misrounds many of these.
    assert!(
        half_wrong > 1000,
        "half::bf16::from_f64 wrong on {half_wrong} of {n}"
    );
    eprintln!("half::bf16::from_f64 differs from ml_dtypes on {half_wrong} of {n} values");
}
