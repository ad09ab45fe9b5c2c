//! What the lowering and the handler derive from an op's schema, computed once per op: which
//! custom-call operand each parameter is, which result each output is, how each output's shape
//! follows from the operands, and which operand a `&mut` external's new bytes alias. Both sides
//! read these facts from here, so they cannot disagree.

use crate::schema::{AttrType, DimRule, FactorDims, OpSchema, ParamKind, ResultKind};
use crate::types::ElementType;
use customop_shape::{Env, EvalError, Expr, Facts};

/// An op's schema and its `Plan`, built once (generated code keeps one in a `static`).
#[derive(Debug)]
pub struct OpDef {
    schema: OpSchema,
    plan: Result<Plan, String>,
}

impl OpDef {
    /// The definition of the op `schema` describes. The schema's derived indices (the operand
    /// an updated external aliases, the partition rule's operand and result indices, and the
    /// outputs' factors, which follow from their shape rules) are filled in from the plan here.
    pub fn new(mut schema: OpSchema) -> OpDef {
        let plan = Plan::new(&schema).and_then(|plan| {
            complete(&mut schema, &plan)?;
            Ok(plan)
        });
        OpDef { schema, plan }
    }

    /// The schema.
    #[inline]
    pub fn schema(&self) -> &OpSchema {
        &self.schema
    }

    /// The plan, or why the schema is inconsistent (a shape rule naming a parameter that is
    /// not a tensor input, say; `#[custom_op]` refuses such ops at compile time).
    #[inline]
    pub fn plan(&self) -> Result<&Plan, &str> {
        self.plan.as_ref().map_err(String::as_str)
    }
}

/// Where a parameter of the schema goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamSlot {
    /// Operand `n` of the custom call (tensors and externals, in declaration order).
    Operand(usize),
    /// Entry `n` of the backend_config dictionary (attributes, in declaration order).
    Attribute(usize),
}

/// A name in a shape rule, resolved: the parameter's name (for messages) and where it goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamRef {
    /// The parameter's name.
    pub name: String,
    /// Its operand (a tensor input) or attribute slot.
    pub slot: ParamSlot,
}

impl core::fmt::Display for ParamRef {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(&self.name)
    }
}

/// One dimension of an output: an expression over operand dimensions and attributes.
pub type OutputDim = Expr<ParamRef>;

/// The shape of an output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OutputShape {
    /// The shape of operand `n`.
    Of(usize),
    /// One expression per dimension.
    Dims(Vec<OutputDim>),
}

/// What a shape rule reads when it is evaluated: the operands' dimensions and the attributes'
/// values (the lowering's from its operand types and attribute literals, the handler's from the
/// call frame).
pub trait ShapeEnv {
    /// The dimensions of operand `operand`, if there is one.
    fn operand_dims(&self, operand: usize) -> Option<&[i64]>;
    /// The value of the integer attribute in slot `slot`, named `name`.
    fn attr_int(&self, slot: usize, name: &str) -> Option<i64>;
    /// The length of the array attribute in slot `slot`, named `name`.
    fn attr_len(&self, slot: usize, name: &str) -> Option<i64>;
}

struct Resolved<'e, E>(&'e E);

impl<E: ShapeEnv> Env<ParamRef> for Resolved<'_, E> {
    #[inline]
    fn dim(&self, param: &ParamRef, dim: usize) -> Option<i64> {
        match param.slot {
            ParamSlot::Operand(o) => self.0.operand_dims(o)?.get(dim).copied(),
            ParamSlot::Attribute(_) => None,
        }
    }
    fn attr(&self, name: &ParamRef) -> Option<i64> {
        match name.slot {
            ParamSlot::Attribute(a) => self.0.attr_int(a, &name.name),
            ParamSlot::Operand(_) => None,
        }
    }
    fn len(&self, name: &ParamRef) -> Option<i64> {
        match name.slot {
            ParamSlot::Attribute(a) => self.0.attr_len(a, &name.name),
            ParamSlot::Operand(_) => None,
        }
    }
}

/// One result of the custom call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ResultPlan {
    /// A tensor output.
    Tensor {
        /// Its element type.
        element: ElementType,
        /// Its shape.
        shape: OutputShape,
    },
    /// Packed descriptor bytes of a fixed size (`None`: the descriptor has tails, and cannot
    /// be a result).
    Opaque {
        /// The packed size.
        size: Option<usize>,
    },
    /// The new bytes of the external at operand `operand`, aliased to it.
    Updated {
        /// The operand.
        operand: usize,
    },
}

