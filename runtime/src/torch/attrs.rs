//! Attribute values a native call reads beyond scalars: arrays (from torch 2.10 on a list of
//! `StableIValue`s, before that an int64 or float64 tensor), and strings (from 2.10 on a
//! `StringHandle`, before that a uint8 tensor, read as a tensor by the kernel).

use super::api::Api;
use super::values::{Attr, float_bytes, int_bytes, range_text};
use super::values::{Failure, torch_failed};
use crate::schema::{AttrType, ParamKind};
use crate::types::ElementType;
use core::ffi::c_void;

/// The items of a list argument (torch 2.10 and later): each a `StableIValue`, an integer's
/// bits or a double's.
pub(super) fn list_items(api: &Api, list: *mut c_void) -> Result<Vec<u64>, Failure> {
    let (Some(d), false) = (api.direct.as_ref(), list.is_null()) else {
        return Err(Failure::Schema("a list argument is missing".to_string()));
    };
    let mut n = 0usize;
    // SAFETY: a live `StableListHandle` the kernel owns, and an out-pointer to a local.
    if unsafe { (d.list_size)(list, &mut n) } != 0 {
        return Err(torch_failed("torch_list_size"));
    }
    let mut items = Vec::with_capacity(n);
    for k in 0..n {
        let mut v = 0u64;
        // SAFETY: as above; `k` is below the list's size.
        if unsafe { (d.list_get_item)(list, k, &mut v) } != 0 {
            return Err(torch_failed("torch_list_get_item"));
        }
        items.push(v);
    }
    Ok(items)
}

/// The bytes of a string argument (torch 2.10 and later), borrowed from its handle, which the
/// kernel owns until the call ends.
pub(super) fn string_bytes<'a>(api: &Api, s: *mut c_void) -> Result<&'a [u8], Failure> {
    let (Some(d), false) = (api.direct.as_ref(), s.is_null()) else {
        return Err(Failure::Schema("a string argument is missing".to_string()));
    };
    let (mut n, mut data) = (0usize, core::ptr::null::<core::ffi::c_char>());
    // SAFETY: a live `StringHandle` the kernel owns, and an out-pointer to a local.
    if unsafe { (d.string_length)(s, &mut n) } != 0 {
        return Err(torch_failed("torch_string_length"));
    }
    // SAFETY: as above.
    if unsafe { (d.string_c_str)(s, &mut data) } != 0 {
        return Err(torch_failed("torch_string_c_str"));
    }
    if data.is_null() {
        return Ok(&[]);
    }
    // SAFETY: `n` bytes at `data`, owned by the handle, which `Owned` deletes only after the
    // call (the borrow does not outlive it: the caller keeps `Owned` alive).
    Ok(unsafe { core::slice::from_raw_parts(data.cast::<u8>(), n) })
}

/// `text` (UTF-8) as one byte per character, if every character is below 256.
pub(super) fn latin1_bytes(text: &[u8]) -> Option<Vec<u8>> {
    core::str::from_utf8(text)
        .ok()?
        .chars()
        .map(|c| u8::try_from(u32::from(c)).ok())
        .collect()
}

/// The elements of an array attribute carried as a tensor (torch 2.9): int64 or float64, as
/// their bits; zeros for a meta tensor (only the count matters there). An error is the end of
/// the attribute's message.
pub(super) fn tensor_items(
    element: Option<ElementType>,
    data: *mut c_void,
    dims: &[i64],
    dtype: ElementType,
    meta: bool,
) -> Result<Vec<u64>, String> {
    let n = usize::try_from(dims.iter().product::<i64>()).unwrap_or(0);
    match element {
        _ if meta => Ok(vec![0; n]),
        Some(ElementType::I64) if !dtype.is_float() => Ok((0..n)
            // SAFETY: a contiguous int64 tensor of `n` elements (the caller's view), read
            // unaligned (a caller may pass any view).
            .map(|k| unsafe { data.cast::<i64>().add(k).read_unaligned() } as u64)
            .collect()),
        Some(ElementType::F64) if dtype.is_float() => Ok((0..n)
            // SAFETY: a contiguous float64 tensor of `n` elements, read unaligned.
            .map(|k| unsafe { data.cast::<f64>().add(k).read_unaligned() }.to_bits())
            .collect()),
        _ => Err(
            "arrives as a tensor of another type than the native convention's (int64 or \
                  float64)"
                .to_string(),
        ),
    }
}

/// An array attribute of `dtype` from its elements' bits (an integer's, or a double's), packed
/// in `u64` cells so that the start is aligned for any element type.
pub(super) fn array_attr(dtype: ElementType, items: &[u64]) -> Result<Attr, String> {
    let mut bytes: Vec<u8> = Vec::with_capacity(items.len() * dtype.byte_size());
    for &raw in items {
        let cell = if dtype.is_float() {
            float_bytes(dtype, f64::from_bits(raw))
                .ok_or_else(|| format!("is {dtype}[], which no call carries"))?
        } else {
            let x = raw as i64;
            int_bytes(dtype, x)
                .ok_or_else(|| format!("is {dtype}[]: {x} is out of range {}", range_text(dtype)))?
        };
        bytes.extend_from_slice(&cell[..dtype.byte_size()]);
    }
    let mut cells = vec![0u64; bytes.len().div_ceil(8)];
    for (c, chunk) in cells.iter_mut().zip(bytes.chunks(8)) {
        let mut b = [0u8; 8];
        b[..chunk.len()].copy_from_slice(chunk);
        *c = u64::from_ne_bytes(b);
    }
    Ok(Attr::Array(dtype, cells, items.len()))
}

/// Whether a parameter arrives on the stack as a tensor: tensors and externals, and, where
/// torch passes no strings or lists to a boxed kernel (2.9: `direct` is false), string,
/// descriptor and array attributes (as 1-D tensors: bytes, int64 or float64; see
/// `customop.torch`).
pub(crate) fn carried_as_tensor(kind: &ParamKind, direct: bool) -> bool {
    match kind {
        ParamKind::Tensor { .. } | ParamKind::External { .. } => true,
        ParamKind::Attribute { ty } => {
            !direct && !matches!(ty, AttrType::Bool | AttrType::Scalar { .. })
        }
        ParamKind::Attributes => false,
    }
}
