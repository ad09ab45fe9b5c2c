//! [`Cuda`]: what an op's CUDA side receives first, the call's stream and a way to launch
//! kernels on it, and [`Args`], a kernel's parameters as its C declaration lays them out.

use super::driver::{DevicePtr, Driver, DriverError, driver};
use super::module::{Kernel, LoadError, function};
use crate::error::{OpError, Refusal};
use core::ffi::c_void;
use core::marker::PhantomData;

/// The CUDA side of one call: the stream the op runs on (XLA's, torch's current one) and its
/// context. Kernels launch on this stream only; nothing here waits for the device except the
/// check of an external's bytes.
pub struct Cuda<'f> {
    driver: &'static Driver,
    op: &'static str,
    stream: *mut c_void,
    ctx: *mut c_void,
    _call: PhantomData<&'f ()>,
}

impl core::fmt::Debug for Cuda<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Cuda")
            .field("op", &self.op)
            .field("stream", &self.stream)
            .field("driver", &self.driver.path)
            .finish()
    }
}

/// The error of a failed driver call, for op `op`.
#[cold]
pub(crate) fn driver_err(op: &str, e: &DriverError) -> OpError {
    OpError::new(format!("custom op `{op}` [{}]: {e}", Refusal::CudaFailed))
        .with_refusal(Refusal::CudaFailed)
}

/// The refusal of a call on a machine with no usable driver.
#[cold]
pub(crate) fn no_cuda(op: &str, why: &str) -> OpError {
    OpError::new(format!("custom op `{op}` [{}]: {why}", Refusal::NoCuda))
        .with_code(crate::error::ErrorCode::FailedPrecondition)
        .with_refusal(Refusal::NoCuda)
}

impl<'f> Cuda<'f> {
    /// The CUDA side of a call of `op` on `stream` (null: the legacy default stream).
    pub(crate) fn new(op: &'static str, stream: *mut c_void) -> Result<Self, OpError> {
        let driver = driver().map_err(|why| no_cuda(op, why))?;
        let ctx = driver
            .stream_context(stream)
            .map_err(|e| driver_err(op, &e))?;
        Ok(Cuda {
            driver,
            op,
            stream,
            ctx,
            _call: PhantomData,
        })
    }

    /// The stream (`CUstream`, the same handle as `cudaStream_t`), for work a kernel library
    /// enqueues through other CUDA libraries (cuBLAS, ...): on this stream only.
    pub fn stream(&self) -> *mut c_void {
        self.stream
    }

    /// Launches `kernel` on the call's stream with `grid` blocks of `block` threads,
    /// `shared_bytes` of dynamic shared memory, and `args` as its parameters. Its module is
    /// loaded into the stream's context on first use. Returns when the launch is enqueued.
    ///
    /// The arguments must be the kernel's parameters in its C declaration's order and types:
    /// nothing can check that (a device image carries no signature), so each kernel's host
    /// side is where its tests look.
    pub fn launch(
        &self,
        kernel: &Kernel,
        grid: impl Into<Dim3>,
        block: impl Into<Dim3>,
        shared_bytes: u32,
        args: &Args,
    ) -> Result<(), OpError> {
        let (grid, block) = (grid.into(), block.into());
        for (what, d) in [("grid", grid), ("block", block)] {
            if d.0.contains(&0) {
                return Err(OpError::new(format!(
                    "custom op `{}` [{}]: kernel `{}`: a {what} of {:?} has no threads (launch \
                     nothing for an empty tensor)",
                    self.op,
                    Refusal::CudaFailed,
                    kernel.name().to_string_lossy(),
                    d.0
                ))
                .with_refusal(Refusal::CudaFailed));
            }
        }
        let f = function(self.driver, self.ctx, kernel).map_err(|e| match e {
            LoadError::Image(m) => OpError::new(format!(
                "custom op `{}` [{}]: {m}",
                self.op,
                Refusal::CudaFailed
            ))
            .with_refusal(Refusal::CudaFailed),
            LoadError::Driver(e) => driver_err(self.op, &e),
        })?;
        // SAFETY: `f` is a function of a module loaded into this stream's context; the
        // parameters are the host side's to match to the kernel's declaration (this
        // function's contract, stated above), built from device views that the handler
        // checked and that live for the call, which XLA and torch keep alive until the
        // stream has run it.
        unsafe {
            self.driver.launch(
                f,
                grid.0,
                block.0,
                shared_bytes,
                (self.ctx, self.stream),
                &args.buf,
            )
        }
        .map_err(|e| driver_err(self.op, &e))
    }

