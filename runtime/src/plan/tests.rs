//! The plan's rules, on schemas made here.

use super::dtypes::DtypeMismatch;
use super::*;
use crate::descriptor::Descriptor;
use crate::schema::{ParamSchema, ResultSchema};
use customop_shape::{BinOp, EvalError};

#[derive(crate::Descriptor)]
#[descriptor(name = "plan::State")]
struct State {
    n: u64,
}

fn tensor(name: &str, rank: Option<usize>) -> ParamSchema {
    ParamSchema {
        name: name.into(),
        kind: ParamKind::Tensor {
            dtype: TensorDtype::Fixed(ElementType::F32),
            rank,
            updated: false,
        },
    }
}

fn external(name: &str, mutable: bool) -> ParamSchema {
    ParamSchema {
        name: name.into(),
        kind: ParamKind::External {
            mutable,
            descriptor: State::layout().clone(),
        },
    }
}

fn attr(name: &str) -> ParamSchema {
    ParamSchema {
        name: name.into(),
        kind: ParamKind::Attribute { ty: AttrType::Bool },
    }
}

fn out(name: &str, shape: Vec<DimRule>) -> ResultSchema {
    ResultSchema {
        name: name.into(),
        kind: ResultKind::Tensor {
            dtype: TensorDtype::Fixed(ElementType::I8),
            shape,
        },
    }
}

fn schema(params: Vec<ParamSchema>, results: Vec<ResultSchema>) -> OpSchema {
    OpSchema {
        name: "t::op".into(),
        target: "t.op".into(),
        api_version: 4,
        side_effect: false,
        params,
        results,
        partition: None,
        vjp: None,
        jvp: None,
    }
}

fn dim_of(param: &str, dim: usize) -> DimRule {
    DimRule::DimOf {
        param: param.into(),
        dim,
    }
}

#[test]
fn operands_attributes_results_and_aliases_in_order() {
    let s = schema(
        vec![
            attr("flag"),
            external("state", true),
            tensor("x", Some(2)),
            attr("eps"),
            tensor("w", None),
        ],
        vec![
            out("y", vec![dim_of("x", 1), DimRule::Const { size: 4 }]),
            out("z", vec![DimRule::ShapeOf { param: "w".into() }]),
            ResultSchema {
                name: "state".into(),
                kind: ResultKind::UpdatedExternal {
                    param: "state".into(),
                    operand: 0,
                },
            },
        ],
    );
    let p = Plan::new(&s).unwrap();
    assert_eq!(
        p.params,
        vec![
            ParamSlot::Attribute(0),
            ParamSlot::Operand(0),
            ParamSlot::Operand(1),
            ParamSlot::Attribute(1),
            ParamSlot::Operand(2),
        ]
    );
    assert_eq!(p.operand_params.len(), 3);
    assert_eq!(p.operand_params, vec![1, 2, 4]);
    assert_eq!(
        p.results,
        vec![
            ResultPlan::Tensor {
                element: ResultDtype::Fixed(ElementType::I8),
                shape: OutputShape::Dims(vec![
                    Expr::Dim {
                        param: ParamRef {
                            name: "x".into(),
                            slot: ParamSlot::Operand(1)
                        },
                        dim: 1
                    },
                    Expr::Lit(4)
                ]),
            },
            ResultPlan::Tensor {
                element: ResultDtype::Fixed(ElementType::I8),
                shape: OutputShape::Of(2),
            },
            ResultPlan::Updated { operand: 0 },
        ]
    );
    assert_eq!(p.aliases, vec![(2, 0)]);
}

#[test]
fn a_tensor_updated_in_place_is_aliased_to_its_operand() {
    let mut x = tensor("x", Some(1));
    if let ParamKind::Tensor { updated, .. } = &mut x.kind {
        *updated = true;
    }
    let s = schema(
        vec![tensor("w", None), x],
        vec![
            out("y", vec![dim_of("w", 0)]),
            ResultSchema {
                name: "x".into(),
                kind: ResultKind::UpdatedTensor {
                    param: "x".into(),
                    operand: 0,
                },
            },
        ],
    );
    let plan = Plan::new(&s).unwrap();
    assert_eq!(plan.aliases, vec![(1, 1)]);
    assert_eq!(plan.results[1], ResultPlan::Updated { operand: 1 });
    let def = OpDef::new(s);
    assert!(matches!(
        def.schema().results[1].kind,
        ResultKind::UpdatedTensor { operand: 1, .. }
    ));
    assert_eq!(
        def.schema().schema_string(),
        "t::op(Tensor w, Tensor(a!) x) -> Tensor"
    );
}

