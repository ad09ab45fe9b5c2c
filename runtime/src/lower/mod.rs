//! The program builder: write StableHLO programs in Rust.
//!
//! A [`Module`] holds functions; a [`FuncBuilder`] appends typed ops to one of them and hands out
//! [`Value`]s that carry their [`TensorType`]. Every op method computes its result type and
//! rejects misuse with a [`BuildError`] before MLIR sees anything. [`Module::to_text`] then builds
//! the module with melior in one pass, runs MLIR's verifier and prints it.
//!
//! External arguments ([`FuncBuilder::external_raw`]) are lifted to the entry function wherever
//! they are declared, and threaded through every call to the helper that uses them.
//!
//! Nothing is ever removed: an op whose results are unused (a side-effecting custom call, say)
//! stays in the printed program.

pub(crate) mod attr;
mod emit;
mod op_call;
mod ops;
mod sharding;

pub use attr::Attr;
pub use op_call::call_op;
pub use ops::{Compare, ConstantElement, DotDims};
pub use sharding::{Mesh, Sharding};

use crate::descriptor::Descriptor;
use crate::types::{ElementType, TensorType};
use core::fmt;
use core::marker::PhantomData;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

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
    module: u32,
    func: u32,
    at: ValRef,
    ty: Arc<TensorType>,
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
        ])
    }
}

/// A value holding a packed `T` descriptor: an external argument ([`FuncBuilder::external`])
/// or an op's opaque result. Ops that take a `T` accept it, and only those: passing a
/// `Desc<A>` where a `Desc<B>` is expected does not compile. Its [`Value`] is a
/// `tensor<Nxui8>`.
pub struct Desc<T> {
    value: Value,
    _descriptor: PhantomData<fn() -> T>,
}

impl<T> fmt::Debug for Desc<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Desc").field("value", &self.value).finish()
    }
}

impl<T> Clone for Desc<T> {
    fn clone(&self) -> Self {
        Desc {
            value: self.value.clone(),
            _descriptor: PhantomData,
        }
    }
}

impl<T> Desc<T> {
    /// The value (a `tensor<Nxui8>`) in the function that made it.
    pub fn value(&self) -> &Value {
        &self.value
    }

    /// Wraps a value that holds a packed `T` (an op's opaque result or updated external, as
    /// its schema says; the caller vouches for the bytes' type).
    pub(crate) fn wrap(value: Value) -> Self {
        Desc {
            value,
            _descriptor: PhantomData,
        }
    }
}

/// A finished function that other functions can call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FuncRef {
    module: u32,
    index: u32,
    name: String,
    params: Vec<Arc<TensorType>>,
    results: Vec<Arc<TensorType>>,
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

static NEXT_MODULE_ID: AtomicU32 = AtomicU32::new(1);

/// A StableHLO module under construction.
#[derive(Debug)]
pub struct Module {
    id: u32,
    funcs: Vec<FuncData>,
    entry: Option<u32>,
    externals: Vec<External>,
    external_by_name: HashMap<String, u32>,
    types: HashMap<TensorType, Arc<TensorType>>,
    meshes: Vec<sharding::Mesh>,
}

impl Default for Module {
    fn default() -> Self {
        Module::new()
    }
}

impl Module {
    /// An empty module.
    pub fn new() -> Module {
        Module {
            id: NEXT_MODULE_ID.fetch_add(1, Ordering::Relaxed),
            funcs: Vec::new(),
            entry: None,
            externals: Vec::new(),
            external_by_name: HashMap::new(),
            types: HashMap::new(),
            meshes: Vec::new(),
        }
    }

    pub(crate) fn intern(&mut self, ty: TensorType) -> Arc<TensorType> {
        if let Some(t) = self.types.get(&ty) {
            return t.clone();
        }
        let t = Arc::new(ty.clone());
        self.types.insert(ty, t.clone());
        t
    }

