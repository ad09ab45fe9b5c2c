//! The seed model split over 4 CPU devices, run from Rust through the PJRT plugin: the rows
//! of `x` are sharded along a mesh axis, the op's partition rule runs its handler once per
//! device on that device's rows, and the assembled result equals the one-device run's.
//!
//! Run: `cargo run -p customop-examples --bin seed_sharded` (after `bash scripts/setup.sh --pjrt`).

use customop::pjrt::{Client, HostTensor, Program};
use customop_example_kernels::Blob;
use std::process::ExitCode;

fn run() -> Result<(), Box<dyn std::error::Error>> {
    const ROWS: i64 = 8;
    const COLS: i64 = 4;
    let blob = Blob {
        gain: 2.0,
        bias: -1,
        seed: 42,
        tag: *b"customop seed!!!",
    };
    let x: Vec<f32> = (0..ROWS * COLS)
        .map(|i| (i as f32 * 0.37).sin() * 2.0)
        .collect();
    let client = Client::cpu(4)?;
    client.register_linked_ops()?;
    let mut results = Vec::new();
    for devices in [1, 4] {
        let module = customop_examples::seed_model_split(ROWS, COLS, devices)?;
        let exe = client.compile(&Program::module(&module)?)?;
        let out = exe
            .inputs()
            .arg(HostTensor::from_slice(&[ROWS, COLS], &x)?)?
            .external("external", &blob)?
            .run()?;
        let y = out[0].to_vec::<i8>()?;
        println!("{devices} device(s): {y:?}");
        results.push(y);
    }
    if results[0] != results[1] {
        return Err("the 4-device result differs from the 1-device result".into());
    }
    println!("equal");
    Ok(())
}

fn main() -> ExitCode {
    customop_examples::exit_with(run())
}
