//! Shared pieces of the examples and benchmarks.

use customop::lower::{BuildError, Module, Sharding};
use customop::prelude::*;

pub use customop_example_kernels::Blob;

/// The seed model: `x = sin(x); x = custom_op_external(external, x); x = x + 1`, with
/// `external` a 56-byte `Blob` lifted to an annotated argument of `main`.
pub fn seed_model() -> Result<Module, BuildError> {
    let mut m = Module::new();
    let mut f = m.entry("main", [TensorType::new(ElementType::F32, [3, 3])?])?;
    let x = f.arg(0)?;
    let external = f.external::<Blob>("external")?;
    let x = f.sine(&x)?;
    let x = customop_example_kernels::custom_op_external::call(&mut f, &external, &x)?;
    let one = f.constant::<i8>(&[3], &[1, 1, 1])?;
    let x = f.add(&x, &one)?;
    f.ret(&[&x])?;
    Ok(m)
}

/// The seed model on `rows` rows of `cols` (the rows split over `devices` devices when
/// `devices > 1`: a mesh `x` of that size, the rows sharded along it, and the op, whose
/// partition rule splits its rows, run once per device on its own rows).
pub fn seed_model_split(rows: i64, cols: i64, devices: i64) -> Result<Module, BuildError> {
    let mut m = Module::new();
    if devices > 1 {
        m.mesh("mesh", &[("x", devices)])?;
    }
    let mut f = m.entry("main", [TensorType::new(ElementType::F32, [rows, cols])?])?;
    if devices > 1 {
        f.shard_arg(0, Sharding::new("mesh", &[&["x"], &[]]))?;
    }
    let x = f.arg(0)?;
    let external = f.external::<Blob>("external")?;
    let x = f.sine(&x)?;
    let y = customop_example_kernels::custom_op_external::call(&mut f, &external, &x)?;
    let one = f.constant_splat(&TensorType::new(ElementType::I8, [rows])?, 1.0)?;
    let z = f.add(&y, &one)?;
    if devices > 1 {
        f.ret_sharded(&[&z], &[Some(Sharding::new("mesh", &[&["x"]]))])?;
    } else {
        f.ret(&[&z])?;
    }
    Ok(m)
}

/// StableHLO text with two call sites of `example.windowed` (an op with `#[state]`: its window
/// of `n` taps, built once per call site), windows of `n` and `m` taps, on a `tensor<6xf32>`:
/// the program that shows state per call site through the runner.
pub fn windowed_twice(n: i64, m: i64) -> String {
    format!(
        r#"func.func @main(%x: tensor<6xf32>) -> (tensor<6xf32>, tensor<6xf32>) {{
  %0 = "stablehlo.custom_call"(%x) {{api_version = 4 : i32, call_target_name = "example.windowed", backend_config = {{n = {n} : i64}}}} : (tensor<6xf32>) -> tensor<6xf32>
  %1 = "stablehlo.custom_call"(%0) {{api_version = 4 : i32, call_target_name = "example.windowed", backend_config = {{n = {m} : i64}}}} : (tensor<6xf32>) -> tensor<6xf32>
  return %0, %1 : tensor<6xf32>, tensor<6xf32>
}}"#
    )
}

/// A chain of `n` custom calls on a `tensor<3x3xf32>`, each also taking the 56-byte external
/// (`customop_example_kernels::passthrough`, through its generated lowering), with `+ 1` at
/// the end: the workload of the builder benchmarks and of the comparison with JAX.
pub fn custom_call_chain(n: usize) -> Result<Module, BuildError> {
    let ty = TensorType::new(ElementType::F32, [3, 3])?;
    let mut m = Module::new();
    let mut f = m.entry("main", [ty.clone()])?;
    let blob = f.external::<Blob>("blob")?;
    let mut x = f.arg(0)?;
    for _ in 0..n {
        x = customop_example_kernels::passthrough::call(&mut f, &blob, &x)?;
    }
    let one = f.constant_splat(&ty, 1.0)?;
    let y = f.add(&x, &one)?;
    f.ret(&[&y])?;
    Ok(m)
}

/// Runs `text` once on XLA CPU with every handler of the example kernel cdylib registered,
/// and returns its outputs, or a message saying what failed (set-up, compile or execution).
pub fn run_on_xla(
    text: &str,
    inputs: Vec<customop_xla::Array>,
) -> Result<Vec<customop_xla::Array>, String> {
    let harness = customop_xla::Harness::locate()
        .map_err(|e| format!("{e}\nrun `bash scripts/setup.sh` first"))?;
    let ffi = customop_xla::Ffi::customop_library(customop_xla::example_kernels());
    let mut runs = harness
        .run_many(text, Some(&ffi), &[inputs])
        .map_err(|e| e.to_string())?;
    match runs.pop() {
        Some(run) => run.map_err(|e| e.to_string()),
        None => Err("the harness returned no run".into()),
    }
}

/// A binary's exit: success, or the error printed (with the set-up hint when the plugin is
/// missing) and failure.
pub fn exit_with(result: Result<(), Box<dyn std::error::Error>>) -> std::process::ExitCode {
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            if let Some(customop::pjrt::RunError::PluginNotFound { .. }) =
                e.downcast_ref::<customop::pjrt::RunError>()
            {
                eprintln!("run `bash scripts/setup.sh --pjrt` first");
            }
            std::process::ExitCode::FAILURE
        }
    }
}

/// This process's peak resident set size in bytes (`VmHWM` of `/proc/self/status`).
pub fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}
