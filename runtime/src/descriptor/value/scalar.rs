//! A primitive field (`bool`, an integer, a float) in the layout-driven codec: a value converted
//! to the field's Rust type (what it takes, its range and its rounding, decided here once), and
//! its bytes written and read by that type's own [`Wire`] impl, the one `#[derive(Descriptor)]`
//! writes and reads with. So the codec the command line and Python use cannot write other bytes
//! than the derive, nor accept other bytes when it reads.

use crate::descriptor::DescriptorError;
use crate::descriptor::layout::TypeLayout;
use crate::descriptor::wire::Wire;
use serde_json::{Value, json};

/// A primitive field type as a value: from one (checked), to one.
trait Scalar: Wire {
    /// The field's value from `v` (`name`: the type, for messages), or why `v` is not one.
    fn from_json(v: &Value, name: &str) -> Result<Self, String>;
    /// The value.
    fn to_json(self) -> Value;
}

/// Runs `$go!(T)` with the Rust type `T` of primitive field type `$t`: `Some` of what it gives,
/// `None` for any other field type.
macro_rules! by_type {
    ($t:expr, $go:ident) => {
        match $t {
            TypeLayout::Bool => Some($go!(bool)),
            TypeLayout::I8 => Some($go!(i8)),
            TypeLayout::I16 => Some($go!(i16)),
            TypeLayout::I32 => Some($go!(i32)),
            TypeLayout::I64 => Some($go!(i64)),
            TypeLayout::U8 => Some($go!(u8)),
            TypeLayout::U16 => Some($go!(u16)),
            TypeLayout::U32 => Some($go!(u32)),
            TypeLayout::U64 => Some($go!(u64)),
            TypeLayout::F16 => Some($go!(half::f16)),
            TypeLayout::BF16 => Some($go!(half::bf16)),
            TypeLayout::F32 => Some($go!(f32)),
            TypeLayout::F64 => Some($go!(f64)),
            TypeLayout::F8E4M3FN => Some($go!(crate::float8::F8E4M3FN)),
            TypeLayout::F8E5M2 => Some($go!(crate::float8::F8E5M2)),
            TypeLayout::F8E4M3 => Some($go!(crate::float8::F8E4M3)),
            TypeLayout::F8E3M4 => Some($go!(crate::float8::F8E3M4)),
            TypeLayout::F8E4M3FNUZ => Some($go!(crate::float8::F8E4M3FNUZ)),
            TypeLayout::F8E5M2FNUZ => Some($go!(crate::float8::F8E5M2FNUZ)),
            TypeLayout::F8E4M3B11FNUZ => Some($go!(crate::float8::F8E4M3B11FNUZ)),
            TypeLayout::F8E8M0FNU => Some($go!(crate::float8::F8E8M0FNU)),
            _ => None,
        }
    };
}

/// `(size, alignment)` of primitive field type `t` (its `Wire`'s), or `None`.
pub(super) fn size_align(t: &TypeLayout) -> Option<(usize, usize)> {
    macro_rules! go {
        ($ty:ty) => {
            (<$ty as Wire>::SIZE, <$ty as Wire>::ALIGN)
        };
    }
    by_type!(t, go)
}

/// Writes `v` as primitive field type `t` into `out` (its size); `None` for another type.
pub(super) fn write(t: &TypeLayout, v: &Value, out: &mut [u8]) -> Option<Result<(), String>> {
    macro_rules! go {
        ($ty:ty) => {
            <$ty as Scalar>::from_json(v, &t.spelled()).map(|x| x.write(out))
        };
    }
    by_type!(t, go)
}

/// The value of primitive field type `t` in `bytes` (its size), validated as the derive reads
/// it; `None` for another type.
pub(super) fn read(t: &TypeLayout, bytes: &[u8]) -> Option<Result<Value, DescriptorError>> {
    macro_rules! go {
        ($ty:ty) => {
            <$ty as Wire>::read(bytes).map(Scalar::to_json)
        };
    }
    by_type!(t, go)
}

impl Scalar for bool {
    fn from_json(v: &Value, _: &str) -> Result<bool, String> {
        v.as_bool().ok_or_else(|| format!("expected bool, got {v}"))
    }
    fn to_json(self) -> Value {
        json!(self)
    }
}

