//! Clients, compiling, executing: the runner's calls into a PJRT plugin with the checks that
//! come first (the plugin aborts the process on some bad input: empty compile options, say).

use super::error::RunError;
use super::host::HostTensor;
use super::plugin::{Plugin, bytes};
use super::program::{DimSharding, Program, Signature};
use super::sys::{self, Args};
use crate::descriptor::Descriptor;
use crate::types::{ElementType, TensorType};
use std::ffi::c_void;
use std::path::Path;
use std::sync::Arc;

struct ClientInner {
    plugin: &'static Plugin,
    raw: *mut sys::PJRT_Client,
    devices: Vec<*mut sys::PJRT_Device>,
    platform: String,
}

// SAFETY: a PJRT client is thread-safe (PJRT's contract: clients, executables and buffers
// may be used from any thread); the device pointers are owned by the client and immutable.
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
    inner: Arc<ClientInner>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("plugin", &self.inner.plugin.path())
            .field("platform", &self.inner.platform)
            .field("devices", &self.inner.devices.len())
            .finish()
    }
}

impl Client {
    /// The most devices a client is asked for (each CPU device is a set of threads and
    /// buffers in this process).
    pub const MAX_DEVICES: usize = 256;

    /// A client of the located plugin ([`Plugin::locate`]) with `devices` devices.
    pub fn cpu(devices: usize) -> Result<Client, RunError> {
        Client::new(Plugin::locate()?, devices)
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
        Ok(Client {
            inner: Arc::new(inner),
        })
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
    /// crate), and returns their targets, sorted.
    pub fn register_linked_ops(&self) -> Result<Vec<String>, RunError> {
        let mut targets = Vec::new();
        for (schema, handler) in crate::registry::linked_handlers() {
            // SAFETY: `handler` is a generated XLA FFI handler, a function of this binary
            // (valid for the process).
            unsafe {
                self.inner
                    .plugin
                    .register_handler(&schema.target, handler as *mut c_void)?
            };
            targets.push(schema.target.clone());
        }
        targets.sort();
        Ok(targets)
    }

    /// Loads a customop kernel cdylib (never unloaded), and registers the handler of every op
    /// in its manifest (`customop_manifest`). Returns their targets, sorted.
    ///
    /// # Safety
    /// `path` must be a kernel library built with customop (or one whose
    /// `customop_manifest()` is as truthful): every `handler_symbol` its manifest names must be
    /// an XLA FFI handler. Loading the library runs its initialisers.
    pub unsafe fn register_library(&self, path: &Path) -> Result<Vec<String>, RunError> {
        let fail = |message: String| RunError::Library {
            path: path.to_path_buf(),
            message,
        };
        let lib = load_library(path)?;
        // SAFETY: `customop_manifest` is `const char* (void)` in every customop cdylib.
        let manifest: libloading::Symbol<
            'static,
            unsafe extern "C" fn() -> *const core::ffi::c_char,
        > = unsafe { lib.get(b"customop_manifest\0") }
            .map_err(|e| fail(format!("not a customop kernel library: {e}")))?;
        // SAFETY: the manifest is a NUL-terminated string owned by the library for the
        // process.
        let text = unsafe {
            let p = manifest();
            if p.is_null() {
                return Err(fail("customop_manifest returned null".into()));
            }
            std::ffi::CStr::from_ptr(p)
        }
        .to_str()
        .map_err(|e| fail(format!("the manifest is not UTF-8: {e}")))?;
        let json: serde_json::Value =
            serde_json::from_str(text).map_err(|e| fail(format!("the manifest: {e}")))?;
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
            // SAFETY: a generated handler of a library that stays loaded.
            unsafe { self.inner.plugin.register_handler(target, *sym)? };
            targets.push(target.to_string());
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

    /// Compiles `program` for this client: one device, or, for a program with a Shardy mesh
    /// (`sdy.mesh`), one partition per mesh device (SPMD with the Shardy partitioner).
    pub fn compile(&self, program: &Program) -> Result<Executable, RunError> {
        let partitions = match &program.signature {
            Some(s) => s.mesh_devices() as usize,
            None => 1,
        };
        if partitions > self.inner.devices.len() {
            return Err(RunError::Input(format!(
                "the program's mesh has {partitions} devices, but the client has {}",
                self.inner.devices.len()
            )));
        }
        // Never empty: the plugin aborts the process on empty options.
        let options = compile_options(partitions);
        const FORMAT: &str = "mlir";
        let mut prog = sys::PJRT_Program::new();
        // The plugin reads `code` (it is `char*` only because other calls write it).
        prog.code = program.code.as_ptr() as *mut core::ffi::c_char;
        prog.code_size = program.code.len();
        prog.format = FORMAT.as_ptr().cast();
        prog.format_size = FORMAT.len();
        let mut args = sys::PJRT_Client_Compile_Args::new();
        args.client = self.inner.raw;
        args.program = &prog;
        args.compile_options = options.as_ptr().cast();
        args.compile_options_size = options.len();
        let plugin = self.inner.plugin;
        plugin.call("PJRT_Client_Compile", plugin.api.client_compile, &mut args)?;
        let mut exe = Executable {
            client: self.inner.clone(),
            raw: args.executable,
            signature: program.signature.clone(),
            num_outputs: 0,
            partitions,
        };
        exe.num_outputs = exe.read_num_outputs()?;
        if let Some(s) = &exe.signature {
            if s.results.len() != exe.num_outputs {
                return Err(RunError::Program(format!(
                    "the signature has {} results, the compiled program {}",
                    s.results.len(),
                    exe.num_outputs
                )));
            }
        }
        Ok(exe)
    }
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

/// `CompileOptionsProto { executable_build_options { num_replicas: 1, num_partitions: n,
/// use_spmd_partitioning, use_shardy_partitioner } }`, encoded by hand (field numbers from
/// XLA's `compile_options.proto`: build options 3; replicas 4, partitions 5, SPMD 6, Shardy
/// 19). The plugin aborts the process on empty options (`replica_count > 0`), so they are
/// always given.
fn compile_options(partitions: usize) -> Vec<u8> {
    fn varint(out: &mut Vec<u8>, mut v: u64) {
        loop {
            let b = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                out.push(b);
                return;
            }
            out.push(b | 0x80);
        }
    }
    let mut build = Vec::new();
    for (field, value) in [(4u64, 1u64), (5, partitions as u64)] {
        varint(&mut build, field << 3);
        varint(&mut build, value);
    }
    if partitions > 1 {
        for field in [6u64, 19] {
            varint(&mut build, field << 3);
            varint(&mut build, 1);
        }
    }
    let mut out = Vec::new();
    varint(&mut out, (3 << 3) | 2);
    varint(&mut out, build.len() as u64);
    out.extend_from_slice(&build);
    out
}

/// A compiled program, ready to run on its client's devices.
pub struct Executable {
    client: Arc<ClientInner>,
    raw: *mut sys::PJRT_LoadedExecutable,
    signature: Option<Signature>,
    num_outputs: usize,
    partitions: usize,
}

// SAFETY: PJRT executables may be executed from any thread (PJRT's contract); the raw pointer
// is owned by this value and destroyed once, in Drop.
unsafe impl Send for Executable {}
// SAFETY: as for Send: `run` takes `&self` and PJRT executes concurrently.
unsafe impl Sync for Executable {}

impl std::fmt::Debug for Executable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Executable")
            .field("outputs", &self.num_outputs)
            .field("partitions", &self.partitions)
            .finish()
    }
}

