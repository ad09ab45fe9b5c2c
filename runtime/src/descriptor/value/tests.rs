#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use crate::descriptor::Descriptor;
use crate::float8::{F8E4M3FN, F8E5M2, F8E8M0FNU};
use half::{bf16, f16};
use serde_json::json;

#[derive(crate::Descriptor, Clone, Copy, Debug, PartialEq)]
#[descriptor(name = "value_tests::Inner")]
struct Inner {
    scale: f32,
    on: bool,
}

#[derive(crate::Descriptor, Clone, Copy, Debug, PartialEq)]
#[repr(i32)]
enum Mode {
    Fast = -1,
    Exact = 7,
}

#[derive(crate::Descriptor, Clone, Debug, PartialEq)]
#[descriptor(name = "value_tests::Every")]
struct Every {
    flag: bool,
    a: i8,
    b: i16,
    c: i32,
    d: i64,
    e: u8,
    f: u16,
    g: u32,
    h: u64,
    half: f16,
    brain: bf16,
    single: f32,
    double: f64,
    q: F8E4M3FN,
    q5: F8E5M2,
    scale: F8E8M0FNU,
    tag: [u8; 4],
    signed: [i8; 2],
    inner: Inner,
    mode: Mode,
    taps: Vec<f32>,
    label: String,
}

fn every() -> Every {
    Every {
        flag: true,
        a: -3,
        b: -300,
        c: -70_000,
        d: -(1 << 40),
        e: 200,
        f: 60_000,
        g: 4_000_000_000,
        h: u64::MAX,
        half: f16::from_f32(0.5),
        brain: bf16::from_f32(-2.5),
        single: 0.1,
        double: 1.0 / 3.0,
        q: F8E4M3FN::from_f64(448.0),
        q5: F8E5M2::from_f64(f64::INFINITY),
        scale: F8E8M0FNU::from_f64(0.25),
        tag: *b"abcd",
        signed: [-1, 5],
        inner: Inner {
            scale: 2.0,
            on: false,
        },
        mode: Mode::Fast,
        taps: vec![1.0, -0.5],
        label: "héllo".into(),
    }
}

fn every_json() -> Value {
    json!({
        "flag": true, "a": -3, "b": -300, "c": -70000, "d": -(1i64 << 40), "e": 200,
        "f": 60000, "g": 4000000000u32, "h": u64::MAX, "half": 0.5, "brain": -2.5,
        "single": f64::from(0.1f32), "double": 1.0 / 3.0, "q": 448.0, "q5": "inf",
        "scale": 0.25, "tag": [97, 98, 99, 100], "signed": [-1, 5],
        "inner": {"scale": 2.0, "on": false}, "mode": "Fast", "taps": [1.0, -0.5],
        "label": "héllo",
    })
}

fn layout() -> &'static Layout {
    Every::layout()
}

#[test]
fn a_value_packs_to_the_derives_bytes_and_unpacks_back() {
    let bytes = every().pack();
    assert_eq!(pack_value(layout(), &every_json()).unwrap(), bytes);
    assert_eq!(unpack_value(layout(), &bytes).unwrap(), every_json());
    // Byte arrays also as a string of their bytes, or as hex; an i8 holds a byte's bits.
    for (tag, signed) in [
        (json!("abcd"), json!({"hex": "ff05"})),
        (json!({"hex": "61626364"}), json!([-1, 5])),
    ] {
        let mut v = every_json();
        v["tag"] = tag;
        v["signed"] = signed;
        assert_eq!(pack_value(layout(), &v).unwrap(), bytes);
    }
}

#[test]
fn the_layout_reads_back_from_its_json() {
    let v: Value = serde_json::from_str(&layout().to_json()).unwrap();
    assert_eq!(&Layout::from_json(&v).unwrap(), layout());
    let mut forged = v.clone();
    forged["fields"][0]["name"] = json!("other");
    let e = Layout::from_json(&forged).unwrap_err();
    assert!(e.contains("are not those of its fields"), "{e}");
}

/// The message of packing `every_json()` with `field` set to `v`.
fn refusal(field: &str, v: Value) -> String {
    let mut value = every_json();
    value[field] = v;
    pack_value(layout(), &value).unwrap_err().to_string()
}

