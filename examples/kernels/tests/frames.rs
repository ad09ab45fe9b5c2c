//! Every refusal of the handler layer, driven with fabricated XLA call frames (no XLA, no
//! MLIR): each case gets its named code (`[wrong_dtype]`, ...), XLA's error code, and leaves
//! the outputs untouched; none panics. `scripts/test.sh` also runs this binary under valgrind
//! memcheck and requires zero errors.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

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
fn descriptor_bytes() {
    let good = seed_blob();
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (good[..20].to_vec(), "too_short"),
        (
            {
                let mut b = good.clone();
                b[0] = b'X';
                b
            },
            "bad_magic",
        ),
        (
            {
                let mut b = good.clone();
                b[4] = 2;
                b
            },
            "unsupported_version",
        ),
        (
            {
                let mut b = good.clone();
                b[16] ^= 1;
                b
            },
            "fingerprint_mismatch",
        ),
        (
            {
                let mut b = good.clone();
                b.extend_from_slice(&[0; 4]);
                b
            },
            "payload_length",
        ),
        (
            {
                let mut b = good.clone();
                b[6] = 1;
                b
            },
            "reserved_bits",
        ),
    ];
    for (bytes, kind) in cases {
        let mut f = seed_frame();
        let n = bytes.len() as i64;
        f.args[0] = buf(U8, &[n], &bytes);
        refused(f, seed(), Refusal::BadDescriptor, kind);
    }
    // An external of the wrong element type is a dtype refusal, not a descriptor one.
    let mut f = seed_frame();
    f.args[0] = buf(S8, &[56], &good);
    refused(
        f,
        seed(),
        Refusal::WrongDtype,
        "expected a tensor of ui8, got i8",
    );
}

/// A descriptor with a bool and an enum, to reach those byte checks.
#[derive(Descriptor, Debug)]
#[descriptor(name = "frames::Flags")]
struct Flags {
    on: bool,
    mode: k::NormMode,
}