impl Drop for Executable {
    fn drop(&mut self) {
        let plugin = self.client.plugin;
        let mut d = sys::PJRT_LoadedExecutable_Destroy_Args::new();
        d.executable = self.raw;
        let _ = plugin.call(
            "PJRT_LoadedExecutable_Destroy",
            plugin.api.loaded_executable_destroy,
            &mut d,
        );
    }
}

/// Inputs for one execution, by position and by external name (see [`Executable::inputs`]).
#[derive(Debug)]
pub struct Inputs<'e> {
    exe: &'e Executable,
    slots: Vec<Option<Given<'e>>>,
}

/// An input as given: host data, or a tensor kept on the device.
#[derive(Debug)]
enum Given<'e> {
    Host(HostTensor),
    Device(&'e DeviceTensor),
}

impl<'e> Inputs<'e> {
    /// The next argument that is not an external and not yet given.
    fn next_arg(&self, ty: &TensorType) -> Result<usize, RunError> {
        let sig = self.exe.signature()?;
        let Some(p) = sig
            .params
            .iter()
            .find(|p| p.external.is_none() && self.slots[p.index].is_none())
        else {
            let n = sig.params.iter().filter(|p| p.external.is_none()).count();
            return Err(RunError::Input(format!(
                "the program takes {n} arguments besides its externals; one more was given"
            )));
        };
        check_type(p.index, &p.ty, ty)?;
        Ok(p.index)
    }

    /// Gives the next argument that is not an external (in the entry function's order), and
    /// checks its type.
    pub fn arg(mut self, tensor: HostTensor) -> Result<Self, RunError> {
        let i = self.next_arg(tensor.ty())?;
        self.slots[i] = Some(Given::Host(tensor));
        Ok(self)
    }

    /// As [`Inputs::arg`], with a tensor kept on the device ([`Client::upload`]), for
    /// one-device programs.
    pub fn arg_placed(mut self, tensor: &'e DeviceTensor) -> Result<Self, RunError> {
        let i = self.next_arg(&tensor.ty)?;
        self.slots[i] = Some(Given::Device(tensor));
        Ok(self)
    }

    /// The argument of external `name`, checked against a `T` packed into `size` bytes.
    fn external_slot<T: Descriptor>(&self, name: &str, size: usize) -> Result<usize, RunError> {
        let sig = self.exe.signature()?;
        let Some(p) = sig.external(name) else {
            let names: Vec<&str> = sig
                .params
                .iter()
                .filter_map(|p| p.external.as_ref()?.name.as_deref())
                .collect();
            return Err(RunError::Input(format!(
                "the program has no external `{name}` (its externals: {names:?})"
            )));
        };
        let Some(spec) = &p.external else {
            return Err(RunError::Input(format!(
                "argument {} is no external",
                p.index
            )));
        };
        if spec.descriptor != T::NAME || spec.fingerprint != T::fingerprint() {
            return Err(RunError::Input(format!(
                "external `{name}` is `{}` (fingerprint 0x{:016x}) in the program, but a `{}` \
                 (fingerprint 0x{:016x}) was given",
                spec.descriptor,
                spec.fingerprint,
                T::NAME,
                T::fingerprint()
            )));
        }
        if size != spec.size || p.ty.element() != ElementType::U8 || p.ty.shape() != [size as i64] {
            return Err(RunError::Input(format!(
                "external `{name}` ({}) packs to {size} bytes, but the program takes {} ({})",
                T::NAME,
                spec.size,
                p.ty
            )));
        }
        Ok(p.index)
    }

