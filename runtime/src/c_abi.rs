//! The C ABI every binary that links customop exports, for front ends in other languages
//! (the Python helpers load it with ctypes):
//!
//! - `customop_manifest() -> const char*`: the [manifest](crate::registry::manifest_json) as
//!   NUL-terminated JSON;
//! - `customop_call(handler, args, n_args, rets, n_rets, attrs, n_attrs, message, cap)`: runs a
//!   generated handler on plain tensors without XLA ([`customop_call`]), with every check an
//!   XLA call gets;
//! - `customop_check_descriptor(name, data, len, message, cap)`: whether bytes are a packed
//!   descriptor `name` of this library (header and length), for a runtime that copies an
//!   external's bytes itself ([`customop_check_descriptor`]);
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

/// The layout of descriptor `name`, if an op of this binary takes or returns it.
fn layout_named(name: &str) -> Option<&'static crate::descriptor::Layout> {
    use crate::schema::{AttrType, ParamKind, ResultKind};
    crate::registry::ops().find_map(|op| {
        let params = op.params.iter().filter_map(|p| match &p.kind {
            ParamKind::External { descriptor, .. } => Some(descriptor),
            ParamKind::Attribute {
                ty: AttrType::Descriptor { descriptor },
            } => Some(descriptor),
            _ => None,
        });
        let results = op.results.iter().filter_map(|r| match &r.kind {
            ResultKind::Opaque { descriptor } => Some(descriptor),
            _ => None,
        });
        params.chain(results).find(|l| l.name == name)
    })
}

/// Checks that `data` (`len` bytes) is a packed descriptor `name` of this library as far as
/// its header and length say (magic, version, fingerprint, payload length): what a runtime
/// that copies an external's bytes itself (AOTInductor's constant update, which copies a
/// tensor of another size as far as it goes) checks first. Returns 0, or nonzero with the
/// reason in `message` (`descriptor `my_lib::Blob`: ... [bad_descriptor]`).
///
/// # Safety
/// `name` is NUL-terminated; `data` is readable for `len` bytes (or null with `len` 0);
/// `message` is null or writable for `cap` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn customop_check_descriptor(
    name: *const core::ffi::c_char,
    data: *const u8,
    len: usize,
    message: *mut core::ffi::c_char,
    cap: usize,
) -> i32 {
    use crate::ffi::eager::copy_message;
    let name = if name.is_null() {
        None
    } else {
        // SAFETY: non-null and NUL-terminated (the contract).
        unsafe { core::ffi::CStr::from_ptr(name) }.to_str().ok()
    };
    let Some(name) = name else {
        // SAFETY: `message` is null or writable for `cap` bytes (the contract).
        return unsafe { copy_message(message, cap, 1, b"name must be a UTF-8 C string") };
    };
    let Some(layout) = layout_named(name) else {
        let m = format!("no op of this library takes a descriptor `{name}`");
        // SAFETY: as above.
        return unsafe { copy_message(message, cap, 1, m.as_bytes()) };
    };
    let bytes = if data.is_null() || len == 0 {
        &[][..]
    } else {
        // SAFETY: readable for `len` bytes (the contract).
        unsafe { core::slice::from_raw_parts(data, len) }
    };
    match crate::descriptor::check_packed(layout, bytes) {
        Ok(()) => 0,
        Err(e) => {
            let m = format!("{e} [bad_descriptor]");
            // SAFETY: as above.
            unsafe { copy_message(message, cap, 1, m.as_bytes()) }
        }
    }
}
