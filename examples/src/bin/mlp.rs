//! An MLP block with a custom op in the middle: `dense -> rms_norm (Rust, #[custom_op]) ->
//! relu -> dense`, built in Rust, compiled by XLA CPU, the norm run by the generated handler
//! from the example kernel cdylib. Prints the module and checks the result against the same
//! arithmetic done here in f64.
//!
//! Run: `cargo run -p customop-examples --bin mlp` (after `bash scripts/setup.sh`).

use customop::lower::{BuildError, DotDims, Module};
use customop::{ElementType, TensorType};
use customop_example_kernels::{NormCfg, NormMode, rms_norm};
use customop_xla::Array;
use std::process::ExitCode;

const EPS: f32 = 1e-5;

fn weights() -> (Vec<f32>, Vec<f32>) {
    let w1 = (0..4 * 8)
        .map(|i| ((i * 7 % 11) as f32 - 5.0) * 0.1)
        .collect();
    let w2 = (0..8 * 2)
        .map(|i| ((i * 5 % 7) as f32 - 3.0) * 0.2)
        .collect();
    (w1, w2)
}

fn cfg() -> NormCfg {
    NormCfg {
        scale: 1.5,
        shift: 0.0,
        mode: NormMode::Scale,
    }
}

fn build() -> Result<Module, BuildError> {
    let (w1, w2) = weights();
    let mut m = Module::new();
    let mut f = m.entry("main", [TensorType::new(ElementType::F32, [3, 4])?])?;
    let x = f.arg(0)?;
    let w1 = f.constant::<f32>(&[4, 8], &w1)?;
    let h = f.dot_general(&x, &w1, &DotDims::matmul())?;
    let h = rms_norm::call(&mut f, &h, EPS, &cfg())?;
    let zero = f.constant_splat(h.ty(), 0.0)?;
    let h = f.max(&h, &zero)?;
    let w2 = f.constant::<f32>(&[8, 2], &w2)?;
    let y = f.dot_general(&h, &w2, &DotDims::matmul())?;
    f.ret(&[&y])?;
    Ok(m)
}

fn expected(x: &[f32]) -> Vec<f64> {
    let (w1, w2) = weights();
    let mut out = vec![];
    for r in 0..3 {
        let h: Vec<f64> = (0..8)
            .map(|j| {
                (0..4)
                    .map(|k| x[r * 4 + k] as f64 * w1[k * 8 + j] as f64)
                    .sum()
            })
            .collect();
        let ms = h.iter().map(|v| v * v).sum::<f64>() / 8.0;
        let inv = 1.0 / (ms + EPS as f64).sqrt();
        let h: Vec<f64> = h.iter().map(|v| (v * inv * 1.5).max(0.0)).collect();
        for c in 0..2 {
            out.push((0..8).map(|j| h[j] * w2[j * 2 + c] as f64).sum());
        }
    }
    out
}

fn main() -> ExitCode {
    let text = match build().and_then(|m| m.to_text()) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    println!("{text}");
    let x: Vec<f32> = (0..12).map(|i| (i as f32 - 6.0) * 0.3).collect();
    let got = match customop_examples::run_on_xla(&text, vec![Array::f32(&[3, 4], &x)]) {
        Ok(out) => out[0].to_f32(),
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let want = expected(&x);
    println!("result   = {got:?}\nexpected = {want:?}");
    let ok = got
        .iter()
        .zip(&want)
        .all(|(g, w)| (*g as f64 - w).abs() < 1e-4 * w.abs().max(1.0));
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