/// The facts derived from a schema; see the module documentation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// Per schema parameter, where it goes.
    pub params: Vec<ParamSlot>,
    /// Per operand, the schema parameter it is.
    pub operand_params: Vec<usize>,
    /// The results, in the custom call's order.
    pub results: Vec<ResultPlan>,
    /// `(result, operand)` pairs: the result's buffer is the operand's (`&mut` externals).
    pub aliases: Vec<(usize, usize)>,
}

impl Plan {
    /// Derives the plan, checking that every shape rule and alias names a parameter of the
    /// right kind.
    pub fn new(schema: &OpSchema) -> Result<Plan, String> {
        let mut params = Vec::with_capacity(schema.params.len());
        let mut operand_params = Vec::new();
        let mut attrs = 0;
        for (i, p) in schema.params.iter().enumerate() {
            match p.kind {
                ParamKind::Tensor { .. } | ParamKind::External { .. } => {
                    params.push(ParamSlot::Operand(operand_params.len()));
                    operand_params.push(i);
                }
                ParamKind::Attribute { .. } => {
                    params.push(ParamSlot::Attribute(attrs));
                    attrs += 1;
                }
            }
        }
        let find = |name: &str| schema.params.iter().position(|p| p.name == name);
        let tensor_operand = |name: &str, what: &str| -> Result<usize, String> {
            let i = find(name).ok_or_else(|| {
                format!(
                    "{}: {what} names `{name}`, which is not a parameter",
                    schema.name
                )
            })?;
            match (&schema.params[i].kind, params[i]) {
                (ParamKind::Tensor { .. }, ParamSlot::Operand(o)) => Ok(o),
                _ => Err(format!(
                    "{}: {what} names `{name}`, which is not a tensor input",
                    schema.name
                )),
            }
        };
        // What each name of a shape expression is: the rules themselves live in customop-shape,
        // which the macro checks with too.
        let facts = |name: &String| match find(name).map(|i| &schema.params[i].kind) {
            None => Facts::Unknown,
            Some(ParamKind::Tensor { rank, .. }) => Facts::Tensor { rank: *rank },
            Some(ParamKind::External { .. }) => Facts::Other("an external"),
            Some(ParamKind::Attribute { ty }) => match ty {
                AttrType::Scalar { dtype } => Facts::ScalarAttr {
                    integer: Some(dtype.is_integer()),
                },
                AttrType::Bool => Facts::ScalarAttr {
                    integer: Some(false),
                },
                AttrType::Array { .. } => Facts::ArrayAttr,
                _ => Facts::Other("a string or descriptor attribute"),
            },
        };
        let resolve = |rule: &DimRule, what: &str| -> Result<OutputDim, String> {
            let expr = rule.to_expr().ok_or_else(|| {
                format!(
                    "{}: {what}: a whole shape (`shape = x`) must be the only rule",
                    schema.name
                )
            })?;
            if let Some(e) = expr.check(&facts).into_iter().next() {
                return Err(format!("{}: {what}: {}", schema.name, e.message));
            }
            Ok(expr.map(&mut |n: &String| ParamRef {
                name: n.clone(),
                // `check` accepted every name, so each is a parameter.
                slot: find(n).map_or(ParamSlot::Attribute(usize::MAX), |i| params[i]),
            }))
        };
        let mut results = Vec::with_capacity(schema.results.len());
        let mut aliases = Vec::new();
        for (ri, r) in schema.results.iter().enumerate() {
            let what = format!("the shape of output `{}`", r.name);
            results.push(match &r.kind {
                ResultKind::Tensor { dtype, shape } => {
                    let shape = match shape.as_slice() {
                        [DimRule::ShapeOf { param }] => {
                            OutputShape::Of(tensor_operand(param, &what)?)
                        }
                        rules => OutputShape::Dims(
                            rules
                                .iter()
                                .map(|d| resolve(d, &what))
                                .collect::<Result<_, String>>()?,
                        ),
                    };
                    ResultPlan::Tensor {
                        element: *dtype,
                        shape,
                    }
                }
                ResultKind::Opaque { descriptor } => ResultPlan::Opaque {
                    size: descriptor.packed_size,
                },
                ResultKind::UpdatedExternal { param, .. } => {
                    let i = schema.params.iter().position(|p| &p.name == param);
                    let operand = match i.map(|i| (&schema.params[i].kind, params[i])) {
                        Some((
                            ParamKind::External { mutable: true, .. },
                            ParamSlot::Operand(o),
                        )) => o,
                        _ => {
                            return Err(format!(
                                "{}: result `{}` updates `{param}`, which is not a `&mut` external",
                                schema.name, r.name
                            ));
                        }
                    };
                    aliases.push((ri, operand));
                    ResultPlan::Updated { operand }
                }
            });
        }
        Ok(Plan {
            params,
            operand_params,
            results,
            aliases,
        })
    }
}

