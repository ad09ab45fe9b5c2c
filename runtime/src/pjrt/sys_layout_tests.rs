//! The Rust description of the PJRT C API (`sys.rs`) has the sizes, field
//! offsets, `*_STRUCT_SIZE` values and enum values of the header the plugin wheel installs
//! (`pjrt_c_api.h`, beside the plugin in the set-up's cache): a C program compiled against it
//! prints them, and they are compared with Rust's.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::buffer::buffer_type;
use super::sys::*;
use crate::types::ElementType;
use core::mem::{offset_of, size_of};
use std::collections::BTreeMap;

/// Offsets of the named fields (Rust name => C name when they differ) and the struct's
/// `STRUCT_SIZE`.
macro_rules! args {
    ($map:ident, $t:ident { $($f:ident $(=> $cf:ident)?),* }) => {
        $(
            let cname = {
                #[allow(unused_variables)]
                let n = stringify!($f);
                $( let n = stringify!($cf); )?
                n
            };
            $map.insert(format!("{}.{}", stringify!($t), cname), offset_of!($t, $f));
        )*
        $map.insert(format!("{}_STRUCT_SIZE", stringify!($t)), <$t as Args>::STRUCT_SIZE);
    };
}

fn rust_layout() -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    m.insert(
        "sizeof PJRT_Extension_Base".into(),
        size_of::<PJRT_Extension_Base>(),
    );
    m.insert(
        "PJRT_Extension_Base.type".into(),
        offset_of!(PJRT_Extension_Base, type_),
    );
    m.insert(
        "PJRT_Extension_Base.next".into(),
        offset_of!(PJRT_Extension_Base, next),
    );
    m.insert(
        "PJRT_Extension_Type_FFI".into(),
        EXTENSION_TYPE_FFI as usize,
    );
    args!(
        m,
        PJRT_Api_Version {
            major_version,
            minor_version
        }
    );
    args!(m, PJRT_NamedValue { name, name_size, type_ => type, value => string_value, value_size });
    args!(m, PJRT_Error_Destroy_Args { error });
    args!(
        m,
        PJRT_Error_Message_Args {
            error,
            message,
            message_size
        }
    );
    args!(m, PJRT_Error_GetCode_Args { error, code });
    args!(m, PJRT_Plugin_Initialize_Args { extension_start });
    args!(
        m,
        PJRT_Plugin_Attributes_Args {
            attributes,
            num_attributes
        }
    );
    args!(m, PJRT_Event_Destroy_Args { event });
    args!(m, PJRT_Event_Await_Args { event });
    args!(
        m,
        PJRT_Client_Create_Args {
            create_options,
            num_options,
            kv_get_callback,
            kv_get_user_arg,
            kv_put_callback,
            kv_put_user_arg,
            client,
            kv_try_get_callback,
            kv_try_get_user_arg
        }
    );
    args!(m, PJRT_Client_Destroy_Args { client });
    args!(
        m,
        PJRT_Client_PlatformName_Args {
            client,
            platform_name,
            platform_name_size
        }
    );
    args!(
        m,
        PJRT_Client_AddressableDevices_Args {
            client,
            addressable_devices,
            num_addressable_devices
        }
    );
    args!(
        m,
        PJRT_Program {
            code,
            code_size,
            format,
            format_size
        }
    );
    args!(
        m,
        PJRT_Client_Compile_Args {
            client,
            program,
            compile_options,
            compile_options_size,
            executable
        }
    );
    args!(m, PJRT_Client_BufferFromHostBuffer_Args { client, data, type_ => type, dims, num_dims, byte_strides, num_byte_strides, host_buffer_semantics, device, memory, device_layout, done_with_host_buffer, buffer });
    args!(m, PJRT_Executable_Destroy_Args { executable });
    args!(
        m,
        PJRT_Executable_NumOutputs_Args {
            executable,
            num_outputs
        }
    );
    args!(m, PJRT_LoadedExecutable_Destroy_Args { executable });
    args!(
        m,
        PJRT_LoadedExecutable_GetExecutable_Args {
            loaded_executable,
            executable
        }
    );
    args!(
        m,
        PJRT_ExecuteOptions {
            send_callbacks,
            recv_callbacks,
            num_send_ops,
            num_recv_ops,
            launch_id,
            non_donatable_input_indices,
            num_non_donatable_input_indices,
            context,
            call_location,
            num_tasks,
            task_ids,
            incarnation_ids
        }
    );
    args!(
        m,
        PJRT_LoadedExecutable_Execute_Args {
            executable,
            options,
            argument_lists,
            num_devices,
            num_args,
            output_lists,
            device_complete_events,
            execute_device
        }
    );
    args!(m, PJRT_Buffer_Destroy_Args { buffer });
    args!(m, PJRT_Buffer_ElementType_Args { buffer, type_ => type });
    args!(
        m,
        PJRT_Buffer_Dimensions_Args {
            buffer,
            dims,
            num_dims
        }
    );
    args!(m, PJRT_Buffer_GetMemoryLayout_Args { buffer, layout });
    args!(m, PJRT_Buffer_MemoryLayout { u => tiled, type_ => type });
    args!(
        m,
        PJRT_Buffer_OnDeviceSizeInBytes_Args {
            buffer,
            on_device_size_in_bytes
        }
    );
    args!(
        m,
        PJRT_Buffer_ToHostBuffer_Args {
            src,
            host_layout,
            dst,
            dst_size,
            event
        }
    );
    args!(m, PJRT_Buffer_IsOnCpu_Args { buffer, is_on_cpu });
    args!(
        m,
        PJRT_Buffer_UnsafePointer_Args {
            buffer,
            buffer_pointer
        }
    );
    m.insert(
        "sizeof PJRT_Buffer_MemoryLayout_Tiled".into(),
        size_of::<PJRT_Buffer_MemoryLayout_Tiled>(),
    );
    m.insert(
        "PJRT_Buffer_MemoryLayout_Tiled.minor_to_major".into(),
        offset_of!(PJRT_Buffer_MemoryLayout_Tiled, minor_to_major),
    );
    m.insert(
        "PJRT_Buffer_MemoryLayout_Tiled.num_tiles".into(),
        offset_of!(PJRT_Buffer_MemoryLayout_Tiled, num_tiles),
    );
    m.insert(
        "PJRT_Buffer_MemoryLayout_Type_Tiled".into(),
        MEMORY_LAYOUT_TILED as usize,
    );
    m.insert(
        "PJRT_HostBufferSemantics_kImmutableOnlyDuringCall".into(),
        HOST_BUFFER_IMMUTABLE_ONLY_DURING_CALL as usize,
    );
    m.insert("PJRT_NamedValue_kInt64".into(), NAMED_VALUE_INT64 as usize);
    m.insert(
        "PJRT_NamedValue_kInt64List".into(),
        NAMED_VALUE_INT64_LIST as usize,
    );
    // The API table: where each entry the runner calls sits, and the prefix it reads.
    for (rust, c) in [
        (offset_of!(PJRT_Api, pjrt_api_version), "pjrt_api_version"),
        (offset_of!(PJRT_Api, error_destroy), "PJRT_Error_Destroy"),
        (offset_of!(PJRT_Api, error_message), "PJRT_Error_Message"),
        (offset_of!(PJRT_Api, error_get_code), "PJRT_Error_GetCode"),
        (
            offset_of!(PJRT_Api, plugin_initialize),
            "PJRT_Plugin_Initialize",
        ),
        (
            offset_of!(PJRT_Api, plugin_attributes),
            "PJRT_Plugin_Attributes",
        ),
        (offset_of!(PJRT_Api, event_destroy), "PJRT_Event_Destroy"),
        (offset_of!(PJRT_Api, event_await), "PJRT_Event_Await"),
        (offset_of!(PJRT_Api, client_create), "PJRT_Client_Create"),
        (offset_of!(PJRT_Api, client_destroy), "PJRT_Client_Destroy"),
        (
            offset_of!(PJRT_Api, client_platform_name),
            "PJRT_Client_PlatformName",
        ),
        (
            offset_of!(PJRT_Api, client_addressable_devices),
            "PJRT_Client_AddressableDevices",
        ),
        (offset_of!(PJRT_Api, client_compile), "PJRT_Client_Compile"),
        (
            offset_of!(PJRT_Api, client_buffer_from_host_buffer),
            "PJRT_Client_BufferFromHostBuffer",
        ),
        (
            offset_of!(PJRT_Api, executable_destroy),
            "PJRT_Executable_Destroy",
        ),
        (
            offset_of!(PJRT_Api, executable_num_outputs),
            "PJRT_Executable_NumOutputs",
        ),
        (
            offset_of!(PJRT_Api, loaded_executable_destroy),
            "PJRT_LoadedExecutable_Destroy",
        ),
        (
            offset_of!(PJRT_Api, loaded_executable_get_executable),
            "PJRT_LoadedExecutable_GetExecutable",
        ),
        (
            offset_of!(PJRT_Api, loaded_executable_execute),
            "PJRT_LoadedExecutable_Execute",
        ),
        (offset_of!(PJRT_Api, buffer_destroy), "PJRT_Buffer_Destroy"),
        (
            offset_of!(PJRT_Api, buffer_element_type),
            "PJRT_Buffer_ElementType",
        ),
        (
            offset_of!(PJRT_Api, buffer_dimensions),
            "PJRT_Buffer_Dimensions",
        ),
        (
            offset_of!(PJRT_Api, buffer_get_memory_layout),
            "PJRT_Buffer_GetMemoryLayout",
        ),
        (
            offset_of!(PJRT_Api, buffer_on_device_size_in_bytes),
            "PJRT_Buffer_OnDeviceSizeInBytes",
        ),
        (
            offset_of!(PJRT_Api, buffer_to_host_buffer),
            "PJRT_Buffer_ToHostBuffer",
        ),
        (
            offset_of!(PJRT_Api, buffer_is_on_cpu),
            "PJRT_Buffer_IsOnCpu",
        ),
        (
            offset_of!(PJRT_Api, buffer_unsafe_pointer),
            "PJRT_Buffer_UnsafePointer",
        ),
        (
            offset_of!(PJRT_Api, buffer_opaque_device_memory_data_pointer),
            "PJRT_Buffer_OpaqueDeviceMemoryDataPointer",
        ),
    ] {
        m.insert(format!("PJRT_Api.{c}"), rust);
    }
    m.insert(
        "PJRT_Api.end_of_prefix".into(),
        offset_of!(PJRT_Api, buffer_opaque_device_memory_data_pointer) + size_of::<usize>(),
    );
    // Every element type's PJRT_Buffer_Type.
    for t in ElementType::ALL {
        m.insert(
            format!("PJRT_Buffer_Type_{}", t.xla_name()),
            buffer_type(t) as usize,
        );
    }
    m
}

