//! The XLA FFI C ABI (`xla/ffi/api/c_api.h`, API 0.5 as installed by jaxlib 0.12), described
//! in Rust from the header: only what customop's handlers use. Every struct starts with
//! `struct_size` and `extension_start`; enums are 32-bit. `tests/ffi_layout.rs` compares sizes
//! and offsets with the real header through a C compiler.

#![allow(
    non_camel_case_types,
    non_upper_case_globals,
    missing_docs,
    missing_debug_implementations
)]

use core::ffi::{c_char, c_void};

pub const XLA_FFI_API_MAJOR: i32 = 0;
/// We claim minor version 1, so that handlers also load in older jaxlibs.
pub const XLA_FFI_API_MINOR_SUPPORTED: i32 = 1;

pub const XLA_FFI_EXTENSION_METADATA: i32 = 1;
pub const XLA_FFI_EXECUTION_STAGE_EXECUTE: i32 = 3;
pub const XLA_FFI_ARG_TYPE_BUFFER: i32 = 1;
pub const XLA_FFI_RET_TYPE_BUFFER: i32 = 1;
pub const XLA_FFI_ATTR_TYPE_ARRAY: i32 = 1;
pub const XLA_FFI_ATTR_TYPE_DICTIONARY: i32 = 2;
pub const XLA_FFI_ATTR_TYPE_SCALAR: i32 = 3;
pub const XLA_FFI_ATTR_TYPE_STRING: i32 = 4;

#[repr(C)]
pub struct XLA_FFI_InternalExtension {
    pub struct_size: usize,
    pub type_: i32,
    pub next: *mut XLA_FFI_InternalExtension,
}

#[repr(C)]
pub struct XLA_FFI_Api_Version {
    pub struct_size: usize,
    pub extension_start: *mut XLA_FFI_InternalExtension,
    pub major_version: i32,
    pub minor_version: i32,
}

#[repr(C)]
pub struct XLA_FFI_TypeId {
    pub type_id: i64,
}

#[repr(C)]
pub struct XLA_FFI_Metadata {
    pub struct_size: usize,
    pub api_version: XLA_FFI_Api_Version,
    pub traits: u32,
    pub state_type_id: XLA_FFI_TypeId,
}

#[repr(C)]
pub struct XLA_FFI_Metadata_Extension {
    pub extension_base: XLA_FFI_InternalExtension,
    pub metadata: *mut XLA_FFI_Metadata,
}

#[repr(C)]
pub struct XLA_FFI_Buffer {
    pub struct_size: usize,
    pub extension_start: *mut XLA_FFI_InternalExtension,
    pub dtype: i32,
    pub data: *mut c_void,
    pub rank: i64,
    pub dims: *mut i64,
}

#[repr(C)]
pub struct XLA_FFI_Args {
    pub struct_size: usize,
    pub extension_start: *mut XLA_FFI_InternalExtension,
    pub size: i64,
    pub types: *mut i32,
    pub args: *mut *mut c_void,
}

#[repr(C)]
pub struct XLA_FFI_Rets {
    pub struct_size: usize,
    pub extension_start: *mut XLA_FFI_InternalExtension,
    pub size: i64,
    pub types: *mut i32,
    pub rets: *mut *mut c_void,
}

#[repr(C)]
pub struct XLA_FFI_ByteSpan {
    pub ptr: *const c_char,
    pub len: usize,
}

#[repr(C)]
pub struct XLA_FFI_Scalar {
    pub dtype: i32,
    pub value: *mut c_void,
}

#[repr(C)]
pub struct XLA_FFI_Array {
    pub dtype: i32,
    pub size: usize,
    pub data: *mut c_void,
}

#[repr(C)]
pub struct XLA_FFI_Attrs {
    pub struct_size: usize,
    pub extension_start: *mut XLA_FFI_InternalExtension,
    pub size: i64,
    pub types: *mut i32,
    pub names: *mut *mut XLA_FFI_ByteSpan,
    pub attrs: *mut *mut c_void,
}

