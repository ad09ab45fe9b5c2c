//! Running programs from Rust through a PJRT plugin (feature `pjrt`): XLA's CPU plugins customop
//! knows by hash ([`KnownPlugin`]: PJRT API 0.81 to 0.115, XLA FFI tables 0.2 to 0.4), any PJRT
//! plugin of those versions with the FFI extension in principle.
//!
//! ```text
//! Client::cpu(devices)  →  register_linked_ops()
//!   →  compile(&Program::text(..))  →  inputs().arg(..)?.external("name", &value)?.run()
//! ```
//!
//! The runner reads the entry function's signature (with an MLIR tokenizer) before compiling,
//! reads the compiled executable's parameters after, and checks every input against both
//! (count, element type, shape; externals by their `customop.external` annotation: descriptor
//! name, fingerprint, size); it always passes explicit compile options: the plugin aborts the
//! process on some bad input rather than returning an error. Every error the plugin does return
//! is a [`RunError::Pjrt`] with its code and message. Loading a plugin other than the verified
//! known ones is `unsafe` ([`Plugin::load`]). See the book's "Running from Rust" chapter.

#[cfg(all(test, feature = "mlir"))]
mod boundary_tests;
mod buffer;
mod cache;
mod client;
mod compile;
mod compiled_shape;
mod error;
mod executable;
mod host;
mod inputs;
mod jax_export;
mod known;
mod mlir_text;
mod plugin;
mod private_dir;
mod program;
mod register;
#[cfg(test)]
mod runner_tests;
mod sharding;
mod signature;
mod sys;
#[cfg(test)]
mod sys_layout_tests;

pub use buffer::{DeviceDescriptor, DeviceTensor};
pub use cache::{CACHE_ENV, CACHE_MAX_ENV, clear as clear_compile_cache, compile_cache_dir};
pub use client::{Client, library_manifest};
pub use error::{PjrtCode, RunError};
pub use executable::Executable;
pub use host::HostTensor;
pub use inputs::Inputs;
pub use known::{KnownPlugin, cache_dir};
pub use plugin::{API_VERSIONS, PLUGIN_ENV, Plugin, default_plugin_path};
pub use program::Program;
pub use signature::{DimSharding, ExternalSpec, MAX_MESH_DEVICES, Param, Signature};

/// For the coverage-guided fuzz targets (`runtime/fuzz/`): what the runner reads of a compiled
/// program (a serialized `HloModuleProto` or `HloModuleProtoWithConfig`), as
/// [`Client::compile`] reads it from the plugin. Not part of the API.
#[doc(hidden)]
pub fn __fuzz_compiled_program(module: &[u8]) -> Result<Vec<crate::TensorType>, RunError> {
    compiled_shape::entry_parameters(module)
}
