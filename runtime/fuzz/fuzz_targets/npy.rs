//! Bytes into the command line's `.npy` reader (`customop run --input x.npy`): any input is an
//! array or an error, never a panic, an overflow or an allocation beyond the input; an array it
//! reads writes back to bytes that read as the same array.
#![no_main]

#[allow(dead_code)]
#[path = "../../../cli/src/npy.rs"]
mod npy;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Ok(a) = npy::parse(data) else {
        return;
    };
    let (bytes, _) = npy::to_bytes(&a);
    assert_eq!(
        npy::parse(&bytes).ok().as_ref(),
        Some(&a),
        "written back differently"
    );
});
