//! Loading a PJRT plugin, calling its entry points, registering handlers through its FFI
//! extension. All `unsafe` of the runner that touches the plugin's API table is here and in
//! `exec.rs`; each block says what it relies on.

use super::error::{PjrtCode, RunError};
use super::sys::{self, Args};
use std::collections::HashMap;
use std::ffi::c_void;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

/// The PJRT API version this runner was written against (the CPU plugin's, 0.81). A plugin
/// of another major version, or older than `MIN_MINOR`, is refused before any call.
pub const API_MAJOR: i32 = 0;
/// The oldest minor version whose structs match the ones in `sys.rs`.
pub const MIN_MINOR: i32 = 81;

/// The environment variable naming the plugin library.
pub const PLUGIN_ENV: &str = "CUSTOMOP_PJRT_PLUGIN";

/// The CPU plugin's version that `scripts/setup.sh --pjrt` installs.
pub const CPU_PLUGIN_VERSION: &str = "0.0.1";

/// A loaded PJRT plugin. Plugins are never unloaded (XLA keeps threads and static state), so
/// a `Plugin` lives for the rest of the process: [`Plugin::load`] gives a `&'static Plugin`,
/// the same one for the same path.
#[derive(Debug)]
pub struct Plugin {
    path: PathBuf,
    pub(super) api: &'static sys::PJRT_Api,
    ffi: Option<&'static sys::PJRT_FFI_Extension>,
    version: (i32, i32),
    stablehlo_current: Option<Vec<i64>>,
    stablehlo_minimum: Option<Vec<i64>>,
    /// Handlers registered through this plugin: target → handler address. Registration is
    /// process-wide in the plugin, and the plugin keeps the first registration of a name
    /// silently, so the runner remembers what it registered to refuse a different second one.
    registered: Mutex<HashMap<String, usize>>,
}

// SAFETY: the API table and the FFI extension are immutable function tables that the plugin
// documents as callable from any thread; the rest is plain data behind a Mutex.
unsafe impl Send for Plugin {}
// SAFETY: as for Send: shared references only read immutable tables or lock the Mutex.
unsafe impl Sync for Plugin {}

