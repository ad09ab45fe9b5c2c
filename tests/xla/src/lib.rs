//! Rust side of customop's XLA conformance harness.
//!
//! [`Harness`] runs `tests/xla/harness.py` with the project's Python venv (jax + jaxlib pinned in
//! `tests/xla/requirements.txt`), sends it StableHLO text and inputs, and returns what jaxlib's
//! MLIR and XLA CPU client made of them. It is the independent judge of emitted modules: jaxlib
//! parses and verifies them with the real StableHLO dialect, XLA compiles and executes them.
//!
//! The harness is required, never optional: [`Harness::get`] panics with set-up instructions when
//! the venv or jaxlib is missing, so a test that needs XLA fails instead of skipping.

// A test harness: a broken harness or jaxlib install must fail the test loudly, so panics are
// the intended way out here.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod array;
mod harness;
mod kernels;
mod pjrt_check;
mod signature;

pub use array::Array;
pub use harness::{Harness, Job, Outcome, Probe, XlaError};
pub use kernels::{
    Ffi, Target, example_c_kernel, example_kernels, example_kernels_release, workspace_root,
};
pub use signature::{ExternalArg, external_args, function_args};
