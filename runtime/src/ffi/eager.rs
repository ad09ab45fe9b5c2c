//! Calling a generated handler without XLA: `customop_call` builds a typed-FFI call frame from
//! plain tensors and attributes, with a one-function API table whose `XLA_FFI_Error_Create`
//! keeps the error, and runs the handler on it. Front ends that run ops eagerly (PyTorch on CPU
//! tensors) use it, so that an eager call goes through exactly the checks an XLA call does: the
//! handler cannot tell the two apart.

use super::abi::*;
use core::ffi::{c_char, c_void};
use core::ptr::{null, null_mut};

/// One tensor of an eager call: its XLA FFI data type code (`XLA_FFI_DataType`: PRED 1, S8 2,
/// S16 3, S32 4, S64 5, U8 6, U16 7, U32 8, U64 9, F32 11, F64 12), its data (dense, row-major),
/// its rank and dimensions.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct CallTensor {
    /// The element type's XLA FFI code.
    pub dtype: i32,
    /// The first element.
    pub data: *mut c_void,
    /// The number of dimensions.
    pub rank: i64,
    /// `rank` dimension sizes.
    pub dims: *const i64,
}

/// One attribute of an eager call: `kind` is the XLA FFI attribute type (array 1, scalar 3,
/// string 4); `dtype` the element type code of a scalar or an array; `data` the scalar's value,
/// the array's first element or the string's first byte; `len` the array's element count or the
/// string's byte length (ignored for a scalar).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct CallAttr {
    /// The attribute's name (UTF-8, not NUL-terminated).
    pub name: *const c_char,
    /// The name's length in bytes.
    pub name_len: usize,
    /// Array 1, scalar 3, string 4.
    pub kind: i32,
    /// The element type code of a scalar or array.
    pub dtype: i32,
    /// The value.
    pub data: *const c_void,
    /// Elements of an array, bytes of a string.
    pub len: usize,
}

/// The error a handler created through the eager API table.
struct EagerError {
    code: i32,
    message: Vec<u8>,
}

/// `XLA_FFI_Error_Create` of the eager API table: keeps the code and a copy of the message.
///
/// # Safety
/// `args` is null or points at valid create arguments whose `message` is null or a
/// NUL-terminated string (what every handler passes).
unsafe extern "C" fn eager_error_create(
    args: *mut XLA_FFI_Error_Create_Args,
) -> *mut XLA_FFI_Error {
    let (code, message) = if args.is_null() {
        (2, b"error with no arguments".to_vec())
    } else {
        // SAFETY: non-null `args` is valid for the call (this function's contract).
        let a = unsafe { &*args };
        let message = if a.message.is_null() {
            Vec::new()
        } else {
            // SAFETY: a non-null message is NUL-terminated (this function's contract).
            unsafe { core::ffi::CStr::from_ptr(a.message) }
                .to_bytes()
                .to_vec()
        };
        (a.errc, message)
    };
    Box::into_raw(Box::new(EagerError { code, message })).cast()
}

/// Runs `handler` on a call frame made of `args`, `rets` and `attrs`. Returns 0 when the handler
/// succeeded; otherwise the error's code (XLA's error codes, never 0), with its message copied
/// into `message` (at most `message_cap - 1` bytes, then a NUL). A null handler, or null arrays
/// with nonzero counts, give -1.
///
/// # Safety
/// `handler` is a customop handler (or one that creates errors only through the frame's API).
/// `args`/`rets`/`attrs` point at `n_args`/`n_rets`/`n_attrs` valid entries (or are null with a
/// zero count), each entry's pointers valid as described on [`CallTensor`] and [`CallAttr`] for
/// the duration of the call; result tensors are writable. `message` is null or writable for
/// `message_cap` bytes.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn customop_call(
    handler: Option<unsafe extern "C" fn(*mut XLA_FFI_CallFrame) -> *mut XLA_FFI_Error>,
    args: *const CallTensor,
    n_args: usize,
    rets: *const CallTensor,
    n_rets: usize,
    attrs: *const CallAttr,
    n_attrs: usize,
    message: *mut c_char,
    message_cap: usize,
) -> i32 {
    let Some(handler) = handler else {
        return -1;
    };
    // SAFETY: the caller guarantees each array holds its count of valid entries, or is null
    // with a zero count.
    let (Some(args), Some(rets), Some(attrs)) = (unsafe {
        (
            slice_of(args, n_args),
            slice_of(rets, n_rets),
            slice_of(attrs, n_attrs),
        )
    }) else {
        return -1;
    };
    // SAFETY: the entries' pointers are valid as `call_handler` needs (this function's
    // contract), and `handler` is a customop handler.
    match unsafe { call_handler(handler, args, rets, attrs) } {
        Ok(()) => 0,
        // SAFETY: `message` is null or writable for `message_cap` bytes (the contract).
        Err((code, text)) => unsafe { copy_message(message, message_cap, code, &text) },
    }
}

