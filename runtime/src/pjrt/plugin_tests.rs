#![allow(clippy::unwrap_used, clippy::expect_used)]
use super::*;
use crate::pjrt::private_dir::PrivateDir;
use std::os::unix::fs::PermissionsExt;
use std::process::Command;

#[test]
fn the_installed_plugin_is_the_default_one_and_takes_our_registration_struct() {
    let plugin = Plugin::installed().unwrap();
    let known = KnownPlugin::default_plugin();
    assert_eq!(plugin.known_as(), Some(known));
    assert_eq!(plugin.api_version(), known.pjrt);
    assert_eq!(plugin.api_version(), (0, 115));
    assert_eq!(
        plugin.stablehlo_current_version(),
        Some(&known.stablehlo.1[..])
    );
    assert_eq!(
        plugin.stablehlo_minimum_version(),
        Some(&known.stablehlo.0[..])
    );
    assert_eq!(plugin.describe(), "lammps-jax-pjrt-cpu==0.11.2");
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
fn the_plugins_xla_ffi_table_is_api_0_4_and_takes_our_stage_and_state_structs() {
    use crate::ffi::abi::*;
    let plugin = Plugin::installed().unwrap();
    // Found through the registration probe: the plugin's own table, version 0.4.
    let t = plugin
        .xla_api_for_tests()
        .expect("the plugin's XLA FFI table");
    assert_eq!(
        (
            t.head.api_version.major_version,
            t.head.api_version.minor_version
        ),
        (0, 4)
    );
    assert_eq!(
        plugin.xla_ffi_version(),
        Some(KnownPlugin::default_plugin().xla_ffi)
    );
    assert!(t.head.struct_size >= size_of::<XLA_FFI_Api_ThreadPool>());
    // Given struct_size 0, each function names the size it reads: ours (the 0.4 table takes
    // the 84-byte registration of 0.2 and 0.3 too, and asks for at least that).
    // SAFETY: the plugin's functions check struct_size first (what this test shows).
    let messages = unsafe { plugin.probe_xla_struct_sizes() };
    let want = [
        (
            "XLA_FFI_Handler_Register",
            XLA_FFI_Handler_Register_Args_V2::STRUCT_SIZE,
        ),
        ("XLA_FFI_State_Set_Args", size_of::<XLA_FFI_State_Args>()),
        ("XLA_FFI_State_Get_Args", size_of::<XLA_FFI_State_Args>()),
    ];
    assert_eq!(messages.len(), want.len(), "{messages:?}");
    for (m, (name, size)) in messages.iter().zip(want) {
        assert!(
            m.contains(name) && m.contains(&format!("expected {size}, got 0")),
            "{m}"
        );
    }
    assert_eq!(XLA_FFI_Handler_Register_Args_V2::STRUCT_SIZE, 84);
    assert_eq!(XLA_FFI_Handler_Register_Args::STRUCT_SIZE, 92);
    assert_eq!(size_of::<XLA_FFI_State_Args>(), 48);
    assert_eq!(size_of::<XLA_FFI_State_Args_V2>(), 40);
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

/// Builds a shared library from C source against the PJRT 0.81 header (the `xla-cpu-pjrt`
/// 0.0.1 wheel's, which the set-up installs beside that plugin), in a fresh directory.
fn c_library(name: &str, source: &str, defines: &[&str]) -> PathBuf {
    let include = KnownPlugin::find("xla-cpu-pjrt==0.0.1")
        .unwrap()
        .path()
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

/// Plugins of an API version the runner does not take, or without the entry points the
/// runner releases things with, are refused before any call beyond `GetPjrtApi`; a version it
/// takes goes on (to `PJRT_Plugin_Initialize`, which these fakes lack).
#[test]
fn only_the_api_versions_the_runner_takes_and_complete_plugins_are_loaded() {
    for (name, defines, needle) in [
        (
            "v0_80",
            &["-DMAJOR=0", "-DMINOR=80"][..],
            "it implements PJRT API 0.80, which this runner does not describe; this runner \
             takes PJRT API 0.81 to 0.115",
        ),
        (
            "v0_116",
            &["-DMAJOR=0", "-DMINOR=116"][..],
            "it implements PJRT API 0.116, newer than any whose structs this runner was \
             checked against",
        ),
        ("v1_81", &["-DMAJOR=1", "-DMINOR=81"][..], "PJRT API 1.81"),
        (
            "no_await",
            &["-DMAJOR=0", "-DMINOR=81", "-DNO_AWAIT"][..],
            "it does not implement PJRT_Event_Await",
        ),
        (
            "v0_97",
            &["-DMAJOR=0", "-DMINOR=97"][..],
            "the plugin does not implement PJRT_Plugin_Initialize",
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
    let known = KnownPlugin::default_plugin();
    for path in [&copy, &link] {
        let e = Plugin::verified_at(path, known).unwrap_err().to_string();
        assert!(e.contains("already loaded, unverified"), "{e}");
    }
    assert!(!p.is_verified());
    let other = dir.join("other.so");
    std::fs::write(&other, b"not the plugin").unwrap();
    let e = Plugin::verified_at(&other, known).unwrap_err().to_string();
    assert!(e.contains("its sha256 is "), "{e}");
    // A stamp whose identity is not the file's is not taken: the file is hashed.
    let meta = std::fs::metadata(&other).unwrap();
    let folder = PrivateDir::open(&dir, true).unwrap();
    let stale = identity(&meta).replace("size 14", "size 15");
    std::fs::write(
        stamp_path(&other),
        stamp_text(&folder, known.sha256, &stale),
    )
    .unwrap();
    let e = Plugin::verified_at(&other, known).unwrap_err().to_string();
    assert!(e.contains("its sha256 is "), "{e}");
    // A stamp for this very file, forged by whoever can write the folder but cannot read its
    // key (the plain text of an earlier format, another key's code), is not taken either.
    let said = format!("sha256 {} {}", known.sha256, identity(&meta));
    let elsewhere = dir.join("elsewhere");
    let other_key = PrivateDir::open(&elsewhere, true).unwrap();
    for forged in [
        format!("{said}\n"),
        stamp_text(&other_key, known.sha256, &identity(&meta)),
        format!("{said} hmac {}\n", "0".repeat(64)),
    ] {
        std::fs::write(stamp_path(&other), &forged).unwrap();
        let e = Plugin::verified_at(&other, known).unwrap_err().to_string();
        assert!(e.contains("its sha256 is "), "{forged}: {e}");
    }
    // Nor is a stamp in a folder that others can write, however it was made.
    std::fs::write(
        stamp_path(&other),
        stamp_text(&folder, known.sha256, &identity(&meta)),
    )
    .unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let e = Plugin::verified_at(&other, known).unwrap_err().to_string();
    assert!(e.contains("its sha256 is "), "{e}");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    // The installed plugin itself is verified, under its real path, and stamped, under the
    // key of its folder.
    let v = Plugin::installed().unwrap();
    assert!(v.is_verified());
    assert_eq!(v.path(), installed.canonicalize().unwrap());
    let stamp = std::fs::read_to_string(stamp_path(&installed)).unwrap();
    let installed_folder = PrivateDir::open(installed.parent().unwrap(), false).unwrap();
    assert_eq!(
        stamp,
        stamp_text(
            &installed_folder,
            known.sha256,
            &identity(&std::fs::metadata(&installed).unwrap())
        )
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
