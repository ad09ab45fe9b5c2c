//! Typed descriptors: plain-old-data structures that travel through a program as checked bytes.
//!
//! `#[derive(Descriptor)]` on a struct gives it [`Descriptor`]: [`Descriptor::pack`] writes wire
//! format v1 (a 24-byte header, then the payload), [`Descriptor::unpack`] validates every byte
//! before it builds the value. The book's "Descriptors" chapter is the format's specification;
//! in short:
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 4 | magic `CUOP` |
//! | 4 | 2 | format version, `1` (u16 LE) |
//! | 6 | 2 | flags, `0` |
//! | 8 | 4 | payload length in bytes (u32 LE) |
//! | 12 | 4 | reserved, `0` |
//! | 16 | 8 | layout fingerprint (u64 LE): FNV-1a 64 of the canonical layout string |
//! | 24 | … | payload: fixed fields in declaration order at natural alignment, then tails |

mod error;
mod layout;
mod value;
mod wire;

pub use error::{DescriptorError, ErrorKind};
pub(crate) use layout::record as record_name;
pub use layout::{EnumVariant, FieldLayout, Layout, TypeLayout, fingerprint_of};
pub use value::{PackError, pack_value, unpack_value};
pub use wire::{Wire, WireEnum};

/// A type whose Rust layout is its wire layout (little-endian, same size, alignment and field
/// offsets): the primitives, `bool`, the half and 8-bit floats, arrays of such types, field-less
/// `#[repr(int)]` enums and `#[descriptor(repr_c)]` structs.
///
/// # Safety
/// `size_of`, `align_of` and (for structs) every field's offset equal the wire format's, and
/// every field is itself `InPlace`. The derive implements it only after asserting this at
/// compile time; implementing it by hand is not supported.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be read in place",
    label = "not a primitive, array, enum or `repr_c` descriptor",
    note = "the fields of a `#[descriptor(repr_c)]` struct are primitives (the half and 8-bit \
            floats too), `bool`, arrays of them, field-less `#[repr(int)]` enums, or other \
            `repr_c` descriptors"
)]
pub unsafe trait InPlace: Wire {}

macro_rules! in_place {
    ($($t:ty),*) => {$(
        // SAFETY: a primitive's wire form is its little-endian bytes, at its natural alignment.
        unsafe impl InPlace for $t {}
    )*};
}
in_place!(bool, i8, i16, i32, i64, u8, u16, u32, u64, f32, f64);
// SAFETY: `half::f16` and `half::bf16` are `#[repr(transparent)]` over `u16`: two bytes at
// alignment 2, stored as their little-endian bits, as the wire format writes them.
unsafe impl InPlace for half::f16 {}
// SAFETY: as for `half::f16`.
unsafe impl InPlace for half::bf16 {}
macro_rules! in_place_float8 {
    ($($t:path),*) => {$(
        // SAFETY: the 8-bit floats are `#[repr(transparent)]` over `u8`: one byte at alignment
        // 1, stored as its bits, as the wire format writes them.
        unsafe impl InPlace for $t {}
    )*};
}
crate::float8::with_float8_types!(in_place_float8);
// SAFETY: an array's elements are back to back in both layouts.
unsafe impl<T: InPlace, const N: usize> InPlace for [T; N] {}

/// A descriptor that can be read in place: `#[descriptor(repr_c)]` on a `#[repr(C)]` struct
/// without tails. [`ReprC::view`] checks the bytes as [`Descriptor::unpack`] does and returns a
/// reference into them, without copying the payload: what an `#[external(borrow)]` parameter
/// gets, and what a C function can take as a pointer.
///
/// # Safety
/// Implemented by the derive only, with compile-time assertions that the struct's size,
/// alignment and every field offset equal the wire format's and that every field is
/// [`InPlace`]. [`ReprC::view`] relies on that, and on the derive's
/// `Descriptor::__validate_payload` for this type refusing every payload that is not a valid
/// `Self`: a length other than `size_of::<Self>()`, a `bool` byte other than 0 or 1, an enum
/// byte that is no variant's discriminant, a nonzero padding byte. A hand-written
/// `__validate_payload` that accepts less strictly makes `view` unsound.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be borrowed in place",
    label = "not a `repr_c` descriptor",
    note = "give `{Self}` `#[repr(C)]` and `#[descriptor(repr_c)]`, or take it as \
            `#[external]` (unpacked into a copy)"
)]
pub unsafe trait ReprC: Descriptor + InPlace {
    /// The value in `bytes` (a packed descriptor), validated, borrowed in place: refused when
    /// the payload is not aligned for `Self` (XLA's buffers are; a packed `Vec<u8>` may not be),
    /// and on a big-endian target.
    fn view(bytes: &[u8]) -> Result<&Self, DescriptorError> {
        let payload = check_header(bytes, Self::NAME, Self::fingerprint(), Self::FIXED_SIZE)?;
        // Also refuses any byte after the fixed part (the derive's validation).
        Self::__validate_payload(payload)?;
        if cfg!(target_endian = "big") {
            return Err(DescriptorError::new(Self::NAME, ErrorKind::BigEndianTarget));
        }
        let align = core::mem::align_of::<Self>();
        if !(payload.as_ptr() as usize).is_multiple_of(align) {
            return Err(DescriptorError::new(
                Self::NAME,
                ErrorKind::Misaligned {
                    align,
                    address: payload.as_ptr() as usize,
                },
            ));
        }
        // SAFETY: `payload` holds exactly `FIXED_SIZE == size_of::<Self>()` bytes (validated
        // above: the derive's `__validate_payload` for a `ReprC` type checks the length), aligned
        // for `Self` (checked above), and is borrowed for the returned lifetime. The trait's
        // contract makes the Rust layout equal to the wire layout, and `__validate_payload`
        // accepted every field (bools are 0 or 1, enums are variants, padding is zero), so the
        // bytes are a valid `Self` on this little-endian target (checked above).
        Ok(unsafe { &*payload.as_ptr().cast::<Self>() })
    }
}

