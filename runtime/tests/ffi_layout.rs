//! The Rust description of the XLA FFI C ABI (`customop::ffi::abi`) has the sizes and field
//! offsets of the real header that jaxlib installs: a C program compiled against it prints
//! them, and they are compared with Rust's `size_of`/`offset_of!`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use core::mem::{offset_of, size_of};
use customop::__private::ffi::abi::*;
use customop::ElementType;
use std::collections::BTreeMap;

macro_rules! layout {
    ($map:ident, $t:ident { $($f:ident $(=> $cf:ident)?),* }) => {
        $map.insert(format!("sizeof {}", stringify!($t)), size_of::<$t>());
        $(
            let cname = {
                #[allow(unused_variables)]
                let n = stringify!($f);
                $( let n = stringify!($cf); )?
                n
            };
            $map.insert(format!("{}.{}", stringify!($t), cname), offset_of!($t, $f));
        )*
    };
}

fn rust_layout() -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    // XLA_FFI_Api is described up to its first function pointer only (its size is not ours).
    layout!(m, XLA_FFI_InternalExtension { struct_size, type_ => type, next });
    layout!(
        m,
        XLA_FFI_Api_Version {
            struct_size,
            extension_start,
            major_version,
            minor_version
        }
    );
    layout!(
        m,
        XLA_FFI_Metadata {
            struct_size,
            api_version,
            traits,
            state_type_id
        }
    );
    layout!(
        m,
        XLA_FFI_Metadata_Extension {
            extension_base,
            metadata
        }
    );
    layout!(
        m,
        XLA_FFI_Buffer {
            struct_size,
            extension_start,
            dtype,
            data,
            rank,
            dims
        }
    );
    layout!(
        m,
        XLA_FFI_Args {
            struct_size,
            extension_start,
            size,
            types,
            args
        }
    );
    layout!(
        m,
        XLA_FFI_Rets {
            struct_size,
            extension_start,
            size,
            types,
            rets
        }
    );
    layout!(m, XLA_FFI_ByteSpan { ptr, len });
    layout!(m, XLA_FFI_Scalar { dtype, value });
    layout!(m, XLA_FFI_Array { dtype, size, data });
    layout!(
        m,
        XLA_FFI_Attrs {
            struct_size,
            extension_start,
            size,
            types,
            names,
            attrs
        }
    );
    layout!(
        m,
        XLA_FFI_Error_Create_Args {
            struct_size,
            extension_start,
            message,
            errc
        }
    );
    layout!(
        m,
        XLA_FFI_CallFrame {
            struct_size,
            extension_start,
            api,
            ctx,
            stage,
            args,
            rets,
            attrs,
            future
        }
    );
    layout!(m, XLA_FFI_Api { struct_size, extension_start, api_version, internal_api, error_create => XLA_FFI_Error_Create });
    m.remove("sizeof XLA_FFI_Api");
    // The thread pool's arguments, and the API table's fields up to its functions.
    layout!(
        m,
        XLA_FFI_Error_Destroy_Args {
            struct_size,
            extension_start,
            error
        }
    );
    layout!(
        m,
        XLA_FFI_ThreadPool_Schedule_Args {
            struct_size,
            extension_start,
            ctx,
            task,
            data
        }
    );
    layout!(
        m,
        XLA_FFI_ThreadPool_NumThreads_Args {
            struct_size,
            extension_start,
            ctx,
            num_threads
        }
    );
    layout!(
        m,
        XLA_FFI_TypeInfo {
            struct_size,
            extension_start,
            deleter
        }
    );
    layout!(
        m,
        XLA_FFI_Type_Register_Args {
            struct_size,
            extension_start,
            name,
            type_id,
            type_info
        }
    );
    // The stream of a CUDA handler's call.
    layout!(
        m,
        XLA_FFI_Stream_Get_Args {
            struct_size,
            extension_start,
            ctx,
            stream
        }
    );
    // Set and Get share one layout: both are compared with the header.
    let mut state = BTreeMap::new();
    layout!(
        state,
        XLA_FFI_State_Args {
            struct_size,
            extension_start,
            ctx,
            stage,
            type_id,
            state
        }
    );
    for (k, v) in state {
        m.insert(k.replace("XLA_FFI_State_Args", "XLA_FFI_State_Set_Args"), v);
        m.insert(k.replace("XLA_FFI_State_Args", "XLA_FFI_State_Get_Args"), v);
    }
    layout!(
        m,
        XLA_FFI_Error_GetDetails_Args {
            struct_size,
            extension_start,
            error,
            message,
            errc
        }
    );
    // The 0.2 registration arguments (the runner's plugin names their size, 84, in its own
    // test) lay out their fields as 0.5 does up to the bundle, whose first four entries 0.5 kept.
    for (field, offset) in [
        ("name", offset_of!(XLA_FFI_Handler_Register_Args_V2, name)),
        (
            "platform",
            offset_of!(XLA_FFI_Handler_Register_Args_V2, platform),
        ),
        (
            "bundle",
            offset_of!(XLA_FFI_Handler_Register_Args_V2, bundle),
        ),
    ] {
        m.insert(format!("XLA_FFI_Handler_Register_Args.{field}"), offset);
    }
    // 0.4 and later: a fifth stage, `record`, then `traits` (92 bytes in all).
    m.insert(
        "XLA_FFI_Handler_Register_Args.traits".into(),
        offset_of!(XLA_FFI_Handler_Register_Args, traits),
    );
    m.insert(
        "XLA_FFI_Handler_Register_Args_STRUCT_SIZE".into(),
        XLA_FFI_Handler_Register_Args::STRUCT_SIZE,
    );
    for (i, stage) in ["instantiate", "prepare", "initialize", "execute", "record"]
        .into_iter()
        .enumerate()
    {
        m.insert(
            format!("XLA_FFI_Handler_Bundle.{stage}"),
            i * size_of::<Option<XLA_FFI_Handler>>(),
        );
    }
    for (field, offset) in [
        (
            "XLA_FFI_Error_GetDetails",
            offset_of!(XLA_FFI_Api_ThreadPool, error_get_details),
        ),
        (
            "XLA_FFI_Handler_Register",
            offset_of!(XLA_FFI_Api_ThreadPool, handler_register),
        ),
        (
            "XLA_FFI_Stream_Get",
            offset_of!(XLA_FFI_Api_ThreadPool, stream_get),
        ),
        (
            "XLA_FFI_Type_Register",
            offset_of!(XLA_FFI_Api_ThreadPool, type_register),
        ),
        (
            "XLA_FFI_State_Set",
            offset_of!(XLA_FFI_Api_ThreadPool, state_set),
        ),
        (
            "XLA_FFI_Error_Destroy",
            offset_of!(XLA_FFI_Api_ThreadPool, error_destroy),
        ),
        (
            "XLA_FFI_State_Get",
            offset_of!(XLA_FFI_Api_ThreadPool, state_get),
        ),
        (
            "XLA_FFI_ThreadPool_Schedule",
            offset_of!(XLA_FFI_Api_ThreadPool, thread_pool_schedule),
        ),
        (
            "XLA_FFI_ThreadPool_NumThreads",
            offset_of!(XLA_FFI_Api_ThreadPool, thread_pool_num_threads),
        ),
    ] {
        m.insert(format!("XLA_FFI_Api.{field}"), offset);
    }
    // The sizes XLA writes into `struct_size`, which the handler checks.
    m.insert(
        "XLA_FFI_CallFrame_STRUCT_SIZE".into(),
        XLA_FFI_CallFrame_STRUCT_SIZE,
    );
    m.insert("XLA_FFI_Args_STRUCT_SIZE".into(), XLA_FFI_Args_STRUCT_SIZE);
    m.insert("XLA_FFI_Rets_STRUCT_SIZE".into(), XLA_FFI_Rets_STRUCT_SIZE);
    m.insert(
        "XLA_FFI_Attrs_STRUCT_SIZE".into(),
        XLA_FFI_Attrs_STRUCT_SIZE,
    );
    m.insert(
        "XLA_FFI_Buffer_STRUCT_SIZE".into(),
        XLA_FFI_Buffer_STRUCT_SIZE,
    );
    // Each element type's `XLA_FFI_DataType` code, printed from the header's enum constant.
    for t in ElementType::ALL {
        m.insert(
            format!("XLA_FFI_DataType_{}", t.xla_name()),
            t.xla_code() as usize,
        );
    }
    m
}

