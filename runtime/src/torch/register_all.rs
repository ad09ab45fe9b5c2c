//! Registration from native code, for a process with no Python: every op of the library
//! defined in torch's dispatcher and given its native kernels (`customop_torch_register_all`).

use super::api::{Api, LibraryHandle};
use super::{api, attrs, c_str, register, registrations, torch_refusal};
use crate::ffi::eager::copy_message;
use crate::schema::ParamKind;
use core::ffi::c_char;
use std::sync::Mutex;

/// Defines every op of this library in torch's dispatcher (its schema, in a fragment of its
/// namespace) and registers its native CPU and Meta kernels, from native code: what a program
/// with no Python calls after loading the library (a C++ program running an AOTInductor
/// package through `torch::inductor::AOTIModelPackageLoader`, say), where Python's
/// `customop.torch.load` would otherwise do it. `libtorch` is the path of the `libtorch_cpu.so`
/// the process has loaded. Ops torch cannot call ([`torch_refusal`]), and on torch 2.9 those
/// with `str`, descriptor or list attributes (2.9 passes them to no native kernel; the Python
/// path carries them), are skipped, each named in `message`; so is an op torch has already
/// (defined by `customop.torch.load`'s Python path, or by another library). Registration is
/// atomic per op, not for the library: each op is defined and registered as a whole, and when
/// its kernels cannot be registered (an error, or a panic in customop) its definition is taken
/// back, so that no op is left defined without a kernel; the ops registered before it stay.
/// Returns the number of ops registered
/// (those registered by an earlier call count, not registered again), or -1 with the reason in
/// `message` (a panic in customop included: it does not cross into C). The definitions stay
/// for the process.
///
/// # Safety
/// `libtorch` is NUL-terminated; `message` is null or writable for `cap` bytes; torch is
/// loaded in this process.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn customop_torch_register_all(
    libtorch: *const c_char,
    message: *mut c_char,
    cap: usize,
) -> i64 {
    match crate::c_abi::guarded(|| register_all(c_str(libtorch))) {
        Ok((n, skipped)) => {
            let text = if skipped.is_empty() {
                format!("{n} ops registered")
            } else {
                format!("{n} ops registered; skipped: {}", skipped.join("; "))
            };
            // SAFETY: `message` is null or writable for `cap` bytes (the contract).
            unsafe { copy_message(message, cap, 0, text.as_bytes()) };
            i64::try_from(n).unwrap_or(i64::MAX)
        }
        Err(m) => {
            // SAFETY: as above.
            unsafe { copy_message(message, cap, 1, m.as_bytes()) };
            -1
        }
    }
}

fn register_all(libtorch: Option<&str>) -> Result<(usize, Vec<String>), String> {
    let libtorch = libtorch.ok_or("libtorch must be a UTF-8 C string")?;
    if cfg!(panic = "abort") {
        return Err("native torch kernels need a cdylib built with panic=unwind".to_string());
    }
    let api = api(libtorch)?;
    let mut skipped = Vec::new();
    let mut done = 0usize;
    let mut ops: Vec<&'static crate::schema::OpSchema> = crate::registry::ops().collect();
    ops.sort_by(|a, b| a.name.cmp(&b.name));
    for schema in ops {
        if let Some(why) = torch_refusal(schema) {
            skipped.push(why);
            continue;
        }
        if api.direct.is_none()
            && schema.params.iter().any(|p| {
                matches!(p.kind, ParamKind::Attribute { .. })
                    && attrs::carried_as_tensor(&p.kind, false)
            })
        {
            skipped.push(format!(
                "{}: torch 2.9 passes no str or list argument to a native kernel",
                schema.name
            ));
            continue;
        }
        let registered = registrations()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .libraries
            .iter()
            .any(|(n, _)| *n == schema.name);
        if !registered {
            // What `register` needs, checked before torch is told of the op.
            crate::plan::Plan::new(schema)?;
            let Some(fragment) = define(api, schema)? else {
                skipped.push(format!(
                    "{}: torch has it already (defined by customop.torch.load's Python path, \
                     or by another library)",
                    schema.name
                ));
                continue;
            };
            // All or nothing: an error (or a panic) here drops the fragment, and the definition
            // goes with the kernels that failed.
            register(Some(libtorch), Some(&schema.name), Some(&schema.name))?;
            fragment.keep();
        }
        done += 1;
    }
    Ok((done, skipped))
}

