//! Fabricated XLA call frames for tests: a `Frame` owns every buffer, dimension array,
//! attribute and the API table it points at, so building one is safe; only `call` crosses into
//! the handler. The API table's `XLA_FFI_Error_Create` records the error it is asked for.

#![allow(dead_code)]

use customop::__private::ffi::abi::*;
use std::ffi::c_void;
use std::ptr::{null, null_mut};

/// The seed op's `Blob` (gain 2, bias -1), packed: the external most tests pass.
pub fn seed_blob() -> Vec<u8> {
    use customop::Descriptor;
    customop_example_kernels::Blob {
        gain: 2.0,
        bias: -1,
        seed: 42,
        tag: *b"customop seed!!!",
    }
    .pack()
}

pub type Handler = unsafe extern "C" fn(*mut XLA_FFI_CallFrame) -> *mut XLA_FFI_Error;

pub const PRED: i32 = 1;
pub const S8: i32 = 2;
pub const S32: i32 = 4;
pub const S64: i32 = 5;
pub const U8: i32 = 6;
pub const F32: i32 = 11;
pub const F64: i32 = 12;

/// A buffer's bytes, kept 16-byte aligned so that a test chooses its misalignment.
pub struct Bytes {
    words: Vec<u128>,
    len: usize,
}

impl Bytes {
    pub fn new(data: &[u8]) -> Bytes {
        let mut words = vec![0u128; data.len().div_ceil(16) + 1];
        // SAFETY: `words` holds at least `data.len()` bytes; u128 has no invalid bit patterns.
        unsafe {
            std::ptr::copy_nonoverlapping(
                data.as_ptr(),
                words.as_mut_ptr().cast::<u8>(),
                data.len(),
            )
        };
        Bytes {
            words,
            len: data.len(),
        }
    }
    pub fn zeroed(len: usize) -> Bytes {
        Bytes::new(&vec![0u8; len])
    }
    pub fn ptr(&mut self) -> *mut u8 {
        self.words.as_mut_ptr().cast()
    }
    pub fn get(&self) -> &[u8] {
        // SAFETY: the first `len` bytes of `words` were written in `new`.
        unsafe { std::slice::from_raw_parts(self.words.as_ptr().cast::<u8>(), self.len) }
    }
}

/// What a test says about one buffer.
pub struct Buf {
    pub dtype: i32,
    pub dims: Vec<i64>,
    pub bytes: Bytes,
    /// Added to the data pointer (to misalign it), or `None` for a null data pointer.
    pub offset: Option<usize>,
    /// The argument/result type token (BUFFER unless a test says otherwise).
    pub kind: i32,
}

pub fn buf(dtype: i32, dims: &[i64], data: &[u8]) -> Buf {
    Buf {
        dtype,
        dims: dims.to_vec(),
        bytes: Bytes::new(data),
        offset: Some(0),
        kind: 1,
    }
}

pub fn f32s(dims: &[i64], v: &[f32]) -> Buf {
    buf(
        F32,
        dims,
        &v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>(),
    )
}

pub fn zeros(dtype: i32, dims: &[i64], elem: usize) -> Buf {
    let n: i64 = dims.iter().product::<i64>().max(0);
    buf(dtype, dims, &vec![0u8; n as usize * elem])
}

#[derive(Clone)]
pub enum AttrValue {
    Scalar(i32, Vec<u8>),
    Array(i32, usize, Vec<u8>),
    Str(Vec<u8>),
    /// Another attribute type code (e.g. a dictionary, 2), with no payload.
    Other(i32),
}

/// The outcome of a call: `None` for success, or the error code and message.
#[derive(Debug, PartialEq)]
pub struct Failure {
    pub code: i32,
    pub message: String,
}

pub struct Frame {
    pub args: Vec<Buf>,
    pub rets: Vec<Buf>,
    pub attrs: Vec<(String, AttrValue)>,
    pub api_major: i32,
    pub api_minor: i32,
    pub api_present: bool,
    /// A non-null execution context, as XLA calls with (never read here: with an API table
    /// customop does not read, nothing is called through it).
    pub xla_ctx: bool,
    pub frame_size: usize,
    pub args_size: Option<i64>,
    /// A metadata probe instead of an execution: the version the handler wrote.
    pub probe: bool,
    pub stage: i32,
    /// Null `types` arrays for args (with a nonzero size).
    pub null_arg_types: bool,
    /// The attributes' names as raw bytes, in place of `attrs`' (to write one that is not
    /// UTF-8).
    pub raw_names: Option<Vec<Vec<u8>>>,
    /// `(result, argument, byte offset)`: the result's data pointer is the argument's plus
    /// the offset (XLA's aliasing, or a crafted overlap).
    pub aliased: Vec<(usize, usize, usize)>,
    /// `(result, other result, byte offset)`: a result's data pointer inside another's (a
    /// crafted overlap of two results).
    pub aliased_results: Vec<(usize, usize, usize)>,
    /// A CUDA call's stream: the API table is then long enough to hold
    /// `XLA_FFI_Stream_Get`, which gives this value, and the invoke context is non-null.
    pub stream: Option<usize>,
}

