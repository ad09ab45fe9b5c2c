//! Tensor views on the device: shape, element type and device address, no host slice (the
//! memory is the GPU's; only a kernel reads it).

use super::driver::DevicePtr;
use crate::tensor::ANY_RANK;
use core::marker::PhantomData;

macro_rules! device_view {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        pub struct $name<'a, T, const RANK: usize = ANY_RANK> {
            ptr: DevicePtr,
            dims: &'a [i64],
            len: usize,
            _t: PhantomData<&'a T>,
        }

        impl<'a, T, const RANK: usize> $name<'a, T, RANK> {
            /// A view of `len` elements at `ptr` with dimensions `dims`, checked by the
            /// handler (element type, rank, shape, alignment, no overlap).
            pub(crate) fn from_checked(ptr: DevicePtr, dims: &'a [i64], len: usize) -> Self {
                $name { ptr, dims, len, _t: PhantomData }
            }

            /// The shape.
            pub fn dims(&self) -> &[i64] {
                self.dims
            }

            /// Dimension `i` (panics when out of range, as indexing does).
            pub fn dim(&self, i: usize) -> usize {
                self.dims[i] as usize
            }

            /// The number of elements.
            pub fn len(&self) -> usize {
                self.len
            }

            /// Whether it has no elements.
            pub fn is_empty(&self) -> bool {
                self.len == 0
            }

            /// The device address of the first element (0 for an empty tensor, which XLA may
            /// pass as null): what a kernel launch takes.
            pub fn ptr(&self) -> DevicePtr {
                self.ptr
            }
        }

        impl<T, const RANK: usize> core::fmt::Debug for $name<'_, T, RANK> {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.debug_struct(stringify!($name))
                    .field("ptr", &format_args!("{:#x}", self.ptr))
                    .field("dims", &self.dims)
                    .finish()
            }
        }
    };
}

device_view!(
    /// A read-only tensor in device memory (an op's input on the GPU).
    DeviceRef
);
device_view!(
    /// A writable tensor in device memory (an op's output, or a tensor updated in place).
    DeviceMut
);

impl<T, const RANK: usize> Clone for DeviceRef<'_, T, RANK> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T, const RANK: usize> Copy for DeviceRef<'_, T, RANK> {}
