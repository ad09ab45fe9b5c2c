//! The part of the PJRT C API the runner uses, described in Rust from the header of PJRT API
//! 0.81, the oldest version it takes (the `xla-cpu-pjrt` 0.0.1 wheel ships it): PJRT only
//! appends to its structs from one minor version to the next (fields, table slots), and a
//! plugin reads a caller's struct up to the `struct_size` the caller gives, so structs of 0.81's
//! size are read alike by every plugin from 0.81 to 0.115. The FFI extension's registration
//! structs, whose header the wheels do not ship, have the sizes the plugins themselves ask for
//! (a plugin's error for a wrong `struct_size` names the size it expects; the runner's tests
//! hold each plugin to them). `sys_layout_tests.rs` compiles a C program against each PJRT
//! header the set-up installs (0.81, 0.114) and compares every size and offset here with it.
//!
//! Every argument struct starts with `struct_size` and `extension_start`; its `STRUCT_SIZE` is
//! the header's `<name>_STRUCT_SIZE`: the end of its last field, without trailing padding.

// The whole of each struct is described, used by the runner or not, so that the layout test
// holds every field to the header.
#![allow(non_camel_case_types, missing_docs, dead_code)]

use core::ffi::{c_char, c_int, c_void};

macro_rules! opaque {
    ($($name:ident),*) => {
        $(
            /// An opaque PJRT handle.
            #[repr(C)]
            #[derive(Debug)]
            pub struct $name {
                _private: [u8; 0],
            }
        )*
    };
}
opaque!(
    PJRT_Error,
    PJRT_ExecuteContext,
    PJRT_TopologyDescription,
    PJRT_SerializedExecutable,
    PJRT_SerializedTopology,
    PJRT_Client,
    PJRT_Device,
    PJRT_Buffer,
    PJRT_Event,
    PJRT_LoadedExecutable,
    PJRT_Executable
);

/// `PJRT_Extension_Base`: a link of the extension chain.
#[repr(C)]
#[derive(Debug)]
pub struct PJRT_Extension_Base {
    pub struct_size: usize,
    pub type_: c_int,
    pub next: *mut PJRT_Extension_Base,
}

/// `PJRT_Extension_Type_FFI`.
pub const EXTENSION_TYPE_FFI: c_int = 5;

/// An argument struct: its `STRUCT_SIZE` and an all-zero value with `struct_size` set.
pub trait Args: Sized {
    const STRUCT_SIZE: usize;
    /// All fields zero (null pointers, `false`, 0) but `struct_size`.
    fn new() -> Self;
}

/// The end of the furthest field: the header's `offsetof(last) + sizeof(last)`.
pub const fn end_of(ends: &[usize]) -> usize {
    let mut max = 0;
    let mut i = 0;
    while i < ends.len() {
        if ends[i] > max {
            max = ends[i];
        }
        i += 1;
    }
    max
}

macro_rules! pjrt_args {
    ($( $(#[$m:meta])* pub struct $name:ident { $(pub $f:ident : $t:ty,)* } )*) => {
        $(
            $(#[$m])*
            #[repr(C)]
            #[derive(Debug)]
            pub struct $name {
                pub struct_size: usize,
                pub extension_start: *mut PJRT_Extension_Base,
                $(pub $f: $t,)*
            }

            impl Args for $name {
                const STRUCT_SIZE: usize = end_of(&[
                    core::mem::offset_of!($name, extension_start) + core::mem::size_of::<*mut PJRT_Extension_Base>(),
                    $(core::mem::offset_of!($name, $f) + core::mem::size_of::<$t>(),)*
                ]);
                fn new() -> Self {
                    // SAFETY: every field is an integer, a raw pointer, a `bool`, an `f32` or a
                    // union of those, for which all-zero bytes are a valid value (0, null,
                    // false).
                    let mut v: Self = unsafe { core::mem::zeroed() };
                    v.struct_size = Self::STRUCT_SIZE;
                    v
                }
            }
        )*
    };
}

/// `PJRT_NamedValue`'s value union (`string_value`, `int64_value`, `int64_array_value`,
/// `float_value`, `bool_value`).
#[repr(C)]
#[derive(Clone, Copy)]
pub union NamedValueUnion {
    pub string_value: *const c_char,
    pub int64_value: i64,
    pub int64_array_value: *const i64,
    pub float_value: f32,
    pub bool_value: bool,
}

impl core::fmt::Debug for NamedValueUnion {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("NamedValueUnion")
    }
}

/// `PJRT_NamedValue_Type`.
pub const NAMED_VALUE_STRING: c_int = 0;
pub const NAMED_VALUE_INT64: c_int = 1;
pub const NAMED_VALUE_INT64_LIST: c_int = 2;
pub const NAMED_VALUE_FLOAT: c_int = 3;
pub const NAMED_VALUE_BOOL: c_int = 4;

/// `PJRT_Buffer_MemoryLayout_Tiled`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct PJRT_Buffer_MemoryLayout_Tiled {
    pub struct_size: usize,
    pub extension_start: *mut PJRT_Extension_Base,
    pub minor_to_major: *const i64,
    pub minor_to_major_size: usize,
    pub tile_dims: *const i64,
    pub tile_dim_sizes: *const usize,
    pub num_tiles: usize,
}

/// `PJRT_Buffer_MemoryLayout_Strides`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct PJRT_Buffer_MemoryLayout_Strides {
    pub struct_size: usize,
    pub extension_start: *mut PJRT_Extension_Base,
    pub byte_strides: *const i64,
    pub num_byte_strides: usize,
}

