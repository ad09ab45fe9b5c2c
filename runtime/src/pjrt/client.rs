//! Clients of a plugin: creating one (CPU only, the platform the runner is tested with), and
//! registering handlers, from this binary or from kernel libraries.

use super::cache::{Cache, CacheSlot};
use super::error::RunError;
use super::plugin::{Plugin, bytes, handed_out};
use super::sys::{self, Args};
use std::ffi::c_void;
use std::path::Path;
use std::sync::Arc;

pub(super) struct ClientInner {
    pub(super) plugin: &'static Plugin,
    pub(super) raw: *mut sys::PJRT_Client,
    pub(super) devices: Vec<*mut sys::PJRT_Device>,
    pub(super) platform: String,
    /// The client's topology as the plugin serializes it, read once (for the compile cache).
    pub(super) topology: std::sync::OnceLock<Option<Vec<u8>>>,
    /// Whether `register_linked_ops` was called and found no op in the binary (said when a
    /// program then calls a target with no handler).
    pub(super) linked_none: std::sync::atomic::AtomicBool,
}

// SAFETY: the client is only ever XLA's CPU client (`Client::new` refuses other platforms),
// whose compile, upload, execute and destroy calls the runner's tests make from 8 threads at
// once on shared clients, executables and buffers; PJRT's header promises thread safety only
// for its key-value callbacks, so the claim rests on those tests and is not made for other
// plugins. The device pointers are owned by the client and immutable.
unsafe impl Send for ClientInner {}
// SAFETY: as for Send.
unsafe impl Sync for ClientInner {}

impl Drop for ClientInner {
    fn drop(&mut self) {
        let mut d = sys::PJRT_Client_Destroy_Args::new();
        d.client = self.raw;
        // Nothing to do with an error while dropping.
        let _ = self.plugin.call(
            "PJRT_Client_Destroy",
            self.plugin.api.client_destroy,
            &mut d,
        );
    }
}

/// A PJRT client: the devices of one plugin, for compiling and running programs. Cheap to
/// clone (shared); destroyed with its last clone and executable.
#[derive(Clone)]
pub struct Client {
    pub(super) inner: Arc<ClientInner>,
    /// The compile cache, if this client uses one.
    pub(super) compile_cache: Option<Arc<CacheSlot>>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("plugin", &self.inner.plugin.path())
            .field("platform", &self.inner.platform)
            .field("devices", &self.inner.devices.len())
            .field("compile_cache", &self.compile_cache)
            .finish()
    }
}

impl Client {
    /// The most devices a client is asked for (each CPU device is a set of threads and
    /// buffers in this process).
    pub const MAX_DEVICES: usize = 256;

    /// A client of the default plugin the set-up installed ([`Plugin::installed`], checked by
    /// its hash) with `devices` devices. When `CUSTOMOP_PJRT_PLUGIN` is set this is an error
    /// naming it rather than a silent choice between the two: load the configured plugin
    /// with the unsafe [`Plugin::locate`] and give it to [`Client::new`].
    pub fn cpu(devices: usize) -> Result<Client, RunError> {
        if let Some(p) = std::env::var_os(super::plugin::PLUGIN_ENV) {
            return Err(RunError::PluginEnv {
                path: p.into(),
                message: "`Client::cpu` loads only the installed CPU plugin, checked by its \
                          hash; to run on the plugin this variable names, call the unsafe \
                          `Plugin::locate()` and `Client::new`, or unset the variable"
                    .into(),
            });
        }
        Client::new(Plugin::installed()?, devices)
    }

    /// A client of the known plugin `plugin` ([`Plugin::known`], checked by its hash) with
    /// `devices` devices.
    pub fn known(plugin: &'static super::KnownPlugin, devices: usize) -> Result<Client, RunError> {
        Client::new(Plugin::known(plugin)?, devices)
    }

