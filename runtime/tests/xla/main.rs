//! End-to-end tests: modules built by `customop::lower` are parsed, verified, compiled and run by
//! jaxlib's XLA CPU client (through `customop-xla`), and the numbers are compared with values
//! computed here, independently of the code under test.
//!
//! One test binary for all of them: each binary that links MLIR is ~160 MB. It also holds what the
//! macros must accept (`macro_cases/`).
//!
//! One module per theme: the seed module and the harness (`basics`), the builder's ops
//! (`ops`), externals through helpers and C handlers (`externals`), meshes and partitioned
//! calls (`sharding`), the emitter's type cache (`type_cache`) and every build error
//! (`build_errors`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::needless_range_loop)]

#[path = "../macro_cases/mod.rs"]
mod macro_cases;

mod basics;
mod build_errors;
mod externals;
mod ops;
mod sharding;
mod type_cache;

use customop::lower::FuncBuilder;
use customop::lower::Sharding;
use customop::lower::{BinaryOp, Compare, CustomCall, DotDims, ReduceOp, UnaryOp};
use customop::lower::{External, Module};
use customop::schema::{FactorDims, PartitionRule};
use customop::{ElementType, TensorType};
use customop_xla::{Array, Harness};
use customop_xla::{ExternalArg, external_args};
use customop_xla::{Ffi, Job, Probe, Target};

fn t(e: ElementType, shape: &[i64]) -> TensorType {
    TensorType::new(e, shape).unwrap()
}

fn close(got: &[f32], want: &[f64], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let tol = 1e-5 * w.abs().max(1.0);
        assert!(
            ((*g as f64) - w).abs() <= tol,
            "{what}[{i}]: XLA {g}, Rust {w}"
        );
    }
}

/// A 56-byte descriptor, as the seed's external.
#[derive(customop::Descriptor, Clone, Copy, Debug, PartialEq)]
#[descriptor(name = "my_lib::Blob")]
pub struct Blob {
    pub gain: f32,
    pub bias: i32,
    pub seed: u64,
    pub tag: [u8; 16],
}
