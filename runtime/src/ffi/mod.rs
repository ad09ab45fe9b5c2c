//! XLA's typed FFI (custom call API version 4), from Rust: the ABI mirror ([`abi`]), checked
//! views over a call frame ([`CallCx`], in `frame`), the binder that hands a kernel its
//! parameters as the op's plan says (`bind`), the entry point every generated handler calls
//! (`entry`), and eager calls without XLA (`eager`, the C ABI's `customop_call`).
//!
//! No MLIR here: a kernel cdylib uses this module alone. The `unsafe` here is at the C
//! boundary, reading what XLA passes; everything a kernel sees is checked first.

pub mod abi;
mod attr;
mod bind;
mod device;
mod dtype_name;
pub(crate) mod eager;
mod entry;
mod externals;
mod frame;
mod inplace;
mod not_bool;
mod packed;
pub mod state;
pub(crate) mod table;

pub use attr::{
    ArrayAttrElement, AttrKind, AttrLit, AttrRef, AttrValue, Dictionary, IntegerAttr, Unpacked,
};
pub use bind::{Binder, run, run_stateful};
pub use device::run_cuda;
pub use entry::handle;
pub use frame::CallCx;
pub use not_bool::NotBool;
