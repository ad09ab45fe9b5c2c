//! Native torch kernels: every kernel cdylib can register its ops' CPU and Meta kernels in
//! torch's dispatcher through torch's stable C ABI (`customop_torch_register`, which
//! `customop.torch.load` calls), so that an eager call from torch runs the op's handler with
//! no Python in between.
//!
//! The cdylib does not link torch: the functions are looked up at registration in the
//! `libtorch_cpu` the process has already loaded (`api`). A boxed kernel receives no context
//! pointer, so `#[custom_op]` generates two kernel functions per op (CPU and Meta) around a
//! static of its own ([`TorchKernels`]), which registration fills with what the kernels need:
//! there is no table of slots and no limit on the number of ops.

mod api;
mod attrs;
mod kernel;
mod packed;
mod register_all;
mod values;

use crate::ffi::eager::copy_message;
use crate::schema::{ParamKind, TensorDtype};
use api::{Api, BoxedKernel, LibraryHandle};
use core::ffi::{CStr, c_char};
use kernel::NativeOp;
use std::sync::{Mutex, OnceLock};

/// An op's native torch kernels: the two functions `#[custom_op]` generates for it (CPU and
/// Meta), and what they run, set when the op is first registered. Generated code makes one
/// static of this per op.
#[doc(hidden)]
pub struct TorchKernels {
    op: OnceLock<NativeOp>,
    cpu: BoxedKernel,
    meta: BoxedKernel,
}

impl TorchKernels {
    /// The op's kernels; `cpu` and `meta` call [`torch_kernel`] with this static.
    pub const fn new(
        cpu: unsafe extern "C-unwind" fn(*mut u64, u64, u64),
        meta: unsafe extern "C-unwind" fn(*mut u64, u64, u64),
    ) -> TorchKernels {
        TorchKernels {
            op: OnceLock::new(),
            cpu,
            meta,
        }
    }
}

/// An op's native torch kernels, submitted by generated code beside its `OpEntry`
/// ([`crate::registry::OpEntry`]): the torch layer keeps its own table, so that the registry (the
/// core) knows nothing of torch.
#[doc(hidden)]
#[derive(Debug)]
pub struct TorchEntry {
    /// The op's schema (as its `OpEntry` has it).
    pub schema: fn() -> &'static crate::schema::OpSchema,
    /// Its kernels.
    pub kernels: &'static TorchKernels,
}

inventory::collect!(TorchEntry);

/// The native torch kernels of the op named `name`, if the binary has it.
fn torch_kernels(name: &str) -> Option<&'static TorchKernels> {
    inventory::iter::<TorchEntry>
        .into_iter()
        .find(|e| (e.schema)().name == name)
        .map(|e| e.kernels)
}

impl core::fmt::Debug for TorchKernels {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("TorchKernels")
            .field("registered", &self.op.get().is_some())
            .finish()
    }
}

/// The state registration changes: the torch libraries made, each with the torch op whose
/// kernel it holds (deleting one unregisters its kernel).
struct Registrations {
    libraries: Vec<(String, usize)>,
}

impl Registrations {
    /// Deletes the torch libraries holding kernels of `name`; true when there were any.
    fn remove(&mut self, api: &Api, name: &str) -> bool {
        let before = self.libraries.len();
        self.libraries.retain(|(n, lib)| {
            if n != name {
                return true;
            }
            // SAFETY: a handle `library_init_impl` returned and nothing deleted yet (it is
            // removed from the list here).
            unsafe { (api.delete_library_object)(*lib as LibraryHandle) };
            false
        });
        self.libraries.len() != before
    }
}

fn registrations() -> &'static Mutex<Registrations> {
    static R: Mutex<Registrations> = Mutex::new(Registrations {
        libraries: Vec::new(),
    });
    &R
}

fn api(libtorch: &str) -> Result<&'static Api, String> {
    static API: OnceLock<Result<Api, String>> = OnceLock::new();
    API.get_or_init(|| Api::resolve(libtorch))
        .as_ref()
        .map_err(Clone::clone)
}

/// Runs the op of `kernels` (a generated kernel's body); on failure raises the torch
/// exception (`aoti_torch_check`), after every handle the kernel held is released.
///
/// # Safety
/// Called from an op's generated kernel, which torch's dispatcher calls with the boxed stack
/// of the op it was registered for.
#[doc(hidden)]
pub unsafe fn torch_kernel(
    kernels: &TorchKernels,
    meta: bool,
    stack: *mut u64,
    n_args: u64,
    n_outs: u64,
) {
    let Some(op) = kernels.op.get() else {
        // Unreachable (a kernel is registered only after its op is set); no `check` can be
        // called without the API, so leave the stack as it is.
        return;
    };
    let failed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: the stack is the one torch passes for this op (the contract).
        unsafe { kernel::run(op, meta, stack, n_args, n_outs) }
    }));
    let message = match failed {
        Ok(Ok(())) => return,
        Ok(Err(f)) => f.text(),
        Err(payload) => {
            // Dropped here, not while torch's exception unwinds this frame.
            drop(payload);
            format!(
                "customop[kernel:13] custom op `{}` [kernel_panic]: the native torch glue \
                 panicked",
                op.schema.name
            )
        }
    };
    let message = std::ffi::CString::new(message.replace('\0', " ")).unwrap_or_default();
    // SAFETY: the strings are NUL-terminated and live through the call; `check(false, ..)`
    // throws a c10::Error that unwinds through this `C-unwind` frame into torch, which owns
    // nothing here any more (every handle was released by `run`).
    unsafe {
        (op.api.check)(
            false,
            c"customop native kernel".as_ptr(),
            c"customop/runtime/src/torch".as_ptr(),
            0,
            message.as_ptr(),
        );
    }
}

