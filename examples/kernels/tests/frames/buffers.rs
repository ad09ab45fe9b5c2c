//! Buffers: counts, element types, ranks, shapes, pointers, alignment, overlaps, bools, results taken twice.

use super::*;

#[test]
fn a_good_frame_runs() {
    let mut f = seed_frame();
    assert_eq!(f.call(seed()), Ok((-1, -1)));
    // round(2 * 3) - 1 per row
    assert_eq!(f.rets[0].bytes.get(), &[5, 5, 5]);
}

#[test]
fn counts() {
    let mut f = seed_frame();
    f.args.pop();
    refused(
        f,
        seed(),
        Refusal::WrongCount,
        "expected 2 operands and 1 results, XLA passed 1 and 1",
    );
    let mut f = seed_frame();
    f.rets.push(zeros(S8, &[3], 1));
    refused(f, seed(), Refusal::WrongCount, "XLA passed 2 and 2");
}

#[test]
fn buffers_that_are_not_there() {
    let mut f = seed_frame();
    f.null_arg_types = true;
    refused(f, seed(), Refusal::NoSuchBuffer, "there is no argument 0");
    let mut f = seed_frame();
    f.args[1].kind = 2; // a token, not a buffer
    refused(f, seed(), Refusal::NotABuffer, "argument 1 is not a buffer");
}

#[test]
fn element_type_rank_shape() {
    let mut f = seed_frame();
    f.args[1] = zeros(S32, &[3, 3], 4);
    refused(
        f,
        seed(),
        Refusal::WrongDtype,
        "expected a tensor of f32, got i32",
    );
    let mut f = seed_frame();
    f.args[1] = f32s(&[9], &[1.0; 9]);
    refused(
        f,
        seed(),
        Refusal::WrongRank,
        "expected rank 2, got shape [9]",
    );
    let mut f = seed_frame();
    f.args[1].dims = vec![-3, 3];
    refused(f, seed(), Refusal::BadShape, "negative dimension");
    let mut f = seed_frame();
    f.args[1].dims = vec![i64::MAX, i64::MAX];
    refused(f, seed(), Refusal::BadShape, "overflows");
    let mut f = seed_frame();
    f.rets[0] = zeros(S8, &[4], 1);
    refused(
        f,
        seed(),
        Refusal::WrongShape,
        "expected shape [3], XLA passed [4]",
    );
    let mut f = seed_frame();
    f.rets[0] = zeros(S32, &[3], 4);
    refused(f, seed(), Refusal::WrongDtype, "got i32");
}

#[test]
fn pointers() {
    let mut f = seed_frame();
    f.args[1].offset = None;
    refused(f, seed(), Refusal::NullData, "9 elements at a null pointer");
    let mut f = seed_frame();
    f.args[1] = buf(F32, &[3, 3], &[0u8; 37]);
    f.args[1].offset = Some(1);
    refused(f, seed(), Refusal::Misaligned, "not aligned for f32");
    let msg = overlap_case();
    assert!(
        msg.contains("[overlap]") && msg.contains("output `y` overlaps input buffer 0"),
        "{msg}"
    );
}

/// Runs `handler` through `customop_call` on `args` and `rets`; the XLA code and message
/// (code 0 and an empty message on success).
fn call_eager(
    handler: Handler,
    args: &[customop::c_abi::CallTensor],
    rets: &[customop::c_abi::CallTensor],
) -> (i32, String) {
    let mut msg = vec![0u8; 256];
    // SAFETY: the tensors' pointers are valid for their dims (each caller's data outlives the
    // call); `msg` holds 256 bytes.
    let code = unsafe {
        customop::c_abi::customop_call(
            Some(handler),
            args.as_ptr(),
            args.len(),
            rets.as_ptr(),
            rets.len(),
            std::ptr::null(),
            0,
            msg.as_mut_ptr().cast(),
            msg.len(),
        )
    };
    let end = msg.iter().position(|&b| b == 0).unwrap_or(msg.len());
    (code, String::from_utf8_lossy(&msg[..end]).into_owned())
}

fn tensor<T>(dtype: i32, data: *mut T, dims: &[i64]) -> customop::c_abi::CallTensor {
    customop::c_abi::CallTensor {
        dtype,
        data: data.cast(),
        rank: dims.len() as i64,
        dims: dims.as_ptr(),
    }
}

/// An output whose buffer overlaps an input's (one float apart in one array): built with
/// `customop_call`, since `Frame` gives each buffer its own allocation.
fn overlap_case() -> String {
    let mut data = [1.0f32, 4.0, 9.0, 16.0, 25.0];
    let dims = [4i64];
    let base = data.as_mut_ptr();
    // SAFETY: index 1 of a 5-element array; 4 elements from there stay inside it.
    let shifted = unsafe { base.add(1) };
    let (code, msg) = call_eager(
        k::checked_sqrt::customop_handler_example_checked_sqrt,
        &[tensor(F32, base, &dims)],
        &[tensor(F32, shifted, &dims)],
    );
    assert_eq!(code, 3);
    assert_eq!(data, [1.0, 4.0, 9.0, 16.0, 25.0], "nothing was written");
    msg
}

