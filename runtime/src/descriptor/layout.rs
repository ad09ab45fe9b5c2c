//! Descriptor layouts: what the manifest exports and what the fingerprint hashes.

use core::fmt::Write;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The layout of one descriptor.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Layout {
    /// The descriptor's name (`my_lib::Blob`).
    pub name: String,
    /// The canonical layout string, e.g. `my_lib::Blob{gain:f32,tag:[u8;16]}`.
    pub canonical: String,
    /// FNV-1a 64 of `canonical`'s UTF-8 bytes.
    #[serde(serialize_with = "hex_u64", deserialize_with = "u64_of_hex")]
    pub fingerprint: u64,
    /// The payload's alignment.
    pub align: usize,
    /// The length of the payload's fixed part.
    pub fixed_size: usize,
    /// The packed length (header included) when fixed, `None` with tails.
    pub packed_size: Option<usize>,
    /// The fields, in declaration order.
    pub fields: Vec<FieldLayout>,
}

/// One field of a [`Layout`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct FieldLayout {
    /// The field's name.
    pub name: String,
    /// Its offset in the payload's fixed part; `None` for tails (`Vec`, `String`).
    pub offset: Option<usize>,
    /// Its size in the fixed part (0 for tails).
    pub size: usize,
    /// Its type.
    #[serde(rename = "type")]
    pub ty: TypeLayout,
}

/// The type of a descriptor field.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum TypeLayout {
    /// `bool`: one byte, 0 or 1.
    Bool,
    /// `i8`.
    I8,
    /// `i16`.
    I16,
    /// `i32`.
    I32,
    /// `i64`.
    I64,
    /// `u8`.
    U8,
    /// `u16`.
    U16,
    /// `u32`.
    U32,
    /// `u64`.
    U64,
    /// `f16` (IEEE binary16, `half::f16`): two bytes, little-endian bits.
    F16,
    /// `bf16` (bfloat16, `half::bf16`): two bytes, little-endian bits.
    #[serde(rename = "bf16")]
    BF16,
    /// `f32`.
    F32,
    /// `f64`.
    F64,
    /// `f8E4M3FN` ([`F8E4M3FN`](crate::F8E4M3FN)): one byte, its bits. The 8-bit floats are
    /// spelled as their element types' MLIR names, in the canonical string and in JSON.
    #[serde(rename = "f8E4M3FN")]
    F8E4M3FN,
    /// `f8E5M2` ([`F8E5M2`](crate::F8E5M2)): one byte, its bits.
    #[serde(rename = "f8E5M2")]
    F8E5M2,
    /// `f8E4M3` ([`F8E4M3`](crate::F8E4M3)): one byte, its bits.
    #[serde(rename = "f8E4M3")]
    F8E4M3,
    /// `f8E3M4` ([`F8E3M4`](crate::F8E3M4)): one byte, its bits.
    #[serde(rename = "f8E3M4")]
    F8E3M4,
    /// `f8E4M3FNUZ` ([`F8E4M3FNUZ`](crate::F8E4M3FNUZ)): one byte, its bits.
    #[serde(rename = "f8E4M3FNUZ")]
    F8E4M3FNUZ,
    /// `f8E5M2FNUZ` ([`F8E5M2FNUZ`](crate::F8E5M2FNUZ)): one byte, its bits.
    #[serde(rename = "f8E5M2FNUZ")]
    F8E5M2FNUZ,
    /// `f8E4M3B11FNUZ` ([`F8E4M3B11FNUZ`](crate::F8E4M3B11FNUZ)): one byte, its bits.
    #[serde(rename = "f8E4M3B11FNUZ")]
    F8E4M3B11FNUZ,
    /// `f8E8M0FNU` ([`F8E8M0FNU`](crate::F8E8M0FNU)): one byte, its bits.
    #[serde(rename = "f8E8M0FNU")]
    F8E8M0FNU,
    /// `[T; N]`.
    #[non_exhaustive]
    Array {
        /// `N`.
        len: usize,
        /// `T`.
        element: Box<TypeLayout>,
    },
    /// A nested descriptor, stored inline (its payload, without a header).
    #[non_exhaustive]
    Struct {
        /// Its layout.
        layout: Box<Layout>,
    },
    /// A field-less enum stored as its `repr` integer.
    #[non_exhaustive]
    Enum {
        /// The enum's name.
        name: String,
        /// `u8`, `u16`, `u32` or `i32`.
        repr: String,
        /// The variants and their discriminants.
        variants: Vec<EnumVariant>,
    },
    /// `Vec<T>`: a tail of a u32 count then the elements.
    #[non_exhaustive]
    Vec {
        /// `T` (fixed layout).
        element: Box<TypeLayout>,
    },
    /// `String`: a tail of a u32 byte length then UTF-8 bytes.
    String,
}