    /// Gives external `name`: checks that the program's annotation names this descriptor
    /// (`T::NAME`), with this layout's fingerprint and packed size, then packs `value`.
    pub fn external<T: Descriptor>(mut self, name: &str, value: &T) -> Result<Self, RunError> {
        let packed = value.pack();
        let i = self.external_slot::<T>(name, packed.len())?;
        let ty = TensorType::new(ElementType::U8, [packed.len() as i64])
            .map_err(|e| RunError::Input(e.message))?;
        self.slots[i] = Some(Given::Host(HostTensor::from_bytes(ty, packed)?));
        Ok(self)
    }

    /// As [`Inputs::external`], with a descriptor kept on the device
    /// ([`Client::upload_descriptor`]), for one-device programs.
    pub fn external_placed<T: Descriptor>(
        mut self,
        name: &str,
        value: &'e DeviceDescriptor<T>,
    ) -> Result<Self, RunError> {
        let size = value.tensor.ty.element_count() as usize;
        let i = self.external_slot::<T>(name, size)?;
        self.slots[i] = Some(Given::Device(&value.tensor));
        Ok(self)
    }

    /// Runs the program on these inputs (see [`Executable::run`]).
    pub fn run(self) -> Result<Vec<HostTensor>, RunError> {
        let mut args = Vec::with_capacity(self.slots.len());
        for (i, s) in self.slots.iter().enumerate() {
            match s {
                Some(Given::Host(t)) => args.push(Slot::Host(t)),
                Some(Given::Device(t)) => args.push(Slot::Device(t)),
                None => {
                    let what = match self
                        .exe
                        .signature
                        .as_ref()
                        .and_then(|s| s.params.get(i))
                        .and_then(|p| p.external.as_ref())
                    {
                        Some(e) => format!(
                            "external `{}` ({})",
                            e.name.as_deref().unwrap_or("?"),
                            e.descriptor
                        ),
                        None => format!("argument {i}"),
                    };
                    return Err(RunError::Input(format!("{what} was not given")));
                }
            }
        }
        self.exe.run_slots(&args, true)
    }
}

fn check_type(index: usize, want: &TensorType, got: &TensorType) -> Result<(), RunError> {
    if want != got {
        return Err(RunError::Input(format!(
            "argument {index} is {want}, but {got} was given"
        )));
    }
    Ok(())
}

/// A buffer the runner owns, destroyed on drop.
struct Buffer<'p> {
    plugin: &'p Plugin,
    raw: *mut sys::PJRT_Buffer,
}

impl Drop for Buffer<'_> {
    fn drop(&mut self) {
        if self.raw.is_null() {
            return;
        }
        let mut d = sys::PJRT_Buffer_Destroy_Args::new();
        d.buffer = self.raw;
        let _ = self.plugin.call(
            "PJRT_Buffer_Destroy",
            self.plugin.api.buffer_destroy,
            &mut d,
        );
    }
}

impl Executable {
    /// What the runner read of the program's entry function.
    pub fn signature(&self) -> Result<&Signature, RunError> {
        self.signature.as_ref().ok_or_else(|| {
            RunError::Input(
                "the program was given as bytecode without a signature: inputs can only be \
                 passed in order, with `run`"
                    .into(),
            )
        })
    }

    /// The number of results.
    pub fn num_outputs(&self) -> usize {
        self.num_outputs
    }

    /// The number of devices each execution runs on (the mesh's, or 1).
    pub fn partitions(&self) -> usize {
        self.partitions
    }

