//! Lowering a declared op: one function that reads the op's schema and plan for everything
//! (operand checks, result types from the shape rules, aliases, side effects, the partition
//! rule), so that generated `call` shims only pass their arguments on. Generated code reaches
//! this module through `__private`; it is not public API.

use super::{
    ApiVersion, Attr, BackendConfig, BuildError, CustomCall, DescriptorValue, FuncBuilder, Value,
};
use crate::descriptor::Descriptor;
use crate::ffi::AttrLit;
use crate::plan::{OpDef, Plan, ResultDtype, ResultPlan, ShapeEnv};
use crate::schema::{OpSchema, ParamKind, TensorDtype};
use crate::types::{ElementType, TensorType};

/// Emits op `def` as a `stablehlo.custom_call` in `f` and returns its results in the schema's
/// order. `operands` are the values of its tensor and external parameters, `attrs` the values
/// of its attributes, each in declaration order (what a generated `call` passes).
pub fn call_op(
    f: &mut FuncBuilder<'_>,
    def: &OpDef,
    operands: &[&Value],
    attrs: Vec<AttrLit>,
) -> Result<Vec<Value>, BuildError> {
    call_op_with(f, def, operands, attrs, Vec::new())
}

/// [`call_op`] for an op that takes the dictionary of its attributes (`#[attrs]`): `extra`
/// are the entries the call carries beside the named attributes (none may share a name with
/// one of them).
pub fn call_op_with(
    f: &mut FuncBuilder<'_>,
    def: &OpDef,
    operands: &[&Value],
    attrs: Vec<AttrLit>,
    extra: Vec<(String, AttrLit)>,
) -> Result<Vec<Value>, BuildError> {
    let schema = def.schema();
    let op = schema.name.as_str();
    let plan = def.plan().map_err(BuildError::new)?;
    if operands.len() != plan.operand_params.len() {
        return Err(BuildError::new(format!(
            "{op}: takes {} operands, got {}",
            plan.operand_params.len(),
            operands.len()
        )));
    }
    for (&v, &p) in operands.iter().zip(&plan.operand_params) {
        let param = &schema.params[p];
        match &param.kind {
            ParamKind::Tensor { dtype, rank, .. } => {
                check_operand(op, &param.name, v, dtype, *rank)?
            }
            ParamKind::External { descriptor, .. } => {
                let size = descriptor.packed_size.map(|n| n as i64);
                if v.element() != ElementType::U8
                    || v.shape().len() != 1
                    || size != Some(v.shape()[0])
                {
                    return Err(BuildError::new(format!(
                        "{op}: external `{}` takes the packed bytes of `{}`, got {}",
                        param.name,
                        descriptor.name,
                        v.ty()
                    )));
                }
            }
            ParamKind::Attribute { .. } | ParamKind::Attributes => {}
        }
    }
    // A type parameter is one type in a call (check_operand saw each type is allowed).
    plan.check_dtype_vars(|o| operands.get(o).map(|v| v.element()))
        .map_err(|m| BuildError::new(plan.dtype_message(schema, &m)))?;
    let attr_names: Vec<&str> = schema
        .params
        .iter()
        .filter(|p| matches!(p.kind, ParamKind::Attribute { .. }))
        .map(|p| p.name.as_str())
        .collect();
    if attrs.len() != attr_names.len() {
        return Err(BuildError::new(format!(
            "{op}: takes {} attributes, got {}",
            attr_names.len(),
            attrs.len()
        )));
    }
    let env = LowerEnv {
        operands,
        attrs: &attrs,
    };
    let mut results = Vec::with_capacity(plan.results.len());
    for (r, rs) in plan.results.iter().zip(&schema.results) {
        results.push(match r {
            ResultPlan::Tensor { element, shape } => {
                let shape = shape.eval(&env).map_err(|(d, e)| {
                    BuildError::new(format!(
                        "{op}: output `{}`: {}; the operands are {}{}",
                        rs.name,
                        shape.explain(d, &e),
                        describe_operands(schema, plan, operands),
                        describe_attrs(&attr_names, &attrs),
                    ))
                })?;
                let element = match *element {
                    ResultDtype::Fixed(e) => e,
                    ResultDtype::Of(o) => operands[o].element(),
                };
                TensorType::new(element, shape)
                    .map_err(|e| BuildError::new(format!("{op}: output `{}`: {e}", rs.name)))?
            }
            ResultPlan::Opaque { size: Some(n) } => {
                TensorType::from_parts(ElementType::U8, vec![*n as i64])
            }
            ResultPlan::Opaque { size: None } => {
                return Err(BuildError::new(format!(
                    "{op}: opaque result `{}` has variable-length tails; as a tensor it needs a \
                     fixed packed size",
                    rs.name
                )));
            }
            ResultPlan::Updated { operand } => operands[*operand].ty().clone(),
        });
    }
    if !extra.is_empty()
        && !schema
            .params
            .iter()
            .any(|p| matches!(p.kind, ParamKind::Attributes))
    {
        return Err(BuildError::new(format!(
            "{op}: takes no dictionary of attributes (`#[attrs]`), got {} more",
            extra.len()
        )));
    }
    if let Some((k, _)) = extra.iter().find(|(k, _)| attr_names.contains(&k.as_str())) {
        return Err(BuildError::new(format!(
            "{op}: `{k}` is a named attribute of the op; pass it as that parameter, not in the \
             dictionary"
        )));
    }
    let mut config: Vec<(String, Attr)> = attr_names
        .into_iter()
        .map(str::to_string)
        .zip(attrs.into_iter().map(Attr::from))
        .collect();
    let n_named = config.len();
    for (k, v) in extra {
        if config[n_named..].iter().any(|(c, _)| *c == k) {
            return Err(BuildError::new(format!(
                "{op}: attribute `{k}` is given twice"
            )));
        }
        check_entries(op, &k, &v)?;
        config.push((k, Attr::from(v)));
    }
    for &(_, o) in &plan.aliases {
        // An updated external's entry argument says so; an `#[inout]` tensor is only aliased.
        if matches!(
            schema.params[plan.operand_params[o]].kind,
            ParamKind::External { .. }
        ) {
            f.mark_external_mutable(operands[o]);
        }
    }
    f.custom_call(CustomCall {
        target: &schema.target,
        operands,
        results: &results,
        api_version: ApiVersion::TypedFfi,
        backend_config: BackendConfig::Dict(config),
        has_side_effect: schema.side_effect,
        output_operand_aliases: &plan.aliases,
        partition: schema.partition.as_ref(),
    })
}

