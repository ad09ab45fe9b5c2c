//! Tensors of packed sub-byte types (`i4`, `ui4`, `i2`, `ui2`, `f4E2M1FN`) in a call frame:
//! the same checks as dense tensors (element type, rank, a non-null buffer, outputs that
//! overlap nothing), with the buffer's length in packed bytes.

use super::CallCx;
use super::frame::{Raw, op_err};
use crate::error::{OpError, Refusal};
use crate::packed::{Packed, PackedMut, PackedRef};

impl<'f> CallCx<'f> {
    /// The packed bytes `raw` holds as a tensor of `T` of rank `rank`: type, rank, count and
    /// pointer checked as a dense tensor's are.
    fn packed_len<T: Packed>(
        &self,
        raw: &Raw<'f>,
        name: &str,
        rank: usize,
    ) -> Result<usize, OpError> {
        let n = self.typed_as(raw, name, rank, T::ELEMENT_TYPE, 1)?;
        T::ELEMENT_TYPE.packed_bytes(n).ok_or_else(|| {
            op_err(
                self.op,
                Refusal::BadShape,
                format!("parameter `{name}`: shape {:?} overflows", raw.dims),
            )
        })
    }

    /// Argument `i` as a read-only packed tensor of `T`.
    pub(super) fn packed_ref<T: Packed, const RANK: usize>(
        &self,
        i: usize,
        name: &str,
    ) -> Result<PackedRef<'f, T, RANK>, OpError> {
        let raw = self.raw(true, i)?;
        let bytes = self.packed_len::<T>(&raw, name, RANK)?;
        let data: &'f [u8] = if bytes == 0 {
            &[]
        } else {
            // SAFETY: XLA's buffer holds `bytes` packed bytes of the checked type and shape,
            // valid and unwritten for the call (every output is checked not to overlap it);
            // bytes have no alignment and every bit pattern of a packed type is a value.
            unsafe { core::slice::from_raw_parts(raw.data as *const u8, bytes) }
        };
        PackedRef::new(data, raw.dims).map_err(|e| {
            op_err(
                self.op,
                Refusal::BadShape,
                format!("parameter `{name}`: {e}"),
            )
        })
    }

    /// Result `i` as a writable packed tensor of `T`, after `fits` accepted XLA's dimensions
    /// (`expected` gives the shape for the error); its bytes are zeroed first, so that the
    /// kernel reads no uninitialised memory and spare bits are zero.
    pub(super) fn packed_view<T: Packed, const RANK: usize>(
        &self,
        i: usize,
        name: &str,
        fits: impl FnOnce(&[i64]) -> bool,
        expected: impl FnOnce() -> Result<Vec<i64>, OpError>,
    ) -> Result<PackedMut<'f, T, RANK>, OpError> {
        let (raw, _, bytes) =
            self.claim_sized_output(i, name, T::ELEMENT_TYPE, 1, fits, expected)?;
        let data: &'f mut [u8] = if bytes == 0 {
            &mut []
        } else {
            // SAFETY: the result buffer holds `bytes` bytes, valid and writable for the call,
            // handed out once (`take`) and overlapping no input and no other result; zeroed
            // here before any reference to it exists.
            unsafe {
                core::ptr::write_bytes(raw.data as *mut u8, 0, bytes);
                core::slice::from_raw_parts_mut(raw.data as *mut u8, bytes)
            }
        };
        PackedMut::new(data, raw.dims)
            .map_err(|e| op_err(self.op, Refusal::BadShape, format!("output `{name}`: {e}")))
    }
}
