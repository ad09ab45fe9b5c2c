#![allow(clippy::unwrap_used, clippy::expect_used)]
use super::*;
use std::process::Command;

#[test]
fn the_installed_plugin_is_the_pinned_one_and_takes_our_registration_struct() {
    let plugin = Plugin::installed().unwrap();
    assert_eq!(plugin.api_version(), (0, 81));
    assert_eq!(plugin.stablehlo_current_version(), Some(&[1, 13, 3][..]));
    assert_eq!(plugin.stablehlo_minimum_version(), Some(&[0, 9, 0][..]));
    assert!(plugin.has_ffi());
    // Given struct_size 0, the plugin names the size it reads: ours.
    // SAFETY: the pinned plugin checks struct_size first (what this test shows).
    let e = unsafe { plugin.probe_register_handler_size() }
        .unwrap_err()
        .to_string();
    let want = format!(
        "expected {}, got 0",
        sys::PJRT_FFI_Register_Handler_Args::STRUCT_SIZE
    );
    assert!(e.contains(&want), "{e}");
    // The same plugin for the same path, once per process, loaded safely or not.
    // SAFETY: the installed plugin, verified above.
    let again = unsafe { Plugin::load(plugin.path()) }.unwrap();
    assert!(std::ptr::eq(plugin, again));
    assert!(std::ptr::eq(plugin, Plugin::installed().unwrap()));
}

#[test]
fn the_plugins_xla_ffi_table_is_api_0_2_and_takes_our_stage_and_state_structs() {
    use crate::ffi::abi::*;
    let plugin = Plugin::installed().unwrap();
    // Found through the registration probe: the plugin's own table, version 0.2.
    let t = plugin
        .xla_api_for_tests()
        .expect("the plugin's XLA FFI table");
    assert_eq!(
        (
            t.head.api_version.major_version,
            t.head.api_version.minor_version
        ),
        (0, 2)
    );
    assert!(t.head.struct_size >= size_of::<XLA_FFI_Api_ThreadPool>());
    // Given struct_size 0, each function names the size it reads: ours.
    // SAFETY: the pinned plugin's functions check struct_size first (what this test shows).
    let messages = unsafe { plugin.probe_xla_struct_sizes() };
    let want = [
        (
            "XLA_FFI_Handler_Register",
            XLA_FFI_Handler_Register_Args_V2::STRUCT_SIZE,
        ),
        ("XLA_FFI_State_Set_Args", size_of::<XLA_FFI_State_Args_V2>()),
        ("XLA_FFI_State_Get_Args", size_of::<XLA_FFI_State_Args_V2>()),
    ];
    assert_eq!(messages.len(), want.len(), "{messages:?}");
    for (m, (name, size)) in messages.iter().zip(want) {
        assert!(
            m.contains(name) && m.contains(&format!("expected {size}, got 0")),
            "{m}"
        );
    }
    assert_eq!(XLA_FFI_Handler_Register_Args_V2::STRUCT_SIZE, 84);
    // A null handler is refused before the plugin sees it, on either path.
    for staged in [false, true] {
        // SAFETY: null is refused before anything is registered or called.
        let e = unsafe {
            if staged {
                plugin.register_op_handler("customop.test_null", core::ptr::null_mut())
            } else {
                plugin.register_handler("customop.test_null", core::ptr::null_mut())
            }
        }
        .unwrap_err();
        assert!(e.to_string().contains("is null"), "{e}");
    }
}

#[test]
fn a_configured_path_that_is_wrong_is_an_error_never_a_fallback() {
    // SAFETY: neither path is loaded: one does not exist, the other is no library.
    let e = unsafe { Plugin::locate_from(Some("/nonexistent/plugin.so".into())) }.unwrap_err();
    assert_eq!(
        e.to_string(),
        "CUSTOMOP_PJRT_PLUGIN names /nonexistent/plugin.so: no such file"
    );
    let not_a_library = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
    // SAFETY: as above.
    let e = unsafe { Plugin::locate_from(Some(not_a_library.into())) }.unwrap_err();
    assert!(matches!(e, RunError::PluginEnv { .. }), "{e:?}");
    assert!(e.to_string().contains("Cargo.toml: cannot load"), "{e}");
}

