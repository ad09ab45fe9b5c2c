//! `customop_call`: a generated handler run on a call frame built from plain tensors and
//! attributes (the eager path of the PyTorch front end), with the same checks as under XLA.
//! No MLIR in this test binary.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use customop::Descriptor;
use customop::c_abi::{CallAttr, CallTensor, customop_call};
use customop_example_kernels as k;
use std::ffi::c_void;
use std::ptr::null;
use support::seed_blob;

const S8: i32 = 2;
const U8: i32 = 6;
const F32: i32 = 11;

fn tensor<T>(dtype: i32, data: &mut [T], dims: &[i64]) -> CallTensor {
    CallTensor {
        dtype,
        data: data.as_mut_ptr().cast(),
        rank: dims.len() as i64,
        dims: dims.as_ptr(),
    }
}

type Handler = unsafe extern "C" fn(
    *mut customop::__private::ffi::abi::XLA_FFI_CallFrame,
) -> *mut customop::__private::ffi::abi::XLA_FFI_Error;

/// Calls `handler`; returns the code and the message.
fn call(
    handler: Option<Handler>,
    args: &[CallTensor],
    rets: &[CallTensor],
    attrs: &[CallAttr],
) -> (i32, String) {
    let mut msg = vec![0u8; 512];
    // SAFETY: every tensor and attribute points at live data of its stated type and size, the
    // results are writable, and `msg` holds 512 bytes.
    let code = unsafe {
        customop_call(
            handler,
            args.as_ptr(),
            args.len(),
            rets.as_ptr(),
            rets.len(),
            attrs.as_ptr(),
            attrs.len(),
            msg.as_mut_ptr().cast(),
            msg.len(),
        )
    };
    let end = msg.iter().position(|&b| b == 0).unwrap_or(msg.len());
    (code, String::from_utf8_lossy(&msg[..end]).into_owned())
}

#[test]
fn the_seed_op_runs_eagerly_and_matches_its_arithmetic() {
    let mut blob = seed_blob();
    let mut x: Vec<f32> = vec![0.5, 1.0, 1.5, -3.0, 0.25, 0.0, 40.0, 30.0, 1.0];
    let mut y = [0i8; 3];
    let code = call(
        Some(k::custom_op_external::customop_handler_my_custom_library_custom_op_external),
        &[tensor(U8, &mut blob, &[56]), tensor(F32, &mut x, &[3, 3])],
        &[tensor(S8, &mut y, &[3])],
        &[],
    );
    assert_eq!(code, (0, String::new()));
    // saturate_i8(round(2 * row sum) - 1), computed here independently: 2*3-1, round(-5.5)-1,
    // 2*71-1 saturated.
    assert_eq!(y, [5, -7, 127]);
}

#[test]
fn attributes_reach_the_kernel() {
    let cfg = k::NormCfg {
        scale: 2.0,
        shift: 0.5,
        mode: k::NormMode::ScaleShift,
    }
    .pack();
    let eps: f32 = 0.0;
    let mut x: Vec<f32> = vec![3.0, 4.0];
    let mut y = [0f32; 2];
    let attrs = [
        CallAttr {
            name: b"eps".as_ptr().cast(),
            name_len: 3,
            kind: 3,
            dtype: F32,
            data: (&raw const eps).cast::<c_void>(),
            len: 1,
        },
        CallAttr {
            name: b"cfg".as_ptr().cast(),
            name_len: 3,
            kind: 4,
            dtype: 0,
            data: cfg.as_ptr().cast(),
            len: cfg.len(),
        },
    ];
    let code = call(
        Some(k::rms_norm::customop_handler_example_rms_norm),
        &[tensor(F32, &mut x, &[1, 2])],
        &[tensor(F32, &mut y, &[1, 2])],
        &attrs,
    );
    assert_eq!(code, (0, String::new()));
    // rms = sqrt((9 + 16) / 2); y = x / rms * 2 + 0.5
    let rms = (12.5f32).sqrt();
    assert_eq!(y, [3.0 / rms * 2.0 + 0.5, 4.0 / rms * 2.0 + 0.5]);
}

