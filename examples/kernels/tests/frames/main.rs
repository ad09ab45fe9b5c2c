//! Every refusal of the handler layer, driven with fabricated XLA call frames (no XLA, no
//! MLIR): each case gets its named code (`[wrong_dtype]`, ...), XLA's error code, and leaves
//! the outputs untouched; none panics. One test binary, a module per theme, so that
//! `scripts/test.sh` runs all of it under valgrind memcheck (zero errors required).

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../support/mod.rs"]
mod support;

mod attributes;
mod buffers;
mod descriptors;
mod dictionary;
mod in_place;
mod kernels;
mod packed;

use customop::__private::ffi::handle;
use customop::{Descriptor, Refusal};
use customop_example_kernels as k;
use support::*;

fn seed() -> Handler {
    k::custom_op_external::customop_handler_my_custom_library_custom_op_external
}

fn seed_frame() -> Frame {
    Frame::new(
        vec![buf(U8, &[56], &seed_blob()), f32s(&[3, 3], &[1.0; 9])],
        vec![buf(S8, &[3], &[0x55; 3])],
    )
}

#[test]
fn every_refusal_is_exercised() {
    // The cases of this binary, by code: each named refusal has at least one test.
    let source = [
        include_str!("attributes.rs"),
        include_str!("buffers.rs"),
        include_str!("descriptors.rs"),
        include_str!("dictionary.rs"),
        include_str!("in_place.rs"),
        include_str!("kernels.rs"),
        include_str!("packed.rs"),
        // The CUDA refusals: the binaries of feature `cuda` (scripts/test.sh runs them).
        include_str!("../cuda.rs"),
        include_str!("../cuda_no_driver.rs"),
    ]
    .concat();
    for r in Refusal::ALL {
        let variant = format!("{r:?}");
        let named = source.contains(&format!("Refusal::{variant}"))
            || source.contains(&format!("[{}]", r.name()));
        assert!(named || r == Refusal::BadBinding, "no test for {r:?}");
    }
    // BadBinding needs a handler whose binding disagrees with its schema, which the macro
    // never generates; it is unit-tested in the runtime (plan.rs).
}