fn masked_split() -> Handler {
    k::masked_split::customop_handler_example_masked_split
}

#[test]
fn results_that_overlap_each_other_are_refused() {
    // Two outputs in one allocation: before the check, the kernel got two `&mut [f32]` over
    // the same memory (undefined behaviour from safe code).
    let mut x = [1.0f32, -2.0, 3.0];
    let mut mask = [1u8, 0, 1];
    let mut out = [7.0f32; 4];
    let dims = [3i64];
    let base = out.as_mut_ptr();
    // SAFETY: index 1 of a 4-element array; 3 elements from there stay inside it.
    let shifted = unsafe { base.add(1) };
    let args = [
        tensor(F32, x.as_mut_ptr(), &dims),
        tensor(PRED, mask.as_mut_ptr(), &dims),
    ];
    for (a, b) in [(base, shifted), (shifted, base), (base, base)] {
        let (code, msg) = call_eager(
            masked_split(),
            &args,
            &[tensor(F32, a, &dims), tensor(F32, b, &dims)],
        );
        assert_eq!(code, 3, "{msg}");
        assert!(msg.contains("[overlap]"), "{msg}");
        assert!(msg.contains("overlaps result"), "{msg}");
        assert_eq!(out, [7.0; 4], "a refused call wrote its outputs");
    }
    // Apart, the same call runs.
    let (mut kept, mut dropped) = ([0.0f32; 3], [0.0f32; 3]);
    let (code, msg) = call_eager(
        masked_split(),
        &args,
        &[
            tensor(F32, kept.as_mut_ptr(), &dims),
            tensor(F32, dropped.as_mut_ptr(), &dims),
        ],
    );
    assert_eq!((code, msg.as_str()), (0, ""));
    assert_eq!((kept, dropped), ([1.0, 0.0, 3.0], [0.0, -2.0, 0.0]));
}

#[test]
fn bool_tensors_holding_other_bytes_are_refused() {
    // torch's `u8_tensor.view(torch.bool)` can hold any byte; a `&[bool]` over a 2 is
    // undefined behaviour, so the handler checks every byte of a bool input.
    let mut x = [1.0f32, -2.0, 3.0];
    let dims = [3i64];
    for (mask, at) in [([1u8, 2, 0], 1), ([0, 1, 255], 2)] {
        let mut mask = mask;
        let (mut kept, mut dropped) = ([9.0f32; 3], [9.0f32; 3]);
        let (code, msg) = call_eager(
            masked_split(),
            &[
                tensor(F32, x.as_mut_ptr(), &dims),
                tensor(PRED, mask.as_mut_ptr(), &dims),
            ],
            &[
                tensor(F32, kept.as_mut_ptr(), &dims),
                tensor(F32, dropped.as_mut_ptr(), &dims),
            ],
        );
        assert_eq!(code, 3, "{msg}");
        assert!(msg.contains("[bad_bool]"), "{msg}");
        assert!(
            msg.contains(&format!(
                "parameter `mask`: element {at} is the byte {}",
                mask[at]
            )),
            "{msg}"
        );
        assert_eq!((kept, dropped), ([9.0; 3], [9.0; 3]), "outputs untouched");
    }
}

#[test]
fn results_taken_twice_or_too_many() {
    unsafe extern "C" fn twice(
        frame: *mut customop::__private::ffi::abi::XLA_FFI_CallFrame,
    ) -> *mut customop::__private::ffi::abi::XLA_FFI_Error {
        let s = k::Stats {
            mean: 1.0,
            spread: 2.0,
        };
        // SAFETY: `frame` is the test's fabricated frame, valid for the call.
        unsafe {
            handle(frame, "frames::twice", |cx| {
                cx.write_descriptor(0, "s", &s)?;
                cx.write_descriptor(0, "s", &s)
            })
        }
    }
    let n = k::Stats::PACKED_SIZE.unwrap_or(0) as i64;
    let mut f = Frame::new(vec![], vec![zeros(U8, &[n], 1)]);
    let err = f.call(twice).expect_err("refused");
    assert!(err.message.contains("[taken_twice]"), "{}", err.message);

    unsafe extern "C" fn far(
        frame: *mut customop::__private::ffi::abi::XLA_FFI_CallFrame,
    ) -> *mut customop::__private::ffi::abi::XLA_FFI_Error {
        let s = k::Stats {
            mean: 1.0,
            spread: 2.0,
        };
        // SAFETY: as above.
        unsafe { handle(frame, "frames::far", |cx| cx.write_descriptor(64, "s", &s)) }
    }
    let mut f = Frame::new(vec![], (0..65).map(|_| zeros(U8, &[n], 1)).collect());
    let err = f.call(far).expect_err("refused");
    assert!(
        err.message.contains("[too_many_results]"),
        "{}",
        err.message
    );
}
