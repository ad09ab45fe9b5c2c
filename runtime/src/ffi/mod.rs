//! XLA's typed FFI (custom call API version 4), from Rust: the ABI mirror, safe views over a
//! call frame, and the entry point that generated handlers call.
//!
//! No MLIR here: a kernel cdylib uses this module alone. All `unsafe` of customop's runtime
//! lives in this module, at the C boundary; everything a kernel sees is checked first.

pub mod abi;
mod attr;
mod bind;
mod eager;
mod refusal;

pub use attr::{ArrayAttrElement, AttrLit, AttrRef, AttrValue, Held};
pub use bind::{Binder, run};
pub use eager::{CallAttr, CallTensor, customop_call};
pub use refusal::Refusal;

use crate::descriptor::Descriptor;
use crate::tensor::{ANY_RANK, ErrorCode, OpError, TensorMut, TensorRef};
use crate::types::{Element, ElementType};
use abi::*;
use core::cell::Cell;
use core::ffi::c_void;
use std::ffi::CString;
use std::panic::{AssertUnwindSafe, catch_unwind};

/// A view of one call: arguments, results and attributes, each checked before use.
pub struct CallCx<'f> {
    op: &'static str,
    frame: &'f XLA_FFI_CallFrame,
    /// Results already handed out (each at most once, so that writable views never alias).
    taken: Cell<u64>,
}

impl core::fmt::Debug for CallCx<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let (a, r) = self.counts();
        f.debug_struct("CallCx")
            .field("op", &self.op)
            .field("args", &a)
            .field("rets", &r)
            .finish()
    }
}

/// The error, prefixed with the op's name and the refusal's code.
#[cold]
fn op_err(op: &str, refusal: Refusal, message: impl AsRef<str>) -> OpError {
    OpError::invalid_argument(format!(
        "custom op `{op}` [{refusal}]: {}",
        message.as_ref()
    ))
    .with_refusal(refusal)
}

fn element_name(code: i32) -> String {
    u32::try_from(code)
        .ok()
        .and_then(ElementType::from_xla_code)
        .map(|e| e.to_string())
        .unwrap_or_else(|| format!("XLA dtype {code}"))
}

/// A raw buffer's facts, read from the frame.
struct Raw<'f> {
    dtype: i32,
    data: *mut c_void,
    dims: &'f [i64],
}

