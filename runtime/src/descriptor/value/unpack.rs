//! Packed descriptor bytes into a value of a layout known at run time, every byte checked as
//! the derive's `unpack` does.

use super::{repr_of, scalar, size_align};
use crate::descriptor::layout::{Layout, TypeLayout};
use crate::descriptor::{DescriptorError, ErrorKind, HEADER_SIZE, check_header};
use serde_json::{Map, Value, json};

/// The value of packed descriptor `bytes` of `layout`, every byte validated as
/// [`Descriptor::unpack`](crate::descriptor::Descriptor::unpack) does: header, fingerprint, bools, enums,
/// zero padding, tails, no byte left over.
pub fn unpack_value(layout: &'static Layout, bytes: &[u8]) -> Result<Value, DescriptorError> {
    let name = layout.name.as_str();
    let payload = check_header(bytes, name, layout.fingerprint, layout.fixed_size)?;
    let err = |kind| DescriptorError::new(name, kind);
    let fixed = &payload[..layout.fixed_size];
    let mut out = read_fixed(layout, fixed).map_err(|e| e.in_descriptor(name))?;
    let mut at = layout.fixed_size;
    for f in layout.fields.iter().filter(|f| f.offset.is_none()) {
        let v = match &f.ty {
            TypeLayout::String => {
                let (s, next) = crate::descriptor::wire::read_string_tail(payload, at, &f.name)
                    .map_err(|e| e.in_descriptor(name))?;
                at = next;
                json!(s)
            }
            TypeLayout::Vec { element } => {
                let (size, align) = size_align(element);
                let (start, n, next) = crate::descriptor::wire::tail_span(payload, at, size, align)
                    .map_err(|e| e.in_field(&f.name).in_descriptor(name))?;
                let mut items = Vec::with_capacity(n);
                for i in 0..n {
                    let mut sink = vec![false; size];
                    let at = start + i * size;
                    let v = read(element, &payload[at..at + size], &mut sink)
                        .map_err(|e| e.in_field(&format!("{}[{i}]", f.name)))
                        .map_err(|e| e.in_descriptor(name))?;
                    items.push(v);
                }
                at = next;
                Value::Array(items)
            }
            _ => continue,
        };
        if let Value::Object(o) = &mut out {
            o.insert(f.name.clone(), v);
        }
    }
    if at != payload.len() {
        return Err(err(ErrorKind::TooLong {
            used: HEADER_SIZE + at,
            got: bytes.len(),
        }));
    }
    Ok(out)
}

/// The fixed fields of `layout` in `bytes` (its fixed part), and its padding checked zero (an
/// offset in the message counts from the struct's start, as the derive's does).
fn read_fixed(layout: &'static Layout, bytes: &[u8]) -> Result<Value, DescriptorError> {
    let mut out = Map::new();
    let mut used = vec![false; bytes.len()];
    for f in &layout.fields {
        let Some(at) = f.offset else { continue };
        let (size, _) = size_align(&f.ty);
        let v = read(&f.ty, &bytes[at..at + size], &mut used[at..at + size])
            .map_err(|e| e.in_field(&f.name))?;
        out.insert(f.name.clone(), v);
    }
    if let Some(offset) = (0..bytes.len()).find(|&i| !used[i] && bytes[i] != 0) {
        return Err(DescriptorError::field_error(ErrorKind::NonzeroPadding {
            offset,
        }));
    }
    Ok(Value::Object(out))
}

/// The value of type `t` in `bytes` (exactly its size), marking the bytes it uses.
fn read(t: &'static TypeLayout, bytes: &[u8], used: &mut [bool]) -> Result<Value, DescriptorError> {
    let value = match t {
        TypeLayout::Array { len, element } => {
            let (size, _) = size_align(element);
            let mut items = Vec::with_capacity(*len);
            for i in 0..*len {
                let span = i * size..(i + 1) * size;
                let v = read(element, &bytes[span.clone()], &mut used[span])
                    .map_err(|e| e.in_field(&format!("[{i}]")))?;
                items.push(v);
            }
            return Ok(Value::Array(items));
        }
        TypeLayout::Struct { layout } => {
            used.fill(true);
            return read_fixed(layout, bytes);
        }
        TypeLayout::Enum {
            name,
            repr,
            variants,
        } => {
            // (`repr_of` is an integer type, which `scalar::read` reads; an enum's reprs fit an
            // i64: u8, u16, u32, i32.)
            let value = scalar::read(&repr_of(repr), bytes)
                .transpose()?
                .and_then(|v| v.as_i64())
                .unwrap_or(i64::MIN);
            let Some(v) = variants.iter().find(|v| v.value == value) else {
                return Err(DescriptorError::field_error(ErrorKind::InvalidEnum {
                    name: name.as_str(),
                    value,
                }));
            };
            json!(v.name)
        }
        // A tail never stands in the fixed part (a layout's fixed fields are of fixed types);
        // were one there, its bytes would be refused, not read as anything.
        t => scalar::read(t, bytes).unwrap_or_else(|| {
            Err(DescriptorError::field_error(ErrorKind::InvalidEnum {
                name: "a tail in the fixed part",
                value: 0,
            }))
        })?,
    };
    used.fill(true);
    Ok(value)
}