    /// A client of `plugin` with `devices` devices (the CPU plugin's `cpu_device_count`
    /// option; it has 4 by default), between 1 and [`Client::MAX_DEVICES`]. Fails unless the
    /// client has at least that many.
    pub fn new(plugin: &'static Plugin, devices: usize) -> Result<Client, RunError> {
        if devices == 0 || devices > Client::MAX_DEVICES {
            return Err(RunError::Input(format!(
                "a client has 1 to {} devices, not {devices}",
                Client::MAX_DEVICES
            )));
        }
        const OPTION: &str = "cpu_device_count";
        let mut opt = sys::PJRT_NamedValue::new();
        opt.name = OPTION.as_ptr().cast();
        opt.name_size = OPTION.len();
        opt.type_ = sys::NAMED_VALUE_INT64;
        opt.value = sys::NamedValueUnion {
            int64_value: devices as i64,
        };
        opt.value_size = 1;
        let mut args = sys::PJRT_Client_Create_Args::new();
        args.create_options = &opt;
        args.num_options = 1;
        plugin.call("PJRT_Client_Create", plugin.api.client_create, &mut args)?;
        let mut inner = ClientInner {
            plugin,
            raw: args.client,
            devices: Vec::new(),
            platform: String::new(),
            topology: std::sync::OnceLock::new(),
            linked_none: std::sync::atomic::AtomicBool::new(false),
        };
        let mut p = sys::PJRT_Client_PlatformName_Args::new();
        p.client = inner.raw;
        plugin.call(
            "PJRT_Client_PlatformName",
            plugin.api.client_platform_name,
            &mut p,
        )?;
        // SAFETY: the platform name is `platform_name_size` bytes owned by the client.
        inner.platform =
            String::from_utf8_lossy(unsafe { bytes(p.platform_name.cast(), p.platform_name_size) })
                .into_owned();
        // The runner's thread-safety (Send/Sync) and its reading of outputs in place were
        // tested with the CPU plugin only.
        if inner.platform != "cpu" {
            return Err(RunError::Plugin {
                path: plugin.path().to_path_buf(),
                message: format!(
                    "its platform is `{}`; the runner is tested with XLA's CPU plugin (`cpu`) \
                     only",
                    inner.platform
                ),
            });
        }
        let mut d = sys::PJRT_Client_AddressableDevices_Args::new();
        d.client = inner.raw;
        plugin.call(
            "PJRT_Client_AddressableDevices",
            plugin.api.client_addressable_devices,
            &mut d,
        )?;
        if !d.addressable_devices.is_null() {
            // SAFETY: the client owns `num_addressable_devices` device pointers at
            // `addressable_devices` for its lifetime.
            inner.devices = unsafe {
                std::slice::from_raw_parts(d.addressable_devices, d.num_addressable_devices)
            }
            .to_vec();
        }
        if inner.devices.len() < devices {
            return Err(RunError::Input(format!(
                "asked for {devices} devices, but the {} client has {}",
                inner.platform,
                inner.devices.len()
            )));
        }
        inner.devices.truncate(devices);
        // The cache keys entries by the plugin's hash: only a known plugin's is known.
        let compile_cache = plugin
            .known_as()
            .and_then(|_| super::cache::compile_cache_dir())
            .map(|dir| Arc::new(CacheSlot::new(dir)));
        Ok(Client {
            inner: Arc::new(inner),
            compile_cache,
        })
    }

    /// This client with its compile cache in `dir`, or with none. A client of a known plugin
    /// ([`Plugin::known`]) starts with the cache of [`compile_cache_dir`]
    /// (`CUSTOMOP_COMPILE_CACHE`, else `compiled/` in customop's cache); a client of a plugin
    /// loaded with [`Plugin::load`] has none (its hash is not known, and blobs of two builds of
    /// a plugin load into each other without a word), and this gives it none either.
    ///
    /// The folder must be the user's own, as for the plugin: see [`Client::compile_cache_refusal`].
    ///
    /// [`compile_cache_dir`]: super::compile_cache_dir
    pub fn with_compile_cache(mut self, dir: Option<std::path::PathBuf>) -> Client {
        self.compile_cache = dir
            .filter(|_| self.inner.plugin.known_as().is_some())
            .map(|dir| Arc::new(CacheSlot::new(dir)));
        self
    }

    /// The compile cache's folder, if this client uses one.
    pub fn compile_cache(&self) -> Option<&Path> {
        self.compile_cache.as_deref().map(CacheSlot::dir)
    }

    /// Why the compile cache's folder is not used, if it is not: it is created (mode 0700)
    /// when missing, and refused when it or a folder above it belongs to another user or can
    /// be written by others (as ssh refuses its own folder), or when its key
    /// (`.customop-key`) is not this user's alone. A refused folder is named on stderr once,
    /// and programs are compiled without a cache. (Opens the folder if no compile has yet.)
    pub fn compile_cache_refusal(&self) -> Option<&str> {
        self.compile_cache.as_deref()?.get().err()
    }

    /// The compile cache, if this client has one and its folder is trusted.
    pub(super) fn cache(&self) -> Option<&Cache> {
        self.compile_cache.as_deref()?.get().ok()
    }