impl<'f> CallCx<'f> {
    #[inline]
    fn raw(&self, is_arg: bool, i: usize) -> Result<Raw<'f>, OpError> {
        let (size, types, ptrs, buffer_type, what) = if is_arg {
            let a = &self.frame.args;
            (a.size, a.types, a.args, XLA_FFI_ARG_TYPE_BUFFER, "argument")
        } else {
            let r = &self.frame.rets;
            (r.size, r.types, r.rets, XLA_FFI_RET_TYPE_BUFFER, "result")
        };
        if i as i64 >= size || types.is_null() || ptrs.is_null() {
            return Err(op_err(
                self.op,
                Refusal::NoSuchBuffer,
                format!("XLA passed {size} {what}s; there is no {what} {i}"),
            ));
        }
        // SAFETY: XLA's call frame holds `size` valid entries in `types` and `args`/`rets`
        // for the duration of the call, and `i < size` was checked above.
        let (ty, ptr) = unsafe { (*types.add(i), *ptrs.add(i)) };
        if ty != buffer_type || ptr.is_null() {
            return Err(op_err(
                self.op,
                Refusal::NotABuffer,
                format!("{what} {i} is not a buffer"),
            ));
        }
        // SAFETY: a BUFFER entry points at an XLA_FFI_Buffer that lives for the call.
        let b = unsafe { &*(ptr as *const XLA_FFI_Buffer) };
        let dims: &'f [i64] = if b.rank <= 0 || b.dims.is_null() {
            &[]
        } else {
            // SAFETY: `dims` holds `rank` entries, valid for the call.
            unsafe { core::slice::from_raw_parts(b.dims, b.rank as usize) }
        };
        Ok(Raw {
            dtype: b.dtype,
            data: b.data,
            dims,
        })
    }

    #[inline]
    fn element_count(&self, name: &str, dims: &[i64]) -> Result<usize, OpError> {
        let mut n: usize = 1;
        for &d in dims {
            let d = usize::try_from(d).map_err(|_| {
                op_err(
                    self.op,
                    Refusal::BadShape,
                    format!("`{name}` has a negative dimension"),
                )
            })?;
            n = n.checked_mul(d).ok_or_else(|| {
                op_err(
                    self.op,
                    Refusal::BadShape,
                    format!("`{name}`'s shape overflows"),
                )
            })?;
        }
        Ok(n)
    }

    /// Checks element type and rank, and returns the data pointer and element count.
    fn typed<T: Element>(&self, raw: &Raw<'f>, name: &str, rank: usize) -> Result<usize, OpError> {
        if raw.dtype as u32 != T::ELEMENT_TYPE.xla_code() {
            return Err(op_err(
                self.op,
                Refusal::WrongDtype,
                format!(
                    "parameter `{name}`: expected a tensor of {}, got {}",
                    T::ELEMENT_TYPE,
                    element_name(raw.dtype)
                ),
            ));
        }
        if rank != ANY_RANK && raw.dims.len() != rank {
            return Err(op_err(
                self.op,
                Refusal::WrongRank,
                format!(
                    "parameter `{name}`: expected rank {rank}, got shape {:?}",
                    raw.dims
                ),
            ));
        }
        let n = self.element_count(name, raw.dims)?;
        if n > 0 && raw.data.is_null() {
            return Err(op_err(
                self.op,
                Refusal::NullData,
                format!("parameter `{name}`: {n} elements at a null pointer"),
            ));
        }
        if n > 0 && (raw.data as usize) % core::mem::align_of::<T>() != 0 {
            return Err(op_err(
                self.op,
                Refusal::Misaligned,
                format!(
                    "parameter `{name}`: buffer at {:p} is not aligned for {}",
                    raw.data,
                    T::ELEMENT_TYPE
                ),
            ));
        }
        Ok(n)
    }

    /// The number of arguments and results XLA passed.
    #[inline]
    pub fn counts(&self) -> (usize, usize) {
        (
            self.frame.args.size.max(0) as usize,
            self.frame.rets.size.max(0) as usize,
        )
    }

    /// Checks the numbers of arguments and results against the schema.
    #[inline]
    pub fn expect_counts(&self, args: usize, rets: usize) -> Result<(), OpError> {
        let (a, r) = self.counts();
        if (a, r) != (args, rets) {
            return Err(op_err(
                self.op,
                Refusal::WrongCount,
                format!("expected {args} operands and {rets} results, XLA passed {a} and {r}"),
            ));
        }
        Ok(())
    }

    /// Argument `i` as a read-only tensor of `T` (rank `RANK`, or any).
    pub fn tensor_ref<T: Element, const RANK: usize>(
        &self,
        i: usize,
        name: &str,
    ) -> Result<TensorRef<'f, T, RANK>, OpError> {
        let raw = self.raw(true, i)?;
        let n = self.typed::<T>(&raw, name, RANK)?;
        let data: &'f [T] = if n == 0 {
            &[]
        } else {
            // SAFETY: XLA's buffer holds `n` elements of the checked dtype, aligned (checked),
            // valid and not written by anyone else for the call (inputs are read-only; every
            // output's memory is checked not to overlap it in `output_view`).
            unsafe { core::slice::from_raw_parts(raw.data as *const T, n) }
        };
        TensorRef::new(data, raw.dims).map_err(|e| {
            op_err(
                self.op,
                Refusal::BadShape,
                format!("parameter `{name}`: {e}"),
            )
        })
    }

    /// The byte range of every argument buffer (start, length).
    fn arg_ranges(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        let (a, _) = self.counts();
        (0..a).filter_map(|i| {
            let raw = self.raw(true, i).ok()?;
            let n = self.element_count("", raw.dims).ok()?;
            let bytes = u32::try_from(raw.dtype)
                .ok()
                .and_then(ElementType::from_xla_code)
                .map_or(1, |e| e.byte_size());
            Some((raw.data as usize, n * bytes))
        })
    }

    #[inline]
    fn take(&self, i: usize, name: &str) -> Result<(), OpError> {
        if i >= 64 {
            return Err(op_err(
                self.op,
                Refusal::TooManyResults,
                "more than 64 results are not supported",
            ));
        }
        let bit = 1u64 << i;
        if self.taken.get() & bit != 0 {
            return Err(op_err(
                self.op,
                Refusal::TakenTwice,
                format!("result {i} (`{name}`) requested twice"),
            ));
        }
        self.taken.set(self.taken.get() | bit);
        Ok(())
    }

    /// Dimensions of argument `i` (empty when there is no such buffer: the shape checks then
    /// fail, and binding the argument itself reports why).
    #[inline]
    fn arg_dims(&self, i: usize) -> &'f [i64] {
        self.raw(true, i).map_or(&[], |r| r.dims)
    }

    /// Result `i` as a writable view, after `fits` accepted XLA's dimensions; `expected`
    /// gives the shape for the error message (only called on a mismatch).
    fn output_view<T: Element, const RANK: usize>(
        &self,
        i: usize,
        name: &str,
        fits: impl FnOnce(&[i64]) -> bool,
        expected: impl FnOnce() -> Result<Vec<i64>, OpError>,
    ) -> Result<TensorMut<'f, T, RANK>, OpError> {
        let raw = self.raw(false, i)?;
        if !fits(raw.dims) {
            let want = expected()?;
            // Element type and rank first, as for an input, then the shape.
            self.typed::<T>(&raw, name, want.len())?;
            return Err(op_err(
                self.op,
                Refusal::WrongShape,
                format!(
                    "output `{name}`: expected shape {want:?}, XLA passed {:?}",
                    raw.dims
                ),
            ));
        }
        let n = self.typed::<T>(&raw, name, raw.dims.len())?;
        let bytes = n * core::mem::size_of::<T>();
        let start = raw.data as usize;
        for (a, len) in self.arg_ranges() {
            if bytes > 0 && len > 0 && start < a + len && a < start + bytes {
                return Err(op_err(
                    self.op,
                    Refusal::Overlap,
                    format!("output `{name}` overlaps an input buffer"),
                ));
            }
        }
        self.take(i, name)?;
        let data: &'f mut [T] = if n == 0 {
            &mut []
        } else {
            // SAFETY: XLA's result buffer holds `n` elements of the checked dtype, aligned,
            // valid for the call; it is handed out once (`take`) and overlaps no input, so this
            // is the only reference to it.
            unsafe { core::slice::from_raw_parts_mut(raw.data as *mut T, n) }
        };
        TensorMut::new(data, raw.dims)
            .map_err(|e| op_err(self.op, Refusal::BadShape, format!("output `{name}`: {e}")))
    }

    /// The bytes of argument `i`, which must be a `ui8` vector.
    fn bytes_arg(&self, i: usize, name: &str) -> Result<&'f [u8], OpError> {
        Ok(self.tensor_ref::<u8, 1>(i, name)?.into_slice())
    }

    /// Unpacks argument `i`, a `tensor<Nxui8>` of packed `T`, with full validation.
    pub fn external<T: Descriptor>(&self, i: usize, name: &str) -> Result<T, OpError> {
        let bytes = self.bytes_arg(i, name)?;
        T::unpack(bytes).map_err(|e| {
            op_err(
                self.op,
                Refusal::BadDescriptor,
                format!("external `{name}` ({}): {e}", e.kind().name()),
            )
        })
    }

    /// Argument `i`, a `tensor<Nxui8>` of packed `T`, validated and borrowed in place.
    pub fn external_ref<T: crate::descriptor::ReprC>(
        &self,
        i: usize,
        name: &str,
    ) -> Result<&'f T, OpError> {
        let bytes = self.bytes_arg(i, name)?;
        T::view(bytes).map_err(|e| {
            let refusal = match e.kind() {
                crate::descriptor::ErrorKind::Misaligned { .. } => Refusal::Misaligned,
                _ => Refusal::BadDescriptor,
            };
            op_err(
                self.op,
                refusal,
                format!("external `{name}` ({}): {e}", e.kind().name()),
            )
        })
    }

    /// Packs `value` into result `i`, a `tensor<Nxui8>` of `T`'s packed size.
    pub fn write_descriptor<T: Descriptor>(
        &self,
        i: usize,
        name: &str,
        value: &T,
    ) -> Result<(), OpError> {
        let raw = self.raw(false, i)?;
        let n = self.typed::<u8>(&raw, name, 1)?;
        self.take(i, name)?;
        if n == 0 {
            return Err(op_err(
                self.op,
                Refusal::WrongShape,
                format!("result `{name}` is empty"),
            ));
        }
        // SAFETY: a `ui8` buffer of `n` bytes, valid for the call, handed out once (`take`).
        // It may alias the external's operand (output_operand_aliases); the operand's bytes
        // were copied into `value` before this, and no view of them is alive.
        let out = unsafe { core::slice::from_raw_parts_mut(raw.data as *mut u8, n) };
        let written = value.pack_into(out).map_err(|e| {
            op_err(
                self.op,
                Refusal::WrongShape,
                format!("result `{name}`: {e}"),
            )
        })?;
        if written != n {
            return Err(op_err(
                self.op,
                Refusal::WrongShape,
                format!(
                    "result `{name}` has {n} bytes, `{}` packs to {written}",
                    T::NAME
                ),
            ));
        }
        Ok(())
    }

    fn attr(&self, name: &str) -> Result<(i32, *mut c_void), OpError> {
        let a = &self.frame.attrs;
        if a.size > 0 && !a.types.is_null() && !a.names.is_null() && !a.attrs.is_null() {
            for i in 0..a.size as usize {
                // SAFETY: `size` entries of `types`, `names` and `attrs` are valid for the call.
                let (ty, span, ptr) =
                    unsafe { (*a.types.add(i), *a.names.add(i), *a.attrs.add(i)) };
                if span.is_null() {
                    continue;
                }
                // SAFETY: a name is a byte span valid for the call.
                let span = unsafe { &*span };
                let key: &[u8] = if span.ptr.is_null() {
                    &[]
                } else {
                    // SAFETY: `ptr` points at `len` bytes.
                    unsafe { core::slice::from_raw_parts(span.ptr as *const u8, span.len) }
                };
                if key == name.as_bytes() {
                    if ptr.is_null() {
                        break;
                    }
                    return Ok((ty, ptr));
                }
            }
        }
        Err(op_err(
            self.op,
            Refusal::MissingAttribute,
            format!("attribute `{name}` is missing from backend_config"),
        ))
    }

    /// The value pointer of scalar attribute `name`, checked to have element type `element`.
    fn scalar_attr(&self, name: &str, element: ElementType) -> Result<*const c_void, OpError> {
        let (ty, ptr) = self.attr(name)?;
        if ty != XLA_FFI_ATTR_TYPE_SCALAR {
            return Err(op_err(
                self.op,
                Refusal::WrongAttributeType,
                format!("attribute `{name}` is not a scalar"),
            ));
        }
        // SAFETY: a SCALAR attribute points at an XLA_FFI_Scalar valid for the call.
        let s = unsafe { &*(ptr as *const XLA_FFI_Scalar) };
        if s.dtype as u32 != element.xla_code() || s.value.is_null() {
            return Err(op_err(
                self.op,
                Refusal::WrongAttributeType,
                format!(
                    "attribute `{name}`: expected {element}, got {}",
                    element_name(s.dtype)
                ),
            ));
        }
        Ok(s.value as *const c_void)
    }

    /// The scalar attribute `name` of type `T` (a mismatch is an error, not garbage); for
    /// `bool` use [`CallCx::attr_bool`].
    pub fn attr_scalar<T: Element + NotBool>(&self, name: &str) -> Result<T, OpError> {
        let value = self.scalar_attr(name, T::ELEMENT_TYPE)?;
        // SAFETY: the scalar's value has the checked dtype, and every bit pattern of a
        // `NotBool` type is a value; read unaligned to be safe.
        Ok(unsafe { core::ptr::read_unaligned(value as *const T) })
    }

    /// The boolean attribute `name`.
    pub fn attr_bool(&self, name: &str) -> Result<bool, OpError> {
        let value = self.scalar_attr(name, ElementType::Bool)?;
        // SAFETY: a PRED scalar is one byte; read it as u8, not as bool, so any byte is fine.
        let byte = unsafe { core::ptr::read(value as *const u8) };
        Ok(byte != 0)
    }

    /// The string attribute `name`, as bytes.
    pub fn attr_bytes(&self, name: &str) -> Result<&'f [u8], OpError> {
        let (ty, ptr) = self.attr(name)?;
        if ty != XLA_FFI_ATTR_TYPE_STRING {
            return Err(op_err(
                self.op,
                Refusal::WrongAttributeType,
                format!("attribute `{name}` is not a string"),
            ));
        }
        // SAFETY: a STRING attribute points at a byte span valid for the call.
        let s = unsafe { &*(ptr as *const XLA_FFI_ByteSpan) };
        if s.ptr.is_null() {
            return Ok(&[]);
        }
        // SAFETY: `ptr` points at `len` bytes valid for the call.
        Ok(unsafe { core::slice::from_raw_parts(s.ptr as *const u8, s.len) })
    }

    /// The string attribute `name`, which must be UTF-8.
    pub fn attr_str(&self, name: &str) -> Result<&'f str, OpError> {
        core::str::from_utf8(self.attr_bytes(name)?).map_err(|_| {
            op_err(
                self.op,
                Refusal::BadAttribute,
                format!("attribute `{name}` is not UTF-8"),
            )
        })
    }

    /// The array attribute `name` of `T`.
    pub fn attr_array<T: Element>(&self, name: &str) -> Result<&'f [T], OpError> {
        let (ty, ptr) = self.attr(name)?;
        if ty != XLA_FFI_ATTR_TYPE_ARRAY {
            return Err(op_err(
                self.op,
                Refusal::WrongAttributeType,
                format!("attribute `{name}` is not an array"),
            ));
        }
        // SAFETY: an ARRAY attribute points at an XLA_FFI_Array valid for the call.
        let a = unsafe { &*(ptr as *const XLA_FFI_Array) };
        if a.dtype as u32 != T::ELEMENT_TYPE.xla_code() {
            return Err(op_err(
                self.op,
                Refusal::WrongAttributeType,
                format!(
                    "attribute `{name}`: expected an array of {}, got {}",
                    T::ELEMENT_TYPE,
                    element_name(a.dtype)
                ),
            ));
        }
        if a.size == 0 {
            return Ok(&[]);
        }
        if a.data.is_null() || (a.data as usize) % core::mem::align_of::<T>() != 0 {
            return Err(op_err(
                self.op,
                Refusal::BadAttribute,
                format!("attribute `{name}`: misaligned array"),
            ));
        }
        // SAFETY: `size` elements of the checked dtype, aligned, valid for the call.
        Ok(unsafe { core::slice::from_raw_parts(a.data as *const T, a.size) })
    }

    /// The descriptor attribute `name`: wire-format bytes, unpacked with full validation.
    pub fn attr_descriptor<T: Descriptor>(&self, name: &str) -> Result<T, OpError> {
        T::unpack(self.attr_bytes(name)?).map_err(|e| {
            op_err(
                self.op,
                Refusal::BadDescriptor,
                format!("attribute `{name}` ({}): {e}", e.kind().name()),
            )
        })
    }
}