/// Refuses an empty name, in `name` or a nested dictionary of `value`, and a name given twice
/// in one nested dictionary: MLIR's parser would reject the module later, with less to say.
fn check_entries(op: &str, name: &str, value: &AttrLit) -> Result<(), BuildError> {
    if name.is_empty() {
        return Err(BuildError::new(format!(
            "{op}: an attribute has an empty name"
        )));
    }
    if let AttrLit::Dict(entries) = value {
        for (i, (k, v)) in entries.iter().enumerate() {
            if entries[..i].iter().any(|(c, _)| c == k) {
                return Err(BuildError::new(format!(
                    "{op}: attribute `{name}` has `{k}` twice"
                )));
            }
            check_entries(op, &format!("{name}.{k}"), v)?;
            if k.is_empty() {
                return Err(BuildError::new(format!(
                    "{op}: attribute `{name}` has an entry with an empty name"
                )));
            }
        }
    }
    Ok(())
}

/// Checks a tensor operand's element type and (when the signature fixes it) rank.
fn check_operand(
    op: &str,
    param: &str,
    v: &Value,
    dtype: &TensorDtype,
    rank: Option<usize>,
) -> Result<(), BuildError> {
    if !dtype.admits(v.element()) {
        return Err(BuildError::new(format!(
            "{op}: parameter `{param}` takes a tensor of {}, got {}",
            dtype.describe(),
            v.ty()
        )));
    }
    if let Some(r) = rank
        && v.ty().rank() != r
    {
        return Err(BuildError::new(format!(
            "{op}: parameter `{param}` takes a rank-{r} tensor, got {}",
            v.ty()
        )));
    }
    Ok(())
}

/// A shape rule's values while lowering: the operands' types and the attributes' literals.
struct LowerEnv<'a> {
    operands: &'a [&'a Value],
    attrs: &'a [AttrLit],
}

impl ShapeEnv for LowerEnv<'_> {
    fn operand_dims(&self, operand: usize) -> Option<&[i64]> {
        self.operands.get(operand).map(|v| v.shape())
    }
    fn attr_int(&self, slot: usize, _: &str) -> Option<i64> {
        match self.attrs.get(slot)? {
            AttrLit::Int(v, _) => i64::try_from(*v).ok(),
            _ => None,
        }
    }
    fn attr_len(&self, slot: usize, _: &str) -> Option<i64> {
        match self.attrs.get(slot)? {
            AttrLit::IntArray(_, v) => i64::try_from(v.len()).ok(),
            AttrLit::FloatArray(_, v) => i64::try_from(v.len()).ok(),
            _ => None,
        }
    }
}

/// `x: tensor<4x10xf32>, w: tensor<3xf32>`: the tensor operands, for a shape error.
fn describe_operands(schema: &OpSchema, plan: &Plan, operands: &[&Value]) -> String {
    plan.operand_params
        .iter()
        .zip(operands)
        .filter(|(p, _)| matches!(schema.params[**p].kind, ParamKind::Tensor { .. }))
        .map(|(p, v)| format!("{}: {}", schema.params[*p].name, v.ty()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `; the integer attributes k = 3, stride = 2`, for a shape error (empty without any).
fn describe_attrs(names: &[&str], attrs: &[AttrLit]) -> String {
    let ints: Vec<String> = names
        .iter()
        .zip(attrs)
        .filter_map(|(n, a)| match a {
            AttrLit::Int(v, _) => Some(format!("{n} = {v}")),
            AttrLit::IntArray(_, v) => Some(format!("{n}.len() = {}", v.len())),
            AttrLit::FloatArray(_, v) => Some(format!("{n}.len() = {}", v.len())),
            _ => None,
        })
        .collect();
    if ints.is_empty() {
        String::new()
    } else {
        format!("; the attributes {}", ints.join(", "))
    }
}

/// The results of [`call_op`], taken in order by a generated `call`: a
/// [`Value`] for a tensor output, a [`DescriptorValue`] for an opaque result or an updated external.
#[derive(Debug)]
pub struct CallResults(std::vec::IntoIter<Value>);

impl CallResults {
    /// The results `call_op` returned.
    pub fn new(values: Vec<Value>) -> CallResults {
        CallResults(values.into_iter())
    }

    fn next(&mut self) -> Result<Value, BuildError> {
        self.0
            .next()
            .ok_or_else(|| BuildError::new("custom_call made too few results"))
    }

    /// The next result, a tensor.
    pub fn value(&mut self) -> Result<Value, BuildError> {
        self.next()
    }

    /// The next result, the packed bytes of a `T` (the op's schema says which results are).
    pub fn desc<T: Descriptor>(&mut self) -> Result<DescriptorValue<T>, BuildError> {
        self.next().map(DescriptorValue::wrap)
    }
}
