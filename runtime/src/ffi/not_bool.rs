//! [`NotBool`]: the element types whose every bit pattern is a value, which attribute and
//! tensor readers may read without checking.

use crate::types::Element;

/// Element types other than `bool` (every bit pattern is a value, so reading one is safe).
pub trait NotBool: Element {}
macro_rules! not_bool {
    ($($t:ty),*) => {$(impl NotBool for $t {})*};
}
not_bool!(i8, i16, i32, i64, u8, u16, u32, u64, f32, f64);
// Every bit pattern of these is a value too: half floats and fp8 are bit containers whose every
// pattern is a number, an infinity or a NaN; a complex number is two floats.
not_bool!(
    half::f16,
    half::bf16,
    crate::types::Complex64,
    crate::types::Complex128
);
crate::float8::with_float8_types!(not_bool);
