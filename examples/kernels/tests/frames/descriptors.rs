//! Externals: descriptor bytes (header, fingerprint, length, bools, enums) copied or borrowed in place.

use super::*;

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