/// The fragments that define this library's ops, kept for the process.
static FRAGMENTS: Mutex<Vec<usize>> = Mutex::new(Vec::new());

/// A fragment holding one op's definition: deleted when dropped (an error returned, a panic
/// unwinding, anything before [`Fragment::keep`]), so that no op stays defined without its
/// kernels; kept for the process once they are registered.
struct Fragment {
    lib: LibraryHandle,
    /// torch's `aoti_torch_delete_library_object` ([`Api::delete_library_object`]).
    delete: unsafe extern "C" fn(LibraryHandle) -> i32,
    kept: bool,
}

impl Fragment {
    /// Keeps the definition for the process.
    fn keep(mut self) {
        self.kept = true;
        FRAGMENTS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(self.lib as usize);
    }
}

impl Drop for Fragment {
    /// Takes the definition back (torch unregisters what a deleted library registered),
    /// unless it was kept.
    fn drop(&mut self) {
        if !self.kept {
            // SAFETY: a live handle `library_init_fragment` returned, deleted once (here, as
            // the fragment goes, and only if it was not kept).
            unsafe { (self.delete)(self.lib) };
        }
    }
}

/// Defines op `schema` in torch, under its own name, with its native schema, in a fragment of
/// its namespace; `None` (nothing defined) when torch refuses the schema, which it does for an
/// op it has already.
fn define(api: &'static Api, schema: &crate::schema::OpSchema) -> Result<Option<Fragment>, String> {
    let (ns, _) = schema
        .name
        .split_once("::")
        .ok_or_else(|| format!("`{}` is not `namespace::op`", schema.name))?;
    let text = schema.native_schema_string(&schema.name);
    let short = text.get(ns.len() + 2..).unwrap_or_default();
    let c_ns = std::ffi::CString::new(ns).map_err(|e| e.to_string())?;
    let c_def = std::ffi::CString::new(short).map_err(|e| e.to_string())?;
    let mut lib: LibraryHandle = core::ptr::null_mut();
    // SAFETY: NUL-terminated strings and an out-pointer, as the shim declares; torch is loaded.
    let status =
        unsafe { (api.library_init_fragment)(c_ns.as_ptr(), c"customop".as_ptr(), 0, &mut lib) };
    if status != 0 || lib.is_null() {
        return Err(format!("torch refused a fragment for `{}`", schema.name));
    }
    let fragment = Fragment {
        lib,
        delete: api.delete_library_object,
        kept: false,
    };
    // SAFETY: a live library handle and a NUL-terminated schema.
    if unsafe { (api.library_def)(lib, c_def.as_ptr()) } != 0 {
        // Dropped: deleted.
        return Ok(None);
    }
    Ok(Some(fragment))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// The handles the fake `delete_library_object` was called with.
    static DELETED: Mutex<Vec<usize>> = Mutex::new(Vec::new());

    unsafe extern "C" fn fake_delete(lib: LibraryHandle) -> i32 {
        DELETED.lock().unwrap().push(lib as usize);
        0
    }

    fn fragment(handle: usize) -> Fragment {
        Fragment {
            lib: handle as LibraryHandle,
            delete: fake_delete,
            kept: false,
        }
    }

    fn deleted(handle: usize) -> usize {
        DELETED
            .lock()
            .unwrap()
            .iter()
            .filter(|&&h| h == handle)
            .count()
    }

    /// Between its definition and its kernels, a panic, an error returned, or a refusal leaves
    /// no op defined: the fragment is deleted once; a kept one never is.
    #[test]
    fn a_fragment_is_deleted_unless_kept_on_a_panic_or_an_error() {
        let panicked = std::panic::catch_unwind(|| {
            let _f = fragment(0x5101);
            panic!("a kernel's registration panicked");
        });
        assert!(panicked.is_err());
        assert_eq!(deleted(0x5101), 1);
        let failed = || -> Result<(), String> {
            let f = fragment(0x5102);
            Err("its kernels were refused".to_string())?;
            f.keep();
            Ok(())
        };
        assert!(failed().is_err());
        assert_eq!(deleted(0x5102), 1);
        fragment(0x5103).keep();
        assert_eq!(deleted(0x5103), 0);
        let mut kept = FRAGMENTS.lock().unwrap();
        assert!(kept.contains(&0x5103));
        kept.retain(|&h| h != 0x5103);
    }
}