    /// Inputs to fill by position ([`Inputs::arg`]) and external name ([`Inputs::external`]).
    pub fn inputs(&self) -> Inputs<'_> {
        let n = self.signature.as_ref().map_or(0, |s| s.params.len());
        Inputs {
            exe: self,
            slots: (0..n).map(|_| None).collect(),
        }
    }

    fn read_num_outputs(&self) -> Result<usize, RunError> {
        let plugin = self.client.plugin;
        let mut g = sys::PJRT_LoadedExecutable_GetExecutable_Args::new();
        g.loaded_executable = self.raw;
        plugin.call(
            "PJRT_LoadedExecutable_GetExecutable",
            plugin.api.loaded_executable_get_executable,
            &mut g,
        )?;
        let mut n = sys::PJRT_Executable_NumOutputs_Args::new();
        n.executable = g.executable;
        let r = plugin.call(
            "PJRT_Executable_NumOutputs",
            plugin.api.executable_num_outputs,
            &mut n,
        );
        let mut d = sys::PJRT_Executable_Destroy_Args::new();
        d.executable = g.executable;
        let _ = plugin.call(
            "PJRT_Executable_Destroy",
            plugin.api.executable_destroy,
            &mut d,
        );
        r.map(|()| n.num_outputs)
    }

    /// Runs the program once on `args`, every argument in order (externals as their packed
    /// bytes), and returns its results. With a signature, every argument's type is checked
    /// first; in a program with a mesh, each argument is split over the devices as its
    /// sharding says, and each result assembled from its shards.
    pub fn run(&self, args: &[HostTensor]) -> Result<Vec<HostTensor>, RunError> {
        let slots: Vec<Slot<'_>> = args.iter().map(Slot::Host).collect();
        self.run_slots(&slots, true)
    }

    /// [`Executable::run`], every output read through `PJRT_Buffer_ToHostBuffer` (the path
    /// for buffers not in host memory), for tests that hold the two ways of reading alike.
    #[doc(hidden)]
    pub fn run_reading_through_the_plugin(
        &self,
        args: &[HostTensor],
    ) -> Result<Vec<HostTensor>, RunError> {
        let slots: Vec<Slot<'_>> = args.iter().map(Slot::Host).collect();
        self.run_slots(&slots, false)
    }

    fn run_slots(&self, args: &[Slot<'_>], in_place: bool) -> Result<Vec<HostTensor>, RunError> {
        let plugin = self.client.plugin;
        if let Some(sig) = &self.signature {
            if args.len() != sig.params.len() {
                return Err(RunError::Input(format!(
                    "the program takes {} arguments, {} were given",
                    sig.params.len(),
                    args.len()
                )));
            }
            for (p, a) in sig.params.iter().zip(args) {
                check_type(p.index, &p.ty, a.ty())?;
                if let (Some(e), Slot::Host(h)) = (&p.external, a) {
                    check_external_bytes(e, h)?;
                }
            }
        }
        let mut kept = Vec::new();
        for (i, a) in args.iter().enumerate() {
            if let Slot::Device(d) = a {
                if !Arc::ptr_eq(&d.client, &self.client) {
                    return Err(RunError::Input(format!(
                        "argument {i} was uploaded by another client"
                    )));
                }
                if self.partitions > 1 {
                    return Err(RunError::Input(format!(
                        "argument {i} is on one device, but the program runs on {}: give it \
                         from the host, to be split",
                        self.partitions
                    )));
                }
                kept.push(i as i64);
            }
        }
        let n_dev = self.partitions;
        let mesh = self
            .signature
            .as_ref()
            .map(|s| s.mesh.clone())
            .unwrap_or_default();
        // Per device, per argument: the buffer (uploaded here and owned by `inputs`, or one
        // the caller keeps on the device).
        let mut inputs: Vec<Buffer<'_>> = Vec::with_capacity(n_dev * args.len());
        let mut arg_ptrs: Vec<Vec<*mut sys::PJRT_Buffer>> = Vec::with_capacity(n_dev);
        for d in 0..n_dev {
            let mut row = Vec::with_capacity(args.len());
            for (i, a) in args.iter().enumerate() {
                let a = match a {
                    Slot::Device(t) => {
                        row.push(t.raw);
                        continue;
                    }
                    Slot::Host(h) => *h,
                };
                let sharding = self
                    .signature
                    .as_ref()
                    .and_then(|s| s.params.get(i))
                    .and_then(|p| p.sharding.as_ref());
                let piece = match sharding {
                    Some(sh) if n_dev > 1 => shard_of(a, sh, &mesh, d)?,
                    _ => None,
                };
                let b = Buffer {
                    plugin,
                    raw: upload(&self.client, piece.as_ref().unwrap_or(a), d)?,
                };
                row.push(b.raw);
                inputs.push(b);
            }
            arg_ptrs.push(row);
        }
        let arg_lists: Vec<*const *mut sys::PJRT_Buffer> =
            arg_ptrs.iter().map(|r| r.as_ptr()).collect();
        let mut out_ptrs: Vec<Vec<*mut sys::PJRT_Buffer>> =
            vec![vec![core::ptr::null_mut(); self.num_outputs.max(1)]; n_dev];
        let out_lists: Vec<*mut *mut sys::PJRT_Buffer> =
            out_ptrs.iter_mut().map(|r| r.as_mut_ptr()).collect();
        let mut events: Vec<*mut sys::PJRT_Event> = vec![core::ptr::null_mut(); n_dev];
        let mut options = sys::PJRT_ExecuteOptions::new();
        // Buffers the caller keeps are never donated to the outputs.
        options.non_donatable_input_indices = kept.as_ptr();
        options.num_non_donatable_input_indices = kept.len();
        let mut ex = sys::PJRT_LoadedExecutable_Execute_Args::new();
        ex.executable = self.raw;
        ex.options = &mut options;
        ex.argument_lists = arg_lists.as_ptr();
        ex.num_devices = n_dev;
        ex.num_args = args.len();
        ex.output_lists = out_lists.as_ptr();
        ex.device_complete_events = events.as_mut_ptr();
        let launched = plugin.call(
            "PJRT_LoadedExecutable_Execute",
            plugin.api.loaded_executable_execute,
            &mut ex,
        );
        // Take ownership of whatever the plugin produced, before looking at errors.
        let outputs: Vec<Vec<Buffer<'_>>> = out_ptrs
            .iter()
            .map(|row| {
                row.iter()
                    .take(self.num_outputs)
                    .map(|&raw| Buffer { plugin, raw })
                    .collect()
            })
            .collect();
        let mut first_error = launched.err();
        for e in events {
            if let Err(err) = plugin.await_event(e) {
                first_error.get_or_insert(err);
            }
        }
        drop(inputs);
        if let Some(e) = first_error {
            return Err(e);
        }
        let mut results = Vec::with_capacity(self.num_outputs);
        for k in 0..self.num_outputs {
            let shards: Vec<HostTensor> = outputs
                .iter()
                .map(|row| read_buffer(&row[k], in_place))
                .collect::<Result<_, _>>()?;
            let sharding = self
                .signature
                .as_ref()
                .and_then(|s| s.result_shardings.get(k).cloned().flatten());
            let global = self
                .signature
                .as_ref()
                .and_then(|s| s.results.get(k).cloned());
            results.push(assemble(k, shards, sharding.as_ref(), global, &mesh)?);
        }
        Ok(results)
    }
}

