//! Bytes into the runner's reader of a serialized `jax.export` (`Program::jax_export`: the
//! module inside its flatbuffer): any input is a module or none, never a panic or a read out of bounds; a module
//! it finds is MLIR bytecode inside the input.
#![no_main]

#[path = "../../src/pjrt/jax_export.rs"]
mod jax_export;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Some(m) = jax_export::jax_export_module(data) {
        assert!(m.starts_with(jax_export::BYTECODE));
        let (start, end) = (data.as_ptr() as usize, data.as_ptr() as usize + data.len());
        let at = m.as_ptr() as usize;
        assert!(
            at >= start && at + m.len() <= end,
            "a module outside the input"
        );
    }
});
