//! The builder's own IR: values and where they come from, externals, typed descriptor values,
//! finished functions, and the op and function records that emission turns into MLIR.

use super::{Attr, sharding};
use crate::types::{ElementType, TensorType};
use core::fmt;
use core::marker::PhantomData;
use std::collections::HashMap;
use std::sync::Arc;

/// Why the builder refused an op, a function or a module.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuildError {
    message: String,
}

impl BuildError {
    /// An error with this message.
    pub fn new(message: impl Into<String>) -> Self {
        BuildError {
            message: message.into(),
        }
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for BuildError {}

impl From<crate::types::ShapeError> for BuildError {
    fn from(e: crate::types::ShapeError) -> Self {
        BuildError::new(e.message)
    }
}

/// Where a value comes from, inside its function.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum ValRef {
    /// The function's `n`th declared parameter.
    Param(u32),
    /// Result `result` of op `op` of the function.
    Op { op: u32, result: u32 },
    /// The module's `n`th external argument.
    External(u32),
}

/// An SSA value of one function, with its tensor type.
///
/// Values are tied to the function (and module) that made them: passing one to another
/// function's builder is an error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Value {
    pub(super) module: u32,
    pub(super) func: u32,
    pub(super) at: ValRef,
    pub(super) ty: Arc<TensorType>,
}

impl Value {
    /// The value's tensor type.
    pub fn ty(&self) -> &TensorType {
        &self.ty
    }

    /// The element type.
    pub fn element(&self) -> ElementType {
        self.ty.element()
    }

    /// The shape.
    pub fn shape(&self) -> &[i64] {
        self.ty.shape()
    }
}

/// An external argument of the module: opaque bytes that the runtime feeds as the entry
/// function's argument, annotated `{customop.external = {...}}`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct External {
    /// The name given at declaration (unique in the module).
    pub name: String,
    /// The descriptor's name (`my_lib::Blob`).
    pub descriptor: String,
    /// The descriptor layout's 64-bit fingerprint.
    pub fingerprint: u64,
    /// The packed size in bytes: the argument is `tensor<SIZExui8>`.
    pub size: usize,
    /// Whether an op updates it (`&mut` use).
    pub mutable: bool,
}

impl External {
    /// The argument's tensor type, `tensor<SIZExui8>`.
    pub fn tensor_type(&self) -> TensorType {
        TensorType::from_parts(ElementType::U8, vec![self.size as i64])
    }

    /// The `customop.external` annotation's value.
    pub fn annotation(&self) -> Attr {
        Attr::Dict(vec![
            (
                "descriptor".into(),
                Attr::Str(self.descriptor.clone().into_bytes()),
            ),
            (
                "fingerprint".into(),
                Attr::Str(format!("0x{:016x}", self.fingerprint).into_bytes()),
            ),
            ("size".into(), Attr::I64(self.size as i64)),
            ("mutable".into(), Attr::Bool(self.mutable)),
            ("name".into(), Attr::Str(self.name.clone().into_bytes())),
        ])
    }
}

/// A value holding a packed `T` descriptor: an external argument ([`FuncBuilder::external`](super::FuncBuilder::external))
/// or an op's opaque result. Ops that take a `T` accept it, and only those: passing a
/// `DescriptorValue<A>` where a `DescriptorValue<B>` is expected does not compile. Its [`Value`] is a
/// `tensor<Nxui8>`.
pub struct DescriptorValue<T> {
    pub(super) value: Value,
    pub(super) _descriptor: PhantomData<fn() -> T>,
}

impl<T> fmt::Debug for DescriptorValue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DescriptorValue")
            .field("value", &self.value)
            .finish()
    }
}

impl<T> Clone for DescriptorValue<T> {
    fn clone(&self) -> Self {
        DescriptorValue {
            value: self.value.clone(),
            _descriptor: PhantomData,
        }
    }
}

impl<T> DescriptorValue<T> {
    /// The value (a `tensor<Nxui8>`) in the function that made it.
    pub fn value(&self) -> &Value {
        &self.value
    }

    /// Wraps a value that holds a packed `T` (an op's opaque result or updated external, as
    /// its schema says; the caller vouches for the bytes' type).
    pub(crate) fn wrap(value: Value) -> Self {
        DescriptorValue {
            value,
            _descriptor: PhantomData,
        }
    }
}

/// A finished function that other functions can call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FuncRef {
    pub(super) module: u32,
    pub(super) index: u32,
    pub(super) name: String,
    pub(super) params: Vec<Arc<TensorType>>,
    pub(super) results: Vec<Arc<TensorType>>,
}

impl FuncRef {
    /// The function's symbol name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The declared parameter types (externals not included).
    pub fn params(&self) -> impl Iterator<Item = &TensorType> {
        self.params.iter().map(|t| &**t)
    }

    /// The result types.
    pub fn results(&self) -> impl Iterator<Item = &TensorType> {
        self.results.iter().map(|t| &**t)
    }
}

/// What an op's region holds, for the ops that have one.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Body {
    /// A `stablehlo.reduce` body applying this binary op to two scalars of the element type.
    Reduce(&'static str, ElementType),
    /// An `sdy.manual_computation` body: one op on the block's (per-device) arguments, its
    /// results returned with `sdy.return`.
    Manual(Box<sharding::ManualBody>),
}

#[derive(Clone, Debug)]
pub(crate) struct OpData {
    pub(crate) name: &'static str,
    pub(crate) operands: Vec<ValRef>,
    pub(crate) results: Vec<Arc<TensorType>>,
    pub(crate) attrs: Vec<(&'static str, Attr)>,
    pub(crate) body: Option<Body>,
    /// For `func.call`: the callee's index.
    pub(crate) callee: Option<u32>,
}

#[derive(Clone, Debug)]
pub(crate) struct FuncData {
    pub(crate) name: String,
    pub(crate) params: Vec<Arc<TensorType>>,
    pub(crate) ops: Vec<OpData>,
    pub(crate) returns: Vec<ValRef>,
    pub(crate) results: Vec<Arc<TensorType>>,
    /// The module externals this function needs, directly or through its callees (sorted).
    pub(crate) externals: Vec<u32>,
    /// Shardings of the entry function's parameters (empty, or one per parameter).
    pub(crate) param_shardings: Vec<Option<sharding::Sharding>>,
    /// Shardings of the entry function's results (empty, or one per result).
    pub(crate) result_shardings: Vec<Option<sharding::Sharding>>,
    /// What the builder knows of how op results are split (from `shard`, elementwise ops and
    /// partitioned custom calls); with `param_shardings`, it picks the mesh axes of
    /// partitioned custom calls.
    pub(crate) value_shardings: HashMap<ValRef, sharding::Sharding>,
}
