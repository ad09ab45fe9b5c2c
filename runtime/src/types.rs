//! Element types and static tensor types, shared by the schema, the builder and the handlers.
//!
//! Nothing here depends on MLIR: a kernel cdylib uses the same types to check XLA's buffers.

use core::fmt;

/// The element type of a tensor.
///
/// Each variant names the MLIR spelling ([`ElementType::mlir_name`]) and the XLA FFI
/// data type code ([`ElementType::xla_code`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ElementType {
    /// `i1`: a boolean (one byte in XLA buffers).
    Bool,
    /// `i8`.
    I8,
    /// `i16`.
    I16,
    /// `i32`.
    I32,
    /// `i64`.
    I64,
    /// `ui8`.
    U8,
    /// `ui16`.
    U16,
    /// `ui32`.
    U32,
    /// `ui64`.
    U64,
    /// `f32`.
    F32,
    /// `f64`.
    F64,
}

impl ElementType {
    /// Every element type, in declaration order.
    pub const ALL: [ElementType; 11] = [
        ElementType::Bool,
        ElementType::I8,
        ElementType::I16,
        ElementType::I32,
        ElementType::I64,
        ElementType::U8,
        ElementType::U16,
        ElementType::U32,
        ElementType::U64,
        ElementType::F32,
        ElementType::F64,
    ];

    /// The MLIR type spelling: `f32`, `i8`, `ui8`, `i1`, ...
    pub const fn mlir_name(self) -> &'static str {
        match self {
            ElementType::Bool => "i1",
            ElementType::I8 => "i8",
            ElementType::I16 => "i16",
            ElementType::I32 => "i32",
            ElementType::I64 => "i64",
            ElementType::U8 => "ui8",
            ElementType::U16 => "ui16",
            ElementType::U32 => "ui32",
            ElementType::U64 => "ui64",
            ElementType::F32 => "f32",
            ElementType::F64 => "f64",
        }
    }

    /// The numpy dtype name (`float32`, `int8`, `bool`, ...): the manifest's element-type
    /// table carries it, so Python front ends need no table of their own.
    pub const fn numpy_name(self) -> &'static str {
        match self {
            ElementType::Bool => "bool",
            ElementType::I8 => "int8",
            ElementType::I16 => "int16",
            ElementType::I32 => "int32",
            ElementType::I64 => "int64",
            ElementType::U8 => "uint8",
            ElementType::U16 => "uint16",
            ElementType::U32 => "uint32",
            ElementType::U64 => "uint64",
            ElementType::F32 => "float32",
            ElementType::F64 => "float64",
        }
    }

    /// The size of one element in bytes, in XLA's buffers.
    pub const fn byte_size(self) -> usize {
        match self {
            ElementType::Bool | ElementType::I8 | ElementType::U8 => 1,
            ElementType::I16 | ElementType::U16 => 2,
            ElementType::I32 | ElementType::U32 | ElementType::F32 => 4,
            ElementType::I64 | ElementType::U64 | ElementType::F64 => 8,
        }
    }

    /// Whether this is a floating-point type.
    pub const fn is_float(self) -> bool {
        matches!(self, ElementType::F32 | ElementType::F64)
    }

    /// Whether this is a signed or unsigned integer type (not `Bool`).
    pub const fn is_integer(self) -> bool {
        !self.is_float() && !matches!(self, ElementType::Bool)
    }

    /// Whether this is an unsigned integer type.
    pub const fn is_unsigned(self) -> bool {
        matches!(
            self,
            ElementType::U8 | ElementType::U16 | ElementType::U32 | ElementType::U64
        )
    }

    /// The `XLA_FFI_DataType` code of this type (from `xla/ffi/api/c_api.h`).
    pub const fn xla_code(self) -> u32 {
        match self {
            ElementType::Bool => 1,
            ElementType::I8 => 2,
            ElementType::I16 => 3,
            ElementType::I32 => 4,
            ElementType::I64 => 5,
            ElementType::U8 => 6,
            ElementType::U16 => 7,
            ElementType::U32 => 8,
            ElementType::U64 => 9,
            ElementType::F32 => 11,
            ElementType::F64 => 12,
        }
    }

    /// The element type with the given `XLA_FFI_DataType` code, if customop supports it.
    pub fn from_xla_code(code: u32) -> Option<ElementType> {
        ElementType::ALL.into_iter().find(|t| t.xla_code() == code)
    }
}

