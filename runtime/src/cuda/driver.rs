//! The CUDA driver API (libcuda), loaded at run time: nothing links it, so a library with CUDA
//! handlers loads on a machine without a driver, and the first CUDA call there is refused by
//! name (`[no_cuda]`).
//!
//! Only the calls a handler makes are resolved: the stream's context, module loads, kernel
//! launches (arguments as one buffer, `CU_LAUNCH_PARAM_BUFFER_POINTER`), a device-to-host copy
//! and a stream synchronisation for the checks of externals, and the error names.

use core::ffi::{c_char, c_uint, c_void};
use std::sync::OnceLock;

/// `CUresult`: 0 is success.
pub(crate) type CuResult = i32;
/// `CUdeviceptr`: a device address.
pub type DevicePtr = u64;

/// The environment variable naming the driver library to load instead of `libcuda.so.1` (a
/// stand-in driver for tests; the user's own choice, like `LD_LIBRARY_PATH`).
pub const DRIVER_VAR: &str = "CUSTOMOP_CUDA_DRIVER";

type GetErrorName = unsafe extern "C" fn(CuResult, *mut *const c_char) -> CuResult;
type Init = unsafe extern "C" fn(c_uint) -> CuResult;
type StreamGetCtx = unsafe extern "C" fn(*mut c_void, *mut *mut c_void) -> CuResult;
type CtxPush = unsafe extern "C" fn(*mut c_void) -> CuResult;
type CtxPop = unsafe extern "C" fn(*mut *mut c_void) -> CuResult;
type ModuleLoadData = unsafe extern "C" fn(*mut *mut c_void, *const c_void) -> CuResult;
type ModuleGetFunction =
    unsafe extern "C" fn(*mut *mut c_void, *mut c_void, *const c_char) -> CuResult;
type LaunchKernel = unsafe extern "C" fn(
    *mut c_void,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    *mut c_void,
    *mut *mut c_void,
    *mut *mut c_void,
) -> CuResult;
type MemcpyDtoHAsync = unsafe extern "C" fn(*mut c_void, DevicePtr, usize, *mut c_void) -> CuResult;
type MemcpyDtoDAsync = unsafe extern "C" fn(DevicePtr, DevicePtr, usize, *mut c_void) -> CuResult;
type StreamSynchronize = unsafe extern "C" fn(*mut c_void) -> CuResult;

/// The resolved driver functions. The library stays loaded for the process's life.
pub(crate) struct Driver {
    /// Where it was loaded from.
    pub(crate) path: String,
    get_error_name: GetErrorName,
    stream_get_ctx: StreamGetCtx,
    ctx_push: CtxPush,
    ctx_pop: CtxPop,
    module_load_data: ModuleLoadData,
    module_get_function: ModuleGetFunction,
    launch_kernel: LaunchKernel,
    memcpy_dtoh_async: MemcpyDtoHAsync,
    memcpy_dtod_async: MemcpyDtoDAsync,
    stream_synchronize: StreamSynchronize,
}

/// A failed driver call: which, and CUDA's code and name for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct DriverError {
    pub(crate) call: &'static str,
    pub(crate) code: CuResult,
    pub(crate) name: String,
}

impl core::fmt::Display for DriverError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{} failed: {} ({})", self.call, self.name, self.code)
    }
}

/// The driver, loaded and initialised once (`cuInit`); `Err` says why there is none.
pub(crate) fn driver() -> Result<&'static Driver, &'static str> {
    static DRIVER: OnceLock<Result<Driver, String>> = OnceLock::new();
    DRIVER.get_or_init(load).as_ref().map_err(String::as_str)
}

