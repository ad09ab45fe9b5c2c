//! 8-bit float fields: one byte of bits each, every bit pattern a value, and a `repr_c`
//! descriptor of them read in place.

use super::*;

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
