use super::*;

pub(super) const F32: SigDtype = SigDtype::Fixed(ElementType::F32);

/// A parameter of a test signature (an attribute's type is `f32`).
pub(super) const fn param(
    name: &'static str,
    role: Role,
    dtype: SigDtype,
    shape_of: &'static str,
) -> ParamSig {
    ParamSig {
        name,
        role,
        dtype,
        rank: None,
        shape_of,
        ty: if matches!(role, Role::Attr) {
            "f32"
        } else {
            ""
        },
    }
}

const FWD: Signature = Signature {
    name: "t::f",
    params: &[
        param("x", Role::Input, F32, ""),
        param("eps", Role::Attr, SigDtype::None, ""),
        param("y", Role::Output, F32, "x"),
    ],
    opaque_result: false,
};

#[test]
fn a_valid_pair_is_recorded_by_source() {
    const BWD: Signature = Signature {
        name: "t::f_bwd",
        params: &[
            param("y", Role::Input, F32, ""),
            param("d_y", Role::Input, F32, ""),
            param("eps", Role::Attr, SigDtype::None, ""),
            param("d_x", Role::Output, F32, "d_y"),
        ],
        opaque_result: false,
    };
    assert!(check(&FWD, &BWD).is_ok());
    let s = schema(&FWD, &BWD);
    assert_eq!(s.op, "t::f_bwd");
    let got: Vec<(&str, ResidualSource, &str)> = s
        .inputs
        .iter()
        .map(|i| (i.param.as_str(), i.source, i.of.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            ("y", ResidualSource::Output, "y"),
            ("d_y", ResidualSource::Cotangent, "y"),
            ("eps", ResidualSource::Attribute, "eps"),
        ]
    );
    assert_eq!(s.gradients.len(), 1);
    assert_eq!(
        (s.gradients[0].result.as_str(), s.gradients[0].of.as_str()),
        ("d_x", "x")
    );
}

#[test]
fn a_missing_gradient_is_refused() {
    const BWD: Signature = Signature {
        name: "t::f_bwd",
        params: &[param("d_y", Role::Input, F32, "")],
        opaque_result: false,
    };
    let Err(m) = check(&FWD, &BWD) else {
        panic!("accepted")
    };
    assert_eq!(
        m.as_str(),
        "vjp of `t::f` by `t::f_bwd`: it returns no gradient of `x` (a tensor of f32): add \
         `#[out(shape = x)] d_x`"
    );
}

const T_AB: SigDtype = SigDtype::Var("T", &[ElementType::F32, ElementType::F64]);
const T_BA: SigDtype = SigDtype::Var("T", &[ElementType::F64, ElementType::F32]);
const U_AB: SigDtype = SigDtype::Var("U", &[ElementType::F32, ElementType::F64]);

const G: Signature = Signature {
    name: "t::g",
    params: &[
        param("x", Role::Input, T_AB, ""),
        param("y", Role::Output, T_AB, "x"),
    ],
    opaque_result: false,
};

#[allow(clippy::result_large_err)] // a test helper returning what `check` returns
fn generic(bwd_dtype: SigDtype, cotangent: bool) -> Result<(), Msg> {
    let params: &'static [ParamSig] = Box::leak(Box::new([
        param(if cotangent { "d_y" } else { "x" }, Role::Input, T_AB, ""),
        param("d_x", Role::Output, bwd_dtype, "x"),
    ]));
    let bwd = Signature {
        name: "t::g_bwd",
        params,
        opaque_result: false,
    };
    check(&G, &bwd)
}

#[test]
fn type_parameters_match_by_name_and_set() {
    assert!(generic(T_AB, true).is_ok());
    assert!(
        generic(T_BA, true).is_ok(),
        "the order of the allowed types is free"
    );
    let e = generic(U_AB, true).unwrap_err();
    assert!(
        e.as_str()
            .contains("`d_x` is a tensor of U (f32, f64), but `x` is T (f32, f64)"),
        "{e:?}"
    );
}

#[test]
fn ranks_fixed_on_both_sides_must_agree() {
    let ranked = |name, role, rank, shape_of| ParamSig {
        rank: Some(rank),
        ..param(name, role, F32, shape_of)
    };
    let fwd = Signature {
        name: "t::r",
        params: Box::leak(Box::new([
            ranked("x", Role::Input, 2, ""),
            ranked("y", Role::Output, 2, "x"),
        ])),
        opaque_result: false,
    };
    let bwd = |grad_rank| Signature {
        name: "t::r_bwd",
        params: Box::leak(Box::new([
            ranked("d_y", Role::Input, 2, ""),
            ranked("d_x", Role::Output, grad_rank, "d_y"),
        ])),
        opaque_result: false,
    };
    assert!(check(&fwd, &bwd(2)).is_ok());
    let e = check(&fwd, &bwd(1)).unwrap_err();
    assert!(
        e.as_str()
            .contains("`d_x` is a tensor of rank-1 f32, but `x` is rank-2 f32"),
        "{e:?}"
    );
}

#[test]
fn a_backward_without_a_cotangent_is_refused() {
    let e = generic(T_AB, false).unwrap_err();
    assert!(
        e.as_str().contains("the backward takes no cotangent"),
        "{e:?}"
    );
}

#[test]
fn only_real_float_types_are_differentiable() {
    assert!(differentiable(SigDtype::Var(
        "T",
        &[ElementType::F32, ElementType::BF16]
    )));
    assert!(!differentiable(SigDtype::Var(
        "T",
        &[ElementType::F32, ElementType::I32]
    )));
    assert!(!differentiable(SigDtype::Fixed(ElementType::C64)));
    assert!(!differentiable(SigDtype::Fixed(ElementType::F8E4M3FN)));
    assert!(!differentiable(SigDtype::Var("T", &[])));
}