    /// The plugin.
    pub fn plugin(&self) -> &'static Plugin {
        self.inner.plugin
    }

    /// The platform's name (`cpu`).
    pub fn platform(&self) -> &str {
        &self.inner.platform
    }

    /// The number of devices this client uses.
    pub fn device_count(&self) -> usize {
        self.inner.devices.len()
    }

    /// Registers the handler of every `#[custom_op]` linked into this binary (from every
    /// crate), and returns their targets, sorted. A kernel crate the binary names nothing of is
    /// not linked (`use my_ops as _;` links it): when this finds no op and a program then calls
    /// a target with no handler, the compile's [`RunError::MissingHandlers`] says so.
    pub fn register_linked_ops(&self) -> Result<Vec<String>, RunError> {
        let mut targets = Vec::new();
        for (schema, handler) in crate::registry::linked_handlers() {
            // SAFETY: `handler` is a generated XLA FFI handler, a function of this binary
            // (valid for the process).
            unsafe {
                self.inner
                    .plugin
                    .register_op_handler(&schema.target, handler as *mut c_void)?
            };
            targets.push(schema.target.clone());
        }
        targets.sort();
        self.inner
            .linked_none
            .store(targets.is_empty(), std::sync::atomic::Ordering::Relaxed);
        Ok(targets)
    }

    /// Loads a customop kernel cdylib (never unloaded), and registers the handler of every op
    /// in its manifest (`customop_manifest`). Returns their targets, sorted.
    ///
    /// # Safety
    /// `path` must be a kernel library built with customop (or one whose
    /// `customop_manifest()` is as truthful): every `handler_symbol` its manifest names must be
    /// an XLA FFI handler that, as customop's do, returns at once at the stages it does
    /// nothing at (they are registered for XLA's instantiate stage too). Loading the library
    /// runs its initialisers.
    pub unsafe fn register_library(&self, path: &Path) -> Result<Vec<String>, RunError> {
        let fail = |message: String| RunError::Library {
            path: path.to_path_buf(),
            message,
        };
        let lib = load_library(path)?;
        let json = manifest_of(lib, path)?;
        let ops = json["ops"]
            .as_array()
            .ok_or_else(|| fail("the manifest has no `ops`".into()))?;
        let mut targets = Vec::new();
        for op in ops {
            let (Some(target), Some(symbol)) =
                (op["target"].as_str(), op["handler_symbol"].as_str())
            else {
                return Err(fail(format!(
                    "a manifest entry lacks target or symbol: {op}"
                )));
            };
            let mut name = symbol.as_bytes().to_vec();
            name.push(0);
            // SAFETY: the manifest says the symbol is the op's XLA FFI handler; taken as a
            // plain address here and registered as such.
            let sym: libloading::Symbol<'static, *mut c_void> = unsafe { lib.get(&name) }
                .map_err(|e| fail(format!("handler `{symbol}` of `{target}`: {e}")))?;
            // SAFETY: a generated handler of a library that stays loaded (it returns at once
            // at the stages it does nothing at).
            unsafe { self.inner.plugin.register_op_handler(target, *sym)? };
            targets.push(target.to_string());
        }
        // The library's own copy of customop learns the verified plugin's table, so that its
        // `#[state]` ops use the table's state functions (a library without the symbol, from
        // an older customop, keeps the process cache).
        if let Some(api) = self.inner.plugin.trusted_xla_api() {
            type Trust = unsafe extern "C" fn(*const c_void);
            // SAFETY: the symbol customop's runtime exports with this signature.
            if let Ok(trust) = unsafe { lib.get::<Trust>(b"customop_trust_xla_ffi_table_v2\0") } {
                // SAFETY: `api` is the verified plugin's table, which lives for the process.
                unsafe { trust(api) };
            }
        }
        targets.sort();
        Ok(targets)
    }

    /// Registers one handler by target and symbol from a library (a hand-written C handler,
    /// say), loading the library if needed (never unloaded).
    ///
    /// # Safety
    /// `symbol` must be an XLA FFI handler (`XLA_FFI_Error* (XLA_FFI_CallFrame*)`).
    pub unsafe fn register_symbol(
        &self,
        library: &Path,
        target: &str,
        symbol: &str,
    ) -> Result<(), RunError> {
        let fail = |message: String| RunError::Library {
            path: library.to_path_buf(),
            message,
        };
        let lib = load_library(library)?;
        let mut name = symbol.as_bytes().to_vec();
        name.push(0);
        // SAFETY: this function's contract: the symbol is a handler.
        let sym: libloading::Symbol<'static, *mut c_void> =
            unsafe { lib.get(&name) }.map_err(|e| fail(format!("`{symbol}`: {e}")))?;
        // SAFETY: this function's contract; the library stays loaded.
        unsafe { self.inner.plugin.register_handler(target, *sym) }
    }
}