/// `XLA_FFI_Stream_Get` of a fabricated table: the invoke context points at the stream.
unsafe extern "C" fn get_stream(args: *mut XLA_FFI_Stream_Get_Args) -> *mut XLA_FFI_Error {
    // SAFETY: the handler passes valid arguments with the frame's context, which `call`
    // points at the stream value.
    unsafe { (*args).stream = *(*args).ctx.cast::<usize>() as *mut c_void };
    null_mut()
}

struct Recorded {
    code: i32,
    message: String,
}

unsafe extern "C" fn record_error(args: *mut XLA_FFI_Error_Create_Args) -> *mut XLA_FFI_Error {
    // SAFETY: the handler passes valid arguments with a NUL-terminated message.
    let a = unsafe { &*args };
    // SAFETY: as above.
    let message = unsafe { std::ffi::CStr::from_ptr(a.message) }
        .to_string_lossy()
        .into_owned();
    Box::into_raw(Box::new(Recorded {
        code: a.errc,
        message,
    }))
    .cast()
}

impl Frame {
    pub fn new(args: Vec<Buf>, rets: Vec<Buf>) -> Frame {
        Frame {
            args,
            rets,
            attrs: Vec::new(),
            api_major: XLA_FFI_API_MAJOR,
            api_minor: 5,
            api_present: true,
            xla_ctx: false,
            frame_size: XLA_FFI_CallFrame_STRUCT_SIZE,
            args_size: None,
            probe: false,
            stage: XLA_FFI_EXECUTION_STAGE_EXECUTE,
            null_arg_types: false,
            raw_names: None,
            aliased: Vec::new(),
            aliased_results: Vec::new(),
            stream: None,
        }
    }

    pub fn attr(mut self, name: &str, v: AttrValue) -> Frame {
        self.attrs.push((name.to_string(), v));
        self
    }