    fn start(
        &mut self,
        name: &str,
        params: impl IntoIterator<Item = TensorType>,
    ) -> Result<FuncBuilder<'_>, BuildError> {
        if name.is_empty() {
            return Err(BuildError::new("a function needs a name"));
        }
        if self.funcs.iter().any(|f| f.name == name) {
            return Err(BuildError::new(format!(
                "the module already has a function named `{name}`"
            )));
        }
        let params = params.into_iter().map(|t| self.intern(t)).collect();
        let index = self.funcs.len() as u32;
        self.funcs.push(FuncData {
            name: name.to_string(),
            params,
            ops: Vec::new(),
            returns: Vec::new(),
            results: Vec::new(),
            externals: Vec::new(),
            param_shardings: Vec::new(),
            result_shardings: Vec::new(),
            value_shardings: HashMap::new(),
        });
        Ok(FuncBuilder {
            module: self,
            index,
        })
    }

    /// Starts the public entry function (there is one per module) with the given parameters.
    /// External arguments are appended after them.
    pub fn entry(
        &mut self,
        name: &str,
        params: impl IntoIterator<Item = TensorType>,
    ) -> Result<FuncBuilder<'_>, BuildError> {
        if let Some(e) = self.entry {
            return Err(BuildError::new(format!(
                "the module already has an entry function, `{}`",
                self.funcs[e as usize].name
            )));
        }
        self.entry = Some(self.funcs.len() as u32);
        self.start(name, params)
    }

    /// Starts a private helper function with the given parameters.
    pub fn helper(
        &mut self,
        name: &str,
        params: impl IntoIterator<Item = TensorType>,
    ) -> Result<FuncBuilder<'_>, BuildError> {
        self.start(name, params)
    }

    /// The module's external arguments, in the order they follow the entry function's own
    /// parameters.
    pub fn externals(&self) -> &[External] {
        &self.externals
    }

    /// The pretty-printed module, after MLIR's verifier accepted it.
    pub fn to_text(&self) -> Result<String, BuildError> {
        emit::print(self, emit::Form::Pretty)
    }

    /// The module in MLIR's generic op form, after MLIR's verifier accepted it.
    pub fn to_generic_text(&self) -> Result<String, BuildError> {
        emit::print(self, emit::Form::Generic)
    }

    /// The module as MLIR bytecode (`mlirOperationWriteBytecode`), after MLIR's verifier
    /// accepted it. jaxlib parses and compiles it like the text.
    pub fn to_bytecode(&self) -> Result<Vec<u8>, BuildError> {
        emit::bytecode(self)
    }

    pub(crate) fn funcs(&self) -> &[FuncData] {
        &self.funcs
    }

    pub(crate) fn entry_index(&self) -> Option<u32> {
        self.entry
    }
}

/// Appends ops to one function of a [`Module`]. Finish it with [`FuncBuilder::ret`].
#[derive(Debug)]
pub struct FuncBuilder<'m> {
    module: &'m mut Module,
    index: u32,
}