fn c_str<'a>(p: *const c_char) -> Option<&'a str> {
    if p.is_null() {
        return None;
    }
    // SAFETY: non-null strings passed to the entry points below are NUL-terminated (their
    // contract).
    unsafe { CStr::from_ptr(p) }.to_str().ok()
}

/// Writes the native schema of op `op` (`ns::op`), named `name` (`ns::name`), into `out`
/// (NUL-terminated): the schema `customop_torch_register` needs torch to have defined for
/// `name`. Returns 0, or nonzero with the reason in `out`.
///
/// # Safety
/// `op` and `name` are NUL-terminated; `out` is null or writable for `cap` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn customop_torch_native_schema(
    op: *const c_char,
    name: *const c_char,
    out: *mut c_char,
    cap: usize,
) -> i32 {
    let (Some(op), Some(name)) = (c_str(op), c_str(name)) else {
        // SAFETY: `out` is null or writable for `cap` bytes (the contract).
        return unsafe { copy_message(out, cap, 1, b"op and name must be UTF-8 C strings") };
    };
    let text = match crate::registry::find(op) {
        Some(s) => s.native_schema_string(name),
        None => {
            let m = format!("this library has no op `{op}`");
            // SAFETY: as above.
            return unsafe { copy_message(out, cap, 1, m.as_bytes()) };
        }
    };
    if text.len() >= cap {
        // SAFETY: as above.
        return unsafe { copy_message(out, cap, 1, b"buffer too small") };
    }
    // SAFETY: as above; `text` fits.
    unsafe { copy_message(out, cap, 0, text.as_bytes()) }
}

/// Registers the native CPU and Meta kernels of op `op` (`ns::op`, an op of this library) for
/// the torch op `name` (`ns::name`, whose schema torch must already have as
/// `customop_torch_native_schema` gives it), using the torch functions of the already loaded
/// `libtorch` (the path of `libtorch_cpu.so`). Returns 0, or nonzero with the reason in
/// `message`. Registering the same `name` twice is refused.
///
/// # Safety
/// The strings are NUL-terminated; `message` is null or writable for `cap` bytes. torch
/// (2.9) is loaded in this process.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn customop_torch_register(
    libtorch: *const c_char,
    op: *const c_char,
    name: *const c_char,
    message: *mut c_char,
    cap: usize,
) -> i32 {
    let result = register(c_str(libtorch), c_str(op), c_str(name));
    match result {
        Ok(()) => 0,
        // SAFETY: `message` is null or writable for `cap` bytes (the contract).
        Err(m) => unsafe { copy_message(message, cap, 1, m.as_bytes()) },
    }
}

fn register(libtorch: Option<&str>, op: Option<&str>, name: Option<&str>) -> Result<(), String> {
    let (Some(libtorch), Some(op), Some(name)) = (libtorch, op, name) else {
        return Err("libtorch, op and name must be UTF-8 C strings".to_string());
    };
    if cfg!(panic = "abort") {
        // torch's error is a C++ exception unwinding through the kernel: with panic=abort,
        // that aborts the process.
        return Err(
            "native torch kernels need a cdylib built with panic=unwind (load with native=False)"
                .to_string(),
        );
    }
    let api = api(libtorch)?;
    let schema =
        crate::registry::find(op).ok_or_else(|| format!("this library has no op `{op}`"))?;
    let handler = crate::registry::linked_handlers()
        .into_iter()
        .find(|(s, _)| s.name == op)
        .map(|(_, h)| h)
        .ok_or_else(|| format!("op `{op}` has no handler in this library"))?;
    let kernels = torch_kernels(op)
        .ok_or_else(|| format!("op `{op}` has no native torch kernels in this library"))?;
    if let Some(why) = torch_refusal(schema) {
        return Err(why);
    }
    let plan = crate::plan::Plan::new(schema)?;
    let (ns, short) = name
        .split_once("::")
        .ok_or_else(|| format!("`{name}` is not `namespace::op`"))?;
    let mut reg = registrations().lock().unwrap_or_else(|e| e.into_inner());
    if reg.libraries.iter().any(|(n, _)| n == name) {
        return Err(format!(
            "`{name}` already has native kernels in this process"
        ));
    }
    // What the kernels run: set once (a later registration of the op, under another name or
    // after an unregistration, finds the same op, plan, handler and torch).
    let _ = kernels.op.get_or_init(|| NativeOp {
        schema,
        plan,
        handler,
        api,
    });
    let c_ns = std::ffi::CString::new(ns).map_err(|e| e.to_string())?;
    let c_short = std::ffi::CString::new(short).map_err(|e| e.to_string())?;
    let result = register_keys(&mut reg, api, kernels, name, &c_ns, &c_short);
    if result.is_err() {
        // All or nothing: a CPU kernel registered before the Meta one failed goes again.
        reg.remove(api, name);
    }
    result
}