/// A variant of an enum field.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct EnumVariant {
    /// The variant's name.
    pub name: String,
    /// Its discriminant.
    pub value: i64,
}

fn hex_u64<S: Serializer>(v: &u64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format!("0x{v:016x}"))
}

fn u64_of_hex<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    let text = String::deserialize(d)?;
    u64::from_str_radix(text.trim_start_matches("0x"), 16)
        .map_err(|e| serde::de::Error::custom(format!("fingerprint `{text}`: {e}")))
}

/// FNV-1a, 64 bits: the fingerprint of a canonical layout string.
pub const fn fingerprint_of(canonical: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut i = 0;
    while i < canonical.len() {
        hash ^= canonical[i] as u64;
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        i += 1;
    }
    hash
}

impl TypeLayout {
    /// The primitive type spelled `name` (`u8`, `i32`, `f8E4M3FN`): an enum's `repr`.
    pub fn named(name: &str) -> Option<TypeLayout> {
        serde_json::from_value(serde_json::json!({ "kind": name }))
            .ok()
            .filter(|t: &TypeLayout| t.is_primitive())
    }

    /// Whether this is a primitive (a number or `bool`).
    pub fn is_primitive(&self) -> bool {
        !matches!(
            self,
            TypeLayout::Array { .. }
                | TypeLayout::Struct { .. }
                | TypeLayout::Enum { .. }
                | TypeLayout::Vec { .. }
                | TypeLayout::String
        )
    }

    /// The element type of an 8-bit float field type.
    pub fn float8(&self) -> Option<crate::types::ElementType> {
        use crate::types::ElementType as E;
        Some(match self {
            TypeLayout::F8E4M3FN => E::F8E4M3FN,
            TypeLayout::F8E5M2 => E::F8E5M2,
            TypeLayout::F8E4M3 => E::F8E4M3,
            TypeLayout::F8E3M4 => E::F8E3M4,
            TypeLayout::F8E4M3FNUZ => E::F8E4M3FNUZ,
            TypeLayout::F8E5M2FNUZ => E::F8E5M2FNUZ,
            TypeLayout::F8E4M3B11FNUZ => E::F8E4M3B11FNUZ,
            TypeLayout::F8E8M0FNU => E::F8E8M0FNU,
            _ => return None,
        })
    }

    /// The type as Rust spells it, for messages: `f32`, `[u8; 16]`, a struct's or an enum's
    /// name, `Vec<f32>`.
    pub fn spelled(&self) -> String {
        match self {
            TypeLayout::Array { len, element } => format!("[{}; {len}]", element.spelled()),
            TypeLayout::Struct { layout } => layout.name.clone(),
            TypeLayout::Enum { name, .. } => name.clone(),
            TypeLayout::Vec { element } => format!("Vec<{}>", element.spelled()),
            t => {
                let mut s = String::new();
                t.write_canonical(&mut s);
                s
            }
        }
    }