fn load() -> Result<Driver, String> {
    let chosen = std::env::var_os(DRIVER_VAR);
    let path = chosen.as_deref().map_or_else(
        || "libcuda.so.1".into(),
        |p| p.to_string_lossy().into_owned(),
    );
    // SAFETY: loading runs the library's initialisers: libcuda is the system's NVIDIA driver,
    // found by the dynamic loader as for any CUDA program; another library only when the user
    // names it in CUSTOMOP_CUDA_DRIVER (their own choice of native code, as LD_LIBRARY_PATH is).
    let lib = unsafe { libloading::Library::new(&path) }.map_err(|e| match chosen {
        Some(_) => format!("{DRIVER_VAR}={path} could not be loaded: {e}"),
        None => format!("no CUDA driver on this machine (libcuda.so.1 did not load: {e})"),
    })?;
    macro_rules! sym {
        ($name:literal) => {{
            // SAFETY: each symbol is looked up with the signature the CUDA driver API gives
            // it (cuda.h, the `_v2` names where the header maps the plain name to them).
            let s = unsafe { lib.get(concat!($name, "\0").as_bytes()) }
                .map_err(|e| format!("{path} has no `{}`: {e}", $name))?;
            *s
        }};
    }
    let init: Init = sym!("cuInit");
    let driver = Driver {
        get_error_name: sym!("cuGetErrorName"),
        stream_get_ctx: sym!("cuStreamGetCtx"),
        ctx_push: sym!("cuCtxPushCurrent_v2"),
        ctx_pop: sym!("cuCtxPopCurrent_v2"),
        module_load_data: sym!("cuModuleLoadData"),
        module_get_function: sym!("cuModuleGetFunction"),
        launch_kernel: sym!("cuLaunchKernel"),
        memcpy_dtoh_async: sym!("cuMemcpyDtoHAsync_v2"),
        memcpy_dtod_async: sym!("cuMemcpyDtoDAsync_v2"),
        stream_synchronize: sym!("cuStreamSynchronize"),
        path: path.clone(),
    };
    // The functions stay valid while the library is loaded: for the process's life.
    std::mem::forget(lib);
    // SAFETY: cuInit takes flags (0) and may be called any number of times.
    let code = unsafe { init(0) };
    if code != 0 {
        let e = driver.error("cuInit", code);
        return Err(format!(
            "the CUDA driver ({path}) has no usable GPU: {} ({})",
            e.name, e.code
        ));
    }
    Ok(driver)
}

impl Driver {
    /// `code` of `call` as an error, with the driver's name for it.
    #[cold]
    pub(crate) fn error(&self, call: &'static str, code: CuResult) -> DriverError {
        let mut s: *const c_char = core::ptr::null();
        // SAFETY: cuGetErrorName writes a pointer to a static string, or fails.
        let found = unsafe { (self.get_error_name)(code, &mut s) } == 0 && !s.is_null();
        let name = if found {
            // SAFETY: the driver's static, NUL-terminated name.
            unsafe { core::ffi::CStr::from_ptr(s) }
                .to_string_lossy()
                .into_owned()
        } else {
            "an error code the driver does not name".into()
        };
        DriverError { call, code, name }
    }

    fn check(&self, call: &'static str, code: CuResult) -> Result<(), DriverError> {
        if code == 0 {
            Ok(())
        } else {
            Err(self.error(call, code))
        }
    }

    /// The context `stream` belongs to.
    pub(crate) fn stream_context(&self, stream: *mut c_void) -> Result<*mut c_void, DriverError> {
        let mut ctx = core::ptr::null_mut();
        // SAFETY: `stream` is the stream XLA or torch gave the op (or null, the legacy stream);
        // the out-pointer is valid.
        self.check("cuStreamGetCtx", unsafe {
            (self.stream_get_ctx)(stream, &mut ctx)
        })?;
        Ok(ctx)
    }

    /// Loads `image` (a fatbin, cubin or PTX) into `ctx`: the module's handle.
    ///
    /// # Safety
    /// `image` points at a complete, immutable image that outlives the module (a `'static`).
    pub(crate) unsafe fn load_module(
        &self,
        ctx: *mut c_void,
        image: *const c_void,
    ) -> Result<*mut c_void, DriverError> {
        let mut module = core::ptr::null_mut();
        self.in_context(ctx, || {
            // SAFETY: the caller's contract for `image`; the out-pointer is valid.
            self.check("cuModuleLoadData", unsafe {
                (self.module_load_data)(&mut module, image)
            })
        })?;
        Ok(module)
    }

    /// Runs `f` with `ctx` current on this thread, and the thread's context as it was after:
    /// a module is loaded into, and its kernels launched in, the stream's context, whatever the
    /// caller's thread had current.
    fn in_context(
        &self,
        ctx: *mut c_void,
        f: impl FnOnce() -> Result<(), DriverError>,
    ) -> Result<(), DriverError> {
        // SAFETY: `ctx` is a context the driver gave (`stream_context`), pushed here and
        // popped below.
        self.check("cuCtxPushCurrent", unsafe { (self.ctx_push)(ctx) })?;
        let done = f();
        let mut popped = core::ptr::null_mut();
        // SAFETY: pops the context pushed above.
        let pop = self.check("cuCtxPopCurrent", unsafe { (self.ctx_pop)(&mut popped) });
        done?;
        pop
    }

