//! Registering custom call handlers through the plugin's own XLA FFI table (found through its
//! PJRT FFI extension), under one process-wide lock that keeps registration and compilation
//! apart.

use super::error::RunError;
use super::plugin::Plugin;
use super::sys;
use crate::ffi::abi::*;
use crate::ffi::table::{KNOWN_MINORS, table_at, take_message, trust_v2, trusted_v2};
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
    /// plugin's own `XLA_FFI_Handler_Register` (process-wide, for every client of this plugin),
    /// for XLA's execution stage only. A handler XLA refuses (one declaring an XLA FFI version
    /// the plugin's table cannot call) is an error here, never a silent drop. The same handler
    /// again is a no-op; another handler for a registered target is refused (the plugin would
    /// keep the first one and say nothing).
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
    /// instantiate stage too, where an op with `#[state]` builds it, once per call site of each
    /// executable (on every XLA FFI table from 0.2 to 0.5; on a 0.2 table, whose builds differ,
    /// the state functions are used only on the known plugin's, `xla-cpu-pjrt` 0.0.1, and an
    /// op with `#[state]` is refused with `[bad_state]` elsewhere). A target already registered
    /// for execution only (by [`Plugin::register_handler`]) stays so.
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
        // SAFETY: the registry's lock is held exclusively (the probe's contract).
        let table = unsafe { self.xla_api_locked(&mut done)? };
        // SAFETY: the caller's contract; the table is the plugin's, of a version whose
        // registration arguments customop describes.
        unsafe { self.register_through_table(table, target, handler, staged)? };
        done.insert(target.to_string(), handler as usize);
        Ok(())
    }

    /// Registers `handler` for execution through the PJRT FFI extension, which drops a handler
    /// XLA refuses without a word: only for [`api_probe`], which finds the table that registers
    /// everything else.
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

    /// The plugin's XLA FFI API table, found once by registering [`api_probe`] through the PJRT
    /// FFI extension (XLA calls it with a frame that carries the table), if it is of a version
    /// whose registration customop describes (0.2 to 0.5); an error naming what is wrong
    /// otherwise. On the known plugin whose table is 0.2 (`xla-cpu-pjrt` 0.0.1, where its state
    /// functions' layout was measured), this binary's `#[state]` uses that table's state
    /// functions.
    ///
    /// # Safety
    /// The registry's lock is held exclusively (the probe's static is read after it ran);
    /// `done` is this plugin's registered map.
    unsafe fn xla_api_locked(
        &self,
        done: &mut std::collections::HashMap<String, usize>,
    ) -> Result<&'static XLA_FFI_Api_ThreadPool, RunError> {
        let fail = |message: String| RunError::Plugin {
            path: self.path().to_path_buf(),
            message,
        };
        let api = match self.xla_api.get() {
            Some(&a) => a,
            None => {
                PROBED_API.store(core::ptr::null_mut(), Ordering::SeqCst);
                // SAFETY: `api_probe` is a handler of this library, valid for the process.
                unsafe { self.register_execute(API_PROBE_TARGET, api_probe as *mut c_void)? };
                done.insert(API_PROBE_TARGET.into(), api_probe as *const () as usize);
                let a = PROBED_API.load(Ordering::SeqCst) as usize;
                let _ = self.xla_api.set(a);
                a
            }
        };
        if api == 0 {
            return Err(fail(
                "it never handed a handler its XLA FFI table at registration, so customop \
                 cannot register handlers through it (where a refused handler is an error)"
                    .into(),
            ));
        }
        // SAFETY: the table XLA handed `api_probe`: static in the plugin, which is never
        // unloaded; its head is the same in every version.
        let head = unsafe { &*(api as *const XLA_FFI_Api) };
        let version = (
            head.api_version.major_version,
            head.api_version.minor_version,
        );
        // SAFETY: as above.
        let Some(t) = (unsafe { table_at(api as *const XLA_FFI_Api) }) else {
            return Err(fail(format!(
                "its XLA FFI table is version {}.{} ({} bytes); customop registers handlers \
                 through tables 0.{} to 0.{}",
                version.0,
                version.1,
                head.struct_size,
                KNOWN_MINORS.start(),
                KNOWN_MINORS.end()
            )));
        };
        if version.1 == 2 && self.known_as().is_some_and(|k| k.xla_ffi == (0, 2)) {
            // The known plugin's table: `#[state]` in this binary uses its state functions.
            trust_v2(api as *const XLA_FFI_Api);
        }
        Ok(t)
    }

    /// The version (major, minor) of the XLA FFI table the plugin hands handlers, once a
    /// handler was registered through it.
    pub fn xla_ffi_version(&self) -> Option<(i32, i32)> {
        let api = self.xla_api.get().copied().filter(|&a| a != 0)?;
        // SAFETY: the plugin's table, static in the plugin; its head is the same in every
        // version.
        let head = unsafe { &*(api as *const XLA_FFI_Api) };
        Some((
            head.api_version.major_version,
            head.api_version.minor_version,
        ))
    }

    /// The plugin's XLA FFI table where customop uses its state functions on a 0.2 table (the
    /// known 0.2 plugin's, once a handler was registered), for the kernel libraries' copies of
    /// customop.
    pub(super) fn trusted_xla_api(&self) -> Option<*const core::ffi::c_void> {
        let api = self.xla_api.get().copied().filter(|&a| a != 0)?;
        // SAFETY: the plugin's table, static in the plugin.
        let t = unsafe { table_at(api as *const XLA_FFI_Api) }?;
        (t.head.api_version.minor_version == 2 && trusted_v2(t))
            .then_some(api as *const core::ffi::c_void)
    }

    /// Registers `handler` through the plugin's own `XLA_FFI_Handler_Register`, for XLA's
    /// instantiate and execute stages when `staged`, else for execution only: with the 84-byte
    /// arguments of tables 0.2 and 0.3, the 92-byte ones (with `record`) of 0.4 and 0.5.
    ///
    /// # Safety
    /// As for [`Plugin::register_op_handler`] when `staged`, else
    /// [`Plugin::register_handler`]; `t` is the plugin's table, of a known minor.
    unsafe fn register_through_table(
        &self,
        t: &XLA_FFI_Api_ThreadPool,
        target: &str,
        handler: *mut c_void,
        staged: bool,
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
        let instantiate = if staged { h } else { None };
        let name = XLA_FFI_ByteSpan {
            ptr: target.as_ptr().cast(),
            len: target.len(),
        };
        let platform = XLA_FFI_ByteSpan {
            ptr: PLATFORM.as_ptr().cast(),
            len: PLATFORM.len(),
        };
        let err = if t.head.api_version.minor_version >= 4 {
            let mut args = XLA_FFI_Handler_Register_Args {
                struct_size: XLA_FFI_Handler_Register_Args::STRUCT_SIZE,
                extension_start: core::ptr::null_mut(),
                name,
                platform,
                bundle: [instantiate, None, None, h, None],
                traits: 0,
            };
            // SAFETY: the table's function with its version's arguments; the strings outlive
            // the call (XLA copies them); the handler is valid for the process.
            unsafe { register((&raw mut args).cast()) }
        } else {
            let mut args = XLA_FFI_Handler_Register_Args_V2 {
                struct_size: XLA_FFI_Handler_Register_Args_V2::STRUCT_SIZE,
                extension_start: core::ptr::null_mut(),
                name,
                platform,
                bundle: [instantiate, None, None, h],
                traits: 0,
            };
            // SAFETY: as above, with the 0.2 and 0.3 arguments.
            unsafe { register((&raw mut args).cast()) }
        };
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
    pub(super) fn xla_api_for_tests(&self) -> Result<&'static XLA_FFI_Api_ThreadPool, RunError> {
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
        let Ok(t) = self.xla_api_for_tests() else {
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