impl FuncBuilder<'_> {
    fn data(&self) -> &FuncData {
        &self.module.funcs[self.index as usize]
    }

    fn data_mut(&mut self) -> &mut FuncData {
        &mut self.module.funcs[self.index as usize]
    }

    /// The function's name.
    pub fn name(&self) -> &str {
        &self.data().name
    }

    /// The function's declared parameters, as values.
    pub fn args(&self) -> Vec<Value> {
        let f = self.data();
        f.params
            .iter()
            .enumerate()
            .map(|(i, ty)| Value {
                module: self.module.id,
                func: self.index,
                at: ValRef::Param(i as u32),
                ty: ty.clone(),
            })
            .collect()
    }

    /// Parameter `i` as a value.
    pub fn arg(&self, i: usize) -> Result<Value, BuildError> {
        self.args().into_iter().nth(i).ok_or_else(|| {
            BuildError::new(format!(
                "function `{}` has {} parameters; there is no parameter {i}",
                self.name(),
                self.data().params.len()
            ))
        })
    }

    /// Checks that `v` belongs to this function.
    pub(crate) fn check_own(&self, v: &Value, what: &str) -> Result<(), BuildError> {
        if v.module != self.module.id || v.func != self.index {
            let owner = if v.module != self.module.id {
                "another module".to_string()
            } else {
                format!("function `{}`", self.module.funcs[v.func as usize].name)
            };
            return Err(BuildError::new(format!(
                "{what}: the value comes from {owner}, not from function `{}`",
                self.name()
            )));
        }
        Ok(())
    }

    /// Declares an external argument holding a `T` descriptor, named `name`: it becomes an
    /// argument of the entry function, `tensor<Nxui8>` with `N = T::PACKED_SIZE`, annotated with
    /// the descriptor's name, fingerprint and size. Declared in a helper, it is threaded through
    /// every call to it. `T` must have a fixed layout (no `Vec`/`String` tails), since tensor
    /// shapes are static.
    pub fn external<T: Descriptor>(&mut self, name: &str) -> Result<Desc<T>, BuildError> {
        let Some(size) = T::PACKED_SIZE else {
            return Err(BuildError::new(format!(
                "external `{name}`: descriptor `{}` has variable-length tails; an external \
                 argument needs a fixed packed size",
                T::NAME
            )));
        };
        let value = self.external_raw(External {
            name: name.to_string(),
            descriptor: T::NAME.to_string(),
            fingerprint: T::fingerprint(),
            size,
            mutable: false,
        })?;
        Ok(Desc {
            value,
            _descriptor: PhantomData,
        })
    }

    /// Declares an external argument by its raw facts (the typed form is
    /// [`FuncBuilder::external`]). The same name declared again, anywhere in the module, is
    /// the same argument; declared with other facts, it is an error naming both.
    pub fn external_raw(&mut self, spec: External) -> Result<Value, BuildError> {
        let idx = match self.module.external_by_name.get(&spec.name) {
            Some(&i) => {
                let old = &mut self.module.externals[i as usize];
                if old.descriptor != spec.descriptor
                    || old.fingerprint != spec.fingerprint
                    || old.size != spec.size
                {
                    return Err(BuildError::new(format!(
                        "external `{}` is declared as descriptor `{}` (fingerprint 0x{:016x}, {} bytes) \
                         and again as `{}` (fingerprint 0x{:016x}, {} bytes)",
                        spec.name,
                        old.descriptor,
                        old.fingerprint,
                        old.size,
                        spec.descriptor,
                        spec.fingerprint,
                        spec.size
                    )));
                }
                old.mutable |= spec.mutable;
                i
            }
            None => {
                if spec.name.is_empty() {
                    return Err(BuildError::new("an external needs a name"));
                }
                let i = self.module.externals.len() as u32;
                self.module.external_by_name.insert(spec.name.clone(), i);
                self.module.externals.push(spec);
                i
            }
        };
        let ty = self.module.externals[idx as usize].tensor_type();
        let ty = self.module.intern(ty);
        let f = self.data_mut();
        if let Err(pos) = f.externals.binary_search(&idx) {
            f.externals.insert(pos, idx);
        }
        Ok(Value {
            module: self.module.id,
            func: self.index,
            at: ValRef::External(idx),
            ty,
        })
    }

    /// Marks the external behind `v` as updated in place (`mutable = true` in its annotation).
    /// Values that are not externals are left alone.
    pub fn mark_external_mutable(&mut self, v: &Value) {
        if let ValRef::External(i) = v.at
            && v.module == self.module.id
            && let Some(e) = self.module.externals.get_mut(i as usize)
        {
            e.mutable = true;
        }
    }

    /// Appends a generic op. Operands must belong to this function; result types are given.
    pub(crate) fn push_op(
        &mut self,
        name: &'static str,
        operands: &[&Value],
        results: Vec<TensorType>,
        attrs: Vec<(&'static str, Attr)>,
        body: Option<Body>,
        callee: Option<u32>,
    ) -> Result<Vec<Value>, BuildError> {
        for v in operands {
            self.check_own(v, name)?;
        }
        let results: Vec<Arc<TensorType>> =
            results.into_iter().map(|t| self.module.intern(t)).collect();
        let op = self.data().ops.len() as u32;
        let values = results
            .iter()
            .enumerate()
            .map(|(i, ty)| Value {
                module: self.module.id,
                func: self.index,
                at: ValRef::Op {
                    op,
                    result: i as u32,
                },
                ty: ty.clone(),
            })
            .collect();
        let operands = operands.iter().map(|v| v.at).collect();
        self.data_mut().ops.push(OpData {
            name,
            operands,
            results,
            attrs,
            body,
            callee,
        });
        Ok(values)
    }

    fn one(
        &mut self,
        name: &'static str,
        operands: &[&Value],
        result: TensorType,
    ) -> Result<Value, BuildError> {
        let mut v = self.push_op(name, operands, vec![result], Vec::new(), None, None)?;
        v.pop().ok_or_else(|| BuildError::new("op made no result"))
    }

    /// `stablehlo.constant` holding `value` in every element of a tensor of type `ty`.
    pub fn constant_splat(&mut self, ty: &TensorType, value: f64) -> Result<Value, BuildError> {
        let lit = scalar_literal(ty.element(), value)?;
        let attrs = vec![("value", Attr::Raw(format!("dense<{lit}> : {ty}")))];
        let mut v = self.push_op(
            "stablehlo.constant",
            &[],
            vec![ty.clone()],
            attrs,
            None,
            None,
        )?;
        v.pop().ok_or_else(|| BuildError::new("op made no result"))
    }

    /// An elementwise op of one operand (`stablehlo.sine` and friends); see [`UnaryOp`].
    pub fn unary(&mut self, op: UnaryOp, x: &Value) -> Result<Value, BuildError> {
        let name = op.op_name();
        if op.needs_float() && !x.element().is_float() {
            return Err(BuildError::new(format!(
                "{name} takes a floating-point tensor, got {}",
                x.ty()
            )));
        }
        if matches!(x.element(), ElementType::Bool)
            || (op == UnaryOp::Negate && x.element().is_unsigned())
        {
            return Err(BuildError::new(format!("{name} does not take {}", x.ty())));
        }
        let v = self.one(name, &[x], x.ty().clone())?;
        self.propagate_sharding(&[x], &v);
        Ok(v)
    }

    /// `stablehlo.sine`.
    pub fn sine(&mut self, x: &Value) -> Result<Value, BuildError> {
        self.unary(UnaryOp::Sine, x)
    }

    /// `stablehlo.negate`.
    pub fn negate(&mut self, x: &Value) -> Result<Value, BuildError> {
        self.unary(UnaryOp::Negate, x)
    }

    /// `stablehlo.exponential`.
    pub fn exp(&mut self, x: &Value) -> Result<Value, BuildError> {
        self.unary(UnaryOp::Exponential, x)
    }

    /// `stablehlo.tanh`.
    pub fn tanh(&mut self, x: &Value) -> Result<Value, BuildError> {
        self.unary(UnaryOp::Tanh, x)
    }

    /// An elementwise op of two operands of one type (`stablehlo.add` and friends).
    pub fn binary(&mut self, op: BinaryOp, lhs: &Value, rhs: &Value) -> Result<Value, BuildError> {
        let name = op.op_name();
        if lhs.ty() != rhs.ty() {
            return Err(BuildError::new(format!(
                "{name} takes two operands of one type, got {} and {}",
                lhs.ty(),
                rhs.ty()
            )));
        }
        if matches!(lhs.element(), ElementType::Bool) {
            return Err(BuildError::new(format!(
                "{name} does not take {}",
                lhs.ty()
            )));
        }
        let v = self.one(name, &[lhs, rhs], lhs.ty().clone())?;
        self.propagate_sharding(&[lhs, rhs], &v);
        Ok(v)
    }

    /// `stablehlo.add`.
    pub fn add(&mut self, lhs: &Value, rhs: &Value) -> Result<Value, BuildError> {
        self.binary(BinaryOp::Add, lhs, rhs)
    }

    /// `stablehlo.multiply`.
    pub fn mul(&mut self, lhs: &Value, rhs: &Value) -> Result<Value, BuildError> {
        self.binary(BinaryOp::Multiply, lhs, rhs)
    }

    /// `stablehlo.maximum`.
    pub fn max(&mut self, lhs: &Value, rhs: &Value) -> Result<Value, BuildError> {
        self.binary(BinaryOp::Maximum, lhs, rhs)
    }

    /// `stablehlo.reduce` of `x` over `dims` with an `add` or `max` body; the reduced dimensions
    /// disappear from the result.
    pub fn reduce(&mut self, op: ReduceOp, x: &Value, dims: &[i64]) -> Result<Value, BuildError> {
        let rank = x.shape().len() as i64;
        let mut sorted = dims.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        if sorted.len() != dims.len() || dims.iter().any(|&d| d < 0 || d >= rank) {
            return Err(BuildError::new(format!(
                "stablehlo.reduce: dimensions {dims:?} must be distinct and in 0..{rank} for {}",
                x.ty()
            )));
        }
        let element = x.element();
        if matches!(element, crate::types::ElementType::Bool) {
            return Err(BuildError::new(format!(
                "stablehlo.reduce does not take {}",
                x.ty()
            )));
        }
        let init = match (op, element.is_float()) {
            (ReduceOp::Add, _) => 0.0,
            (ReduceOp::Max, true) => f64::NEG_INFINITY,
            (ReduceOp::Max, false) if element.is_unsigned() => 0.0,
            (ReduceOp::Max, false) => -(2f64.powi(element.byte_size() as i32 * 8 - 1)),
        };
        let init = self.constant_splat(&TensorType::scalar(element), init)?;
        let shape: Vec<i64> = x
            .shape()
            .iter()
            .enumerate()
            .filter(|(i, _)| !sorted.contains(&(*i as i64)))
            .map(|(_, &d)| d)
            .collect();
        let result = TensorType::from_parts(element, shape);
        let body = Body::Reduce(op.combiner(), element);
        let attrs = vec![("dimensions", Attr::DenseI64(dims.to_vec()))];
        let mut v = self.push_op(
            "stablehlo.reduce",
            &[x, &init],
            vec![result],
            attrs,
            Some(body),
            None,
        )?;
        v.pop().ok_or_else(|| BuildError::new("op made no result"))
    }

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

    /// `func.call` of a finished function; externals it needs are passed along automatically.
    pub fn call(&mut self, callee: &FuncRef, args: &[&Value]) -> Result<Vec<Value>, BuildError> {
        if callee.module != self.module.id {
            return Err(BuildError::new(format!(
                "call @{}: the function belongs to another module",
                callee.name
            )));
        }
        if args.len() != callee.params.len() {
            return Err(BuildError::new(format!(
                "call @{}: takes {} arguments, got {}",
                callee.name,
                callee.params.len(),
                args.len()
            )));
        }
        for (i, (a, p)) in args.iter().zip(&callee.params).enumerate() {
            if a.ty() != &**p {
                return Err(BuildError::new(format!(
                    "call @{}: argument {i} must be {p}, got {}",
                    callee.name,
                    a.ty()
                )));
            }
        }
        // The callee's externals become this function's too.
        let needed = self.module.funcs[callee.index as usize].externals.clone();
        let f = self.data_mut();
        for e in needed {
            if let Err(pos) = f.externals.binary_search(&e) {
                f.externals.insert(pos, e);
            }
        }
        let results = callee.results.iter().map(|t| (**t).clone()).collect();
        self.push_op(
            "func.call",
            args,
            results,
            Vec::new(),
            None,
            Some(callee.index),
        )
    }

    /// Ends the function, returning `values`.
    pub fn ret(mut self, values: &[&Value]) -> Result<FuncRef, BuildError> {
        for v in values {
            self.check_own(v, "return")?;
        }
        let returns = values.iter().map(|v| v.at).collect();
        let results: Vec<Arc<TensorType>> = values.iter().map(|v| v.ty.clone()).collect();
        let module = self.module.id;
        let index = self.index;
        let f = self.data_mut();
        f.returns = returns;
        f.results = results.clone();
        Ok(FuncRef {
            module,
            index,
            name: f.name.clone(),
            params: f.params.clone(),
            results,
        })
    }
}

