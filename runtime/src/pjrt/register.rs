//! Registering custom call handlers through the plugin's FFI extension, under one
//! process-wide lock that keeps registration and compilation apart.

use super::error::RunError;
use super::plugin::Plugin;
use super::sys;
use std::ffi::c_void;
use std::sync::RwLock;

/// XLA's handler registry is a process-wide map without a lock of its own (in the XLA
/// versions the plugins ship): registering a handler while another thread compiles (which
/// looks handlers up) is a data race. Registration takes this lock exclusively; compiling and
/// executing take it shared. One lock for every plugin and client in the process.
pub(super) fn handler_registry() -> &'static RwLock<()> {
    static LOCK: RwLock<()> = RwLock::new(());
    &LOCK
}

impl Plugin {
    /// Registers `handler` for custom call target `target` on the host platform, through the
    /// plugin's FFI extension (process-wide, for every client of this plugin). The same
    /// handler again is a no-op; another handler for a registered target is refused (the
    /// plugin would keep the first one and say nothing).
    ///
    /// # Safety
    /// `handler` must be an XLA FFI handler, `XLA_FFI_Error* (XLA_FFI_CallFrame*)`, that stays
    /// valid for the rest of the process.
    pub unsafe fn register_handler(
        &self,
        target: &str,
        handler: *mut c_void,
    ) -> Result<(), RunError> {
        let Some(ffi) = self.ffi else {
            return Err(RunError::Plugin {
                path: self.path().to_path_buf(),
                message: "the plugin has no FFI extension: custom call handlers cannot be \
                          registered"
                    .into(),
            });
        };
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
        let Some(register) = ffi.register_handler else {
            return Err(RunError::Plugin {
                path: self.path().to_path_buf(),
                message: "the FFI extension has no register_handler".into(),
            });
        };
        const PLATFORM: &str = "Host";
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
        self.check("PJRT_FFI_Register_Handler", err)?;
        done.insert(target.to_string(), handler as usize);
        Ok(())
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
