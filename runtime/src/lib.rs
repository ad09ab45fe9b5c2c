#![doc = include_str!("../../README.md")]
#![deny(missing_docs)]

pub mod types;

#[cfg(feature = "mlir")]
pub mod lower;

pub use types::{Element, ElementType, TensorType};

/// Items the generated code names. Not part of the public API: free to change.
#[doc(hidden)]
pub mod __private {
    pub use core;
}
