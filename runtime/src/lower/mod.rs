//! The program builder: write StableHLO programs in Rust.
//!
//! A [`Module`] holds functions; a [`FuncBuilder`] appends typed ops to one of them and hands out
//! [`Value`]s that carry their [`TensorType`](crate::TensorType). Every op method computes its result type and
//! rejects misuse with a [`BuildError`] before MLIR sees anything. [`Module::to_text`] then builds
//! the module with melior in one pass, runs MLIR's verifier and prints it.
//!
//! External arguments ([`FuncBuilder::external_raw`]) are lifted to the entry function wherever
//! they are declared, and threaded through every call to the helper that uses them.
//!
//! Nothing is ever removed: an op whose results are unused (a side-effecting custom call, say)
//! stays in the printed program.

pub(crate) mod attr;
mod constant;
mod custom_call;
mod elementwise;
mod emit;
#[cfg(test)]
pub(crate) use emit::text_to_bytecode;
mod func;
mod ir;
mod module;
#[doc(hidden)]
pub mod op_call;
mod ops;
mod sharding;

pub use attr::Attr;
pub use constant::ConstantElement;
pub use custom_call::{ApiVersion, BackendConfig, CustomCall};
pub use elementwise::{BinaryOp, ReduceOp, UnaryOp};
pub use func::FuncBuilder;
pub use ir::{BuildError, DescriptorValue, External, FuncRef, Value};
pub use module::Module;
pub use ops::{Compare, DotDims};
pub use sharding::{Mesh, Sharding};

pub(crate) use ir::{Body, FuncData, OpData, ValRef};
