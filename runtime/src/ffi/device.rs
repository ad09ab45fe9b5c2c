//! The CUDA side of a handler: the call's stream from XLA's API table, and the binder's views
//! of device buffers. A device buffer is checked as a host one is (element type, rank, shape,
//! count, null data, alignment, overlaps), except what would read its memory: `bool` bytes
//! are not checked on the device. An external's bytes are copied to the host and checked
//! there before any kernel runs.

use super::Binder;
use super::abi::*;
use crate::cuda::{Cuda, DeviceMut, DeviceRef, no_cuda};
use crate::descriptor::Descriptor;
use crate::error::OpError;
use crate::plan::{OpDef, ResultPlan};
use crate::types::Element;

/// Runs a generated CUDA handler's `body` on `frame` for the op `def`, with the call's
/// [`Cuda`] (its stream and context): as [`run`](super::run) does for a host handler, and
/// refused by name (`[no_cuda]`) where there is no driver or no stream.
///
/// # Safety
/// `frame` must be null or the call frame XLA passes to a typed-FFI handler registered for
/// platform CUDA, valid for the duration of this call.
pub unsafe fn run_cuda(
    frame: *mut XLA_FFI_CallFrame,
    def: &'static OpDef,
    body: impl FnOnce(&Binder<'_, '_>, &Cuda<'_>) -> Result<(), OpError>,
) -> *mut XLA_FFI_Error {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        super::run(frame, def, |b| {
            let stream = stream(b.cx.frame, b.cx.op)?;
            let cuda = Cuda::new(b.cx.op, stream)?;
            body(b, &cuda)
        })
    }
}

/// The call's stream, from the frame's API table (`XLA_FFI_Stream_Get`).
fn stream(frame: &XLA_FFI_CallFrame, op: &'static str) -> Result<*mut core::ffi::c_void, OpError> {
    let table = super::table::api_table(frame);
    let Some((table, get)) = table.and_then(|t| Some((t, t.stream_get?))) else {
        return Err(no_cuda(
            op,
            "the call gives no stream (XLA calls a CUDA handler with an API table of a known \
             version and an invoke context; this frame has neither)",
        ));
    };
    let mut args = XLA_FFI_Stream_Get_Args {
        struct_size: size_of::<XLA_FFI_Stream_Get_Args>(),
        extension_start: core::ptr::null_mut(),
        ctx: frame.ctx,
        stream: core::ptr::null_mut(),
    };
    // SAFETY: a function of XLA's table, called with the frame's invoke context and valid
    // arguments whose out-field it writes.
    let error = unsafe { get(&mut args) };
    if !error.is_null() {
        let message = super::table::take_message(table, error);
        return Err(no_cuda(
            op,
            &format!("XLA gave no stream for the call: {message}"),
        ));
    }
    Ok(args.stream)
}

impl<'f> Binder<'_, 'f> {
    /// The next parameter, a tensor input on the device (dtype, rank and count checked).
    pub fn device_input<T: Element, const RANK: usize>(
        &self,
    ) -> Result<DeviceRef<'f, T, RANK>, OpError> {
        let (name, o) = self.operand(super::bind::Want::Tensor)?;
        let raw = self.cx.raw(true, o)?;
        let n = self.cx.typed::<T>(&raw, name, RANK)?;
        Ok(DeviceRef::from_checked(raw.data as u64, raw.dims, n))
    }

    /// The next output on the device, its shape checked against the rule as
    /// [`output`](Binder::output)'s. XLA does not initialise it: the kernel writes every
    /// element.
    pub fn device_output<T: Element, const RANK: usize>(
        &self,
    ) -> Result<DeviceMut<'f, T, RANK>, OpError> {
        let (i, r, name) = self.next_result()?;
        let ResultPlan::Tensor { shape, .. } = r else {
            return Err(self.mismatch(name, "an output"));
        };
        let env = super::bind::FrameEnv(self.cx);
        let (raw, n, _) = self.cx.claim_sized_output(
            i,
            name,
            T::ELEMENT_TYPE,
            core::mem::align_of::<T>(),
            |got| shape.matches(got, &env),
            || self.expected_shape(name, shape, &env),
        )?;
        Ok(DeviceMut::from_checked(raw.data as u64, raw.dims, n))
    }

    /// The next parameter, a tensor updated in place (`#[inout]`) on the device: a writable
    /// view of its result, which holds the input's values. Where XLA aliased the two (one
    /// buffer) nothing is copied; where it passed a separate result, the input is copied into
    /// it on the call's stream first, so the kernel starts from the input's values.
    pub fn device_inout<T: Element, const RANK: usize>(
        &self,
        cuda: &Cuda<'_>,
    ) -> Result<DeviceMut<'f, T, RANK>, OpError> {
        let (name, o, ret) = self.next_inout()?;
        let (input, out, n) = self.cx.inplace_buffers::<T>(o, ret, name, RANK)?;
        let bytes = n * core::mem::size_of::<T>();
        let (start, from) = (out.data as usize, input.data as usize);
        // Its own operand may be the same buffer; any other overlap is refused.
        self.cx.claim_output(ret, name, start, bytes, Some(o))?;
        if n > 0 && start != from {
            // SAFETY: both buffers hold `bytes` bytes (checked dtype and the same shape) at
            // non-null device addresses valid on the call's stream, and do not overlap
            // (`claim_output` refused an overlap: the pointers differ, so the input range was
            // not exempt).
            unsafe { cuda.copy_on_device(start as u64, from as u64, bytes)? };
        }
        Ok(DeviceMut::from_checked(start as u64, out.dims, n))
    }

    /// The next parameter, an external in device memory: its buffer checked (a `ui8`
    /// vector) now, its bytes fetched by [`PendingExternal::fetch`] once every other
    /// parameter is bound, so that a bad buffer is refused before the device is waited for.
    pub fn device_external<T: Descriptor>(&self) -> Result<PendingExternal<'f, T>, OpError> {
        let (name, o) = self.operand(super::bind::Want::External)?;
        let raw = self.cx.raw(true, o)?;
        let len = self.cx.typed::<u8>(&raw, name, 1)?;
        Ok(PendingExternal {
            name,
            ptr: raw.data as u64,
            len,
            _t: core::marker::PhantomData,
        })
    }
}

/// An external on the device whose buffer was checked, its bytes not yet read.
#[derive(Debug)]
pub struct PendingExternal<'f, T> {
    name: &'f str,
    ptr: u64,
    len: usize,
    _t: core::marker::PhantomData<fn() -> T>,
}

impl<T: Descriptor> PendingExternal<'_, T> {
    /// Copies the bytes to the host on the call's stream (the one wait a CUDA call makes) and
    /// unpacks them with full validation, as [`external`](Binder::external) does: before any
    /// kernel runs.
    pub fn fetch(self, b: &Binder<'_, '_>, cuda: &Cuda<'_>) -> Result<T, OpError> {
        let mut bytes = vec![0u8; self.len];
        if self.len > 0 {
            // SAFETY: XLA's argument buffer holds `len` bytes (checked dtype u8, rank 1 and
            // count) at a non-null device address, valid on the call's stream.
            unsafe { cuda.copy_to_host(&mut bytes, self.ptr)? };
        }
        b.cx.unpack_external(&bytes, self.name)
    }
}
