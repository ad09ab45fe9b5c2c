//! Descriptors: wire format v1 byte for byte, round trips, and every validation error.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use customop::descriptor::{ErrorKind, HEADER_SIZE, TypeLayout, fingerprint_of};
use customop::prelude::*;

mod common;
use common::*;

#[test]
fn blob_packs_to_the_documented_bytes() {
    let bytes = blob().pack();
    assert_eq!(bytes.len(), 56);
    assert_eq!(Blob::PACKED_SIZE, Some(56));
    assert_eq!(&bytes[0..4], b"CUOP");
    assert_eq!(&bytes[4..6], &1u16.to_le_bytes());
    assert_eq!(&bytes[6..8], &[0, 0]);
    assert_eq!(&bytes[8..12], &32u32.to_le_bytes());
    assert_eq!(&bytes[12..16], &[0; 4]);
    let canonical = "my_lib::Blob{gain:f32,bias:i32,seed:u64,tag:[u8;16]}";
    assert_eq!(Blob::layout().canonical, canonical);
    assert_eq!(
        &bytes[16..24],
        &fingerprint_of(canonical.as_bytes()).to_le_bytes()
    );
    assert_eq!(&bytes[24..28], &1.5f32.to_le_bytes());
    assert_eq!(&bytes[28..32], &(-3i32).to_le_bytes());
    assert_eq!(&bytes[32..40], &0x0102_0304_0506_0708u64.to_le_bytes());
    assert_eq!(&bytes[40..56], b"customop-tag-16b");
    assert_eq!(Blob::unpack(&bytes).unwrap(), blob());
}

/// Each field's name, offset (`None` for a tail) and size.
fn field_offsets(l: &customop::descriptor::Layout) -> Vec<(&str, Option<usize>, usize)> {
    l.fields
        .iter()
        .map(|f| (f.name.as_str(), f.offset, f.size))
        .collect()
}

#[test]
fn fields_sit_at_natural_alignment_with_zero_padding() {
    let l = Everything::layout();
    let offsets = field_offsets(l);
    assert_eq!(
        offsets,
        vec![
            ("a", Some(0), 1),
            ("b", Some(1), 1),
            ("c", Some(2), 2),
            ("d", Some(4), 4),
            ("e", Some(8), 8),
            ("f", Some(16), 1),
            ("g", Some(18), 2),
            ("h", Some(20), 4),
            ("i", Some(24), 8),
            ("j", Some(32), 4),
            ("k", Some(40), 8),
            ("mode", Some(48), 1),
            ("signed", Some(52), 4),
            ("inner", Some(56), 16),
            ("grid", Some(72), 12),
            ("inners", Some(88), 32),
        ]
    );
    assert_eq!(l.fixed_size, 120);
    assert_eq!(l.align, 8);
    let bytes = everything().pack();
    assert_eq!(bytes.len(), HEADER_SIZE + 120);
    // Padding after `mode` (49..52) and inside `inner` (57..64) is zero.
    assert_eq!(&bytes[HEADER_SIZE + 49..HEADER_SIZE + 52], &[0, 0, 0]);
    assert_eq!(&bytes[HEADER_SIZE + 57..HEADER_SIZE + 64], &[0; 7]);
    assert_eq!(Everything::unpack(&bytes).unwrap(), everything());
    assert_eq!(
        l.canonical,
        "Everything{a:bool,b:i8,c:i16,d:i32,e:i64,f:u8,g:u16,h:u32,i:u64,j:f32,k:f64,\
         mode:Mode(u8){Fast=0,Exact=1},signed:Signed(i32){Minus=-2,Plus=7},\
         inner:Inner{flag:bool,scale:f64},grid:[[i16;3];2],inners:[Inner{flag:bool,scale:f64};2]}"
    );
}

#[test]
fn tails_follow_the_fixed_part() {
    let t = table();
    let bytes = t.pack();
    assert_eq!(Table::PACKED_SIZE, None);
    let p = &bytes[HEADER_SIZE..];
    // Fixed part: id (2 bytes), rounded to align 2.
    assert_eq!(Table::FIXED_SIZE, 2);
    assert_eq!(&p[0..2], &7u16.to_le_bytes());
    // offsets: pad to 4, count 3, pad to 8, three u64s.
    assert_eq!(&p[2..4], &[0, 0]);
    assert_eq!(&p[4..8], &3u32.to_le_bytes());
    assert_eq!(&p[8..16], &1u64.to_le_bytes());
    assert_eq!(&p[24..32], &3u64.to_le_bytes());
    // label: count 6 (UTF-8 bytes), then the bytes.
    assert_eq!(&p[32..36], &6u32.to_le_bytes());
    assert_eq!(&p[36..42], "héllo".as_bytes());
    // modes: pad to 4 (42..44), count 2, bytes 0 1.
    assert_eq!(&p[42..44], &[0, 0]);
    assert_eq!(&p[44..48], &2u32.to_le_bytes());
    assert_eq!(&p[48..50], &[0, 1]);
    assert_eq!(p.len(), 50);
    assert_eq!(t.packed_len(), bytes.len());
    assert_eq!(Table::unpack(&bytes).unwrap(), t);
    let empty = Table {
        id: 0,
        offsets: vec![],
        label: String::new(),
        modes: vec![],
    };
    assert_eq!(Table::unpack(&empty.pack()).unwrap(), empty);
}

