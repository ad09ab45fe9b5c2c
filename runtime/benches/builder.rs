//! Build + verify + print a chain of N custom calls on `tensor<3x3xf32>`, each taking a 56-byte
//! external, for N = 1k, 10k, 100k.
//!
//! Run: `cargo bench -p customop --bench builder`. Peak memory per N:
//! `cargo run --release -p customop-examples --bin builder_scaling`.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use customop::lower::{CustomCall, Module};
use customop::prelude::*;

#[derive(Descriptor, Debug)]
#[descriptor(name = "my_lib::Blob")]
pub struct Blob {
    pub gain: f32,
    pub bias: i32,
    pub seed: u64,
    pub tag: [u8; 16],
}

fn chain(n: usize) -> String {
    let ty = TensorType::new(ElementType::F32, [3, 3]).unwrap();
    let mut m = Module::new();
    let mut f = m.entry("main", [ty.clone()]).unwrap();
    let blob = f.external::<Blob>("blob").unwrap();
    let mut x = f.arg(0).unwrap();
    let results = [ty.clone()];
    for _ in 0..n {
        let operands = [blob.value(), &x];
        x = f
            .custom_call(CustomCall::new("bench.op", &operands, &results))
            .unwrap()
            .pop()
            .unwrap();
    }
    let one = f.constant_splat(&ty, 1.0).unwrap();
    let y = f.add(&x, &one).unwrap();
    f.ret(&[&y]).unwrap();
    m.to_text().unwrap()
}

fn benches(c: &mut Criterion) {
    let mut g = c.benchmark_group("build+verify+print");
    g.sample_size(10);
    for n in [1_000usize, 10_000, 100_000] {
        g.throughput(criterion::Throughput::Elements(n as u64));
        g.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, &n| {
            b.iter(|| chain(n))
        });
    }
    g.finish();
}

criterion_group!(builder, benches);
criterion_main!(builder);