/// Opaque to us: XLA's error object.
#[repr(C)]
pub struct XLA_FFI_Error {
    _private: [u8; 0],
}

#[repr(C)]
pub struct XLA_FFI_Error_Create_Args {
    pub struct_size: usize,
    pub extension_start: *mut XLA_FFI_InternalExtension,
    pub message: *const c_char,
    pub errc: i32,
}

pub type XLA_FFI_Error_Create =
    unsafe extern "C" fn(args: *mut XLA_FFI_Error_Create_Args) -> *mut XLA_FFI_Error;

/// The head of `XLA_FFI_Api`, up to its first function pointer, `XLA_FFI_Error_Create`: what
/// every handler reads. [`XLA_FFI_Api_ThreadPool`] describes the table further, for tables whose
/// `struct_size` says they are that long.
#[repr(C)]
pub struct XLA_FFI_Api {
    pub struct_size: usize,
    pub extension_start: *mut XLA_FFI_InternalExtension,
    pub api_version: XLA_FFI_Api_Version,
    pub internal_api: *const c_void,
    pub error_create: Option<XLA_FFI_Error_Create>,
}

#[repr(C)]
pub struct XLA_FFI_Error_Destroy_Args {
    pub struct_size: usize,
    pub extension_start: *mut XLA_FFI_InternalExtension,
    pub error: *mut XLA_FFI_Error,
}

pub type XLA_FFI_Error_Destroy = unsafe extern "C" fn(args: *mut XLA_FFI_Error_Destroy_Args);

/// `XLA_FFI_Error_GetDetails_Args` (API 0.5; 0.2's `XLA_FFI_Error_GetMessage` reads the same
/// fields up to `message`, in the same place of the table).
#[repr(C)]
pub struct XLA_FFI_Error_GetDetails_Args {
    pub struct_size: usize,
    pub extension_start: *mut XLA_FFI_InternalExtension,
    pub error: *mut XLA_FFI_Error,
    /// Out: the message, owned by the error.
    pub message: *const c_char,
    /// Out (0.5 only).
    pub errc: i32,
}

pub type XLA_FFI_Error_GetDetails = unsafe extern "C" fn(args: *mut XLA_FFI_Error_GetDetails_Args);

/// A handler: `XLA_FFI_Error* (XLA_FFI_CallFrame*)`.
pub type XLA_FFI_Handler =
    unsafe extern "C" fn(frame: *mut XLA_FFI_CallFrame) -> *mut XLA_FFI_Error;

/// `XLA_FFI_Handler_Register_Args` of FFI API 0.2 and 0.3: a bundle of four stages. (0.4
/// appended `record` to the bundle, moving `traits`: [`XLA_FFI_Handler_Register_Args`].) The
/// plugins of tables 0.2 and 0.3 name the size they expect, 84, when given another (checked by
/// the runner's tests).
#[repr(C)]
pub struct XLA_FFI_Handler_Register_Args_V2 {
    pub struct_size: usize,
    pub extension_start: *mut XLA_FFI_InternalExtension,
    pub name: XLA_FFI_ByteSpan,
    pub platform: XLA_FFI_ByteSpan,
    /// Instantiate, prepare, initialize, execute (the last required).
    pub bundle: [Option<XLA_FFI_Handler>; 4],
    pub traits: u32,
}

impl XLA_FFI_Handler_Register_Args_V2 {
    /// 84: the end of `traits`.
    pub const STRUCT_SIZE: usize =
        core::mem::offset_of!(XLA_FFI_Handler_Register_Args_V2, traits) + size_of::<u32>();
}

/// `XLA_FFI_Handler_Register_Args` of FFI API 0.4 and 0.5: the bundle has a fifth stage,
/// `record`, so `traits` is at 88 and the struct is 92 bytes (the header's
/// `XLA_FFI_Handler_Register_Args_STRUCT_SIZE`).
#[repr(C)]
pub struct XLA_FFI_Handler_Register_Args {
    pub struct_size: usize,
    pub extension_start: *mut XLA_FFI_InternalExtension,
    pub name: XLA_FFI_ByteSpan,
    pub platform: XLA_FFI_ByteSpan,
    /// Instantiate, prepare, initialize, execute (the last required), record.
    pub bundle: [Option<XLA_FFI_Handler>; 5],
    pub traits: u32,
}

