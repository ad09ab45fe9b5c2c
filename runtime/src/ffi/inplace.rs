//! A tensor updated in place (`#[inout]`): one operand and the result aliased to it. Where the
//! host aliases them (XLA with `output_operand_aliases`, a donated buffer under `jax.jit`),
//! they are one buffer and nothing is copied; where it does not (a separate result buffer),
//! the operand's values are copied into the result first, so the kernel always starts from
//! the input's values and its writes are the result.

use super::CallCx;
use super::frame::{Raw, op_err};
use crate::error::{OpError, Refusal};
use crate::tensor::TensorMut;
use crate::types::{Element, ElementType};

impl<'f> CallCx<'f> {
    /// Operand `arg` and result `ret` of a tensor updated in place, checked (not claimed): the
    /// operand's element type and rank `rank`, the result's element type and the operand's
    /// shape. The two buffers and the element count.
    pub(super) fn inplace_buffers<T: Element>(
        &self,
        arg: usize,
        ret: usize,
        name: &str,
        rank: usize,
    ) -> Result<(Raw<'f>, Raw<'f>, usize), OpError> {
        let input = self.raw(true, arg)?;
        let n = self.typed::<T>(&input, name, rank)?;
        let out = self.raw(false, ret)?;
        self.typed::<T>(&out, name, input.dims.len())?;
        if out.dims != input.dims {
            return Err(op_err(
                self.op,
                Refusal::WrongShape,
                format!(
                    "`{name}` is updated in place: its result must have the input's shape {:?}, \
                     XLA passed {:?}",
                    input.dims, out.dims
                ),
            ));
        }
        Ok((input, out, n))
    }

    /// Operand `arg` updated in place as result `ret`: a writable view of the result, which
    /// holds the operand's values. The result must have the operand's element type and shape,
    /// and be the operand's buffer or overlap no input (it overlaps no other result either).
    pub(super) fn inplace_view<T: Element, const RANK: usize>(
        &self,
        arg: usize,
        ret: usize,
        name: &str,
    ) -> Result<TensorMut<'f, T, RANK>, OpError> {
        let (input, out, n) = self.inplace_buffers::<T>(arg, ret, name, RANK)?;
        let bytes = n * core::mem::size_of::<T>();
        let (start, from) = (out.data as usize, input.data as usize);
        if T::ELEMENT_TYPE == ElementType::Bool && n > 0 {
            // SAFETY: the input holds `n` one-byte elements (checked dtype and shape), valid
            // for the call; checked before anything is written.
            unsafe { self.check_bools(input.data as *const u8, n, name)? };
        }
        // Its own operand may be the same buffer; any other overlap is refused.
        self.claim_output(ret, name, start, bytes, Some(arg))?;
        if n == 0 {
            return Ok(TensorMut::from_checked(&mut [], out.dims));
        }
        if start != from {
            // SAFETY: both buffers hold `bytes` bytes (checked dtype and the same shape), valid
            // for the call, and do not overlap (checked above: the input range was not exempt,
            // as the pointers differ).
            unsafe {
                core::ptr::copy_nonoverlapping(input.data as *const u8, out.data as *mut u8, bytes)
            };
        }
        // SAFETY: the result buffer holds `n` elements of the checked dtype, aligned (checked
        // by `typed`), valid for the call; it is handed out once (`take`), and overlaps no
        // other result and no input but its own operand, which the kernel is given no other
        // view of. Every element is a valid `T` (`Element` is sealed; a bool input, copied or
        // aliased, was checked above).
        let data = unsafe { core::slice::from_raw_parts_mut(out.data as *mut T, n) };
        Ok(TensorMut::from_checked(data, out.dims))
    }
}
