//! [`Module`]: the functions, externals, interned types and meshes of one program, and its
//! output as text or bytecode.

use super::ir::{External, FuncData};
use super::{BuildError, FuncBuilder, emit, sharding};
use crate::types::TensorType;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

static NEXT_MODULE_ID: AtomicU32 = AtomicU32::new(1);

/// A StableHLO module under construction.
#[derive(Debug)]
pub struct Module {
    pub(super) id: u32,
    pub(super) funcs: Vec<FuncData>,
    pub(super) entry: Option<u32>,
    pub(super) externals: Vec<External>,
    pub(super) external_by_name: HashMap<String, u32>,
    pub(super) types: HashMap<TensorType, Arc<TensorType>>,
    pub(super) meshes: Vec<sharding::Mesh>,
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