/// The vectors a call frame is made of, kept per thread and reused, so that an eager call
/// (a native torch kernel's, say) allocates none of them after the first.
#[derive(Default)]
struct Scratch {
    arg_bufs: Vec<XLA_FFI_Buffer>,
    ret_bufs: Vec<XLA_FFI_Buffer>,
    arg_types: Vec<i32>,
    ret_types: Vec<i32>,
    arg_ptrs: Vec<*mut c_void>,
    ret_ptrs: Vec<*mut c_void>,
    names: Vec<XLA_FFI_ByteSpan>,
    scalars: Vec<XLA_FFI_Scalar>,
    arrays: Vec<XLA_FFI_Array>,
    strings: Vec<XLA_FFI_ByteSpan>,
    attr_types: Vec<i32>,
    attr_ptrs: Vec<*mut c_void>,
    name_ptrs: Vec<*mut XLA_FFI_ByteSpan>,
}

thread_local! {
    static SCRATCH: core::cell::RefCell<Scratch> = core::cell::RefCell::default();
}

/// Runs `handler` on a call frame made of `args`, `rets` and `attrs`: `Ok` when it succeeded,
/// else the error's code (never 0) and message.
///
/// # Safety
/// `handler` is a customop handler (or one that creates errors only through the frame's API);
/// every entry's pointers are valid as described on [`CallTensor`] and [`CallAttr`] for the
/// duration of the call, and result tensors are writable.
pub(crate) unsafe fn call_handler(
    handler: unsafe extern "C" fn(*mut XLA_FFI_CallFrame) -> *mut XLA_FFI_Error,
    args: &[CallTensor],
    rets: &[CallTensor],
    attrs: &[CallAttr],
) -> Result<(), (i32, Vec<u8>)> {
    SCRATCH.with(|cell| match cell.try_borrow_mut() {
        // SAFETY: the caller's contract, passed on.
        Ok(mut scratch) => unsafe { call_with(&mut scratch, handler, args, rets, attrs) },
        // A call made while this thread's scratch is in use (a handler calling another):
        // vectors of its own.
        // SAFETY: as above.
        Err(_) => unsafe { call_with(&mut Scratch::default(), handler, args, rets, attrs) },
    })
}

