//! Bytes into `Descriptor::unpack` of every field kind (the fixtures the descriptor tests
//! use): never a panic, and any value it accepts packs back to exactly the input.
#![no_main]

#[path = "../../tests/common/mod.rs"]
mod common;

use common::*;
use customop::Descriptor;

fn check<T: Descriptor>(data: &[u8]) {
    if let Ok(v) = T::unpack(data) {
        assert_eq!(
            v.pack(),
            data,
            "{} does not pack back to its input",
            T::NAME
        );
    }
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    check::<Blob>(data);
    check::<Everything>(data);
    check::<Table>(data);
    check::<Inner>(data);
});
