//! Host tensors: what the runner takes as inputs and gives back as outputs.
//!
//! A light type of its own rather than `ndarray`: the runner only moves whole row-major
//! buffers between the caller and PJRT, every element type customop has (bf16, f8, complex
//! and bool included) must fit, and the `pjrt` feature should add no dependency a kernel
//! author did not ask for. [`HostTensor::from_slice`] and [`HostTensor::to_vec`] convert
//! to and from plain `Vec<T>`, which every array library takes.

use super::error::RunError;
use crate::types::{Element, ElementType, TensorType};

/// A row-major tensor in host memory: element type, dimensions and bytes (little-endian).
#[derive(Clone, PartialEq, Eq)]
pub struct HostTensor {
    ty: TensorType,
    bytes: Vec<u8>,
}

impl std::fmt::Debug for HostTensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "HostTensor({}, {} bytes)", self.ty, self.bytes.len())
    }
}

/// The number of bytes of a tensor of type `ty`, if it fits in memory at all (`isize::MAX`).
pub(super) fn byte_len(ty: &TensorType) -> Result<usize, RunError> {
    usize::try_from(ty.element_count())
        .ok()
        .and_then(|n| n.checked_mul(ty.element().byte_size()))
        .filter(|&n| n <= isize::MAX as usize)
        .ok_or_else(|| RunError::Input(format!("{ty} is too large to hold in memory")))
}

/// The bytes of a slice of elements.
fn as_bytes<T: Element>(values: &[T]) -> &[u8] {
    // SAFETY: every `Element` type is plain data of exactly `byte_size` bytes with no padding
    // (checked at compile time where `Element` is implemented: size equals the element
    // type's byte size, and the sealed trait admits only bool, integers, floats, half,
    // two-float complex and one-byte f8 types), so its bytes are initialised and readable
    // as u8, for the slice's whole length.
    unsafe {
        std::slice::from_raw_parts(values.as_ptr().cast::<u8>(), std::mem::size_of_val(values))
    }
}

impl HostTensor {
    /// A tensor of shape `dims` holding `values` (row-major). The number of values must be
    /// the product of the dimensions.
    pub fn from_slice<T: Element>(dims: &[i64], values: &[T]) -> Result<HostTensor, RunError> {
        let ty = TensorType::new(T::ELEMENT_TYPE, dims.to_vec())
            .map_err(|e| RunError::Input(e.message))?;
        if ty.element_count() != values.len() as i64 {
            return Err(RunError::Input(format!(
                "{ty} has {} elements, but {} values were given",
                ty.element_count(),
                values.len()
            )));
        }
        Ok(HostTensor {
            ty,
            bytes: as_bytes(values).to_vec(),
        })
    }

    /// A rank-1 tensor of `values`.
    pub fn vector<T: Element>(values: &[T]) -> HostTensor {
        HostTensor {
            ty: TensorType::from_parts(T::ELEMENT_TYPE, vec![values.len() as i64]),
            bytes: as_bytes(values).to_vec(),
        }
    }

    /// A tensor of `ty` from its little-endian, row-major bytes. `bool` bytes must be 0 or 1.
    pub fn from_bytes(ty: TensorType, bytes: Vec<u8>) -> Result<HostTensor, RunError> {
        let want = byte_len(&ty)?;
        if bytes.len() != want {
            return Err(RunError::Input(format!(
                "{ty} takes {want} bytes, but {} were given",
                bytes.len()
            )));
        }
        if ty.element() == ElementType::Bool && bytes.iter().any(|&b| b > 1) {
            return Err(RunError::Input(format!(
                "{ty}: a bool byte is neither 0 nor 1"
            )));
        }
        // A packed sub-byte type on the host: one element a byte, in its low bits (as
        // ml_dtypes keeps it); PJRT would drop the high bits silently.
        let bits = ty.element().bits();
        if ty.element().is_packed()
            && let Some(b) = bytes.iter().find(|&&b| b >> bits != 0)
        {
            return Err(RunError::Input(format!(
                "{ty}: the byte {b:#04x} holds more than the type's {bits} bits (one element a \
                 byte, in its low bits)"
            )));
        }
        Ok(HostTensor { ty, bytes })
    }