/// Registers the CPU and Meta kernels of `name`, recording each library made in `reg`.
fn register_keys(
    reg: &mut Registrations,
    api: &'static Api,
    kernels: &TorchKernels,
    name: &str,
    c_ns: &CStr,
    c_short: &CStr,
) -> Result<(), String> {
    for (key, kernel) in [(c"CPU", kernels.cpu), (c"Meta", kernels.meta)] {
        let mut lib: LibraryHandle = core::ptr::null_mut();
        // SAFETY: NUL-terminated strings and an out-pointer, as the shim declares; torch is
        // loaded (`api` resolved from it).
        let status = unsafe {
            (api.library_init_impl)(
                c_ns.as_ptr(),
                key.as_ptr(),
                c"customop".as_ptr(),
                0,
                &mut lib,
            )
        };
        if status != 0 || lib.is_null() {
            return Err(format!("torch refused a library for `{name}` ({key:?})"));
        }
        reg.libraries.push((name.to_string(), lib as usize));
        // SAFETY: a live library handle, a NUL-terminated op name, a kernel of the boxed
        // signature (generated for this op, whose `TorchKernels` is set).
        let status = unsafe { (api.library_impl)(lib, c_short.as_ptr(), kernel) };
        if status != 0 {
            return Err(format!(
                "torch refused the {key:?} kernel of `{name}` (is its schema defined?)"
            ));
        }
    }
    Ok(())
}

/// 1 when the running torch (its `libtorch_cpu` at `libtorch`) passes `str` and list arguments
/// straight to a native kernel (torch 2.10 and later), so that an op with string, descriptor or
/// array attributes is registered under its own schema; 0 when they travel as tensors through
/// a hidden op (torch 2.9); -1 when the torch API cannot be used (then registration fails too).
///
/// # Safety
/// `libtorch` is NUL-terminated; torch is loaded in this process.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn customop_torch_direct(libtorch: *const c_char) -> i32 {
    let Some(libtorch) = c_str(libtorch) else {
        return -1;
    };
    match api(libtorch) {
        Ok(api) => i32::from(api.direct.is_some()),
        Err(_) => -1,
    }
}

/// Unregisters the native kernels registered for the torch op `name` (`ns::name`) by
/// `customop_torch_register`, so that `customop.torch` can undo an op whose registration failed
/// at a later step, and register it again later. Returns 0 when it had kernels, 1 when not.
///
/// # Safety
/// `libtorch` and `name` are NUL-terminated; torch is loaded in this process.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn customop_torch_unregister(
    libtorch: *const c_char,
    name: *const c_char,
) -> i32 {
    let (Some(libtorch), Some(name)) = (c_str(libtorch), c_str(name)) else {
        return 1;
    };
    let Ok(api) = api(libtorch) else {
        return 1;
    };
    let mut reg = registrations().lock().unwrap_or_else(|e| e.into_inner());
    if reg.remove(api, name) { 0 } else { 1 }
}

/// Why torch cannot run op `schema`, if it cannot: a dictionary of attributes (`#[attrs]`)
/// has no torch schema type (a FunctionSchema lists its arguments one by one).
pub(crate) fn torch_refusal(schema: &crate::schema::OpSchema) -> Option<String> {
    let dictionary = schema
        .params
        .iter()
        .find(|p| matches!(p.kind, ParamKind::Attributes))
        .map(|p| {
            format!(
                "{}: torch cannot call this op: its `#[attrs] {}` takes every attribute of the \
                 call as a dictionary, which a torch schema cannot express (call it from JAX or \
                 the Rust runner)",
                schema.name, p.name
            )
        });
    let no_tensor = (!schema.params.iter().any(|p| {
        matches!(
            p.kind,
            ParamKind::Tensor { .. } | ParamKind::External { .. }
        )
    }))
    .then(|| {
        format!(
            "{}: torch cannot call this op: it takes no tensor, and torch's dispatcher picks a \
             kernel by its tensors' devices",
            schema.name
        )
    });
    dictionary.or(no_tensor).or_else(|| {
        schema.params.iter().find_map(|p| match &p.kind {
            ParamKind::Tensor {
                dtype: TensorDtype::Var { name, allowed },
                ..
            } if allowed.iter().filter(|e| packed::held_as_bytes(**e)).count() > 1 => Some(format!(
                "{}: torch cannot call this op: its type parameter {name} may be {}, which torch \
                 holds alike, as uint8 bytes, so that a call cannot say which",
                schema.name,
                allowed
                    .iter()
                    .filter(|e| packed::held_as_bytes(**e))
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
            _ => None,
        })
    })
}
