//! Loading a PJRT plugin (unsafe, but for the verified installed one), calling its entry
//! points, registering handlers through its FFI extension under the process-wide registry
//! lock. Each `unsafe` block says what it relies on.

use super::error::{PjrtCode, RunError};
use super::known::KnownPlugin;
use super::sys::{self, Args};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

/// The PJRT API versions the runner takes: major 0, minors 81 to 115. PJRT only appends to
/// its structs and table from one minor to the next, and the runner gives and reads structs of
/// 0.81's size, which every plugin of these versions reads alike (the layout test holds
/// `sys.rs` to the headers of 0.81 and 0.114; the plugins of 0.81, 0.106 and 0.115 customop
/// knows run its tests). A plugin of any other version is refused by name before any call
/// beyond `GetPjrtApi`.
pub const API_VERSIONS: (i32, core::ops::RangeInclusive<i32>) = (0, 81..=115);

/// The environment variable naming the plugin library, for [`Plugin::locate`].
pub const PLUGIN_ENV: &str = "CUSTOMOP_PJRT_PLUGIN";

/// A loaded PJRT plugin. Plugins are never unloaded (XLA keeps threads and static state), so
/// a `Plugin` lives for the rest of the process: [`Plugin::load`] gives a `&'static Plugin`,
/// the same one for the same path.
#[derive(Debug)]
pub struct Plugin {
    path: PathBuf,
    pub(super) api: &'static sys::PJRT_Api,
    pub(super) ffi: Option<&'static sys::PJRT_FFI_Extension>,
    version: (i32, i32),
    stablehlo_current: Option<Vec<i64>>,
    stablehlo_minimum: Option<Vec<i64>>,
    /// Handlers registered through this plugin: target → handler address. Registration is
    /// process-wide in the plugin, and the plugin keeps the first registration of a name
    /// silently, so the runner remembers what it registered to refuse a different second one.
    pub(super) registered: Mutex<HashMap<String, usize>>,
    /// The address of the plugin's XLA FFI API table (0 if its probe saw none), found at the
    /// first registration of a customop handler.
    pub(super) xla_api: OnceLock<usize>,
    /// Set by [`Plugin::known`] once the file's hash is a known plugin's: only then does the
    /// runner rely on what was measured on that plugin alone (the state functions of its XLA
    /// FFI table where the table's version, 0.2, has builds of other layouts).
    pub(super) verified: OnceLock<&'static KnownPlugin>,
    /// The loaded file's (device, inode), where it could be read.
    file_id: Option<(u64, u64)>,
}

// SAFETY: a `Plugin` holds the plugin's API table and FFI extension (immutable function
// tables, static in the library, which is never unloaded), plain data, and a Mutex. The
// functions it calls through them from several threads (client creation, handler
// registration, error and event calls) were exercised from 8 threads with the CPU plugin, the
// only plugin `Client::new` accepts; handler registration is also serialised by
// `handler_registry` against every compilation in the process.
unsafe impl Send for Plugin {}
// SAFETY: as for Send.
unsafe impl Sync for Plugin {}

#[path = "plugin_installed.rs"]
mod installed;

pub use installed::default_plugin_path;
use installed::file_id;
#[cfg(test)]
use installed::{identity, stamp_path, stamp_text};

fn loaded() -> &'static Mutex<HashMap<PathBuf, &'static Plugin>> {
    static LOADED: OnceLock<Mutex<HashMap<PathBuf, &'static Plugin>>> = OnceLock::new();
    LOADED.get_or_init(|| Mutex::new(HashMap::new()))
}