    /// Runs `handler` on the frame. Returns `Ok(probe version)` (`(0, 0)` unless a probe) or
    /// the error the handler created.
    pub fn call(&mut self, handler: Handler) -> Result<(i32, i32), Failure> {
        let mut dims: Vec<Vec<i64>> = Vec::new();
        let mut arg_bufs: Vec<XLA_FFI_Buffer> = Vec::new();
        let mut ret_bufs: Vec<XLA_FFI_Buffer> = Vec::new();
        for (list, out) in [
            (&mut self.args, &mut arg_bufs),
            (&mut self.rets, &mut ret_bufs),
        ] {
            for b in list.iter_mut() {
                dims.push(b.dims.clone());
                let d = dims.last_mut().map_or(null_mut(), |d| d.as_mut_ptr());
                let data = match b.offset {
                    // SAFETY: the offset stays inside the allocation (one spare word).
                    Some(o) => unsafe { b.bytes.ptr().add(o) }.cast::<c_void>(),
                    None => null_mut(),
                };
                out.push(XLA_FFI_Buffer {
                    struct_size: size_of::<XLA_FFI_Buffer>(),
                    extension_start: null_mut(),
                    dtype: b.dtype,
                    data,
                    rank: b.dims.len() as i64,
                    dims: d,
                });
            }
        }
        for &(r, a, offset) in &self.aliased {
            // The argument's pointer plus an offset inside (or just past) its allocation.
            ret_bufs[r].data = arg_bufs[a].data.cast::<u8>().wrapping_add(offset).cast();
        }
        for &(r, q, offset) in &self.aliased_results {
            // Another result's pointer plus an offset inside its allocation.
            ret_bufs[r].data = ret_bufs[q].data.cast::<u8>().wrapping_add(offset).cast();
        }
        let mut arg_types: Vec<i32> = self.args.iter().map(|b| b.kind).collect();
        let mut ret_types: Vec<i32> = self.rets.iter().map(|b| b.kind).collect();
        let mut arg_ptrs: Vec<*mut c_void> = arg_bufs
            .iter_mut()
            .map(|b| (b as *mut XLA_FFI_Buffer).cast())
            .collect();
        let mut ret_ptrs: Vec<*mut c_void> = ret_bufs
            .iter_mut()
            .map(|b| (b as *mut XLA_FFI_Buffer).cast())
            .collect();

        let name_bytes: Vec<&[u8]> = match &self.raw_names {
            Some(raw) => raw.iter().map(Vec::as_slice).collect(),
            None => self.attrs.iter().map(|(n, _)| n.as_bytes()).collect(),
        };
        let mut names: Vec<XLA_FFI_ByteSpan> = name_bytes
            .iter()
            .map(|n| XLA_FFI_ByteSpan {
                ptr: n.as_ptr().cast(),
                len: n.len(),
            })
            .collect();
        let mut scalars: Vec<XLA_FFI_Scalar> = Vec::new();
        let mut arrays: Vec<XLA_FFI_Array> = Vec::new();
        let mut strings: Vec<XLA_FFI_ByteSpan> = Vec::new();
        let mut attr_types = Vec::new();
        let mut payload: Vec<Bytes> = Vec::new();
        for (_, v) in &self.attrs {
            match v {
                AttrValue::Scalar(dt, bytes) => {
                    payload.push(Bytes::new(bytes));
                    let p = payload.last_mut().map_or(null_mut(), |b| b.ptr());
                    scalars.push(XLA_FFI_Scalar {
                        dtype: *dt,
                        value: p.cast(),
                    });
                    attr_types.push(XLA_FFI_ATTR_TYPE_SCALAR);
                }
                AttrValue::Array(dt, n, bytes) => {
                    payload.push(Bytes::new(bytes));
                    let p = payload.last_mut().map_or(null_mut(), |b| b.ptr());
                    arrays.push(XLA_FFI_Array {
                        dtype: *dt,
                        size: *n,
                        data: p.cast(),
                    });
                    attr_types.push(XLA_FFI_ATTR_TYPE_ARRAY);
                }
                AttrValue::Str(bytes) => {
                    payload.push(Bytes::new(bytes));
                    let p = payload.last_mut().map_or(null_mut(), |b| b.ptr());
                    strings.push(XLA_FFI_ByteSpan {
                        ptr: p.cast(),
                        len: bytes.len(),
                    });
                    attr_types.push(XLA_FFI_ATTR_TYPE_STRING);
                }
                AttrValue::Other(code) => {
                    strings.push(XLA_FFI_ByteSpan {
                        ptr: null(),
                        len: 0,
                    });
                    attr_types.push(*code);
                }
            }
        }
        let (mut si, mut ai, mut ti) = (0, 0, 0);
        let mut attr_ptrs: Vec<*mut c_void> = Vec::new();
        for (_, v) in &self.attrs {
            attr_ptrs.push(match v {
                AttrValue::Scalar(..) => {
                    si += 1;
                    (&raw mut scalars[si - 1]).cast()
                }
                AttrValue::Array(..) => {
                    ai += 1;
                    (&raw mut arrays[ai - 1]).cast()
                }
                _ => {
                    ti += 1;
                    (&raw mut strings[ti - 1]).cast()
                }
            });
        }
        let mut name_ptrs: Vec<*mut XLA_FFI_ByteSpan> = names
            .iter_mut()
            .map(|n| n as *mut XLA_FFI_ByteSpan)
            .collect();

        let head = XLA_FFI_Api {
            struct_size: if self.stream.is_some() {
                size_of::<XLA_FFI_Api_ThreadPool>()
            } else {
                size_of::<XLA_FFI_Api>()
            },
            extension_start: null_mut(),
            api_version: XLA_FFI_Api_Version {
                struct_size: size_of::<XLA_FFI_Api_Version>(),
                extension_start: null_mut(),
                major_version: self.api_major,
                minor_version: self.api_minor,
            },
            internal_api: null(),
            error_create: Some(record_error),
        };
        let api = XLA_FFI_Api_ThreadPool {
            head,
            error_get_details: None,
            error_destroy: None,
            handler_register: None,
            stream_get: Some(get_stream),
            type_register: None,
            invoke_context_get: null(),
            state_set: None,
            state_get: None,
            device_memory_allocate: null(),
            device_memory_free: null(),
            thread_pool_schedule: None,
            thread_pool_num_threads: None,
        };
        let mut stream = self.stream.unwrap_or(0);
        let mut metadata = XLA_FFI_Metadata {
            struct_size: size_of::<XLA_FFI_Metadata>(),
            api_version: XLA_FFI_Api_Version {
                struct_size: size_of::<XLA_FFI_Api_Version>(),
                extension_start: null_mut(),
                major_version: -1,
                minor_version: -1,
            },
            traits: 0,
            state_type_id: XLA_FFI_TypeId { type_id: 0 },
        };
        let mut ext = XLA_FFI_Metadata_Extension {
            extension_base: XLA_FFI_InternalExtension {
                struct_size: size_of::<XLA_FFI_Metadata_Extension>(),
                type_: XLA_FFI_EXTENSION_METADATA,
                next: null_mut(),
            },
            metadata: &mut metadata,
        };
        let mut frame = XLA_FFI_CallFrame {
            struct_size: self.frame_size,
            extension_start: if self.probe {
                (&raw mut ext).cast()
            } else {
                null_mut()
            },
            api: if self.api_present { &api.head } else { null() },
            ctx: if self.stream.is_some() {
                (&raw mut stream).cast()
            } else if self.xla_ctx {
                core::ptr::NonNull::dangling().as_ptr()
            } else {
                null_mut()
            },
            stage: self.stage,
            args: XLA_FFI_Args {
                struct_size: size_of::<XLA_FFI_Args>(),
                extension_start: null_mut(),
                size: self.args_size.unwrap_or(self.args.len() as i64),
                types: if self.null_arg_types {
                    null_mut()
                } else {
                    arg_types.as_mut_ptr()
                },
                args: arg_ptrs.as_mut_ptr(),
            },
            rets: XLA_FFI_Rets {
                struct_size: size_of::<XLA_FFI_Rets>(),
                extension_start: null_mut(),
                size: self.rets.len() as i64,
                types: ret_types.as_mut_ptr(),
                rets: ret_ptrs.as_mut_ptr(),
            },
            attrs: XLA_FFI_Attrs {
                struct_size: size_of::<XLA_FFI_Attrs>(),
                extension_start: null_mut(),
                size: self.attrs.len() as i64,
                types: attr_types.as_mut_ptr(),
                names: name_ptrs.as_mut_ptr(),
                attrs: attr_ptrs.as_mut_ptr(),
            },
            future: null_mut(),
        };
        // SAFETY: every pointer in `frame` points into this function's locals or `self`, all
        // alive until after the call; buffer sizes match their dimensions and dtypes unless a
        // test deliberately passes a null pointer (never read) or a count the handler refuses
        // before reading.
        let err = unsafe { handler(&mut frame) };
        if err.is_null() {
            return Ok((
                metadata.api_version.major_version,
                metadata.api_version.minor_version,
            ));
        }
        // SAFETY: `record_error` made it, from a `Box<Recorded>`.
        let r = unsafe { Box::from_raw(err.cast::<Recorded>()) };
        Err(Failure {
            code: r.code,
            message: r.message,
        })
    }
}

