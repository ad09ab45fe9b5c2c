//! [`CallCx`]: checked views of one call frame's arguments, results and attributes.

use super::abi::*;
use crate::error::{OpError, Refusal};
use crate::tensor::{ANY_RANK, TensorMut, TensorRef, element_count};
use crate::types::{Element, ElementType};
use core::cell::Cell;
use core::ffi::c_void;

pub(super) use super::dtype_name::element_name;

/// A view of one call: arguments, results and attributes, each checked before use.
pub struct CallCx<'f> {
    pub(super) op: &'static str,
    pub(super) frame: &'f XLA_FFI_CallFrame,
    /// Results already handed out (each at most once, so that writable views never alias).
    taken: Cell<u64>,
}

impl<'f> CallCx<'f> {
    /// A view of `frame`, a call of the op `op`.
    pub(super) fn new(op: &'static str, frame: &'f XLA_FFI_CallFrame) -> Self {
        CallCx {
            op,
            frame,
            taken: Cell::new(0),
        }
    }
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
pub(super) fn op_err(op: &str, refusal: Refusal, message: impl AsRef<str>) -> OpError {
    OpError::invalid_argument(format!(
        "custom op `{op}` [{refusal}]: {}",
        message.as_ref()
    ))
    .with_refusal(refusal)
}

/// A raw buffer's facts, read from the frame.
pub(super) struct Raw<'f> {
    pub(super) dtype: i32,
    pub(super) data: *mut c_void,
    pub(super) dims: &'f [i64],
}

impl<'f> CallCx<'f> {
    #[inline]
    pub(super) fn raw(&self, is_arg: bool, i: usize) -> Result<Raw<'f>, OpError> {
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

    /// Checks element type and rank, and returns the data pointer and element count.
    pub(super) fn typed<T: Element>(
        &self,
        raw: &Raw<'f>,
        name: &str,
        rank: usize,
    ) -> Result<usize, OpError> {
        self.typed_as(raw, name, rank, T::ELEMENT_TYPE, core::mem::align_of::<T>())
    }