/// Element types other than `bool` (every bit pattern is a value, so reading one is safe).
pub trait NotBool: Element {}
macro_rules! not_bool {
    ($($t:ty),*) => {$(impl NotBool for $t {})*};
}
not_bool!(i8, i16, i32, i64, u8, u16, u32, u64, f32, f64);

/// The JSON manifest of every op in this binary: names, targets, handler symbols, schemas
/// (with descriptor layouts).
pub fn manifest_json() -> String {
    let mut ops: Vec<serde_json::Value> = crate::schema::registry::ops()
        .map(|e| {
            let schema = (e.schema)();
            serde_json::json!({
                "name": schema.name,
                "target": schema.target,
                "handler_symbol": e.handler_symbol,
                "schema": schema,
                "schema_string": schema.schema_string(),
            })
        })
        .collect();
    ops.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    serde_json::json!({
        "customop_version": env!("CARGO_PKG_VERSION"),
        "wire_format_version": crate::descriptor::FORMAT_VERSION,
        "ops": ops,
    })
    .to_string()
}

/// Exported from every binary that links customop: the manifest as a NUL-terminated JSON
/// string, owned by the library (valid until it is unloaded).
#[unsafe(no_mangle)]
pub extern "C" fn customop_manifest() -> *const core::ffi::c_char {
    static MANIFEST: std::sync::OnceLock<CString> = std::sync::OnceLock::new();
    MANIFEST
        .get_or_init(|| CString::new(manifest_json()).unwrap_or_default())
        .as_ptr()
}

