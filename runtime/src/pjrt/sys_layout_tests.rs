//! The Rust description of the PJRT C API (`sys.rs`) has the sizes, field
//! offsets, `*_STRUCT_SIZE` values and enum values of the header the plugin wheel installs
//! (`pjrt_c_api.h`, beside the plugin in the set-up's cache): a C program compiled against it
//! prints them, and they are compared with Rust's.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::KnownPlugin;
use super::buffer::buffer_type;
use super::plugin::API_VERSIONS;
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
        PJRT_Executable_Serialize_Args {
            executable,
            serialized_bytes,
            serialized_bytes_size,
            serialized_executable,
            serialized_executable_deleter
        }
    );
    args!(
        m,
        PJRT_Executable_DeserializeAndLoad_Args {
            client,
            serialized_executable,
            serialized_executable_size,
            loaded_executable,
            overridden_serialized_compile_options,
            overridden_serialized_compile_options_size
        }
    );
    args!(m, PJRT_Client_TopologyDescription_Args { client, topology });
    args!(
        m,
        PJRT_TopologyDescription_Serialize_Args {
            topology,
            serialized_bytes,
            serialized_bytes_size,
            serialized_topology,
            serialized_topology_deleter
        }
    );
    args!(m, PJRT_ExecuteContext_Create_Args { context });
    args!(m, PJRT_ExecuteContext_Destroy_Args { context });
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
    // The API table: where every slot of 0.81's sits, and the prefix the runner reads.
    for (c, rust) in API_SLOTS {
        m.insert(format!("PJRT_Api.{c}"), *rust);
    }
    m.insert("PJRT_Api.end_of_prefix".into(), API_PREFIX_SIZE);
    m.insert("PJRT_Api_STRUCT_SIZE".into(), API_PREFIX_SIZE);
    m.insert("PJRT_API_MAJOR".into(), API_VERSIONS.0 as usize);
    m.insert("PJRT_API_MINOR".into(), *API_VERSIONS.1.start() as usize);
    // Every element type's PJRT_Buffer_Type.
    for t in ElementType::ALL {
        m.insert(
            format!("PJRT_Buffer_Type_{}", t.xla_name()),
            buffer_type(t) as usize,
        );
    }
    m
}

/// The C values of `keys` in the PJRT header in `include`.
fn c_layout_of(
    include: &std::path::Path,
    keys: &BTreeMap<String, usize>,
    dir: &str,
) -> BTreeMap<String, usize> {
    let mut exprs: BTreeMap<String, String> = keys
        .keys()
        .map(|key| (key.clone(), customop_c_layout::layout_expr(key)))
        .collect();
    exprs.insert(
        "PJRT_Api.end_of_prefix".into(),
        "offsetof(PJRT_Api, PJRT_LoadedExecutable_GetDeviceAssignment) + sizeof(void*)".into(),
    );
    assert!(
        include.join("pjrt_c_api.h").is_file(),
        "{} is missing: run `bash scripts/setup.sh` (it installs the PJRT headers)",
        include.join("pjrt_c_api.h").display()
    );
    customop_c_layout::c_values(include, "pjrt_c_api.h", dir, &exprs)
}

/// PJRT 0.81's header (the `xla-cpu-pjrt` 0.0.1 wheel's): every size, offset, `STRUCT_SIZE`
/// and enum value in `sys.rs` is the header's.
#[test]
fn pjrt_structs_match_the_0_81_header() {
    let rust = rust_layout();
    let plugin = KnownPlugin::find("xla-cpu-pjrt==0.0.1").unwrap();
    let include = plugin.path().expect("a cache directory");
    let c_layout = c_layout_of(include.parent().unwrap(), &rust, "pjrt-layout-0.81");
    let mismatches: Vec<String> = rust
        .iter()
        .filter(|(k, v)| c_layout.get(*k) != Some(v))
        .map(|(k, v)| format!("{k}: Rust {v}, header {:?}", c_layout.get(k)))
        .collect();
    assert!(mismatches.is_empty(), "{mismatches:#?}");
    assert_eq!(rust.len(), c_layout.len());
    // The prefix the runner reads is 0.81's whole table.
    assert_eq!(rust["PJRT_Api.end_of_prefix"], API_PREFIX_SIZE);
    assert_eq!(c_layout["PJRT_Api_STRUCT_SIZE"], API_PREFIX_SIZE);
}

/// PJRT 0.114's header (the one the `pypjrt` 0.1.1 sdist vendors; the 0.115 plugin's table is
/// its size, 1144 bytes): every field and slot `sys.rs` describes is where 0.81 had it, enum
/// values are the same, and each struct is at least as long: 0.81's structs are a prefix of
/// 0.114's, which is what lets one runner read both.
#[test]
fn pjrt_0_81_structs_are_a_prefix_of_the_0_114_header() {
    let rust = rust_layout();
    let include = super::cache_dir()
        .expect("a cache directory")
        .join("pjrt-headers-0.114");
    let c_layout = c_layout_of(&include, &rust, "pjrt-layout-0.114");
    assert_eq!(c_layout["PJRT_API_MINOR"], 114);
    assert_eq!(c_layout["PJRT_Api_STRUCT_SIZE"], 1144);
    let mut mismatches = Vec::new();
    for (k, v) in &rust {
        let c = c_layout.get(k).copied();
        let ok = if k == "PJRT_API_MINOR" {
            true
        } else if k.ends_with("_STRUCT_SIZE") || k.starts_with("sizeof ") {
            c.is_some_and(|c| c >= *v)
        } else {
            c == Some(*v)
        };
        if !ok {
            mismatches.push(format!("{k}: Rust (0.81) {v}, 0.114 header {c:?}"));
        }
    }
    assert!(mismatches.is_empty(), "{mismatches:#?}");
}
