//! The PJRT runner (`customop::pjrt`) on its own: the plugin's facts, the seed program from
//! Rust, from a torch export and as bytecode, inputs refused before the plugin sees them,
//! handler refusals surfacing with their codes, state across executions. (Every job the other
//! tests run through jaxlib is also cross-checked against the runner by the harness.)
//!
//! These tests register the example kernel cdylib's handlers, as the cross-check does, never
//! the copies linked into this test binary: the plugin's registry is process-wide, and one
//! target cannot have two handlers. The demo binaries (`seed`, `seed_sharded`), which register
//! their linked ops, run in their own processes.
//!
//! One module per theme: the seed program and the demo binaries (`seed`), refusals (`refusals`),
//! threads (`threads`), external values and state across executions (`state`), and every
//! known plugin, each in a process of its own (`plugins`).

mod plugins;
mod refusals;
mod seed;
mod state;
mod threads;

use super::{counter_module, example_kernels, k, seed_expected, t, torch_seed_json};
use customop::Descriptor;
use customop::lower::Module;
use customop::pjrt::{Client, Executable, HostTensor, PjrtCode, Plugin, Program, RunError};
use customop::{ElementType, Refusal};
use std::sync::OnceLock;

/// A one-device client with the example cdylib's handlers registered.
fn client() -> Client {
    static C: OnceLock<Client> = OnceLock::new();
    C.get_or_init(|| {
        let c = Client::cpu(1).expect("the CPU plugin (scripts/setup.sh installs it)");
        // SAFETY: the example kernel cdylib is a customop library.
        let targets = unsafe { c.register_library(&example_kernels()) }.unwrap();
        assert!(targets.contains(&"my_custom_library.custom_op_external".to_string()));
        c
    })
    .clone()
}

fn seed_blob() -> k::Blob {
    k::Blob {
        gain: 2.0,
        bias: -1,
        seed: 42,
        tag: *b"customop seed!!!",
    }
}

fn seed_x() -> Vec<f32> {
    (0..9).map(|i| i as f32 * 0.5).collect()
}

fn x33(x: &[f32]) -> HostTensor {
    HostTensor::from_slice(&[3, 3], x).unwrap()
}

/// Runs a seed-shaped program on `x` with the blob as external `name`; its first output.
fn run_seed(exe: &Executable, x: &[f32], name: &str, b: &k::Blob) -> Vec<i8> {
    exe.inputs()
        .arg(x33(x))
        .unwrap()
        .external(name, b)
        .unwrap()
        .run()
        .unwrap()[0]
        .to_vec::<i8>()
        .unwrap()
}