#[test]
fn inconsistent_schemas_are_errors_not_defaults() {
    let bad = [
        (
            schema(
                vec![tensor("x", None)],
                vec![out("y", vec![dim_of("q", 0)])],
            ),
            "t::op: the shape of output `y`: `q` is not a parameter of this op",
        ),
        (
            schema(
                vec![tensor("x", Some(2))],
                vec![out("y", vec![dim_of("x", 2)])],
            ),
            "t::op: the shape of output `y`: `x` has rank 2: it has no dimension 2",
        ),
        (
            schema(
                vec![tensor("x", None), attr("flag")],
                vec![out(
                    "y",
                    vec![DimRule::from_expr(Expr::bin(
                        BinOp::Add,
                        Expr::Dim {
                            param: "x".into(),
                            dim: 0,
                        },
                        Expr::Attr("flag".into()),
                    ))],
                )],
            ),
            "t::op: the shape of output `y`: attribute `flag` is not an integer: shape rules \
             take integer attributes",
        ),
        (
            schema(
                vec![external("s", false)],
                vec![out("y", vec![dim_of("s", 0)])],
            ),
            "t::op: the shape of output `y`: `s` is an external, not a tensor input (`.dim(k)`)",
        ),
        (
            schema(
                vec![external("s", false)],
                vec![ResultSchema {
                    name: "s".into(),
                    kind: ResultKind::UpdatedExternal {
                        param: "s".into(),
                        operand: 0,
                    },
                }],
            ),
            "t::op: result `s` updates `s`, which is not a `&mut` external",
        ),
        (
            schema(
                vec![tensor("x", None)],
                vec![ResultSchema {
                    name: "x".into(),
                    kind: ResultKind::UpdatedTensor {
                        param: "x".into(),
                        operand: 0,
                    },
                }],
            ),
            "t::op: result `x` updates `x`, which is not an `#[inout]` tensor",
        ),
    ];
    for (s, want) in bad {
        assert_eq!(Plan::new(&s).unwrap_err(), want);
        assert_eq!(OpDef::new(s).plan().unwrap_err(), want);
    }
}

struct Vals;
impl ShapeEnv for Vals {
    fn operand_dims(&self, operand: usize) -> Option<&[i64]> {
        [&[3i64, 5][..], &[7]].get(operand).copied()
    }
    fn attr_int(&self, slot: usize, name: &str) -> Option<i64> {
        (slot == 0 && name == "k").then_some(2)
    }
    fn attr_len(&self, _: usize, _: &str) -> Option<i64> {
        None
    }
}

fn operand_dim(name: &str, operand: usize, dim: usize) -> OutputDim {
    Expr::Dim {
        param: ParamRef {
            name: name.into(),
            slot: ParamSlot::Operand(operand),
        },
        dim,
    }
}

