//! Attribute dictionaries as XLA passes them (`XLA_FFI_Attrs`: names, kinds, scalars and arrays
//! of any XLA dtype code, strings, nested dictionaries, null entries), built from the input,
//! into the handler of an op that reads every attribute of its call (`#[attrs]`) and walks it
//! all: kinds, `get` of every type, strings, arrays, nested dictionaries. Any input: the
//! kernel's count or a refusal, never a panic, a read out of bounds or an unwind out of the
//! handler.
#![no_main]

use customop::__private::ffi::abi::*;
use customop::attr::AttrKind;
use customop::prelude::*;
use customop::{Dictionary, ElementType};
use std::ffi::{c_char, c_void};
use std::ptr::{null, null_mut};

/// Reads every attribute of `d`, recursively; counts what it could read.
fn walk(d: &Dictionary<'_>, depth: u32) -> Result<i64, OpError> {
    let mut n = d.len() as i64;
    for (name, kind) in d.iter() {
        n += match kind {
            AttrKind::Scalar(ElementType::I64) => d.get::<i64>(name).map(|_| 1),
            AttrKind::Scalar(ElementType::F32) => d.get::<f32>(name).map(|_| 1),
            AttrKind::Scalar(ElementType::Bool) => d.get::<bool>(name).map(|_| 1),
            AttrKind::Scalar(_) => d.get::<i32>(name).map(|_| 1),
            AttrKind::Array(ElementType::F64) => d.get::<&[f64]>(name).map(|a| a.len() as i64),
            AttrKind::Array(_) => d.get::<&[i32]>(name).map(|a| a.len() as i64),
            AttrKind::Str => d.get_ref::<str>(name).map(|s| s.len() as i64),
            AttrKind::Dictionary if depth < 8 => walk(&d.dict(name)?, depth + 1),
            _ => Ok(0),
        }
        .unwrap_or(0);
        // Every name asked for the wrong kind: an error, never garbage.
        let _ = d.get::<u8>(name);
        let _ = d.get_ref::<str>(name);
        let _ = d.dict(name);
    }
    Ok(n)
}

/// Every attribute of the call, walked.
#[custom_op(name = "fuzz::walk")]
pub fn walk_attrs(
    #[attrs] attrs: Dictionary<'_>,
    #[out(shape = [1])] mut n: TensorMut<'_, i64, 1>,
) -> Result<(), OpError> {
    n.as_mut_slice()[0] = walk(&attrs, 0)?;
    Ok(())
}

/// The input, read a byte at a time (zeros once it is used up).
struct Input<'a>(&'a [u8]);

impl Input<'_> {
    fn byte(&mut self) -> u8 {
        let Some((&b, rest)) = self.0.split_first() else {
            return 0;
        };
        self.0 = rest;
        b
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        let n = n.min(self.0.len());
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        a.to_vec()
    }
}

/// One level of a dictionary as XLA lays it out, and everything it points at.
struct Attrs {
    name_bytes: Vec<Vec<u8>>,
    names: Vec<XLA_FFI_ByteSpan>,
    name_ptrs: Vec<*mut XLA_FFI_ByteSpan>,
    types: Vec<i32>,
    values: Vec<*mut c_void>,
    scalars: Vec<XLA_FFI_Scalar>,
    arrays: Vec<XLA_FFI_Array>,
    spans: Vec<XLA_FFI_ByteSpan>,
    payload: Vec<Vec<u64>>,
    nested: Vec<Box<Attrs>>,
    head: XLA_FFI_Attrs,
}

