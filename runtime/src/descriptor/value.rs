//! Descriptors packed from, and unpacked into, values of a layout known only at run time: what
//! the command line (`customop run --external name=cfg.json`) and Python (`lib.pack`, through
//! the C ABI's `customop_descriptor_pack`) feed. One definition of how each field type takes a
//! value and what it refuses, for every front end; the bytes equal `#[derive(Descriptor)]`'s.
//!
//! Values are JSON ([`serde_json::Value`]): an object of every field and no other; `bool` a
//! JSON bool; integers a JSON integer in the type's range; floats (`f16`, `bf16`, `f32`,
//! `f64`, the eight 8-bit types) a number, or one of the strings `"inf"`, `"+inf"`, `"-inf"`,
//! `"nan"` (JSON has no literal for them), rounded to nearest, ties to even (the 8-bit types
//! as `ml_dtypes` rounds); a finite value that rounds past the type's range (an infinity, or NaN
//! where the type has no infinity), and an infinity where it has none, is refused, in every
//! float type alike. An enum takes its variant's name; an array a list of its length, and a
//! `[u8; N]` or `[i8; N]` also a string of exactly `N` UTF-8 bytes or `{"hex": "..."}` of `N`
//! bytes (an `i8` holds a byte's bits); a nested descriptor an object; `Vec` a list; `String`
//! a string.

use super::layout::{Layout, TypeLayout};
use super::{FORMAT_VERSION, HEADER_SIZE, MAGIC};
use serde_json::Value;

/// A value that does not fit a descriptor's layout: which descriptor, which field, why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PackError {
    descriptor: String,
    field: String,
    message: String,
}

impl PackError {
    /// The descriptor's name.
    pub fn descriptor(&self) -> &str {
        &self.descriptor
    }

    /// The field's path (`tag`, `inner.scale`, `taps[3]`), or empty for the whole value.
    pub fn field(&self) -> &str {
        &self.field
    }
}

impl core::fmt::Display for PackError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for PackError {}

/// Where a value is written: the descriptor's name, for the messages.
struct At<'a> {
    root: &'a str,
}

impl At<'_> {
    /// `descriptor `X`, field `f`: why`.
    fn fail(&self, path: &str, why: impl core::fmt::Display) -> PackError {
        let message = if path.is_empty() {
            format!("descriptor `{}`: {why}", self.root)
        } else {
            format!("descriptor `{}`, field `{path}`: {why}", self.root)
        };
        self.error(path, message)
    }

    fn error(&self, path: &str, message: String) -> PackError {
        PackError {
            descriptor: self.root.to_string(),
            field: path.to_string(),
            message,
        }
    }
}

fn join(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}.{name}")
    }
}

/// `layout`'s bytes (wire format v1) for `value`; the error names the descriptor and the field.
pub fn pack_value(layout: &Layout, value: &Value) -> Result<Vec<u8>, PackError> {
    let at = At { root: &layout.name };
    let mut payload = vec![0u8; layout.fixed_size];
    write_fixed(&at, layout, value, &mut payload, 0, "")?;
    for f in layout.fields.iter().filter(|f| f.offset.is_none()) {
        let v = &value[f.name.as_str()];
        payload.resize(payload.len().next_multiple_of(4), 0);
        let (count, items): (usize, Option<&Vec<Value>>) = match &f.ty {
            TypeLayout::String => {
                let s = v
                    .as_str()
                    .ok_or_else(|| at.fail(&f.name, format!("expected a string, got {v}")))?;
                (s.len(), None)
            }
            _ => {
                let items = v
                    .as_array()
                    .ok_or_else(|| at.fail(&f.name, format!("expected a list, got {v}")))?;
                (items.len(), Some(items))
            }
        };
        let count = u32::try_from(count)
            .map_err(|_| at.fail(&f.name, format!("{count} is more than a u32 length")))?;
        payload.extend_from_slice(&count.to_le_bytes());
        match (&f.ty, items) {
            (TypeLayout::Vec { element }, Some(items)) => {
                let (size, align) = size_align(element);
                payload.resize(payload.len().next_multiple_of(align), 0);
                let start = payload.len();
                payload.resize(start + size * items.len(), 0);
                for (i, x) in items.iter().enumerate() {
                    let path = format!("{}[{i}]", f.name);
                    write(&at, element, x, &mut payload, start + i * size, &path)?;
                }
            }
            _ => payload.extend_from_slice(v.as_str().unwrap_or_default().as_bytes()),
        }
    }
    let len = u32::try_from(payload.len()).map_err(|_| {
        at.fail(
            "",
            format!("{} bytes do not fit a u32 length", payload.len()),
        )
    })?;
    let mut out = Vec::with_capacity(HEADER_SIZE + payload.len());
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(&layout.fingerprint.to_le_bytes());
    out.extend_from_slice(&payload);
    Ok(out)
}

