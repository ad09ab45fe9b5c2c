#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

// Generated code names this crate `::customop`, in this crate's own tests too.
#[allow(unused_extern_crates)]
extern crate self as customop;

pub mod c_abi;
pub mod cpu;
pub mod cuda;
pub mod descriptor;
pub mod error;
mod ffi;
pub mod float8;
pub mod packed;
pub mod parallel;
mod plan;
mod records;
pub mod registry;
pub mod round;
pub mod schema;
pub mod tensor;
mod torch;
pub mod types;
mod vjp;

#[cfg(feature = "mlir")]
pub mod lower;

#[cfg(feature = "pjrt")]
pub mod pjrt;

/// State built once per call site: the type of an op's `#[state]` parameter implements
/// [`OpState`](state::OpState). See the book's "External arguments and state".
pub mod state {
    pub use crate::ffi::state::{OpState, StateAttrs, StateRef};
}

/// The types an op's `#[attr]` parameters can have: [`AttrValue`](attr::AttrValue) by value
/// (scalars, `bool`, `&[T]`), [`AttrRef`](attr::AttrRef) by reference (`&str`, `&T` of a
/// descriptor), and the value as a program carries it, [`AttrLit`](attr::AttrLit).
pub mod attr {
    pub use crate::ffi::{
        ArrayAttrElement, AttrKind, AttrLit, AttrRef, AttrValue, Dictionary, IntegerAttr, Unpacked,
    };
}

pub use descriptor::{Descriptor, DescriptorError};
pub use error::{ErrorCode, OpError, Refusal};
pub use ffi::Dictionary;
pub use packed::{F4E2M1FN, I2, I4, PackedMut, PackedRef, U2, U4};
pub use schema::OpSchema;
pub use tensor::{Opaque, TensorMut, TensorRef};
pub use types::{Complex64, Complex128, Element, ElementType, TensorType};

/// The element types beyond Rust's primitives, from the crates that define them (re-exported
/// so that a kernel crate names the same versions customop implements [`Element`] for).
pub use float8::{
    F8E3M4, F8E4M3, F8E4M3B11FNUZ, F8E4M3FN, F8E4M3FNUZ, F8E5M2, F8E5M2FNUZ, F8E8M0FNU,
};
/// The `half` crate (`f16`, `bf16` and their conversions).
pub use half;
pub use half::{bf16, f16};
/// The `num-complex` crate (`Complex<T>`, whose `f32`/`f64` forms are [`Complex64`] and
/// [`Complex128`]).
pub use num_complex;
pub use parallel::{num_threads, par_chunks_mut, parallel_for};
pub use round::{bf16_from_f64, f16_from_f64};

#[doc = include_str!("docs/custom_op.md")]
pub use customop_macros::custom_op;

#[doc = include_str!("docs/descriptor.md")]
pub use customop_macros::Descriptor;

/// The names most code needs: `use customop::prelude::*;`.
pub mod prelude {
    pub use crate::descriptor::{Descriptor, DescriptorError};
    pub use crate::error::OpError;
    pub use crate::ffi::state::{OpState, StateAttrs};
    pub use crate::packed::{PackedMut, PackedRef};
    pub use crate::tensor::{Opaque, TensorMut, TensorRef};
    pub use crate::types::{ElementType, TensorType};
    pub use customop_macros::{Descriptor, custom_op};
}

/// The book's chapters, compiled and run as doctests so that every example in the manual
/// works.
#[cfg(doctest)]
mod book {
    #[doc = include_str!("../../book/src/quick-start.md")]
    struct QuickStart;

    #[doc = include_str!("../../book/src/declaring-ops.md")]
    struct DeclaringOps;

    #[doc = include_str!("../../book/src/shapes.md")]
    struct Shapes;

    #[doc = include_str!("../../book/src/generic-ops.md")]
    struct GenericOps;

    #[doc = include_str!("../../book/src/descriptors.md")]
    struct Descriptors;

    #[doc = include_str!("../../book/src/external-arguments.md")]
    struct ExternalArguments;

    #[doc = include_str!("../../book/src/building-programs.md")]
    struct BuildingPrograms;

    #[doc = include_str!("../../book/src/gradients-and-transforms.md")]
    struct GradientsAndTransforms;

    #[doc = include_str!("../../book/src/many-devices.md")]
    struct ManyDevices;

    #[doc = include_str!("../../book/src/many-cores.md")]
    struct ManyCores;

    #[doc = include_str!("../../book/src/fast-kernels.md")]
    struct FastKernels;

    #[doc = include_str!("../../book/src/cuda-kernels.md")]
    struct CudaKernels;

    #[doc = include_str!("../../book/src/wrapping-c-kernels.md")]
    struct WrappingCKernels;

    #[doc = include_str!("../../book/src/errors.md")]
    struct Errors;

    #[cfg(feature = "pjrt")]
    #[doc = include_str!("../../book/src/running-from-rust.md")]
    struct RunningFromRust;
}

/// Items the generated code names. Not part of the public API: free to change.
#[doc(hidden)]
pub mod __private {
    pub use crate::__if_mlir as if_mlir;
    pub use crate::cuda;
    pub use crate::descriptor;
    /// The FFI layer the generated handlers call: the C ABI mirror and the binder.
    pub mod ffi {
        pub use crate::ffi::{
            ArrayAttrElement, AttrLit, AttrRef, AttrValue, Binder, CallCx, Dictionary, IntegerAttr,
            Unpacked, abi, handle, run, run_cuda, run_stateful,
        };
    }
    #[cfg(feature = "mlir")]
    pub use crate::lower;
    #[cfg(feature = "mlir")]
    pub use crate::lower::op_call;
    pub use crate::packed;
    pub use crate::plan::OpDef;
    pub use crate::records::*;
    pub use crate::registry::{CudaEntry, OpEntry};
    pub use crate::schema;
    pub use crate::state;
    pub use crate::tensor;
    pub use crate::torch::{TorchEntry, TorchKernels, torch_kernel};
    pub use crate::types;
    /// Declared gradients: the signatures and the pairing check.
    pub mod vjp {
        pub use crate::vjp::*;
    }
    pub use core;
    pub use inventory;
    pub use std::boxed::Box;
    pub use std::string::{String, ToString};
    pub use std::sync::OnceLock;
    pub use std::vec::Vec;
}

/// Expands to its input when customop is built with the `mlir` feature (generated lowerings),
/// to nothing otherwise (kernel cdylibs).
#[cfg(feature = "mlir")]
#[doc(hidden)]
#[macro_export]
macro_rules! __if_mlir {
    ($($t:tt)*) => { $($t)* };
}

/// Expands to its input when customop is built with the `mlir` feature (generated lowerings),
/// to nothing otherwise (kernel cdylibs).
#[cfg(not(feature = "mlir"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __if_mlir {
    ($($t:tt)*) => {};
}