/// Copies `t` to device `device` of `client` (the plugin copies during the call), and returns
/// the new buffer, owned by the caller.
fn upload(
    client: &ClientInner,
    t: &HostTensor,
    device: usize,
) -> Result<*mut sys::PJRT_Buffer, RunError> {
    let plugin = client.plugin;
    // The plugin reads as many bytes as the dimensions say: they must be there (a
    // `HostTensor` always holds exactly that many; checked again at this edge).
    let want = super::host::byte_len(t.ty())?;
    if want != t.bytes().len() {
        return Err(RunError::Input(format!(
            "{} does not hold its {want} bytes",
            t.ty()
        )));
    }
    let mut a = sys::PJRT_Client_BufferFromHostBuffer_Args::new();
    a.client = client.raw;
    // An empty tensor still needs a valid pointer.
    let dummy = [0u8; 8];
    a.data = if t.bytes().is_empty() {
        dummy.as_ptr().cast()
    } else {
        t.bytes().as_ptr().cast()
    };
    a.type_ = sys::buffer_type(t.element());
    a.dims = t.dims().as_ptr();
    a.num_dims = t.dims().len();
    a.host_buffer_semantics = sys::HOST_BUFFER_IMMUTABLE_ONLY_DURING_CALL;
    a.device = client.devices[device];
    plugin.call(
        "PJRT_Client_BufferFromHostBuffer",
        plugin.api.client_buffer_from_host_buffer,
        &mut a,
    )?;
    // With `ImmutableOnlyDuringCall` the data was copied during the call: the event has
    // nothing left to wait for (and is only destroyed).
    plugin.destroy_event(a.done_with_host_buffer);
    Ok(a.buffer)
}

/// An input: from the host, or already on the device.
#[derive(Debug, Clone, Copy)]
enum Slot<'a> {
    Host(&'a HostTensor),
    Device(&'a DeviceTensor),
}

impl Slot<'_> {
    fn ty(&self) -> &TensorType {
        match self {
            Slot::Host(h) => h.ty(),
            Slot::Device(d) => &d.ty,
        }
    }
}

/// A tensor the plugin holds on the client's first device ([`Client::upload`]): give it to
/// many executions of one-device programs ([`Inputs::arg_placed`]) without copying it again.
/// Never donated to an execution's outputs; freed when dropped.
pub struct DeviceTensor {
    client: Arc<ClientInner>,
    raw: *mut sys::PJRT_Buffer,
    ty: TensorType,
}

// SAFETY: PJRT buffers may be used from any thread (PJRT's contract); this value owns the
// buffer and destroys it once, in Drop.
unsafe impl Send for DeviceTensor {}
// SAFETY: as for Send: executions only read the buffer (it is never donated).
unsafe impl Sync for DeviceTensor {}

impl std::fmt::Debug for DeviceTensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DeviceTensor({})", self.ty)
    }
}

impl Drop for DeviceTensor {
    fn drop(&mut self) {
        drop(Buffer {
            plugin: self.client.plugin,
            raw: self.raw,
        });
    }
}

impl DeviceTensor {
    /// Its type.
    pub fn ty(&self) -> &TensorType {
        &self.ty
    }
}

/// A packed `T` descriptor on the device ([`Client::upload_descriptor`]), for
/// [`Inputs::external_placed`].
pub struct DeviceDescriptor<T> {
    tensor: DeviceTensor,
    _t: core::marker::PhantomData<fn() -> T>,
}

impl<T> std::fmt::Debug for DeviceDescriptor<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DeviceDescriptor({:?})", self.tensor)
    }
}

impl Client {
    /// Copies `t` to the client's first device, to give to many executions.
    pub fn upload(&self, t: &HostTensor) -> Result<DeviceTensor, RunError> {
        let raw = upload(&self.inner, t, 0)?;
        Ok(DeviceTensor {
            client: self.inner.clone(),
            raw,
            ty: t.ty().clone(),
        })
    }

    /// Packs `value` and copies it to the client's first device, to give as an external to
    /// many executions.
    pub fn upload_descriptor<T: Descriptor>(
        &self,
        value: &T,
    ) -> Result<DeviceDescriptor<T>, RunError> {
        let packed = value.pack();
        let t = HostTensor::from_bytes(
            TensorType::new(ElementType::U8, [packed.len() as i64])
                .map_err(|e| RunError::Input(e.message))?,
            packed,
        )?;
        Ok(DeviceDescriptor {
            tensor: self.upload(&t)?,
            _t: core::marker::PhantomData,
        })
    }
}