#[test]
fn pack_into_does_not_allocate_and_checks_the_buffer() {
    let mut buf = [0xAAu8; 64];
    assert_eq!(blob().pack_into(&mut buf).unwrap(), 56);
    assert_eq!(&buf[..56], &blob().pack()[..]);
    assert_eq!(buf[56], 0xAA, "bytes past the packed length are untouched");
    let err = blob().pack_into(&mut buf[..55]).unwrap_err();
    assert_eq!(
        err.kind(),
        &ErrorKind::BufferTooSmall {
            needed: 56,
            got: 55
        }
    );
}

#[test]
fn unpack_accepts_any_alignment() {
    let bytes = everything().pack();
    let mut shifted = vec![0u8; bytes.len() + 7];
    for shift in 0..8 {
        shifted[shift..shift + bytes.len()].copy_from_slice(&bytes);
        let v = Everything::unpack(&shifted[shift..shift + bytes.len()]).unwrap();
        assert_eq!(v, everything());
    }
}

fn kind_of<T: Descriptor + std::fmt::Debug>(bytes: &[u8]) -> (ErrorKind, String, String) {
    let e = T::unpack(bytes).unwrap_err();
    (e.kind().clone(), e.field().to_string(), e.to_string())
}

#[test]
fn every_bad_input_gets_its_own_error() {
    let good = blob().pack();

    let (k, _, msg) = kind_of::<Blob>(&good[..10]);
    assert_eq!(
        k,
        ErrorKind::TooShort {
            needed: 24,
            got: 10
        }
    );
    assert!(
        msg.starts_with("descriptor `my_lib::Blob`: too short"),
        "{msg}"
    );

    let mut long = good.clone();
    long.push(0);
    let (k, _, _) = kind_of::<Blob>(&long);
    assert_eq!(
        k,
        ErrorKind::PayloadLength {
            header: 32,
            actual: 33
        }
    );

    // Header agrees with a longer payload: the fields end first.
    let mut long2 = long.clone();
    long2[8..12].copy_from_slice(&33u32.to_le_bytes());
    let (k, _, _) = kind_of::<Blob>(&long2);
    assert_eq!(k, ErrorKind::TooLong { used: 56, got: 57 });

    let mut short = good[..50].to_vec();
    short[8..12].copy_from_slice(&26u32.to_le_bytes());
    let (k, _, _) = kind_of::<Blob>(&short);
    assert_eq!(
        k,
        ErrorKind::TooShort {
            needed: 56,
            got: 50
        }
    );

    let mut magic = good.clone();
    magic[0] = b'X';
    let (k, _, msg) = kind_of::<Blob>(&magic);
    assert_eq!(k, ErrorKind::BadMagic { found: *b"XUOP" });
    assert!(msg.contains("bad magic"), "{msg}");

    let mut version = good.clone();
    version[4] = 2;
    let (k, _, msg) = kind_of::<Blob>(&version);
    assert_eq!(k, ErrorKind::UnsupportedVersion { found: 2 });
    assert!(msg.contains("unsupported format version 2"), "{msg}");

    let mut flags = good.clone();
    flags[6] = 1;
    let (k, _, _) = kind_of::<Blob>(&flags);
    assert_eq!(
        k,
        ErrorKind::ReservedBits {
            flags: 1,
            reserved: 0
        }
    );

    // Bytes packed for another (known) layout name it.
    let _ = Everything::layout();
    let other = everything().pack();
    let (k, _, msg) = kind_of::<Blob>(&other);
    assert!(
        matches!(
            k,
            ErrorKind::FingerprintMismatch {
                packed_as: Some("Everything"),
                ..
            }
        ),
        "{k:?}"
    );
    assert!(
        msg.contains("`my_lib::Blob`") && msg.contains("packed as `Everything`"),
        "{msg}"
    );
    let mut unknown = good.clone();
    unknown[16] ^= 0xff;
    let (k, _, msg) = kind_of::<Blob>(&unknown);
    assert!(matches!(
        k,
        ErrorKind::FingerprintMismatch {
            packed_as: None,
            ..
        }
    ));
    assert!(msg.contains("does not know"), "{msg}");
}