#[test]
fn every_float_type_refuses_a_value_beyond_its_range_alike() {
    let cases = [
        ("single", json!(1e39), "1e39 does not fit f32"),
        ("double", json!("1e400"), "expected a number (f64)"),
        ("half", json!(65520.0), "65520 does not fit f16"),
        ("brain", json!(3.4e38), "does not fit bf16"),
        ("q", json!(500.0), "500 does not fit f8E4M3FN"),
        ("q", json!("inf"), "f8E4M3FN has no infinity"),
        ("q", json!("-inf"), "f8E4M3FN has no infinity"),
        ("scale", json!(0.0), "0 does not fit f8E8M0FNU"),
        ("scale", json!(-1.0), "-1 does not fit f8E8M0FNU"),
        ("scale", json!(2e39), "does not fit f8E8M0FNU"),
    ];
    for (field, v, want) in cases {
        let got = refusal(field, v.clone());
        assert!(
            got.starts_with(&format!(
                "descriptor `value_tests::Every`, field `{field}`: "
            )),
            "{got}"
        );
        assert!(got.contains(want), "{field} = {v}: {got}");
    }
    // What does fit: rounding into range, the largest value, NaN, an infinity where the type
    // has one, and a value that rounds down to the largest (464 is a tie: to even, 448).
    for (field, v) in [
        ("single", json!(3.4028235e38)),
        ("half", json!(65519.0)),
        ("q", json!(464.0)),
        ("q", json!("nan")),
        ("q5", json!("-inf")),
        ("single", json!("+inf")),
        ("scale", json!(1e-40)),
    ] {
        let mut value = every_json();
        value[field] = v.clone();
        assert!(pack_value(layout(), &value).is_ok(), "{field} = {v}");
    }
}

#[test]
fn integers_booleans_enums_and_shapes_are_checked_and_named() {
    let cases = [
        ("a", json!(128), "field `a`: 128 does not fit i8"),
        ("e", json!(-1), "field `e`: -1 does not fit u8"),
        (
            "h",
            json!(1.0),
            "field `h`: expected an integer (u64), got 1.0",
        ),
        (
            "g",
            json!(true),
            "field `g`: expected an integer (u32), got true",
        ),
        ("flag", json!(1), "field `flag`: expected bool, got 1"),
        (
            "mode",
            json!("Slow"),
            "\"Slow\" is not a variant of Mode (its variants: Fast, Exact)",
        ),
        (
            "tag",
            json!("abc"),
            "a [u8; 4] takes exactly 4 bytes, got 3; pad it to 4 bytes",
        ),
        (
            "tag",
            json!([1, 2]),
            "field `tag`: expected 4 elements, got 2",
        ),
        ("tag", json!({"hex": "6x"}), "\"6x\" is not bytes in hex"),
        (
            "signed",
            json!([1, 200]),
            "field `signed[1]`: 200 does not fit i8",
        ),
        ("taps", json!(1.0), "field `taps`: expected a list, got 1.0"),
        ("label", json!(3), "field `label`: expected a string, got 3"),
        (
            "inner",
            json!({"scale": 1.0}),
            "has no value for field `inner.on`",
        ),
    ];
    for (field, v, want) in cases {
        let got = refusal(field, v.clone());
        assert!(got.contains(want), "{field} = {v}: {got}");
    }
    let mut v = every_json();
    v["extra"] = json!(1);
    let e = pack_value(layout(), &v).unwrap_err();
    assert_eq!(e.field(), "extra");
    assert!(e.to_string().starts_with(
        "descriptor `value_tests::Every` has no field `extra` (its fields: flag, a, b,"
    ));
    let mut v = every_json();
    v.as_object_mut().unwrap().remove("label");
    let e = pack_value(layout(), &v).unwrap_err();
    assert_eq!(
        e.to_string(),
        "descriptor `value_tests::Every` has no value for field `label`"
    );
}

#[test]
fn unpacking_refuses_what_the_derive_refuses() {
    let good = every().pack();
    // Every single-byte change of a valid packing: the value reader and the derive agree on
    // whether the bytes are a value, and on why not.
    for at in 0..good.len() {
        for byte in [0u8, 1, 2, 0x7F, 0x80, 0xFF] {
            let mut bytes = good.clone();
            bytes[at] = byte;
            let derive = Every::unpack(&bytes)
                .map(|_| ())
                .map_err(|e| e.kind().clone());
            let value = unpack_value(layout(), &bytes)
                .map(|_| ())
                .map_err(|e| e.kind().clone());
            assert_eq!(value, derive, "byte {at} = {byte:#x}");
        }
    }
    for n in 0..good.len() {
        assert!(unpack_value(layout(), &good[..n]).is_err(), "cut to {n}");
    }
    let mut long = good.clone();
    long.push(0);
    assert!(unpack_value(layout(), &long).is_err());
}

#[test]
fn floats_that_json_cannot_write_unpack_as_strings() {
    let mut e = every();
    e.single = f32::NAN;
    e.double = f64::NEG_INFINITY;
    e.q = F8E4M3FN::from_bits(0x7F);
    let v = unpack_value(layout(), &e.pack()).unwrap();
    assert_eq!(
        (&v["single"], &v["double"], &v["q"], &v["q5"]),
        (&json!("nan"), &json!("-inf"), &json!("nan"), &json!("inf"))
    );
    // And they pack back to the same bytes.
    assert_eq!(pack_value(layout(), &v).unwrap(), e.pack());
}