fn check_external_bytes(e: &super::program::ExternalSpec, a: &HostTensor) -> Result<(), RunError> {
    if a.bytes().len() != e.size {
        return Err(RunError::Input(format!(
            "external `{}` ({}) takes {} bytes, {} were given",
            e.name.as_deref().unwrap_or("?"),
            e.descriptor,
            e.size,
            a.bytes().len()
        )));
    }
    Ok(())
}

/// Reads an output buffer: in place when it is in host memory in row-major order, else
/// through `PJRT_Buffer_ToHostBuffer`.
fn read_buffer(b: &Buffer<'_>, allow_in_place: bool) -> Result<HostTensor, RunError> {
    let plugin = b.plugin;
    let api = plugin.api;
    let mut et = sys::PJRT_Buffer_ElementType_Args::new();
    et.buffer = b.raw;
    plugin.call("PJRT_Buffer_ElementType", api.buffer_element_type, &mut et)?;
    let element = sys::element_type(et.type_).ok_or_else(|| {
        RunError::Output(format!(
            "an output has PJRT element type {}, which customop does not support",
            et.type_
        ))
    })?;
    let mut dm = sys::PJRT_Buffer_Dimensions_Args::new();
    dm.buffer = b.raw;
    plugin.call("PJRT_Buffer_Dimensions", api.buffer_dimensions, &mut dm)?;
    let dims: Vec<i64> = if dm.dims.is_null() {
        Vec::new()
    } else {
        // SAFETY: the buffer owns `num_dims` dimensions at `dims` while it lives.
        unsafe { std::slice::from_raw_parts(dm.dims, dm.num_dims) }.to_vec()
    };
    let ty = TensorType::new(element, dims).map_err(|e| RunError::Output(e.message))?;
    let size = super::host::byte_len(&ty).map_err(|e| RunError::Output(e.to_string()))?;
    let mut data = vec![0u8; size];
    if size > 0 {
        if allow_in_place && in_place(b)? {
            let mut up = sys::PJRT_Buffer_UnsafePointer_Args::new();
            up.buffer = b.raw;
            plugin.call(
                "PJRT_Buffer_UnsafePointer",
                api.buffer_unsafe_pointer,
                &mut up,
            )?;
            let mut os = sys::PJRT_Buffer_OnDeviceSizeInBytes_Args::new();
            os.buffer = b.raw;
            plugin.call(
                "PJRT_Buffer_OnDeviceSizeInBytes",
                api.buffer_on_device_size_in_bytes,
                &mut os,
            )?;
            if up.buffer_pointer == 0 || os.on_device_size_in_bytes < size {
                return Err(RunError::Output(format!(
                    "an output {ty} is {} bytes on the device, fewer than its {size}",
                    os.on_device_size_in_bytes
                )));
            }
            // SAFETY: the buffer is ready (its execution's completion event was awaited),
            // in host memory (IsOnCpu), dense row-major (its layout was checked), and at
            // least `size` bytes long (OnDeviceSizeInBytes); it lives until `b` drops.
            let src = unsafe { std::slice::from_raw_parts(up.buffer_pointer as *const u8, size) };
            data.copy_from_slice(src);
        } else {
            let rank = ty.rank();
            let minor_to_major: Vec<i64> = (0..rank as i64).rev().collect();
            let mut layout = sys::PJRT_Buffer_MemoryLayout::new();
            layout.type_ = sys::MEMORY_LAYOUT_TILED;
            layout.u = sys::MemoryLayoutUnion {
                tiled: sys::PJRT_Buffer_MemoryLayout_Tiled {
                    struct_size: core::mem::size_of::<sys::PJRT_Buffer_MemoryLayout_Tiled>(),
                    extension_start: core::ptr::null_mut(),
                    minor_to_major: minor_to_major.as_ptr(),
                    minor_to_major_size: rank,
                    tile_dims: core::ptr::null(),
                    tile_dim_sizes: core::ptr::null(),
                    num_tiles: 0,
                },
            };
            let mut th = sys::PJRT_Buffer_ToHostBuffer_Args::new();
            th.src = b.raw;
            th.host_layout = &mut layout;
            th.dst = data.as_mut_ptr().cast();
            th.dst_size = size;
            plugin.call(
                "PJRT_Buffer_ToHostBuffer",
                api.buffer_to_host_buffer,
                &mut th,
            )?;
            plugin.await_event(th.event)?;
        }
    }
    HostTensor::from_bytes(ty, data).map_err(|e| RunError::Output(e.to_string()))
}

