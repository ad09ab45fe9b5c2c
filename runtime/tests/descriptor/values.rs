//! Values of a layout known at run time (`pack_value`, `unpack_value`: what Python's `lib.pack`
//! and the command line call) against the derive's bytes, byte for byte. The values below are
//! spelled independently of the Rust structs.

use super::*;
use customop::descriptor::{pack_value, unpack_value};
use serde_json::{Value, json};

fn everything_json() -> Value {
    json!({
        "a": true, "b": -8, "c": -1600, "d": 32_000_000, "e": -64_000_000_000i64,
        "f": 200, "g": 60_000, "h": 4_000_000_000u32, "i": u64::MAX - 1,
        "j": -0.25, "k": 1.0e300, "mode": "Exact", "signed": "Minus",
        "inner": {"flag": true, "scale": -2.5},
        "grid": [[1, -2, 3], [-4, 5, -6]],
        "inners": [{"flag": false, "scale": 0.5}, {"flag": true, "scale": 8.0}],
    })
}

fn table_json() -> Value {
    json!({"id": 7, "offsets": [1, 2, 3], "label": "héllo", "modes": ["Fast", "Exact"]})
}

fn check_both_ways<T: Descriptor + PartialEq + std::fmt::Debug>(value: T, spelled: Value) {
    // The independently spelled value packs to the derive's bytes...
    let bytes = pack_value(T::layout(), &spelled).unwrap();
    assert_eq!(bytes, value.pack(), "{}", T::NAME);
    assert_eq!(T::unpack(&bytes).unwrap(), value);
    // ...and the derive's bytes unpack to it.
    assert_eq!(
        unpack_value(T::layout(), &value.pack()).unwrap(),
        spelled,
        "{}",
        T::NAME
    );
}

#[test]
fn every_field_kind_matches_the_derive() {
    check_both_ways(everything(), everything_json());
    check_both_ways(table(), table_json());
    check_both_ways(
        blob(),
        json!({"gain": 1.5, "bias": -3, "seed": 0x0102_0304_0506_0708u64,
               "tag": b"customop-tag-16b".to_vec()}),
    );
}

/// f16 and bf16 fields, alone, in an array and in a `Vec` tail, with values that need
/// rounding (1/3), an infinity and a subnormal.
#[derive(Descriptor, Clone, Debug, PartialEq)]
#[descriptor(name = "test::Halves")]
pub struct Halves {
    pub tag: u8,
    pub h: customop::f16,
    pub b: customop::bf16,
    pub hs: [customop::bf16; 3],
    pub x: f32,
    pub v: Vec<customop::f16>,
}

#[test]
fn half_float_fields_match_the_derive() {
    use customop::{bf16, f16};
    let value = Halves {
        tag: 9,
        h: f16::from_f64(1.0 / 3.0),
        b: bf16::from_f64(-1.0 / 3.0),
        hs: [
            bf16::MAX,
            bf16::from_f32(0.0078125),
            bf16::from_f32(65280.0),
        ],
        x: 0.5,
        v: vec![f16::from_f32(-2.5), f16::from_f32(-(2f32.powi(-12)))],
    };
    assert_eq!(
        Halves::layout().canonical,
        "test::Halves{tag:u8,h:f16,b:bf16,hs:[bf16;3],x:f32,v:Vec<f16>}"
    );
    // tag at 0, h at 2, b at 4, hs at 6..12, x at 12: little-endian bits.
    let packed = value.pack();
    let at = |i: usize| u16::from_le_bytes([packed[HEADER_SIZE + i], packed[HEADER_SIZE + i + 1]]);
    assert_eq!((at(2), at(4), at(6)), (0x3555, 0xBEAB, 0x7F7F));
    assert_eq!(Halves::unpack(&packed).unwrap(), value);
    // The exact values, both ways.
    check_both_ways(
        value.clone(),
        json!({
            "tag": 9, "h": value.h.to_f64(), "b": value.b.to_f64(),
            "hs": value.hs.map(|v| v.to_f64()), "x": 0.5,
            "v": value.v.iter().map(|v| v.to_f64()).collect::<Vec<_>>(),
        }),
    );
    // Decimal values round to nearest, ties to even, as `half` does, into subnormals too.
    let value = Halves {
        hs: [bf16::MAX, bf16::from_f64(1e-40), bf16::from_f32(65280.0)],
        v: vec![f16::from_f32(-2.5), f16::from_f64(6.0e-8)],
        ..value
    };
    let packed = value.pack();
    let mut decimal = json!({
        "tag": 9, "h": 1.0 / 3.0, "b": -1.0 / 3.0, "hs": [bf16::MAX.to_f64(), 1e-40, 65280.0],
        "x": 0.5, "v": [-2.5, 6.0e-8],
    });
    assert_eq!(pack_value(Halves::layout(), &decimal).unwrap(), packed);
    // A finite value beyond the type's range is an error naming the field, as for f32.
    for (field, big) in [("b", 1e39), ("h", 70000.0)] {
        decimal[field] = json!(big);
        let e = pack_value(Halves::layout(), &decimal)
            .unwrap_err()
            .to_string();
        assert!(e.contains(&format!("field `{field}`")), "{e}");
        decimal[field] = json!(0.5);
    }
}

