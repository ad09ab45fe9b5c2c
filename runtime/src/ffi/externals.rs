//! [`CallCx`]'s views of externals: descriptor bytes unpacked (a copy) or borrowed in place,
//! and a descriptor written into a result.

use super::CallCx;
use super::frame::op_err;
use crate::descriptor::Descriptor;
use crate::error::{OpError, Refusal};

impl<'f> CallCx<'f> {
    /// The bytes of argument `i`, which must be a `ui8` vector.
    fn bytes_arg(&self, i: usize, name: &str) -> Result<&'f [u8], OpError> {
        Ok(self.tensor_ref::<u8, 1>(i, name)?.into_slice())
    }

    /// Unpacks argument `i`, a `tensor<Nxui8>` of packed `T`, with full validation.
    pub fn external<T: Descriptor>(&self, i: usize, name: &str) -> Result<T, OpError> {
        let bytes = self.bytes_arg(i, name)?;
        self.unpack_external(bytes, name)
    }

    /// `bytes`, the external `name`'s packed `T` (from XLA's buffer, or copied from the
    /// device), unpacked with full validation.
    pub(super) fn unpack_external<T: Descriptor>(
        &self,
        bytes: &[u8],
        name: &str,
    ) -> Result<T, OpError> {
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
}