#[test]
fn field_values_are_validated_and_named() {
    let good = everything().pack();
    let at = |field: &str| {
        HEADER_SIZE
            + Everything::layout()
                .fields
                .iter()
                .find(|f| f.name == field)
                .unwrap()
                .offset
                .unwrap()
    };

    let mut b = good.clone();
    b[at("a")] = 2;
    let (k, field, msg) = kind_of::<Everything>(&b);
    assert_eq!(k, ErrorKind::InvalidBool { byte: 2 });
    assert_eq!(field, "a");
    assert_eq!(
        msg,
        "descriptor `Everything`, field `a`: invalid bool byte 0x02 (must be 0 or 1)"
    );

    let mut b = good.clone();
    b[at("mode")] = 9;
    let (k, field, _) = kind_of::<Everything>(&b);
    assert_eq!(
        k,
        ErrorKind::InvalidEnum {
            name: "Mode",
            value: 9
        }
    );
    assert_eq!(field, "mode");

    let mut b = good.clone();
    b[at("signed")..at("signed") + 4].copy_from_slice(&5i32.to_le_bytes());
    let (k, _, _) = kind_of::<Everything>(&b);
    assert_eq!(
        k,
        ErrorKind::InvalidEnum {
            name: "Signed",
            value: 5
        }
    );

    let mut b = good.clone();
    b[at("inner")] = 3;
    let (_, field, msg) = kind_of::<Everything>(&b);
    assert_eq!(field, "inner.flag");
    assert!(
        msg.starts_with("descriptor `Everything`, field `inner.flag`"),
        "{msg}"
    );

    let mut b = good.clone();
    b[at("inners") + 16] = 7; // inners[1].flag
    let (_, field, _) = kind_of::<Everything>(&b);
    assert_eq!(field, "inners[1].flag");

    let mut b = good.clone();
    b[at("mode") + 1] = 1; // padding after mode
    let (k, _, _) = kind_of::<Everything>(&b);
    assert_eq!(k, ErrorKind::NonzeroPadding { offset: 49 });
}

#[test]
fn tails_are_validated() {
    let good = table().pack();
    let p = HEADER_SIZE;

    let mut b = good.clone();
    b[p + 4..p + 8].copy_from_slice(&1_000_000u32.to_le_bytes());
    let (k, field, _) = kind_of::<Table>(&b);
    assert!(
        matches!(k, ErrorKind::TailLength { len: 1_000_000, .. }),
        "{k:?}"
    );
    assert_eq!(field, "offsets");

    let mut b = good.clone();
    b[p + 32..p + 36].copy_from_slice(&u32::MAX.to_le_bytes());
    let (k, field, _) = kind_of::<Table>(&b);
    assert!(matches!(k, ErrorKind::TailLength { .. }), "{k:?}");
    assert_eq!(field, "label");

    let mut b = good.clone();
    b[p + 37] = 0xff; // inside "héllo"
    let (k, field, msg) = kind_of::<Table>(&b);
    assert_eq!(k, ErrorKind::InvalidUtf8 { at: 1 });
    assert_eq!(field, "label");
    assert!(msg.contains("not valid UTF-8"), "{msg}");

    let mut b = good.clone();
    b[p + 49] = 5;
    let (k, field, _) = kind_of::<Table>(&b);
    assert_eq!(
        k,
        ErrorKind::InvalidEnum {
            name: "Mode",
            value: 5
        }
    );
    assert_eq!(field, "modes[1]");

    let mut b = good.clone();
    b.truncate(p + 46);
    b[8..12].copy_from_slice(&46u32.to_le_bytes());
    let (k, field, _) = kind_of::<Table>(&b);
    assert!(matches!(k, ErrorKind::TooShort { .. }), "{k:?}");
    assert_eq!(field, "modes");
}

#[test]
fn the_layout_exports_as_json() {
    let json: serde_json::Value = serde_json::from_str(&Table::layout().to_json()).unwrap();
    assert_eq!(json["name"], "Table");
    assert_eq!(
        json["fingerprint"],
        format!(
            "0x{:016x}",
            fingerprint_of(json["canonical"].as_str().unwrap().as_bytes())
        )
    );
    assert_eq!(json["fields"][1]["name"], "offsets");
    assert_eq!(json["fields"][1]["offset"], serde_json::Value::Null);
    assert_eq!(json["fields"][1]["type"]["kind"], "vec");
    assert_eq!(json["fields"][1]["type"]["element"]["kind"], "u64");
    assert_eq!(json["fields"][3]["type"]["element"]["kind"], "enum");
    assert_eq!(
        json["fields"][3]["type"]["element"]["variants"][1]["value"],
        1
    );
    assert!(matches!(
        Everything::layout().fields[13].ty,
        TypeLayout::Struct { .. }
    ));
}

