//! Registering custom call handlers through the plugin's FFI extension, under one
//! process-wide lock that keeps registration and compilation apart.

use super::error::RunError;
use super::plugin::Plugin;
use super::sys;
use crate::ffi::abi::*;
use crate::ffi::table::{table_at, take_message, trust_v2};
use std::ffi::c_void;
use std::sync::RwLock;
use std::sync::atomic::{AtomicPtr, Ordering};

/// XLA's handler registry is a process-wide map without a lock of its own (in the XLA
/// versions the plugins ship): registering a handler while another thread compiles (which
/// looks handlers up) is a data race. Registration takes this lock exclusively; compiling and
/// executing take it shared. One lock for every plugin and client in the process.
pub(super) fn handler_registry() -> &'static RwLock<()> {
    static LOCK: RwLock<()> = RwLock::new(());
    &LOCK
}

/// The custom call target under which the runner registers [`api_probe`] to learn the address
/// of the plugin's XLA FFI API table (never called by a program).
const API_PROBE_TARGET: &str = "customop.xla_ffi_api_probe";

/// The API table [`api_probe`] last saw, read under the registry's exclusive lock.
static PROBED_API: AtomicPtr<XLA_FFI_Api> = AtomicPtr::new(core::ptr::null_mut());

/// A handler that records the API table of the frames it is given: XLA calls it at
/// registration with its metadata probe, whose frame carries the table (as executions'
/// frames do). It answers the probe as every customop handler does and does nothing else.
unsafe extern "C" fn api_probe(frame: *mut XLA_FFI_CallFrame) -> *mut XLA_FFI_Error {
    if !frame.is_null() {
        // SAFETY: XLA's call frame, valid for this call.
        let api = unsafe { (*frame).api };
        if !api.is_null() {
            PROBED_API.store(api.cast_mut(), Ordering::SeqCst);
        }
    }
    // SAFETY: the frame XLA passed, valid for this call.
    unsafe { crate::ffi::handle(frame, API_PROBE_TARGET, |_| Ok(())) }
}

/// The platform name handlers are registered for.
const PLATFORM: &str = "Host";

impl Plugin {
    /// Registers `handler` for custom call target `target` on the host platform, through the
    /// plugin's FFI extension (process-wide, for every client of this plugin), for XLA's
    /// execution stage only. The same handler again is a no-op; another handler for a
    /// registered target is refused (the plugin would keep the first one and say nothing).
    ///
    /// # Safety
    /// `handler` must be an XLA FFI handler, `XLA_FFI_Error* (XLA_FFI_CallFrame*)`, that stays
    /// valid for the rest of the process.
    pub unsafe fn register_handler(
        &self,
        target: &str,
        handler: *mut c_void,
    ) -> Result<(), RunError> {
        // SAFETY: the caller's contract.
        unsafe { self.register(target, handler, false) }
    }

    /// [`Plugin::register_handler`] for a handler customop generated: registered for XLA's
    /// instantiate stage too (where an op with `#[state]` builds it, once per call site of each
    /// executable), through the plugin's own XLA FFI table, when the plugin is the tested one
    /// ([`Plugin::installed`], its XLA FFI API 0.2); otherwise for execution only (states then
    /// come from the process cache). A target already registered for execution only (by
    /// [`Plugin::register_handler`]) stays so.
    ///
    /// # Safety
    /// As for [`Plugin::register_handler`], and `handler` returns at once at stages it does
    /// nothing at (as every generated handler does).
    pub(crate) unsafe fn register_op_handler(
        &self,
        target: &str,
        handler: *mut c_void,
    ) -> Result<(), RunError> {
        // SAFETY: the caller's contract.
        unsafe { self.register(target, handler, true) }
    }

    /// # Safety
    /// As for [`Plugin::register_op_handler`] when `staged`, else [`Plugin::register_handler`].
    unsafe fn register(
        &self,
        target: &str,
        handler: *mut c_void,
        staged: bool,
    ) -> Result<(), RunError> {
        if handler.is_null() {
            return Err(RunError::Input(format!(
                "the handler given for `{target}` is null"
            )));
        }
        // Exclusive: no compilation anywhere in the process looks handlers up meanwhile.
        let _registry = handler_registry()
            .write()
            .unwrap_or_else(|e| e.into_inner());
        let mut done = self.registered.lock().unwrap_or_else(|e| e.into_inner());
        match done.get(target) {
            Some(&h) if h == handler as usize => return Ok(()),
            Some(_) => {
                return Err(RunError::Input(format!(
                    "custom call target `{target}` already has another handler in this process \
                     (the plugin keeps the first registration of a name)"
                )));
            }
            None => {}
        }
        let table = if staged {
            // SAFETY: the registry's lock is held exclusively (the probe's contract).
            unsafe { self.xla_api_locked(&mut done) }
        } else {
            None
        };
        match table {
            // SAFETY: the caller's contract; the table is the plugin's, of API 0.2.
            Some(t) => unsafe { self.register_with_stages(t, target, handler)? },
            // SAFETY: the caller's contract.
            None => unsafe { self.register_execute(target, handler)? },
        }
        done.insert(target.to_string(), handler as usize);
        Ok(())
    }

