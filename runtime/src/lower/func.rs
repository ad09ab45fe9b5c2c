//! [`FuncBuilder`]: appending ops to one function, its arguments and externals, calls and the
//! return. The op methods live by concern in `elementwise.rs`, `ops.rs`, `custom_call.rs` and
//! `sharding.rs`.

use super::ir::{External, FuncRef, ValRef};
use super::{Attr, Body, BuildError, DescriptorValue, FuncData, Module, OpData, Value};
use crate::descriptor::Descriptor;
use crate::types::TensorType;
use core::marker::PhantomData;
use std::sync::Arc;

/// Appends ops to one function of a [`Module`]. Finish it with [`FuncBuilder::ret`].
#[derive(Debug)]
pub struct FuncBuilder<'m> {
    pub(super) module: &'m mut Module,
    pub(super) index: u32,
}

impl FuncBuilder<'_> {
    pub(super) fn data(&self) -> &FuncData {
        &self.module.funcs[self.index as usize]
    }

    pub(super) fn data_mut(&mut self) -> &mut FuncData {
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
    pub fn external<T: Descriptor>(
        &mut self,
        name: &str,
    ) -> Result<DescriptorValue<T>, BuildError> {
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
        Ok(DescriptorValue {
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
