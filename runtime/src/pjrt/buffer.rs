//! Buffers and events the plugin hands out, each owned by a Rust value that releases it once:
//! an [`Event`] is always awaited before it is destroyed (and before whatever it guards is
//! released), a buffer is destroyed on drop. Uploading host data and reading results.

use super::client::{Client, ClientInner};
use super::error::RunError;
use super::host::HostTensor;
use super::plugin::Plugin;
use super::sys::{self, Args};
use crate::descriptor::Descriptor;
use crate::types::{ElementType, TensorType};
use std::sync::Arc;

/// An event the plugin returned, owned: awaited, then destroyed, exactly once, whether
/// [`Event::wait`] is called or the value is dropped (the plugin is refused at load if it has
/// no `PJRT_Event_Await`).
pub(super) struct Event<'p> {
    plugin: &'p Plugin,
    raw: *mut sys::PJRT_Event,
}

impl<'p> Event<'p> {
    /// Takes ownership of `raw` (null: no event).
    pub(super) fn new(plugin: &'p Plugin, raw: *mut sys::PJRT_Event) -> Event<'p> {
        Event { plugin, raw }
    }

    /// Awaits the event; its error, if any, is the result. Destroys it.
    pub(super) fn wait(mut self) -> Result<(), RunError> {
        self.await_and_destroy()
    }

    fn await_and_destroy(&mut self) -> Result<(), RunError> {
        let raw = std::mem::replace(&mut self.raw, core::ptr::null_mut());
        if raw.is_null() {
            return Ok(());
        }
        let mut a = sys::PJRT_Event_Await_Args::new();
        a.event = raw;
        let result = self
            .plugin
            .call("PJRT_Event_Await", self.plugin.api.event_await, &mut a);
        let mut d = sys::PJRT_Event_Destroy_Args::new();
        d.event = raw;
        // An error destroying an awaited event leaves nothing to do.
        let _ = self
            .plugin
            .call("PJRT_Event_Destroy", self.plugin.api.event_destroy, &mut d);
        result
    }
}

impl Drop for Event<'_> {
    fn drop(&mut self) {
        // Dropped unawaited (an error path): still awaited first.
        let _ = self.await_and_destroy();
    }
}

/// A buffer the runner owns, destroyed on drop.
pub(super) struct Buffer<'p> {
    plugin: &'p Plugin,
    pub(super) raw: *mut sys::PJRT_Buffer,
}

impl<'p> Buffer<'p> {
    /// Takes ownership of `raw` (null: none).
    pub(super) fn new(plugin: &'p Plugin, raw: *mut sys::PJRT_Buffer) -> Buffer<'p> {
        Buffer { plugin, raw }
    }

    /// Gives up ownership: the caller destroys the buffer.
    pub(super) fn into_raw(mut self) -> *mut sys::PJRT_Buffer {
        std::mem::replace(&mut self.raw, core::ptr::null_mut())
    }
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

/// Copies `t` to device `device` of `client` (the plugin copies during the call), and returns
/// the new buffer, owned by the caller.
pub(super) fn upload(
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
    a.type_ = buffer_type(t.element());
    a.dims = t.dims().as_ptr();
    a.num_dims = t.dims().len();
    a.host_buffer_semantics = sys::HOST_BUFFER_IMMUTABLE_ONLY_DURING_CALL;
    a.device = client.devices[device];
    plugin.call(
        "PJRT_Client_BufferFromHostBuffer",
        plugin.api.client_buffer_from_host_buffer,
        &mut a,
    )?;
    // With `ImmutableOnlyDuringCall` the data is copied during the call; the event is still
    // awaited before `t` may go (it is ready at once).
    let buffer = Buffer::new(plugin, a.buffer);
    Event::new(plugin, a.done_with_host_buffer).wait()?;
    Ok(buffer.into_raw())
}

/// A tensor the plugin holds on the client's first device ([`Client::upload`]): give it to
/// many executions of one-device programs ([`Inputs::arg_placed`](super::Inputs::arg_placed)) without copying it again.
/// Never donated to an execution's outputs; freed when dropped.
pub struct DeviceTensor {
    client: Arc<ClientInner>,
    raw: *mut sys::PJRT_Buffer,
    ty: TensorType,
}

// SAFETY: a buffer of the CPU client (the only platform `Client::new` accepts), which the
// runner's tests give to executions from 8 threads at once; this value owns the buffer and
// destroys it once, in Drop.
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

    pub(super) fn client(&self) -> &Arc<ClientInner> {
        &self.client
    }

    pub(super) fn raw(&self) -> *mut sys::PJRT_Buffer {
        self.raw
    }
}

/// A packed `T` descriptor on the device ([`Client::upload_descriptor`]), for
/// [`Inputs::external_placed`](super::Inputs::external_placed).
pub struct DeviceDescriptor<T> {
    pub(super) tensor: DeviceTensor,
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

/// Reads an output buffer: in place when it is in host memory in row-major order, else
/// through `PJRT_Buffer_ToHostBuffer`.
pub(super) fn read_buffer(b: &Buffer<'_>, allow_in_place: bool) -> Result<HostTensor, RunError> {
    let plugin = b.plugin;
    let api = plugin.api;
    let mut et = sys::PJRT_Buffer_ElementType_Args::new();
    et.buffer = b.raw;
    plugin.call("PJRT_Buffer_ElementType", api.buffer_element_type, &mut et)?;
    let element = element_type(et.type_).ok_or_else(|| {
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
        // A packed sub-byte type is packed on the device and one element a byte on the host:
        // PJRT unpacks it.
        if allow_in_place && !element.is_packed() && in_place(b)? {
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
            Event::new(plugin, th.event).wait()?;
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

/// `PJRT_Buffer_Type` of an element type (these numbers are PJRT's, not XLA FFI's).
pub(super) fn buffer_type(t: crate::types::ElementType) -> core::ffi::c_int {
    use crate::types::ElementType as E;
    match t {
        E::Bool => 1,
        E::I8 => 2,
        E::I16 => 3,
        E::I32 => 4,
        E::I64 => 5,
        E::U8 => 6,
        E::U16 => 7,
        E::U32 => 8,
        E::U64 => 9,
        E::F16 => 10,
        E::F32 => 11,
        E::F64 => 12,
        E::BF16 => 13,
        E::C64 => 14,
        E::C128 => 15,
        E::F8E5M2 => 16,
        E::F8E4M3FN => 17,
        E::F8E4M3B11FNUZ => 18,
        E::F8E5M2FNUZ => 19,
        E::F8E4M3FNUZ => 20,
        E::F8E4M3 => 26,
        E::F8E3M4 => 27,
        E::F8E8M0FNU => 28,
        E::S4 => 21,
        E::U4 => 22,
        E::S2 => 24,
        E::U2 => 25,
        E::F4E2M1FN => 29,
    }
}

/// The element type of a `PJRT_Buffer_Type`, if customop has it.
pub(super) fn element_type(code: core::ffi::c_int) -> Option<crate::types::ElementType> {
    crate::types::ElementType::ALL
        .into_iter()
        .find(|t| buffer_type(*t) == code)
}