/// The integers: a JSON integer in the type's range.
macro_rules! scalar_int {
    ($($t:ty),*) => {$(
        impl Scalar for $t {
            fn from_json(v: &Value, name: &str) -> Result<$t, String> {
                let n: i128 = match (v.as_i64(), v.as_u64()) {
                    (Some(i), _) => i128::from(i),
                    (None, Some(u)) => i128::from(u),
                    _ => return Err(format!("expected an integer ({name}), got {v}")),
                };
                <$t>::try_from(n).map_err(|_| format!("{n} does not fit {name}"))
            }
            fn to_json(self) -> Value {
                json!(self)
            }
        }
    )*};
}

scalar_int!(i8, i16, i32, i64, u8, u16, u32, u64);

/// A float field's number: a JSON number, or `"inf"`, `"+inf"`, `"-inf"`, `"nan"`.
fn float_of(v: &Value, name: &str) -> Result<f64, String> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => match s.as_str() {
            "inf" | "+inf" => Some(f64::INFINITY),
            "-inf" => Some(f64::NEG_INFINITY),
            "nan" => Some(f64::NAN),
            _ => None,
        },
        _ => None,
    }
    .ok_or_else(|| format!("expected a number ({name}), got {v}"))
}

/// A float as a value: a number, or `"inf"`, `"-inf"`, `"nan"`.
fn float_value(x: f64) -> Value {
    if x.is_nan() {
        json!("nan")
    } else if x.is_infinite() {
        json!(if x > 0.0 { "inf" } else { "-inf" })
    } else {
        json!(x)
    }
}

/// `x` for a message: `1e39` rather than forty digits.
fn short(x: f64) -> String {
    if x != 0.0 && !(1e-4..1e16).contains(&x.abs()) {
        format!("{x:e}")
    } else {
        format!("{x}")
    }
}

/// `x` rounded to a float type (`round`, to nearest, ties to even), and `back` its value:
/// refused where a finite `x` rounds past the type's range, or an infinity finds none there.
fn rounded<T>(
    x: f64,
    name: &str,
    round: impl Fn(f64) -> T,
    back: impl Fn(&T) -> f64,
) -> Result<T, String> {
    let r = round(x);
    let b = back(&r);
    if x.is_infinite() && b.is_nan() {
        return Err(format!("{name} has no infinity"));
    }
    if x.is_finite() && !b.is_finite() {
        return Err(format!(
            "{} does not fit {name}: it is beyond its range",
            short(x)
        ));
    }
    Ok(r)
}

impl Scalar for f64 {
    fn from_json(v: &Value, name: &str) -> Result<f64, String> {
        float_of(v, name)
    }
    fn to_json(self) -> Value {
        float_value(self)
    }
}

impl Scalar for f32 {
    fn from_json(v: &Value, name: &str) -> Result<f32, String> {
        rounded(float_of(v, name)?, name, |x| x as f32, |r| f64::from(*r))
    }
    fn to_json(self) -> Value {
        float_value(f64::from(self))
    }
}

impl Scalar for half::f16 {
    fn from_json(v: &Value, name: &str) -> Result<half::f16, String> {
        rounded(float_of(v, name)?, name, crate::round::f16_from_f64, |r| {
            r.to_f64()
        })
    }
    fn to_json(self) -> Value {
        float_value(self.to_f64())
    }
}

impl Scalar for half::bf16 {
    fn from_json(v: &Value, name: &str) -> Result<half::bf16, String> {
        rounded(float_of(v, name)?, name, crate::round::bf16_from_f64, |r| {
            r.to_f64()
        })
    }
    fn to_json(self) -> Value {
        float_value(self.to_f64())
    }
}

/// The 8-bit floats, rounded as `ml_dtypes` rounds (the types' own `from_f64`).
macro_rules! scalar_float8 {
    ($(crate::float8::$t:ident),* $(,)?) => {$(
        impl Scalar for crate::float8::$t {
            fn from_json(v: &Value, name: &str) -> Result<Self, String> {
                rounded(float_of(v, name)?, name, Self::from_f64, |r| r.to_f64())
            }
            fn to_json(self) -> Value {
                float_value(self.to_f64())
            }
        }
    )*};
}

crate::float8::with_float8_types!(scalar_float8);
