//! MLIR attribute values as the builder writes them, and their exact text.

use core::fmt::{self, Write};

/// An attribute value: what an op's attribute or a `backend_config` dictionary entry holds.
///
/// Printed exactly: floats as round-trip decimal (or hexadecimal bit patterns when not finite),
/// strings with every byte outside printable ASCII written as `\XX`.
#[derive(Clone, Debug, PartialEq)]
pub enum Attr {
    /// `true` / `false`.
    Bool(bool),
    /// `N : i32`.
    I32(i32),
    /// `N : i64`.
    I64(i64),
    /// `N : ui8`... any integer with its MLIR type name (`i8`, `ui32`, ...).
    Int(i128, &'static str),
    /// `X : f32`.
    F32(f32),
    /// `X : f64`.
    F64(f64),
    /// A string of arbitrary bytes.
    Str(Vec<u8>),
    /// `array<i64: 1, 2>`.
    DenseI64(Vec<i64>),
    /// `[a, b]`.
    Array(Vec<Attr>),
    /// `{key = value, ...}`; keys are written as given (bare identifiers or quoted).
    Dict(Vec<(String, Attr)>),
    /// Already-formatted MLIR attribute text (for dialect attributes such as
    /// `#stablehlo<comparison_direction LT>`).
    Raw(String),
}

/// Writes Rust's shortest round-trip `{:e}` form (`1e-5`) as an MLIR float literal, which needs
/// a `.` in the mantissa (`1.0e-5`).
fn write_sci(out: &mut impl Write, sci: &str) -> fmt::Result {
    match sci.split_once('e') {
        Some((mantissa, exp)) if !mantissa.contains('.') => write!(out, "{mantissa}.0e{exp}"),
        _ => out.write_str(sci),
    }
}

/// Writes `v` as an MLIR float literal that parses back to the same `f32`: decimal when finite,
/// the hexadecimal bit pattern otherwise.
pub(crate) fn write_f32(out: &mut impl Write, v: f32) -> fmt::Result {
    if v.is_finite() {
        write_sci(out, &format!("{v:e}"))
    } else {
        write!(out, "0x{:08X}", v.to_bits())
    }
}

/// Writes `v` as an MLIR float literal that parses back to the same `f64`.
pub(crate) fn write_f64(out: &mut impl Write, v: f64) -> fmt::Result {
    if v.is_finite() {
        write_sci(out, &format!("{v:e}"))
    } else {
        write!(out, "0x{:016X}", v.to_bits())
    }
}

/// Writes `bytes` as an MLIR string literal (quotes included).
pub(crate) fn write_str_literal(out: &mut impl Write, bytes: &[u8]) -> fmt::Result {
    out.write_char('"')?;
    for &b in bytes {
        if (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\' {
            out.write_char(b as char)?;
        } else {
            write!(out, "\\{b:02X}")?;
        }
    }
    out.write_char('"')
}

/// Whether `key` can be written bare in a dictionary (an MLIR bare identifier).
fn is_bare_identifier(key: &str) -> bool {
    let mut chars = key.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '$' | '.'))
}

impl fmt::Display for Attr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Attr::Bool(b) => write!(f, "{b}"),
            Attr::I32(v) => write!(f, "{v} : i32"),
            Attr::I64(v) => write!(f, "{v} : i64"),
            Attr::Int(v, ty) => write!(f, "{v} : {ty}"),
            Attr::F32(v) => {
                write_f32(f, *v)?;
                f.write_str(" : f32")
            }
            Attr::F64(v) => {
                write_f64(f, *v)?;
                f.write_str(" : f64")
            }
            Attr::Str(bytes) => write_str_literal(f, bytes),
            Attr::DenseI64(values) => {
                f.write_str("array<i64")?;
                for (i, v) in values.iter().enumerate() {
                    f.write_str(if i == 0 { ": " } else { ", " })?;
                    write!(f, "{v}")?;
                }
                f.write_str(">")
            }
            Attr::Array(items) => {
                f.write_str("[")?;
                for (i, a) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{a}")?;
                }
                f.write_str("]")
            }
            Attr::Dict(entries) => {
                f.write_str("{")?;
                for (i, (k, v)) in entries.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    if is_bare_identifier(k) {
                        f.write_str(k)?;
                    } else {
                        write_str_literal(f, k.as_bytes())?;
                    }
                    write!(f, " = {v}")?;
                }
                f.write_str("}")
            }
            Attr::Raw(text) => f.write_str(text),
        }
    }
}

