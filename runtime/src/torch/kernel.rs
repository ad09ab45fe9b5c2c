//! One call of a native kernel: the torch dispatcher's boxed stack in, the op's handler run on
//! a call frame over the tensors' memory (the checks of an XLA call, the same refusal codes),
//! new tensors out.
//!
//! Ownership, as torch 2.9's boxed wrapper defines it: every tensor argument arrives as a new
//! `AtenTensorHandle` the kernel owns and deletes; every tensor result is a new handle the
//! wrapper takes over. `Owned` deletes what the kernel holds on every path.

use super::api::{Api, Tensor};
use super::attrs::{
    array_attr, carried_as_tensor, latin1_bytes, list_items, string_bytes, tensor_items,
};
use super::packed;
use super::torch_refusal;
use super::values::{
    Attr, Env, Failure, Owned, View, contiguous_strides, float_bytes, int_bytes, next_handle,
    range_text, torch_failed,
};
use crate::ffi::abi::{
    XLA_FFI_ATTR_TYPE_ARRAY, XLA_FFI_ATTR_TYPE_SCALAR, XLA_FFI_ATTR_TYPE_STRING,
};
use crate::ffi::eager::{CallAttr, CallTensor, call_handler};
use crate::plan::{OutputShape, ParamSlot, Plan, ResultDtype, ResultPlan};
use crate::registry::HandlerFn;
use crate::schema::{AttrType, OpSchema, ParamKind};
use crate::types::ElementType;
use core::ffi::c_void;
use core::ptr::null_mut;
use customop_shape::EvalError;

/// An op registered with torch: what its kernels need.
#[derive(Debug)]
pub(crate) struct NativeOp {
    pub schema: &'static OpSchema,
    pub plan: Plan,
    pub handler: HandlerFn,
    pub api: &'static Api,
}

macro_rules! torch {
    ($api:expr, $f:ident($($a:expr),*)) => {
        // SAFETY: the arguments are live handles this kernel holds and out-pointers to
        // locals, as the shim function's declaration says.
        if unsafe { ($api.$f)($($a),*) } != 0 {
            return Err(torch_failed(concat!("aoti_torch_", stringify!($f))));
        }
    };
}

/// Reads tensor `h` (making a contiguous copy on the CPU when it is not contiguous).
pub(super) fn view(
    api: &Api,
    owned: &mut Owned<'_>,
    h: Tensor,
    meta: bool,
) -> Result<View, Failure> {
    if h.is_null() {
        return Err(Failure::Schema("a tensor argument is missing".to_string()));
    }
    let (mut dtype, mut dim, mut sizes, mut contiguous) = (0i32, 0i64, null_mut(), false);
    torch!(api, get_dtype(h, &mut dtype));
    torch!(api, get_dim(h, &mut dim));
    torch!(api, get_sizes(h, &mut sizes));
    torch!(api, is_contiguous(h, &mut contiguous));
    let rank = usize::try_from(dim).map_err(|_| torch_failed("aoti_torch_get_dim"))?;
    let dims = if rank == 0 || sizes.is_null() {
        Vec::new()
    } else {
        // SAFETY: `get_sizes` returns the tensor's `dim` sizes, borrowed while `h` lives.
        unsafe { core::slice::from_raw_parts(sizes, rank) }.to_vec()
    };
    let mut handle = h;
    if !contiguous && !meta {
        let strides = contiguous_strides(&dims);
        let mut copy = null_mut();
        torch!(
            api,
            empty_strided(
                dim,
                dims.as_ptr(),
                strides.as_ptr(),
                dtype,
                api.cpu,
                0,
                &mut copy
            )
        );
        handle = owned.keep(copy);
        torch!(api, copy_(handle, h, 0));
    }
    let mut data = null_mut();
    if !meta {
        torch!(api, get_data_ptr(handle, &mut data));
    }
    Ok(View {
        handle,
        original: h,
        dtype,
        element: api.element_of(dtype),
        dims,
        data,
    })
}