    /// The kernel `name` of `module`.
    pub(crate) fn function(
        &self,
        module: *mut c_void,
        name: &core::ffi::CStr,
    ) -> Result<*mut c_void, DriverError> {
        let mut f = core::ptr::null_mut();
        // SAFETY: `module` was loaded by `load_module`; `name` is NUL-terminated.
        self.check("cuModuleGetFunction", unsafe {
            (self.module_get_function)(&mut f, module, name.as_ptr())
        })?;
        Ok(f)
    }

    /// Launches `f` on `stream` (of context `ctx`, current for the launch) with its parameters
    /// packed in `args` (each at its C offset).
    ///
    /// # Safety
    /// `f` is a function of a module of `ctx`, `stream`'s context, and `args` holds exactly the
    /// kernel's parameters as its C declaration lays them out; every device address in them
    /// is valid for what the kernel does with it until the stream reaches the launch.
    pub(crate) unsafe fn launch(
        &self,
        f: *mut c_void,
        grid: [u32; 3],
        block: [u32; 3],
        shared: u32,
        (ctx, stream): (*mut c_void, *mut c_void),
        args: &[u8],
    ) -> Result<(), DriverError> {
        let mut size = args.len();
        // cuda.h's markers are the pointer values 1, 2 and 0.
        let marker = |v: usize| core::ptr::without_provenance_mut::<c_void>(v);
        let mut extra = [
            marker(1), // CU_LAUNCH_PARAM_BUFFER_POINTER
            args.as_ptr() as *mut c_void,
            marker(2), // CU_LAUNCH_PARAM_BUFFER_SIZE
            (&mut size as *mut usize).cast(),
            core::ptr::null_mut(), // CU_LAUNCH_PARAM_END
        ];
        self.in_context(ctx, || {
            // SAFETY: the caller's contract; `extra` is the documented END-terminated list,
            // and the driver copies the parameter buffer before returning.
            self.check("cuLaunchKernel", unsafe {
                (self.launch_kernel)(
                    f,
                    grid[0],
                    grid[1],
                    grid[2],
                    block[0],
                    block[1],
                    block[2],
                    shared,
                    stream,
                    core::ptr::null_mut(),
                    extra.as_mut_ptr(),
                )
            })
        })
    }

    /// Enqueues a copy of `bytes` from device address `src` to `dst` on `stream` (no wait: a
    /// kernel launched after it on the stream sees the copy).
    ///
    /// # Safety
    /// `src` and `dst` are device buffers of at least `bytes` bytes, valid on `stream`, that do
    /// not overlap.
    pub(crate) unsafe fn copy_on_device(
        &self,
        dst: DevicePtr,
        src: DevicePtr,
        bytes: usize,
        stream: *mut c_void,
    ) -> Result<(), DriverError> {
        // SAFETY: the caller's contract.
        self.check("cuMemcpyDtoDAsync", unsafe {
            (self.memcpy_dtod_async)(dst, src, bytes, stream)
        })
    }

    /// Copies `out.len()` bytes at device address `src` into `out`, in `stream`'s order, and
    /// waits for the stream: the host then holds what the op's operand holds when it runs.
    ///
    /// # Safety
    /// `src` is a device buffer of at least `out.len()` bytes, valid on `stream`.
    pub(crate) unsafe fn copy_to_host(
        &self,
        out: &mut [u8],
        src: DevicePtr,
        stream: *mut c_void,
    ) -> Result<(), DriverError> {
        // SAFETY: the caller's contract for `src`; `out` is writable for its length.
        self.check("cuMemcpyDtoHAsync", unsafe {
            (self.memcpy_dtoh_async)(out.as_mut_ptr().cast(), src, out.len(), stream)
        })?;
        // SAFETY: waits for the copy enqueued above before `out` is read.
        self.check("cuStreamSynchronize", unsafe {
            (self.stream_synchronize)(stream)
        })
    }
}