/// The 8-bit float fields: the exact values both ways; decimal values rounded as `from_f64`
/// rounds them (ml_dtypes' rounding), a float64 that rounding through f32 would make a tie;
/// and a value beyond a type's range refused (as in every float type), never an infinity or a
/// NaN made of a finite number.
#[test]
fn float8_fields_match_the_derive() {
    let layout = Float8s::layout();
    let value = Float8s {
        b: F8E5M2::from_f64(-1.75),
        e: F8E4M3FNUZ::from_f64(-2.0),
        scales: [
            F8E8M0FNU::from_f64(3.0),
            F8E8M0FNU::MIN_POSITIVE,
            F8E8M0FNU::MAX,
        ],
        q: vec![F8E4M3FN::MAX, F8E4M3FN::from_f64(-0.3)],
        ..float8s()
    };
    let spelled = json!({
        "a": value.a.to_f64(), "b": -1.75, "gain": 0.5, "c": -240.0, "d": value.d.to_f64(),
        "e": -2.0, "f": 0.0, "g": value.g.to_f64(),
        "scales": [4.0, 2f64.powi(-127), 2f64.powi(127)],
        "q": [448.0, value.q[1].to_f64()],
    });
    assert_eq!(pack_value(layout, &spelled).unwrap(), value.pack());
    assert_eq!(unpack_value(layout, &value.pack()).unwrap(), spelled);
    // Decimals that round or tie.
    let tie = 1.0625 + 2f64.powi(-40); // f32 rounds it to the tie 1.0625; f64 rounds up
    let x = [1.0 / 3.0, 1e4, 0.1, -1.0 / 3.0, 100.0, -1e4, tie];
    let decimal = Float8s {
        a: F8E4M3FN::from_f64(x[0]),
        b: F8E5M2::from_f64(x[1]),
        gain: 0.5,
        c: F8E4M3::from_f64(x[2]),
        d: F8E3M4::from_f64(x[3]),
        e: F8E4M3FNUZ::from_f64(x[4]),
        f: F8E5M2FNUZ::from_f64(x[5]),
        g: F8E4M3B11FNUZ::from_f64(x[6]),
        scales: [
            F8E8M0FNU::from_f64(0.75),
            F8E8M0FNU::from_f64(1e-40),
            F8E8M0FNU::from_f64(1e38),
        ],
        q: vec![F8E4M3FN::from_f64(tie), F8E4M3FN::from_f64(1e-3)],
    };
    assert_ne!(
        F8E4M3FN::from_f64(tie).to_bits(),
        F8E4M3FN::from_f32(tie as f32).to_bits()
    );
    let mut spelled = json!({
        "a": x[0], "b": x[1], "gain": 0.5, "c": x[2], "d": x[3], "e": x[4], "f": x[5],
        "g": x[6], "scales": [0.75, 1e-40, 1e38], "q": [tie, 1e-3],
    });
    assert_eq!(pack_value(layout, &spelled).unwrap(), decimal.pack());
    // Beyond the range: E5M2 would give an infinity, E4M3FNUZ and E8M0FNU a NaN (ml_dtypes'
    // results of the same values); each is refused, naming the field.
    for (field, v) in [("b", json!(1e6)), ("e", json!(1000.0)), ("f", json!(-1e6))] {
        let keep = spelled[field].clone();
        spelled[field] = v;
        let e = pack_value(layout, &spelled).unwrap_err().to_string();
        assert!(
            e.contains(&format!("field `{field}`")) && e.contains("does not fit"),
            "{e}"
        );
        spelled[field] = keep;
    }
    spelled["scales"] = json!([-1.0, 1.0, 1.0]);
    let e = pack_value(layout, &spelled).unwrap_err().to_string();
    assert!(
        e.contains("field `scales[0]`: -1 does not fit f8E8M0FNU"),
        "{e}"
    );
}

#[test]
fn unpacking_a_value_refuses_what_the_derive_refuses() {
    let good = everything().pack();
    let mut bad_bool = good.clone();
    bad_bool[HEADER_SIZE] = 2;
    let mut bad_fp = good.clone();
    bad_fp[16] ^= 1;
    for bytes in [bad_bool, bad_fp, good[..30].to_vec()] {
        let derive = Everything::unpack(&bytes).unwrap_err();
        let value = unpack_value(Everything::layout(), &bytes).unwrap_err();
        assert_eq!(value.kind(), derive.kind());
        assert_eq!(value.to_string(), derive.to_string());
    }
}