#[test]
fn bool_and_enum_bytes() {
    let good = Flags {
        on: true,
        mode: k::NormMode::ScaleShift,
    }
    .pack();
    for (at, kind) in [(24, "invalid_bool"), (25, "invalid_enum")] {
        let mut bytes = good.clone();
        bytes[at] = 7;
        let mut f = Frame::new(vec![buf(U8, &[bytes.len() as i64], &bytes)], vec![]);
        unsafe extern "C" fn h(
            frame: *mut customop::__private::ffi::abi::XLA_FFI_CallFrame,
        ) -> *mut customop::__private::ffi::abi::XLA_FFI_Error {
            // SAFETY: `frame` is the test's fabricated frame, valid for the call.
            unsafe {
                handle(frame, "frames::flags", |cx| {
                    cx.external::<Flags>(0, "flags").map(drop)
                })
            }
        }
        let err = f.call(h).expect_err("refused");
        assert!(
            err.message.contains("[bad_descriptor]") && err.message.contains(kind),
            "{}",
            err.message
        );
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

fn rms_frame() -> Frame {
    let cfg = k::NormCfg {
        scale: 1.0,
        shift: 0.0,
        mode: k::NormMode::Scale,
    }
    .pack();
    Frame::new(
        vec![f32s(&[1, 2], &[3.0, 4.0])],
        vec![f32s(&[1, 2], &[0.0; 2])],
    )
    .attr(
        "eps",
        AttrValue::Scalar(F32, 1e-5f32.to_le_bytes().to_vec()),
    )
    .attr("cfg", AttrValue::Str(cfg))
}

fn rms() -> Handler {
    k::rms_norm::customop_handler_example_rms_norm
}

#[test]
fn attributes() {
    let mut f = rms_frame();
    assert!(f.call(rms()).is_ok());

    let mut f = rms_frame();
    f.attrs.remove(0);
    refused(
        f,
        rms(),
        Refusal::MissingAttribute,
        "attribute `eps` is missing",
    );
    // An attribute the op does not declare (a misspelt one beside the right ones, as XLA's
    // own binding refuses it): named, with what the op takes.
    let f = rms_frame().attr(
        "epsilon",
        AttrValue::Scalar(F32, 1f32.to_le_bytes().to_vec()),
    );
    refused(
        f,
        rms(),
        Refusal::UnknownAttribute,
        "the call carries attribute `epsilon` that the op does not declare (it takes `eps`, `cfg`)",
    );
    let mut f = rms_frame();
    f.attrs[0].1 = AttrValue::Scalar(S32, 1i32.to_le_bytes().to_vec());
    refused(
        f,
        rms(),
        Refusal::WrongAttributeType,
        "attribute `eps`: expected f32, got i32",
    );
    let mut f = rms_frame();
    f.attrs[0].1 = AttrValue::Str(b"1e-5".to_vec());
    refused(
        f,
        rms(),
        Refusal::WrongAttributeType,
        "attribute `eps` is not a scalar",
    );
    let mut f = rms_frame();
    f.attrs[1].1 = AttrValue::Other(2);
    refused(
        f,
        rms(),
        Refusal::WrongAttributeType,
        "attribute `cfg` is not a string",
    );
    let mut f = rms_frame();
    f.attrs[1].1 = AttrValue::Str(b"not a descriptor".to_vec());
    refused(f, rms(), Refusal::BadDescriptor, "example::NormCfg");
    let mut bad_enum = k::NormCfg {
        scale: 1.0,
        shift: 0.0,
        mode: k::NormMode::Scale,
    }
    .pack();
    bad_enum[24 + 8] = 9;
    let mut f = rms_frame();
    f.attrs[1].1 = AttrValue::Str(bad_enum);
    refused(f, rms(), Refusal::BadDescriptor, "invalid_enum");
}

#[test]
fn string_and_array_attributes() {
    use customop_example_kernel_lib as kl;
    let h: Handler = kl::affine::customop_handler_example_lib_affine;
    let good = || {
        Frame::new(vec![f32s(&[2], &[1.0, 2.0])], vec![f32s(&[2], &[0.0; 2])])
            .attr(
                "factor",
                AttrValue::Scalar(F64, 1.5f64.to_le_bytes().to_vec()),
            )
            .attr("label", AttrValue::Str(b"ok".to_vec()))
            .attr(
                "offsets",
                AttrValue::Array(
                    S64,
                    2,
                    [1i64, 2].iter().flat_map(|v| v.to_le_bytes()).collect(),
                ),
            )
            .attr("flag", AttrValue::Scalar(PRED, vec![1]))
            .attr("small", AttrValue::Scalar(U8, vec![3]))
    };
    assert!(good().call(h).is_ok());
    let mut f = good();
    f.attrs[1].1 = AttrValue::Str(vec![0xff, 0xfe]);
    refused(
        f,
        h,
        Refusal::BadAttribute,
        "attribute `label` is not UTF-8",
    );
    let mut f = good();
    f.attrs[2].1 = AttrValue::Array(S32, 2, vec![0; 8]);
    refused(
        f,
        h,
        Refusal::WrongAttributeType,
        "expected an array of i64, got i32",
    );
    let mut f = good();
    f.attrs[2].1 = AttrValue::Scalar(S64, vec![0; 8]);
    refused(
        f,
        h,
        Refusal::WrongAttributeType,
        "attribute `offsets` is not an array",
    );
    let mut f = good();
    f.attrs[3].1 = AttrValue::Scalar(S8, vec![1]);
    refused(f, h, Refusal::WrongAttributeType, "attribute `flag`");
}

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
fn an_attribute_given_twice_is_refused_in_either_order() {
    // Only a raw call frame can name an attribute twice; the state cache's key would make
    // `[(n, 3), (n, 5)]` and `[(n, 5), (n, 3)]` one state, so both are refused.
    let h: Handler = k::state::windowed::customop_handler_example_windowed;
    let n = |v: i64| AttrValue::Scalar(S64, v.to_le_bytes().to_vec());
    for (a, b) in [(3, 5), (5, 3), (4, 4)] {
        let f = Frame::new(vec![f32s(&[3], &[1.0; 3])], vec![f32s(&[3], &[0.0; 3])])
            .attr("n", n(a))
            .attr("n", n(b));
        refused(f, h, Refusal::BadAttribute, "attribute `n` is given twice");
    }
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
fn every_refusal_is_exercised() {
    // The cases above, by code: each named refusal has at least one test in this file.
    let source = include_str!("frames.rs");
    for r in Refusal::ALL {
        let variant = format!("{r:?}");
        let named = source.contains(&format!("Refusal::{variant}"))
            || source.contains(&format!("[{}]", r.name()));
        assert!(named || r == Refusal::BadBinding, "no test for {r:?}");
    }
    // BadBinding needs a handler whose binding disagrees with its schema, which the macro
    // never generates; it is unit-tested in the runtime (plan.rs).
}

fn table_bytes(len: u32) -> Vec<u8> {
    let mut t = k::Table4k {
        scale: 2.0,
        len,
        values: [0.0; 1022],
    };
    t.values[0] = 1.0;
    t.values[1] = 10.0;
    t.pack()
}

#[test]
fn borrowed_externals_are_checked_like_copies() {
    let borrow: Handler = k::table_dot::customop_handler_example_table_dot;
    let copy: Handler = k::table_dot_copy::customop_handler_example_table_dot_copy;
    let frame = |bytes: &[u8], offset: usize| {
        let mut b = buf(U8, &[bytes.len() as i64], bytes);
        // Shift the bytes so that the payload lands `offset` bytes past a 16-byte boundary + 24.
        if offset > 0 {
            let mut shifted = vec![0u8; offset];
            shifted.extend_from_slice(bytes);
            b.bytes = Bytes::new(&shifted);
            b.offset = Some(offset);
        }
        Frame::new(
            vec![b, f32s(&[1, 2], &[1.0, 1.0])],
            vec![zeros(F32, &[1], 4)],
        )
    };
    // Both read the same table: y = 2 * (1 * 1 + 1 * 10).
    for h in [borrow, copy] {
        let mut f = frame(&table_bytes(2), 0);
        assert!(f.call(h).is_ok());
        assert_eq!(f.rets[0].bytes.get(), &22.0f32.to_le_bytes());
    }
    // Bad bytes are refused the same way, before the kernel reads anything.
    let mut bad = table_bytes(2);
    bad[0] = b'X';
    for h in [borrow, copy] {
        refused(frame(&bad, 0), h, Refusal::BadDescriptor, "bad_magic");
        refused(
            frame(&table_bytes(2)[..100], 0),
            h,
            Refusal::BadDescriptor,
            "payload_length",
        );
    }
    // The kernel's own check works on the borrowed value too.
    refused(
        frame(&table_bytes(0), 0),
        borrow,
        Refusal::KernelError,
        "table length 0",
    );
    // A payload that is not 4-aligned cannot be borrowed (the copy does not care).
    refused(
        frame(&table_bytes(2), 1),
        borrow,
        Refusal::Misaligned,
        "cannot be read in place",
    );
    let mut f = frame(&table_bytes(2), 1);
    assert!(f.call(copy).is_ok());
}

#[test]
fn a_borrowed_view_is_the_unpacked_value() {
    use customop::descriptor::ReprC;
    let bytes = Bytes::new(&table_bytes(7));
    let view = k::Table4k::view(bytes.get()).unwrap();
    assert_eq!(*view, k::Table4k::unpack(bytes.get()).unwrap());
    assert_eq!(
        std::ptr::from_ref(view).cast::<u8>(),
        bytes.get()[24..].as_ptr(),
        "the view points into the bytes"
    );
}

#[test]
fn a_borrowed_view_refuses_bytes_after_the_fixed_part() {
    use customop::descriptor::{ErrorKind, ReprC};
    let mut long = table_bytes(7);
    long.extend_from_slice(&[0; 4]);
    let len = (long.len() - 24) as u32;
    long[8..12].copy_from_slice(&len.to_le_bytes()); // the header agrees, so the payload is read
    let bytes = Bytes::new(&long);
    let e = k::Table4k::view(bytes.get()).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::TooLong { .. }), "{e}");
    assert!(k::Table4k::unpack(bytes.get()).is_err());
}