/// Runs one call. `stack` holds `max(n_args, n_outs)` entries.
///
/// # Safety
/// `stack` is torch's boxed stack for this op's schema (as `NativeOp` was registered for):
/// `n_args` arguments, room for `n_outs` results.
pub(crate) unsafe fn run(
    op: &NativeOp,
    meta: bool,
    stack: *mut u64,
    n_args: u64,
    n_outs: u64,
) -> Result<(), Failure> {
    let api = op.api;
    let schema = op.schema;
    let params = &schema.params;
    let (Ok(n_args), Ok(n_outs)) = (usize::try_from(n_args), usize::try_from(n_outs)) else {
        return Err(Failure::Schema(format!("{}: bad stack", schema.name)));
    };
    if let Some(why) = torch_refusal(schema) {
        return Err(Failure::Schema(why));
    }
    if n_args != params.len() || stack.is_null() {
        return Err(Failure::Schema(format!(
            "{}: called with {n_args} arguments; its schema has {}",
            schema.name,
            params.len()
        )));
    }
    // SAFETY: torch's boxed wrapper passes a stack of max(n_args, n_outs) entries (the
    // function's contract).
    let stack = unsafe { core::slice::from_raw_parts_mut(stack, n_args.max(n_outs)) };
    let plan = &op.plan;
    let mut owned = Owned {
        api,
        handles: Vec::with_capacity(n_args + schema.results.len() + 2),
        strings: Vec::new(),
        lists: Vec::new(),
    };
    let direct = api.direct.as_ref();
    // torch's stack is in the torch schema's order: tensors and externals (in declaration
    // order), then every attribute (after `*`).
    let n_operands = plan.operand_params.len();
    let at = |i: usize| match plan.params[i] {
        ParamSlot::Operand(o) => o,
        ParamSlot::Attribute(a) => n_operands + a,
        // Refused above (`torch_refusal`).
        ParamSlot::Attributes => 0,
    };
    // Take every owned argument first: each is deleted whatever happens next.
    // They are the first `n_taken` handles of `owned` (copies made later come after them).
    let mut n_taken = 0usize;
    for (i, p) in params.iter().enumerate() {
        if carried_as_tensor(&p.kind, direct.is_some()) {
            owned.keep(stack[at(i)] as usize as Tensor);
            n_taken += 1;
        } else if direct.is_some() {
            match &p.kind {
                ParamKind::Attribute {
                    ty: AttrType::Str | AttrType::Descriptor { .. },
                } => owned.strings.push(stack[at(i)] as usize as *mut c_void),
                ParamKind::Attribute {
                    ty: AttrType::Array { .. },
                } => owned.lists.push(stack[at(i)] as usize as *mut c_void),
                _ => {}
            }
        }
    }
    // Bytes decoded from a descriptor attribute's string, alive for the call.
    let mut decoded: Vec<Vec<u8>> = Vec::new();
    let returned_count = plan
        .results
        .iter()
        .filter(|r| !matches!(r, ResultPlan::Updated { .. }))
        .count();
    if returned_count != n_outs {
        return Err(Failure::Schema(format!(
            "{}: torch expects {n_outs} results; the op returns {returned_count}",
            schema.name
        )));
    }
    let n_attrs = plan
        .params
        .iter()
        .filter(|s| matches!(s, ParamSlot::Attribute(_)))
        .count();
    let mut operands: Vec<View> = Vec::with_capacity(plan.operand_params.len());
    let mut attrs: Vec<(&str, Attr)> = Vec::with_capacity(n_attrs);
    let mut ints: Vec<Option<i64>> = vec![None; n_attrs];
    let mut lens: Vec<Option<i64>> = vec![None; n_attrs];
    let mut next_arg = 0usize;
    for (i, p) in params.iter().enumerate() {
        let what =
            |msg: String| Failure::Schema(format!("{}: attribute `{}` {msg}", schema.name, p.name));
        match &p.kind {
            ParamKind::Tensor { .. } | ParamKind::External { .. } => {
                let h = next_handle(&owned, &mut next_arg, n_taken);
                let mut v = view(api, &mut owned, h, meta)?;
                if matches!(p.kind, ParamKind::External { .. })
                    && matches!(v.element, Some(ElementType::I8))
                {
                    // An int8 buffer of descriptor bytes is read as the bytes it holds.
                    v.element = Some(ElementType::U8);
                }
                if v.element.is_none() {
                    return Err(Failure::Schema(format!(
                        "{}: operand `{}` is {}, which no customop kernel takes from this \
                         torch's stable C ABI (torch 2.9's names no float8_e8m0fnu: use torch \
                         2.10 or later, or load the library with native=False)",
                        schema.name,
                        p.name,
                        super::api::torch_dtype_name(v.dtype)
                    )));
                }
                if let ParamKind::Tensor { dtype, .. } = &p.kind {
                    packed::operand(schema, &p.name, dtype, &mut v.element, &mut v.dims)?;
                }
                operands.push(v);
            }
            // Refused above (`torch_refusal`).
            ParamKind::Attributes => {}
            ParamKind::Attribute { ty } => {
                let slot = match plan.params[i] {
                    ParamSlot::Attribute(a) => a,
                    ParamSlot::Operand(_) | ParamSlot::Attributes => continue,
                };
                let raw = stack[at(i)];
                let value = match ty {
                    AttrType::Bool => Attr::Scalar(ElementType::Bool, {
                        let mut b = [0u8; 8];
                        b[0] = u8::from(raw & 0xff != 0);
                        b
                    }),
                    AttrType::Scalar { dtype } if dtype.is_float() => {
                        let v = f64::from_bits(raw);
                        Attr::Scalar(
                            *dtype,
                            float_bytes(*dtype, v).ok_or_else(|| {
                                what(format!("is {dtype}, which no call carries"))
                            })?,
                        )
                    }
                    AttrType::Scalar { dtype } => {
                        let v = raw as i64;
                        ints[slot] = Some(v);
                        Attr::Scalar(
                            *dtype,
                            int_bytes(*dtype, v).ok_or_else(|| {
                                what(format!(
                                    "is {dtype}: {v} is out of range {}",
                                    range_text(*dtype)
                                ))
                            })?,
                        )
                    }
                    AttrType::Array { dtype } => {
                        let items = if direct.is_some() {
                            list_items(api, stack[at(i)] as usize as *mut c_void)?
                        } else {
                            let h = next_handle(&owned, &mut next_arg, n_taken);
                            let v = view(api, &mut owned, h, meta)?;
                            tensor_items(v.element, v.data, &v.dims, *dtype, meta).map_err(what)?
                        };
                        lens[slot] = i64::try_from(items.len()).ok();
                        array_attr(*dtype, &items).map_err(what)?
                    }
                    AttrType::Str | AttrType::Descriptor { .. } if direct.is_some() => {
                        let text = string_bytes(api, stack[at(i)] as usize as *mut c_void)?;
                        if matches!(ty, AttrType::Str) {
                            Attr::Bytes(text.as_ptr(), text.len())
                        } else {
                            // A descriptor's bytes travel one character per byte (latin-1);
                            // torch hands the string over as UTF-8.
                            let bytes = latin1_bytes(text).ok_or_else(|| {
                                what(
                                    "is not a descriptor's packed bytes, one character per byte \
                                     (lib.pack_attr)"
                                        .to_string(),
                                )
                            })?;
                            decoded.push(bytes);
                            let b = decoded.last().map_or(&[][..], Vec::as_slice);
                            Attr::Bytes(b.as_ptr(), b.len())
                        }
                    }
                    AttrType::Str | AttrType::Descriptor { .. } => {
                        let h = next_handle(&owned, &mut next_arg, n_taken);
                        let v = view(api, &mut owned, h, meta)?;
                        if !matches!(v.element, Some(ElementType::U8)) || v.dims.len() != 1 {
                            return Err(what(
                                "arrives as a tensor other than the native convention's 1-D \
                                 uint8 bytes"
                                    .to_string(),
                            ));
                        }
                        Attr::Bytes(v.data.cast_const().cast(), v.nbytes())
                    }
                };
                attrs.push((p.name.as_str(), value));
            }
        }
    }

    // A generic op's type parameters, checked as the Python path checks them.
    plan.check_dtype_vars(|o| operands.get(o).and_then(|v| v.element))
        .map_err(|m| Failure::Schema(plan.dtype_message(schema, &m)))?;

    // The outputs, from the plan.
    let env = Env {
        operands: &operands,
        ints: &ints,
        lens: &lens,
    };
    let device = if meta { api.meta } else { api.cpu };
    let mut results: Vec<View> = Vec::with_capacity(plan.results.len());
    for (r, rp) in schema.results.iter().zip(&plan.results) {
        let (element, shape, dtype) = match rp {
            ResultPlan::Tensor { element, shape } => {
                let e = match element {
                    ResultDtype::Fixed(e) => *e,
                    ResultDtype::Of(o) => operands
                        .get(*o)
                        .and_then(|v| v.element)
                        .unwrap_or(ElementType::U8),
                };
                let dims = shape.eval(&env).map_err(|(d, e)| {
                    // Worded as the Python path words it.
                    let rule = match shape {
                        OutputShape::Dims(rules) => rules.get(d).map(ToString::to_string),
                        OutputShape::Parts(parts) => parts.get(d).map(ToString::to_string),
                        OutputShape::Of(_) => None,
                    }
                    .unwrap_or_default();
                    let why = match e {
                        EvalError::NotASize(v) => format!("it is {v}, not a size"),
                        e => e.to_string(),
                    };
                    Failure::Schema(format!(
                        "{}: output `{}`: dimension {d}, `{rule}`: {why}",
                        schema.name, r.name
                    ))
                })?;
                let dtype = api.carrier_of(e).ok_or_else(|| {
                    Failure::Schema(format!("{}: torch has no dtype for {e}", schema.name))
                })?;
                (e, dims, dtype)
            }
            ResultPlan::Opaque { size: Some(n) } => (
                ElementType::U8,
                vec![i64::try_from(*n).unwrap_or(i64::MAX)],
                api.dtype_of(ElementType::U8).unwrap_or(0),
            ),
            ResultPlan::Opaque { size: None } => {
                return Err(Failure::Schema(format!(
                    "{}: output `{}` is a descriptor with tails, which has no fixed size",
                    schema.name, r.name
                )));
            }
            ResultPlan::Updated { operand } => {
                let v = operands.get(*operand).ok_or_else(|| {
                    Failure::Schema(format!("{}: no operand {operand}", schema.name))
                })?;
                // Packed bytes of a `&mut` external, or an `#[inout]` tensor's elements.
                (
                    v.element.unwrap_or(ElementType::U8),
                    v.dims.clone(),
                    v.dtype,
                )
            }
        };
        let stored = packed::stored_shape(schema, &r.name, element, &shape)?;
        let strides = contiguous_strides(&stored);
        let rank = i64::try_from(stored.len()).unwrap_or(0);
        let mut out = null_mut();
        torch!(
            api,
            empty_strided(
                rank,
                stored.as_ptr(),
                strides.as_ptr(),
                dtype,
                device,
                0,
                &mut out
            )
        );
        owned.keep(out);
        let mut data = null_mut();
        if !meta {
            torch!(api, get_data_ptr(out, &mut data));
        }
        results.push(View {
            handle: out,
            original: out,
            dtype,
            element: Some(element),
            dims: shape,
            data,
        });
    }

    if !meta {
        let tensor = |v: &View| CallTensor {
            dtype: v.element.map_or(0, |e| e.xla_code() as i32),
            data: v.data,
            rank: i64::try_from(v.dims.len()).unwrap_or(0),
            dims: v.dims.as_ptr(),
        };
        let call_args: Vec<CallTensor> = operands.iter().map(tensor).collect();
        let call_rets: Vec<CallTensor> = results.iter().map(tensor).collect();
        let call_attrs: Vec<CallAttr> = attrs
            .iter()
            .map(|(name, a)| {
                let (kind, dtype, data, len) = match a {
                    Attr::Scalar(t, b) => (
                        XLA_FFI_ATTR_TYPE_SCALAR,
                        t.xla_code() as i32,
                        b.as_ptr().cast::<c_void>(),
                        1,
                    ),
                    Attr::Array(t, b, n) => (
                        XLA_FFI_ATTR_TYPE_ARRAY,
                        t.xla_code() as i32,
                        b.as_ptr().cast::<c_void>(),
                        *n,
                    ),
                    Attr::Bytes(p, n) => (XLA_FFI_ATTR_TYPE_STRING, 0, p.cast::<c_void>(), *n),
                };
                CallAttr {
                    name: name.as_ptr().cast(),
                    name_len: name.len(),
                    kind,
                    dtype,
                    data,
                    len,
                }
            })
            .collect();
        // torch's intra-op pool for `customop::parallel` (2.10+; inline on 2.9).
        let _pool = api.direct.as_ref().and_then(|d| d.pool).map(|(p, n)| {
            crate::parallel::Current::enter(crate::parallel::Pool::Torch {
                parallel_for: p,
                num_threads: n,
            })
        });
        // SAFETY: every tensor's data is the live, contiguous memory of a handle held in
        // `owned` (results freshly allocated, writable), with `dims` owned by its view; the
        // attributes point into `attrs` and tensors held alike; all outlive the call.
        unsafe { call_handler(op.handler, &call_args, &call_rets, &call_attrs) }
            .map_err(|(code, m)| Failure::Kernel(code, String::from_utf8_lossy(&m).into_owned()))?;
        // A `&mut` external's new bytes go back into the caller's tensor.
        for (ri, o) in &plan.aliases {
            let (Some(r), Some(v)) = (results.get(*ri), operands.get(*o)) else {
                continue;
            };
            // torch's copy, which bumps the tensor's version counter as an in-place op must.
            torch!(api, copy_(v.original, r.handle, 0));
        }
    }

    // Hand the returned results to torch: their handles leave `owned` (nulled there).
    let mut k = 0usize;
    for (rp, v) in plan.results.iter().zip(&results) {
        if matches!(rp, ResultPlan::Updated { .. }) {
            continue;
        }
        if let Some(slot) = stack.get_mut(k) {
            *slot = v.handle as usize as u64;
        }
        k += 1;
        if let Some(h) = owned.handles.iter_mut().find(|h| **h == v.handle) {
            *h = null_mut();
        }
    }
    Ok(())
}
