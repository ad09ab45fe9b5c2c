//! Every validation error: bad headers, bad field values and bad tails, each named, and
//! `check_packed` on bytes cut short or run long.

use super::*;

fn kind_of<T: Descriptor + std::fmt::Debug>(bytes: &[u8]) -> (ErrorKind, String, String) {
    let e = T::unpack(bytes).unwrap_err();
    (e.kind().clone(), e.field().to_string(), e.to_string())
}

#[test]
fn every_bad_input_gets_its_own_error() {
    let good = blob().pack();

    let (k, _, msg) = kind_of::<Blob>(&good[..10]);
    assert_eq!(
        k,
        ErrorKind::TooShort {
            needed: 24,
            got: 10
        }
    );
    assert!(
        msg.starts_with("descriptor `my_lib::Blob`: too short"),
        "{msg}"
    );

    let mut long = good.clone();
    long.push(0);
    let (k, _, _) = kind_of::<Blob>(&long);
    assert_eq!(
        k,
        ErrorKind::PayloadLength {
            header: 32,
            actual: 33
        }
    );

    // Header agrees with a longer payload: the fields end first.
    let mut long2 = long.clone();
    long2[8..12].copy_from_slice(&33u32.to_le_bytes());
    let (k, _, _) = kind_of::<Blob>(&long2);
    assert_eq!(k, ErrorKind::TooLong { used: 56, got: 57 });

    let mut short = good[..50].to_vec();
    short[8..12].copy_from_slice(&26u32.to_le_bytes());
    let (k, _, _) = kind_of::<Blob>(&short);
    assert_eq!(
        k,
        ErrorKind::TooShort {
            needed: 56,
            got: 50
        }
    );

    let mut magic = good.clone();
    magic[0] = b'X';
    let (k, _, msg) = kind_of::<Blob>(&magic);
    assert_eq!(k, ErrorKind::BadMagic { found: *b"XUOP" });
    assert!(msg.contains("bad magic"), "{msg}");

    let mut version = good.clone();
    version[4] = 2;
    let (k, _, msg) = kind_of::<Blob>(&version);
    assert_eq!(k, ErrorKind::UnsupportedVersion { found: 2 });
    assert!(msg.contains("unsupported format version 2"), "{msg}");

    let mut flags = good.clone();
    flags[6] = 1;
    let (k, _, _) = kind_of::<Blob>(&flags);
    assert_eq!(
        k,
        ErrorKind::ReservedBits {
            flags: 1,
            reserved: 0
        }
    );

    // Bytes packed for another (known) layout name it.
    let _ = Everything::layout();
    let other = everything().pack();
    let (k, _, msg) = kind_of::<Blob>(&other);
    assert!(
        matches!(
            k,
            ErrorKind::FingerprintMismatch {
                packed_as: Some("Everything"),
                ..
            }
        ),
        "{k:?}"
    );
    assert!(
        msg.contains("`my_lib::Blob`") && msg.contains("packed as `Everything`"),
        "{msg}"
    );
    let mut unknown = good.clone();
    unknown[16] ^= 0xff;
    let (k, _, msg) = kind_of::<Blob>(&unknown);
    assert!(matches!(
        k,
        ErrorKind::FingerprintMismatch {
            packed_as: None,
            ..
        }
    ));
    assert!(msg.contains("does not know"), "{msg}");
}

