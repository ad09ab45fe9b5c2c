//! The seed model: `x = sin(x); <op taking the 56-byte external>; x + 1`, emitted as StableHLO
//! and run on XLA CPU through jaxlib.
//!
//! Run: `bash scripts/demo.sh` (installs what is needed), or
//! `cargo run -p customop-examples --bin seed` with `CUSTOMOP_PYTHON` pointing at the venv.
//!
//! Today the model carries the external argument (lifted and annotated) but the custom op itself
//! lands with `#[custom_op]`; the module is otherwise the seed's.

use customop::lower::{BuildError, Module};
use customop::{ElementType, TensorType};
use customop_examples::Blob;
use customop_xla::{Array, Harness};
use std::process::ExitCode;

fn build() -> Result<Module, BuildError> {
    let x_ty = TensorType::new(ElementType::F32, [3, 3])?;
    let mut m = Module::new();
    let mut f = m.entry("main", [x_ty.clone()])?;
    let x = f.arg(0)?;
    f.external::<Blob>("external")?;
    let s = f.sine(&x)?;
    let one = f.constant_splat(&x_ty, 1.0)?;
    let y = f.add(&s, &one)?;
    f.ret(&[&y])?;
    Ok(m)
}

fn main() -> ExitCode {
    let text = match build().and_then(|m| m.to_text()) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("building the seed model failed: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!("{text}");
    let x: Vec<f32> = (0..9).map(|i| i as f32 * 0.5).collect();
    let blob = vec![0u8; 56];
    let harness = match Harness::locate() {
        Ok(h) => h,
        Err(e) => {
            eprintln!("{e}\nrun `bash scripts/setup.sh` first");
            return ExitCode::FAILURE;
        }
    };
    match harness.run(&text, &[Array::f32(&[3, 3], &x), Array::u8(&[56], &blob)]) {
        Ok(out) => {
            println!("x      = {x:?}");
            println!("result = {:?}", out[0].to_f32());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}