// --- 8-bit floats -----------------------------------------------------------------------------

use customop::{
    F8E3M4, F8E4M3, F8E4M3B11FNUZ, F8E4M3FN, F8E4M3FNUZ, F8E5M2, F8E5M2FNUZ, F8E8M0FNU,
};

/// The eight 8-bit float types as fields (one byte, alignment 1, their bits), in an array and
/// in a `Vec` tail, around an `f32` that they pad up to.
#[derive(Descriptor, Clone, Debug)]
#[descriptor(name = "test::Float8s")]
pub struct Float8s {
    pub a: F8E4M3FN,
    pub b: F8E5M2,
    pub gain: f32,
    pub c: F8E4M3,
    pub d: F8E3M4,
    pub e: F8E4M3FNUZ,
    pub f: F8E5M2FNUZ,
    pub g: F8E4M3B11FNUZ,
    pub scales: [F8E8M0FNU; 3],
    pub q: Vec<F8E4M3FN>,
}

/// Rounded values, an infinity, NaNs (by overflow and by name), a `-0` that the FNUZ type makes
/// `+0`, the scale type's tie (3 → 4), smallest and NaN.
fn float8s() -> Float8s {
    Float8s {
        a: F8E4M3FN::from_f64(1.0 / 3.0),
        b: F8E5M2::NEG_INFINITY,
        gain: 0.5,
        c: F8E4M3::from_f64(-240.0),
        d: F8E3M4::from_f64(1.0 / 3.0),
        e: F8E4M3FNUZ::NAN,
        f: F8E5M2FNUZ::from_f64(-0.0),
        g: F8E4M3B11FNUZ::from_f64(-1.0 / 3.0),
        scales: [
            F8E8M0FNU::from_f64(3.0),
            F8E8M0FNU::MIN_POSITIVE,
            F8E8M0FNU::NAN,
        ],
        q: vec![
            F8E4M3FN::from_f64(1000.0),
            F8E4M3FN::MAX,
            F8E4M3FN::from_f64(-0.3),
        ],
    }
}

#[test]
fn float8_fields_are_one_byte_of_bits() {
    let l = Float8s::layout();
    assert_eq!(
        l.canonical,
        "test::Float8s{a:f8E4M3FN,b:f8E5M2,gain:f32,c:f8E4M3,d:f8E3M4,e:f8E4M3FNUZ,\
         f:f8E5M2FNUZ,g:f8E4M3B11FNUZ,scales:[f8E8M0FNU;3],q:Vec<f8E4M3FN>}"
    );
    assert_eq!(l.fingerprint, fingerprint_of(l.canonical.as_bytes()));
    let offsets = field_offsets(l);
    assert_eq!(
        offsets,
        vec![
            ("a", Some(0), 1),
            ("b", Some(1), 1),
            ("gain", Some(4), 4),
            ("c", Some(8), 1),
            ("d", Some(9), 1),
            ("e", Some(10), 1),
            ("f", Some(11), 1),
            ("g", Some(12), 1),
            ("scales", Some(13), 3),
            ("q", None, 0),
        ]
    );
    assert_eq!((l.fixed_size, l.align, Float8s::FIXED_SIZE), (16, 4, 16));
    let json: serde_json::Value = serde_json::from_str(&l.to_json()).unwrap();
    assert_eq!(
        json["fields"][0]["type"],
        serde_json::json!({"kind": "f8E4M3FN"})
    );
    assert_eq!(
        json["fields"][8]["type"]["element"],
        serde_json::json!({"kind": "f8E8M0FNU"})
    );

    // The bits, as ml_dtypes gives them for the same values (float8_e4m3fn(1/3) is 0x2b, ...).
    let bytes = float8s().pack();
    let p = &bytes[HEADER_SIZE..];
    assert_eq!(p.len(), 16 + 4 + 3);
    assert_eq!(&p[0..4], &[0x2b, 0xfc, 0, 0], "a, b, zero padding");
    assert_eq!(&p[4..8], &0.5f32.to_le_bytes());
    assert_eq!(
        &p[8..16],
        &[0xf7, 0x15, 0x80, 0x00, 0xcb, 0x81, 0x00, 0xff],
        "c, d, e, f, g, scales"
    );
    assert_eq!(&p[16..20], &3u32.to_le_bytes(), "q's count");
    assert_eq!(&p[20..23], &[0x7f, 0x7e, 0xaa], "q");

    // Round trip, NaNs included, bit for bit.
    let back = Float8s::unpack(&bytes).unwrap();
    assert_eq!(back.pack(), bytes);
    assert_eq!(back.a.to_f64(), 0.34375);
    assert!(back.e.is_nan() && back.scales[2].is_nan() && back.q[0].is_nan());
    assert_eq!(back.b.to_f64(), f64::NEG_INFINITY);
    assert_eq!(back.scales[0].to_f64(), 4.0);
}

