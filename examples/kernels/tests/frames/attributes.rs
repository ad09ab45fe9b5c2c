//! Named attributes: missing, of another type, undeclared, given twice; strings and arrays.

use super::*;

fn rms_frame() -> Frame {
    let cfg = k::NormCfg {
        scale: 1.0,
        shift: 0.0,
        mode: k::NormMode::Scale,
    }
    .pack();
    Frame::new(
        vec![f32s(&[1, 2], &[3.0, 4.0])],
        vec![f32s(&[1, 2], &[0.0; 2])],
    )
    .attr(
        "eps",
        AttrValue::Scalar(F32, 1e-5f32.to_le_bytes().to_vec()),
    )
    .attr("cfg", AttrValue::Str(cfg))
}

fn rms() -> Handler {
    k::rms_norm::customop_handler_example_rms_norm
}

#[test]
fn attributes() {
    let mut f = rms_frame();
    assert!(f.call(rms()).is_ok());

    let mut f = rms_frame();
    f.attrs.remove(0);
    refused(
        f,
        rms(),
        Refusal::MissingAttribute,
        "attribute `eps` is missing",
    );
    // An attribute the op does not declare (a misspelt one beside the right ones, as XLA's
    // own binding refuses it): named, with what the op takes.
    let f = rms_frame().attr(
        "epsilon",
        AttrValue::Scalar(F32, 1f32.to_le_bytes().to_vec()),
    );
    refused(
        f,
        rms(),
        Refusal::UnknownAttribute,
        "the call carries attribute `epsilon` that the op does not declare (it takes `eps`, `cfg`)",
    );
    let mut f = rms_frame();
    f.attrs[0].1 = AttrValue::Scalar(S32, 1i32.to_le_bytes().to_vec());
    refused(
        f,
        rms(),
        Refusal::WrongAttributeType,
        "attribute `eps`: expected f32, got i32",
    );
    let mut f = rms_frame();
    f.attrs[0].1 = AttrValue::Str(b"1e-5".to_vec());
    refused(
        f,
        rms(),
        Refusal::WrongAttributeType,
        "attribute `eps` is not a scalar",
    );
    let mut f = rms_frame();
    f.attrs[1].1 = AttrValue::Other(2);
    refused(
        f,
        rms(),
        Refusal::WrongAttributeType,
        "attribute `cfg` is not a string",
    );
    let mut f = rms_frame();
    f.attrs[1].1 = AttrValue::Str(b"not a descriptor".to_vec());
    refused(f, rms(), Refusal::BadDescriptor, "example::NormCfg");
    let mut bad_enum = k::NormCfg {
        scale: 1.0,
        shift: 0.0,
        mode: k::NormMode::Scale,
    }
    .pack();
    bad_enum[24 + 8] = 9;
    let mut f = rms_frame();
    f.attrs[1].1 = AttrValue::Str(bad_enum);
    refused(f, rms(), Refusal::BadDescriptor, "invalid_enum");
}

#[test]
fn string_and_array_attributes() {
    use customop_example_kernel_lib as kl;
    let h: Handler = kl::affine::customop_handler_example_lib_affine;
    let good = || {
        Frame::new(vec![f32s(&[2], &[1.0, 2.0])], vec![f32s(&[2], &[0.0; 2])])
            .attr(
                "factor",
                AttrValue::Scalar(F64, 1.5f64.to_le_bytes().to_vec()),
            )
            .attr("label", AttrValue::Str(b"ok".to_vec()))
            .attr(
                "offsets",
                AttrValue::Array(
                    S64,
                    2,
                    [1i64, 2].iter().flat_map(|v| v.to_le_bytes()).collect(),
                ),
            )
            .attr("flag", AttrValue::Scalar(PRED, vec![1]))
            .attr("small", AttrValue::Scalar(U8, vec![3]))
    };
    assert!(good().call(h).is_ok());
    let mut f = good();
    f.attrs[1].1 = AttrValue::Str(vec![0xff, 0xfe]);
    refused(
        f,
        h,
        Refusal::BadAttribute,
        "attribute `label` is not UTF-8",
    );
    let mut f = good();
    f.attrs[2].1 = AttrValue::Array(S32, 2, vec![0; 8]);
    refused(
        f,
        h,
        Refusal::WrongAttributeType,
        "expected an array of i64, got i32",
    );
    let mut f = good();
    f.attrs[2].1 = AttrValue::Scalar(S64, vec![0; 8]);
    refused(
        f,
        h,
        Refusal::WrongAttributeType,
        "attribute `offsets` is not an array",
    );
    let mut f = good();
    f.attrs[3].1 = AttrValue::Scalar(S8, vec![1]);
    refused(f, h, Refusal::WrongAttributeType, "attribute `flag`");
}

#[test]
fn an_attribute_given_twice_is_refused_in_either_order() {
    // Only a raw call frame can name an attribute twice; the state cache's key would make
    // `[(n, 3), (n, 5)]` and `[(n, 5), (n, 3)]` one state, so both are refused.
    let h: Handler = k::state::windowed::customop_handler_example_windowed;
    let n = |v: i64| AttrValue::Scalar(S64, v.to_le_bytes().to_vec());
    for (a, b) in [(3, 5), (5, 3), (4, 4)] {
        let f = Frame::new(vec![f32s(&[3], &[1.0; 3])], vec![f32s(&[3], &[0.0; 3])])
            .attr("n", n(a))
            .attr("n", n(b));
        refused(f, h, Refusal::BadAttribute, "attribute `n` is given twice");
    }
}
