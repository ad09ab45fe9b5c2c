//! What the lowering and the handler derive from an op's schema, computed once per op: which
//! custom-call operand each parameter is, which result each output is, how each output's shape
//! follows from the operands, and which operand a `&mut` external's new bytes alias. Both sides
//! read these facts from here, so they cannot disagree.

use crate::schema::{
    AttrType, DimRule, FactorDims, OpSchema, ParamKind, ResultKind, TensorDtype, one_of,
};
use crate::types::ElementType;
use customop_shape::{Expr, Facts};

mod dtypes;
mod shape;
pub use shape::{OutputDim, OutputShape, ParamRef, ShapeEnv, ShapePart, run_bounds, run_text};

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

    /// The same definition, its handler recorded for runners in this process
    /// (`registry::linked_handlers`).
    pub fn with_handler(self, handler: crate::registry::HandlerFn) -> OpDef {
        crate::registry::record_handler(&self.schema.target, handler);
        self
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
    /// The whole backend_config dictionary (`#[attrs]`).
    Attributes,
}

/// One result of the custom call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ResultPlan {
    /// A tensor output.
    Tensor {
        /// Its element type.
        element: ResultDtype,
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

/// The element type of an output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResultDtype {
    /// This type.
    Fixed(ElementType),
    /// The type of operand `n` (the first tensor input of the output's type parameter).
    Of(usize),
}

/// A type parameter of a generic op (`dtypes(T = [f32, bf16])`): its name, the types it may be,
/// and the tensor operands it types (the first one decides it in a call).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DtypeVar {
    /// The type parameter's name.
    pub name: String,
    /// The element types it may be.
    pub allowed: Vec<ElementType>,
    /// The operands it types, in order (at least one).
    pub operands: Vec<usize>,
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
    /// The op's type parameters, in order of first appearance among its tensor inputs.
    pub dtype_vars: Vec<DtypeVar>,
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
                ParamKind::Attributes => params.push(ParamSlot::Attributes),
            }
        }
        let mut dtype_vars: Vec<DtypeVar> = Vec::new();
        for (i, p) in schema.params.iter().enumerate() {
            let (ParamKind::Tensor { dtype, .. }, ParamSlot::Operand(o)) = (&p.kind, params[i])
            else {
                continue;
            };
            let TensorDtype::Var { name, allowed } = dtype else {
                continue;
            };
            match dtype_vars.iter_mut().find(|v| &v.name == name) {
                Some(v) if &v.allowed != allowed => {
                    return Err(format!(
                        "{}: `{}` allows {} for `{name}`, an earlier parameter {}",
                        schema.name,
                        p.name,
                        one_of(allowed),
                        one_of(&v.allowed)
                    ));
                }
                Some(v) => v.operands.push(o),
                None => dtype_vars.push(DtypeVar {
                    name: name.clone(),
                    allowed: allowed.clone(),
                    operands: vec![o],
                }),
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
            Some(ParamKind::Attributes) => Facts::Other("the dictionary of attributes"),
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
                        rules if rules.iter().any(|d| matches!(d, DimRule::DimsOf { .. })) => {
                            OutputShape::Parts(
                                rules
                                    .iter()
                                    .map(|d| match d {
                                        DimRule::DimsOf { param, start, stop } => {
                                            run_part(schema, param, *start, *stop, &what)
                                        }
                                        d => resolve(d, &what).map(ShapePart::One),
                                    })
                                    .collect::<Result<_, String>>()?,
                            )
                        }
                        rules => OutputShape::Dims(
                            rules
                                .iter()
                                .map(|d| resolve(d, &what))
                                .collect::<Result<_, String>>()?,
                        ),
                    };
                    let element = match dtype {
                        TensorDtype::Fixed(e) => ResultDtype::Fixed(*e),
                        TensorDtype::Var { name, allowed } => {
                            match dtype_vars.iter().find(|v| &v.name == name) {
                                Some(v) if &v.allowed == allowed => ResultDtype::Of(v.operands[0]),
                                _ => {
                                    return Err(format!(
                                        "{}: output `{}` is typed by `{name}`, which types no \
                                         tensor input with the same allowed types",
                                        schema.name, r.name
                                    ));
                                }
                            }
                        }
                    };
                    ResultPlan::Tensor { element, shape }
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
                ResultKind::UpdatedTensor { param, .. } => {
                    let i = schema.params.iter().position(|p| &p.name == param);
                    let operand = match i.map(|i| (&schema.params[i].kind, params[i])) {
                        Some((ParamKind::Tensor { updated: true, .. }, ParamSlot::Operand(o))) => o,
                        _ => {
                            return Err(format!(
                                "{}: result `{}` updates `{param}`, which is not an `#[inout]` \
                                 tensor",
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
            dtype_vars,
        })
    }
}

/// A run of tensor input `param`'s dimensions in the shape of an output (`what`), checked
/// against the input's rank where the signature fixes it.
fn run_part(
    schema: &OpSchema,
    param: &str,
    start: i64,
    stop: Option<i64>,
    what: &str,
) -> Result<ShapePart, String> {
    let mut operand = 0;
    for p in &schema.params {
        match &p.kind {
            ParamKind::Tensor { rank, .. } if p.name == param => {
                if let Some(r) = rank
                    && run_bounds(*r, start, stop).is_none()
                {
                    return Err(format!(
                        "{}: {what}: `{}` is outside the rank of `{param}`, {r}",
                        schema.name,
                        run_text(param, start, stop)
                    ));
                }
                return Ok(ShapePart::Run {
                    operand,
                    param: param.to_string(),
                    start,
                    stop,
                });
            }
            ParamKind::Tensor { .. } | ParamKind::External { .. } => operand += 1,
            _ => {}
        }
    }
    Err(format!(
        "{}: {what} names `{param}`, which is not a tensor input",
        schema.name
    ))
}

/// Fills in what follows from the plan: see [`OpDef::new`].
fn complete(schema: &mut OpSchema, plan: &Plan) -> Result<(), String> {
    for (r, rp) in schema.results.iter_mut().zip(&plan.results) {
        if let (
            ResultKind::UpdatedExternal { operand, .. } | ResultKind::UpdatedTensor { operand, .. },
            ResultPlan::Updated { operand: o },
        ) = (&mut r.kind, rp)
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
            rules if rules.iter().any(|d| matches!(d, DimRule::DimsOf { .. })) => {
                // Its rank follows an input's: no fixed dimension to give a factor.
                return Err(format!(
                    "{}: output `{}` spreads an input's dimensions (`..x.dims(..)`), which a \
                     partition rule cannot split",
                    schema.name, r.name
                ));
            }
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
    // Every factor reaches every result, or each device would compute a result from its own
    // shard that the rule would call whole (replicated): `#[custom_op]` refuses such a rule,
    // and so does a schema built otherwise (the records are public).
    for r in &schema.results {
        let carried = outputs.iter().find(|o| o.name == r.name);
        if let Some(f) = rule.factors.iter().find(|f| {
            !carried.is_some_and(|o| o.dims.iter().any(|d| d.as_deref() == Some(f.as_str())))
        }) {
            return Err(format!(
                "{}: factor `{f}` of the partition rule does not reach output `{}`: each \
                 device would compute it from its own shard, and customop does not combine \
                 partial results",
                schema.name, r.name
            ));
        }
    }
    rule.results = outputs;
    Ok(())
}

#[cfg(test)]
mod tests;