/// Writes `value` as a literal of `element` for a dense attribute, refusing values the type
/// cannot hold exactly.
fn scalar_literal(element: ElementType, value: f64) -> Result<String, BuildError> {
    let mut s = String::new();
    match element {
        ElementType::F32 => {
            let _ = attr::write_f32(&mut s, value as f32);
        }
        ElementType::F64 => {
            let _ = attr::write_f64(&mut s, value);
        }
        ElementType::Bool => {
            if value != 0.0 && value != 1.0 {
                return Err(BuildError::new(format!(
                    "{value} is not a boolean (0 or 1)"
                )));
            }
            s = (value == 1.0).to_string();
        }
        _ => {
            let bits = element.byte_size() as u32 * 8;
            let (lo, hi) = if element.is_unsigned() {
                (0f64, 2f64.powi(bits as i32) - 1.0)
            } else {
                (
                    -(2f64.powi(bits as i32 - 1)),
                    2f64.powi(bits as i32 - 1) - 1.0,
                )
            };
            if value.fract() != 0.0 || value < lo || value > hi {
                return Err(BuildError::new(format!(
                    "{value} is not a value of {element} ({lo} to {hi})"
                )));
            }
            s = format!("{}", value as i128);
        }
    }
    Ok(s)
}

/// Elementwise ops of one operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnaryOp {
    /// `stablehlo.negate`.
    Negate,
    /// `stablehlo.sine`.
    Sine,
    /// `stablehlo.cosine`.
    Cosine,
    /// `stablehlo.exponential`.
    Exponential,
    /// `stablehlo.log`.
    Log,
    /// `stablehlo.tanh`.
    Tanh,
    /// `stablehlo.sqrt`.
    Sqrt,
    /// `stablehlo.rsqrt`.
    Rsqrt,
    /// `stablehlo.abs`.
    Abs,
}