    /// The tensor's type.
    pub fn ty(&self) -> &TensorType {
        &self.ty
    }

    /// The element type.
    pub fn element(&self) -> ElementType {
        self.ty.element()
    }

    /// The dimensions.
    pub fn dims(&self) -> &[i64] {
        self.ty.shape()
    }

    /// The bytes, row-major, little-endian.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The elements as `T`, which must be the tensor's element type.
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>, RunError> {
        if T::ELEMENT_TYPE != self.ty.element() {
            return Err(RunError::Output(format!(
                "the tensor is {}, not {}",
                self.ty,
                T::ELEMENT_TYPE.mlir_name()
            )));
        }
        let n = self.bytes.len() / std::mem::size_of::<T>().max(1);
        let mut out: Vec<T> = Vec::with_capacity(n);
        if self.ty.element() == ElementType::Bool && self.bytes.iter().any(|&b| b > 1) {
            return Err(RunError::Output("a bool byte is neither 0 nor 1".into()));
        }
        // SAFETY: `out` has room for `n` elements, i.e. `n * size_of::<T>() ==
        // bytes.len()` bytes (the bytes always hold whole elements of the tensor's type,
        // which is T's); every bit pattern is a valid T for the plain-data `Element` types,
        // and for bool the bytes were checked to be 0 or 1 just above.
        unsafe {
            std::ptr::copy_nonoverlapping(
                self.bytes.as_ptr(),
                out.as_mut_ptr().cast::<u8>(),
                self.bytes.len(),
            );
            out.set_len(n);
        }
        Ok(out)
    }

    /// The tensor read as a packed `T` descriptor (an `Opaque<T>` result, or the updated
    /// bytes of a `&mut` external that the program returns), checked as a handler checks it:
    /// size, header, fingerprint, every field.
    pub fn unpack<T: crate::descriptor::Descriptor>(&self) -> Result<T, RunError> {
        if self.ty.element() != ElementType::U8 || self.ty.rank() != 1 {
            return Err(RunError::Output(format!(
                "a packed {} is a tensor<Nxui8>, not {}",
                T::NAME,
                self.ty
            )));
        }
        T::unpack(&self.bytes).map_err(|e| RunError::Output(e.to_string()))
    }

    /// The bytes, taken out.
    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn values_round_trip_through_bytes() {
        let t = HostTensor::from_slice(&[2, 2], &[1.5f32, -2.0, 0.0, 7.25]).unwrap();
        assert_eq!(t.bytes().len(), 16);
        assert_eq!(&t.bytes()[..4], &1.5f32.to_le_bytes());
        assert_eq!(t.to_vec::<f32>().unwrap(), vec![1.5, -2.0, 0.0, 7.25]);
        let b = HostTensor::vector(&[crate::bf16::from_f32(3.0)]);
        assert_eq!(b.to_vec::<crate::bf16>().unwrap()[0].to_f32(), 3.0);
        let z = HostTensor::vector(&[crate::Complex64::new(1.0, -1.0)]);
        assert_eq!(z.to_vec::<crate::Complex64>().unwrap()[0].im, -1.0);
    }

    #[test]
    fn wrong_counts_types_and_bool_bytes_are_refused() {
        assert!(HostTensor::from_slice(&[3], &[1i8, 2]).is_err());
        let t = HostTensor::vector(&[1i32, 2]);
        assert!(
            t.to_vec::<f32>()
                .unwrap_err()
                .to_string()
                .contains("not f32")
        );
        let bad =
            HostTensor::from_bytes(TensorType::new(ElementType::Bool, [2]).unwrap(), vec![1, 2]);
        assert!(bad.is_err());
        // A type whose byte size does not fit in memory is refused, not wrapped around.
        let huge = TensorType::new(ElementType::F32, [1i64 << 62]).unwrap();
        let e = HostTensor::from_bytes(huge, Vec::new())
            .unwrap_err()
            .to_string();
        assert!(e.contains("too large to hold in memory"), "{e}");
        let short =
            HostTensor::from_bytes(TensorType::new(ElementType::F32, [2]).unwrap(), vec![0; 7]);
        assert!(short.unwrap_err().to_string().contains("takes 8 bytes"));
    }
}