impl ClientInner {
    /// The client's topology as the plugin serializes it (the CPU it compiles for), read once.
    pub(super) fn topology(&self) -> Option<&[u8]> {
        self.topology
            .get_or_init(|| read_topology(self).ok())
            .as_deref()
    }
}

/// `PJRT_Client_TopologyDescription`, then `PJRT_TopologyDescription_Serialize` (the topology
/// is the client's; the serialized bytes are released by their deleter).
fn read_topology(client: &ClientInner) -> Result<Vec<u8>, RunError> {
    let plugin = client.plugin;
    let mut t = sys::PJRT_Client_TopologyDescription_Args::new();
    t.client = client.raw;
    plugin.call(
        "PJRT_Client_TopologyDescription",
        plugin.api.client_topology_description,
        &mut t,
    )?;
    let mut s = sys::PJRT_TopologyDescription_Serialize_Args::new();
    s.topology = t.topology;
    let result = plugin.call(
        "PJRT_TopologyDescription_Serialize",
        plugin.api.topology_description_serialize,
        &mut s,
    );
    // SAFETY: what the call above handed out (null pointers when it failed).
    let bytes = unsafe {
        handed_out(
            s.serialized_bytes,
            s.serialized_bytes_size,
            s.serialized_topology,
            s.serialized_topology_deleter,
        )
    };
    let bytes = result.map(|()| bytes);
    let bytes = bytes?;
    if bytes.is_empty() {
        return Err(RunError::Plugin {
            path: plugin.path().to_path_buf(),
            message: "its serialized topology is empty".into(),
        });
    }
    Ok(bytes)
}

/// The manifest of a customop kernel cdylib (what its `customop_manifest()` returns, parsed):
/// its ops with their schemas, descriptor layouts and element types, as `customop ops` and the
/// Python side read it. Loads the library (once per path, never unloaded).
///
/// # Safety
/// As [`Client::register_library`]: `path` must be a kernel library built with customop;
/// loading it runs its initialisers.
pub unsafe fn library_manifest(path: &Path) -> Result<serde_json::Value, RunError> {
    manifest_of(load_library(path)?, path)
}

/// The parsed `customop_manifest()` of library `lib`, loaded from `path`.
fn manifest_of(
    lib: &'static libloading::Library,
    path: &Path,
) -> Result<serde_json::Value, RunError> {
    let fail = |message: String| RunError::Library {
        path: path.to_path_buf(),
        message,
    };
    // SAFETY: `customop_manifest` is `const char* (void)` in every customop cdylib.
    let manifest: libloading::Symbol<'static, unsafe extern "C" fn() -> *const core::ffi::c_char> =
        unsafe { lib.get(b"customop_manifest\0") }
            .map_err(|e| fail(format!("not a customop kernel library: {e}")))?;
    // SAFETY: the manifest is a NUL-terminated string owned by the library for the process.
    let text = unsafe {
        let p = manifest();
        if p.is_null() {
            return Err(fail("customop_manifest returned null".into()));
        }
        std::ffi::CStr::from_ptr(p)
    }
    .to_str()
    .map_err(|e| fail(format!("the manifest is not UTF-8: {e}")))?;
    serde_json::from_str(text).map_err(|e| fail(format!("the manifest: {e}")))
}

/// Loads a library for its handlers, once per path, never to be unloaded (registered
/// handlers must stay valid for the process).
fn load_library(path: &Path) -> Result<&'static libloading::Library, RunError> {
    type Loaded = std::collections::HashMap<std::path::PathBuf, &'static libloading::Library>;
    static LOADED: std::sync::OnceLock<std::sync::Mutex<Loaded>> = std::sync::OnceLock::new();
    let mut loaded = LOADED
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(lib) = loaded.get(path) {
        return Ok(lib);
    }
    // SAFETY: loading a kernel library runs its initialisers (Rust's `inventory`
    // registrations, a C library's constructors): what loading a handler library means. It is
    // never unloaded, so its handlers stay valid.
    let lib = unsafe { libloading::Library::new(path) }.map_err(|e| RunError::Library {
        path: path.to_path_buf(),
        message: format!("cannot load: {e}"),
    })?;
    let lib: &'static libloading::Library = Box::leak(Box::new(lib));
    loaded.insert(path.to_path_buf(), lib);
    Ok(lib)
}