    /// Registers `handler` for execution through the PJRT FFI extension.
    ///
    /// # Safety
    /// As for [`Plugin::register_handler`]; the registry's lock is held exclusively.
    unsafe fn register_execute(&self, target: &str, handler: *mut c_void) -> Result<(), RunError> {
        let Some(ffi) = self.ffi else {
            return Err(RunError::Plugin {
                path: self.path().to_path_buf(),
                message: "the plugin has no FFI extension: custom call handlers cannot be \
                          registered"
                    .into(),
            });
        };
        let Some(register) = ffi.register_handler else {
            return Err(RunError::Plugin {
                path: self.path().to_path_buf(),
                message: "the FFI extension has no register_handler".into(),
            });
        };
        let mut args = sys::PJRT_FFI_Register_Handler_Args {
            struct_size: sys::PJRT_FFI_Register_Handler_Args::STRUCT_SIZE,
            target_name: target.as_ptr().cast(),
            target_name_size: target.len(),
            handler,
            platform_name: PLATFORM.as_ptr().cast(),
            platform_name_size: PLATFORM.len(),
            traits: 0,
        };
        // SAFETY: `register` is the extension's entry point for these args (its 52-byte
        // layout, the one this plugin reads); the strings outlive the call (the plugin copies
        // them); `handler` is valid for the process (this function's contract).
        let err = unsafe { register(&mut args) };
        self.check("PJRT_FFI_Register_Handler", err)
    }

    /// The plugin's XLA FFI API table, if the plugin is the tested one (its hash checked by
    /// [`Plugin::installed`]; the 0.2 layouts were measured on it) and the table says 0.2:
    /// found once, by registering [`api_probe`] through the PJRT FFI extension (XLA calls it
    /// with a frame that carries the table). If the probe cannot be registered, none.
    ///
    /// # Safety
    /// The registry's lock is held exclusively (the probe's static is read after it ran);
    /// `done` is this plugin's registered map.
    unsafe fn xla_api_locked(
        &self,
        done: &mut std::collections::HashMap<String, usize>,
    ) -> Option<&'static XLA_FFI_Api_ThreadPool> {
        if !self.verified.load(Ordering::SeqCst) {
            return None;
        }
        let api = match self.xla_api.get() {
            Some(&a) => a,
            None => {
                PROBED_API.store(core::ptr::null_mut(), Ordering::SeqCst);
                // SAFETY: `api_probe` is a handler of this library, valid for the process.
                let probed =
                    unsafe { self.register_execute(API_PROBE_TARGET, api_probe as *mut c_void) };
                let a = match probed {
                    Ok(()) => {
                        done.insert(API_PROBE_TARGET.into(), api_probe as *const () as usize);
                        PROBED_API.load(Ordering::SeqCst) as usize
                    }
                    // No table: the caller registers for execution only.
                    Err(_) => 0,
                };
                let _ = self.xla_api.set(a);
                a
            }
        };
        // SAFETY: 0 or the table XLA handed `api_probe`: static in the plugin, which is never
        // unloaded.
        let t = unsafe { table_at(api as *const XLA_FFI_Api) }
            .filter(|t| t.head.api_version.minor_version == 2)?;
        // The verified plugin's table: `#[state]` in this binary uses its state functions.
        trust_v2(api as *const XLA_FFI_Api);
        Some(t)
    }

    /// The verified plugin's XLA FFI table, if the runner found it (a customop handler was
    /// registered with stages).
    pub(super) fn trusted_xla_api(&self) -> Option<*const core::ffi::c_void> {
        if !self.verified.load(Ordering::SeqCst) {
            return None;
        }
        self.xla_api
            .get()
            .copied()
            .filter(|&a| a != 0)
            .map(|a| a as *const core::ffi::c_void)
    }

    /// Registers `handler` for XLA's instantiate and execute stages through the plugin's own
    /// `XLA_FFI_Handler_Register` (API 0.2 arguments).
    ///
    /// # Safety
    /// As for [`Plugin::register_op_handler`]; `t` is the plugin's table, of API 0.2.
    unsafe fn register_with_stages(
        &self,
        t: &XLA_FFI_Api_ThreadPool,
        target: &str,
        handler: *mut c_void,
    ) -> Result<(), RunError> {
        let fail = |message: String| RunError::Plugin {
            path: self.path().to_path_buf(),
            message,
        };
        let Some(register) = t.handler_register else {
            return Err(fail(
                "its XLA FFI table has no XLA_FFI_Handler_Register".into(),
            ));
        };
        // SAFETY: `handler` is an XLA FFI handler (the caller's contract; `register` refused
        // null): a function of exactly this signature.
        let h = unsafe { core::mem::transmute::<*mut c_void, Option<XLA_FFI_Handler>>(handler) };
        let mut args = XLA_FFI_Handler_Register_Args_V2 {
            struct_size: XLA_FFI_Handler_Register_Args_V2::STRUCT_SIZE,
            extension_start: core::ptr::null_mut(),
            name: XLA_FFI_ByteSpan {
                ptr: target.as_ptr().cast(),
                len: target.len(),
            },
            platform: XLA_FFI_ByteSpan {
                ptr: PLATFORM.as_ptr().cast(),
                len: PLATFORM.len(),
            },
            bundle: [h, None, None, h],
            traits: 0,
        };
        // SAFETY: the 0.2 table's function with its 0.2 arguments; the strings outlive the
        // call (XLA copies them); the handler is valid for the process.
        let err = unsafe { register((&raw mut args).cast()) };
        if err.is_null() {
            return Ok(());
        }
        Err(fail(format!(
            "XLA_FFI_Handler_Register refused `{target}`: {}",
            take_message(t, err)
        )))
    }

    /// Calls the FFI extension's `register_handler` with `struct_size` set to 0, which the
    /// plugin refuses with a message naming the size it expects (used by the tests to hold
    /// `PJRT_FFI_Register_Handler_Args::STRUCT_SIZE` to the plugin's own).
    ///
    /// # Safety
    /// The plugin must check `struct_size` before reading anything else (the pinned CPU plugin
    /// does: it names the size it expects); the pointers it is given are null.
    #[cfg(test)]
    pub(super) unsafe fn probe_register_handler_size(&self) -> Result<(), RunError> {
        let Some(register) = self.ffi.and_then(|f| f.register_handler) else {
            return Ok(());
        };
        let mut args = sys::PJRT_FFI_Register_Handler_Args {
            struct_size: 0,
            target_name: core::ptr::null(),
            target_name_size: 0,
            handler: core::ptr::null_mut(),
            platform_name: core::ptr::null(),
            platform_name_size: 0,
            traits: 0,
        };
        // SAFETY: the plugin checks `struct_size` before reading anything else (it reports
        // the expected size); the pointers are never read.
        let err = unsafe { register(&mut args) };
        self.check("PJRT_FFI_Register_Handler", err)
    }
}