/// The union of `PJRT_Buffer_MemoryLayout`.
#[repr(C)]
#[derive(Clone, Copy)]
pub union MemoryLayoutUnion {
    pub tiled: PJRT_Buffer_MemoryLayout_Tiled,
    pub strides: PJRT_Buffer_MemoryLayout_Strides,
}

impl core::fmt::Debug for MemoryLayoutUnion {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("MemoryLayoutUnion")
    }
}

/// `PJRT_Buffer_MemoryLayout_Type_Tiled`.
pub const MEMORY_LAYOUT_TILED: c_int = 0;

/// `PJRT_HostBufferSemantics_kImmutableOnlyDuringCall`: the plugin copies the host data
/// before `BufferFromHostBuffer` returns.
pub const HOST_BUFFER_IMMUTABLE_ONLY_DURING_CALL: c_int = 0;

pjrt_args! {
    pub struct PJRT_Api_Version {
        pub major_version: c_int,
        pub minor_version: c_int,
    }
    pub struct PJRT_NamedValue {
        pub name: *const c_char,
        pub name_size: usize,
        pub type_: c_int,
        pub value: NamedValueUnion,
        pub value_size: usize,
    }
    pub struct PJRT_Error_Destroy_Args {
        pub error: *mut PJRT_Error,
    }
    pub struct PJRT_Error_Message_Args {
        pub error: *const PJRT_Error,
        pub message: *const c_char,
        pub message_size: usize,
    }
    pub struct PJRT_Error_GetCode_Args {
        pub error: *const PJRT_Error,
        pub code: c_int,
    }
    pub struct PJRT_Plugin_Initialize_Args {
    }
    pub struct PJRT_Plugin_Attributes_Args {
        pub attributes: *const PJRT_NamedValue,
        pub num_attributes: usize,
    }
    pub struct PJRT_Event_Destroy_Args {
        pub event: *mut PJRT_Event,
    }
    pub struct PJRT_Event_Await_Args {
        pub event: *mut PJRT_Event,
    }
    pub struct PJRT_Client_Create_Args {
        pub create_options: *const PJRT_NamedValue,
        pub num_options: usize,
        pub kv_get_callback: *mut c_void,
        pub kv_get_user_arg: *mut c_void,
        pub kv_put_callback: *mut c_void,
        pub kv_put_user_arg: *mut c_void,
        pub client: *mut PJRT_Client,
        pub kv_try_get_callback: *mut c_void,
        pub kv_try_get_user_arg: *mut c_void,
    }
    pub struct PJRT_Client_Destroy_Args {
        pub client: *mut PJRT_Client,
    }
    pub struct PJRT_Client_PlatformName_Args {
        pub client: *mut PJRT_Client,
        pub platform_name: *const c_char,
        pub platform_name_size: usize,
    }
    pub struct PJRT_Client_AddressableDevices_Args {
        pub client: *mut PJRT_Client,
        pub addressable_devices: *const *mut PJRT_Device,
        pub num_addressable_devices: usize,
    }
    pub struct PJRT_Program {
        pub code: *mut c_char,
        pub code_size: usize,
        pub format: *const c_char,
        pub format_size: usize,
    }
    pub struct PJRT_Executable_OptimizedProgram_Args {
        pub executable: *mut PJRT_Executable,
        pub program: *mut PJRT_Program,
    }
    pub struct PJRT_Client_Compile_Args {
        pub client: *mut PJRT_Client,
        pub program: *const PJRT_Program,
        pub compile_options: *const c_char,
        pub compile_options_size: usize,
        pub executable: *mut PJRT_LoadedExecutable,
    }
    pub struct PJRT_Client_BufferFromHostBuffer_Args {
        pub client: *mut PJRT_Client,
        pub data: *const c_void,
        pub type_: c_int,
        pub dims: *const i64,
        pub num_dims: usize,
        pub byte_strides: *const i64,
        pub num_byte_strides: usize,
        pub host_buffer_semantics: c_int,
        pub device: *mut PJRT_Device,
        pub memory: *mut c_void,
        pub device_layout: *mut c_void,
        pub done_with_host_buffer: *mut PJRT_Event,
        pub buffer: *mut PJRT_Buffer,
    }
    pub struct PJRT_Executable_Destroy_Args {
        pub executable: *mut PJRT_Executable,
    }
    pub struct PJRT_Executable_NumOutputs_Args {
        pub executable: *mut PJRT_Executable,
        pub num_outputs: usize,
    }
    pub struct PJRT_LoadedExecutable_Destroy_Args {
        pub executable: *mut PJRT_LoadedExecutable,
    }
    pub struct PJRT_LoadedExecutable_GetExecutable_Args {
        pub loaded_executable: *mut PJRT_LoadedExecutable,
        pub executable: *mut PJRT_Executable,
    }
    pub struct PJRT_ExecuteOptions {
        pub send_callbacks: *mut c_void,
        pub recv_callbacks: *mut c_void,
        pub num_send_ops: usize,
        pub num_recv_ops: usize,
        pub launch_id: c_int,
        pub non_donatable_input_indices: *const i64,
        pub num_non_donatable_input_indices: usize,
        pub context: *mut c_void,
        pub call_location: *const c_char,
        pub num_tasks: usize,
        pub task_ids: *mut c_int,
        pub incarnation_ids: *mut i64,
    }
    pub struct PJRT_LoadedExecutable_Execute_Args {
        pub executable: *mut PJRT_LoadedExecutable,
        pub options: *mut PJRT_ExecuteOptions,
        pub argument_lists: *const *const *mut PJRT_Buffer,
        pub num_devices: usize,
        pub num_args: usize,
        pub output_lists: *const *mut *mut PJRT_Buffer,
        pub device_complete_events: *mut *mut PJRT_Event,
        pub execute_device: *mut PJRT_Device,
    }
    pub struct PJRT_Buffer_Destroy_Args {
        pub buffer: *mut PJRT_Buffer,
    }
    pub struct PJRT_Buffer_ElementType_Args {
        pub buffer: *mut PJRT_Buffer,
        pub type_: c_int,
    }
    pub struct PJRT_Buffer_Dimensions_Args {
        pub buffer: *mut PJRT_Buffer,
        pub dims: *const i64,
        pub num_dims: usize,
    }
    pub struct PJRT_Buffer_GetMemoryLayout_Args {
        pub buffer: *mut PJRT_Buffer,
        pub layout: PJRT_Buffer_MemoryLayout,
    }
    pub struct PJRT_Buffer_MemoryLayout {
        pub u: MemoryLayoutUnion,
        pub type_: c_int,
    }
    pub struct PJRT_Buffer_OnDeviceSizeInBytes_Args {
        pub buffer: *mut PJRT_Buffer,
        pub on_device_size_in_bytes: usize,
    }
    pub struct PJRT_Buffer_ToHostBuffer_Args {
        pub src: *mut PJRT_Buffer,
        pub host_layout: *mut PJRT_Buffer_MemoryLayout,
        pub dst: *mut c_void,
        pub dst_size: usize,
        pub event: *mut PJRT_Event,
    }
    pub struct PJRT_Buffer_IsOnCpu_Args {
        pub buffer: *mut PJRT_Buffer,
        pub is_on_cpu: bool,
    }
    pub struct PJRT_Buffer_UnsafePointer_Args {
        pub buffer: *mut PJRT_Buffer,
        pub buffer_pointer: usize,
    }
    pub struct PJRT_Executable_Serialize_Args {
        pub executable: *const PJRT_Executable,
        pub serialized_bytes: *const c_char,
        pub serialized_bytes_size: usize,
        pub serialized_executable: *mut PJRT_SerializedExecutable,
        pub serialized_executable_deleter:
            Option<unsafe extern "C" fn(*mut PJRT_SerializedExecutable)>,
    }
    pub struct PJRT_Executable_DeserializeAndLoad_Args {
        pub client: *mut PJRT_Client,
        pub serialized_executable: *const c_char,
        pub serialized_executable_size: usize,
        pub loaded_executable: *mut PJRT_LoadedExecutable,
        pub overridden_serialized_compile_options: *const c_char,
        pub overridden_serialized_compile_options_size: usize,
    }
    pub struct PJRT_Client_TopologyDescription_Args {
        pub client: *mut PJRT_Client,
        pub topology: *mut PJRT_TopologyDescription,
    }
    pub struct PJRT_TopologyDescription_Serialize_Args {
        pub topology: *mut PJRT_TopologyDescription,
        pub serialized_bytes: *const c_char,
        pub serialized_bytes_size: usize,
        pub serialized_topology: *mut PJRT_SerializedTopology,
        pub serialized_topology_deleter:
            Option<unsafe extern "C" fn(*mut PJRT_SerializedTopology)>,
    }
    pub struct PJRT_ExecuteContext_Create_Args {
        pub context: *mut PJRT_ExecuteContext,
    }
    pub struct PJRT_ExecuteContext_Destroy_Args {
        pub context: *mut PJRT_ExecuteContext,
    }
}

/// A PJRT entry point taking its argument struct: `PJRT_Error* f(Args*)`.
pub type Fn = Option<unsafe extern "C" fn(*mut c_void) -> *mut PJRT_Error>;

#[path = "sys_api.rs"]
mod api;
pub use api::*;