#[test]
fn every_float8_bit_pattern_is_a_value() {
    let good = float8s().pack();
    for at in [0, 1, 8, 9, 10, 11, 12, 13, 14, 15, 20, 21, 22] {
        for byte in 0..=255u8 {
            let mut b = good.clone();
            b[HEADER_SIZE + at] = byte;
            let v = Float8s::unpack(&b).unwrap();
            assert_eq!(v.pack(), b, "byte {byte:#04x} at {at}");
        }
    }
}

/// A `repr_c` descriptor of 8-bit floats: its Rust layout is its wire payload, read in place.
#[derive(Descriptor, Clone, Copy, Debug)]
#[descriptor(name = "test::Fp8Block", repr_c)]
#[repr(C)]
pub struct Fp8Block {
    pub scale: F8E8M0FNU,
    pub q: [F8E4M3FN; 3],
    pub bias: f32,
}

#[test]
fn a_repr_c_descriptor_of_float8s_is_read_in_place() {
    use customop::descriptor::ReprC;
    let v = Fp8Block {
        scale: F8E8M0FNU::pow2(-3).unwrap(),
        q: [F8E4M3FN::ONE, F8E4M3FN::NAN, F8E4M3FN::from_f64(-0.5)],
        bias: -1.0,
    };
    let packed = v.pack();
    assert_eq!(
        &packed[HEADER_SIZE..HEADER_SIZE + 4],
        &[124, 0x38, 0x7f, 0xb0]
    );
    #[repr(C, align(8))]
    struct Aligned([u8; HEADER_SIZE + 8]);
    let mut buf = Aligned([0; HEADER_SIZE + 8]);
    buf.0.copy_from_slice(&packed);
    let view = Fp8Block::view(&buf.0).unwrap();
    assert_eq!(view.scale.to_f32(), 0.125);
    assert_eq!(
        view.q.map(F8E4M3FN::to_bits),
        [0x38, 0x7f, 0xb0],
        "bits as packed"
    );
    assert_eq!(view.bias, -1.0);
}

// --- Rust <-> Python, byte for byte --------------------------------------------------------
//
// python/customop/descriptors.py is written from the book's specification and does not call
// Rust. The values below are spelled independently on both sides.

mod python {
    use super::*;
    use customop_xla::Harness;
    use serde_json::{Value, json};

    fn hex(b: &[u8]) -> Value {
        json!({ "hex": b.iter().map(|x| format!("{x:02x}")).collect::<String>() })
    }

    fn unhex(v: &Value) -> Vec<u8> {
        let s = v["hex"].as_str().expect("bytes");
        (0..s.len() / 2)
            .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
            .collect()
    }