#[cfg(test)]
impl Plugin {
    /// The plugin's XLA FFI table (registering the probe if no customop handler was).
    pub(super) fn xla_api_for_tests(&self) -> Option<&'static XLA_FFI_Api_ThreadPool> {
        let _registry = handler_registry()
            .write()
            .unwrap_or_else(|e| e.into_inner());
        let mut done = self.registered.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: the registry's lock is held exclusively.
        unsafe { self.xla_api_locked(&mut done) }
    }

    /// The messages of the plugin's `XLA_FFI_Handler_Register`, `State_Set` and `State_Get`
    /// given arguments whose `struct_size` is 0: each names the size it expects.
    ///
    /// # Safety
    /// The plugin's XLA functions check `struct_size` before reading anything else (the
    /// pinned CPU plugin's do: they name the size they expect); every other field is zero.
    pub(super) unsafe fn probe_xla_struct_sizes(&self) -> Vec<String> {
        let Some(t) = self.xla_api_for_tests() else {
            return Vec::new();
        };
        let fns: [Option<unsafe extern "C" fn(*mut c_void) -> *mut XLA_FFI_Error>; 3] = [
            t.handler_register,
            // SAFETY: one pointer type for another: only the argument's declared type differs.
            t.state_set.map(|f| unsafe {
                core::mem::transmute::<
                    XLA_FFI_State_Set,
                    unsafe extern "C" fn(*mut c_void) -> *mut XLA_FFI_Error,
                >(f)
            }),
            // SAFETY: as above.
            t.state_get.map(|f| unsafe {
                core::mem::transmute::<
                    XLA_FFI_State_Get,
                    unsafe extern "C" fn(*mut c_void) -> *mut XLA_FFI_Error,
                >(f)
            }),
        ];
        let mut messages = Vec::new();
        for f in fns.into_iter().flatten() {
            let mut zeros = [0u64; 16];
            // SAFETY: XLA's function, which refuses a `struct_size` of 0 before reading on.
            let err = unsafe { f(zeros.as_mut_ptr().cast()) };
            messages.push(if err.is_null() {
                "(no error)".into()
            } else {
                take_message(t, err)
            });
        }
        messages
    }
}
