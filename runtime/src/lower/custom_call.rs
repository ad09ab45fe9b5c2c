//! `stablehlo.custom_call`: its parts ([`CustomCall`]) and the builder method that emits it (a
//! partitioned one through `sharding.rs`).

use super::{Attr, BuildError, FuncBuilder, Value};
use crate::types::TensorType;

/// The custom call API version (`api_version` attribute).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ApiVersion {
    /// 1: the original status-less API (deprecated on XLA CPU).
    Original,
    /// 2: status-returning.
    StatusReturning,
    /// 3: status-returning, unified.
    StatusReturningUnified,
    /// 4: the typed XLA FFI (the default).
    #[default]
    TypedFfi,
}

impl ApiVersion {
    /// The attribute's integer value.
    pub fn code(self) -> i32 {
        match self {
            ApiVersion::Original => 1,
            ApiVersion::StatusReturning => 2,
            ApiVersion::StatusReturningUnified => 3,
            ApiVersion::TypedFfi => 4,
        }
    }
}

/// The `backend_config` of a custom call.
#[derive(Clone, Debug, PartialEq, Default)]
pub enum BackendConfig {
    /// None given (API 4 then gets an empty dictionary).
    #[default]
    None,
    /// Typed attributes, for API 4.
    Dict(Vec<(String, Attr)>),
    /// Opaque bytes, for API 1-3.
    Bytes(Vec<u8>),
}

/// The parts of a `stablehlo.custom_call`.
#[derive(Clone, Debug)]
pub struct CustomCall<'a> {
    /// `call_target_name`.
    pub target: &'a str,
    /// The operands, in order.
    pub operands: &'a [&'a Value],
    /// The result types.
    pub results: &'a [TensorType],
    /// `api_version`.
    pub api_version: ApiVersion,
    /// `backend_config`.
    pub backend_config: BackendConfig,
    /// `has_side_effect`.
    pub has_side_effect: bool,
    /// `(output index, operand index)` pairs: the output reuses the operand's buffer.
    pub output_operand_aliases: &'a [(usize, usize)],
    /// How the op may be split across devices. In a module with a mesh, the call is then
    /// wrapped in an `sdy.manual_computation`: the handler runs once per device, on its shard.
    pub partition: Option<&'a crate::schema::PartitionRule>,
}

impl<'a> CustomCall<'a> {
    /// A typed-FFI (API 4) custom call with no attributes, side effects or aliases.
    pub fn new(target: &'a str, operands: &'a [&'a Value], results: &'a [TensorType]) -> Self {
        CustomCall {
            target,
            operands,
            results,
            api_version: ApiVersion::TypedFfi,
            backend_config: BackendConfig::None,
            has_side_effect: false,
            output_operand_aliases: &[],
            partition: None,
        }
    }
}

impl FuncBuilder<'_> {
    /// `stablehlo.custom_call`: the low-level form that generated lowerings use.
    ///
    /// Ops with `has_side_effect` or unused results stay in the program.
    pub fn custom_call(&mut self, call: CustomCall<'_>) -> Result<Vec<Value>, BuildError> {
        if call.target.is_empty() {
            return Err(BuildError::new("custom_call needs a target name"));
        }
        let mut attrs = vec![
            (
                "call_target_name",
                Attr::Str(call.target.as_bytes().to_vec()),
            ),
            ("api_version", Attr::I32(call.api_version.code())),
        ];
        match (call.api_version, call.backend_config) {
            (ApiVersion::TypedFfi, BackendConfig::Dict(entries)) => {
                attrs.push(("backend_config", Attr::Dict(entries)))
            }
            (ApiVersion::TypedFfi, BackendConfig::None) => {
                attrs.push(("backend_config", Attr::Dict(Vec::new())))
            }
            (ApiVersion::TypedFfi, BackendConfig::Bytes(_)) => {
                return Err(BuildError::new(format!(
                    "custom_call @{}: API version 4 takes a dictionary backend_config, not a string",
                    call.target
                )));
            }
            (_, BackendConfig::Bytes(b)) => attrs.push(("backend_config", Attr::Str(b))),
            (_, BackendConfig::None) => {}
            (_, BackendConfig::Dict(_)) => {
                return Err(BuildError::new(format!(
                    "custom_call @{}: API versions 1-3 take a string backend_config, not a dictionary",
                    call.target
                )));
            }
        }
        if call.has_side_effect {
            attrs.push(("has_side_effect", Attr::Bool(true)));
        }
        if !call.output_operand_aliases.is_empty() {
            let mut aliases = Vec::new();
            for &(output, operand) in call.output_operand_aliases {
                let (Some(out_ty), Some(in_v)) =
                    (call.results.get(output), call.operands.get(operand))
                else {
                    return Err(BuildError::new(format!(
                        "custom_call @{}: alias of output {output} to operand {operand} is out of range",
                        call.target
                    )));
                };
                if out_ty != in_v.ty() {
                    return Err(BuildError::new(format!(
                        "custom_call @{}: output {output} ({out_ty}) cannot alias operand {operand} ({})",
                        call.target,
                        in_v.ty()
                    )));
                }
                let tuple_index = if call.results.len() > 1 {
                    format!("[{output}]")
                } else {
                    "[]".to_string()
                };
                aliases.push(Attr::Raw(format!(
                    "#stablehlo.output_operand_alias<output_tuple_indices = {tuple_index}, operand_index = {operand}, operand_tuple_indices = []>"
                )));
            }
            attrs.push(("output_operand_aliases", Attr::Array(aliases)));
        }
        if let Some(rule) = call.partition
            && let Some(plan) =
                self.plan_partition(call.target, call.operands, call.results, rule)?
        {
            return self.push_manual(call.operands, call.results, attrs, plan);
        }
        self.push_op(
            "stablehlo.custom_call",
            call.operands,
            call.results.to_vec(),
            attrs,
            None,
            None,
        )
    }
}