/// The magic bytes every packed descriptor starts with.
pub const MAGIC: [u8; 4] = *b"CUOP";
/// The wire format version this crate writes and reads.
pub const FORMAT_VERSION: u16 = 1;
/// The header's size in bytes.
pub const HEADER_SIZE: usize = 24;

/// A structure that can be packed into checked bytes and unpacked from them.
///
/// Implement it with `#[derive(Descriptor)]`; the hidden methods are the derive's contract.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a descriptor",
    label = "add `#[derive(Descriptor)]` to `{Self}`",
    note = "opaque structures that ops take or return must derive `customop::Descriptor`"
)]
pub trait Descriptor: Sized {
    /// The descriptor's name: `#[descriptor(name = "...")]`, or the Rust type name.
    const NAME: &'static str;
    /// The length of the payload's fixed part (rounded up to [`Descriptor::ALIGN`]).
    const FIXED_SIZE: usize;
    /// The payload's alignment: the largest alignment of its fields (at least 1).
    const ALIGN: usize;
    /// Whether the descriptor has variable-length tails (`Vec`/`String` fields).
    const HAS_TAILS: bool;
    #[doc(hidden)]
    /// The offsets of the fixed fields in the payload, in declaration order.
    const __OFFSETS: &'static [usize] = &[];
    /// The packed size, header included, when every value packs to the same length.
    const PACKED_SIZE: Option<usize> = if Self::HAS_TAILS {
        None
    } else {
        Some(HEADER_SIZE + Self::FIXED_SIZE)
    };

    /// The layout: every field's name, type, offset and size; the canonical string and its
    /// fingerprint.
    fn layout() -> &'static Layout;

    /// The layout fingerprint that the header carries.
    fn fingerprint() -> u64 {
        Self::layout().fingerprint
    }

    #[doc(hidden)]
    /// The payload's length for this value: the fixed part plus its tails.
    fn __payload_len(&self) -> usize;

    #[doc(hidden)]
    /// Writes the payload into `payload` (exactly `__payload_len()` bytes, all zero).
    fn __write_payload(&self, payload: &mut [u8]);

    #[doc(hidden)]
    /// Reads and validates a whole payload (its length is the header's).
    fn __read_payload(payload: &[u8]) -> Result<Self, DescriptorError>;

    /// Validates a payload as `__read_payload` does, without building the value.
    #[doc(hidden)]
    fn __validate_payload(payload: &[u8]) -> Result<(), DescriptorError> {
        Self::__read_payload(payload).map(drop)
    }

    /// The packed length of this value, header included.
    fn packed_len(&self) -> usize {
        HEADER_SIZE + self.__payload_len()
    }

    /// Packs the value into a new buffer.
    fn pack(&self) -> Vec<u8> {
        let mut out = vec![0u8; self.packed_len()];
        // The buffer has exactly the packed length, so this cannot fail.
        let _ = self.pack_into(&mut out);
        out
    }

    /// Packs the value into `out`, returning the number of bytes written. Does not allocate.
    fn pack_into(&self, out: &mut [u8]) -> Result<usize, DescriptorError> {
        let payload_len = self.__payload_len();
        let total = HEADER_SIZE + payload_len;
        let Ok(len32) = u32::try_from(payload_len) else {
            return Err(DescriptorError::new(
                Self::NAME,
                ErrorKind::TooLarge { len: payload_len },
            ));
        };
        let Some(out) = out.get_mut(..total) else {
            return Err(DescriptorError::new(
                Self::NAME,
                ErrorKind::BufferTooSmall {
                    needed: total,
                    got: out.len(),
                },
            ));
        };
        let (header, payload) = out.split_at_mut(HEADER_SIZE);
        write_header(header, len32, Self::fingerprint());
        payload.fill(0);
        self.__write_payload(payload);
        Ok(total)
    }