impl XLA_FFI_Handler_Register_Args {
    /// 92: the end of `traits`.
    pub const STRUCT_SIZE: usize =
        core::mem::offset_of!(XLA_FFI_Handler_Register_Args, traits) + size_of::<u32>();
}

/// `XLA_FFI_Stream_Get_Args`: the platform's stream of the call (for CUDA, a `CUstream`).
#[repr(C)]
pub struct XLA_FFI_Stream_Get_Args {
    pub struct_size: usize,
    pub extension_start: *mut XLA_FFI_InternalExtension,
    pub ctx: *mut c_void,
    /// Out: the stream.
    pub stream: *mut c_void,
}

pub type XLA_FFI_Stream_Get =
    unsafe extern "C" fn(args: *mut XLA_FFI_Stream_Get_Args) -> *mut XLA_FFI_Error;

/// `XLA_FFI_Task`: what `XLA_FFI_ThreadPool_Schedule` runs, on one of XLA's threads.
pub type XLA_FFI_Task = unsafe extern "C" fn(data: *mut c_void);

#[repr(C)]
pub struct XLA_FFI_ThreadPool_Schedule_Args {
    pub struct_size: usize,
    pub extension_start: *mut XLA_FFI_InternalExtension,
    pub ctx: *mut c_void,
    pub task: Option<XLA_FFI_Task>,
    pub data: *mut c_void,
}

pub type XLA_FFI_ThreadPool_Schedule =
    unsafe extern "C" fn(args: *mut XLA_FFI_ThreadPool_Schedule_Args) -> *mut XLA_FFI_Error;

#[repr(C)]
pub struct XLA_FFI_ThreadPool_NumThreads_Args {
    pub struct_size: usize,
    pub extension_start: *mut XLA_FFI_InternalExtension,
    pub ctx: *mut c_void,
    pub num_threads: *mut i64,
}

pub type XLA_FFI_ThreadPool_NumThreads =
    unsafe extern "C" fn(args: *mut XLA_FFI_ThreadPool_NumThreads_Args) -> *mut XLA_FFI_Error;

/// `XLA_FFI_Api` from its head up to `XLA_FFI_ThreadPool_NumThreads`: the functions between
/// are not called, so held as untyped pointers. Read only from a table whose `struct_size`
/// covers it (XLA appends fields within a major version, never moves them).
#[repr(C)]
pub struct XLA_FFI_Api_ThreadPool {
    pub head: XLA_FFI_Api,
    pub error_get_details: Option<XLA_FFI_Error_GetDetails>,
    pub error_destroy: Option<XLA_FFI_Error_Destroy>,
    /// `XLA_FFI_Handler_Register`, whose arguments differ between API versions (0.2:
    /// [`XLA_FFI_Handler_Register_Args_V2`]): typed by the caller.
    pub handler_register: Option<unsafe extern "C" fn(args: *mut c_void) -> *mut XLA_FFI_Error>,
    pub stream_get: Option<XLA_FFI_Stream_Get>,
    pub type_register: Option<XLA_FFI_Type_Register>,
    pub invoke_context_get: *const c_void,
    pub state_set: Option<XLA_FFI_State_Set>,
    pub state_get: Option<XLA_FFI_State_Get>,
    pub device_memory_allocate: *const c_void,
    pub device_memory_free: *const c_void,
    pub thread_pool_schedule: Option<XLA_FFI_ThreadPool_Schedule>,
    pub thread_pool_num_threads: Option<XLA_FFI_ThreadPool_NumThreads>,
}

/// `XLA_FFI_TypeInfo`: how XLA destroys a state object it holds.
#[repr(C)]
pub struct XLA_FFI_TypeInfo {
    pub struct_size: usize,
    pub extension_start: *mut XLA_FFI_InternalExtension,
    pub deleter: Option<unsafe extern "C" fn(object: *mut c_void)>,
}

