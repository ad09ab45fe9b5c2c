//! The seed model: `x = sin(x); x = custom_op_external(external, x); x = x + 1`, with
//! `external` a 56-byte `Blob` (a 32-byte payload). Rust builds the StableHLO module and runs
//! it through XLA's CPU PJRT plugin, calling the Rust handler `#[custom_op]` generated for the
//! op, linked into this binary. No Python.
//!
//! Run: `bash scripts/demo.sh` (installs what is needed), or
//! `cargo run -p customop-examples --bin seed` once `bash scripts/setup.sh --pjrt` has
//! installed the plugin (`Client::cpu` loads it only if its sha256 is the pinned one).

use customop::pjrt::{Client, HostTensor, Program};
use customop_example_kernels::Blob;
use std::process::ExitCode;

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let module = customop_examples::seed_model()?;
    println!("{}", module.to_text()?);

    let client = Client::cpu(1)?;
    let targets = client.register_linked_ops()?;
    let exe = client.compile(&Program::module(&module)?)?;
    let blob = Blob {
        gain: 2.0,
        bias: -1,
        seed: 42,
        tag: *b"customop seed!!!",
    };
    let x: Vec<f32> = (0..9).map(|i| i as f32 * 0.5).collect();
    let out = exe
        .inputs()
        .arg(HostTensor::from_slice(&[3, 3], &x)?)?
        .external("external", &blob)?
        .run()?;
    let plugin = client.plugin();
    println!(
        "plugin = {} (PJRT {}.{}, platform {}), {} handlers registered",
        plugin.path().display(),
        plugin.api_version().0,
        plugin.api_version().1,
        client.platform(),
        targets.len()
    );
    println!("blob   = {blob:?}");
    println!("x      = {x:?}");
    println!(
        "result = {:?}   (saturate_i8(round(gain * sum_j sin(x[i, j])) + bias) + 1)",
        out[0].to_vec::<i8>()?
    );
    Ok(())
}

fn main() -> ExitCode {
    customop_examples::exit_with(run())
}
