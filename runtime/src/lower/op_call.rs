//! Lowering a declared op: one function that reads the op's schema and plan for everything
//! (operand checks, result types from the shape rules, aliases, side effects, the partition
//! rule), so that generated `call` shims only pass their arguments on. Generated code reaches
//! this module through `__private`; it is not public API.

use super::{
    ApiVersion, Attr, BackendConfig, BuildError, CustomCall, DescriptorValue, FuncBuilder, Value,
};
use crate::descriptor::Descriptor;
use crate::ffi::AttrLit;
use crate::plan::{OpDef, ResultPlan};
use crate::schema::ParamKind;
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
            ParamKind::Tensor { dtype, rank } => check_operand(op, &param.name, v, *dtype, *rank)?,
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
            ParamKind::Attribute { .. } => {}
        }
    }
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
    let config: Vec<(String, Attr)> = attr_names
        .into_iter()
        .map(str::to_string)
        .zip(attrs.into_iter().map(Attr::from))
        .collect();
    let mut results = Vec::with_capacity(plan.results.len());
    for (r, rs) in plan.results.iter().zip(&schema.results) {
        results.push(match r {
            ResultPlan::Tensor { element, shape } => {
                let shape = shape.eval(|o| operands[o].shape()).map_err(|(o, d)| {
                    let param = &schema.params[plan.operand_params[o]].name;
                    BuildError::new(format!(
                        "{op}: the shape of output `{}` takes dimension {d} of `{param}`, but \
                         `{param}` is {}",
                        rs.name,
                        operands[o].ty()
                    ))
                })?;
                TensorType::new(*element, shape)
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
    for &(_, o) in &plan.aliases {
        f.mark_external_mutable(operands[o]);
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

/// Checks a tensor operand's element type and (when the signature fixes it) rank.
fn check_operand(
    op: &str,
    param: &str,
    v: &Value,
    element: ElementType,
    rank: Option<usize>,
) -> Result<(), BuildError> {
    if v.element() != element {
        return Err(BuildError::new(format!(
            "{op}: parameter `{param}` takes a tensor of {element}, got {}",
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