#[repr(C)]
pub struct XLA_FFI_Type_Register_Args {
    pub struct_size: usize,
    pub extension_start: *mut XLA_FFI_InternalExtension,
    pub name: XLA_FFI_ByteSpan,
    /// In: 0 (XLA assigns one); out: the type's id.
    pub type_id: *mut XLA_FFI_TypeId,
    pub type_info: *const XLA_FFI_TypeInfo,
}

pub type XLA_FFI_Type_Register =
    unsafe extern "C" fn(args: *mut XLA_FFI_Type_Register_Args) -> *mut XLA_FFI_Error;

/// `XLA_FFI_State_Set_Args` and `XLA_FFI_State_Get_Args` (one layout) of FFI API 0.3 and
/// later; 0.2 had no `stage`.
#[repr(C)]
pub struct XLA_FFI_State_Args {
    pub struct_size: usize,
    pub extension_start: *mut XLA_FFI_InternalExtension,
    pub ctx: *mut c_void,
    pub stage: i32,
    pub type_id: *mut XLA_FFI_TypeId,
    /// Set: the object XLA takes; Get: out, the object.
    pub state: *mut c_void,
}

/// `XLA_FFI_State_Set_Args` and `XLA_FFI_State_Get_Args` of FFI API 0.2 (the Rust runner's
/// plugin): no `stage`, 40 bytes (the size the plugin names, checked by a test). Passed to the
/// table's functions by pointer, in place of [`XLA_FFI_State_Args`].
#[repr(C)]
pub struct XLA_FFI_State_Args_V2 {
    pub struct_size: usize,
    pub extension_start: *mut XLA_FFI_InternalExtension,
    pub ctx: *mut c_void,
    pub type_id: *mut XLA_FFI_TypeId,
    /// Set: the object XLA takes; Get: out, the object.
    pub state: *mut c_void,
}

pub type XLA_FFI_State_Set =
    unsafe extern "C" fn(args: *mut XLA_FFI_State_Args) -> *mut XLA_FFI_Error;
pub type XLA_FFI_State_Get =
    unsafe extern "C" fn(args: *mut XLA_FFI_State_Args) -> *mut XLA_FFI_Error;

pub const XLA_FFI_EXECUTION_STAGE_INSTANTIATE: i32 = 0;

#[repr(C)]
pub struct XLA_FFI_CallFrame {
    pub struct_size: usize,
    pub extension_start: *mut XLA_FFI_InternalExtension,
    pub api: *const XLA_FFI_Api,
    pub ctx: *mut c_void,
    pub stage: i32,
    pub args: XLA_FFI_Args,
    pub rets: XLA_FFI_Rets,
    pub attrs: XLA_FFI_Attrs,
    pub future: *mut c_void,
}

/// `XLA_FFI_CallFrame_STRUCT_SIZE`: the frame's size up to `attrs` (the header's value, which
/// XLA puts in `struct_size`; `future`, added later, is not counted).
pub const XLA_FFI_CallFrame_STRUCT_SIZE: usize =
    core::mem::offset_of!(XLA_FFI_CallFrame, attrs) + core::mem::size_of::<XLA_FFI_Attrs>();
/// `XLA_FFI_Args_STRUCT_SIZE`.
pub const XLA_FFI_Args_STRUCT_SIZE: usize = core::mem::size_of::<XLA_FFI_Args>();
/// `XLA_FFI_Rets_STRUCT_SIZE`.
pub const XLA_FFI_Rets_STRUCT_SIZE: usize = core::mem::size_of::<XLA_FFI_Rets>();
/// `XLA_FFI_Attrs_STRUCT_SIZE`.
pub const XLA_FFI_Attrs_STRUCT_SIZE: usize = core::mem::size_of::<XLA_FFI_Attrs>();
/// `XLA_FFI_Buffer_STRUCT_SIZE`.
pub const XLA_FFI_Buffer_STRUCT_SIZE: usize = core::mem::size_of::<XLA_FFI_Buffer>();