/// Whether the buffer can be read where it is: in host memory, dense, row-major.
fn in_place(b: &Buffer<'_>) -> Result<bool, RunError> {
    let plugin = b.plugin;
    let mut oc = sys::PJRT_Buffer_IsOnCpu_Args::new();
    oc.buffer = b.raw;
    plugin.call("PJRT_Buffer_IsOnCpu", plugin.api.buffer_is_on_cpu, &mut oc)?;
    if !oc.is_on_cpu {
        return Ok(false);
    }
    let mut ml = sys::PJRT_Buffer_GetMemoryLayout_Args::new();
    ml.buffer = b.raw;
    if plugin
        .call(
            "PJRT_Buffer_GetMemoryLayout",
            plugin.api.buffer_get_memory_layout,
            &mut ml,
        )
        .is_err()
    {
        return Ok(false);
    }
    if ml.layout.type_ != sys::MEMORY_LAYOUT_TILED {
        return Ok(false);
    }
    // SAFETY: type Tiled says the union holds `tiled`, filled by the plugin.
    let tiled = unsafe { ml.layout.u.tiled };
    if tiled.num_tiles != 0 {
        return Ok(false);
    }
    let m2m = if tiled.minor_to_major.is_null() {
        &[][..]
    } else {
        // SAFETY: `minor_to_major` has `minor_to_major_size` entries owned by the buffer.
        unsafe { std::slice::from_raw_parts(tiled.minor_to_major, tiled.minor_to_major_size) }
    };
    let n = m2m.len() as i64;
    Ok(m2m.iter().enumerate().all(|(i, &d)| d == n - 1 - i as i64))
}

/// The mesh coordinates of device `d` (row-major over the axes, as devices are numbered).
fn coords(mesh: &[(String, i64)], d: usize) -> Vec<i64> {
    let mut c = vec![0; mesh.len()];
    let mut rest = d as i64;
    for (i, (_, size)) in mesh.iter().enumerate().rev() {
        c[i] = rest % size;
        rest /= size;
    }
    c
}

/// For one dimension split along `axes`: how many blocks, and device `d`'s block.
fn block(axes: &[String], mesh: &[(String, i64)], c: &[i64]) -> Result<(i64, i64), RunError> {
    let mut parts = 1;
    let mut b = 0;
    for a in axes {
        let i = mesh.iter().position(|(n, _)| n == a).ok_or_else(|| {
            RunError::Program(format!("sharding names axis `{a}`, not in the mesh"))
        })?;
        parts *= mesh[i].1;
        b = b * mesh[i].1 + c[i];
    }
    Ok((parts, b))
}

/// Copies between a global row-major tensor and one block of it (`origin` in elements per
/// dimension, `local` dims); `to_local` says the direction.
fn copy_block(
    global_dims: &[i64],
    origin: &[i64],
    local: &[i64],
    elem: usize,
    global: &mut [u8],
    block_bytes: &mut [u8],
    to_local: bool,
) {
    let rank = global_dims.len();
    if local.contains(&0) {
        return;
    }
    if rank == 0 {
        let n = elem.min(global.len()).min(block_bytes.len());
        if to_local {
            block_bytes[..n].copy_from_slice(&global[..n]);
        } else {
            global[..n].copy_from_slice(&block_bytes[..n]);
        }
        return;
    }
    let row = local[rank - 1] as usize * elem;
    let rows: i64 = local[..rank - 1].iter().product();
    let mut idx = vec![0i64; rank - 1];
    for r in 0..rows as usize {
        let mut off = 0i64;
        for k in 0..rank - 1 {
            off = off * global_dims[k] + origin[k] + idx[k];
        }
        let g = ((off * global_dims[rank - 1] + origin[rank - 1]) as usize) * elem;
        let l = r * row;
        if to_local {
            block_bytes[l..l + row].copy_from_slice(&global[g..g + row]);
        } else {
            global[g..g + row].copy_from_slice(&block_bytes[l..l + row]);
        }
        for k in (0..rank - 1).rev() {
            idx[k] += 1;
            if idx[k] < local[k] {
                break;
            }
            idx[k] = 0;
        }
    }
}

/// Device `d`'s shard of `t` split as `sharding` says over `mesh` (`None`: not split).
fn shard_of(
    t: &HostTensor,
    sharding: &DimSharding,
    mesh: &[(String, i64)],
    d: usize,
) -> Result<Option<HostTensor>, RunError> {
    if sharding.iter().all(|a| a.is_empty()) {
        return Ok(None);
    }
    let dims = t.dims();
    if sharding.len() != dims.len() {
        return Err(RunError::Program(format!(
            "a sharding of rank {} for {}",
            sharding.len(),
            t.ty()
        )));
    }
    let c = coords(mesh, d);
    let mut local = Vec::with_capacity(dims.len());
    let mut origin = Vec::with_capacity(dims.len());
    for (i, axes) in sharding.iter().enumerate() {
        let (parts, b) = block(axes, mesh, &c)?;
        if dims[i] % parts != 0 {
            return Err(RunError::Input(format!(
                "{}: dimension {i} ({}) does not split into {parts} equal parts",
                t.ty(),
                dims[i]
            )));
        }
        let l = dims[i] / parts;
        local.push(l);
        origin.push(b * l);
    }
    let elem = t.element().byte_size();
    let ty = TensorType::new(t.element(), local.clone()).map_err(|e| RunError::Input(e.message))?;
    let mut out = vec![0u8; super::host::byte_len(&ty)?];
    let mut g = t.bytes().to_vec();
    copy_block(dims, &origin, &local, elem, &mut g, &mut out, true);
    HostTensor::from_bytes(ty, out).map(Some)
}

