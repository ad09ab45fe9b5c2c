//! An op's CUDA side: host Rust that receives the call's [`Cuda`] (its stream), device
//! tensor views ([`DeviceRef`], [`DeviceMut`]) and its externals checked on the host, and
//! launches kernels compiled from CUDA C at build time and embedded in the library
//! ([`Image`], [`Kernel`], [`cuda_image!`](crate::cuda_image)).
//!
//! The driver (libcuda) is loaded at run time, on the first CUDA call: a library with CUDA
//! handlers builds without a CUDA toolkit's libraries and loads without a driver; a call on a
//! machine without one is refused by name (`[no_cuda]`). Each image is loaded once per device
//! context. See the book's "Kernels on NVIDIA GPUs".

mod driver;
mod launch;
mod module;
mod view;

pub use driver::{DRIVER_VAR, DevicePtr};
pub use launch::{Args, Cuda, Dim3, KernelArg, blocks};
pub use module::{Image, Kernel};
pub use view::{DeviceMut, DeviceRef};

pub(crate) use launch::no_cuda;

#[cfg(test)]
mod tests;