/// The fixed fields of `layout` from the object `value`, at `base` of `buf`.
fn write_fixed(
    at: &At<'_>,
    layout: &Layout,
    value: &Value,
    buf: &mut [u8],
    base: usize,
    path: &str,
) -> Result<(), PackError> {
    let Some(obj) = value.as_object() else {
        let why = format!(
            "expected an object of the fields of `{}`, got {value}",
            layout.name
        );
        return Err(at.fail(path, why));
    };
    let known: Vec<&str> = layout.fields.iter().map(|f| f.name.as_str()).collect();
    if let Some(missing) = known.iter().find(|k| !obj.contains_key(**k)) {
        let field = join(path, missing);
        let m = format!("descriptor `{}` has no value for field `{field}`", at.root);
        return Err(at.error(&field, m));
    }
    let mut unknown: Vec<&String> = obj
        .keys()
        .filter(|k| !known.contains(&k.as_str()))
        .collect();
    unknown.sort();
    if let Some(u) = unknown.first() {
        let field = join(path, u);
        let whose = if path.is_empty() {
            "its fields".to_string()
        } else {
            format!("fields of `{path}`")
        };
        let m = format!(
            "descriptor `{}` has no field `{field}` ({whose}: {})",
            at.root,
            known.join(", ")
        );
        return Err(at.error(&field, m));
    }
    for f in &layout.fields {
        if let Some(offset) = f.offset {
            let v = &obj[f.name.as_str()];
            write(at, &f.ty, v, buf, base + offset, &join(path, &f.name))?;
        }
    }
    Ok(())
}

/// `(size, alignment)` of a fixed-layout type (a primitive's, its `Wire`'s).
fn size_align(t: &TypeLayout) -> (usize, usize) {
    match t {
        TypeLayout::Array { len, element } => {
            let (s, a) = size_align(element);
            (s * len, a)
        }
        TypeLayout::Struct { layout } => (layout.fixed_size, layout.align),
        TypeLayout::Enum { repr, .. } => size_align(&repr_of(repr)),
        t => scalar::size_align(t).unwrap_or((1, 1)),
    }
}

/// An enum's `repr` as its integer field type (`u8` where it names none).
fn repr_of(repr: &str) -> TypeLayout {
    TypeLayout::named(repr).unwrap_or(TypeLayout::U8)
}

/// The bytes a `[u8; N]` or `[i8; N]` is given as: a string (its UTF-8 bytes) or `{"hex"}`.
fn byte_string(v: &Value) -> Option<Result<Vec<u8>, String>> {
    if let Some(s) = v.as_str() {
        return Some(Ok(s.as_bytes().to_vec()));
    }
    let hex = v
        .as_object()
        .filter(|o| o.len() == 1)?
        .get("hex")?
        .as_str()?;
    let pairs = hex.as_bytes().chunks(2);
    let bytes: Option<Vec<u8>> = pairs
        .map(|p| {
            let p = core::str::from_utf8(p).ok().filter(|p| p.len() == 2)?;
            u8::from_str_radix(p, 16).ok()
        })
        .collect();
    Some(bytes.ok_or_else(|| format!("\"{hex}\" is not bytes in hex")))
}

/// Writes `v` as type `t` at `at` of `buf`.
fn write(
    root: &At<'_>,
    t: &TypeLayout,
    v: &Value,
    buf: &mut [u8],
    at: usize,
    path: &str,
) -> Result<(), PackError> {
    let fail = |why: String| root.fail(path, why);
    match t {
        TypeLayout::Enum { name, variants, .. } => {
            let variant = v
                .as_str()
                .and_then(|s| variants.iter().find(|x| x.name == s));
            let Some(variant) = variant else {
                let names: Vec<&str> = variants.iter().map(|x| x.name.as_str()).collect();
                let why = format!(
                    "{v} is not a variant of {name} (its variants: {})",
                    names.join(", ")
                );
                return Err(fail(why));
            };
            let (size, _) = size_align(t);
            let repr = match t {
                TypeLayout::Enum { repr, .. } => repr_of(repr),
                _ => TypeLayout::U8,
            };
            scalar::write(&repr, &variant.value.into(), &mut buf[at..at + size])
                .unwrap_or_else(|| Err(format!("{name}'s repr is not an integer type")))
                .map_err(fail)
        }
        TypeLayout::Array { len, element } => write_array(root, t, *len, element, v, buf, at, path),
        TypeLayout::Struct { layout } => write_fixed(root, layout, v, buf, at, path),
        TypeLayout::Vec { .. } | TypeLayout::String => {
            Err(fail("a tail cannot be nested in the fixed part".into()))
        }
        t => {
            let (size, _) = size_align(t);
            scalar::write(t, v, &mut buf[at..at + size])
                .unwrap_or_else(|| Err(format!("{} is not a field type", t.spelled())))
                .map_err(fail)
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn write_array(
    root: &At<'_>,
    t: &TypeLayout,
    len: usize,
    element: &TypeLayout,
    v: &Value,
    buf: &mut [u8],
    at: usize,
    path: &str,
) -> Result<(), PackError> {
    let fail = |why: String| root.fail(path, why);
    let spelled = t.spelled();
    let byte_like = matches!(element, TypeLayout::U8 | TypeLayout::I8);
    if let Some(bytes) = byte_like.then(|| byte_string(v)).flatten() {
        let bytes = bytes.map_err(fail)?;
        if bytes.len() != len {
            let pad = if bytes.len() < len {
                format!("; pad it to {len} bytes")
            } else {
                String::new()
            };
            let why = format!(
                "a {spelled} takes exactly {len} bytes, got {}{pad}",
                bytes.len()
            );
            return Err(fail(why));
        }
        buf[at..at + len].copy_from_slice(&bytes);
        return Ok(());
    }
    let Some(items) = v.as_array() else {
        return Err(fail(format!("a {spelled} takes a list, got {v}")));
    };
    if items.len() != len {
        let why = format!("expected {len} elements, got {}", items.len());
        return Err(fail(why));
    }
    let (size, _) = size_align(element);
    for (i, x) in items.iter().enumerate() {
        write(
            root,
            element,
            x,
            buf,
            at + i * size,
            &format!("{path}[{i}]"),
        )?;
    }
    Ok(())
}

mod scalar;
mod unpack;
pub use unpack::unpack_value;

#[cfg(test)]
mod tests;