    fn layout_json<T: Descriptor>() -> Value {
        serde_json::from_str(&T::layout().to_json()).unwrap()
    }

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
        let h = Harness::get();
        let layout = layout_json::<T>();
        // Python packs the independently spelled value: the same bytes as Rust.
        let py_bytes = h
            .py_call("descriptors", "pack", json!([layout, spelled]))
            .unwrap();
        assert_eq!(unhex(&py_bytes), value.pack(), "{}", T::NAME);
        assert_eq!(T::unpack(&unhex(&py_bytes)).unwrap(), value);
        // Python unpacks Rust's bytes into the spelled value.
        let py_value = h
            .py_call("descriptors", "unpack", json!([layout, hex(&value.pack())]))
            .unwrap();
        assert_eq!(py_value, spelled, "{}", T::NAME);
    }

    #[test]
    fn every_field_kind_matches_python() {
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
    fn half_float_fields_match_python() {
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
        let at =
            |i: usize| u16::from_le_bytes([packed[HEADER_SIZE + i], packed[HEADER_SIZE + i + 1]]);
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
        // Python rounds the decimal values to nearest, ties to even, as `half` does, into
        // subnormals too. (Compared as bytes: serde_json's float parsing is not exact for
        // subnormal decimals.)
        let value = Halves {
            hs: [bf16::MAX, bf16::from_f64(1e-40), bf16::from_f32(65280.0)],
            v: vec![f16::from_f32(-2.5), f16::from_f64(6.0e-8)],
            ..value
        };
        let packed = value.pack();
        let h = Harness::get();
        let layout = layout_json::<Halves>();
        let mut decimal = json!({
            "tag": 9, "h": 1.0 / 3.0, "b": -1.0 / 3.0, "hs": [bf16::MAX.to_f64(), 1e-40, 65280.0],
            "x": 0.5, "v": [-2.5, 6.0e-8],
        });
        let py = h
            .py_call("descriptors", "pack", json!([layout, decimal]))
            .unwrap();
        assert_eq!(unhex(&py), packed);
        // A finite value beyond the type's range is an error naming the field, as for f32.
        for (field, big) in [("b", 1e39), ("h", 70000.0)] {
            decimal[field] = json!(big);
            let e = h
                .py_call("descriptors", "pack", json!([layout, decimal]))
                .unwrap_err();
            assert!(e.contains(&format!("field `{field}`")), "{e}");
            decimal[field] = json!(0.5);
        }
    }

    /// Python packs the 8-bit float fields as Rust does: the exact values both ways, and
    /// decimal values rounded as `from_f64` rounds them (ml_dtypes' rounding), overflow to an
    /// infinity or a NaN per type, and a float64 that rounding through f32 would make a tie.
    #[test]
    fn float8_fields_match_python() {
        let h = Harness::get();
        let layout = layout_json::<Float8s>();
        // Finite values (JSON has no NaN): Rust's bytes unpack to them, and they pack to them.
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
        let py = h
            .py_call("descriptors", "pack", json!([layout, spelled]))
            .unwrap();
        assert_eq!(unhex(&py), value.pack());
        let py_value = h
            .py_call("descriptors", "unpack", json!([layout, hex(&value.pack())]))
            .unwrap();
        assert_eq!(py_value, spelled);
        // Decimals that round, overflow (E4M3FN: NaN; E5M2: infinity; E8M0FNU: NaN) or tie.
        let tie = 1.0625 + 2f64.powi(-40); // f32 rounds it to the tie 1.0625; f64 rounds up
        let x = [1.0 / 3.0, 1e6, 0.1, -1.0 / 3.0, 1000.0, -1e6, tie];
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
                F8E8M0FNU::from_f64(-1.0),
                F8E8M0FNU::from_f64(1e300),
            ],
            q: vec![F8E4M3FN::from_f64(tie), F8E4M3FN::from_f64(1e-3)],
        };
        assert_ne!(
            F8E4M3FN::from_f64(tie).to_bits(),
            F8E4M3FN::from_f32(tie as f32).to_bits()
        );
        let py = h
            .py_call(
                "descriptors",
                "pack",
                json!([layout, {
                    "a": x[0], "b": x[1], "gain": 0.5, "c": x[2], "d": x[3], "e": x[4],
                    "f": x[5], "g": x[6], "scales": [0.75, -1.0, 1e300], "q": [tie, 1e-3],
                }]),
            )
            .unwrap();
        assert_eq!(unhex(&py), decimal.pack());
    }

    #[test]
    fn python_rejects_what_rust_rejects() {
        let h = Harness::get();
        let layout = layout_json::<Everything>();
        let good = everything().pack();
        let mut bad_bool = good.clone();
        bad_bool[HEADER_SIZE] = 2;
        let mut bad_fp = good.clone();
        bad_fp[16] ^= 1;
        for (bytes, want) in [
            (bad_bool, "invalid bool"),
            (bad_fp, "fingerprint mismatch"),
            (good[..30].to_vec(), "payload length"),
        ] {
            assert!(Everything::unpack(&bytes).is_err());
            let err = h
                .py_call("descriptors", "unpack", json!([layout, hex(&bytes)]))
                .unwrap_err();
            assert!(err.contains(want), "{err}");
        }
    }
}

/// A C-style struct: `char name[8]` arrives as `[i8; 8]` (`c_char`), next to a byte array.
#[derive(Descriptor, Clone, Copy, Debug, PartialEq)]
#[descriptor(name = "test::Named")]
pub struct Named {
    pub id: u16,
    pub name: [i8; 8],
    pub key: [u8; 4],
}

mod python_values {
    use super::*;
    use customop_xla::Harness;
    use serde_json::{Value, json};

    fn layout<T: Descriptor>() -> Value {
        serde_json::from_str(&T::layout().to_json()).unwrap()
    }

    fn bytes(b: &[u8]) -> Value {
        json!({ "hex": b.iter().map(|x| format!("{x:02x}")).collect::<String>() })
    }

    fn pack(layout: &Value, value: Value) -> Result<Vec<u8>, String> {
        Harness::get()
            .py_call("descriptors", "pack", json!([layout, value]))
            .map(|v| {
                let s = v["hex"].as_str().unwrap().to_string();
                (0..s.len() / 2)
                    .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
                    .collect()
            })
    }

