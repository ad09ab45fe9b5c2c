use super::*;
use crate::types::ElementType;
use crate::vjp::SigDtype;
use crate::vjp::tests::{F32, param};

const I32: SigDtype = SigDtype::Fixed(ElementType::I32);

/// `f(x: f32, idx: i32, eps) -> (y: f32 shaped like x, n: i32)`.
const FWD: Signature = Signature {
    name: "t::f",
    params: &[
        param("x", Role::Input, F32, ""),
        param("idx", Role::Input, I32, ""),
        param("eps", Role::Attr, SigDtype::None, ""),
        param("y", Role::Output, F32, "x"),
        param("n", Role::Output, I32, "idx"),
    ],
    opaque_result: false,
};

fn tangent_op(params: &'static [ParamSig]) -> Signature {
    Signature {
        name: "t::f_jvp",
        params,
        opaque_result: false,
    }
}

fn refusal(params: Vec<ParamSig>) -> String {
    match check(&FWD, &tangent_op(Box::leak(params.into_boxed_slice()))) {
        Ok(()) => panic!("accepted"),
        Err(m) => m.as_str().to_string(),
    }
}

#[test]
fn a_valid_pair_is_recorded_by_source() {
    const P: &[ParamSig] = &[
        param("x", Role::Input, F32, ""),
        param("t_x", Role::Input, F32, ""),
        param("y", Role::Input, F32, ""),
        param("eps", Role::Attr, SigDtype::None, ""),
        param("t_y", Role::Output, F32, "t_x"),
    ];
    let tan = tangent_op(P);
    assert!(check(&FWD, &tan).is_ok());
    let s = schema(&FWD, &tan);
    assert_eq!(s.op, "t::f_jvp");
    let got: Vec<(&str, JvpSource, &str)> = s
        .inputs
        .iter()
        .map(|i| (i.param.as_str(), i.source, i.of.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            ("x", JvpSource::Input, "x"),
            ("t_x", JvpSource::Tangent, "x"),
            ("y", JvpSource::Output, "y"),
            ("eps", JvpSource::Attribute, "eps"),
        ]
    );
    let tangents: Vec<(&str, &str)> = s
        .tangents
        .iter()
        .map(|t| (t.result.as_str(), t.of.as_str()))
        .collect();
    assert_eq!(tangents, [("t_y", "y")]);
}

#[test]
fn the_output_shape_may_be_the_output_itself_or_the_input_it_is() {
    for shape_of in ["x", "t_x", "y"] {
        let params: &'static [ParamSig] = Box::leak(Box::new([
            param("x", Role::Input, F32, ""),
            param("y", Role::Input, F32, ""),
            param("t_x", Role::Input, F32, ""),
            param("t_y", Role::Output, F32, shape_of),
        ]));
        assert!(check(&FWD, &tangent_op(params)).is_ok(), "{shape_of}");
    }
    let e = refusal(vec![
        param("x", Role::Input, F32, ""),
        param("t_x", Role::Input, F32, ""),
        param("t_y", Role::Output, F32, ""),
    ]);
    assert!(e.contains("`t_y` must have the shape of output `y`"), "{e}");
}

#[test]
fn every_differentiable_input_tangent_is_taken() {
    let e = refusal(vec![
        param("x", Role::Input, F32, ""),
        param("t_y", Role::Output, F32, "x"),
    ]);
    assert_eq!(
        e,
        "jvp of `t::f` by `t::f_jvp`: it takes no tangent of input `x` (a tensor of f32): take `t_x`"
    );
}

#[test]
fn every_differentiable_output_tangent_is_returned() {
    let e = refusal(vec![param("t_x", Role::Input, F32, "")]);
    assert_eq!(
        e,
        "jvp of `t::f` by `t::f_jvp`: it returns no tangent of output `y` (a tensor of f32): add \
         `#[out(shape = y)] t_y`"
    );
}

#[test]
fn integer_inputs_and_outputs_have_no_tangent() {
    let e = refusal(vec![
        param("t_x", Role::Input, F32, ""),
        param("t_idx", Role::Input, I32, ""),
        param("t_y", Role::Output, F32, "t_x"),
    ]);
    assert!(e.contains("`idx` has no tangent"), "{e}");
    let e = refusal(vec![
        param("t_x", Role::Input, F32, ""),
        param("idx", Role::Input, I32, ""),
        param("t_y", Role::Output, F32, "t_x"),
        param("t_n", Role::Output, I32, "idx"),
    ]);
    assert!(e.contains("`n` has no tangent"), "{e}");
}

#[test]
fn types_and_names_are_checked() {
    const F64: SigDtype = SigDtype::Fixed(ElementType::F64);
    let e = refusal(vec![
        param("t_x", Role::Input, F64, ""),
        param("t_y", Role::Output, F32, "t_x"),
    ]);
    assert!(
        e.contains("`t_x`, the tangent of `x`, is a tensor of f64, but `x` is f32"),
        "{e}"
    );
    let e = refusal(vec![
        param("t_x", Role::Input, F32, ""),
        param("t_y", Role::Output, F64, "t_x"),
    ]);
    assert!(
        e.contains("`t_y` is a tensor of f64, but `y` is f32"),
        "{e}"
    );
    let e = refusal(vec![
        param("t_x", Role::Input, F32, ""),
        param("d_y", Role::Input, F32, ""),
        param("t_y", Role::Output, F32, "t_x"),
    ]);
    assert!(
        e.contains("the tangent op's parameter `d_y` names nothing of the forward"),
        "{e}"
    );
    let e = refusal(vec![
        param("t_x", Role::Input, F32, ""),
        param("t_z", Role::Output, F32, "t_x"),
    ]);
    assert!(e.contains("output `t_z` is not `t_<output>`"), "{e}");
}

#[test]
fn state_and_opaque_results_declare_none() {
    const MUT: Signature = Signature {
        name: "t::m",
        params: &[
            param("s", Role::ExternalMut, SigDtype::None, ""),
            param("x", Role::Input, F32, ""),
            param("y", Role::Output, F32, "x"),
        ],
        opaque_result: false,
    };
    const TAN: Signature = Signature {
        name: "t::m_jvp",
        params: &[
            param("t_x", Role::Input, F32, ""),
            param("t_y", Role::Output, F32, "t_x"),
        ],
        opaque_result: false,
    };
    let Err(e) = check(&MUT, &TAN) else {
        panic!("accepted")
    };
    assert!(e.as_str().contains("a `&mut` external (`s`)"), "{e:?}");
    let opaque = Signature {
        opaque_result: true,
        ..TAN
    };
    let Err(e) = check(&FWD, &opaque) else {
        panic!("accepted")
    };
    assert!(e.as_str().contains("not an opaque result"), "{e:?}");
}
