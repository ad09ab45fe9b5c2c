//! The runner on every PJRT plugin customop knows (PJRT 0.81, 0.106 and 0.115; XLA FFI tables
//! 0.2, 0.3 and 0.4), with one binary: `plugin_check`, run once a plugin (two builds of XLA are
//! never loaded in one process). Each plugin reports what `plugins.txt` says of it, runs the
//! seed program, builds `#[state]` once per call site of each executable (compiled, and loaded
//! from the compile cache), and loads a cached executable rather than compiling.

use super::*;
use customop::pjrt::KnownPlugin;
use serde_json::Value;

fn check(plugin: &KnownPlugin, cache: &std::path::Path) -> Value {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_plugin_check"))
        .args(["--plugin", &plugin.spec(), "--library"])
        .arg(example_kernels())
        .arg("--cache")
        .arg(cache)
        .output()
        .expect("run plugin_check");
    assert!(
        out.status.success(),
        "{}: {}",
        plugin.spec(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("plugin_check prints JSON")
}

#[test]
fn every_known_plugin_runs_the_seed_builds_state_per_call_site_and_caches_compiles() {
    for plugin in KnownPlugin::all() {
        let cache = std::env::temp_dir().join(format!(
            "customop-plugin-cache-{}-{}",
            plugin.name,
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&cache);
        let spec = plugin.spec();
        let lo = plugin.stablehlo.0.to_vec();
        let hi = plugin.stablehlo.1.to_vec();
        let ffi = [plugin.xla_ffi.0, plugin.xla_ffi.1];
        // A first process compiles; a second finds every program in the cache.
        for (run, cached) in [(1, false), (2, true)] {
            let got = check(plugin, &cache);
            let what = format!("{spec}, process {run}: {got}");
            assert_eq!(
                got["pjrt"],
                serde_json::json!([plugin.pjrt.0, plugin.pjrt.1]),
                "{what}"
            );
            assert_eq!(got["stablehlo"], serde_json::json!([lo, hi]), "{what}");
            assert_eq!(got["xla_ffi"], serde_json::json!(ffi), "{what}");
            assert_eq!(got["seed"], serde_json::json!([3, 5, -2]), "{what}");
            assert_eq!(got["seed_from_cache"], cached, "{what}");
            let state = got["state"].as_array().expect("two compiles");
            // Within a process, the second compile of the windowed program is a cache hit.
            for (i, s) in state.iter().enumerate() {
                assert_eq!(s["from_cache"], cached || i == 1, "{what}");
                assert_eq!(s["built_at_compile"], serde_json::json!([1, 1]), "{what}");
                assert_eq!(
                    s["built_after_100_runs"],
                    serde_json::json!([1, 1]),
                    "{what}"
                );
                assert_eq!(s["calls"], 100, "{what}");
                assert_eq!(s["y"], state[0]["y"], "{what}");
            }
        }
        std::fs::remove_dir_all(&cache).unwrap();
    }
}