    /// Appends this type's canonical spelling: `f32`, `f8E4M3FN`, `[u8;16]`, `Name{a:f32}`,
    /// `Mode(u8){Fast=0,Exact=1}`, `Vec<f32>`, `String`.
    pub fn write_canonical(&self, out: &mut String) {
        let prim = match self {
            TypeLayout::Bool => "bool",
            TypeLayout::I8 => "i8",
            TypeLayout::I16 => "i16",
            TypeLayout::I32 => "i32",
            TypeLayout::I64 => "i64",
            TypeLayout::U8 => "u8",
            TypeLayout::U16 => "u16",
            TypeLayout::U32 => "u32",
            TypeLayout::U64 => "u64",
            TypeLayout::F16 => "f16",
            TypeLayout::BF16 => "bf16",
            TypeLayout::F32 => "f32",
            TypeLayout::F64 => "f64",
            TypeLayout::F8E4M3FN => "f8E4M3FN",
            TypeLayout::F8E5M2 => "f8E5M2",
            TypeLayout::F8E4M3 => "f8E4M3",
            TypeLayout::F8E3M4 => "f8E3M4",
            TypeLayout::F8E4M3FNUZ => "f8E4M3FNUZ",
            TypeLayout::F8E5M2FNUZ => "f8E5M2FNUZ",
            TypeLayout::F8E4M3B11FNUZ => "f8E4M3B11FNUZ",
            TypeLayout::F8E8M0FNU => "f8E8M0FNU",
            TypeLayout::String => "String",
            TypeLayout::Array { len, element } => {
                out.push('[');
                element.write_canonical(out);
                let _ = write!(out, ";{len}]");
                return;
            }
            TypeLayout::Struct { layout } => {
                out.push_str(&layout.canonical);
                return;
            }
            TypeLayout::Enum {
                name,
                repr,
                variants,
            } => {
                let _ = write!(out, "{name}({repr}){{");
                for (i, v) in variants.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    let _ = write!(out, "{}={}", v.name, v.value);
                }
                out.push('}');
                return;
            }
            TypeLayout::Vec { element } => {
                out.push_str("Vec<");
                element.write_canonical(out);
                out.push('>');
                return;
            }
        };
        out.push_str(prim);
    }
}

impl Layout {
    /// Builds a layout from its fields, computing the canonical string and fingerprint.
    #[doc(hidden)]
    pub fn build(
        name: &str,
        align: usize,
        fixed_size: usize,
        packed_size: Option<usize>,
        fields: Vec<FieldLayout>,
    ) -> Layout {
        let mut canonical = format!("{name}{{");
        for (i, f) in fields.iter().enumerate() {
            if i > 0 {
                canonical.push(',');
            }
            canonical.push_str(&f.name);
            canonical.push(':');
            f.ty.write_canonical(&mut canonical);
        }
        canonical.push('}');
        Layout {
            name: name.to_string(),
            fingerprint: fingerprint_of(canonical.as_bytes()),
            canonical,
            align,
            fixed_size,
            packed_size,
            fields,
        }
    }

    /// The layout as JSON (the manifest's form; `fingerprint` as a `0x...` string).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// A layout from the manifest's JSON form, checked: its canonical string is the one its
    /// fields spell, and its fingerprint that string's (a layout edited by hand, or of another
    /// wire format, is refused rather than packed for).
    pub fn from_json(value: &serde_json::Value) -> Result<Layout, String> {
        let got: Layout = serde_json::from_value(value.clone())
            .map_err(|e| format!("not a descriptor layout ({e}): {value}"))?;
        let again = Layout::build(
            &got.name,
            got.align,
            got.fixed_size,
            got.packed_size,
            got.fields.clone(),
        );
        if again.canonical != got.canonical || again.fingerprint != got.fingerprint {
            return Err(format!(
                "descriptor `{}`: the layout's canonical string `{}` and fingerprint                  0x{:016x} are not those of its fields (`{}`, 0x{:016x})",
                got.name, got.canonical, got.fingerprint, again.canonical, again.fingerprint
            ));
        }
        Ok(got)
    }
}

// --- Descriptor names by fingerprint ------------------------------------------------------