impl From<crate::ffi::AttrLit> for Attr {
    /// An op attribute's value as MLIR: typed scalars (`3 : ui8`, `0.5 : f32`), strings for
    /// bytes, `array<T: ...>` for arrays.
    fn from(lit: crate::ffi::AttrLit) -> Attr {
        use crate::ffi::AttrLit;
        use crate::types::ElementType;
        match lit {
            AttrLit::Bool(b) => Attr::Bool(b),
            AttrLit::Int(v, ty) => Attr::Int(v, ty.mlir_name()),
            // An f32 literal was widened exactly, so narrowing it back is exact.
            AttrLit::Float(v, ElementType::F32) => Attr::F32(v as f32),
            AttrLit::Float(v, _) => Attr::F64(v),
            AttrLit::Bytes(b) => Attr::Str(b),
            AttrLit::IntArray(ty, values) => {
                let mut s = format!("array<{}", ty.mlir_name());
                for (i, v) in values.iter().enumerate() {
                    s.push_str(if i == 0 { ": " } else { ", " });
                    s.push_str(&v.to_string());
                }
                s.push('>');
                Attr::Raw(s)
            }
            AttrLit::Dict(entries) => Attr::Dict(
                entries
                    .into_iter()
                    .map(|(k, v)| (k, Attr::from(v)))
                    .collect(),
            ),
            AttrLit::FloatArray(ty, values) => {
                let mut s = format!("array<{}", ty.mlir_name());
                for (i, &v) in values.iter().enumerate() {
                    s.push_str(if i == 0 { ": " } else { ", " });
                    let _ = if ty == ElementType::F32 {
                        write_f32(&mut s, v as f32)
                    } else {
                        write_f64(&mut s, v)
                    };
                }
                s.push('>');
                Attr::Raw(s)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_print_with_a_dot_and_round_trip() {
        assert_eq!(Attr::F32(1.0e-5).to_string(), "1.0e-5 : f32");
        assert_eq!(Attr::F32(0.1).to_string(), "1.0e-1 : f32");
        assert_eq!(Attr::F64(-2.5).to_string(), "-2.5e0 : f64");
        assert_eq!(Attr::F32(f32::INFINITY).to_string(), "0x7F800000 : f32");
        for v in [0.1f32, 1.0 / 3.0, f32::MIN_POSITIVE, 3.4e38] {
            let mut s = String::new();
            write_f32(&mut s, v).unwrap();
            assert_eq!(s.parse::<f32>().unwrap(), v, "{s}");
        }
    }

    #[test]
    fn strings_escape_every_unprintable_byte() {
        assert_eq!(
            Attr::Str(vec![b'a', 0, b'"', b'\\', 0xff, b'\n']).to_string(),
            r#""a\00\22\5C\FF\0A""#
        );
    }

    #[test]
    fn dictionaries_quote_keys_that_are_not_identifiers() {
        let d = Attr::Dict(vec![
            ("eps".into(), Attr::F32(0.5)),
            ("my key".into(), Attr::Bool(true)),
            ("dims".into(), Attr::DenseI64(vec![1, 2])),
        ]);
        assert_eq!(
            d.to_string(),
            r#"{eps = 5.0e-1 : f32, "my key" = true, dims = array<i64: 1, 2>}"#
        );
    }
}