/// Fills in what follows from the plan: see [`OpDef::new`].
fn complete(schema: &mut OpSchema, plan: &Plan) -> Result<(), String> {
    for (r, rp) in schema.results.iter_mut().zip(&plan.results) {
        if let (ResultKind::UpdatedExternal { operand, .. }, ResultPlan::Updated { operand: o }) =
            (&mut r.kind, rp)
        {
            *operand = *o;
        }
    }
    let Some(rule) = schema.partition.as_mut() else {
        return Ok(());
    };
    let params = &schema.params;
    for e in &mut rule.operands {
        let i = params.iter().position(|p| p.name == e.name);
        match i.map(|i| (&params[i].kind, plan.params[i])) {
            Some((ParamKind::Tensor { .. }, ParamSlot::Operand(o))) => e.index = o,
            _ => {
                return Err(format!(
                    "{}: the partition rule names `{}`, which is not a tensor input",
                    schema.name, e.name
                ));
            }
        }
    }
    let factors_of = |name: &str| rule.operands.iter().find(|e| e.name == name);
    let mut outputs = Vec::new();
    for (ri, r) in schema.results.iter().enumerate() {
        let ResultKind::Tensor { shape, .. } = &r.kind else {
            continue;
        };
        let dims = match shape.as_slice() {
            [DimRule::ShapeOf { param }] => match factors_of(param) {
                Some(e) => e.dims.clone(),
                None => continue,
            },
            rules => {
                let mut dims = Vec::with_capacity(rules.len());
                for d in rules {
                    let factor_of = |param: &String, dim: usize| {
                        factors_of(param).and_then(|e| e.dims.get(dim).cloned().flatten())
                    };
                    let expr = d.to_expr().unwrap_or(Expr::Lit(0));
                    dims.push(expr.factor(&factor_of).map_err(|f| {
                        format!(
                            "{}: output `{}` computes a size from a dimension split by factor \
                             `{f}`",
                            schema.name, r.name
                        )
                    })?);
                }
                dims
            }
        };
        outputs.push(FactorDims {
            name: r.name.clone(),
            index: ri,
            dims,
        });
    }
    rule.results = outputs;
    Ok(())
}

impl OutputShape {
    /// The shape, given the operands' dimensions and the attributes' values; `Err` gives the
    /// dimension whose rule has no value, and why.
    pub fn eval(&self, env: &impl ShapeEnv) -> Result<Vec<i64>, (usize, EvalError)> {
        match self {
            OutputShape::Of(o) => env
                .operand_dims(*o)
                .map(<[i64]>::to_vec)
                .ok_or((0, EvalError::Missing(format!("operand {o}")))),
            OutputShape::Dims(dims) => dims
                .iter()
                .enumerate()
                .map(|(i, d)| d.eval_size(&Resolved(env)).map_err(|e| (i, e)))
                .collect(),
        }
    }

    /// What went wrong with dimension `d`, for a message: its rule and the error.
    pub fn explain(&self, d: usize, e: &EvalError) -> String {
        let text = match self {
            OutputShape::Dims(rules) => rules.get(d).map(ToString::to_string),
            OutputShape::Of(_) => None,
        }
        .unwrap_or_default();
        match e {
            EvalError::NotASize(v) => format!("dimension {d}, `{text}`, is {v}, not a size"),
            e => format!("dimension {d}, `{text}`: {e}"),
        }
    }

    /// Whether `dims` is the shape, without building it: the handler's check of an output
    /// buffer, on the hot path.
    #[inline]
    pub fn matches(&self, dims: &[i64], env: &impl ShapeEnv) -> bool {
        match self {
            OutputShape::Of(o) => env.operand_dims(*o) == Some(dims),
            OutputShape::Dims(rules) => {
                rules.len() == dims.len()
                    && rules
                        .iter()
                        .zip(dims)
                        .all(|(r, &d)| r.eval_size(&Resolved(env)) == Ok(d))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::descriptor::Descriptor;
    use crate::schema::{ParamSchema, ResultSchema};
    use customop_shape::BinOp;

    #[derive(crate::Descriptor)]
    #[descriptor(name = "plan::State")]
    struct State {
        n: u64,
    }

    fn tensor(name: &str, rank: Option<usize>) -> ParamSchema {
        ParamSchema {
            name: name.into(),
            kind: ParamKind::Tensor {
                dtype: ElementType::F32,
                rank,
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
                dtype: ElementType::I8,
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
                    element: ElementType::I8,
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
                    element: ElementType::I8,
                    shape: OutputShape::Of(2),
                },
                ResultPlan::Updated { operand: 0 },
            ]
        );
        assert_eq!(p.aliases, vec![(2, 0)]);
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
}
