//! Runs the runner's checks on one PJRT plugin customop knows, in a process of its own (two
//! builds of XLA are never loaded in one process): what the plugin reports, the seed program,
//! `#[state]` built once per call site, the compile cache, and a program given as a portable
//! artifact (a `jax.export` serialization, say) with its expected first output.
//!
//! `plugin_check --plugin NAME==VERSION --library LIB.so --cache DIR [--artifact FILE]`
//! prints one JSON object; exits 1 with the error on stderr when a step fails. The test
//! `examples/tests/e2e/runner/plugins.rs` runs it for every known plugin and checks what it
//! prints.

use customop::pjrt::{Client, HostTensor, KnownPlugin, Program};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The example library's count of windows of `n` taps built (`what` = `builds`) or applied
/// (`calls`) in this process.
fn count(lib: &Path, what: &str, n: i64) -> Result<i64, String> {
    let symbol = format!("example_state_{what}\0");
    // SAFETY: the example kernel library, already loaded by the runner (this only finds it
    // again), and its counters' signature as the kernel crate declares it.
    unsafe {
        let l = libloading::Library::new(lib).map_err(|e| e.to_string())?;
        let f: libloading::Symbol<'_, extern "C" fn(i64) -> i64> =
            l.get(symbol.as_bytes()).map_err(|e| e.to_string())?;
        Ok(f(n))
    }
}

fn check(
    plugin: &str,
    library: &Path,
    cache: &Path,
    artifact: Option<&Path>,
) -> Result<serde_json::Value, String> {
    let known = KnownPlugin::find(plugin).ok_or_else(|| format!("no known plugin `{plugin}`"))?;
    let e = |e: customop::pjrt::RunError| e.to_string();
    let client = Client::known(known, 1)
        .map_err(e)?
        .with_compile_cache(Some(cache.to_path_buf()));
    // SAFETY: the example kernel library, built with customop.
    unsafe { client.register_library(library) }.map_err(e)?;
    let p = client.plugin();
    let mut out = json!({
        "plugin": known.spec(),
        "pjrt": [p.api_version().0, p.api_version().1],
        "stablehlo": [p.stablehlo_minimum_version(), p.stablehlo_current_version()],
        "xla_ffi": p.xla_ffi_version().map(|(a, b)| [a, b]),
    });
    // The seed program, from the builder's text.
    let seed =
        Program::module(&customop_examples::seed_model().map_err(|e| e.to_string())?).map_err(e)?;
    let exe = client.compile(&seed).map_err(e)?;
    let x = HostTensor::from_slice(&[3, 3], &(0..9).map(|i| i as f32 * 0.5).collect::<Vec<_>>())
        .map_err(e)?;
    let blob = customop_example_kernels::Blob {
        gain: 2.0,
        bias: -1,
        seed: 42,
        tag: *b"customop seed!!!",
    };
    let y = exe
        .inputs()
        .arg(x)
        .map_err(e)?
        .external("external", &blob)
        .map_err(e)?
        .run()
        .map_err(e)?;
    out["seed"] = json!(y[0].to_vec::<i8>().map_err(e)?);
    out["seed_from_cache"] = json!(exe.from_cache());
    // State once per call site: compiled, then loaded from the cache, each executable building
    // its own two states.
    let (n, m) = (11, 13);
    let text = customop_examples::windowed_twice(n, m);
    let ones = HostTensor::vector(&[1.0f32; 6]);
    let mut state = Vec::new();
    for _ in 0..2 {
        let built0 = (count(library, "builds", n)?, count(library, "builds", m)?);
        let calls0 = count(library, "calls", n)?;
        let exe = client
            .compile(&Program::text(&text).map_err(e)?)
            .map_err(e)?;
        let at_compile = (
            count(library, "builds", n)? - built0.0,
            count(library, "builds", m)? - built0.1,
        );
        let mut y = Vec::new();
        for _ in 0..100 {
            y = exe.run(std::slice::from_ref(&ones)).map_err(e)?;
        }
        state.push(json!({
            "from_cache": exe.from_cache(),
            "built_at_compile": [at_compile.0, at_compile.1],
            "built_after_100_runs": [
                count(library, "builds", n)? - built0.0,
                count(library, "builds", m)? - built0.1,
            ],
            "calls": count(library, "calls", n)? - calls0,
            "y": y[1].to_vec::<f32>().map_err(e)?,
        }));
    }
    out["state"] = json!(state);
    if let Some(a) = artifact {
        let bytes = std::fs::read(a).map_err(|err| format!("{}: {err}", a.display()))?;
        let program = Program::bytecode(&bytes);
        out["artifact_stablehlo"] = json!(program.stablehlo_version());
        out["artifact"] = match client.compile(&program) {
            Ok(exe) => json!({"ok": true, "outputs": exe.num_outputs()}),
            Err(err) => json!({"ok": false, "error": err.to_string()}),
        };
    }
    Ok(out)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let arg = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let (Some(plugin), Some(library), Some(cache)) =
        (arg("--plugin"), arg("--library"), arg("--cache"))
    else {
        eprintln!(
            "usage: plugin_check --plugin NAME==VERSION --library LIB.so --cache DIR \
             [--artifact FILE]"
        );
        return ExitCode::from(2);
    };
    let artifact = arg("--artifact").map(PathBuf::from);
    match check(
        &plugin,
        Path::new(&library),
        Path::new(&cache),
        artifact.as_deref(),
    ) {
        Ok(v) => {
            println!("{v}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("plugin_check: {plugin}: {e}");
            ExitCode::from(1)
        }
    }
}