    /// [`typed`](CallCx::typed) for element type `element`, whose Rust type is aligned to
    /// `align` (a packed type's, 1).
    pub(super) fn typed_as(
        &self,
        raw: &Raw<'f>,
        name: &str,
        rank: usize,
        element: ElementType,
        align: usize,
    ) -> Result<usize, OpError> {
        if raw.dtype as u32 != element.xla_code() {
            return Err(op_err(
                self.op,
                Refusal::WrongDtype,
                format!(
                    "parameter `{name}`: expected a tensor of {element}, got {}",
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
        let n = element_count(raw.dims).map_err(|e| {
            op_err(
                self.op,
                Refusal::BadShape,
                format!("parameter `{name}`: {e}"),
            )
        })?;
        // The bytes must be a length a slice can have (no wrapped `n * size`).
        if element
            .packed_bytes(n)
            .is_none_or(|b| b > isize::MAX as usize)
        {
            return Err(op_err(
                self.op,
                Refusal::BadShape,
                format!(
                    "parameter `{name}`: shape {:?} spans more bytes than memory",
                    raw.dims
                ),
            ));
        }
        if n > 0 && raw.data.is_null() {
            return Err(op_err(
                self.op,
                Refusal::NullData,
                format!("parameter `{name}`: {n} elements at a null pointer"),
            ));
        }
        if n > 0 && !(raw.data as usize).is_multiple_of(align) {
            return Err(op_err(
                self.op,
                Refusal::Misaligned,
                format!(
                    "parameter `{name}`: buffer at {:p} is not aligned for {element}",
                    raw.data
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
        if n == 0 {
            return Ok(TensorRef::from_checked(&[], raw.dims));
        }
        if T::ELEMENT_TYPE == ElementType::Bool {
            // SAFETY: XLA's buffer holds `n` one-byte elements (checked dtype and count), valid
            // and unwritten for the call.
            unsafe { self.check_bools(raw.data as *const u8, n, name)? };
        }
        // SAFETY: XLA's buffer holds `n` elements of the checked dtype, aligned (checked),
        // valid and not written by anyone else for the call (inputs are read-only; every
        // output's memory is checked not to overlap it in `output_view`). `Element` is sealed
        // and its size is the dtype's byte size (asserted at compile time), and a `bool`
        // buffer was checked above to hold only 0 and 1, so every element is a valid `T`.
        let data = unsafe { core::slice::from_raw_parts(raw.data as *const T, n) };
        Ok(TensorRef::from_checked(data, raw.dims))
    }

    /// Refuses a `bool` buffer holding a byte other than 0 and 1 (`[bad_bool]`), naming
    /// parameter `name`.
    ///
    /// # Safety
    /// `data` points at `n` bytes, readable for the call.
    pub(super) unsafe fn check_bools(
        &self,
        data: *const u8,
        n: usize,
        name: &str,
    ) -> Result<(), OpError> {
        // SAFETY: the caller's contract; read as bytes, any value is fine.
        let bytes = unsafe { core::slice::from_raw_parts(data, n) };
        match bytes.iter().position(|&b| b > 1) {
            None => Ok(()),
            Some(at) => Err(op_err(
                self.op,
                Refusal::BadBool,
                format!(
                    "parameter `{name}`: element {at} is the byte {}, a bool is 0 or 1",
                    bytes[at]
                ),
            )),
        }
    }

    /// The byte range (start, length) of every argument (`is_arg`) or result buffer, with its
    /// index.
    pub(super) fn buffer_ranges(
        &self,
        is_arg: bool,
    ) -> impl Iterator<Item = (usize, (usize, usize))> + '_ {
        let (a, r) = self.counts();
        (0..if is_arg { a } else { r }).filter_map(move |i| {
            let raw = self.raw(is_arg, i).ok()?;
            let n = element_count(raw.dims).ok()?;
            // The bytes it spans (packed types: several elements a byte).
            let len = u32::try_from(raw.dtype)
                .ok()
                .and_then(ElementType::from_xla_code)
                .map_or(Some(n), |e| e.packed_bytes(n))
                .unwrap_or(usize::MAX);
            Some((i, (raw.data as usize, len)))
        })
    }

    #[inline]
    pub(super) fn take(&self, i: usize, name: &str) -> Result<(), OpError> {
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

    /// The XLA dtype code of argument `i`.
    pub(super) fn arg_dtype(&self, i: usize) -> Result<i32, OpError> {
        self.raw(true, i).map(|r| r.dtype)
    }

    /// Dimensions of argument `i` (`None` when there is no such buffer: the shape checks then
    /// fail, and binding the argument itself reports why).
    #[inline]
    pub(super) fn arg_dims(&self, i: usize) -> Option<&'f [i64]> {
        self.raw(true, i).ok().map(|r| r.dims)
    }

    /// Result `i` as a writable view, after `fits` accepted XLA's dimensions; `expected`
    /// gives the shape for the error message (only called on a mismatch).
    pub(super) fn output_view<T: Element, const RANK: usize>(
        &self,
        i: usize,
        name: &str,
        fits: impl FnOnce(&[i64]) -> bool,
        expected: impl FnOnce() -> Result<Vec<i64>, OpError>,
    ) -> Result<TensorMut<'f, T, RANK>, OpError> {
        let align = core::mem::align_of::<T>();
        let (raw, n, _) =
            self.claim_sized_output(i, name, T::ELEMENT_TYPE, align, fits, expected)?;
        if n == 0 {
            return Ok(TensorMut::from_checked(&mut [], raw.dims));
        }
        if T::ELEMENT_TYPE == ElementType::Bool {
            // SAFETY: the result buffer holds `n` one-byte elements, valid and writable for the
            // call and not referenced elsewhere (checked above). XLA does not initialise it: it
            // is zeroed (all `false`), so that a kernel reading its output reads valid bools.
            unsafe { core::ptr::write_bytes(raw.data as *mut u8, 0, n) };
        }
        // SAFETY: XLA's result buffer holds `n` elements of the checked dtype, aligned, valid
        // for the call; it is handed out once (`take`) and overlaps no input and no other
        // result, so this is the only reference to it. `Element` is sealed with the dtype's
        // byte size; a `bool` buffer was zeroed above, and the other element types accept any
        // bytes.
        let data = unsafe { core::slice::from_raw_parts_mut(raw.data as *mut T, n) };
        Ok(TensorMut::from_checked(data, raw.dims))
    }

    /// Result `i` as an output of `element` (aligned to `align`): XLA's dimensions accepted by
    /// `fits` (else, after the element type and rank, the shape `expected` gives, in the
    /// error), then claimed for one writable view. Its element count and bytes (packed for a
    /// sub-byte type).
    pub(super) fn claim_sized_output(
        &self,
        i: usize,
        name: &str,
        element: ElementType,
        align: usize,
        fits: impl FnOnce(&[i64]) -> bool,
        expected: impl FnOnce() -> Result<Vec<i64>, OpError>,
    ) -> Result<(Raw<'f>, usize, usize), OpError> {
        let raw = self.raw(false, i)?;
        if !fits(raw.dims) {
            let want = expected()?;
            // Element type and rank first, as for an input, then the shape.
            self.typed_as(&raw, name, want.len(), element, align)?;
            return Err(op_err(
                self.op,
                Refusal::WrongShape,
                format!(
                    "output `{name}`: expected shape {want:?}, XLA passed {:?}",
                    raw.dims
                ),
            ));
        }
        let n = self.typed_as(&raw, name, raw.dims.len(), element, align)?;
        // `typed_as` refused a count whose bytes do not fit.
        let bytes = element.packed_bytes(n).unwrap_or(usize::MAX);
        self.claim_output(i, name, raw.data as usize, bytes, None)?;
        Ok((raw, n, bytes))
    }

    /// Takes result `i` (`name`), the `bytes` at `start`, for one writable view: refused if it
    /// overlaps an input or another result, or was taken before. `own_input`, for a tensor
    /// updated in place, is its operand's index: that operand may be the same buffer (XLA
    /// aliased them), never a part of it.
    pub(super) fn claim_output(
        &self,
        i: usize,
        name: &str,
        start: usize,
        bytes: usize,
        own_input: Option<usize>,
    ) -> Result<(), OpError> {
        let overlaps = |(at, len): (usize, usize)| {
            bytes > 0
                && len > 0
                && start < at.saturating_add(len)
                && at < start.saturating_add(bytes)
        };
        let what = match own_input {
            Some(_) => format!("`{name}`, updated in place,"),
            None => format!("output `{name}`"),
        };
        if let Some((j, _)) = self
            .buffer_ranges(true)
            .find(|&(j, r)| overlaps(r) && !(own_input == Some(j) && r.0 == start))
        {
            return Err(op_err(
                self.op,
                Refusal::Overlap,
                format!("{what} overlaps input buffer {j}"),
            ));
        }
        if let Some((j, _)) = self
            .buffer_ranges(false)
            .find(|&(j, r)| j != i && overlaps(r))
        {
            return Err(op_err(
                self.op,
                Refusal::Overlap,
                format!("{what} overlaps result {j}"),
            ));
        }
        self.take(i, name)
    }
}
