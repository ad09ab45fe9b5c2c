//! What the lowering and the handler derive from an op's schema, computed once per op: which
//! custom-call operand each parameter is, which result each output is, how each output's shape
//! follows from the operands, and which operand a `&mut` external's new bytes alias. Both sides
//! read these facts from here, so they cannot disagree.

use crate::schema::{DimRule, FactorDims, OpSchema, ParamKind, ResultKind};
use crate::types::ElementType;

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

/// One dimension of an output, resolved to operands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputDim {
    /// A constant size.
    Const(i64),
    /// Dimension `dim` of operand `operand`.
    Of {
        /// The operand.
        operand: usize,
        /// Its dimension.
        dim: usize,
    },
}

/// The shape of an output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OutputShape {
    /// The shape of operand `n`.
    Of(usize),
    /// One rule per dimension.
    Dims(Vec<OutputDim>),
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
        let tensor_operand = |name: &str, what: &str| -> Result<usize, String> {
            let i = schema
                .params
                .iter()
                .position(|p| p.name == name)
                .ok_or_else(|| {
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
                                .map(|d| match d {
                                    DimRule::Const { size } => Ok(OutputDim::Const(*size)),
                                    DimRule::DimOf { param, dim } => Ok(OutputDim::Of {
                                        operand: tensor_operand(param, &what)?,
                                        dim: *dim,
                                    }),
                                    DimRule::ShapeOf { param } => Err(format!(
                                        "{}: {what}: `{param}`'s whole shape must be the only rule",
                                        schema.name
                                    )),
                                })
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
            rules => rules
                .iter()
                .map(|d| match d {
                    DimRule::DimOf { param, dim } => {
                        factors_of(param).and_then(|e| e.dims.get(*dim).cloned().flatten())
                    }
                    _ => None,
                })
                .collect(),
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
    /// The shape, given each operand's dimensions; `Err` names the operand dimension that is
    /// missing (index into `operand_dims`, dimension).
    pub fn eval<'d>(
        &self,
        operand_dims: impl Fn(usize) -> &'d [i64],
    ) -> Result<Vec<i64>, (usize, usize)> {
        match self {
            OutputShape::Of(o) => Ok(operand_dims(*o).to_vec()),
            OutputShape::Dims(dims) => dims
                .iter()
                .map(|d| match *d {
                    OutputDim::Const(c) => Ok(c),
                    OutputDim::Of { operand, dim } => operand_dims(operand)
                        .get(dim)
                        .copied()
                        .ok_or((operand, dim)),
                })
                .collect(),
        }
    }

    /// Whether `dims` is the shape, without building it: the handler's check of an output
    /// buffer, on the hot path.
    #[inline]
    pub fn matches<'d>(&self, dims: &[i64], operand_dims: impl Fn(usize) -> &'d [i64]) -> bool {
        match self {
            OutputShape::Of(o) => operand_dims(*o) == dims,
            OutputShape::Dims(rules) => {
                rules.len() == dims.len()
                    && rules.iter().zip(dims).all(|(r, &d)| match *r {
                        OutputDim::Const(c) => c == d,
                        OutputDim::Of { operand, dim } => {
                            operand_dims(operand).get(dim) == Some(&d)
                        }
                    })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::descriptor::Descriptor;
    use crate::schema::{AttrType, ParamSchema, ResultSchema};

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
                        OutputDim::Of { operand: 1, dim: 1 },
                        OutputDim::Const(4)
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
                "t::op: the shape of output `y` names `q`, which is not a parameter",
            ),
            (
                schema(
                    vec![external("s", false)],
                    vec![out("y", vec![dim_of("s", 0)])],
                ),
                "t::op: the shape of output `y` names `s`, which is not a tensor input",
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

    #[test]
    fn shapes_evaluate_and_match_from_operand_dims() {
        let dims: [&[i64]; 2] = [&[3, 5], &[7]];
        let of = |o: usize| dims[o];
        let rule = OutputShape::Dims(vec![
            OutputDim::Of { operand: 0, dim: 1 },
            OutputDim::Const(2),
            OutputDim::Of { operand: 1, dim: 0 },
        ]);
        assert_eq!(rule.eval(of), Ok(vec![5, 2, 7]));
        assert!(rule.matches(&[5, 2, 7], of));
        assert!(!rule.matches(&[5, 2], of));
        assert!(!rule.matches(&[5, 2, 8], of));
        assert_eq!(OutputShape::Of(0).eval(of), Ok(vec![3, 5]));
        assert!(OutputShape::Of(0).matches(&[3, 5], of));
        assert!(!OutputShape::Of(0).matches(&[5, 3], of));
        let beyond = OutputShape::Dims(vec![OutputDim::Of { operand: 1, dim: 1 }]);
        assert_eq!(beyond.eval(of), Err((1, 1)));
        assert!(!beyond.matches(&[7], of));
    }
}