/// Builds an XLA error from `e` with the frame's API, or null if XLA gave no way to.
fn make_error(frame: &XLA_FFI_CallFrame, e: &OpError) -> *mut XLA_FFI_Error {
    if frame.api.is_null() {
        return core::ptr::null_mut();
    }
    // SAFETY: `api` points at XLA's API table, valid for the call.
    let api = unsafe { &*frame.api };
    if api.struct_size < size_of::<XLA_FFI_Api>() {
        // Too short to hold `XLA_FFI_Error_Create`: nothing to call.
        return core::ptr::null_mut();
    }
    let Some(create) = api.error_create else {
        return core::ptr::null_mut();
    };
    let message = CString::new(e.message().replace('\0', "\\0")).unwrap_or_default();
    let mut args = XLA_FFI_Error_Create_Args {
        struct_size: core::mem::size_of::<XLA_FFI_Error_Create_Args>(),
        extension_start: core::ptr::null_mut(),
        message: message.as_ptr(),
        errc: e.code().xla_code(),
    };
    // SAFETY: XLA's XLA_FFI_Error_Create copies the message; `args` is valid for the call.
    unsafe { create(&mut args) }
}

/// The entry point of every generated handler.
///
/// Answers XLA's registration probe (the metadata extension) with the API version, ignores
/// stages other than execution, and runs `body` with a [`CallCx`]; an `Err` or a panic in the
/// body becomes an XLA error naming `op`, never an unwind into C.
///
/// # Safety
/// `frame` must be null or the call frame XLA passes to a typed-FFI handler, valid for the
/// duration of this call.
pub unsafe fn handle(
    frame: *mut XLA_FFI_CallFrame,
    op: &'static str,
    body: impl FnOnce(&CallCx<'_>) -> Result<(), OpError>,
) -> *mut XLA_FFI_Error {
    if frame.is_null() {
        return core::ptr::null_mut();
    }
    // SAFETY: the caller guarantees `frame` is a valid call frame for this call.
    let frame_ref = unsafe { &*frame };
    let mut ext = frame_ref.extension_start;
    while !ext.is_null() {
        // SAFETY: extensions form a linked list of valid nodes.
        let e = unsafe { &*ext };
        if e.type_ == XLA_FFI_EXTENSION_METADATA {
            // SAFETY: a metadata extension node is an XLA_FFI_Metadata_Extension.
            let m = unsafe { &*(ext as *const XLA_FFI_Metadata_Extension) };
            if !m.metadata.is_null() {
                // SAFETY: XLA passes a writable metadata struct to fill in.
                unsafe {
                    (*m.metadata).api_version.major_version = XLA_FFI_API_MAJOR;
                    (*m.metadata).api_version.minor_version = XLA_FFI_API_MINOR_SUPPORTED;
                }
            }
            return core::ptr::null_mut();
        }
        ext = e.next;
    }
    if frame_ref.stage != XLA_FFI_EXECUTION_STAGE_EXECUTE {
        return core::ptr::null_mut();
    }
    if !frame_ref.api.is_null() {
        // SAFETY: a non-null `api` points at XLA's API table; its header (size, extensions,
        // version) is the same in every version.
        let version = unsafe { &(*frame_ref.api).api_version };
        if version.major_version != XLA_FFI_API_MAJOR {
            // A table of another major version may have another layout: nothing in it is
            // called, and the kernel does not run. (XLA itself refuses to register a handler
            // whose metadata names another major version, so only a fabricated frame gets here.)
            return core::ptr::null_mut();
        }
    }
    // The header's STRUCT_SIZEs: what XLA writes, and the extent this runtime reads.
    let sizes = [
        (
            frame_ref.struct_size,
            XLA_FFI_CallFrame_STRUCT_SIZE,
            "call frame",
        ),
        (
            frame_ref.args.struct_size,
            XLA_FFI_Args_STRUCT_SIZE,
            "arguments",
        ),
        (
            frame_ref.rets.struct_size,
            XLA_FFI_Rets_STRUCT_SIZE,
            "results",
        ),
        (
            frame_ref.attrs.struct_size,
            XLA_FFI_Attrs_STRUCT_SIZE,
            "attributes",
        ),
    ];
    for (got, want, what) in sizes {
        if got < want {
            let e = op_err(
                op,
                Refusal::BadFrame,
                format!("the {what} struct has {got} bytes, this runtime reads {want}"),
            );
            return make_error(frame_ref, &e);
        }
    }
    let cx = CallCx {
        op,
        frame: frame_ref,
        taken: Cell::new(0),
    };
    let outcome = catch_unwind(AssertUnwindSafe(|| body(&cx)));
    let error = match outcome {
        Ok(Ok(())) => return core::ptr::null_mut(),
        Ok(Err(e)) if e.refusal().is_some() => e,
        Ok(Err(e)) => OpError::new(format!(
            "custom op `{op}` [{}]: {}",
            Refusal::KernelError,
            e.message()
        ))
        .with_code(e.code())
        .with_refusal(Refusal::KernelError),
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "no message".into());
            OpError::new(format!(
                "custom op `{op}` [{}]: the kernel panicked: {what}",
                Refusal::KernelPanic
            ))
            .with_code(ErrorCode::Internal)
            .with_refusal(Refusal::KernelPanic)
        }
    };
    make_error(frame_ref, &error)
}
