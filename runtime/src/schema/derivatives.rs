//! An op's derivatives as its types decide them, and the schema's JSON form, which carries
//! them (the manifest's `derivatives`).

use super::{
    JvpSchema, OpSchema, ParamKind, ParamSchema, PartitionRule, ResultKind, ResultSchema, VjpSchema,
};
use crate::types::ElementType;
use serde::{Serialize, Serializer};

/// What follows from an op's types for differentiation, decided here once
/// ([`ElementType::is_differentiable`] of every type a tensor may be) and read by every front end from the manifest: per
/// tensor input (by parameter name) and per result (by result name), the element types at
/// which it has a derivative. Empty: none at any type (an integer, an fp8 or complex type, a
/// type parameter that also allows one, descriptor bytes, a tensor updated in place). A
/// declared backward returns a gradient for each input listed, a declared tangent op a tangent
/// for each output listed; a front end refuses by name to differentiate through anything else.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Derivatives {
    /// Tensor inputs, by parameter name.
    pub inputs: std::collections::BTreeMap<String, Vec<ElementType>>,
    /// Results, by result name.
    pub outputs: std::collections::BTreeMap<String, Vec<ElementType>>,
}

impl OpSchema {
    /// Per tensor input and result, the element types at which it has a derivative.
    pub fn derivatives(&self) -> Derivatives {
        let inputs = self
            .params
            .iter()
            .filter_map(|p| match &p.kind {
                ParamKind::Tensor { dtype, updated, .. } => {
                    let types = if *updated {
                        Vec::new()
                    } else {
                        dtype.derivative_types()
                    };
                    Some((p.name.clone(), types))
                }
                _ => None,
            })
            .collect();
        let outputs = self
            .results
            .iter()
            .map(|r| {
                let types = match &r.kind {
                    ResultKind::Tensor { dtype, .. } => dtype.derivative_types(),
                    _ => Vec::new(),
                };
                (r.name.clone(), types)
            })
            .collect();
        Derivatives { inputs, outputs }
    }
}

impl Serialize for OpSchema {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        /// The schema's fields as they are, and what follows from them.
        #[derive(Serialize)]
        struct Json<'a> {
            name: &'a str,
            target: &'a str,
            api_version: u32,
            side_effect: bool,
            params: &'a [ParamSchema],
            results: &'a [ResultSchema],
            partition: &'a Option<PartitionRule>,
            vjp: &'a Option<VjpSchema>,
            jvp: &'a Option<JvpSchema>,
            #[serde(serialize_with = "ser_derivatives")]
            derivatives: Derivatives,
        }
        Json {
            name: &self.name,
            target: &self.target,
            api_version: self.api_version,
            side_effect: self.side_effect,
            params: &self.params,
            results: &self.results,
            partition: &self.partition,
            vjp: &self.vjp,
            jvp: &self.jvp,
            derivatives: self.derivatives(),
        }
        .serialize(s)
    }
}

/// [`Derivatives`] with element types by their MLIR names.
fn ser_derivatives<S: Serializer>(d: &Derivatives, s: S) -> Result<S::Ok, S::Error> {
    let names = |m: &std::collections::BTreeMap<String, Vec<ElementType>>| {
        m.iter()
            .map(|(k, v)| {
                let types: Vec<&str> = v.iter().map(|t| t.mlir_name()).collect();
                (k.clone(), serde_json::json!(types))
            })
            .collect::<serde_json::Map<String, serde_json::Value>>()
    };
    serde_json::json!({"inputs": names(&d.inputs), "outputs": names(&d.outputs)}).serialize(s)
}
