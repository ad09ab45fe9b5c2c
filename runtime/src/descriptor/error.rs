//! What can be wrong with descriptor bytes.

use core::fmt;

/// Why bytes could not be unpacked (or a value packed): which descriptor, which field, what.
///
/// One pointer wide, so that `Result<T, DescriptorError>` stays small on the success path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DescriptorError {
    inner: Box<Inner>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Inner {
    descriptor: &'static str,
    field: String,
    kind: ErrorKind,
}

/// The kinds of [`DescriptorError`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// Fewer bytes than the header or the fixed part needs.
    TooShort {
        /// Bytes needed.
        needed: usize,
        /// Bytes given.
        got: usize,
    },
    /// Bytes left over after the last field.
    TooLong {
        /// Bytes the fields used.
        used: usize,
        /// Bytes given.
        got: usize,
    },
    /// The first four bytes are not `CUOP`.
    BadMagic {
        /// The bytes found.
        found: [u8; 4],
    },
    /// A format version this crate does not read.
    UnsupportedVersion {
        /// The version found.
        found: u16,
    },
    /// Nonzero flags or reserved header bits.
    ReservedBits {
        /// The flags found.
        flags: u16,
        /// The reserved word found.
        reserved: u32,
    },
    /// The bytes were packed for another layout.
    FingerprintMismatch {
        /// This descriptor's fingerprint.
        expected: u64,
        /// The header's fingerprint.
        found: u64,
        /// The descriptor the bytes were packed as, if this process knows it.
        packed_as: Option<&'static str>,
    },
    /// The header's payload length is not the number of bytes after the header.
    PayloadLength {
        /// The header's length.
        header: usize,
        /// The bytes after the header.
        actual: usize,
    },
    /// A `bool` byte other than 0 or 1.
    InvalidBool {
        /// The byte.
        byte: u8,
    },
    /// An enum discriminant with no variant.
    InvalidEnum {
        /// The enum's name.
        name: &'static str,
        /// The value found.
        value: i64,
    },
    /// A padding byte that is not zero.
    NonzeroPadding {
        /// Its offset in the payload.
        offset: usize,
    },
    /// A tail's length runs past the end of the bytes.
    TailLength {
        /// The element count (or byte length, for a `String`) found.
        len: u64,
        /// The bytes left for it.
        available: usize,
    },
    /// A `String` tail that is not UTF-8.
    InvalidUtf8 {
        /// Where the first invalid byte is, in the string.
        at: usize,
    },
    /// `pack_into` was given too small a buffer.
    BufferTooSmall {
        /// Bytes needed.
        needed: usize,
        /// Bytes given.
        got: usize,
    },
    /// A payload that cannot be read in place: not aligned for the type.
    Misaligned {
        /// The alignment the type needs.
        align: usize,
        /// The payload's address.
        address: usize,
    },
    /// The value's payload does not fit the header's 32-bit length.
    TooLarge {
        /// The payload's length.
        len: usize,
    },
    /// Reading in place on a big-endian target: the wire format is little-endian, so only
    /// `unpack` (which converts) can read it there.
    BigEndianTarget,
}

impl ErrorKind {
    /// The kind's stable snake_case name (`bad_magic`, `fingerprint_mismatch`, ...), which the
    /// handler's messages carry.
    pub fn name(&self) -> &'static str {
        match self {
            ErrorKind::TooShort { .. } => "too_short",
            ErrorKind::TooLong { .. } => "too_long",
            ErrorKind::BadMagic { .. } => "bad_magic",
            ErrorKind::UnsupportedVersion { .. } => "unsupported_version",
            ErrorKind::ReservedBits { .. } => "reserved_bits",
            ErrorKind::FingerprintMismatch { .. } => "fingerprint_mismatch",
            ErrorKind::PayloadLength { .. } => "payload_length",
            ErrorKind::InvalidBool { .. } => "invalid_bool",
            ErrorKind::InvalidEnum { .. } => "invalid_enum",
            ErrorKind::NonzeroPadding { .. } => "nonzero_padding",
            ErrorKind::TailLength { .. } => "tail_length",
            ErrorKind::InvalidUtf8 { .. } => "invalid_utf8",
            ErrorKind::BufferTooSmall { .. } => "buffer_too_small",
            ErrorKind::TooLarge { .. } => "too_large",
            ErrorKind::Misaligned { .. } => "misaligned",
            ErrorKind::BigEndianTarget => "big_endian_target",
        }
    }
}

