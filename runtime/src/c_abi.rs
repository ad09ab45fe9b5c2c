//! The C ABI every binary that links customop exports, for front ends in other languages
//! (the Python helpers load it with ctypes):
//!
//! - `customop_manifest() -> const char*`: the [manifest](crate::registry::manifest_json) as
//!   NUL-terminated JSON;
//! - `customop_call(handler, args, n_args, rets, n_rets, attrs, n_attrs, message, cap)`: runs a
//!   generated handler on plain tensors without XLA ([`customop_call`]), with every check an
//!   XLA call gets;
//! - `customop_handler_<target>(XLA_FFI_CallFrame*)`: each op's XLA FFI handler (generated).

use std::ffi::CString;

pub use crate::ffi::eager::{CallAttr, CallTensor, customop_call};

/// The manifest as a NUL-terminated JSON string, owned by the library (valid until it is
/// unloaded).
#[unsafe(no_mangle)]
pub extern "C" fn customop_manifest() -> *const core::ffi::c_char {
    static MANIFEST: std::sync::OnceLock<CString> = std::sync::OnceLock::new();
    MANIFEST
        .get_or_init(|| CString::new(crate::registry::manifest_json()).unwrap_or_default())
        .as_ptr()
}