impl Attrs {
    /// A dictionary of up to 8 entries from the input; `depth` bounds the nesting.
    fn build(input: &mut Input<'_>, depth: u32) -> Box<Attrs> {
        let n = usize::from(input.byte() % 9);
        let mut a = Box::new(Attrs {
            name_bytes: Vec::with_capacity(n),
            names: Vec::with_capacity(n),
            name_ptrs: Vec::with_capacity(n),
            types: Vec::with_capacity(n),
            values: Vec::with_capacity(n),
            scalars: Vec::with_capacity(n),
            arrays: Vec::with_capacity(n),
            spans: Vec::with_capacity(n),
            payload: Vec::with_capacity(n),
            nested: Vec::with_capacity(n),
            head: XLA_FFI_Attrs {
                struct_size: size_of::<XLA_FFI_Attrs>(),
                extension_start: null_mut(),
                size: n as i64,
                types: null_mut(),
                names: null_mut(),
                attrs: null_mut(),
            },
        });
        for _ in 0..n {
            let len = usize::from(input.byte() % 6);
            let name = input.bytes(len);
            // The name's bytes stay where they are when `name_bytes` grows (a Vec's buffer is
            // its own allocation).
            a.names.push(XLA_FFI_ByteSpan {
                ptr: name.as_ptr().cast::<c_char>(),
                len: name.len(),
            });
            a.name_bytes.push(name);
            let kind = input.byte();
            let dtype = i32::from(input.byte() % 34);
            // The payload is 8-byte aligned (another byte offsets it by 4: a misaligned array
            // is the handler's refusal) and holds `len` elements of the widest dtype (16
            // bytes), as XLA's would: what a handler reads past that is not its input's fault.
            let len = usize::from(input.byte() % 17);
            let words = input.bytes(8 * len.max(1));
            let mut buf = vec![0u64; 2 * len + 3];
            for (i, b) in words.iter().enumerate() {
                buf[i / 8] |= u64::from(*b) << (8 * (i % 8));
            }
            let offset = usize::from(input.byte() % 2) * 4;
            let ptr = buf
                .as_mut_ptr()
                .cast::<u8>()
                .wrapping_add(offset)
                .cast::<c_void>();
            a.payload.push(buf);
            let (ty, value): (i32, *mut c_void) = match kind % 7 {
                0 => {
                    a.scalars.push(XLA_FFI_Scalar { dtype, value: ptr });
                    let p: *mut XLA_FFI_Scalar = a.scalars.last_mut().map_or(null_mut(), |s| s);
                    (XLA_FFI_ATTR_TYPE_SCALAR, p.cast())
                }
                1 => {
                    a.arrays.push(XLA_FFI_Array {
                        dtype,
                        size: len,
                        data: ptr,
                    });
                    let p: *mut XLA_FFI_Array = a.arrays.last_mut().map_or(null_mut(), |s| s);
                    (XLA_FFI_ATTR_TYPE_ARRAY, p.cast())
                }
                2 => {
                    a.spans.push(XLA_FFI_ByteSpan {
                        ptr: ptr.cast(),
                        len,
                    });
                    let p: *mut XLA_FFI_ByteSpan = a.spans.last_mut().map_or(null_mut(), |s| s);
                    (XLA_FFI_ATTR_TYPE_STRING, p.cast())
                }
                3 if depth < 4 => {
                    let mut inner = Attrs::build(input, depth + 1);
                    let p: *mut XLA_FFI_Attrs = &mut inner.head;
                    a.nested.push(inner);
                    (XLA_FFI_ATTR_TYPE_DICTIONARY, p.cast())
                }
                4 => (XLA_FFI_ATTR_TYPE_SCALAR, null_mut()),
                // A kind XLA's header does not have (none of 1 to 4).
                5 => (5 + i32::from(input.byte()), ptr),
                _ => (XLA_FFI_ATTR_TYPE_STRING, null_mut()),
            };
            a.types.push(ty);
            a.values.push(value);
        }
        // Every vector is at its final length (reserved above): the pointers stay valid.
        let names: Vec<*mut XLA_FFI_ByteSpan> = a
            .names
            .iter_mut()
            .map(|s| s as *mut XLA_FFI_ByteSpan)
            .collect();
        a.name_ptrs = names;
        a.head.types = a.types.as_mut_ptr();
        a.head.names = a.name_ptrs.as_mut_ptr();
        a.head.attrs = a.values.as_mut_ptr();
        a
    }
}

/// XLA's error, as the handler makes it: recorded and dropped.
unsafe extern "C" fn error(_args: *mut XLA_FFI_Error_Create_Args) -> *mut XLA_FFI_Error {
    Box::into_raw(Box::new(0u8)).cast()
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let mut input = Input(data);
    let attrs = Attrs::build(&mut input, 0);
    let api = XLA_FFI_Api {
        struct_size: size_of::<XLA_FFI_Api>(),
        extension_start: null_mut(),
        api_version: XLA_FFI_Api_Version {
            struct_size: size_of::<XLA_FFI_Api_Version>(),
            extension_start: null_mut(),
            major_version: XLA_FFI_API_MAJOR,
            minor_version: 5,
        },
        internal_api: null(),
        error_create: Some(error),
    };
    let mut out = [0i64; 1];
    let mut dims = [1i64];
    let mut ret = XLA_FFI_Buffer {
        struct_size: size_of::<XLA_FFI_Buffer>(),
        extension_start: null_mut(),
        dtype: 5, // S64
        data: out.as_mut_ptr().cast(),
        rank: 1,
        dims: dims.as_mut_ptr(),
    };
    let mut ret_types = [XLA_FFI_RET_TYPE_BUFFER];
    let mut ret_ptrs = [(&raw mut ret).cast::<c_void>()];
    let mut frame = XLA_FFI_CallFrame {
        struct_size: XLA_FFI_CallFrame_STRUCT_SIZE,
        extension_start: null_mut(),
        api: &api,
        ctx: null_mut(),
        stage: XLA_FFI_EXECUTION_STAGE_EXECUTE,
        args: XLA_FFI_Args {
            struct_size: size_of::<XLA_FFI_Args>(),
            extension_start: null_mut(),
            size: 0,
            types: null_mut(),
            args: null_mut(),
        },
        rets: XLA_FFI_Rets {
            struct_size: size_of::<XLA_FFI_Rets>(),
            extension_start: null_mut(),
            size: 1,
            types: ret_types.as_mut_ptr(),
            rets: ret_ptrs.as_mut_ptr(),
        },
        attrs: XLA_FFI_Attrs {
            struct_size: attrs.head.struct_size,
            extension_start: null_mut(),
            size: attrs.head.size,
            types: attrs.head.types,
            names: attrs.head.names,
            attrs: attrs.head.attrs,
        },
        future: null_mut(),
    };
    // SAFETY: every pointer in the frame points into `attrs`, `api`, `ret`, `out` and `dims`,
    // which outlive the call; each value holds what its kind and dtype say (an array's `size`
    // elements, a string's `len` bytes, a scalar's value), as XLA's frames do.
    let err = unsafe { walk_attrs::customop_handler_fuzz_walk(&mut frame) };
    if !err.is_null() {
        // SAFETY: `error` made it from a `Box<u8>`.
        drop(unsafe { Box::from_raw(err.cast::<u8>()) });
    }
    drop(attrs);
});
