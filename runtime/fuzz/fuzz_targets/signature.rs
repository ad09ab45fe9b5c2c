//! Program text into the runner's reader (`Program::text`: the MLIR tokenizer, `@main`'s
//! signature, its externals, shardings and mesh). Any input: an error or a signature, never a
//! panic, an overflow or a stack overflow. A signature it reads is consistent.
#![no_main]

use customop::pjrt::{MAX_MESH_DEVICES, Program};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(program) = Program::text(text) else {
        return;
    };
    let Some(sig) = program.signature() else {
        panic!("a program read from text has a signature");
    };
    assert!(sig.params.iter().enumerate().all(|(i, p)| p.index == i));
    assert_eq!(sig.results.len(), sig.result_shardings.len());
    let devices = sig.mesh_devices();
    assert!(
        (1..=MAX_MESH_DEVICES).contains(&devices),
        "{devices} devices"
    );
});