/// Builds a shared library from C source against the plugin's header, in a fresh directory.
fn c_library(name: &str, source: &str, defines: &[&str]) -> PathBuf {
    let include = default_plugin_path()
        .unwrap()
        .parent()
        .unwrap()
        .to_path_buf();
    let dir = std::env::temp_dir().join(format!("customop-fake-plugins-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let c = dir.join(format!("{name}.c"));
    let so = dir.join(format!("{name}.so"));
    std::fs::write(&c, source).unwrap();
    let out = Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&so)
        .arg(&c)
        .arg("-I")
        .arg(&include)
        .args(defines)
        .output()
        .expect("a C compiler (cc)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    so
}

const FAKE_PLUGIN: &str = r#"
#include "pjrt_c_api.h"
static PJRT_Api api;
static PJRT_Error* nothing(void* args) { (void)args; return 0; }
const PJRT_Api* GetPjrtApi(void) {
  api.struct_size = PJRT_Api_STRUCT_SIZE;
  api.pjrt_api_version.struct_size = PJRT_Api_Version_STRUCT_SIZE;
  api.pjrt_api_version.major_version = MAJOR;
  api.pjrt_api_version.minor_version = MINOR;
#ifndef NO_AWAIT
  api.PJRT_Event_Await = (PJRT_Event_Await*)nothing;
#endif
  api.PJRT_Event_Destroy = (PJRT_Event_Destroy*)nothing;
  api.PJRT_Buffer_Destroy = (PJRT_Buffer_Destroy*)nothing;
  api.PJRT_Error_Destroy = (PJRT_Error_Destroy*)nothing;
  return &api;
}
"#;

/// Plugins of another API version than the layout test checked, or without the entry points
/// the runner releases things with, are refused before any call beyond `GetPjrtApi`.
#[test]
fn only_the_checked_api_versions_and_complete_plugins_are_loaded() {
    for (name, defines, needle) in [
        (
            "v0_80",
            &["-DMAJOR=0", "-DMINOR=80"][..],
            "it implements PJRT API 0.80, but this runner's structs were checked against PJRT \
             API 0.81 only",
        ),
        (
            "v0_82",
            &["-DMAJOR=0", "-DMINOR=82"][..],
            "it implements PJRT API 0.82",
        ),
        ("v1_81", &["-DMAJOR=1", "-DMINOR=81"][..], "PJRT API 1.81"),
        (
            "no_await",
            &["-DMAJOR=0", "-DMINOR=81", "-DNO_AWAIT"][..],
            "it does not implement PJRT_Event_Await",
        ),
    ] {
        let so = c_library(name, FAKE_PLUGIN, defines);
        // SAFETY: the fake plugin's GetPjrtApi returns a static table; it is refused before
        // anything else in it is called.
        let e = unsafe { Plugin::load(&so) }.unwrap_err();
        assert!(matches!(e, RunError::Plugin { .. }), "{name}: {e:?}");
        assert!(e.to_string().contains(needle), "{name}: {e}");
    }
    let so = c_library("not_a_plugin", "int answer(void) { return 42; }\n", &[]);
    // SAFETY: a library with no initialisers and no GetPjrtApi.
    let e = unsafe { Plugin::load(&so) }.unwrap_err();
    assert!(
        e.to_string().contains("not a PJRT plugin (no GetPjrtApi)"),
        "{e}"
    );
}

/// A plugin file the unsafe `Plugin::load` loaded (under its own name or another, a hard
/// link) is never taken as the verified plugin: its bytes were never hashed. A file of another
/// hash is refused before it is loaded.
#[test]
fn a_plugin_file_loaded_unverified_is_never_marked_verified() {
    let installed = default_plugin_path().unwrap();
    let dir = std::env::temp_dir().join(format!("customop-plugin-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let copy = dir.join("copy.so");
    std::fs::copy(&installed, &copy).unwrap();
    let link = dir.join("link.so");
    std::fs::hard_link(&copy, &link).unwrap();
    // SAFETY: a byte-for-byte copy of the installed plugin, which loads as it does.
    let p = unsafe { Plugin::load(&copy) }.unwrap();
    assert!(!p.is_verified());
    for path in [&copy, &link] {
        let e = Plugin::verified_at(path).unwrap_err().to_string();
        assert!(e.contains("already loaded, unverified"), "{e}");
    }
    assert!(!p.is_verified());
    let other = dir.join("other.so");
    std::fs::write(&other, b"not the plugin").unwrap();
    let e = Plugin::verified_at(&other).unwrap_err().to_string();
    assert!(e.contains("its sha256 is "), "{e}");
    // The installed plugin itself is verified, under its real path.
    let v = Plugin::installed().unwrap();
    assert!(v.is_verified());
    assert_eq!(v.path(), installed.canonicalize().unwrap());
    std::fs::remove_dir_all(&dir).unwrap();
}