impl UnaryOp {
    /// The StableHLO op name.
    pub fn op_name(self) -> &'static str {
        match self {
            UnaryOp::Negate => "stablehlo.negate",
            UnaryOp::Sine => "stablehlo.sine",
            UnaryOp::Cosine => "stablehlo.cosine",
            UnaryOp::Exponential => "stablehlo.exponential",
            UnaryOp::Log => "stablehlo.log",
            UnaryOp::Tanh => "stablehlo.tanh",
            UnaryOp::Sqrt => "stablehlo.sqrt",
            UnaryOp::Rsqrt => "stablehlo.rsqrt",
            UnaryOp::Abs => "stablehlo.abs",
        }
    }

    fn needs_float(self) -> bool {
        !matches!(self, UnaryOp::Negate | UnaryOp::Abs)
    }
}

/// Elementwise ops of two operands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinaryOp {
    /// `stablehlo.add`.
    Add,
    /// `stablehlo.subtract`.
    Subtract,
    /// `stablehlo.multiply`.
    Multiply,
    /// `stablehlo.divide`.
    Divide,
    /// `stablehlo.maximum`.
    Maximum,
    /// `stablehlo.minimum`.
    Minimum,
    /// `stablehlo.power`.
    Power,
}

impl BinaryOp {
    /// The StableHLO op name.
    pub fn op_name(self) -> &'static str {
        match self {
            BinaryOp::Add => "stablehlo.add",
            BinaryOp::Subtract => "stablehlo.subtract",
            BinaryOp::Multiply => "stablehlo.multiply",
            BinaryOp::Divide => "stablehlo.divide",
            BinaryOp::Maximum => "stablehlo.maximum",
            BinaryOp::Minimum => "stablehlo.minimum",
            BinaryOp::Power => "stablehlo.power",
        }
    }
}

/// The combining op of a [`FuncBuilder::reduce`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReduceOp {
    /// Sum.
    Add,
    /// Maximum.
    Max,
}

impl ReduceOp {
    fn combiner(self) -> &'static str {
        match self {
            ReduceOp::Add => "stablehlo.add",
            ReduceOp::Max => "stablehlo.maximum",
        }
    }
}

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
