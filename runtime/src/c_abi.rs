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
//! - `customop_descriptor_pack(name, json, len, out, cap, written, message, message_cap)` and
//!   `customop_descriptor_unpack(name, data, len, out, cap, written, message, message_cap)`: a
//!   descriptor of this library packed from a JSON value, and unpacked into one
//!   ([`crate::descriptor::pack_value`], [`crate::descriptor::unpack_value`]): Python's
//!   `lib.pack` and `lib.unpack`, so that every front end packs with the one Rust definition;
//! - `customop_cpu_level() -> const char*`: the vector instructions this library's kernels take
//!   in this process ([`crate::cpu::level`]: `avx512`, `avx2` or `portable`);
//! - `customop_handler_<target>(XLA_FFI_CallFrame*)`: each op's XLA FFI handler (generated).

use crate::ffi::eager::copy_message;
use core::ffi::c_char;
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

/// The level of vector instructions kernels take in this process ([`crate::cpu::level`]), as a
/// static NUL-terminated name: `avx512`, `avx2` or `portable`.
#[unsafe(no_mangle)]
pub extern "C" fn customop_cpu_level() -> *const core::ffi::c_char {
    match crate::cpu::level() {
        crate::cpu::Level::Avx512 => c"avx512".as_ptr(),
        crate::cpu::Level::Avx2 => c"avx2".as_ptr(),
        crate::cpu::Level::Portable => c"portable".as_ptr(),
    }
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
    name: *const c_char,
    data: *const u8,
    len: usize,
    message: *mut c_char,
    cap: usize,
) -> i32 {
    // SAFETY: NUL-terminated or null (the contract).
    let name = unsafe { c_str(name) };
    // SAFETY: readable for `len` bytes, or null with `len` 0 (the contract).
    let bytes = unsafe { bytes_at(data, len) };
    let result = guarded(|| {
        let layout = layout_of(name)?;
        crate::descriptor::check_packed(layout, bytes).map_err(|e| format!("{e} [bad_descriptor]"))
    });
    // SAFETY: `message` is null or writable for `cap` bytes (the contract).
    unsafe { report(result.map(|()| 0), message, cap) }
}

/// `len` bytes at `data` (none when `data` is null or `len` 0).
///
/// # Safety
/// `data` is null or readable for `len` bytes, for `'a`.
unsafe fn bytes_at<'a>(data: *const u8, len: usize) -> &'a [u8] {
    if data.is_null() || len == 0 {
        &[]
    } else {
        // SAFETY: readable for `len` bytes (the contract).
        unsafe { core::slice::from_raw_parts(data, len) }
    }
}

/// The layout of descriptor `name` (a C string already read) of this library, or why not.
fn layout_of(name: Option<&str>) -> Result<&'static crate::descriptor::Layout, String> {
    let name = name.ok_or("name must be a UTF-8 C string")?;
    layout_named(name).ok_or_else(|| format!("no op of this library takes a descriptor `{name}`"))
}

/// `f`'s result, a panic in it an error: no unwinding crosses the C boundary.
pub(crate) fn guarded<T>(f: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|panic| {
        let what = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic".to_string());
        Err(format!(
            "customop panicked: {what} (a bug: please report it)"
        ))
    })
}

/// The status of an entry point: its code, or 1 with the error in `message`.
///
/// # Safety
/// `message` is null or writable for `cap` bytes.
unsafe fn report(result: Result<i32, String>, message: *mut c_char, cap: usize) -> i32 {
    match result {
        Ok(code) => code,
        // SAFETY: the caller's contract.
        Err(m) => unsafe { copy_message(message, cap, 1, m.as_bytes()) },
    }
}

/// Copies `bytes` into `out` (`cap` bytes) and their count into `*written`: 0, or 2 (nothing
/// copied) when they do not fit, with `*written` the size needed.
///
/// # Safety
/// `out` is null or writable for `cap` bytes; `written` is null or writable.
unsafe fn deliver(bytes: &[u8], out: *mut u8, cap: usize, written: *mut usize) -> i32 {
    if !written.is_null() {
        // SAFETY: writable (the contract).
        unsafe { *written = bytes.len() };
    }
    if bytes.len() > cap || (out.is_null() && !bytes.is_empty()) {
        return 2;
    }
    if !bytes.is_empty() {
        // SAFETY: `out` is writable for `cap >= bytes.len()` bytes (the contract).
        unsafe { core::ptr::copy_nonoverlapping(bytes.as_ptr(), out, bytes.len()) };
    }
    0
}