#[test]
fn abi_structs_match_the_installed_header() {
    let rust = rust_layout();
    let mut exprs: BTreeMap<String, String> = rust
        .keys()
        .map(|key| (key.clone(), customop_c_layout::layout_expr(key)))
        .collect();
    exprs.insert("enum".into(), "sizeof(XLA_FFI_DataType)".into());
    // The harness's venv has jaxlib and its headers.
    let include = customop_xla::Harness::get().ffi_include_dir();
    let c_layout =
        customop_c_layout::c_values(&include, "xla/ffi/api/c_api.h", "ffi-layout", &exprs);
    assert_eq!(c_layout["enum"], 4, "enums are 32-bit");
    for (k, v) in &rust {
        assert_eq!(
            c_layout.get(k),
            Some(v),
            "{k}: C says {:?}, Rust {v}",
            c_layout.get(k)
        );
    }
}

/// FFI API 0.3 (jaxlib 0.10's header, in the oldest-jax venv): four stages in the bundle,
/// `traits` at 80, 84 bytes (what [`XLA_FFI_Handler_Register_Args_V2`] describes, and what the
/// plugins of tables 0.2 and 0.3 ask for), and the state functions' arguments with `stage`.
#[test]
fn the_0_3_header_registers_four_stages_and_sets_state_by_stage() {
    let include = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../target/jax-oldest-venv/lib/python3.12/site-packages/jaxlib/include");
    assert!(
        include.join("xla/ffi/api/c_api.h").is_file(),
        "{} has no xla/ffi/api/c_api.h: run `bash scripts/setup.sh` (it installs the oldest-jax \
         venv)",
        include.display()
    );
    let mut rust = BTreeMap::new();
    rust.insert("XLA_FFI_API_MINOR".to_string(), 3);
    rust.insert(
        "XLA_FFI_Handler_Register_Args.bundle".to_string(),
        offset_of!(XLA_FFI_Handler_Register_Args_V2, bundle),
    );
    rust.insert(
        "XLA_FFI_Handler_Register_Args.traits".to_string(),
        offset_of!(XLA_FFI_Handler_Register_Args_V2, traits),
    );
    rust.insert(
        "XLA_FFI_Handler_Register_Args_STRUCT_SIZE".to_string(),
        XLA_FFI_Handler_Register_Args_V2::STRUCT_SIZE,
    );
    rust.insert(
        "sizeof XLA_FFI_Handler_Bundle".to_string(),
        size_of::<[Option<XLA_FFI_Handler>; 4]>(),
    );
    rust.insert(
        "XLA_FFI_State_Set_Args.stage".to_string(),
        offset_of!(XLA_FFI_State_Args, stage),
    );
    rust.insert(
        "XLA_FFI_State_Set_Args.state".to_string(),
        offset_of!(XLA_FFI_State_Args, state),
    );
    let exprs: BTreeMap<String, String> = rust
        .keys()
        .map(|key| (key.clone(), customop_c_layout::layout_expr(key)))
        .collect();
    let c_layout =
        customop_c_layout::c_values(&include, "xla/ffi/api/c_api.h", "ffi-layout-0.3", &exprs);
    assert_eq!(c_layout, rust);
}
