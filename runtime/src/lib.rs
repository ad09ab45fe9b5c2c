#![doc = include_str!("../../README.md")]
#![deny(missing_docs)]

// Generated code names this crate `::customop`, in this crate's own tests too.
#[allow(unused_extern_crates)]
extern crate self as customop;

pub mod descriptor;
pub mod types;

#[cfg(feature = "mlir")]
pub mod lower;

pub use descriptor::{Descriptor, DescriptorError};
pub use types::{Element, ElementType, TensorType};

/// Derives [`Descriptor`] for a struct, or the field trait [`descriptor::Wire`] for a field-less
/// enum with an explicit `#[repr]`.
pub use customop_macros::Descriptor;

/// The names most code needs: `use customop::prelude::*;`.
pub mod prelude {
    pub use crate::descriptor::{Descriptor, DescriptorError};
    pub use crate::types::{ElementType, TensorType};
    pub use customop_macros::Descriptor;
}

/// The book's chapters, compiled and run as doctests so that every example in the manual
/// works.
#[cfg(doctest)]
mod book {
    #[doc = include_str!("../../book/src/descriptors.md")]
    struct Descriptors;

    #[doc = include_str!("../../book/src/building-programs.md")]
    struct BuildingPrograms;
}

/// Items the generated code names. Not part of the public API: free to change.
#[doc(hidden)]
pub mod __private {
    pub use crate::descriptor;
    pub use core;
    pub use std::boxed::Box;
    pub use std::string::ToString;
    pub use std::sync::OnceLock;
    pub use std::vec::Vec;
}