#[test]
fn bad_calls_come_back_as_errors() {
    let mut blob = seed_blob();
    let mut x = vec![0f32; 9];
    let mut y = [0i8; 3];
    let seed = Some(
        k::custom_op_external::customop_handler_my_custom_library_custom_op_external as Handler,
    );

    // A wrong element type for x.
    let mut xi = vec![0i32; 9];
    let (code, msg) = call(
        seed,
        &[tensor(U8, &mut blob, &[56]), tensor(4, &mut xi, &[3, 3])],
        &[tensor(S8, &mut y, &[3])],
        &[],
    );
    assert_eq!(code, 3, "{msg}");
    assert!(
        msg.contains("my_custom_library::custom_op_external"),
        "{msg}"
    );
    assert!(msg.contains("f32"), "{msg}");

    // A result of the wrong shape (the rule says [x.dim(0)] = [3]).
    let mut y4 = [0i8; 4];
    let (code, msg) = call(
        seed,
        &[tensor(U8, &mut blob, &[56]), tensor(F32, &mut x, &[3, 3])],
        &[tensor(S8, &mut y4, &[4])],
        &[],
    );
    assert_eq!(code, 3, "{msg}");
    assert!(msg.contains('y'), "{msg}");

    // Descriptor bytes that are not a Blob.
    let mut junk = vec![7u8; 56];
    let (code, msg) = call(
        seed,
        &[tensor(U8, &mut junk, &[56]), tensor(F32, &mut x, &[3, 3])],
        &[tensor(S8, &mut y, &[3])],
        &[],
    );
    assert_eq!(code, 3, "{msg}");
    assert!(msg.contains("my_lib::Blob"), "{msg}");

    // Too few operands.
    let (code, msg) = call(
        seed,
        &[tensor(U8, &mut blob, &[56])],
        &[tensor(S8, &mut y, &[3])],
        &[],
    );
    assert_ne!(code, 0, "{msg}");
    assert!(msg.contains("operand") || msg.contains("argument"), "{msg}");

    // A kernel error and a kernel panic.
    let mut neg = vec![-1f32];
    let mut out = [0f32];
    let (code, msg) = call(
        Some(k::checked_sqrt::customop_handler_example_checked_sqrt),
        &[tensor(F32, &mut neg, &[1])],
        &[tensor(F32, &mut out, &[1])],
        &[],
    );
    assert_eq!(
        (code, msg.contains("negative input -1")),
        (3, true),
        "{msg}"
    );
    let mut thirteen = vec![13f32];
    let (code, msg) = call(
        Some(k::unlucky::customop_handler_example_unlucky),
        &[tensor(F32, &mut thirteen, &[1])],
        &[tensor(F32, &mut out, &[1])],
        &[],
    );
    assert_eq!(code, 13, "internal: {msg}");
    assert!(msg.contains("unlucky number 13"), "{msg}");

    // A missing attribute.
    let (code, msg) = call(
        Some(k::rms_norm::customop_handler_example_rms_norm),
        &[tensor(F32, &mut x, &[3, 3])],
        &[tensor(F32, &mut [0f32; 9], &[3, 3])],
        &[],
    );
    assert_eq!(code, 3, "{msg}");
    assert!(msg.contains("eps"), "{msg}");
}

#[test]
fn malformed_frames_are_refused_before_any_handler_runs() {
    assert_eq!(call(None, &[], &[], &[]).0, -1);
    let mut msg = [0u8; 8];
    // SAFETY: null arrays with nonzero counts are what is being refused; nothing is read.
    let code = unsafe {
        customop_call(
            Some(k::unlucky::customop_handler_example_unlucky),
            null(),
            1,
            null(),
            0,
            null(),
            0,
            msg.as_mut_ptr().cast(),
            msg.len(),
        )
    };
    assert_eq!(code, -1);
    // An unknown attribute kind; the message is truncated to the buffer, NUL-terminated.
    let attr = CallAttr {
        name: b"eps".as_ptr().cast(),
        name_len: 3,
        kind: 9,
        dtype: F32,
        data: null(),
        len: 0,
    };
    // SAFETY: the attribute is refused by kind before its data is read; `msg` holds 8 bytes.
    let code = unsafe {
        customop_call(
            Some(k::unlucky::customop_handler_example_unlucky),
            null(),
            0,
            null(),
            0,
            &attr,
            1,
            msg.as_mut_ptr().cast(),
            msg.len(),
        )
    };
    assert_eq!(code, 3);
    assert_eq!(&msg, b"eager c\0");
}