    #[test]
    fn byte_arrays_take_bytes_and_str_of_their_length() {
        let l = layout::<Named>();
        let want = Named {
            id: 3,
            name: [104, 105, -1, 0, 0, 0, 0, 0], // "hi", 0xff, zeros
            key: *b"k3y!",
        };
        // bytes for both the i8 (C char) and the u8 array; str (UTF-8) for the u8 one.
        let from_bytes = pack(
            &l,
            json!({"id": 3, "name": bytes(b"hi\xff\0\0\0\0\0"), "key": bytes(b"k3y!")}),
        )
        .unwrap();
        assert_eq!(from_bytes, want.pack());
        let from_str = pack(
            &l,
            json!({"id": 3, "name": [104, 105, -1, 0, 0, 0, 0, 0], "key": "k3y!"}),
        )
        .unwrap();
        assert_eq!(from_str, want.pack());
        // Of another length: an error that says how many bytes, and how to pad.
        let err = pack(&l, json!({"id": 3, "name": "hi", "key": "k3y!"})).unwrap_err();
        assert!(
            err.contains(
                "PackError: descriptor `test::Named`, field `name`: a [i8; 8] takes exactly 8 \
                 bytes, got 2; pad it"
            ),
            "{err}"
        );
        let err = pack(
            &l,
            json!({"id": 3, "name": "hi\0\0\0\0\0\0", "key": "key-too-long"}),
        )
        .unwrap_err();
        assert!(
            err.contains("field `key`: a [u8; 4] takes exactly 4 bytes, got 12"),
            "{err}"
        );
        // A str for an array of other elements is refused, not read as characters.
        let mut v = everything_value();
        v["grid"] = json!("abcdef");
        let err = pack(&layout::<Everything>(), v).unwrap_err();
        assert!(
            err.contains("field `grid`: a [[i16; 3]; 2] takes a list, got str"),
            "{err}"
        );
    }

    fn everything_value() -> Value {
        json!({
            "a": true, "b": -8, "c": -1600, "d": 32_000_000, "e": -64_000_000_000i64,
            "f": 200, "g": 60_000, "h": 4_000_000_000u32, "i": 1,
            "j": -0.25, "k": 1.0e300, "mode": "Exact", "signed": "Minus",
            "inner": {"flag": true, "scale": 1.0},
            "grid": [[1, -2, 3], [-4, 5, -6]],
            "inners": [{"flag": false, "scale": 0.5}, {"flag": true, "scale": 8.0}],
        })
    }

    #[test]
    fn python_pack_names_the_descriptor_and_the_field() {
        let blob = layout::<Blob>();
        let err = pack(&blob, json!({"gain": 1.0, "bias": 0, "tag": vec![0; 16]})).unwrap_err();
        assert_eq!(
            err,
            "PackError: descriptor `my_lib::Blob` has no value for field `seed`"
        );
        let err = pack(
            &blob,
            json!({"gain": 1.0, "bias": 0, "seed": 0, "tag": vec![0; 16], "gian": 2.0}),
        )
        .unwrap_err();
        assert_eq!(
            err,
            "PackError: descriptor `my_lib::Blob` has no field `gian` (its fields: gain, bias, seed, tag)"
        );
        let err = pack(
            &blob,
            json!({"gain": 1.0, "bias": 1.5, "seed": 0, "tag": vec![0; 16]}),
        )
        .unwrap_err();
        assert!(
            err.contains("field `bias`: expected an integer (i32), got 1.5"),
            "{err}"
        );
        let err = pack(
            &blob,
            json!({"gain": 1.0, "bias": 0, "seed": -1, "tag": vec![0; 16]}),
        )
        .unwrap_err();
        assert!(err.contains("field `seed`: -1 does not fit u64"), "{err}");
        let err = pack(
            &blob,
            json!({"gain": 1.0, "bias": 0, "seed": 0, "tag": vec![0; 15]}),
        )
        .unwrap_err();
        assert!(
            err.contains("field `tag`: expected 16 elements, got 15"),
            "{err}"
        );
        // Nested: the path to the field.
        let everything = layout::<Everything>();
        let mut v = everything_value();
        v["inner"] = json!({"flag": true});
        let err = pack(&everything, v.clone()).unwrap_err();
        assert_eq!(
            err,
            "PackError: descriptor `Everything` has no value for field `inner.scale`"
        );
        v["inner"] = json!({"flag": true, "scale": 1.0});
        v["mode"] = json!("Slow");
        let err = pack(&everything, v.clone()).unwrap_err();
        assert!(
            err.contains(
                "field `mode`: 'Slow' is not a variant of Mode (its variants: Fast, Exact)"
            ),
            "{err}"
        );
        v["mode"] = json!("Fast");
        v["grid"][1][2] = json!(40_000);
        let err = pack(&everything, v).unwrap_err();
        assert!(
            err.contains("field `grid[1][2]`: 40000 does not fit i16"),
            "{err}"
        );
    }
}

