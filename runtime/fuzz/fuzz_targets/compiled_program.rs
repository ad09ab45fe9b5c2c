//! Bytes into the runner's reader of compiled programs (the `HloModuleProto` the plugin
//! returns: parameters, result, layouts). Any input: an error or the parameters, never a
//! panic or an overflow.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Ok(params) = customop::pjrt::__fuzz_compiled_program(data) {
        for p in params {
            assert!(p.shape().iter().all(|&d| d >= 0));
        }
    }
});