static KNOWN: std::sync::Mutex<Vec<(u64, &'static str)>> = std::sync::Mutex::new(Vec::new());

/// Records that the descriptor `name` has `fingerprint` (done by the derive's
/// `layout()` through `records::descriptor_layout`).
pub(crate) fn record(fingerprint: u64, name: &'static str) {
    if let Ok(mut known) = KNOWN.lock()
        && !known.iter().any(|(f, _)| *f == fingerprint)
    {
        known.push((fingerprint, name));
    }
}

/// The name of the descriptor with `fingerprint`, if this process has seen its layout.
pub(crate) fn name_of(fingerprint: u64) -> Option<&'static str> {
    KNOWN
        .lock()
        .ok()?
        .iter()
        .find(|(f, _)| *f == fingerprint)
        .map(|(_, n)| *n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a_matches_published_vectors() {
        // Test vectors of the FNV-1a 64 reference (Fowler, Noll, Vo).
        assert_eq!(fingerprint_of(b""), 0xcbf29ce484222325);
        assert_eq!(fingerprint_of(b"a"), 0xaf63dc4c8601ec8c);
        assert_eq!(fingerprint_of(b"foobar"), 0x85944171f73967e8);
    }

    #[test]
    fn canonical_strings_spell_every_kind() {
        let l = Layout::build(
            "Cfg",
            4,
            8,
            None,
            vec![
                FieldLayout {
                    name: "m".into(),
                    offset: Some(0),
                    size: 1,
                    ty: TypeLayout::Enum {
                        name: "Mode".into(),
                        repr: "u8".into(),
                        variants: vec![
                            EnumVariant {
                                name: "Fast".into(),
                                value: 0,
                            },
                            EnumVariant {
                                name: "Exact".into(),
                                value: 1,
                            },
                        ],
                    },
                },
                FieldLayout {
                    name: "a".into(),
                    offset: Some(4),
                    size: 4,
                    ty: TypeLayout::Array {
                        len: 2,
                        element: Box::new(TypeLayout::U16),
                    },
                },
                FieldLayout {
                    name: "v".into(),
                    offset: None,
                    size: 0,
                    ty: TypeLayout::Vec {
                        element: Box::new(TypeLayout::F32),
                    },
                },
                FieldLayout {
                    name: "s".into(),
                    offset: None,
                    size: 0,
                    ty: TypeLayout::String,
                },
            ],
        );
        assert_eq!(
            l.canonical,
            "Cfg{m:Mode(u8){Fast=0,Exact=1},a:[u16;2],v:Vec<f32>,s:String}"
        );
        assert_eq!(l.fingerprint, fingerprint_of(l.canonical.as_bytes()));
    }

    #[test]
    fn float8_types_are_spelled_as_their_element_types() {
        use crate::types::ElementType as E;
        for (t, e) in [
            (TypeLayout::F8E4M3FN, E::F8E4M3FN),
            (TypeLayout::F8E5M2, E::F8E5M2),
            (TypeLayout::F8E4M3, E::F8E4M3),
            (TypeLayout::F8E3M4, E::F8E3M4),
            (TypeLayout::F8E4M3FNUZ, E::F8E4M3FNUZ),
            (TypeLayout::F8E5M2FNUZ, E::F8E5M2FNUZ),
            (TypeLayout::F8E4M3B11FNUZ, E::F8E4M3B11FNUZ),
            (TypeLayout::F8E8M0FNU, E::F8E8M0FNU),
        ] {
            let mut s = String::new();
            t.write_canonical(&mut s);
            assert_eq!(s, e.mlir_name());
            assert_eq!(
                serde_json::to_value(&t).unwrap(),
                serde_json::json!({ "kind": e.mlir_name() })
            );
        }
    }

    #[test]
    fn half_floats_are_spelled_as_rust_spells_them() {
        for (t, name) in [(TypeLayout::F16, "f16"), (TypeLayout::BF16, "bf16")] {
            let mut s = String::new();
            t.write_canonical(&mut s);
            assert_eq!(s, name);
            assert_eq!(
                serde_json::to_value(&t).unwrap(),
                serde_json::json!({ "kind": name })
            );
        }
    }
}