impl ElementType {
    /// The kind of number: `"bool"`, `"signed"`, `"unsigned"` or `"float"`.
    pub const fn kind_name(self) -> &'static str {
        if self.is_float() {
            "float"
        } else if matches!(self, ElementType::Bool) {
            "bool"
        } else if self.is_unsigned() {
            "unsigned"
        } else {
            "signed"
        }
    }

    /// The manifest's element-type table: one entry per element type, with its MLIR name, XLA
    /// FFI code, numpy name, byte size and kind, for front ends in other languages.
    pub fn table_json() -> serde_json::Value {
        ElementType::ALL
            .iter()
            .map(|t| {
                serde_json::json!({
                    "name": t.mlir_name(),
                    "xla_code": t.xla_code(),
                    "numpy": t.numpy_name(),
                    "byte_size": t.byte_size(),
                    "kind": t.kind_name(),
                })
            })
            .collect()
    }
}

impl fmt::Display for ElementType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.mlir_name())
    }
}

/// A Rust scalar type that has an [`ElementType`].
///
/// Sealed: only customop implements it, for the types listed in the note below, because the
/// handler builds `&[T]` and `&mut [T]` over XLA's buffers from it. Each implementation is
/// checked at compile time: `size_of::<T>()` is the element type's byte size, and the
/// alignment divides it (a buffer of `n` elements is then exactly `n * size_of::<T>()` bytes).
/// A type alias of one of these types (`type Real = f32`) is the same type and works
/// everywhere.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a tensor element type",
    label = "not an element type",
    note = "tensor elements are bool, i8, i16, i32, i64, u8, u16, u32, u64, f32 and f64 (or an \
            alias of one); the trait is sealed: other types cannot implement it"
)]
pub trait Element: Copy + 'static + sealed::Sealed {
    /// The element type of this Rust type.
    const ELEMENT_TYPE: ElementType;
}

mod sealed {
    /// Implemented only here: see [`Element`](super::Element).
    pub trait Sealed {}
}

macro_rules! impl_element {
    ($($t:ty => $e:ident),* $(,)?) => {
        $(
            impl sealed::Sealed for $t {}
            impl Element for $t { const ELEMENT_TYPE: ElementType = ElementType::$e; }
            // The handler's slices over XLA's buffers rely on this (see `Element`).
            const _: () = assert!(
                core::mem::size_of::<$t>() == ElementType::$e.byte_size()
                    && ElementType::$e.byte_size() % core::mem::align_of::<$t>() == 0
            );
        )*
    };
}
impl_element!(
    bool => Bool, i8 => I8, i16 => I16, i32 => I32, i64 => I64,
    u8 => U8, u16 => U16, u32 => U32, u64 => U64, f32 => F32, f64 => F64,
);

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tensor_type_prints_as_mlir() {
        let t = TensorType::new(ElementType::F32, [3, 3]).unwrap();
        assert_eq!(t.to_string(), "tensor<3x3xf32>");
        assert_eq!(
            TensorType::scalar(ElementType::U8).to_string(),
            "tensor<ui8>"
        );
        assert_eq!(
            TensorType::new(ElementType::U8, [56]).unwrap().to_string(),
            "tensor<56xui8>"
        );
    }

    #[test]
    fn negative_or_overflowing_shapes_are_rejected() {
        assert!(TensorType::new(ElementType::F32, [3, -1]).is_err());
        assert!(TensorType::new(ElementType::F32, [i64::MAX, 2]).is_err());
    }

    #[test]
    fn xla_codes_round_trip() {
        for t in ElementType::ALL {
            assert_eq!(ElementType::from_xla_code(t.xla_code()), Some(t));
        }
        assert_eq!(ElementType::from_xla_code(0), None);
        assert_eq!(ElementType::from_xla_code(10), None); // F16: not supported
    }
}
