//! Typed views over tensor buffers: what a kernel's tensor parameters are.
//!
//! The XLA handler builds them over XLA's buffers after checking dtype, rank and shape; unit
//! tests of a kernel build them over their own data with [`TensorRef::new`] and
//! [`TensorMut::new`]. Buffers are dense and row-major (no strides).

use crate::error::OpError;
use crate::types::Element;
use core::fmt;

/// The `RANK` of a view whose rank is not fixed by its type.
pub const ANY_RANK: usize = usize::MAX;

/// Why a view could not be made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ViewError {
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ViewError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ViewError {}

/// The number of elements of a tensor with dimensions `dims`: the one place that counts them,
/// for views made by users and for the handler's views over XLA's buffers.
pub(crate) fn element_count(dims: &[i64]) -> Result<usize, ViewError> {
    let mut n: usize = 1;
    for &d in dims {
        let Ok(d) = usize::try_from(d) else {
            return Err(ViewError {
                message: format!("negative dimension in shape {dims:?}"),
            });
        };
        n = n.checked_mul(d).ok_or_else(|| ViewError {
            message: format!("shape {dims:?} overflows"),
        })?;
    }
    Ok(n)
}

fn check_shape(dims: &[i64], len: usize, rank: usize) -> Result<(), ViewError> {
    if rank != ANY_RANK && dims.len() != rank {
        return Err(ViewError {
            message: format!("expected rank {rank}, got shape {dims:?}"),
        });
    }
    let n = element_count(dims)?;
    if n != len {
        return Err(ViewError {
            message: format!("shape {dims:?} has {n} elements, the buffer {len}"),
        });
    }
    Ok(())
}

/// A read-only view of a dense row-major tensor of `T`, optionally of static rank `RANK`.
#[derive(Clone, Copy)]
pub struct TensorRef<'a, T, const RANK: usize = ANY_RANK> {
    data: &'a [T],
    dims: &'a [i64],
}

/// A writable view of a dense row-major tensor of `T` (an op's output).
pub struct TensorMut<'a, T, const RANK: usize = ANY_RANK> {
    data: &'a mut [T],
    dims: &'a [i64],
}

macro_rules! common_view_methods {
    () => {
        /// The shape.
        pub fn dims(&self) -> &[i64] {
            self.dims
        }

        /// The size of dimension `i` (0 if there is no such dimension).
        pub fn dim(&self, i: usize) -> usize {
            self.dims.get(i).map_or(0, |&d| d as usize)
        }

        /// The number of dimensions.
        pub fn rank(&self) -> usize {
            self.dims.len()
        }

        /// The number of elements.
        pub fn len(&self) -> usize {
            self.data.len()
        }

        /// Whether there are no elements.
        pub fn is_empty(&self) -> bool {
            self.data.is_empty()
        }

        /// The elements, row-major.
        pub fn as_slice(&self) -> &[T] {
            self.data
        }

        /// The row-major offset of `index`, if it is in bounds.
        fn offset(&self, index: &[usize]) -> Option<usize> {
            if index.len() != self.dims.len() {
                return None;
            }
            let mut at = 0usize;
            for (&i, &d) in index.iter().zip(self.dims) {
                if i as i64 >= d {
                    return None;
                }
                at = at * d as usize + i;
            }
            Some(at)
        }

        /// The element at `index` (one entry per dimension), if in bounds.
        pub fn get(&self, index: &[usize]) -> Option<&T> {
            self.offset(index).and_then(|o| self.data.get(o))
        }
    };
}

impl<'a, T: Element, const RANK: usize> TensorRef<'a, T, RANK> {
    /// A view of `data` with shape `dims`; checks the rank and the element count.
    pub fn new(data: &'a [T], dims: &'a [i64]) -> Result<Self, ViewError> {
        check_shape(dims, data.len(), RANK)?;
        Ok(TensorRef { data, dims })
    }

    /// A view the caller has checked: `RANK` is `ANY_RANK` or `dims.len()`, and `data` has
    /// `element_count(dims)` elements (the handler, after its own checks with refusal codes).
    pub(crate) fn from_checked(data: &'a [T], dims: &'a [i64]) -> Self {
        debug_assert!(check_shape(dims, data.len(), RANK).is_ok());
        TensorRef { data, dims }
    }

    common_view_methods!();

    /// The elements, row-major, for the view's whole lifetime.
    pub fn into_slice(self) -> &'a [T] {
        self.data
    }
}

impl<'a, T: Element, const RANK: usize> TensorMut<'a, T, RANK> {
    /// A writable view of `data` with shape `dims`; checks the rank and the element count.
    pub fn new(data: &'a mut [T], dims: &'a [i64]) -> Result<Self, ViewError> {
        check_shape(dims, data.len(), RANK)?;
        Ok(TensorMut { data, dims })
    }

    /// A writable view the caller has checked (see [`TensorRef::from_checked`]).
    pub(crate) fn from_checked(data: &'a mut [T], dims: &'a [i64]) -> Self {
        debug_assert!(check_shape(dims, data.len(), RANK).is_ok());
        TensorMut { data, dims }
    }

    common_view_methods!();

    /// The elements, row-major, writable.
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        self.data
    }

    /// The element at `index`, writable, if in bounds.
    pub fn get_mut(&mut self, index: &[usize]) -> Option<&mut T> {
        self.offset(index).and_then(|o| self.data.get_mut(o))
    }
}

impl<T: fmt::Debug, const RANK: usize> fmt::Debug for TensorRef<'_, T, RANK> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TensorRef")
            .field("dims", &self.dims)
            .field("data", &self.data)
            .finish()
    }
}

impl<T: fmt::Debug, const RANK: usize> fmt::Debug for TensorMut<'_, T, RANK> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TensorMut")
            .field("dims", &self.dims)
            .field("data", &self.data)
            .finish()
    }
}

/// An op's opaque result: a descriptor value that the op returns as packed bytes, for another
/// op to take.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Opaque<T>(pub T);

impl From<ViewError> for OpError {
    fn from(e: ViewError) -> Self {
        OpError::invalid_argument(e.message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn views_check_rank_and_size() {
        let data = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0];
        let v = TensorRef::<f32, 2>::new(&data, &[2, 3]).unwrap();
        assert_eq!(v.dim(1), 3);
        assert_eq!(v.get(&[1, 2]), Some(&6.0));
        assert_eq!(v.get(&[2, 0]), None);
        assert!(TensorRef::<f32, 1>::new(&data, &[2, 3]).is_err());
        assert!(TensorRef::<f32>::new(&data, &[4, 2]).is_err());
        assert!(TensorRef::<f32>::new(&data, &[-6]).is_err());
        let mut out = [0i8; 2];
        let mut m = TensorMut::<i8>::new(&mut out, &[2]).unwrap();
        *m.get_mut(&[1]).unwrap() = 7;
        assert_eq!(out, [0, 7]);
    }
}