/// Packs descriptor `name` of this library from `json` (`len` bytes of UTF-8: a JSON value as
/// [`crate::descriptor::pack_value`] takes it; non-finite floats as `"inf"`, `"-inf"`,
/// `"nan"`), into `out` (`cap` bytes). Returns 0 with the byte count in `*written`; 2 when
/// `cap` is too small (nothing written; `*written` the size needed); 1 with the reason in
/// `message` (`descriptor `my_lib::Blob`, field `tag`: ...`).
///
/// # Safety
/// `name` is NUL-terminated; `json` is readable for `len` bytes; `out` is null or writable for
/// `cap` bytes; `written` is null or writable; `message` is null or writable for
/// `message_cap` bytes.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn customop_descriptor_pack(
    name: *const c_char,
    json: *const u8,
    len: usize,
    out: *mut u8,
    cap: usize,
    written: *mut usize,
    message: *mut c_char,
    message_cap: usize,
) -> i32 {
    let pack = |layout: &'static crate::descriptor::Layout, text: &[u8]| {
        let value: serde_json::Value = serde_json::from_slice(text)
            .map_err(|e| format!("descriptor `{}`: the value is not JSON: {e}", layout.name))?;
        crate::descriptor::pack_value(layout, &value).map_err(|e| e.to_string())
    };
    // SAFETY: the caller's contract is `descriptor_call`'s.
    unsafe {
        descriptor_call(
            name,
            json,
            len,
            pack,
            (out, cap, written),
            (message, message_cap),
        )
    }
}

/// The descriptor entry points' common part: `f` on descriptor `name`'s layout and the `len`
/// input bytes, its output delivered into `out` (`cap` bytes, the count in `*written`), its
/// error or panic into `message`.
///
/// # Safety
/// `name` is null or NUL-terminated; `input` is readable for `len` bytes; `out` is null or
/// writable for `cap` bytes; `written` is null or writable; `message` is null or writable for
/// `message_cap` bytes.
unsafe fn descriptor_call(
    name: *const c_char,
    input: *const u8,
    len: usize,
    f: impl FnOnce(&'static crate::descriptor::Layout, &[u8]) -> Result<Vec<u8>, String>,
    (out, cap, written): (*mut u8, usize, *mut usize),
    (message, message_cap): (*mut c_char, usize),
) -> i32 {
    // SAFETY: NUL-terminated or null (the contract).
    let name = unsafe { c_str(name) };
    // SAFETY: readable for `len` bytes (the contract).
    let input = unsafe { bytes_at(input, len) };
    let result = guarded(|| f(layout_of(name)?, input)).map(|bytes| {
        // SAFETY: `out` and `written` as the contract says.
        unsafe { deliver(&bytes, out, cap, written) }
    });
    // SAFETY: `message` is null or writable for `message_cap` bytes (the contract).
    unsafe { report(result, message, message_cap) }
}

/// Unpacks `data` (`len` bytes) as descriptor `name` of this library, every byte checked, into
/// JSON text in `out` (`cap` bytes; floats JSON cannot write as `"inf"`, `"-inf"`, `"nan"`).
/// Returns as [`customop_descriptor_pack`] does; the reason names the descriptor, the field and
/// the kind (`[bad_descriptor]`).
///
/// # Safety
/// As [`customop_descriptor_pack`], with `data` readable for `len` bytes.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn customop_descriptor_unpack(
    name: *const c_char,
    data: *const u8,
    len: usize,
    out: *mut u8,
    cap: usize,
    written: *mut usize,
    message: *mut c_char,
    message_cap: usize,
) -> i32 {
    let unpack = |layout: &'static crate::descriptor::Layout, bytes: &[u8]| {
        let value = crate::descriptor::unpack_value(layout, bytes)
            .map_err(|e| format!("{e} [bad_descriptor]"))?;
        Ok(value.to_string().into_bytes())
    };
    // SAFETY: the caller's contract is `descriptor_call`'s.
    unsafe {
        descriptor_call(
            name,
            data,
            len,
            unpack,
            (out, cap, written),
            (message, message_cap),
        )
    }
}

/// The C string at `p`, if it is one and UTF-8.
///
/// # Safety
/// `p` is null or NUL-terminated.
unsafe fn c_str<'a>(p: *const c_char) -> Option<&'a str> {
    if p.is_null() {
        return None;
    }
    // SAFETY: non-null and NUL-terminated (the contract).
    unsafe { core::ffi::CStr::from_ptr(p) }.to_str().ok()
}
