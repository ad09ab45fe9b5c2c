//! Shared pieces of the examples and benchmarks.

use customop::lower::{BuildError, CustomCall, Module};
use customop::prelude::*;

/// The seed model's opaque structure: a 32-byte payload, 56 bytes packed.
#[derive(Descriptor, Clone, Copy, Debug, PartialEq)]
#[descriptor(name = "my_lib::Blob")]
pub struct Blob {
    /// Multiplies the row sums.
    pub gain: f32,
    /// Added after rounding.
    pub bias: i32,
    /// A seed (unused by the arithmetic; it is state a real kernel would carry).
    pub seed: u64,
    /// A tag.
    pub tag: [u8; 16],
}

/// A chain of `n` custom calls on a `tensor<3x3xf32>`, each also taking the 56-byte external,
/// with `+ 1` at the end: the workload of the builder benchmarks.
pub fn custom_call_chain(n: usize) -> Result<Module, BuildError> {
    let ty = TensorType::new(ElementType::F32, [3, 3])?;
    let mut m = Module::new();
    let mut f = m.entry("main", [ty.clone()])?;
    let blob = f.external::<Blob>("blob")?;
    let mut x = f.arg(0)?;
    let results = [ty.clone()];
    for _ in 0..n {
        let operands = [blob.value(), &x];
        let mut call = CustomCall::new("bench.op", &operands, &results);
        call.has_side_effect = false;
        x = f
            .custom_call(call)?
            .pop()
            .ok_or_else(|| BuildError::new("custom_call made no result"))?;
    }
    let one = f.constant_splat(&ty, 1.0)?;
    let y = f.add(&x, &one)?;
    f.ret(&[&y])?;
    Ok(m)
}

/// This process's peak resident set size in bytes (`VmHWM` of `/proc/self/status`).
pub fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}