#[test]
fn field_values_are_validated_and_named() {
    let good = everything().pack();
    let at = |field: &str| {
        HEADER_SIZE
            + Everything::layout()
                .fields
                .iter()
                .find(|f| f.name == field)
                .unwrap()
                .offset
                .unwrap()
    };

    let mut b = good.clone();
    b[at("a")] = 2;
    let (k, field, msg) = kind_of::<Everything>(&b);
    assert_eq!(k, ErrorKind::InvalidBool { byte: 2 });
    assert_eq!(field, "a");
    assert_eq!(
        msg,
        "descriptor `Everything`, field `a`: invalid bool byte 0x02 (must be 0 or 1)"
    );

    let mut b = good.clone();
    b[at("mode")] = 9;
    let (k, field, _) = kind_of::<Everything>(&b);
    assert_eq!(
        k,
        ErrorKind::InvalidEnum {
            name: "Mode",
            value: 9
        }
    );
    assert_eq!(field, "mode");

    let mut b = good.clone();
    b[at("signed")..at("signed") + 4].copy_from_slice(&5i32.to_le_bytes());
    let (k, _, _) = kind_of::<Everything>(&b);
    assert_eq!(
        k,
        ErrorKind::InvalidEnum {
            name: "Signed",
            value: 5
        }
    );

    let mut b = good.clone();
    b[at("inner")] = 3;
    let (_, field, msg) = kind_of::<Everything>(&b);
    assert_eq!(field, "inner.flag");
    assert!(
        msg.starts_with("descriptor `Everything`, field `inner.flag`"),
        "{msg}"
    );

    let mut b = good.clone();
    b[at("inners") + 16] = 7; // inners[1].flag
    let (_, field, _) = kind_of::<Everything>(&b);
    assert_eq!(field, "inners[1].flag");

    let mut b = good.clone();
    b[at("mode") + 1] = 1; // padding after mode
    let (k, _, _) = kind_of::<Everything>(&b);
    assert_eq!(k, ErrorKind::NonzeroPadding { offset: 49 });
}

#[test]
fn tails_are_validated() {
    let good = table().pack();
    let p = HEADER_SIZE;

    let mut b = good.clone();
    b[p + 4..p + 8].copy_from_slice(&1_000_000u32.to_le_bytes());
    let (k, field, _) = kind_of::<Table>(&b);
    assert!(
        matches!(k, ErrorKind::TailLength { len: 1_000_000, .. }),
        "{k:?}"
    );
    assert_eq!(field, "offsets");

    let mut b = good.clone();
    b[p + 32..p + 36].copy_from_slice(&u32::MAX.to_le_bytes());
    let (k, field, _) = kind_of::<Table>(&b);
    assert!(matches!(k, ErrorKind::TailLength { .. }), "{k:?}");
    assert_eq!(field, "label");

    let mut b = good.clone();
    b[p + 37] = 0xff; // inside "héllo"
    let (k, field, msg) = kind_of::<Table>(&b);
    assert_eq!(k, ErrorKind::InvalidUtf8 { at: 1 });
    assert_eq!(field, "label");
    assert!(msg.contains("not valid UTF-8"), "{msg}");

    let mut b = good.clone();
    b[p + 49] = 5;
    let (k, field, _) = kind_of::<Table>(&b);
    assert_eq!(
        k,
        ErrorKind::InvalidEnum {
            name: "Mode",
            value: 5
        }
    );
    assert_eq!(field, "modes[1]");

    let mut b = good.clone();
    b.truncate(p + 46);
    b[8..12].copy_from_slice(&46u32.to_le_bytes());
    let (k, field, _) = kind_of::<Table>(&b);
    assert!(matches!(k, ErrorKind::TooShort { .. }), "{k:?}");
    assert_eq!(field, "modes");
}

#[test]
fn check_packed_refuses_bytes_cut_short_or_run_long() {
    use customop::descriptor::check_packed;
    let l = Blob::layout();
    let bytes = blob().pack();
    assert!(check_packed(l, &bytes).is_ok());
    assert!(check_packed(l, &bytes[..40]).is_err());
    let mut long = bytes.clone();
    long.extend([0u8; 8]);
    assert!(
        check_packed(l, &long).is_err(),
        "the header's length disagrees"
    );
    // A header that says 40 bytes follow: consistent, but longer than the layout's size.
    long[8..12].copy_from_slice(&40u32.to_le_bytes());
    let e = check_packed(l, &long).unwrap_err().to_string();
    assert!(
        e.contains("too long: 64 bytes, but the fields end at 56"),
        "{e}"
    );
}