#[test]
fn shapes_evaluate_and_match_from_operand_dims_and_attributes() {
    let k = Expr::Attr(ParamRef {
        name: "k".into(),
        slot: ParamSlot::Attribute(0),
    });
    let rule = OutputShape::Dims(vec![
        operand_dim("x", 0, 1),
        Expr::Lit(2),
        operand_dim("w", 1, 0),
        // ceil_div(x.dim(1), k) * k
        Expr::bin(
            BinOp::Mul,
            Expr::bin(BinOp::CeilDiv, operand_dim("x", 0, 1), k.clone()),
            k.clone(),
        ),
    ]);
    assert_eq!(rule.eval(&Vals), Ok(vec![5, 2, 7, 6]));
    assert!(rule.matches(&[5, 2, 7, 6], &Vals));
    assert!(!rule.matches(&[5, 2, 7], &Vals));
    assert!(!rule.matches(&[5, 2, 7, 5], &Vals));
    assert_eq!(OutputShape::Of(0).eval(&Vals), Ok(vec![3, 5]));
    assert!(OutputShape::Of(0).matches(&[3, 5], &Vals));
    assert!(!OutputShape::Of(0).matches(&[5, 3], &Vals));
    let beyond = OutputShape::Dims(vec![operand_dim("w", 1, 1)]);
    assert_eq!(
        beyond.eval(&Vals),
        Err((0, EvalError::Missing("`w.dim(1)`".into())))
    );
    assert!(!beyond.matches(&[7], &Vals));
    // A computed size of zero is refused, a copied zero is not.
    let zero = OutputShape::Dims(vec![Expr::bin(BinOp::Sub, k.clone(), k)]);
    assert_eq!(zero.eval(&Vals), Err((0, EvalError::NotASize(0))));
}

#[test]
fn one_type_per_type_parameter_in_a_call() {
    let var = |name: &str| ParamSchema {
        name: name.into(),
        kind: ParamKind::Tensor {
            dtype: TensorDtype::Var {
                name: "T".into(),
                allowed: vec![ElementType::F32, ElementType::F64],
            },
            rank: None,
            updated: false,
        },
    };
    let s = schema(vec![var("x"), tensor("i", None), var("w")], vec![]);
    let p = Plan::new(&s).unwrap();
    let types = |t: [ElementType; 3]| move |o: usize| t.get(o).copied();
    use ElementType::{F16, F32, F64};
    assert_eq!(p.check_dtype_vars(types([F64, F32, F64])), Ok(()));
    // Unknown types are skipped.
    assert_eq!(p.check_dtype_vars(|o| (o == 0).then_some(F32)), Ok(()));
    let mixed = p.check_dtype_vars(types([F32, F32, F64])).unwrap_err();
    assert_eq!(
        mixed,
        DtypeMismatch::Mixed {
            var: 0,
            first: (0, F32),
            other: (2, F64)
        }
    );
    assert_eq!(
        p.dtype_message(&s, &mixed),
        "t::op: `x` is f32 and `w` is f64, but both are `T`: one type per call"
    );
    let outside = p.check_dtype_vars(types([F32, F32, F16])).unwrap_err();
    assert_eq!(
        p.dtype_message(&s, &outside),
        "t::op: parameter `w` takes a tensor of T (f32 or f64), got f16"
    );
}

/// A partition rule whose factor does not reach every output (which `#[custom_op]` refuses,
/// but a schema built from the public records may carry): the op's plan is refused by name, so
/// no front end calls a shard's own result replicated. One that reaches every output is taken.
#[test]
fn a_factor_that_does_not_reach_every_output_is_refused() {
    let rule =
        || crate::records::partition_rule(vec![("x", vec![Some("rows"), None]), ("w", vec![None])]);
    let mut s = schema(
        vec![tensor("x", Some(2)), tensor("w", Some(1))],
        vec![
            out("y", vec![dim_of("x", 0), dim_of("x", 1)]),
            out("z", vec![dim_of("w", 0)]),
        ],
    );
    s.partition = Some(rule());
    let e = OpDef::new(s.clone()).plan().unwrap_err().to_string();
    assert!(
        e.contains("t::op: factor `rows` of the partition rule does not reach output `z`"),
        "{e}"
    );
    // An output shaped as an input the rule does not name carries no factor either.
    s.results[1] = out("z", vec![DimRule::ShapeOf { param: "w".into() }]);
    s.partition = Some(crate::records::partition_rule(vec![(
        "x",
        vec![Some("rows"), None],
    )]));
    let e = OpDef::new(s.clone()).plan().unwrap_err().to_string();
    assert!(e.contains("does not reach output `z`"), "{e}");
    s.results.pop();
    let def = OpDef::new(s);
    assert!(def.plan().is_ok());
    let results = &def.schema().partition.as_ref().unwrap().results;
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].dims, vec![Some("rows".to_string()), None]);
}