fn loaded() -> &'static Mutex<HashMap<PathBuf, &'static Plugin>> {
    static LOADED: OnceLock<Mutex<HashMap<PathBuf, &'static Plugin>>> = OnceLock::new();
    LOADED.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Where the set-up installs the CPU plugin: `$CUSTOMOP_CACHE`, else
/// `$XDG_CACHE_HOME/customop`, else `~/.cache/customop`, then
/// `pjrt-cpu-<version>/xla_cpu_pjrt.so` (as `scripts/setup.sh --pjrt` does).
pub fn default_plugin_path() -> Option<PathBuf> {
    let cache = if let Some(c) = std::env::var_os("CUSTOMOP_CACHE") {
        PathBuf::from(c)
    } else if let Some(x) = std::env::var_os("XDG_CACHE_HOME") {
        PathBuf::from(x).join("customop")
    } else {
        PathBuf::from(std::env::var_os("HOME")?).join(".cache/customop")
    };
    Some(
        cache
            .join(format!("pjrt-cpu-{CPU_PLUGIN_VERSION}"))
            .join("xla_cpu_pjrt.so"),
    )
}

impl Plugin {
    /// The plugin named by `CUSTOMOP_PJRT_PLUGIN`, else the CPU plugin where the set-up
    /// installs it ([`default_plugin_path`]). The error names every place looked at.
    pub fn locate() -> Result<&'static Plugin, RunError> {
        let mut tried = Vec::new();
        if let Some(p) = std::env::var_os(PLUGIN_ENV) {
            let p = PathBuf::from(p);
            if p.is_file() {
                return Plugin::load(&p);
            }
            tried.push(p);
        }
        if let Some(p) = default_plugin_path() {
            if p.is_file() {
                return Plugin::load(&p);
            }
            tried.push(p);
        }
        Err(RunError::PluginNotFound { tried })
    }

    /// Loads the plugin at `path` (once per process; later calls give the same plugin),
    /// checks its API version, and initialises it. Loading runs the library's code: the path
    /// (and `CUSTOMOP_PJRT_PLUGIN`, for [`Plugin::locate`]) is trusted as a program's own
    /// executable path is; what is checked is that it is a PJRT plugin of a version this runner
    /// drives.
    pub fn load(path: &Path) -> Result<&'static Plugin, RunError> {
        let key = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
        let mut map = loaded().lock().unwrap_or_else(|e| e.into_inner());
        if let Some(p) = map.get(&key) {
            return Ok(p);
        }
        let fail = |message: String| RunError::Plugin {
            path: key.clone(),
            message,
        };
        // SAFETY: loading a shared library runs its initialisers; a PJRT plugin's are XLA's
        // static initialisers, which is what loading a plugin means. The library is never
        // unloaded (leaked below), so nothing taken from it outlives it.
        let lib = unsafe { libloading::Library::new(&key) }
            .map_err(|e| fail(format!("cannot load: {e}")))?;
        let lib: &'static libloading::Library = Box::leak(Box::new(lib));
        // SAFETY: `GetPjrtApi` is the plugin's documented entry: `const PJRT_Api* (void)`.
        let get: libloading::Symbol<'static, unsafe extern "C" fn() -> *const sys::PJRT_Api_Head> =
            unsafe { lib.get(b"GetPjrtApi\0") }
                .map_err(|e| fail(format!("not a PJRT plugin (no GetPjrtApi): {e}")))?;
        // SAFETY: calling the entry point as declared; it returns a pointer to a static table.
        let head = unsafe { get() };
        if head.is_null() {
            return Err(fail("GetPjrtApi returned null".into()));
        }
        // SAFETY: every PJRT_Api starts with this head (size, extensions, version); the
        // table is static in the plugin, which stays loaded.
        let head_ref: &'static sys::PJRT_Api_Head = unsafe { &*head };
        let version = (
            head_ref.pjrt_api_version.major_version,
            head_ref.pjrt_api_version.minor_version,
        );
        if version.0 != API_MAJOR || version.1 < MIN_MINOR {
            return Err(fail(format!(
                "PJRT API {}.{}, but this runner drives {API_MAJOR}.{MIN_MINOR} or a later 0.x",
                version.0, version.1
            )));
        }
        if head_ref.struct_size < sys::API_PREFIX_SIZE {
            return Err(fail(format!(
                "its PJRT_Api is {} bytes, shorter than the {} this runner reads",
                head_ref.struct_size,
                sys::API_PREFIX_SIZE
            )));
        }
        // SAFETY: the table is at least API_PREFIX_SIZE bytes (checked), and `PJRT_Api` is
        // the header's layout of that prefix (tests/pjrt_layout.rs).
        let api: &'static sys::PJRT_Api = unsafe { &*(head as *const sys::PJRT_Api) };
        let ffi = find_ffi_extension(api);
        let mut plugin = Plugin {
            path: key.clone(),
            api,
            ffi,
            version,
            stablehlo_current: None,
            stablehlo_minimum: None,
            registered: Mutex::new(HashMap::new()),
        };
        let mut init = sys::PJRT_Plugin_Initialize_Args::new();
        plugin.call("PJRT_Plugin_Initialize", api.plugin_initialize, &mut init)?;
        plugin.read_attributes()?;
        let plugin: &'static Plugin = Box::leak(Box::new(plugin));
        map.insert(key, plugin);
        Ok(plugin)
    }

    /// The library's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The PJRT API version the plugin implements (major, minor).
    pub fn api_version(&self) -> (i32, i32) {
        self.version
    }

    /// The newest StableHLO version the plugin reads (its `stablehlo_current_version`
    /// attribute), when it says.
    pub fn stablehlo_current_version(&self) -> Option<&[i64]> {
        self.stablehlo_current.as_deref()
    }

    /// The oldest StableHLO version the plugin reads (`stablehlo_minimum_version`).
    pub fn stablehlo_minimum_version(&self) -> Option<&[i64]> {
        self.stablehlo_minimum.as_deref()
    }

    /// Whether the plugin has the FFI extension (needed to register handlers).
    pub fn has_ffi(&self) -> bool {
        self.ffi.is_some()
    }

    fn read_attributes(&mut self) -> Result<(), RunError> {
        let mut args = sys::PJRT_Plugin_Attributes_Args::new();
        self.call(
            "PJRT_Plugin_Attributes",
            self.api.plugin_attributes,
            &mut args,
        )?;
        if args.attributes.is_null() {
            return Ok(());
        }
        // SAFETY: the plugin returned `num_attributes` named values at `attributes`, owned by
        // the plugin for its lifetime.
        let attrs = unsafe { std::slice::from_raw_parts(args.attributes, args.num_attributes) };
        for a in attrs {
            // SAFETY: `name` points at `name_size` bytes (the plugin's named value).
            let name = unsafe { bytes(a.name.cast(), a.name_size) };
            if a.type_ != sys::NAMED_VALUE_INT64_LIST {
                continue;
            }
            // SAFETY: an Int64List value's `int64_array_value` points at `value_size` i64s.
            let list = unsafe {
                let p = a.value.int64_array_value;
                if p.is_null() {
                    continue;
                }
                std::slice::from_raw_parts(p, a.value_size).to_vec()
            };
            match name {
                b"stablehlo_current_version" => self.stablehlo_current = Some(list),
                b"stablehlo_minimum_version" => self.stablehlo_minimum = Some(list),
                _ => {}
            }
        }
        Ok(())
    }

    /// Calls `f(args)` and turns a returned `PJRT_Error` into [`RunError::Pjrt`].
    pub(super) fn call<A: Args>(
        &self,
        name: &'static str,
        f: sys::Fn,
        args: &mut A,
    ) -> Result<(), RunError> {
        let Some(f) = f else {
            return Err(RunError::Plugin {
                path: self.path.clone(),
                message: format!("the plugin does not implement {name}"),
            });
        };
        // SAFETY: `f` is the plugin's entry point for `A` (the caller passes the matching
        // field of the API table), and `args` is a valid, initialised `A` with its
        // struct_size set, alive for the call.
        let err = unsafe { f((args as *mut A).cast()) };
        self.check(name, err)
    }

    /// Turns a `PJRT_Error*` (null: success) into a result, destroying the error.
    pub(super) fn check(
        &self,
        name: &'static str,
        err: *mut sys::PJRT_Error,
    ) -> Result<(), RunError> {
        if err.is_null() {
            return Ok(());
        }
        let mut message = String::from("(no message)");
        if let Some(f) = self.api.error_message {
            let mut m = sys::PJRT_Error_Message_Args::new();
            m.error = err;
            // SAFETY: `err` is a live error the plugin returned.
            unsafe { f(&mut m) };
            if !m.message.is_null() {
                // SAFETY: the message is `message_size` bytes owned by the error, read
                // before the error is destroyed below.
                message =
                    String::from_utf8_lossy(unsafe { bytes(m.message.cast(), m.message_size) })
                        .into_owned();
            }
        }
        let mut code = PjrtCode::Unknown;
        if let Some(f) = self.api.error_get_code {
            let mut c = sys::PJRT_Error_GetCode_Args::new();
            c.error = err;
            // SAFETY: as above.
            let e2 = unsafe { f(&mut c) };
            if e2.is_null() {
                code = PjrtCode::from_raw(c.code);
            } else {
                self.destroy_error(e2);
            }
        }
        self.destroy_error(err);
        Err(RunError::Pjrt {
            call: name,
            code,
            message,
        })
    }

    fn destroy_error(&self, err: *mut sys::PJRT_Error) {
        if let Some(f) = self.api.error_destroy {
            let mut d = sys::PJRT_Error_Destroy_Args::new();
            d.error = err;
            // SAFETY: `err` is a live error, destroyed once.
            unsafe { f(&mut d) };
        }
    }

    /// Awaits `event` and destroys it; its error, if any, is the result.
    pub(super) fn await_event(&self, event: *mut sys::PJRT_Event) -> Result<(), RunError> {
        if event.is_null() {
            return Ok(());
        }
        let mut a = sys::PJRT_Event_Await_Args::new();
        a.event = event;
        let result = self.call("PJRT_Event_Await", self.api.event_await, &mut a);
        self.destroy_event(event);
        result
    }

    pub(super) fn destroy_event(&self, event: *mut sys::PJRT_Event) {
        if event.is_null() {
            return;
        }
        let mut d = sys::PJRT_Event_Destroy_Args::new();
        d.event = event;
        // An error destroying an event leaves nothing to do.
        let _ = self.call("PJRT_Event_Destroy", self.api.event_destroy, &mut d);
    }

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
                path: self.path.clone(),
                message: "the plugin has no FFI extension: custom call handlers cannot be \
                          registered"
                    .into(),
            });
        };
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
                path: self.path.clone(),
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
    #[doc(hidden)]
    pub unsafe fn probe_register_handler_size(&self) -> Result<(), RunError> {
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

fn find_ffi_extension(api: &'static sys::PJRT_Api) -> Option<&'static sys::PJRT_FFI_Extension> {
    let mut ext = api.extension_start;
    let mut hops = 0;
    while !ext.is_null() && hops < 64 {
        // SAFETY: the extension chain is a static linked list in the plugin; each node
        // starts with PJRT_Extension_Base.
        let base = unsafe { &*ext };
        if base.type_ == sys::EXTENSION_TYPE_FFI
            && base.struct_size >= core::mem::size_of::<sys::PJRT_FFI_Extension>()
        {
            // SAFETY: a node of type FFI is a PJRT_FFI_Extension, at least as long as ours
            // (checked).
            return Some(unsafe { &*(ext as *const sys::PJRT_FFI_Extension) });
        }
        ext = base.next;
        hops += 1;
    }
    None
}

/// `len` bytes at `p` (empty for null).
///
/// # Safety
/// `p` must be null or point at `len` readable bytes that live as long as the result is used.
pub(super) unsafe fn bytes<'a>(p: *const u8, len: usize) -> &'a [u8] {
    if p.is_null() || len == 0 {
        return &[];
    }
    // SAFETY: this function's contract.
    unsafe { std::slice::from_raw_parts(p, len) }
}