// --- Properties ------------------------------------------------------------------------------

mod props {
    use super::*;
    use proptest::prelude::*;

    fn mode() -> impl Strategy<Value = Mode> {
        prop_oneof![Just(Mode::Fast), Just(Mode::Exact)]
    }

    fn inner() -> impl Strategy<Value = Inner> {
        (any::<bool>(), any::<f64>()).prop_map(|(flag, scale)| Inner { flag, scale })
    }

    prop_compose! {
        fn blob_s()(gain in any::<f32>(), bias in any::<i32>(), seed in any::<u64>(),
                    tag in any::<[u8; 16]>()) -> Blob {
            Blob { gain, bias, seed, tag }
        }
    }

    prop_compose! {
        fn everything_s()(ints in any::<(bool, i8, i16, i32, i64, u8, u16, u32, u64)>(),
                          j in any::<f32>(), k in any::<f64>(), mode in mode(),
                          signed in prop_oneof![Just(Signed::Minus), Just(Signed::Plus)],
                          inner in inner(), grid in any::<[[i16; 3]; 2]>(),
                          i0 in inner(), i1 in inner()) -> Everything {
            let (a, b, c, d, e, f, g, h, i) = ints;
            Everything { a, b, c, d, e, f, g, h, i, j, k, mode, signed, inner, grid, inners: [i0, i1] }
        }
    }

    prop_compose! {
        fn table_s()(id in any::<u16>(), offsets in prop::collection::vec(any::<u64>(), 0..40),
                     label in ".{0,40}", modes in prop::collection::vec(mode(), 0..40)) -> Table {
            Table { id, offsets, label, modes }
        }
    }

    /// Equality that treats NaN payloads bit for bit (packing must preserve them exactly).
    fn same_bits<T: Descriptor>(a: &T, b: &T) -> bool {
        a.pack() == b.pack()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn blob_round_trips(v in blob_s()) {
            let back = Blob::unpack(&v.pack()).unwrap();
            prop_assert!(same_bits(&back, &v));
        }

        #[test]
        fn everything_round_trips(v in everything_s()) {
            let back = Everything::unpack(&v.pack()).unwrap();
            prop_assert!(same_bits(&back, &v));
        }

        #[test]
        fn table_round_trips(v in table_s()) {
            let bytes = v.pack();
            prop_assert_eq!(bytes.len(), v.packed_len());
            prop_assert_eq!(Table::unpack(&bytes).unwrap(), v);
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
            let _ = Blob::unpack(&bytes);
            let _ = Everything::unpack(&bytes);
            let _ = Table::unpack(&bytes);
        }

        /// Valid bytes with a few bytes changed: unpack errors or returns a value that packs
        /// back to exactly those bytes (nothing is silently reinterpreted).
        #[test]
        fn mutated_bytes_are_rejected_or_exact(v in table_s(), e in everything_s(),
                                               edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4)) {
            for mut bytes in [v.pack(), e.pack()] {
                for (i, b) in &edits {
                    let at = i.index(bytes.len());
                    bytes[at] = *b;
                }
                if let Ok(t) = Table::unpack(&bytes) {
                    prop_assert_eq!(t.pack(), bytes.clone());
                }
                if let Ok(t) = Everything::unpack(&bytes) {
                    prop_assert_eq!(t.pack(), bytes.clone());
                }
            }
        }

        /// A header that claims a huge tail never makes unpack allocate past the input.
        #[test]
        fn huge_counts_fail_fast(count in 4u32..) {
            let mut bytes = table().pack();
            bytes[HEADER_SIZE + 4..HEADER_SIZE + 8].copy_from_slice(&count.to_le_bytes());
            prop_assert!(Table::unpack(&bytes).is_err());
        }
    }
}

#[test]
fn check_packed_refuses_bytes_cut_short_or_run_long() {
    use customop::descriptor::check_packed;
    let l = Blob::layout();
    let bytes = blob().pack();
    assert!(check_packed(l, &bytes).is_ok());
    assert!(check_packed(l, &bytes[..40]).is_err());
    let mut long = bytes.clone();
    long.extend([0u8; 8]);
    assert!(
        check_packed(l, &long).is_err(),
        "the header's length disagrees"
    );
    // A header that says 40 bytes follow: consistent, but longer than the layout's size.
    long[8..12].copy_from_slice(&40u32.to_le_bytes());
    let e = check_packed(l, &long).unwrap_err().to_string();
    assert!(
        e.contains("too long: 64 bytes, but the fields end at 56"),
        "{e}"
    );
}
