//! What runs around the kernel: its errors and panics, `#[state]`, the frame's and API's versions, metadata probes.

use super::*;

#[test]
fn a_state_that_cannot_be_built_is_bad_state() {
    // A fabricated frame has no XLA state functions: the state comes from the process cache,
    // built on this call, and its constructor's error is the refusal.
    let h: Handler = k::state::windowed::customop_handler_example_windowed;
    let frame = |n: i64| {
        Frame::new(vec![f32s(&[3], &[1.0; 3])], vec![f32s(&[3], &[0.0; 3])])
            .attr("n", AttrValue::Scalar(S64, n.to_le_bytes().to_vec()))
    };
    refused(
        frame(0),
        h,
        Refusal::BadState,
        "at least one tap, got n = 0",
    );
    let mut f = frame(3);
    assert!(f.call(h).is_ok());
    // Hann of 3 taps: 0, 1, 0.
    let want: Vec<u8> = [0.0f32, 1.0, 0.0]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    assert_eq!(f.rets[0].bytes.get(), &want[..]);
}

#[test]
fn kernel_errors_and_panics() {
    let h: Handler = k::checked_sqrt::customop_handler_example_checked_sqrt;
    let f = Frame::new(vec![f32s(&[1], &[-4.0])], vec![f32s(&[1], &[0.0])]);
    refused(f, h, Refusal::KernelError, "negative input -4");
    let h: Handler = k::unlucky::customop_handler_example_unlucky;
    let f = Frame::new(vec![f32s(&[1], &[13.0])], vec![f32s(&[1], &[0.0])]);
    refused(f, h, Refusal::KernelPanic, "unlucky number 13");
    // The next call on the same handler works: nothing was left poisoned.
    let mut f = Frame::new(vec![f32s(&[1], &[2.0])], vec![f32s(&[1], &[0.0])]);
    assert!(f.call(h).is_ok());
    assert_eq!(f.rets[0].bytes.get(), &2.0f32.to_le_bytes());
}

#[test]
fn frames_and_probes() {
    // The registration probe: the handler reports API 0.1 and runs nothing.
    let mut f = seed_frame();
    f.probe = true;
    assert_eq!(f.call(seed()), Ok((0, 1)));
    assert_eq!(f.rets[0].bytes.get(), &[0x55; 3]);
    // Another stage (instantiate, prepare, initialize): nothing runs.
    let mut f = seed_frame();
    f.stage = 0;
    assert_eq!(f.call(seed()), Ok((-1, -1)));
    assert_eq!(f.rets[0].bytes.get(), &[0x55; 3]);
    // An API table of another major version: nothing in it is called, the kernel does not run.
    let mut f = seed_frame();
    f.api_major = 1;
    assert_eq!(f.call(seed()), Ok((-1, -1)));
    assert_eq!(f.rets[0].bytes.get(), &[0x55; 3]);
    // A frame struct smaller than the ABI's.
    let mut f = seed_frame();
    f.frame_size = 16;
    refused(
        f,
        seed(),
        Refusal::BadFrame,
        "the call frame struct has 16 bytes",
    );
    // No API table at all: no way to report an error, so none is reported, and a bad call
    // still does not run the kernel.
    let mut f = seed_frame();
    f.api_present = false;
    f.args[1] = zeros(S32, &[3, 3], 4);
    assert_eq!(f.call(seed()), Ok((-1, -1)));
    assert_eq!(f.rets[0].bytes.get(), &[0x55; 3]);
}

#[test]
fn a_state_on_an_api_table_customop_does_not_read_is_refused() {
    // `windowed` builds a state per call site. XLA calling with an FFI table of a minor
    // customop does not read (here 0.9) gives no way to keep one: refused by name, where the
    // state would have come from the process cache, one for every call site.
    let h: Handler = k::state::windowed::customop_handler_example_windowed;
    for (minor, ctx) in [(9, true), (1, true)] {
        let mut f = Frame::new(vec![f32s(&[4], &[1.0; 4])], vec![zeros(F32, &[4], 4)])
            .attr("n", AttrValue::Scalar(S64, 2i64.to_le_bytes().to_vec()));
        f.api_minor = minor;
        f.xla_ctx = ctx;
        let m = refused(
            f,
            h,
            Refusal::BadState,
            "which customop cannot use for a state per",
        );
        assert!(m.contains(&format!("FFI table 0.{minor}")), "{m}");
    }
    // A fabricated frame with no execution context (the eager path): the process cache.
    let mut f = Frame::new(vec![f32s(&[4], &[1.0; 4])], vec![zeros(F32, &[4], 4)])
        .attr("n", AttrValue::Scalar(S64, 2i64.to_le_bytes().to_vec()));
    f.api_minor = 9;
    f.call(h).unwrap();
}