impl Plugin {
    /// The plugin named by `CUSTOMOP_PJRT_PLUGIN` if it is set, else [`Plugin::installed`].
    /// A variable naming a file that does not exist or is not a PJRT plugin is an error
    /// naming the variable and the path, never a fall-back to the installed plugin.
    ///
    /// # Safety
    /// As for [`Plugin::load`]: whoever sets the variable chooses native code that this
    /// process runs; the caller vouches for it.
    ///
    /// Safe code cannot call it:
    /// ```compile_fail,E0133
    /// let p = customop::pjrt::Plugin::locate();
    /// ```
    pub unsafe fn locate() -> Result<&'static Plugin, RunError> {
        // SAFETY: this function's contract.
        unsafe { Plugin::locate_from(std::env::var_os(PLUGIN_ENV)) }
    }

    /// [`Plugin::locate`] with the variable's value given.
    ///
    /// # Safety
    /// As for [`Plugin::load`], of the path `var` names.
    unsafe fn locate_from(var: Option<std::ffi::OsString>) -> Result<&'static Plugin, RunError> {
        let Some(p) = var else {
            return Plugin::installed();
        };
        let p = PathBuf::from(p);
        if !p.is_file() {
            return Err(RunError::PluginEnv {
                path: p,
                message: "no such file".into(),
            });
        }
        // SAFETY: this function's contract.
        unsafe { Plugin::load(&p) }.map_err(|e| match e {
            RunError::Plugin { path, message } => RunError::PluginEnv { path, message },
            e => e,
        })
    }

    /// Loads the plugin at `path` (once per process; later calls give the same plugin),
    /// checks that its PJRT API version is one of [`API_VERSIONS`] and that it has the entry
    /// points the runner awaits with, and initialises it.
    ///
    /// # Safety
    /// Loading a library runs its initialisers, and the runner then calls through the table
    /// its `GetPjrtApi` returns, trusting every pointer in it: `path` must be a PJRT plugin
    /// that implements the API version it reports (as `libloading::Library::new`, this is
    /// native code the caller vouches for). Plugins other than XLA's CPU plugin are untested:
    /// [`Client::new`](super::Client::new) refuses platforms other than `cpu`.
    ///
    /// Safe code cannot call it:
    /// ```compile_fail,E0133
    /// let p = customop::pjrt::Plugin::load(std::path::Path::new("/tmp/any.so"));
    /// ```
    pub unsafe fn load(path: &Path) -> Result<&'static Plugin, RunError> {
        let key = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
        let mut map = loaded().lock().unwrap_or_else(|e| e.into_inner());
        let id = std::fs::metadata(&key).ok().map(|m| file_id(&m));
        // SAFETY: this function's contract.
        unsafe { Plugin::load_locked(&mut map, &key.clone(), key, id) }
    }

    /// [`Plugin::load`] of the library at `open` (a path, or `/proc/self/fd/N`), known as
    /// `key`, with the map of loaded plugins held.
    ///
    /// # Safety
    /// As for [`Plugin::load`].
    unsafe fn load_locked(
        map: &mut HashMap<PathBuf, &'static Plugin>,
        open: &Path,
        key: PathBuf,
        file_id: Option<(u64, u64)>,
    ) -> Result<&'static Plugin, RunError> {
        if let Some(p) = map.get(&key) {
            return Ok(p);
        }
        let fail = |message: String| RunError::Plugin {
            path: key.clone(),
            message,
        };
        // SAFETY: this function's contract: loading the plugin runs XLA's static initialisers,
        // which is what loading a plugin means. The library is dropped (unloaded) if any
        // check below fails, and kept for the process once it is used.
        let lib = unsafe { libloading::Library::new(open) }
            .map_err(|e| fail(format!("cannot load: {e}")))?;
        // SAFETY: `GetPjrtApi` is the plugin's documented entry: `const PJRT_Api* (void)`.
        let get: libloading::Symbol<'_, unsafe extern "C" fn() -> *const sys::PJRT_Api_Head> =
            unsafe { lib.get(b"GetPjrtApi\0") }
                .map_err(|e| fail(format!("not a PJRT plugin (no GetPjrtApi): {e}")))?;
        // SAFETY: calling the entry point as declared; it returns a pointer to a static table.
        let head = unsafe { get() };
        if head.is_null() {
            return Err(fail("GetPjrtApi returned null".into()));
        }
        // SAFETY: every PJRT_Api starts with this head (size, extensions, version); the
        // table is static in the plugin, which is loaded while `lib` lives.
        let (version, struct_size) = unsafe {
            let h = &*head;
            (
                (
                    h.pjrt_api_version.major_version,
                    h.pjrt_api_version.minor_version,
                ),
                h.struct_size,
            )
        };
        let (major, ref minors) = API_VERSIONS;
        if version.0 != major || !minors.contains(&version.1) {
            let newer = version.0 == major && version.1 > *minors.end();
            return Err(fail(format!(
                "it implements PJRT API {}.{}, {}; this runner takes PJRT API {major}.{} to \
                 {major}.{}",
                version.0,
                version.1,
                if newer {
                    "newer than any whose structs this runner was checked against"
                } else {
                    "which this runner does not describe"
                },
                minors.start(),
                minors.end()
            )));
        }
        if struct_size < sys::API_PREFIX_SIZE {
            return Err(fail(format!(
                "its PJRT_Api is {struct_size} bytes, shorter than the {} this runner reads",
                sys::API_PREFIX_SIZE
            )));
        }
        // SAFETY: the table is at least API_PREFIX_SIZE bytes (checked), and `PJRT_Api` is
        // the header's layout of that prefix for this version (the layout test). The
        // reference is made `'static` below only once the library is kept for good.
        let table: &sys::PJRT_Api = unsafe { &*(head as *const sys::PJRT_Api) };
        for (name, present) in [
            ("PJRT_Event_Await", table.event_await.is_some()),
            ("PJRT_Event_Destroy", table.event_destroy.is_some()),
            ("PJRT_Buffer_Destroy", table.buffer_destroy.is_some()),
            ("PJRT_Error_Destroy", table.error_destroy.is_some()),
        ] {
            if !present {
                return Err(fail(format!(
                    "it does not implement {name}, without which the runner cannot release \
                     what the plugin hands out safely"
                )));
            }
        }
        // From here on the library stays loaded for the process (its initialiser may start
        // threads; the table and everything the plugin hands out point into it).
        std::mem::forget(lib);
        // SAFETY: as above; the library is never unloaded now.
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
            xla_api: OnceLock::new(),
            verified: OnceLock::new(),
            file_id,
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

    /// The plugin by name: the known plugin it was verified as (`xla-cpu-pjrt==0.0.1`), else
    /// its path.
    pub fn describe(&self) -> String {
        match self.verified.get() {
            Some(k) => k.spec(),
            None => self.path.display().to_string(),
        }
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

pub(super) use crate::ffi::table::bytes;

/// A copy of the `size` bytes at `bytes` that the plugin handed out with `object`, then
/// `object` released by its `deleter` (if any): a serialized executable or topology.
///
/// # Safety
/// `bytes` is null or points at `size` bytes that live until `deleter` runs on `object`;
/// `deleter` is the plugin's own for `object`, not yet called.
pub(super) unsafe fn handed_out<T>(
    bytes: *const std::ffi::c_char,
    size: usize,
    object: *mut T,
    deleter: Option<unsafe extern "C" fn(*mut T)>,
) -> Vec<u8> {
    let copy = if bytes.is_null() {
        Vec::new()
    } else {
        // SAFETY: `size` bytes at `bytes`, alive until the deleter runs (the caller's promise).
        unsafe { self::bytes(bytes.cast(), size) }.to_vec()
    };
    if let Some(delete) = deleter {
        // SAFETY: the plugin's deleter for the object it handed out, called once.
        unsafe { delete(object) };
    }
    copy
}

#[cfg(test)]
#[path = "plugin_tests.rs"]
mod tests;
