//! Ranked tensor types with static shapes (`tensor<3x3xf32>`).

use super::ElementType;
use core::fmt;

/// A ranked tensor type with a static shape, such as `tensor<3x3xf32>`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TensorType {
    element: ElementType,
    shape: Vec<i64>,
}

/// Why a [`TensorType`] could not be made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShapeError {
    /// What is wrong with the shape.
    pub message: String,
}

impl fmt::Display for ShapeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ShapeError {}

impl TensorType {
    /// A tensor type with the given element type and static shape (every dimension ≥ 0).
    pub fn new(element: ElementType, shape: impl Into<Vec<i64>>) -> Result<Self, ShapeError> {
        let shape = shape.into();
        if let Some(d) = shape.iter().find(|&&d| d < 0) {
            return Err(ShapeError {
                message: format!("dimension {d} in shape {shape:?} is negative: shapes are static"),
            });
        }
        if shape
            .iter()
            .try_fold(1i64, |acc, &d| acc.checked_mul(d))
            .is_none()
        {
            return Err(ShapeError {
                message: format!("shape {shape:?} has more elements than fit in an i64"),
            });
        }
        Ok(TensorType { element, shape })
    }

    /// A tensor type from a shape the caller has already checked (every dimension ≥ 0).
    #[cfg_attr(not(feature = "mlir"), allow(dead_code))]
    pub(crate) fn from_parts(element: ElementType, shape: Vec<i64>) -> Self {
        debug_assert!(shape.iter().all(|&d| d >= 0));
        TensorType { element, shape }
    }

    /// A rank-0 tensor type of `element`.
    pub fn scalar(element: ElementType) -> Self {
        TensorType {
            element,
            shape: Vec::new(),
        }
    }

    /// The element type.
    pub fn element(&self) -> ElementType {
        self.element
    }

    /// The shape (one entry per dimension).
    pub fn shape(&self) -> &[i64] {
        &self.shape
    }

    /// The number of dimensions.
    pub fn rank(&self) -> usize {
        self.shape.len()
    }

    /// The number of elements (the product of the dimensions).
    pub fn element_count(&self) -> i64 {
        self.shape.iter().product()
    }

    /// The same shape with another element type.
    pub fn with_element(&self, element: ElementType) -> Self {
        TensorType {
            element,
            shape: self.shape.clone(),
        }
    }
}

impl fmt::Display for TensorType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("tensor<")?;
        for d in &self.shape {
            write!(f, "{d}x")?;
        }
        write!(f, "{}>", self.element)
    }
}