/// Runs `frame` on `handler`, expects refusal `r` with `needle` in the message and XLA code 3
/// (13 for a panic), and checks the outputs were not written (but by the kernel itself, for
/// a kernel error or panic) and the inputs never were.
pub fn refused(mut frame: Frame, handler: Handler, r: customop::Refusal, needle: &str) -> String {
    let before: Vec<Vec<u8>> = frame.rets.iter().map(|b| b.bytes.get().to_vec()).collect();
    let inputs: Vec<Vec<u8>> = frame.args.iter().map(|b| b.bytes.get().to_vec()).collect();
    let err = frame.call(handler).expect_err("the call must be refused");
    let code = if r == customop::Refusal::KernelPanic {
        13
    } else {
        3
    };
    assert_eq!(err.code, code, "{}", err.message);
    assert!(
        err.message.contains(&format!("[{}]", r.name())),
        "expected [{}]: {}",
        r.name(),
        err.message
    );
    assert!(
        err.message.contains(needle),
        "expected {needle:?}: {}",
        err.message
    );
    let after: Vec<Vec<u8>> = frame.rets.iter().map(|b| b.bytes.get().to_vec()).collect();
    if r != customop::Refusal::KernelError && r != customop::Refusal::KernelPanic {
        assert_eq!(before, after, "a refused call wrote its outputs");
    }
    let after: Vec<Vec<u8>> = frame.args.iter().map(|b| b.bytes.get().to_vec()).collect();
    assert_eq!(inputs, after, "a refused call wrote an input");
    err.message
}