    /// Enqueues a copy of `bytes` from `src` to `dst` on the call's stream.
    ///
    /// # Safety
    /// `src` and `dst` are device buffers of at least `bytes` bytes, valid on the call's
    /// stream, that do not overlap.
    pub(crate) unsafe fn copy_on_device(
        &self,
        dst: DevicePtr,
        src: DevicePtr,
        bytes: usize,
    ) -> Result<(), OpError> {
        // SAFETY: the caller's contract.
        unsafe { self.driver.copy_on_device(dst, src, bytes, self.stream) }
            .map_err(|e| driver_err(self.op, &e))
    }

    /// Copies `out.len()` bytes from device address `src` and waits for them.
    ///
    /// # Safety
    /// `src` is a device buffer of at least `out.len()` bytes, valid on the call's stream.
    pub(crate) unsafe fn copy_to_host(
        &self,
        out: &mut [u8],
        src: DevicePtr,
    ) -> Result<(), OpError> {
        // SAFETY: the caller's contract.
        unsafe { self.driver.copy_to_host(out, src, self.stream) }
            .map_err(|e| driver_err(self.op, &e))
    }
}

/// Grid or block dimensions: `n`, `(x, y)` or `(x, y, z)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dim3(pub [u32; 3]);

impl From<u32> for Dim3 {
    fn from(x: u32) -> Self {
        Dim3([x, 1, 1])
    }
}

impl From<(u32, u32)> for Dim3 {
    fn from((x, y): (u32, u32)) -> Self {
        Dim3([x, y, 1])
    }
}

impl From<(u32, u32, u32)> for Dim3 {
    fn from((x, y, z): (u32, u32, u32)) -> Self {
        Dim3([x, y, z])
    }
}

/// The blocks of `per_block` threads that cover `n` items (at least one), or a refusal when
/// they would exceed a grid's `x` limit (2³¹ − 1).
pub fn blocks(op_items: usize, per_block: u32) -> Result<u32, OpError> {
    let per = per_block.max(1) as usize;
    let n = op_items.div_ceil(per).max(1);
    u32::try_from(n)
        .ok()
        .filter(|&b| b <= i32::MAX as u32)
        .ok_or_else(|| {
            OpError::invalid_argument(format!(
                "{op_items} items in blocks of {per} need {n} blocks, more than a grid holds"
            ))
        })
}

/// A value a kernel parameter can be: its bytes are its C representation.
///
/// # Safety
/// Implemented for types with no padding and no invalid bit patterns, whose layout is the C
/// type's of the same name (`int32_t`, `float`, a device pointer as `CUdeviceptr`, ...).
pub unsafe trait KernelArg: Copy {}

macro_rules! kernel_args {
    ($($t:ty),*) => { $(
        // SAFETY: a primitive of C's size and alignment, without padding.
        unsafe impl KernelArg for $t {}
    )* };
}
kernel_args!(
    i8,
    i16,
    i32,
    i64,
    u8,
    u16,
    u32,
    u64,
    f32,
    f64,
    half::f16,
    half::bf16
);

/// A kernel's parameters, each at the offset C gives it (its natural alignment), in one
/// buffer: how the launch passes them (`CU_LAUNCH_PARAM_BUFFER_POINTER`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Args {
    buf: Vec<u8>,
}

impl Args {
    /// No parameters yet.
    pub fn new() -> Args {
        Args::default()
    }

    /// Appends `value` (a device address is a `u64`: [`DeviceRef::ptr`](super::DeviceRef::ptr)).
    pub fn arg<A: KernelArg>(mut self, value: A) -> Args {
        let align = core::mem::align_of::<A>();
        let at = self.buf.len().next_multiple_of(align);
        self.buf.resize(at, 0);
        // SAFETY: `KernelArg` types have no padding, so every byte of `value` is initialised.
        let bytes = unsafe {
            core::slice::from_raw_parts((&value as *const A).cast::<u8>(), size_of::<A>())
        };
        self.buf.extend_from_slice(bytes);
        self
    }

    /// The buffer as the launch passes it.
    pub fn bytes(&self) -> &[u8] {
        &self.buf
    }
}