impl DescriptorError {
    /// An error of `kind` in descriptor `descriptor`, not in a particular field.
    #[cold]
    pub fn new(descriptor: &'static str, kind: ErrorKind) -> Self {
        DescriptorError {
            inner: Box::new(Inner {
                descriptor,
                field: String::new(),
                kind,
            }),
        }
    }

    /// An error of `kind` in a field; the derive adds the field's name and the descriptor's.
    #[cold]
    pub fn field_error(kind: ErrorKind) -> Self {
        DescriptorError::new("", kind)
    }

    /// The error, seen from the enclosing field `name` (prepends `name.` to the path).
    #[doc(hidden)]
    #[cold]
    pub fn in_field(mut self, name: &str) -> Self {
        let field = &mut self.inner.field;
        if field.is_empty() {
            *field = name.to_string();
        } else if field.starts_with('[') {
            *field = format!("{name}{field}");
        } else {
            *field = format!("{name}.{field}");
        }
        self
    }

    /// The error, seen from descriptor `name`: the outermost descriptor names the error.
    #[doc(hidden)]
    #[cold]
    pub fn in_descriptor(mut self, name: &'static str) -> Self {
        self.inner.descriptor = name;
        self
    }

    /// The descriptor being unpacked.
    pub fn descriptor(&self) -> &'static str {
        self.inner.descriptor
    }

    /// The field path (`inner.mode`), empty for header errors.
    pub fn field(&self) -> &str {
        &self.inner.field
    }

    /// What went wrong.
    pub fn kind(&self) -> &ErrorKind {
        &self.inner.kind
    }
}

impl fmt::Display for DescriptorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let e = &*self.inner;
        write!(f, "descriptor `{}`", e.descriptor)?;
        if !e.field.is_empty() {
            write!(f, ", field `{}`", e.field)?;
        }
        f.write_str(": ")?;
        match &e.kind {
            ErrorKind::TooShort { needed, got } => {
                write!(f, "too short: {got} bytes, at least {needed} needed")
            }
            ErrorKind::TooLong { used, got } => write!(
                f,
                "too long: {got} bytes, but the fields end at {used} ({} left over)",
                got - used
            ),
            ErrorKind::BadMagic { found } => write!(
                f,
                "bad magic {found:02x?} (expected \"CUOP\"): these are not packed descriptor bytes"
            ),
            ErrorKind::UnsupportedVersion { found } => write!(
                f,
                "unsupported format version {found} (this build reads version {})",
                super::FORMAT_VERSION
            ),
            ErrorKind::ReservedBits { flags, reserved } => write!(
                f,
                "reserved header fields must be zero (flags 0x{flags:04x}, reserved 0x{reserved:08x})"
            ),
            ErrorKind::FingerprintMismatch {
                expected,
                found,
                packed_as,
            } => {
                write!(
                    f,
                    "fingerprint mismatch: expected 0x{expected:016x}, the bytes carry 0x{found:016x}"
                )?;
                match packed_as {
                    Some(n) => write!(f, " (packed as `{n}`)"),
                    None => f.write_str(" (packed for a layout this process does not know)"),
                }
            }
            ErrorKind::PayloadLength { header, actual } => write!(
                f,
                "the header says the payload is {header} bytes, but {actual} follow it"
            ),
            ErrorKind::InvalidBool { byte } => {
                write!(f, "invalid bool byte 0x{byte:02x} (must be 0 or 1)")
            }
            ErrorKind::InvalidEnum { name, value } => {
                write!(f, "{value} is not a discriminant of enum `{name}`")
            }
            ErrorKind::NonzeroPadding { offset } => {
                write!(f, "padding byte at payload offset {offset} is not zero")
            }
            ErrorKind::TailLength { len, available } => write!(
                f,
                "tail length {len} is out of range ({available} bytes left)"
            ),
            ErrorKind::InvalidUtf8 { at } => {
                write!(f, "string is not valid UTF-8 (at byte {at})")
            }
            ErrorKind::BufferTooSmall { needed, got } => {
                write!(f, "buffer of {got} bytes is too small: {needed} needed")
            }
            ErrorKind::TooLarge { len } => {
                write!(f, "payload of {len} bytes does not fit a 32-bit length")
            }
            ErrorKind::Misaligned { align, address } => write!(
                f,
                "payload at 0x{address:x} is not aligned to {align} bytes, so it cannot be read \
                 in place"
            ),
            ErrorKind::BigEndianTarget => f.write_str(
                "this target is big-endian and the wire format little-endian: read it with \
                 `unpack` (a copy), not in place",
            ),
        }
    }
}

impl std::error::Error for DescriptorError {}