#[test]
fn pjrt_structs_match_the_plugins_header() {
    let rust = rust_layout();
    let mut exprs: BTreeMap<String, String> = rust
        .keys()
        .map(|key| (key.clone(), customop_c_layout::layout_expr(key)))
        .collect();
    exprs.insert(
        "PJRT_Api.end_of_prefix".into(),
        "offsetof(PJRT_Api, PJRT_Buffer_OpaqueDeviceMemoryDataPointer) + sizeof(void*)".into(),
    );
    let plugin = super::plugin::default_plugin_path().expect("a cache directory");
    let include = plugin.parent().unwrap();
    assert!(
        include.join("pjrt_c_api.h").is_file(),
        "{} is missing: run `bash scripts/setup.sh` (it installs the PJRT plugin and its header)",
        include.join("pjrt_c_api.h").display()
    );
    let c_layout = customop_c_layout::c_values(include, "pjrt_c_api.h", "pjrt-layout", &exprs);
    let mismatches: Vec<String> = rust
        .iter()
        .filter(|(k, v)| c_layout.get(*k) != Some(v))
        .map(|(k, v)| format!("{k}: Rust {v}, header {:?}", c_layout.get(k)))
        .collect();
    assert!(mismatches.is_empty(), "{mismatches:#?}");
    assert_eq!(rust.len(), c_layout.len());
    // The prefix the runner reads ends where the header's entry does.
    assert_eq!(rust["PJRT_Api.end_of_prefix"], API_PREFIX_SIZE);
}
