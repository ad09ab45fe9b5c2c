//! End to end: ops declared with `#[custom_op]` in the example kernel crate are lowered by
//! their generated `call`, the module goes through jaxlib (parse, verify, compile), and XLA CPU
//! runs it with the generated Rust handlers loaded from the kernel cdylib (built without MLIR).
//! Every expected number is computed here, independently of the code under test.
//!
//! One module per theme: the seed model from Rust and from PyTorch (`seed`), what handlers do
//! with attributes, state, bad inputs and kernel errors (`handlers`), what `#[custom_op]`
//! generates (`generated`), partitioned ops on a device mesh (`mesh`), several externals of
//! different sizes (`externals`), the C kernel (`c_kernel`), computed output shapes (`shapes`),
//! element types beyond Rust's primitives (`element_types`) and the PJRT runner (`runner`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::needless_range_loop)]

mod c_kernel;
mod element_types;
mod externals;
mod generated;
mod handlers;
mod mesh;
mod runner;
mod seed;
mod shapes;

use customop::Descriptor;
use customop::lower::Module;
use customop::lower::Sharding;
use customop::schema::{FactorDims, PartitionRule};
use customop::{Complex64, F8E4M3FN, bf16, f16};
use customop::{ElementType, TensorType};
use customop_example_kernels as k;
use customop_xla::{Array, Ffi, Harness, Job, Probe, XlaError, example_kernels};
use customop_xla::{ExternalArg, external_args};

fn t(e: ElementType, shape: &[i64]) -> TensorType {
    TensorType::new(e, shape).unwrap()
}

fn ffi() -> Ffi {
    Ffi::customop_library(example_kernels())
}

/// Compiles once, runs each input set, returns each run's result.
fn run(text: &str, runs: Vec<Vec<Array>>) -> Vec<Result<Vec<Array>, XlaError>> {
    Harness::get().run_many(text, Some(&ffi()), &runs).unwrap()
}

fn blob() -> k::Blob {
    k::Blob {
        gain: 1.5,
        bias: -2,
        seed: 99,
        tag: *b"seed-model-blob!",
    }
}

/// The seed model (customop_examples::seed_model).
fn seed_module() -> Module {
    customop_examples::seed_model().unwrap()
}

/// The seed model's result for `x` of `cols` columns: `saturate(round(gain * row sum of
/// sin x) + bias) + 1` per row.
fn seed_expected(x: &[f32], cols: usize, b: &k::Blob) -> Vec<i8> {
    (0..x.len() / cols)
        .map(|i| {
            let s: f32 = (0..cols).map(|j| x[i * cols + j].sin()).sum();
            let v = ((b.gain * s).round() as i64 + b.bias as i64).clamp(-128, 127) as i8;
            v.wrapping_add(1)
        })
        .collect()
}

/// What `examples/torch/seed.py --json` (with `extra` arguments) prints.
fn torch_seed_json(extra: &[&str]) -> serde_json::Value {
    let script = customop_xla::workspace_root().join("examples/torch/seed.py");
    let out = std::process::Command::new(Harness::get().python())
        .arg(&script)
        .arg("--json")
        .args(extra)
        .arg(example_kernels())
        .env("PJRT_DEVICE", "CPU")
        .output()
        .expect("run examples/torch/seed.py");
    assert!(
        out.status.success(),
        "seed.py failed (torch and torch_xla come with scripts/setup.sh):\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("seed.py --json prints JSON")
}

/// `counter_step` on a `tensor<3xf32>` with the `Counter` external `counter`, returning `y`
/// and the updated counter.
fn counter_module() -> Module {
    let mut m = Module::new();
    let mut f = m.entry("main", [t(ElementType::F32, &[3])]).unwrap();
    let x = f.arg(0).unwrap();
    let state = f.external::<k::Counter>("counter").unwrap();
    let out = k::counter_step::call(&mut f, &state, &x).unwrap();
    f.ret(&[&out.y, out.state.value()]).unwrap();
    m
}

fn assert_close(got: &[f32], want: &[f64], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (*g as f64 - w).abs() < 1e-4 * (1.0 + w.abs()),
            "{what}[{i}]: {g} vs {w}"
        );
    }
}
