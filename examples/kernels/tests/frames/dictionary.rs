//! A kernel's `#[attrs]` dictionary, driven with fabricated XLA call frames: it sees every
//! attribute of the call (named ones too), counts them, reads each by name with its type
//! checked, and the handler refuses no attribute as undeclared. (Nested dictionaries come from
//! real XLA: tests/xla/test_ffi_ports.py.)

use super::support::*;
use customop::Refusal;
use customop_example_kernels::attributes as a;

fn i64_of(b: &Buf) -> i64 {
    i64::from_le_bytes(b.bytes.get()[..8].try_into().unwrap())
}

fn dictionary_attr(attrs: &[(&str, AttrValue)]) -> Frame {
    let mut f = Frame::new(vec![], vec![zeros(S64, &[], 8), zeros(S64, &[], 8)]);
    for (n, v) in attrs {
        f = f.attr(n, v.clone());
    }
    f
}

fn i64_attr(v: i64) -> AttrValue {
    AttrValue::Scalar(S64, v.to_le_bytes().to_vec())
}

#[test]
fn the_dictionary_holds_every_attribute() {
    let h: Handler = a::dictionary_attr::customop_handler_example_dictionary_attr;
    let mut f = dictionary_attr(&[("secret", i64_attr(42))]);
    f.call(h).unwrap();
    assert_eq!((i64_of(&f.rets[0]), i64_of(&f.rets[1])), (42, 1));
    let mut f = dictionary_attr(&[
        ("a_string", AttrValue::Str(b"hello".to_vec())),
        ("secret", i64_attr(-7)),
        ("z", AttrValue::Array(S32, 2, vec![0; 8])),
    ]);
    f.call(h).unwrap();
    assert_eq!((i64_of(&f.rets[0]), i64_of(&f.rets[1])), (-7, 3));
}

#[test]
fn a_missing_or_ill_typed_entry_is_refused_by_name() {
    let h: Handler = a::dictionary_attr::customop_handler_example_dictionary_attr;
    let f = dictionary_attr(&[("other", i64_attr(1))]);
    refused(
        f,
        h,
        Refusal::MissingAttribute,
        "attribute `secret` is missing",
    );
    let f = dictionary_attr(&[(
        "secret",
        AttrValue::Scalar(F32, 1f32.to_le_bytes().to_vec()),
    )]);
    refused(f, h, Refusal::WrongAttributeType, "expected i64, got f32");
    let f = dictionary_attr(&[("secret", AttrValue::Str(b"5".to_vec()))]);
    refused(
        f,
        h,
        Refusal::WrongAttributeType,
        "attribute `secret` is not a scalar",
    );
}

#[test]
fn a_name_that_is_not_utf8_is_refused_before_the_kernel() {
    let h: Handler = a::dictionary_attr::customop_handler_example_dictionary_attr;
    let mut f = dictionary_attr(&[("secret", i64_attr(1))]);
    f.attrs
        .push((String::from_utf8_lossy(&[0xff]).into_owned(), i64_attr(2)));
    // A lossy name is valid UTF-8; write the raw byte through the harness's raw names.
    f.raw_names = Some(vec![b"secret".to_vec(), vec![0xff]]);
    refused(f, h, Refusal::BadAttribute, "not UTF-8");
}

#[test]
fn named_attributes_and_the_dictionary_together() {
    let h: Handler = a::sum_attrs::customop_handler_example_sum_attrs;
    let x = buf(
        F64,
        &[2],
        &[1.0f64, 2.0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect::<Vec<_>>(),
    );
    let mut f = Frame::new(vec![x], vec![zeros(F64, &[2], 8), zeros(S64, &[], 8)])
        .attr("scale", AttrValue::Scalar(F64, 3f64.to_le_bytes().to_vec()))
        .attr("n", i64_attr(10))
        .attr(
            "w",
            AttrValue::Array(
                F64,
                2,
                [0.5f64, 0.25]
                    .iter()
                    .flat_map(|v| v.to_le_bytes())
                    .collect(),
            ),
        )
        .attr("tag", AttrValue::Str(b"t".to_vec()));
    f.call(h).unwrap();
    let out: Vec<f64> = f.rets[0]
        .bytes
        .get()
        .chunks(8)
        .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    // x * 3 + (10 + 0.75): `scale` is read by name and not added again.
    assert_eq!(out, vec![13.75, 16.75]);
    assert_eq!(i64_of(&f.rets[1]), 1);
    // A named attribute is still required, and typed.
    let x = buf(F64, &[1], &1f64.to_le_bytes());
    let f =
        Frame::new(vec![x], vec![zeros(F64, &[1], 8), zeros(S64, &[], 8)]).attr("n", i64_attr(1));
    refused(f, h, Refusal::MissingAttribute, "attribute `scale`");
}