    /// Unpacks and validates `bytes` (of any alignment): header, length, fingerprint, every
    /// field. Never panics and never reads out of bounds, whatever the bytes.
    fn unpack(bytes: &[u8]) -> Result<Self, DescriptorError> {
        let payload = check_header(bytes, Self::NAME, Self::fingerprint(), Self::FIXED_SIZE)?;
        Self::__read_payload(payload)
    }
}

fn write_header(header: &mut [u8], payload_len: u32, fingerprint: u64) {
    header[0..4].copy_from_slice(&MAGIC);
    header[4..6].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
    header[6..8].copy_from_slice(&0u16.to_le_bytes());
    header[8..12].copy_from_slice(&payload_len.to_le_bytes());
    header[12..16].copy_from_slice(&0u32.to_le_bytes());
    header[16..24].copy_from_slice(&fingerprint.to_le_bytes());
}

fn le_u16(b: &[u8], at: usize) -> u16 {
    let mut a = [0u8; 2];
    a.copy_from_slice(&b[at..at + 2]);
    u16::from_le_bytes(a)
}

fn le_u32(b: &[u8], at: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(a)
}

fn le_u64(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

/// Checks that `bytes` are a packed descriptor of `layout` as far as its header and length say:
/// magic, version, fingerprint, payload length, and for a layout of fixed size that size (so a
/// copy cut short or run long is refused). Field values (bools, enums, tails) are checked when
/// a handler unpacks them.
pub fn check_packed(layout: &'static Layout, bytes: &[u8]) -> Result<(), DescriptorError> {
    check_header(bytes, &layout.name, layout.fingerprint, layout.fixed_size)?;
    match layout.packed_size {
        Some(n) if bytes.len() > n => Err(DescriptorError::new(
            &layout.name,
            ErrorKind::TooLong {
                used: n,
                got: bytes.len(),
            },
        )),
        _ => Ok(()),
    }
}

/// Checks a packed descriptor's header and returns its payload.
fn check_header<'b>(
    bytes: &'b [u8],
    name: &'static str,
    fingerprint: u64,
    fixed_size: usize,
) -> Result<&'b [u8], DescriptorError> {
    let err = |kind| Err(DescriptorError::new(name, kind));
    if bytes.len() < HEADER_SIZE {
        return err(ErrorKind::TooShort {
            needed: HEADER_SIZE,
            got: bytes.len(),
        });
    }
    // Compared as one word: a slice comparison would call memcmp.
    if le_u32(bytes, 0) != u32::from_le_bytes(MAGIC) {
        let mut found = [0u8; 4];
        found.copy_from_slice(&bytes[0..4]);
        return err(ErrorKind::BadMagic { found });
    }
    let version = le_u16(bytes, 4);
    if version != FORMAT_VERSION {
        return err(ErrorKind::UnsupportedVersion { found: version });
    }
    let flags = le_u16(bytes, 6);
    let reserved = le_u32(bytes, 12);
    if flags != 0 || reserved != 0 {
        return err(ErrorKind::ReservedBits { flags, reserved });
    }
    let found = le_u64(bytes, 16);
    if found != fingerprint {
        return err(ErrorKind::FingerprintMismatch {
            expected: fingerprint,
            found,
            packed_as: layout::name_of(found),
        });
    }
    let payload_len = le_u32(bytes, 8) as usize;
    let actual = bytes.len() - HEADER_SIZE;
    if payload_len != actual {
        return err(ErrorKind::PayloadLength {
            header: payload_len,
            actual,
        });
    }
    if actual < fixed_size {
        return err(ErrorKind::TooShort {
            needed: HEADER_SIZE + fixed_size,
            got: bytes.len(),
        });
    }
    Ok(&bytes[HEADER_SIZE..])
}

/// Helpers the derive's generated code calls.
#[doc(hidden)]
pub mod __derive {
    pub use super::wire::{
        check_field, check_zero, read_field, read_string_tail, read_vec_tail, tail_len_string,
        tail_len_vec, write_field, write_string_tail, write_vec_tail,
    };

    /// Offsets of fields laid out in order at their natural alignment, and the fixed part's
    /// size rounded up to the largest alignment: `(offsets, size, align)`.
    pub const fn layout_offsets<const N: usize>(
        fields: [(usize, usize); N],
    ) -> ([usize; N], usize, usize) {
        let mut offsets = [0usize; N];
        let mut at = 0usize;
        let mut max_align = 1usize;
        let mut i = 0;
        while i < N {
            let (size, align) = fields[i];
            if align > max_align {
                max_align = align;
            }
            at = at.div_ceil(align) * align;
            offsets[i] = at;
            at += size;
            i += 1;
        }
        (offsets, at.div_ceil(max_align) * max_align, max_align)
    }
}