/// [`call_handler`] with the frame's vectors in `s` (cleared first).
///
/// # Safety
/// As [`call_handler`].
unsafe fn call_with(
    s: &mut Scratch,
    handler: unsafe extern "C" fn(*mut XLA_FFI_CallFrame) -> *mut XLA_FFI_Error,
    args: &[CallTensor],
    rets: &[CallTensor],
    attrs: &[CallAttr],
) -> Result<(), (i32, Vec<u8>)> {
    s.arg_bufs.clear();
    s.arg_bufs.extend(args.iter().map(buffer));
    s.ret_bufs.clear();
    s.ret_bufs.extend(rets.iter().map(buffer));
    s.arg_types.clear();
    s.arg_types.resize(args.len(), XLA_FFI_ARG_TYPE_BUFFER);
    s.ret_types.clear();
    s.ret_types.resize(rets.len(), XLA_FFI_RET_TYPE_BUFFER);
    s.arg_ptrs.clear();
    s.arg_ptrs.extend(
        s.arg_bufs
            .iter_mut()
            .map(|b| (b as *mut XLA_FFI_Buffer).cast::<c_void>()),
    );
    s.ret_ptrs.clear();
    s.ret_ptrs.extend(
        s.ret_bufs
            .iter_mut()
            .map(|b| (b as *mut XLA_FFI_Buffer).cast::<c_void>()),
    );

    // Attributes: the name spans, then each value in the form XLA gives it.
    s.names.clear();
    s.names.extend(attrs.iter().map(|a| XLA_FFI_ByteSpan {
        ptr: a.name,
        len: a.name_len,
    }));
    s.scalars.clear();
    s.arrays.clear();
    s.strings.clear();
    for a in attrs {
        match a.kind {
            XLA_FFI_ATTR_TYPE_SCALAR => s.scalars.push(XLA_FFI_Scalar {
                dtype: a.dtype,
                value: a.data.cast_mut(),
            }),
            XLA_FFI_ATTR_TYPE_ARRAY => s.arrays.push(XLA_FFI_Array {
                dtype: a.dtype,
                size: a.len,
                data: a.data.cast_mut(),
            }),
            XLA_FFI_ATTR_TYPE_STRING => s.strings.push(XLA_FFI_ByteSpan {
                ptr: a.data.cast(),
                len: a.len,
            }),
            _ => {
                let what =
                    b"eager call: attribute kind must be 1 (array), 3 (scalar) or 4 (string)";
                return Err((3, what.to_vec()));
            }
        }
    }
    // The vectors above are not pushed to again, so pointers into them stay valid.
    let (mut si, mut ai, mut ti) = (0, 0, 0);
    s.attr_types.clear();
    s.attr_ptrs.clear();
    for a in attrs {
        s.attr_types.push(a.kind);
        s.attr_ptrs.push(match a.kind {
            XLA_FFI_ATTR_TYPE_SCALAR => {
                si += 1;
                (&raw mut s.scalars[si - 1]).cast()
            }
            XLA_FFI_ATTR_TYPE_ARRAY => {
                ai += 1;
                (&raw mut s.arrays[ai - 1]).cast()
            }
            _ => {
                ti += 1;
                (&raw mut s.strings[ti - 1]).cast()
            }
        });
    }
    s.name_ptrs.clear();
    s.name_ptrs
        .extend(s.names.iter_mut().map(|n| n as *mut XLA_FFI_ByteSpan));

    let api = XLA_FFI_Api {
        struct_size: size_of::<XLA_FFI_Api>(),
        extension_start: null_mut(),
        api_version: XLA_FFI_Api_Version {
            struct_size: size_of::<XLA_FFI_Api_Version>(),
            extension_start: null_mut(),
            major_version: XLA_FFI_API_MAJOR,
            minor_version: XLA_FFI_API_MINOR_SUPPORTED,
        },
        internal_api: null(),
        error_create: Some(eager_error_create),
    };
    let mut frame = XLA_FFI_CallFrame {
        struct_size: XLA_FFI_CallFrame_STRUCT_SIZE,
        extension_start: null_mut(),
        api: &api,
        ctx: null_mut(),
        stage: XLA_FFI_EXECUTION_STAGE_EXECUTE,
        args: XLA_FFI_Args {
            struct_size: size_of::<XLA_FFI_Args>(),
            extension_start: null_mut(),
            size: count(args.len()),
            types: s.arg_types.as_mut_ptr(),
            args: s.arg_ptrs.as_mut_ptr(),
        },
        rets: XLA_FFI_Rets {
            struct_size: size_of::<XLA_FFI_Rets>(),
            extension_start: null_mut(),
            size: count(rets.len()),
            types: s.ret_types.as_mut_ptr(),
            rets: s.ret_ptrs.as_mut_ptr(),
        },
        attrs: XLA_FFI_Attrs {
            struct_size: size_of::<XLA_FFI_Attrs>(),
            extension_start: null_mut(),
            size: count(attrs.len()),
            types: s.attr_types.as_mut_ptr(),
            names: s.name_ptrs.as_mut_ptr(),
            attrs: s.attr_ptrs.as_mut_ptr(),
        },
        future: null_mut(),
    };
    // SAFETY: `frame` is a complete execution-stage call frame; every pointer in it points into
    // the vectors of `s` (not touched again until the call returns) or at the caller's data,
    // all of which outlive the call.
    let err = unsafe { handler(&mut frame) };
    if err.is_null() {
        return Ok(());
    }
    // SAFETY: the frame's API has one way to make an error, `eager_error_create`, which returns
    // a leaked `Box<EagerError>`; the handler hands it to us once.
    let err = unsafe { Box::from_raw(err.cast::<EagerError>()) };
    let code = if err.code == 0 { 2 } else { err.code };
    Err((code, err.message))
}

/// `XLA_FFI_Buffer` of one tensor.
fn buffer(t: &CallTensor) -> XLA_FFI_Buffer {
    XLA_FFI_Buffer {
        struct_size: size_of::<XLA_FFI_Buffer>(),
        extension_start: null_mut(),
        dtype: t.dtype,
        data: t.data,
        rank: t.rank,
        dims: t.dims.cast_mut(),
    }
}

fn count(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// The `n` entries at `p` (an empty slice for `n == 0`), or `None` for null with `n > 0`.
///
/// # Safety
/// Non-null `p` points at `n` valid entries that outlive `'a`.
unsafe fn slice_of<'a, T>(p: *const T, n: usize) -> Option<&'a [T]> {
    if n == 0 {
        return Some(&[]);
    }
    if p.is_null() {
        return None;
    }
    // SAFETY: the caller's contract.
    Some(unsafe { core::slice::from_raw_parts(p, n) })
}

/// Copies `text` (truncated, NUL-terminated) into `out` and returns `code`.
///
/// # Safety
/// `out` is null or writable for `cap` bytes.
pub(crate) unsafe fn copy_message(out: *mut c_char, cap: usize, code: i32, text: &[u8]) -> i32 {
    if !out.is_null() && cap > 0 {
        let n = text.len().min(cap - 1);
        // SAFETY: `out` is writable for `cap` bytes (this function's contract) and `n < cap`.
        unsafe {
            core::ptr::copy_nonoverlapping(text.as_ptr().cast::<c_char>(), out, n);
            *out.add(n) = 0;
        }
    }
    code
}
