//! Packed sub-byte tensors in torch: torch has no dtype with XLA's packing (its `int4` and
//! the like hold one element a byte and have no kernels), so a tensor of `i4`, `ui4`, `i2`,
//! `ui2` or `f4E2M1FN` crosses as its packed bytes: `uint8` (or `float4_e2m1fn_x2` pairs for
//! `f4E2M1FN`), `8 / bits` elements a byte along the last dimension, low bits first, XLA's
//! order. Kernels see the logical shape; torch holds the packed one.

use super::values::Failure;
use crate::schema::{OpSchema, TensorDtype};
use crate::types::ElementType;

/// Whether torch holds tensors of `e` as `uint8` bytes: `u8` itself and the packed sub-byte
/// types (`f4E2M1FN` too, where torch has no `float4_e2m1fn_x2` or is given bytes).
pub(crate) fn held_as_bytes(e: crate::ElementType) -> bool {
    e == crate::ElementType::U8 || e.is_packed()
}

/// Reads a tensor operand declared `dtype`, which torch gave as `element` with `dims`: a
/// `uint8` tensor is the packed bytes of the one type `dtype` allows that torch holds as bytes
/// (more than one is refused, `torch_refusal`); a packed operand's `dims` become its logical
/// shape.
pub(super) fn operand(
    schema: &OpSchema,
    param: &str,
    dtype: &TensorDtype,
    element: &mut Option<ElementType>,
    dims: &mut Vec<i64>,
) -> Result<(), Failure> {
    if *element == Some(ElementType::U8) {
        let mut held = match dtype {
            TensorDtype::Fixed(e) => core::slice::from_ref(e),
            TensorDtype::Var { allowed, .. } => allowed.as_slice(),
        }
        .iter()
        .filter(|e| held_as_bytes(**e));
        if let (Some(e), None) = (held.next(), held.next()) {
            *element = Some(*e);
        }
    }
    if let Some(e) = element.filter(|e| e.is_packed()) {
        *dims = logical_shape(e, dims).ok_or_else(|| {
            Failure::Schema(format!(
                "{}: operand `{param}` holds packed {e} elements, {} a byte along its last \
                 dimension, so it cannot be a scalar",
                schema.name,
                8 / e.bits()
            ))
        })?;
    }
    Ok(())
}

/// The shape torch holds output `output` of `element`s and logical shape `shape` in; refused
/// by name where torch cannot hold it.
pub(super) fn stored_shape(
    schema: &OpSchema,
    output: &str,
    element: ElementType,
    shape: &[i64],
) -> Result<Vec<i64>, Failure> {
    torch_shape(element, shape).ok_or_else(|| {
        Failure::Schema(format!(
            "{}: output `{output}` is {shape:?} packed {element} elements: torch holds them {} a \
             byte along the last dimension, which must be a multiple of {}",
            schema.name,
            8 / element.bits(),
            8 / element.bits()
        ))
    })
}

/// The logical shape of a tensor of packed sub-byte elements `e` that torch holds as `dims`.
/// `None` for a scalar, whose bytes have no last dimension to hold them.
fn logical_shape(e: ElementType, dims: &[i64]) -> Option<Vec<i64>> {
    let per = i64::from(8 / e.bits());
    let (last, lead) = dims.split_last()?;
    let mut out = lead.to_vec();
    out.push(last.checked_mul(per)?);
    Some(out)
}

/// The shape torch holds a tensor of element `e` and logical shape `dims` in: `dims` itself,
/// or for a packed sub-byte type the last dimension divided by the elements a byte holds
/// (`None` when it is not a multiple, or the tensor is a scalar).
fn torch_shape(e: ElementType, dims: &[i64]) -> Option<Vec<i64>> {
    if !e.is_packed() {
        return Some(dims.to_vec());
    }
    let per = i64::from(8 / e.bits());
    let (last, lead) = dims.split_last()?;
    if last % per != 0 {
        return None;
    }
    let mut out = lead.to_vec();
    out.push(last / per);
    Some(out)
}
