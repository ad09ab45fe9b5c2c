//! Host arrays: dtype, shape and little-endian bytes, to and from typed Rust values.

use serde::{Deserialize, Serialize};

/// A host array: dtype (numpy name), shape and little-endian bytes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Array {
    /// The numpy dtype name: `float32`, `int8`, `uint8`, ...
    pub dtype: String,
    /// The shape.
    pub shape: Vec<i64>,
    /// The elements' little-endian bytes, row-major, as hex.
    hex: String,
    /// For a sharded run: the mesh axes each dimension is split along.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<Vec<Vec<String>>>,
}

macro_rules! typed_array {
    ($($from:ident $to:ident $t:ty => $dtype:literal),* $(,)?) => {
        impl Array {
            $(
                #[doc = concat!("An array of `", stringify!($t), "` values with the given shape.")]
                pub fn $from(shape: &[i64], values: &[$t]) -> Array {
                    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
                    Array::from_bytes($dtype, shape, &bytes)
                }

                #[doc = concat!("The elements as `", stringify!($t), "`; panics if the dtype is not `", $dtype, "`.")]
                pub fn $to(&self) -> Vec<$t> {
                    assert_eq!(self.dtype, $dtype, "array dtype");
                    const N: usize = core::mem::size_of::<$t>();
                    self.bytes()
                        .chunks_exact(N)
                        .map(|c| {
                            let mut b = [0u8; N];
                            b.copy_from_slice(c);
                            <$t>::from_le_bytes(b)
                        })
                        .collect()
                }
            )*
        }
    };
}

typed_array!(
    f32 to_f32 f32 => "float32",
    f64 to_f64 f64 => "float64",
    i8 to_i8 i8 => "int8",
    i32 to_i32 i32 => "int32",
    i64 to_i64 i64 => "int64",
    u8 to_u8 u8 => "uint8",
    u32 to_u32 u32 => "uint32",
);

impl Array {
    /// An array from raw little-endian bytes.
    pub fn from_bytes(dtype: &str, shape: &[i64], bytes: &[u8]) -> Array {
        let mut hex = String::with_capacity(bytes.len() * 2);
        for b in bytes {
            hex.push_str(&format!("{b:02x}"));
        }
        Array {
            dtype: dtype.to_string(),
            shape: shape.to_vec(),
            hex,
            spec: None,
        }
    }

    /// The same array, placed on the mesh split along `spec` (per dimension, the mesh axes).
    pub fn sharded(mut self, spec: &[&[&str]]) -> Array {
        self.spec = Some(
            spec.iter()
                .map(|d| d.iter().map(|a| a.to_string()).collect())
                .collect(),
        );
        self
    }

    /// The raw little-endian bytes.
    pub fn bytes(&self) -> Vec<u8> {
        (0..self.hex.len() / 2)
            .map(|i| u8::from_str_radix(&self.hex[2 * i..2 * i + 2], 16).unwrap_or(0))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrays_round_trip_their_bytes() {
        let a = Array::f32(&[2], &[1.5, -2.0]);
        assert_eq!(a.hex, "0000c03f000000c0");
        assert_eq!(a.to_f32(), vec![1.5, -2.0]);
        assert_eq!(Array::i8(&[3], &[-1, 0, 127]).to_i8(), vec![-1, 0, 127]);
    }
}
