//! What a native call holds: its tensors as the handler sees them, the tensor handles it owns,
//! attribute values as the handler receives them, and a shape rule's values.

use super::api::{Api, Tensor};
use crate::plan::ShapeEnv;
use crate::types::ElementType;
use core::ffi::c_void;
use core::ptr::null_mut;

/// A tensor as the handler sees it.
pub(super) struct View {
    /// The (contiguous) tensor whose memory the handler reads.
    pub(super) handle: Tensor,
    /// The argument itself (a `&mut` external's new bytes are copied back into it).
    pub(super) original: Tensor,
    pub(super) dtype: i32,
    pub(super) element: Option<ElementType>,
    pub(super) dims: Vec<i64>,
    pub(super) data: *mut c_void,
}

impl View {
    pub(super) fn nbytes(&self) -> usize {
        let n: i64 = self.dims.iter().product();
        usize::try_from(n).unwrap_or(0) * self.element.map_or(0, ElementType::byte_size)
    }
}

/// Handles the kernel owns, deleted on drop: tensors, and (torch 2.10 and later) the strings
/// and lists torch hands a kernel.
pub(super) struct Owned<'a> {
    pub(super) api: &'a Api,
    pub(super) handles: Vec<Tensor>,
    pub(super) strings: Vec<*mut c_void>,
    pub(super) lists: Vec<*mut c_void>,
}

impl Owned<'_> {
    pub(super) fn keep(&mut self, t: Tensor) -> Tensor {
        self.handles.push(t);
        t
    }
}

impl Drop for Owned<'_> {
    fn drop(&mut self) {
        for h in self.handles.drain(..) {
            if !h.is_null() {
                // SAFETY: each handle is one this kernel owns (an argument torch handed over,
                // or a tensor it made), deleted once: `drain` empties the list.
                unsafe { (self.api.delete_tensor_object)(h) };
            }
        }
        let Some(direct) = &self.api.direct else {
            return;
        };
        for h in self.strings.drain(..) {
            if !h.is_null() {
                // SAFETY: a `StringHandle` torch handed over with the call (the kernel owns
                // it), deleted once.
                unsafe { (direct.delete_string)(h) };
            }
        }
        for h in self.lists.drain(..) {
            if !h.is_null() {
                // SAFETY: a `StableListHandle` torch handed over (owned), deleted once.
                unsafe { (direct.delete_list)(h) };
            }
        }
    }
}

/// An attribute's value as the handler receives it.
pub(super) enum Attr {
    Scalar(ElementType, [u8; 8]),
    /// The elements, packed; `u64` cells keep the start aligned for any element type.
    Array(ElementType, Vec<u64>, usize),
    Bytes(*const u8, usize),
}

pub(super) struct Env<'a> {
    pub(super) operands: &'a [View],
    pub(super) ints: &'a [Option<i64>],
    pub(super) lens: &'a [Option<i64>],
}

impl ShapeEnv for Env<'_> {
    fn operand_dims(&self, operand: usize) -> Option<&[i64]> {
        self.operands.get(operand).map(|v| v.dims.as_slice())
    }
    fn attr_int(&self, slot: usize, _: &str) -> Option<i64> {
        self.ints.get(slot).copied().flatten()
    }
    fn attr_len(&self, slot: usize, _: &str) -> Option<i64> {
        self.lens.get(slot).copied().flatten()
    }
}

/// `v` as a scalar of integer type `t`, if it fits.
pub(super) fn int_bytes(t: ElementType, v: i64) -> Option<[u8; 8]> {
    let mut b = [0u8; 8];
    macro_rules! put {
        ($ty:ty) => {{
            let x = <$ty>::try_from(v).ok()?.to_ne_bytes();
            b[..x.len()].copy_from_slice(&x);
        }};
    }
    match t {
        ElementType::I8 => put!(i8),
        ElementType::I16 => put!(i16),
        ElementType::I32 => put!(i32),
        ElementType::I64 => put!(i64),
        ElementType::U8 => put!(u8),
        ElementType::U16 => put!(u16),
        ElementType::U32 => put!(u32),
        ElementType::U64 => put!(u64),
        _ => return None,
    }
    Some(b)
}

pub(super) fn float_bytes(t: ElementType, v: f64) -> Option<[u8; 8]> {
    let mut b = [0u8; 8];
    match t {
        #[allow(clippy::cast_possible_truncation)]
        ElementType::F32 => b[..4].copy_from_slice(&(v as f32).to_ne_bytes()),
        ElementType::F64 => b.copy_from_slice(&v.to_ne_bytes()),
        _ => return None,
    }
    Some(b)
}

pub(super) fn range_text(t: ElementType) -> String {
    match t {
        ElementType::I8 => format!("{}..{}", i8::MIN, i8::MAX),
        ElementType::I16 => format!("{}..{}", i16::MIN, i16::MAX),
        ElementType::I32 => format!("{}..{}", i32::MIN, i32::MAX),
        ElementType::U8 => format!("0..{}", u8::MAX),
        ElementType::U16 => format!("0..{}", u16::MAX),
        ElementType::U32 => format!("0..{}", u32::MAX),
        ElementType::U64 => format!("0..{}", u64::MAX),
        _ => format!("{}..{}", i64::MIN, i64::MAX),
    }
}

pub(super) fn contiguous_strides(dims: &[i64]) -> Vec<i64> {
    let mut strides = vec![1i64; dims.len()];
    for i in (0..dims.len().saturating_sub(1)).rev() {
        strides[i] = strides[i + 1].saturating_mul(dims[i + 1].max(1));
    }
    strides
}

/// The next tensor argument the kernel took (the first `n_taken` handles of `owned`), or null
/// when there is none left.
pub(super) fn next_handle(owned: &Owned<'_>, next: &mut usize, n_taken: usize) -> Tensor {
    let h = if *next < n_taken {
        owned.handles.get(*next).copied().unwrap_or(null_mut())
    } else {
        null_mut()
    };
    *next += 1;
    h
}

/// Why a call failed: the torch exception's message. The prefix lets `customop.torch` raise
/// it as `KernelError` (with the code) or `SchemaError`.
#[derive(Debug)]
pub(crate) enum Failure {
    /// The handler refused, or the kernel failed: XLA's error code and the handler's message.
    Kernel(i32, String),
    /// The call does not fit the op's schema before the handler runs (an attribute out of its
    /// type's range, an output shape with no value).
    Schema(String),
}

impl Failure {
    pub(crate) fn text(&self) -> String {
        match self {
            Failure::Kernel(code, m) => format!("customop[kernel:{code}] {m}"),
            Failure::Schema(m) => format!("customop[schema] {m}"),
        }
    }
}

pub(super) fn torch_failed(call: &str) -> Failure {
    Failure::Kernel(13, format!("torch's `{call}` failed"))
}