/// Result `k` from its shards (one per device): split as `sharding` says, else the same on
/// every device (device 0's is taken, if it has the result's global shape).
fn assemble(
    k: usize,
    shards: Vec<HostTensor>,
    sharding: Option<&DimSharding>,
    global: Option<TensorType>,
    mesh: &[(String, i64)],
) -> Result<HostTensor, RunError> {
    let split = sharding.is_some_and(|s| s.iter().any(|a| !a.is_empty()));
    if shards.len() <= 1 || !split {
        let first = shards
            .into_iter()
            .next()
            .ok_or_else(|| RunError::Output(format!("result {k} has no buffer")))?;
        if let Some(g) = &global {
            if g != first.ty() {
                return Err(RunError::Output(format!(
                    "result {k} is {} on a device, but the program returns {g} and does not \
                     say how it is split",
                    first.ty()
                )));
            }
        }
        return Ok(first);
    }
    let sharding = sharding.cloned().unwrap_or_default();
    let local = shards[0].dims().to_vec();
    let element: ElementType = shards[0].element();
    if sharding.len() != local.len() {
        return Err(RunError::Output(format!(
            "result {k}: a sharding of rank {} for shards {}",
            sharding.len(),
            shards[0].ty()
        )));
    }
    if let Some(s) = shards.iter().find(|s| s.ty() != shards[0].ty()) {
        return Err(RunError::Output(format!(
            "result {k}: shards of different types ({} and {})",
            shards[0].ty(),
            s.ty()
        )));
    }
    let mut gdims = Vec::with_capacity(local.len());
    for (i, axes) in sharding.iter().enumerate() {
        let (parts, _) = block(axes, mesh, &coords(mesh, 0))?;
        gdims.push(local.get(i).copied().unwrap_or(1) * parts);
    }
    let gty = TensorType::new(element, gdims.clone()).map_err(|e| RunError::Output(e.message))?;
    let elem = element.byte_size();
    let mut out =
        vec![0u8; super::host::byte_len(&gty).map_err(|e| RunError::Output(e.to_string()))?];
    for (d, s) in shards.iter().enumerate() {
        let c = coords(mesh, d);
        let mut origin = Vec::with_capacity(local.len());
        for (i, axes) in sharding.iter().enumerate() {
            let (_, b) = block(axes, mesh, &c)?;
            origin.push(b * local[i]);
        }
        let mut bytes = s.bytes().to_vec();
        copy_block(&gdims, &origin, &local, elem, &mut out, &mut bytes, false);
    }
    if let Some(g) = &global {
        if *g != gty {
            return Err(RunError::Output(format!(
                "result {k} assembles to {gty} from its shards, but the program returns {g}"
            )));
        }
    }
    HostTensor::from_bytes(gty, out).map_err(|e| RunError::Output(e.to_string()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn compile_options_encode_the_build_options() {
        assert_eq!(compile_options(1), vec![0x1a, 0x04, 0x20, 0x01, 0x28, 0x01]);
        assert_eq!(
            compile_options(4),
            vec![
                0x1a, 0x09, 0x20, 0x01, 0x28, 0x04, 0x30, 0x01, 0x98, 0x01, 0x01
            ]
        );
    }

    #[test]
    fn shards_split_and_assemble_back() {
        let mesh = vec![("x".to_string(), 2), ("y".to_string(), 2)];
        let vals: Vec<i32> = (0..24).collect();
        let t = HostTensor::from_slice(&[4, 6], &vals).unwrap();
        let sharding = vec![vec!["x".to_string()], vec!["y".to_string()]];
        let shards: Vec<HostTensor> = (0..4)
            .map(|d| shard_of(&t, &sharding, &mesh, d).unwrap().unwrap())
            .collect();
        assert_eq!(shards[0].to_vec::<i32>().unwrap(), vec![0, 1, 2, 6, 7, 8]);
        assert_eq!(shards[1].to_vec::<i32>().unwrap(), vec![3, 4, 5, 9, 10, 11]);
        assert_eq!(shards[2].dims(), &[2, 3]);
        let back = assemble(0, shards, Some(&sharding), None, &mesh).unwrap();
        assert_eq!(back, t);
        let rows = vec![vec!["x".to_string(), "y".to_string()], vec![]];
        let s3 = shard_of(&t, &rows, &mesh, 3).unwrap().unwrap();
        assert_eq!(s3.to_vec::<i32>().unwrap(), (18..24).collect::<Vec<_>>());
        let bad = HostTensor::from_slice(&[3, 6], &vals[..18]).unwrap();
        assert!(shard_of(&bad, &sharding, &mesh, 0).is_err());
        // Assembling checks ranks, shard types and the program's result type.
        let rows_only = vec![vec!["x".to_string()]];
        let four = |d: usize| shard_of(&t, &sharding, &mesh, d).unwrap().unwrap();
        let e = assemble(0, (0..4).map(four).collect(), Some(&rows_only), None, &mesh);
        assert!(e.unwrap_err().to_string().contains("a sharding of rank 1"));
        let mut mixed: Vec<HostTensor> = (0..4).map(four).collect();
        mixed[3] = HostTensor::from_slice(&[1, 3], &[0i32; 3]).unwrap();
        let e = assemble(0, mixed, Some(&sharding), None, &mesh);
        assert!(
            e.unwrap_err()
                .to_string()
                .contains("shards of different types")
        );
        let wrong = TensorType::new(ElementType::I32, [8, 6]).unwrap();
        let e = assemble(
            0,
            (0..4).map(four).collect(),
            Some(&sharding),
            Some(wrong),
            &mesh,
        );
        assert!(
            e.unwrap_err()
                .to_string()
                .contains("assembles to tensor<4x6xi32>")
        );
    }
}
